// The sender against a real `pushproof serve` that each test starts for itself: strict APNs
// token auth and FCM OAuth with credentials from `pushproof credentials`, over TLS (trusting
// the certificate serve writes) and over h2c. What the gateway recorded is the evidence.
import Foundation
import JSON
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

/// A `pushproof serve` with strict auth, its credentials, its record file, and a sender's
/// configuration pointing at it. Everything lives in one temporary directory.
final class LiveGateway {
    static let bundleID = "com.example.loop"
    static let project = "poolse-example"

    let directory: TemporaryDirectory
    let serve: ServeProcess
    let recordPath: String
    let credentials: DeliveryCredentials

    /// `tokens` and `faults` go into the gateway configuration as the README's
    /// "Configuration file" shows them.
    init(tls: Bool, tokens: JSONValue? = nil, faults: JSONValue? = nil) throws {
        directory = try TemporaryDirectory("gateway-live")
        // The service account's token_uri is never used: the sender is given the real token URL.
        let written = try pushproof(["credentials", "--out", directory.path, "--gateway", "https://127.0.0.1:8443",
                                     "--bundle-id", Self.bundleID, "--project", Self.project])
        guard written.status == 0 else { throw LiveGatewayError("pushproof credentials: \(written.error)") }
        let configPath = directory.file("gateway.json")
        var config = try #require(try JSONParser.parse(String(contentsOfFile: configPath, encoding: .utf8)).objectValue)
        if let tokens { config["tokens"] = tokens }
        if let faults { config["faults"] = faults }
        try directory.write("gateway.json", JSONValue.object(config).serialized())
        recordPath = directory.file("record.jsonl")
        serve = try ServeProcess(["--config", configPath, "--record", recordPath, "--threads", "1", "--quiet"] + (tls ? [] : ["--h2c"]),
                                 directory: directory.path)
        credentials = try DeliveryCredentials.load(
            apnsKeyPath: directory.file("apns-key.p8"), apnsKeyID: "ABC123DEFG", apnsTeamID: "TEAM123456",
            serviceAccountPath: directory.file("service-account.json"))
    }

    func configuration(retry: RetryPolicy = RetryPolicy(baseDelay: 0.005, maxDelay: 0.02, maxAttempts: 3),
                       maxInFlight: Int = 200) -> DeliveryConfiguration {
        DeliveryConfiguration(
            apnsBaseURL: serve.baseURL, fcmBaseURL: serve.baseURL, oauthTokenURL: serve.baseURL + "/token",
            connectionsPerGateway: 1, maxInFlight: maxInFlight,
            tls: serve.isTLS ? .caFile(serve.certificatePath ?? "") : .systemRoots,
            retry: retry)
    }

    func deliverer(_ store: any DeviceStore, retry: RetryPolicy = RetryPolicy(baseDelay: 0.005, maxDelay: 0.02, maxAttempts: 3)) throws -> PushDeliverer {
        try PushDeliverer(configuration: configuration(retry: retry), credentials: credentials, deviceStore: store, log: { _ in })
    }

    /// A control API call (`PUT /faults/apns`, ...); throws unless it answers 2xx.
    func control(_ method: String, _ path: String, _ body: JSONValue? = nil) throws {
        var arguments = ["-X", method, "-o", "/dev/null", "-w", "%{http_code}"]
        if let body { arguments += ["-H", "content-type: application/json", "-d", body.serialized()] }
        let result = try curl(arguments + [serve.adminURL + path])
        guard result.status == 0, result.output.hasPrefix("2") else {
            throw LiveGatewayError("\(method) \(path): HTTP \(result.output) \(result.error)")
        }
    }

    /// Every exchange recorded so far (the gateway writes its record out first).
    func recorded() throws -> [RecordedExchange] {
        try control("POST", "/recording/flush")
        let text = try String(contentsOfFile: recordPath, encoding: .utf8)
        return try text.split(separator: "\n").map { try RecordedExchange(JSONParser.parse(String($0))) }
    }

    deinit { serve.stop() }
}

struct LiveGatewayError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One line of the gateway's record, reduced to what these tests compare.
struct RecordedExchange {
    var route: String
    var path: String
    var status: Int
    var reason: String?
    var authorization: String?
    var connection: Int
    var body: String
    /// The `retry-after` response header, if any.
    var retryAfter: String?
    /// Wall-clock seconds since the epoch (from `arrival_ns`, `answered_ns`; a Double keeps
    /// them to a microsecond): when the request arrived and when its answer was decided.
    var arrivalSeconds: Double
    var answeredSeconds: Double

    init(_ line: JSONValue) {
        route = line["route"]?.stringValue ?? ""
        path = line["path"]?.stringValue ?? ""
        status = line["response"]?["status"]?.intValue ?? -1
        reason = line["response"]?["reason"]?.stringValue
        connection = line["connection"]?.intValue ?? -1
        // Record format 2 holds a JSON body as JSON (`json`), any other as a string (`body`).
        body = line["body"]?.stringValue ?? line["json"]?.serialized() ?? ""
        authorization = line["headers"]?.arrayValue?.first { $0[0] == "authorization" }?[1]?.stringValue
        retryAfter = line["response"]?["headers"]?.arrayValue?.first { $0[0] == "retry-after" }?[1]?.stringValue
        arrivalSeconds = (line["arrival_ns"]?.doubleValue ?? 0) / 1e9
        answeredSeconds = (line["answered_ns"]?.doubleValue ?? 0) / 1e9
    }

    /// The device an APNs or FCM request addressed.
    var deviceToken: String? {
        switch route {
        case "apns": path.split(separator: "/").last.map(String.init)
        case "fcm": (try? JSONParser.parse(body))?["message"]?["token"]?.stringValue
        default: nil
        }
    }
}

/// Sends every push through `send` and collects every outcome from `outcomes`, then shuts
/// the deliverer down: afterwards each ticket must have exactly one result.
func deliverAll(_ pushes: [PushRequest], with deliverer: PushDeliverer) async -> (tickets: [UInt64], results: [PushResult]) {
    let collector = Task {
        var results: [PushResult] = []
        for await result in deliverer.outcomes { results.append(result) }
        return results
    }
    var tickets: [UInt64] = []
    for push in pushes { tickets.append(await deliverer.send(push)) }
    await deliverer.shutdown()
    return (tickets, await collector.value)
}

enum LivePushes {
    /// A 64-hex-digit APNs token, distinct per `index` and `prefix`.
    static func apnsToken(_ index: Int, prefix: UInt8 = 0x10) -> String {
        String(format: "%02x", prefix) + String(format: "%062x", index)
    }

    static func iosDevice(_ index: Int, user: String? = nil, kind: IOSTokenKind = .alert, prefix: UInt8 = 0x10) -> Device {
        Device(userID: user ?? "ios-user-\(index)", platform: .ios, kind: kind, token: apnsToken(index, prefix: prefix))
    }

    static func androidDevice(_ index: Int, user: String? = nil) -> Device {
        Device(userID: user ?? "android-user-\(index)", platform: .android, token: "fcm-token-\(index)")
    }

    static func alert(to device: Device, payload: String = #"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#) -> PushRequest {
        PushRequest(device: device, kind: "live.alert",
                    headers: [("apns-push-type", "alert"), ("apns-topic", LiveGateway.bundleID), ("apns-priority", "10")],
                    body: Array(payload.utf8))
    }

    static func data(to device: Device, data: String = #"{"type":"ping","n":"1"}"#) -> PushRequest {
        PushRequest(device: device, kind: "live.data",
                    body: Array(#"{"message":{"token":"\#(device.token)","data":\#(data),"android":{"priority":"HIGH"}}}"#.utf8))
    }

    static func push(to device: Device) -> PushRequest {
        device.platform == .ios ? alert(to: device) : data(to: device)
    }
}
