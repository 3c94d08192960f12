// The one walk over a scenario's events that `run` (judging event by event) and a load run
// (`drive --scenario`, `plan --scenario`) share: before an event goes to the sender, the
// scenario clock moves to its `at_ms`, a `gateway.token` event reaches the gateway, and the
// devices the sender should still hold follow `device.registered` and `device.unregistered`.
// What each walk does beyond that (run's expectations and verdicts, the load run's matcher)
// it does with the `ScenarioStep` this answers.
import PushModel
import Scenario

/// What an event changed before the sender sees it.
public enum ScenarioStep: Sendable, Equatable {
    /// The gateway answers `token` (as written) as `state` from now on.
    case tokenState(token: String, state: TokenState)
    /// A device's token (as written) was registered with the sender, again or for the first time.
    case registered(token: String)
    /// A device's token (as written) was unregistered.
    case unregistered(token: String)
    /// Nothing the walk keeps: the event is for the sender alone.
    case none
}

/// The bookkeeping of one walk over a scenario's events, event by event in order.
public struct ScenarioWalk: Sendable {
    private let devices: ScenarioDeviceIndex
    private let startMs: Int64
    /// Unix ms of the current event: `start_ms` plus the latest `at_ms` seen.
    public private(set) var nowMs: Int64
    /// The tokens the gateway answers as other than valid, and how: a few in a population.
    /// Every other token is valid, so no table of all of them is kept (150,000 entries at
    /// 100,000 people), and asking this for each of an event's expected pushes stays in the cache.
    public private(set) var answeredNotValid: [DeviceToken: TokenState] = [:]
    /// The devices the sender should hold, by their positions in `devices`: registered, not
    /// unregistered, not answered dead.
    public private(set) var live: DevicePositions

    public init(_ scenario: Scenario, devices: ScenarioDeviceIndex, opening: GatewayOpening) {
        self.devices = devices
        startMs = scenario.startMs
        nowMs = scenario.startMs
        // By the position of its token: a token two devices share is one device to a store.
        live = DevicePositions(count: devices.count)
        for position in 0..<devices.initialCount {
            if let held = devices.position(ofToken: DeviceToken(devices.entries[position].device.token)) { live.insert(held) }
        }
        for (token, state) in opening.tokens { set(DeviceToken(token), state) }
    }

    /// Applies `event` before it goes to the sender: a `gateway.token` event is set on `gateway`
    /// (its error, e.g. a control API that refused, stops the walk), registrations move `live`.
    public mutating func prepare(_ event: ScenarioEvent, on gateway: any ScenarioGateway) async throws(GatewayStartError) -> ScenarioStep {
        if let at = event.atMs { nowMs = startMs + at }
        switch event.kind {
        case .gatewayToken(let deviceID, let state):
            // The decoder resolves every device id against the population.
            let token = devices.token(ofDevice: deviceID)!
            try await gateway.setToken(token, state, nowMs: nowMs)
            set(DeviceToken(token), state)
            return .tokenState(token: token, state: state)
        case .deviceRegistered(_, let device, _):
            if let position = devices.position(ofToken: DeviceToken(device.token)) { live.insert(position) }
            return .registered(token: device.token)
        case .deviceUnregistered(let deviceID):
            let token = devices.token(ofDevice: deviceID)!
            if let position = devices.position(ofToken: DeviceToken(token)) { live.remove(position) }
            return .unregistered(token: token)
        default:
            return .none
        }
    }

    private mutating func set(_ token: DeviceToken, _ state: TokenState) {
        answeredNotValid[token] = state == .valid ? nil : state
    }

    /// The gateway answered `token` dead: the sender should no longer hold it.
    public mutating func died(_ token: DeviceToken) {
        if let position = devices.position(ofToken: token) { live.remove(position) }
    }

    /// The tokens of the `live` devices.
    public var liveTokens: Set<DeviceToken> {
        Set(live.positions.map { DeviceToken(devices.entries[$0].device.token) })
    }

    /// Tokens the gateway holds as bad (an FCM INVALID_ARGUMENT for one is about the token).
    public var badTokens: Set<DeviceToken> { Set(answeredNotValid.filter { $0.value == .bad }.map(\.key)) }
}
