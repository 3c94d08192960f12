// Credentials on the wire: the APNs provider token (ES256 JWT) and the FCM OAuth2 access
// token. Both are cached; neither is made per push.
import Descriptors
import Foundation
import Glibc
import Synchronization

/// Signs APNs provider tokens: `{"alg":"ES256","kid":<key id>}` /
/// `{"iss":<team id>,"iat":<issuedAt>}` with the .p8 key (apns.md, "Token-based authentication").
public protocol ProviderTokenSource: Sendable {
    func makeProviderToken(issuedAt: Int) throws -> String
    /// Names the key (team, key id and the key itself) for `ProviderTokenFile`: processes of
    /// one machine that sign with the same key use one token. nil: this process signs its own.
    var sharingIdentity: String? { get }
}

extension ProviderTokenSource {
    public var sharingIdentity: String? { nil }
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
    /// Tokens taken into use (signed here or adopted): the generation `invalidate` compares.
    private(set) var signings = 0
    /// Of `signings`, those another process signed.
    private(set) var adopted = 0

    init(source: any ProviderTokenSource, refreshSeconds: Int) {
        self.source = source
        self.refreshSeconds = refreshSeconds
    }

    /// The current token may still be used at `now`.
    func isFresh(now: Int) -> Bool {
        guard let current else { return false }
        return now - current.issuedAt < refreshSeconds && now >= current.issuedAt
    }

    /// Uses a token another process signed (`ProviderTokenFile`), as if this cache had: a new
    /// generation, so a refusal of the previous one does not discard it.
    mutating func adopt(_ token: String, issuedAt: Int) {
        signings += 1
        adopted += 1
        current = (token, issuedAt)
    }

    mutating func token(now: Int) throws -> String {
        if isFresh(now: now), let current { return current.token }
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
///
/// Across processes too, through `ProviderTokenFile` when the source names its key: `pushproof
/// drive`, then `plan`, then `send` on one machine sign once between them, as a team's fleet
/// should (Apple refuses a team's tokens that change more often than every 20 minutes).
final class SharedProviderTokens: Sendable {
    private let cache: Mutex<ProviderTokenCache>
    private let file: ProviderTokenFile?

    /// `file`: where other processes' token is found (default: the source's, if it names its key).
    init(source: any ProviderTokenSource, refreshSeconds: Int, file: ProviderTokenFile?? = nil) {
        cache = Mutex(ProviderTokenCache(source: source, refreshSeconds: refreshSeconds))
        self.file = file ?? source.sharingIdentity.flatMap(ProviderTokenFile.init(identity:))
    }

    /// The token to use at `now`; `generation` names it for `invalidate`, `signed` says this
    /// call signed it.
    func token(now: Int) throws -> (token: String, generation: Int, signed: Bool) {
        try cache.withLock { cache in
            if !cache.isFresh(now: now), let file, let left = file.read(now: now, maxAge: cache.refreshSeconds) {
                cache.adopt(left.token, issuedAt: left.issuedAt)
            }
            let before = cache.signings
            let token = try cache.token(now: now)
            let signed = cache.signings > before
            if signed, let current = cache.current { file?.write(current.token, issuedAt: current.issuedAt) }
            return (token, cache.signings, signed)
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

/// The provider token the processes of one machine share, one small file per key: the token
/// and its `iat`, in a folder only this user may enter (0700; the file 0600, written whole and
/// renamed into place). It is a bearer credential for at most an hour, as the token in any
/// sender's memory is. `PUSHPROOF_TOKEN_DIR` moves the folder (default: `$XDG_RUNTIME_DIR`,
/// else the temporary folder, in `pushproof-provider-tokens-<uid>`). Any failure to read or
/// write only means this process signs its own token.
struct ProviderTokenFile: Sendable {
    let path: String

    init(path: String) { self.path = path }

    /// `PUSHPROOF_PROVIDER_TOKEN_FILE`, when set, names the file whatever the key: processes on
    /// other machines given one token (`pushproof k8s render` signs it into the run's Secret,
    /// read-only there) use it instead of each signing their own, which the team's gateway would
    /// answer TooManyProviderTokenUpdates.
    static let sharedFileVariable = "PUSHPROOF_PROVIDER_TOKEN_FILE"

    init?(identity: String) {
        let environment = ProcessInfo.processInfo.environment
        if let shared = environment[Self.sharedFileVariable], !shared.isEmpty {
            path = shared
            return
        }
        let base = environment["PUSHPROOF_TOKEN_DIR"]
            ?? (environment["XDG_RUNTIME_DIR"] ?? NSTemporaryDirectory()) + "/pushproof-provider-tokens-\(getuid())"
        guard mkdir(base, 0o700) == 0 || errno == EEXIST else { return nil }
        // Someone else's folder (or one others may write) is not trusted with a credential.
        var info = stat()
        guard stat(base, &info) == 0, info.st_uid == getuid(), info.st_mode & 0o077 == 0 else { return nil }
        path = base + "/" + identity + ".jwt"
    }

    /// A token issued no more than `maxAge` seconds before `now` (and not after it).
    func read(now: Int, maxAge: Int) -> (token: String, issuedAt: Int)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let parts = text.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let issuedAt = Int(parts[0]), now >= issuedAt, now - issuedAt < maxAge else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : (token, issuedAt)
    }

    func write(_ token: String, issuedAt: Int) {
        let temporary = path + ".\(getpid()).tmp"
        guard let raw = try? blockingSystemCall("open", { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }) else { return }
        let file = FileDescriptor(taking: raw)
        // Best effort: another process signs its own token if this one is not there.
        let written = (try? writeAll(file.raw, Array("\(issuedAt) \(token)\n".utf8))) != nil
        file.close()
        if written { rename(temporary, path) } else { unlink(temporary) }
    }
}
