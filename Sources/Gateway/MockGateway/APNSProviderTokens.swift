import Clocks
import Crypto
import PushModel
import RecordLine
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
    /// The projects the last access token's service account may send to (empty: unchecked).
    var lastAccessTokenProjects: [String] = []
    /// Whether SETTINGS_MAX_CONCURRENT_STREAMS was raised from 1 on this connection.
    var streamLimitRaised = false
    /// Requests answered on this connection (the transport's count excludes the current one).
    var requestCount = 0
    /// The record line's head (protocol to headers) of this connection's last request, reused
    /// whole while it repeats and its headers pair by pair (the authorization redacted once per
    /// distinct value).
    var recordedRequestHead = RecordedRequestHead()
    /// The previous request's topic and authorization as text, reused while they repeat.
    var apnsHeaderTexts = APNSService.HeaderTexts()
    /// The client certificate's verdict, worked out at the first APNs request; nil until then.
    var providerCertificate: ProviderCertificateVerdict?
    /// Who the connection's client certificate names (for the record), read at its first
    /// request; nil without a certificate.
    private(set) var clientCertificate: ClientCertificateIdentity?
    private var clientCertificateRead = false

    /// Reads the connection's client certificate once: the transport sets it before the
    /// first request, and it does not change on a connection.
    func readClientCertificate(_ der: [UInt8]?) -> ClientCertificateIdentity? {
        if !clientCertificateRead {
            clientCertificateRead = true
            clientCertificate = der.flatMap(ClientCertificateIdentity.init(der:))
        }
        return clientCertificate
    }
}

/// What a connection's client certificate proves (certificate-based trust, apns.md).
enum ProviderCertificateVerdict {
    /// No certificate: the connection must use provider tokens.
    case absent
    case trusted(APNsProviderCertificate)
    /// Zero config (no `apns.certificate_authorities`): any certificate authenticates the
    /// connection, its issuer, validity and environment unchecked. One shaped like Apple's (a
    /// UID in the subject) still says which topics it covers; nil for any other certificate.
    case unverified(APNsProviderCertificate?)
    /// 403 BadCertificate or BadCertificateEnvironment on every request of the connection.
    case refused(APNSReason, AuthFailure)

    init(der: [UInt8]?, authorities: ProviderCertificateAuthorities, environment: APNSEnvironment, nowSeconds: Int64) {
        guard let der else {
            self = .absent
            return
        }
        switch authorities.verify(der: der, nowSeconds: nowSeconds) {
        case .failure(let problem):
            let kind: AuthFailureKind = switch problem {
            case .expired, .notYetValid: .expiredCertificate
            case .unreadable, .untrusted, .noBundleID: .untrustedCertificate
            }
            self = .refused(.badCertificate, AuthFailure(kind, problem.description))
        case .success(let certificate):
            let needed: APNsProviderCertificate.Environment = environment == .development ? .development : .production
            if certificate.environments.contains(needed) {
                self = .trusted(certificate)
            } else {
                let has = certificate.environments.map(\.rawValue).sorted().joined(separator: ", ")
                self = .refused(.badCertificateEnvironment, AuthFailure(
                    .wrongEnvironment, "the certificate is for \(has.isEmpty ? "no environment" : has), the gateway is \(environment.rawValue)"))
            }
        }
    }
}

/// What a valid ES256 provider token proved: signed by `keyID`, belonging to `teamID`.
struct VerifiedProviderToken: Sendable {
    var keyID: String
    var teamID: String
    var issuedAtSeconds: Int64
    /// A note for `gateway_warnings` when `iat` is accepted but is not an integer (a float,
    /// or a string of digits): repeated on every request that carries the token.
    var issuedAtWarning: GatewayNote?
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
    /// Apple takes a token issued within the last hour: an `iat` ahead of the gateway's clock by
    /// more than this (a sender's clock drifting, or a token minted "for later") is refused.
    static let allowedFutureSkewSeconds: Int64 = 60
    /// Apple: refresh no more often than every 20 minutes (`ProviderTokenUpdates`).
    static let minimumRefreshIntervalSeconds = ProviderTokenUpdates.minimumRefreshIntervalSeconds
    /// Bounded so a sender minting a token per request cannot grow memory without limit.
    static let cacheCapacity = 4096
    static let maxCachedTokenBytes = 1024

    private let keys: [String: Key]
    private let environment: APNSEnvironment
    private let acceptDERSignatures: Bool
    private let clock: WallClock
    /// Outcome of verifying a token's signature and claims (time-independent parts only).
    private let cache = Mutex<[String: Result<VerifiedProviderToken, TokenRejection>]>([:])
    private let teams = Mutex(ProviderTokenUpdates())

    struct TokenRejection: Error, Sendable {
        var reason: APNSReason
        var failure: AuthFailure

        init(_ reason: APNSReason, _ kind: AuthFailureKind, _ detail: String) {
            self.reason = reason
            self.failure = AuthFailure(kind, detail)
        }
    }

    init(configuration: APNSConfiguration, clock: WallClock) throws(GatewayConfigurationError) {
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

    /// Forgets every team's token updates: the next token of each is its first. Returns how
    /// many teams had some.
    func forgetTokenUpdates() -> Int {
        teams.withLock { teams in
            defer { teams.removeAll() }
            return teams.teamCount
        }
    }

    /// Checks the `authorization` header of one request on `connection`. On success returns the
    /// team, and binds the connection to it.
    func authenticate(_ authorization: String?, connection: GatewayConnectionState) -> Result<VerifiedProviderToken, TokenRejection> {
        guard let authorization else { return .failure(.init(.missingProviderToken, .missing, "no authorization header")) }
        guard !authorization.isEmpty else { return .failure(.init(.missingProviderToken, .missing, "the authorization header is empty")) }
        let utf8 = Substring(authorization).utf8
        if utf8.count == 6, hasPrefixIgnoringASCIICase(utf8, "bearer") {
            return .failure(.init(.missingProviderToken, .missing, "the authorization header holds no token after bearer"))
        }
        guard hasPrefixIgnoringASCIICase(utf8, "bearer ") else {
            return .failure(.init(.invalidProviderToken, .malformed, "the authorization header is not \"bearer <token>\""))
        }
        var tokenBytes = utf8.dropFirst(7)
        while tokenBytes.first == UInt8(ascii: " ") { tokenBytes = tokenBytes.dropFirst() }
        guard !tokenBytes.isEmpty else {
            return .failure(.init(.missingProviderToken, .missing, "the authorization header holds no token after bearer"))
        }

        // The common case: the connection's token again. Compared as bytes, nothing allocated.
        if let last = connection.lastProviderToken, let verified = connection.lastVerifiedToken,
           utf8Equal(tokenBytes, last) {
            if let expired = expiry(of: verified, now: clock.nowSeconds) { return .failure(expired) }
            return .success(verified)
        }

        let token = String(Substring(tokenBytes))
        let verified: VerifiedProviderToken
        switch verify(token) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let fresh): verified = fresh
        }
        if let bound = connection.boundTeamID, bound != verified.teamID {
            return .failure(.init(.unrelatedKeyIdInToken, .wrongTeam,
                                  "the connection is bound to team \(bound); this token is team \(verified.teamID)'s (key \(verified.keyID))"))
        }
        let now = clock.nowSeconds
        if let expired = expiry(of: verified, now: now) { return .failure(expired) }
        if let sincePrevious = admit(token, team: verified.teamID, now: now) {
            return .failure(.init(.tooManyProviderTokenUpdates, .tooManyUpdates,
                                  "team \(verified.teamID) switched to a new token \(sincePrevious) s after its previous new one (Apple: no more often than every \(Self.minimumRefreshIntervalSeconds / 60) minutes)"))
        }
        connection.lastProviderToken = token
        connection.lastVerifiedToken = verified
        connection.boundTeamID = verified.teamID
        return .success(verified)
    }

    /// ExpiredProviderToken when the token is over an hour old at `now`; InvalidProviderToken
    /// when it was issued in the future (it would otherwise be valid for more than an hour).
    private func expiry(of verified: VerifiedProviderToken, now: Int64) -> TokenRejection? {
        if verified.issuedAtSeconds > now + Self.allowedFutureSkewSeconds {
            return .init(.invalidProviderToken, .issuedInFuture, "iat is \(verified.issuedAtSeconds - now) s in the future "
                         + "(Apple takes a token issued within the last hour; \(Self.allowedFutureSkewSeconds) s of clock skew are allowed)")
        }
        let age = now - verified.issuedAtSeconds
        guard age > Self.tokenLifetimeSeconds else { return nil }
        return .init(.expiredProviderToken, .expired, "iat is \(age) s old (a provider token is valid for \(Self.tokenLifetimeSeconds) s)")
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

    /// The checks in the order Apple's answers imply: a token that is not an ES256 JWT, names
    /// no configured key, or is another environment's key is refused before its signature is
    /// looked at; then the signature, the team (`iss`) and `iat`. `iat` may be an integer, a
    /// non-integer number (RFC 7519 §2 allows it; apns2 sends `time.time()`) or a string of
    /// digits (kalyke-apns, older APNSwift; not a NumericDate, but Apple accepts it): the last
    /// two pass with a warning.
    func verifyUncached(_ token: String) -> Result<VerifiedProviderToken, TokenRejection> {
        func invalid(_ kind: AuthFailureKind, _ detail: String) -> Result<VerifiedProviderToken, TokenRejection> {
            .failure(.init(.invalidProviderToken, kind, detail))
        }
        let jwt: DecodedJWT
        do { jwt = try JWT.decode(token) } catch { return invalid(.malformed, "the token is not a JWT (\(error))") }
        guard let algorithm = jwt.algorithm else { return invalid(.malformed, "the JWT header has no alg") }
        guard algorithm == "ES256" else { return invalid(.wrongAlgorithm, "alg is \(algorithm), not ES256") }
        guard let keyID = jwt.keyID else { return invalid(.malformed, "the JWT header has no kid (the key id)") }
        guard let key = keys[keyID] else { return invalid(.unknownKey, "kid \(keyID) is not configured (apns.keys)") }
        if let keyEnvironment = key.environment, keyEnvironment != environment {
            return .failure(.init(.badEnvironmentKeyIdInToken, .wrongEnvironment,
                                  "key \(keyID) is for \(keyEnvironment.rawValue); the gateway is \(environment.rawValue)"))
        }
        guard jwt.verifyES256(key: key.publicKey, acceptDERSignature: acceptDERSignatures) else {
            if jwt.signature.count != ES256.signatureLength, !acceptDERSignatures {
                return invalid(.badSignature, "the signature is \(jwt.signature.count) bytes, not the 64-byte R||S of JWS ES256 (DER-encoded? apns.accept_der_signatures accepts that)")
            }
            return invalid(.badSignature, "the signature does not verify with key \(keyID)")
        }
        guard let issuer = jwt.claims["iss"] else { return invalid(.malformed, "the token has no iss claim (the team id)") }
        guard issuer.stringValue == key.teamID else {
            let shown = issuer.stringValue ?? "a JSON \(issuer.typeName)"
            return invalid(.wrongTeam, "iss \(shown) is not the team of key \(keyID) (\(key.teamID))")
        }
        guard let issuedAtClaim = jwt.claims["iat"] else { return invalid(.malformed, "the token has no iat claim") }
        guard let issuedAt = NumericDate(issuedAtClaim, acceptingStrings: true) else {
            return invalid(.malformed, "iat is a JSON \(issuedAtClaim.typeName) that is not a NumericDate (seconds since the epoch)")
        }
        return .success(VerifiedProviderToken(keyID: keyID, teamID: key.teamID, issuedAtSeconds: issuedAt.seconds,
                                              issuedAtWarning: issuedAt.warning(claim: "iat", acceptedBy: "Apple")))
    }

    /// TooManyProviderTokenUpdates, counted per team across every connection, as Apple counts
    /// it (`ProviderTokenUpdates`): a sender whose processes or connections each sign their own
    /// token trips it (share one). nil when admitted; else the seconds since the team's previous
    /// new token.
    private func admit(_ token: String, team: String, now: Int64) -> Int64? {
        teams.withLock { teams in
            if case .tooSoon(let since) = teams.admit(token, team: team, nowSeconds: now) { return since }
            return nil
        }
    }
}
