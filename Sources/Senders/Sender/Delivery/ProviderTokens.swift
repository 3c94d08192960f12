// Credentials on the wire: the APNs provider token (ES256 JWT) and the FCM OAuth2 access
// token. Both are cached; neither is made per push.
import Synchronization

/// Signs APNs provider tokens: `{"alg":"ES256","kid":<key id>}` /
/// `{"iss":<team id>,"iat":<issuedAt>}` with the .p8 key (apns.md, "Token-based authentication").
public protocol ProviderTokenSource: Sendable {
    func makeProviderToken(issuedAt: Int) throws -> String
}

/// Makes the RS256 assertion of Google's JWT-bearer grant from a service account
/// (fcm.md, "OAuth2 service-account flow").
public protocol OAuthAssertionSource: Sendable {
    /// The service account's `project_id`.
    var projectID: String { get }
    /// The service account's `token_uri`, where assertions are exchanged for access tokens.
    var tokenURI: String { get }
    /// A signed assertion for `audience`, valid from `issuedAt` for `lifetime` seconds.
    func makeAssertion(audience: String, issuedAt: Int, lifetime: Int) throws -> String
}

/// The scopes the Admin SDKs ask for; the FCM send API needs firebase.messaging.
public let fcmOAuthScopes = [
    "https://www.googleapis.com/auth/cloud-platform",
    "https://www.googleapis.com/auth/firebase.messaging",
]

/// The APNs provider token in use, re-signed once it is `refreshSeconds` old.
/// Apple refuses tokens older than an hour (403 ExpiredProviderToken) and answers 429
/// TooManyProviderTokenUpdates to tokens changed more often than every 20 minutes.
struct ProviderTokenCache {
    let source: any ProviderTokenSource
    let refreshSeconds: Int
    private(set) var current: (token: String, issuedAt: Int)?
    private(set) var signings = 0

    init(source: any ProviderTokenSource, refreshSeconds: Int) {
        self.source = source
        self.refreshSeconds = refreshSeconds
    }

    mutating func token(now: Int) throws -> String {
        if let current, now - current.issuedAt < refreshSeconds, now >= current.issuedAt {
            return current.token
        }
        let token = try source.makeProviderToken(issuedAt: now)
        signings += 1
        current = (token, now)
        return token
    }

    /// The gateway called the token expired: sign a new one on next use, unless the refused
    /// token (`generation`, the `signings` count when it was used) was already replaced;
    /// re-signing more often than needed earns TooManyProviderTokenUpdates.
    mutating func invalidate(generation: Int) {
        if generation == signings { current = nil }
    }
}

/// The APNs provider token every connection of a process signs with: one at a time, shared by
/// every deliverer made from the same `DeliveryCredentials`. Apple counts a team's token
/// updates across all its connections (TooManyProviderTokenUpdates when they come more often
/// than every 20 minutes), so deliverers or connections that each signed their own would trip it.
final class SharedProviderTokens: Sendable {
    private let cache: Mutex<ProviderTokenCache>

    init(source: any ProviderTokenSource, refreshSeconds: Int) {
        cache = Mutex(ProviderTokenCache(source: source, refreshSeconds: refreshSeconds))
    }

    /// The token to use at `now`; `generation` names it for `invalidate`, `signed` says this
    /// call signed it.
    func token(now: Int) throws -> (token: String, generation: Int, signed: Bool) {
        try cache.withLock { cache in
            let before = cache.signings
            let token = try cache.token(now: now)
            return (token, cache.signings, cache.signings > before)
        }
    }

    /// The gateway refused the token of `generation` as expired: see `ProviderTokenCache.invalidate`.
    func invalidate(generation: Int) {
        cache.withLock { $0.invalidate(generation: generation) }
    }
}

/// The OAuth2 access token and when it runs out.
struct AccessTokenCache {
    enum State: Equatable {
        /// Use it; no refresh needed.
        case fresh(String)
        /// Still valid but close to expiry: use it and start a refresh in the background.
        case refreshSoon(String)
        /// None or expired: wait for a refresh.
        case missing
    }

    let refreshMarginSeconds: Int
    private var token: String?
    /// Bumped by every stored token, so a refusal of an older one does not discard a newer.
    private(set) var generation = 0
    private var expiresAt = 0
    private var refreshAt = 0

    init(refreshMarginSeconds: Int) {
        self.refreshMarginSeconds = refreshMarginSeconds
    }

    func state(now: Int) -> State {
        guard let token, now < expiresAt else { return .missing }
        return now < refreshAt ? .fresh(token) : .refreshSoon(token)
    }

    mutating func store(_ token: String, expiresIn: Int, now: Int) {
        self.token = token
        generation += 1
        // A little slack for the time the answer took to arrive.
        let lifetime = max(0, expiresIn - 10)
        expiresAt = now + lifetime
        // A token shorter-lived than twice the margin refreshes at half its life instead of
        // being due for refresh the moment it arrives.
        refreshAt = expiresAt - min(refreshMarginSeconds, lifetime / 2)
    }

    /// The gateway refused the token used at `generation`; a newer one stays.
    mutating func invalidate(generation: Int) {
        guard generation == self.generation else { return }
        token = nil
        expiresAt = 0
        refreshAt = 0
    }
}
