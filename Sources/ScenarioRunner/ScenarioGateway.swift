// The gateway a scenario plays against, as the runner drives it: the embedded mock
// (EmbeddedGateway), or a `pushproof serve` elsewhere through its control API (`run --gateway
// URL --admin URL`). The runner sets token states, marks where an event starts, and reads what
// the gateway received for it once it is answered.
import Foundation
import JSON
import Scenario

/// What a gateway is opened with for one scenario.
public struct GatewayOpening: Sendable {
    public var bundleID: String
    public var fcmProject: String
    /// The scenario's starting token states (`gateway.tokens`), by token.
    public var tokens: [(token: String, state: TokenState)]
    /// The scenario's `gateway.faults`, in `pushproof serve --config`'s `faults` shape.
    public var faults: JSONValue?
    /// Unix ms of `at_ms: 0`: the `since_ms` of a token gone without one.
    public var startMs: Int64
}

/// Where an event's exchanges start: the gateway's count of exchanges (the embedded one) or
/// the last `seq` it had recorded (a `pushproof serve`), and its count of accepted pushes.
public struct GatewayMark: Sendable {
    public var position: Int
    public var acceptedPushes: Int

    public init(position: Int, acceptedPushes: Int = 0) {
        self.position = position
        self.acceptedPushes = acceptedPushes
    }
}

public protocol ScenarioGateway: Sendable {
    /// The URLs and credential files a sender is given.
    var access: GatewayAccess { get }
    /// From now on the gateway answers `token` as `state`.
    func setToken(_ token: String, _ state: TokenState, nowMs: Int64) async throws(GatewayStartError)
    func mark() async throws(GatewayStartError) -> GatewayMark
    /// Waits until the event begun at `mark` is answered: `expectedAccepted` pushes accepted
    /// and `options.settleMilliseconds` without a request, or the event timeout.
    func settle(after mark: GatewayMark, expectedAccepted: Int, options: RunOptions) async throws(GatewayStartError)
    /// What the gateway received since `mark`, in order, each exchange's token read.
    func exchanges(after mark: GatewayMark) async throws(GatewayStartError) -> [ObservedExchange]
    /// Ends the scenario's use of the gateway (the embedded one shuts down).
    func stop()
}

extension ObservedExchange {
    /// One record line (README "Record format"; `GET /requests` answers the same objects), or
    /// nil when it lacks what a verdict needs (`seq`, `route`, `path`, `response.status`).
    public init?(recordLine line: JSONValue) {
        guard let sequence = line["seq"]?.intValue, let route = line["route"]?.stringValue, let path = line["path"]?.stringValue,
              let status = line["response"]?["status"]?.intValue else { return nil }
        let headers = (line["headers"]?.arrayValue ?? []).compactMap { pair -> (name: String, value: String)? in
            guard let name = pair[0]?.stringValue, let value = pair[1]?.stringValue else { return nil }
            return (name, value)
        }
        let body: [UInt8]
        if let text = line["body"]?.stringValue {
            body = Array(text.utf8)
        } else if let encoded = line["body_base64"]?.stringValue, let data = Data(base64Encoded: encoded) {
            body = Array(data)
        } else {
            body = []
        }
        self.init(sequence: sequence, route: route, path: path, headers: headers, body: body, status: status,
                  reason: line["response"]?["reason"]?.stringValue, fault: line["fault"]?.stringValue, verdict: line["verdict"])
    }
}
