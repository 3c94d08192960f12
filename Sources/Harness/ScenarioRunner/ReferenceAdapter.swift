// The adapter protocol's other side for the reference sender: what `pushproof adapter` answers,
// a line in and a line out, with no stdio here so it is tested without a process.
import Descriptors
import Glibc
import JSON
import Scenario

/// Answers the adapter protocol (docs/adapter-protocol.md) with `ReferenceSender` behind it:
/// `hello` takes the gateway and credentials, `setup` decodes the scenario with the scenario
/// decoder, each `event` is decoded against it and handed to the sender, `devices` lists its
/// store. Not thread-safe: one request at a time, as the protocol sends them.
public final class ReferenceAdapter {
    public static let name = "pushproof reference"
    private let version: String
    private var access: GatewayAccess?
    private var sender: ReferenceSender?
    private var events: ScenarioEventDecoder?
    private var writer = JSONWriter(capacity: 256)

    public init(version: String) { self.version = version }

    /// One request line in; the reply line (with its newline) out, and whether the adapter
    /// should exit now (after `shutdown`).
    public func answer(_ line: [UInt8]) async -> (reply: [UInt8], exit: Bool) {
        let request: JSONObject
        do {
            guard let object = try JSONParser.parse(line).objectValue else {
                return (reply(id: nil, error: "a request is a JSON object"), false)
            }
            request = object
        } catch {
            return (reply(id: nil, error: "not JSON: \(error)"), false)
        }
        let id = request["id"]?.intValue
        guard let id else { return (reply(id: nil, error: "a request needs an integer \"id\""), false) }
        do throws(AdapterProtocolError) {
            switch request["type"]?.stringValue {
            case "hello": return (try hello(request, id: id), false)
            case "setup": try await setup(request)
            case "event": try await event(request)
            case "devices": return (try await devices(id: id), false)
            case "shutdown":
                await sender?.tearDown()
                sender = nil
                return (reply(id: id), true)
            case let other:
                throw AdapterProtocolError("unknown request type \(other.map { "\"\($0)\"" } ?? "(none)")")
            }
        } catch {
            return (reply(id: id, error: error.description), false)
        }
        return (reply(id: id), false)
    }

    private func hello(_ request: JSONObject, id: Int) throws(AdapterProtocolError) -> [UInt8] {
        guard let version = request["protocol"]?.intValue else { throw AdapterProtocolError("hello needs \"protocol\"") }
        guard version == AdapterConversation.version else {
            throw AdapterProtocolError("protocol \(version) is not supported; this adapter speaks \(AdapterConversation.version)")
        }
        guard let gateway = request["gateway"]?.objectValue, let credentials = request["credentials"]?.objectValue else {
            throw AdapterProtocolError("hello needs \"gateway\" and \"credentials\"")
        }
        access = try GatewayAccess(helloGateway: gateway, credentials: credentials)
        writer.removeAll()
        writer.value(AdapterConversation.helloReply(id: id, AdapterHello(
            name: Self.name, version: self.version, products: Product.allCases.map(\.rawValue), capabilities: ["devices"])))
        writer.newline()
        return writer.bytes
    }

    private func setup(_ request: JSONObject) async throws(AdapterProtocolError) {
        guard let access else { throw AdapterProtocolError("setup before hello") }
        guard sender == nil else { throw AdapterProtocolError("setup was already given") }
        guard let document = request["scenario"] else { throw AdapterProtocolError("setup needs \"scenario\"") }
        let scenario: Scenario
        do {
            scenario = try Scenario(setupDocument: document, name: "setup")
        } catch {
            throw AdapterProtocolError("setup: scenario.\(error)")
        }
        let sender = ReferenceSender()
        do {
            try await sender.setUp(SenderSetup(scenario: scenario, bundleID: scenario.bundleID ?? "com.example.loop",
                                               fcmProject: scenario.fcmProject ?? "\(scenario.product.rawValue)-example",
                                               gateway: access))
        } catch {
            throw AdapterProtocolError("setup: \(error)")
        }
        self.sender = sender
        events = ScenarioEventDecoder(population: scenario)
    }

    private func event(_ request: JSONObject) async throws(AdapterProtocolError) {
        guard let sender, var decoder = events else { throw AdapterProtocolError("event before setup") }
        guard let index = request["index"]?.intValue, let value = request["event"] else {
            throw AdapterProtocolError("event needs \"index\" and \"event\"")
        }
        let event: ScenarioEvent
        do {
            event = try decoder.event(value, index: index)
        } catch {
            throw AdapterProtocolError("\(error)")
        }
        events = decoder
        do {
            try await sender.handle(event, index: index)
        } catch {
            throw AdapterProtocolError("\(error)")
        }
    }

    private func devices(id: Int) async throws(AdapterProtocolError) -> [UInt8] {
        guard let sender else { throw AdapterProtocolError("devices before setup") }
        let listed = await sender.devices() ?? []
        writer.removeAll()
        writer.beginObject()
        writer.key(plain: "id")
        writer.int(id)
        writer.key(plain: "ok")
        writer.bool(true)
        writer.key(plain: "devices")
        writer.beginArray()
        for device in listed {
            writer.beginObject()
            writer.key(plain: "id")
            writer.string(device.id)
            writer.key(plain: "token")
            writer.string(device.token)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    /// `{"id":N,"ok":true}` or `{"id":N,"ok":false,"error":...}` (id null when the request had none).
    private func reply(id: Int?, error: String? = nil) -> [UInt8] {
        writer.removeAll()
        writer.beginObject()
        writer.key(plain: "id")
        if let id { writer.int(id) } else { writer.null() }
        writer.key(plain: "ok")
        writer.bool(error == nil)
        if let error {
            writer.key(plain: "error")
            writer.string(error)
        }
        writer.endObject()
        writer.newline()
        return writer.bytes
    }
}

extension ReferenceAdapter {
    /// Answers request lines from `input` on `output` until `shutdown` (0) or the end of
    /// `input` (0: pushproof stopped the conversation), or a write fails (1).
    public func serve(input: Int32, output: Int32) async -> Int32 {
        var buffer = LineBuffer()
        while true {
            while let line = buffer.nextLine() {
                if line.isEmpty { continue }
                let (reply, exit) = await answer(line)
                guard Self.writeAll(output, reply) else { return 1 }
                if exit { return 0 }
            }
            guard case .done(let read)? = try? buffer.fill(from: input), read > 0 else { return 0 }
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        (try? Descriptors.writeAll(fd, bytes)) != nil
    }
}
