import PushModel
import Synchronization

/// What the gateway knows about one device token.
public enum DeviceTokenState: Sendable, Equatable {
    /// Delivered: APNs 200, FCM 200.
    case valid
    /// The app was uninstalled: APNs 410 Unregistered with `timestamp` (ms since the epoch when
    /// the token stopped being valid), FCM 404 UNREGISTERED.
    case gone(sinceMillis: UInt64)
    /// The token expired: APNs 410 ExpiredToken with `timestamp`, FCM 404 UNREGISTERED.
    case expired(sinceMillis: UInt64)
    /// Never valid here (wrong environment, garbage): APNs 400 BadDeviceToken, FCM 400
    /// INVALID_ARGUMENT "The registration token is not a valid FCM registration token".
    case bad
    /// Registered to another sender: an FCM token of another Firebase project than the one
    /// authenticated -> FCM 403 PERMISSION_DENIED "SenderId mismatch" with FcmError
    /// SENDER_ID_MISMATCH (fcm.md, Responses); an APNs token of another app -> APNs 400
    /// DeviceTokenNotForTopic. The device may well be alive; the answer says the credentials
    /// and the token do not belong together.
    case otherSender
}

/// The device tokens the gateway knows, shared by APNs and FCM and changed at runtime by the
/// admin API. O(1) lookups in a hash map behind a `Mutex`; the lock is held for the lookup
/// only (never across JSON parsing). APNs tokens are hex and compared case-insensitively, so
/// hex tokens are stored lowercased.
public final class DeviceTokenRegistry: Sendable {
    private struct State {
        var tokens: [String: DeviceTokenState] = [:]
        var unknownTokens: UnknownTokenPolicy
    }

    private let state: Mutex<State>

    public init(unknownTokens: UnknownTokenPolicy = .accept) {
        state = Mutex(State(unknownTokens: unknownTokens))
    }

    /// A registry holding the configured tokens; gone tokens without `since_ms` are gone since `nowMillis`.
    public convenience init(configuration: TokenConfiguration, nowMillis: UInt64) {
        self.init(unknownTokens: configuration.unknownTokens)
        apply(configuration, nowMillis: nowMillis)
    }

    /// Sets every token a configuration lists (valid, gone, expired, bad, other_sender) on top of
    /// the current states; gone and expired tokens without `since_ms` date from `nowMillis`. The
    /// unknown-token policy is left alone (`reset(unknownTokens:)` changes it).
    public func apply(_ configuration: TokenConfiguration, nowMillis: UInt64) {
        state.withLock { state in
            state.tokens.reserveCapacity(state.tokens.count + configuration.valid.count + configuration.gone.count
                                       + configuration.expired.count + configuration.bad.count + configuration.otherSender.count)
            for token in configuration.valid { state.tokens[Self.key(token)] = .valid }
            for (token, since) in configuration.gone { state.tokens[Self.key(token)] = .gone(sinceMillis: since ?? nowMillis) }
            for (token, since) in configuration.expired { state.tokens[Self.key(token)] = .expired(sinceMillis: since ?? nowMillis) }
            for token in configuration.bad { state.tokens[Self.key(token)] = .bad }
            for token in configuration.otherSender { state.tokens[Self.key(token)] = .otherSender }
        }
    }

    /// The state of a token, applying the unknown-token policy.
    public func state(of token: String) -> DeviceTokenState {
        let key = Self.key(token)
        return state.withLock { state in
            state.tokens[key] ?? (state.unknownTokens == .accept ? .valid : .bad)
        }
    }

    /// Like `state(of:)` for a token already in key form (lowercase hex), skipping normalisation.
    func state(ofNormalized key: String) -> DeviceTokenState {
        state.withLock { state in
            state.tokens[key] ?? (state.unknownTokens == .accept ? .valid : .bad)
        }
    }

    /// The recorded state, nil when the token is unknown (the policy not applied).
    public func recordedState(of token: String) -> DeviceTokenState? {
        let key = Self.key(token)
        return state.withLock { $0.tokens[key] }
    }

    public func set(_ token: String, to newState: DeviceTokenState) {
        let key = Self.key(token)
        state.withLock { $0.tokens[key] = newState }
    }

    public func set(_ tokens: some Sequence<String>, to newState: DeviceTokenState) {
        let keys = tokens.map(Self.key)
        state.withLock { state in
            for key in keys { state.tokens[key] = newState }
        }
    }

    /// Forgets a token: it falls back to the unknown-token policy.
    public func clear(_ token: String) {
        let key = Self.key(token)
        state.withLock { _ = $0.tokens.removeValue(forKey: key) }
    }

    /// Forgets every token, and optionally changes the unknown-token policy.
    public func reset(unknownTokens: UnknownTokenPolicy? = nil) {
        state.withLock { state in
            state.tokens.removeAll()
            if let unknownTokens { state.unknownTokens = unknownTokens }
        }
    }

    public var unknownTokens: UnknownTokenPolicy {
        get { state.withLock { $0.unknownTokens } }
        set { state.withLock { $0.unknownTokens = newValue } }
    }

    public var count: Int { state.withLock { $0.tokens.count } }

    /// Counts by state, for the admin API (expired tokens count as gone).
    public func counts() -> (valid: Int, gone: Int, bad: Int, otherSender: Int) {
        state.withLock { state in
            var valid = 0, gone = 0, bad = 0, otherSender = 0
            for value in state.tokens.values {
                switch value {
                case .valid: valid += 1
                case .gone, .expired: gone += 1
                case .bad: bad += 1
                case .otherSender: otherSender += 1
                }
            }
            return (valid, gone, bad, otherSender)
        }
    }

    /// Hex tokens (APNs) are case-insensitive; everything else (FCM) is kept as is.
    static func key(_ token: String) -> String { AddressedDevice.comparable(token) }
}
