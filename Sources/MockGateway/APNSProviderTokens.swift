import Crypto
import PushModel
import Synchronization

/// Per-connection state the gateway keeps in `ConnectionContext.applicationState`. Touched only
/// from the connection's event-loop thread, so it needs no lock.
final class GatewayConnectionState {
    /// The APNs team this connection is bound to by its first valid provider token.
    var boundTeamID: String?
    /// The last provider token accepted on this connection and what it proved: repeating it
    /// (the common case, thousands of pushes per token) costs one string comparison.
    var lastProviderToken: String?
    var lastVerifiedToken: VerifiedProviderToken?
    /// The last FCM access token accepted on this connection.
    var lastAccessToken: String?
    var lastAccessTokenExpiresAtSeconds: Int64 = 0
    var lastAccessTokenHasMessagingScope = false
    /// Whether SETTINGS_MAX_CONCURRENT_STREAMS was raised from 1 on this connection.
    var streamLimitRaised = false
    /// Requests answered on this connection (the transport's count excludes the current one).
    var requestCount = 0
    /// The client certificate's verdict, worked out at the first APNs request when
    /// certificate-based auth is on; nil until then.
    var providerCertificate: ProviderCertificateVerdict?
}

/// What a connection's client certificate proves (certificate-based trust, apns.md).
enum ProviderCertificateVerdict {
    /// No certificate: the connection must use provider tokens.
    case absent
    case trusted(APNsProviderCertificate)
    /// 403 BadCertificate or BadCertificateEnvironment on every request of the connection.
    case refused(APNSReason, detail: String)

    init(der: [UInt8]?, authorities: ProviderCertificateAuthorities, environment: APNSEnvironment, nowSeconds: Int64) {
        guard let der else {
            self = .absent
            return
        }
        switch authorities.verify(der: der, nowSeconds: nowSeconds) {
        case .failure(let problem):
            self = .refused(.badCertificate, detail: problem.description)
        case .success(let certificate):
            let needed: APNsProviderCertificate.Environment = environment == .development ? .development : .production
            if certificate.environments.contains(needed) {
                self = .trusted(certificate)
            } else {
                let has = certificate.environments.map(\.rawValue).sorted().joined(separator: ", ")
                self = .refused(.badCertificateEnvironment,
                                detail: "the certificate is for \(has.isEmpty ? "no environment" : has), the gateway is \(environment.rawValue)")
            }
        }
    }
}

/// What a valid ES256 provider token proved: signed by `keyID`, belonging to `teamID`.
struct VerifiedProviderToken: Sendable {
    var keyID: String
    var teamID: String
    var issuedAtSeconds: Int64
}

/// Judges APNs provider tokens (apns.md, "Token-based authentication"): ES256 JWS with
/// `{"alg":"ES256","kid"}` and `{"iss","iat"}`, verified with the configured key for `kid`.
final class APNSProviderTokenAuthority: Sendable {
    struct Key: Sendable {
        var teamID: String
        var publicKey: ECP256PublicKey
        var environment: APNSEnvironment?
    }

    /// Apple: a token is valid for an hour after `iat`.
    static let tokenLifetimeSeconds: Int64 = 3600
    /// Apple: refresh no more often than every 20 minutes.
    static let minimumRefreshIntervalSeconds: Int64 = 1200
    /// Bounded so a sender minting a token per request cannot grow memory without limit.
    static let cacheCapacity = 4096
    static let maxCachedTokenBytes = 1024

    private let keys: [String: Key]
    private let environment: APNSEnvironment
    private let acceptDERSignatures: Bool
    private let clock: GatewayClock
    /// Outcome of verifying a token's signature and claims (time-independent parts only).
    private let cache = Mutex<[String: Result<VerifiedProviderToken, TokenRejection>]>([:])
    private let teams = Mutex<[String: TeamTokenHistory]>([:])

    struct TokenRejection: Error, Sendable { var reason: APNSReason }

    /// The tokens a team has used recently and when it last introduced a new one.
    private struct TeamTokenHistory {
        var recentTokens: [String] = []
        var lastNewTokenAtSeconds: Int64 = .min
    }

    init(configuration: APNSConfiguration, clock: GatewayClock) throws(GatewayConfigurationError) {
        var keys: [String: Key] = [:]
        for (i, key) in configuration.keys.enumerated() {
            do {
                let publicKey = try ECP256PublicKey(pem: key.publicKeyPEM)
                keys[key.keyID] = Key(teamID: key.teamID, publicKey: publicKey, environment: key.environment)
            } catch {
                throw GatewayConfigurationError(keyPath: "apns.keys[\(i)].public_key_pem", problem: "not a P-256 public key: \(error)")
            }
        }
        self.keys = keys
        self.environment = configuration.environment
        self.acceptDERSignatures = configuration.acceptDERSignatures
        self.clock = clock
    }

    var isEnabled: Bool { !keys.isEmpty }

    /// Checks the `authorization` header of one request on `connection`. On success returns the
    /// team, and binds the connection to it.
    func authenticate(_ authorization: String?, connection: GatewayConnectionState) -> Result<VerifiedProviderToken, TokenRejection> {
        guard let authorization, !authorization.isEmpty else { return .failure(.init(reason: .missingProviderToken)) }
        let utf8 = Substring(authorization).utf8
        if utf8.count == 6, hasPrefixIgnoringASCIICase(utf8, "bearer") { return .failure(.init(reason: .missingProviderToken)) }
        guard hasPrefixIgnoringASCIICase(utf8, "bearer ") else { return .failure(.init(reason: .invalidProviderToken)) }
        var tokenBytes = utf8.dropFirst(7)
        while tokenBytes.first == UInt8(ascii: " ") { tokenBytes = tokenBytes.dropFirst() }
        guard !tokenBytes.isEmpty else { return .failure(.init(reason: .missingProviderToken)) }

        // The common case: the connection's token again. Compared as bytes, nothing allocated.
        if let last = connection.lastProviderToken, let verified = connection.lastVerifiedToken,
           utf8Equal(tokenBytes, last) {
            if clock.nowSeconds - verified.issuedAtSeconds > Self.tokenLifetimeSeconds {
                return .failure(.init(reason: .expiredProviderToken))
            }
            return .success(verified)
        }

        let token = String(Substring(tokenBytes))
        let verified: VerifiedProviderToken
        switch verify(token) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let fresh): verified = fresh
        }
        if let bound = connection.boundTeamID, bound != verified.teamID {
            return .failure(.init(reason: .unrelatedKeyIdInToken))
        }
        let now = clock.nowSeconds
        if now - verified.issuedAtSeconds > Self.tokenLifetimeSeconds {
            return .failure(.init(reason: .expiredProviderToken))
        }
        guard admit(token, team: verified.teamID, now: now, replacing: connection.lastProviderToken != nil) else {
            return .failure(.init(reason: .tooManyProviderTokenUpdates))
        }
        connection.lastProviderToken = token
        connection.lastVerifiedToken = verified
        connection.boundTeamID = verified.teamID
        return .success(verified)
    }

    /// Signature and claims, cached by token text: a verification costs ~100 µs, and a token
    /// is reused for thousands of pushes. Forged tokens are cached too, so repeating one is cheap.
    private func verify(_ token: String) -> Result<VerifiedProviderToken, TokenRejection> {
        if let cached = cache.withLock({ $0[token] }) { return cached }
        let outcome = verifyUncached(token) // no lock held while verifying
        // A real provider token is ~200 bytes; oversized junk is verified but not kept.
        guard token.utf8.count <= Self.maxCachedTokenBytes else { return outcome }
        cache.withLock { cache in
            if cache.count >= Self.cacheCapacity { cache.removeAll(keepingCapacity: true) }
            cache[token] = outcome
        }
        return outcome
    }

    private func verifyUncached(_ token: String) -> Result<VerifiedProviderToken, TokenRejection> {
        let invalid = Result<VerifiedProviderToken, TokenRejection>.failure(.init(reason: .invalidProviderToken))
        guard let jwt = try? JWT.decode(token),
              jwt.header["alg"]?.stringValue == "ES256",
              let keyID = jwt.header["kid"]?.stringValue,
              let key = keys[keyID]
        else { return invalid }
        if let keyEnvironment = key.environment, keyEnvironment != environment {
            return .failure(.init(reason: .badEnvironmentKeyIdInToken))
        }
        guard jwt.verifyES256(key: key.publicKey, acceptDERSignature: acceptDERSignatures),
              jwt.claims["iss"]?.stringValue == key.teamID,
              let issuedAt = jwt.claims["iat"]?.intValue
        else { return invalid }
        return .success(VerifiedProviderToken(keyID: keyID, teamID: key.teamID, issuedAtSeconds: Int64(issuedAt)))
    }

    /// TooManyProviderTokenUpdates, counted per team: when a connection switches to a token
    /// the team has not used before, the team's previous new token must be at least 20 minutes
    /// old. Switching to a token the team already uses is fine (a rotation spreads over many
    /// connections), and so is a new connection's first token; a sender re-minting tokens on
    /// a connection more often than every 20 minutes is not.
    private func admit(_ token: String, team: String, now: Int64, replacing: Bool) -> Bool {
        teams.withLock { teams in
            var history = teams[team] ?? TeamTokenHistory()
            if history.recentTokens.contains(token) { return true }
            if replacing, history.lastNewTokenAtSeconds != .min,
               now - history.lastNewTokenAtSeconds < Self.minimumRefreshIntervalSeconds {
                return false
            }
            history.recentTokens.append(token)
            if history.recentTokens.count > 8 { history.recentTokens.removeFirst() }
            history.lastNewTokenAtSeconds = now
            teams[team] = history
            return true
        }
    }
}
