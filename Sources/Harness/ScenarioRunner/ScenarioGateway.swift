// The gateway a scenario plays against, as the runner drives it: the embedded mock
// (EmbeddedGateway), or a `pushproof serve` elsewhere through its control API (`run --gateway
// URL --admin URL`). The runner sets token states, marks where an event starts, and reads what
// the gateway received for it once it is answered.
import Foundation
import JSON
import MockGateway
import RecordLine
import Scenario

/// What a gateway is opened with for one scenario.
public struct GatewayOpening: Sendable {
    /// The scenario's product (`poolse`, `yama`, `concierge`), which claims its app.
    public var product: String
    /// Whether the scenario has Android devices (FCM pushes, and so its FCM project, matter).
    public var hasAndroidDevices: Bool
    public var bundleID: String
    public var fcmProject: String
    /// The scenario's starting token states (`gateway.tokens`), by token.
    public var tokens: [(token: String, state: TokenState)]
    /// The scenario's `gateway.faults`, in `pushproof serve --config`'s `faults` shape.
    public var faults: JSONValue?
    /// The scenario's `gateway.answer_rules`, in `pushproof serve --config`'s `answer_rules` shape.
    public var answerRules: JSONValue? = nil
    /// Unix ms of `at_ms: 0`: the `since_ms` of a token gone without one.
    public var startMs: Int64
    /// The specs with the scenario's product claiming its app (`SpecJudge.claiming`): what an
    /// embedded gateway judges with. A `pushproof serve` judges with its own.
    public var judge: SpecJudge
}

/// Where an event's exchanges start: the gateway's count of exchanges (the embedded one) or
/// the last `seq` it had recorded (a `pushproof serve`), and its count of accepted pushes.
public struct GatewayMark: Sendable {
    public var position: Int
    public var acceptedPushes: Int
    /// Each replica's last `seq`, when the gateway is several `pushproof serve` replicas
    /// (`position` is the first's).
    public var replicaPositions: [Int]

    public init(position: Int, acceptedPushes: Int = 0) {
        self.position = position
        self.acceptedPushes = acceptedPushes
        replicaPositions = [position]
    }

    public init(replicaPositions: [Int]) {
        position = replicaPositions.first ?? 0
        acceptedPushes = 0
        self.replicaPositions = replicaPositions
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
    /// What the gateway received since `mark`, in order, each exchange's token read. A mark
    /// at an exchange's `sequence` reads what came after it.
    func exchanges(after mark: GatewayMark) async throws(GatewayStartError) -> [RecordedExchange]
    /// Whether `exchanges(after:)` answers at once, without a request, so `run` reads an
    /// event's exchanges while the sender is still sending them (and judges them as they come)
    /// rather than once the event settled.
    var readsWhileSending: Bool { get }
    /// Ends the scenario's use of the gateway (the embedded one shuts down).
    func stop()
}

extension ScenarioGateway {
    public var readsWhileSending: Bool { false }
}

extension RecordedExchange {
    /// One record line's bytes (README "Recording format"; `GET /requests` answers the same
    /// objects), or nil when it is not a line of a version this build reads or lacks what a
    /// verdict needs (`seq`, `response.status`).
    public init?(recordLine bytes: UnsafeBufferPointer<UInt8>) {
        guard let line = try? RecordedExchange(decoding: bytes), line.sequence != nil, line.status != nil else { return nil }
        self = line
        readToken()
    }
}
