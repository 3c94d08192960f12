// The adapter protocol, version 1 (docs/adapter-protocol.md): pushproof's side of the
// conversation as a state machine over lines, with no process or pipe, so every rule is
// tested on its own (Tests/ScenarioRunnerTests/AdapterProtocolTests.swift).
import JSON

/// A protocol rule the adapter broke, or a request it refused: what `run` stops on.
public struct AdapterProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What the adapter said about itself in its `hello` reply.
public struct AdapterHello: Sendable, Equatable {
    public var name: String
    public var version: String
    /// Products it handles ("poolse", "yama", "concierge").
    public var products: [String]
    /// Optional requests it answers ("devices").
    public var capabilities: [String]

    public init(name: String, version: String, products: [String], capabilities: [String]) {
        self.name = name
        self.version = version
        self.products = products
        self.capabilities = capabilities
    }

    /// How reports name the sender: "NAME VERSION".
    public var displayName: String { version.isEmpty ? name : "\(name) \(version)" }
}

/// pushproof's side of one conversation with an adapter. Requests are numbered 1, 2, 3, …;
/// one is outstanding at a time (the protocol answers "each request, in order"), and a reply
/// must carry its id and `ok`. Unknown fields in a reply are ignored, so an adapter may say
/// more than version 1 asks.
public struct AdapterConversation: Sendable {
    /// The protocol version this pushproof speaks.
    public static let version = 1
    /// The longest stretch of a bad reply an error message quotes.
    static let quoteLimit = 200

    /// The request awaiting its reply: its id, and how errors name it ("event 3 (call.placed)").
    public private(set) var pending: (id: Int, label: String)?
    private var nextID = 1
    /// Reused for every request line: the per-event path allocates no new buffer.
    private var writer = JSONWriter(capacity: 512)

    public init() {}

    // MARK: Requests

    /// `hello`: the protocol version, where the gateway is, and the credentials to reach it.
    /// `segment`: which part of a run split over machines this is (`index`, `count`), so a
    /// sender in front of one shared backend knows what it is part of.
    public mutating func hello(_ access: GatewayAccess, segment: (index: Int, count: Int)? = nil) -> [UInt8] {
        request("hello", label: "hello") { writer in
            writer.key(plain: "protocol")
            writer.int(Self.version)
            let members = access.helloMembers
            writer.key(plain: "gateway")
            writer.value(members.gateway)
            writer.key(plain: "credentials")
            writer.value(members.credentials)
            if let segment {
                writer.key(plain: "segment")
                writer.value(["index": .number(Double(segment.index)), "count": .number(Double(segment.count))])
            }
        }
    }

    /// `setup`: the population (`Scenario.setupDocument`), before the first event.
    public mutating func setup(_ scenario: JSONValue) -> [UInt8] {
        request("setup", label: "setup") { writer in
            writer.key(plain: "scenario")
            writer.value(scenario)
        }
    }

    /// `event`: one scenario event, its object as the file has it.
    public mutating func event(index: Int, type: String, _ event: JSONValue) -> [UInt8] {
        request("event", label: "event \(index) (\(type))") { writer in
            writer.key(plain: "index")
            writer.int(index)
            writer.key(plain: "event")
            writer.value(event)
        }
    }

    /// `devices`: only for an adapter that announced the capability.
    public mutating func devices() -> [UInt8] { request("devices", label: "devices") { _ in } }

    public mutating func shutdown() -> [UInt8] { request("shutdown", label: "shutdown") { _ in } }

    /// `{"id":N,"type":NAME,...}\n`, and N becomes the outstanding request.
    private mutating func request(_ type: StaticString, label: String, fields: (inout JSONWriter) -> Void) -> [UInt8] {
        precondition(pending == nil, "a request is outstanding: the protocol answers one at a time")
        let id = nextID
        nextID += 1
        pending = (id, label)
        writer.removeAll()
        writer.beginObject()
        writer.key(plain: "id")
        writer.int(id)
        writer.key(plain: "type")
        writer.string("\(type)")
        fields(&writer)
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    // MARK: Replies

    /// Checks one line against the outstanding request and returns the reply object: JSON, an
    /// object, the request's `id`, `"ok": true`. `"ok": false` throws with the adapter's
    /// `error`. The request is answered either way.
    public mutating func reply(_ line: [UInt8]) throws(AdapterProtocolError) -> JSONObject {
        guard let (id, label) = pending else {
            throw AdapterProtocolError("the adapter wrote a line no request asked for: \(Self.quote(line))")
        }
        pending = nil
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(line)
        } catch {
            throw AdapterProtocolError("the reply to \(label) is not JSON (\(error)): \(Self.quote(line))")
        }
        guard let object = parsed.objectValue else {
            throw AdapterProtocolError("the reply to \(label) is not a JSON object: \(Self.quote(line))")
        }
        guard let answered = object["id"]?.intValue else {
            throw AdapterProtocolError("the reply to \(label) has no integer \"id\" (expected \(id)): \(Self.quote(line))")
        }
        guard answered == id else {
            throw AdapterProtocolError("the reply to \(label) carries id \(answered), expected \(id) (replies come in order)")
        }
        guard let ok = object["ok"]?.boolValue else {
            throw AdapterProtocolError("the reply to \(label) has no boolean \"ok\": \(Self.quote(line))")
        }
        guard ok else {
            let message = object["error"]?.stringValue ?? "(no \"error\" given)"
            throw AdapterProtocolError("the adapter refused \(label): \(message)")
        }
        return object
    }

    /// A `hello` reply as the adapter writes it: the one spelling of what `hello(from:)` reads.
    public static func helloReply(id: Int, _ hello: AdapterHello) -> JSONValue {
        [
            "id": .number(Double(id)), "ok": true, "protocol": .number(Double(version)),
            "sender": ["name": .string(hello.name), "version": .string(hello.version)],
            "products": .array(hello.products.map(JSONValue.string)),
            "capabilities": .array(hello.capabilities.map(JSONValue.string)),
        ]
    }

    /// Reads a `hello` reply: `sender` {`name`, `version`}, `products`, `capabilities`; a
    /// `protocol` other than ours, where the adapter states one, is refused.
    public static func hello(from reply: JSONObject) throws(AdapterProtocolError) -> AdapterHello {
        if let stated = reply["protocol"], stated.intValue != version {
            throw AdapterProtocolError("the adapter speaks protocol \(stated.serialized()); this pushproof speaks \(version)")
        }
        guard let sender = reply["sender"]?.objectValue, let name = sender["name"]?.stringValue, !name.isEmpty else {
            throw AdapterProtocolError(#"the hello reply needs "sender": {"name": ..., "version": ...}"#)
        }
        let version = sender["version"]?.stringValue ?? ""
        guard let products = strings(reply["products"]) else {
            throw AdapterProtocolError(#"the hello reply needs "products": the products it handles, e.g. ["poolse"]"#)
        }
        guard let capabilities = reply["capabilities"].map(strings) ?? [] else {
            throw AdapterProtocolError(#"the hello reply's "capabilities" must be an array of strings, e.g. ["devices"]"#)
        }
        return AdapterHello(name: name, version: version, products: products, capabilities: capabilities)
    }

    /// Reads a `devices` reply: `devices`: `[{"id", "token"}]`.
    public static func devices(from reply: JSONObject) throws(AdapterProtocolError) -> [ListedDevice] {
        guard let list = reply["devices"]?.arrayValue else {
            throw AdapterProtocolError(#"the devices reply needs "devices": [{"id": ..., "token": ...}]"#)
        }
        var devices: [ListedDevice] = []
        devices.reserveCapacity(list.count)
        for (index, entry) in list.enumerated() {
            guard let token = entry["token"]?.stringValue else {
                throw AdapterProtocolError("the devices reply's devices[\(index)] has no \"token\" string")
            }
            devices.append(ListedDevice(id: entry["id"]?.stringValue ?? "", token: token))
        }
        return devices
    }

    private static func strings(_ value: JSONValue?) -> [String]? {
        guard let array = value?.arrayValue else { return nil }
        let strings = array.compactMap(\.stringValue)
        return strings.count == array.count ? strings : nil
    }

    /// The line as text, cut at `quoteLimit` bytes.
    static func quote(_ line: [UInt8]) -> String {
        let text = String(decoding: line.prefix(quoteLimit), as: UTF8.self)
        return "\"\(text)\"" + (line.count > quoteLimit ? " (\(line.count) bytes)" : "")
    }
}

/// The `hello` request's `gateway` and `credentials` objects, written by pushproof's side and
/// read by an adapter (the reference one): their member names are spelled here only.
extension GatewayAccess {
    private enum Member {
        static let apnsURL = "apns_url", fcmURL = "fcm_url", tokenURL = "token_url", caFile = "ca_file", h2c = "h2c"
        static let apnsKeyFile = "apns_key_file", apnsKeyID = "apns_key_id", apnsTeamID = "apns_team_id"
        static let apnsCertFile = "apns_cert_file", apnsCertKeyFile = "apns_cert_key_file"
        static let serviceAccountFile = "service_account_file"
    }

    public var helloMembers: (gateway: JSONValue, credentials: JSONValue) {
        (gateway: [
            Member.apnsURL: .string(apnsURL), Member.fcmURL: .string(fcmURL), Member.tokenURL: .string(tokenURL),
            Member.caFile: .string(caFile), Member.h2c: .bool(h2c),
        ], credentials: [
            Member.apnsKeyFile: .string(apnsKeyFile), Member.apnsKeyID: .string(apnsKeyID),
            Member.apnsTeamID: .string(apnsTeamID),
            Member.apnsCertFile: apnsCertFile.map(JSONValue.string) ?? .null,
            Member.apnsCertKeyFile: apnsCertKeyFile.map(JSONValue.string) ?? .null,
            Member.serviceAccountFile: .string(serviceAccountFile),
        ])
    }

    /// Reads what `helloMembers` wrote; a missing member, or a URL whose scheme disagrees with
    /// `h2c`, is the error the adapter replies with.
    public init(helloGateway gateway: JSONObject, credentials: JSONObject) throws(AdapterProtocolError) {
        func text(_ object: JSONObject, _ key: String) throws(AdapterProtocolError) -> String {
            guard let value = object[key]?.stringValue else { throw AdapterProtocolError("hello needs \"\(key)\" (a string)") }
            return value
        }
        // h2c: cleartext HTTP/2 with prior knowledge, which libcurl speaks to http:// URLs;
        // there is no certificate to trust then.
        let h2c = gateway[Member.h2c]?.boolValue ?? false
        let (apnsURL, fcmURL) = (try text(gateway, Member.apnsURL), try text(gateway, Member.fcmURL))
        for (key, url) in [(Member.apnsURL, apnsURL), (Member.fcmURL, fcmURL)] where url.hasPrefix("http://") != h2c {
            throw AdapterProtocolError(h2c ? "h2c is true but \(key) is '\(url)': cleartext HTTP/2 takes an http:// URL"
                                       : "\(key) is '\(url)': an http:// gateway needs \"h2c\": true (TLS takes https://)")
        }
        self.init(
            apnsURL: apnsURL, fcmURL: fcmURL, tokenURL: try text(gateway, Member.tokenURL),
            caFile: h2c ? gateway[Member.caFile]?.stringValue ?? "" : try text(gateway, Member.caFile),
            apnsKeyFile: try text(credentials, Member.apnsKeyFile),
            apnsKeyID: try text(credentials, Member.apnsKeyID), apnsTeamID: try text(credentials, Member.apnsTeamID),
            serviceAccountFile: try text(credentials, Member.serviceAccountFile))
        apnsCertFile = credentials[Member.apnsCertFile]?.stringValue
        apnsCertKeyFile = credentials[Member.apnsCertKeyFile]?.stringValue
        self.h2c = h2c
    }
}
