import Clocks
import Encoding
import PushModel
import RecordLine
import Crypto
import HTTPCore
import JSON
import Synchronization

/// An access token this gateway issued at `POST /token`.
struct IssuedAccessToken: Sendable {
    var clientEmail: String
    var expiresAtSeconds: Int64
    /// The assertion's scope included firebase.messaging or cloud-platform.
    var hasMessagingScope: Bool
    /// The projects its account may send to (`ServiceAccount.projects`); empty: not checked.
    var projects: [String] = []
}

/// The access tokens issued so far, looked up by FCM on every request whose token is not the
/// one its connection already showed. Every token lives the configured lifetime, so the order
/// of issue is the order of expiry: expired ones are dropped from the front as tokens come
/// (amortised O(1) a token; a filter over the whole map once it passed 100,000 cost 280-490 µs
/// an insert under the lock FCM's lookups take). Past `capacity` live tokens the oldest is
/// dropped too, and a sender still using it is answered 401 as for a token never issued.
final class AccessTokenStore: Sendable {
    private struct State {
        var tokens: [String: IssuedAccessToken] = [:]
        /// Tokens in order of issue, from `head` on.
        var order: [String] = []
        var head = 0
    }
    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 200_000) { self.capacity = capacity }

    func insert(_ token: String, _ issued: IssuedAccessToken, now: Int64) {
        state.withLock { state in
            while state.head < state.order.count {
                let oldest = state.order[state.head]
                guard state.tokens.count >= capacity || (state.tokens[oldest]?.expiresAtSeconds ?? 0) <= now else { break }
                state.tokens[oldest] = nil
                state.head += 1
            }
            // The consumed front is cut once it is half the array: each element moves at most once.
            if state.head > 1024, state.head * 2 > state.order.count {
                state.order.removeFirst(state.head)
                state.head = 0
            }
            if state.tokens.updateValue(issued, forKey: token) == nil { state.order.append(token) }
        }
    }

    func lookup(_ token: String) -> IssuedAccessToken? {
        state.withLock { $0.tokens[token] }
    }

    var count: Int { state.withLock { $0.tokens.count } }
}

/// `POST /token`: Google's OAuth2 JWT-bearer grant (RFC 7523) as service accounts use it
/// (fcm.md, "OAuth2 service-account flow").
///
/// With service accounts configured, the assertion must be RS256, signed by the account whose
/// `client_email` is `iss` (and whose `private_key_id` is `kid`, when given), with `aud` equal to
/// `https://oauth2.googleapis.com/token`, the configured `token_url` or this server's own
/// `/token` URL, `iat` not in the future, `exp` after now and at most an hour after `iat`, and a
/// `scope`. Without service accounts any well-formed assertion gets a token.
/// A scope without firebase.messaging or cloud-platform still gets a token (Google issues it);
/// FCM then refuses it with 403 "insufficient authentication scopes".
final class OAuthService: Sendable {
    struct Account: Sendable {
        var privateKeyID: String
        var publicKey: RSAPublicKey
    }

    static let googleTokenURL = "https://oauth2.googleapis.com/token"
    static let messagingScopes: Set<Substring> = [
        "https://www.googleapis.com/auth/firebase.messaging",
        "https://www.googleapis.com/auth/cloud-platform",
    ]
    /// Tolerated clock skew for `iat` in the future.
    static let allowedSkewSeconds: Int64 = 300

    let accounts: [String: Account]
    let configuration: FCMConfiguration
    let store: AccessTokenStore
    let identifiers: IdentifierSource
    let clock: WallClock

    init(configuration: FCMConfiguration, store: AccessTokenStore, identifiers: IdentifierSource,
         clock: WallClock) throws(GatewayConfigurationError) {
        var accounts: [String: Account] = [:]
        for (i, account) in configuration.serviceAccounts.enumerated() {
            let publicKey: RSAPublicKey
            if let key = try? RSAPublicKey(pem: account.keyPEM) {
                publicKey = key
            } else {
                do {
                    publicKey = try RSAPrivateKey(pem: account.keyPEM).publicKey
                } catch {
                    throw GatewayConfigurationError(keyPath: "fcm.service_accounts[\(i)]",
                                                    problem: "the key is not an RSA public or private key PEM: \(error)")
                }
            }
            accounts[account.clientEmail] = Account(privateKeyID: account.privateKeyID, publicKey: publicKey)
        }
        self.accounts = accounts
        self.configuration = configuration
        self.store = store
        self.identifiers = identifiers
        self.clock = clock
    }

    var authEnabled: Bool { !accounts.isEmpty }

    static let shortLivedMessage = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."

    func handle(_ request: HTTPRequest) -> ServiceOutcome {
        var warnings: [GatewayNote] = []
        func fail(_ error: String, _ description: String, status: Int = 400, because failure: AuthFailure? = nil) -> ServiceOutcome {
            ServiceOutcome(response: Self.errorResponse(error, description, status: status), reason: error, warnings: warnings,
                           detail: failure?.detail, authFailure: failure?.kind)
        }
        guard request.method == "POST" else { return fail("invalid_request", "Method \(request.method) is not allowed; use POST", status: 405) }
        if let type = request.header("content-type"), !type.lowercased().hasPrefix("application/x-www-form-urlencoded") {
            warnings.append(.warning("token request content-type is \(type), not application/x-www-form-urlencoded"))
        }
        if let limit = GatewayRoute.oauth.maxBodyBytes, request.body.count > limit {
            return fail("invalid_request", GatewayRoute.payloadSizeExceeded(limit: limit))
        }
        let form = Self.parseForm(request.body)
        guard let grantType = form["grant_type"] else { return fail("invalid_request", "Missing required parameter: grant_type") }
        guard grantType == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return fail("unsupported_grant_type", "Invalid grant_type: \(grantType)")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return fail("invalid_request", "Missing required parameter: assertion", because: AuthFailure(.missing, "the form has no assertion"))
        }
        let jwt: DecodedJWT
        do {
            jwt = try JWT.decode(assertion)
        } catch {
            return fail("invalid_grant", "Invalid JWT: \(error)", because: AuthFailure(.malformed, "the assertion is not a JWT (\(error))"))
        }
        guard let issuer = jwt.claims["iss"]?.stringValue, !issuer.isEmpty else {
            return fail("invalid_request", "Invalid JWT: the assertion has no iss claim",
                        because: AuthFailure(.malformed, "the assertion has no iss claim (the service account's client_email)"))
        }
        let scope = jwt.claims["scope"]?.stringValue ?? ""
        let hasMessagingScope = scope.split(separator: " ").contains { Self.messagingScopes.contains($0) }
        let now = clock.nowSeconds

        if authEnabled {
            guard let account = accounts[issuer] else {
                return fail("invalid_grant", "Invalid grant: account not found",
                            because: AuthFailure(.unknownKey, "iss \(issuer) is not a configured service account (fcm.service_accounts)"))
            }
            guard jwt.algorithm == "RS256" else {
                return fail("invalid_grant", "Invalid JWT Signature.",
                            because: AuthFailure(.wrongAlgorithm, "alg is \(jwt.algorithm ?? "absent"), not RS256"))
            }
            if let keyID = jwt.keyID, keyID != account.privateKeyID {
                return fail("invalid_grant", "Invalid JWT Signature.",
                            because: AuthFailure(.unknownKey, "kid \(keyID) is not the private_key_id of \(issuer) (\(account.privateKeyID))"))
            }
            guard jwt.verifyRS256(key: account.publicKey) else {
                return fail("invalid_grant", "Invalid JWT Signature.",
                            because: AuthFailure(.badSignature, "the signature does not verify with the key of \(issuer)"))
            }
            guard let audience = jwt.claims["aud"]?.stringValue, acceptedAudience(audience, request: request) else {
                let found = jwt.claims["aud"].map { $0.stringValue ?? "a JSON \($0.typeName)" } ?? "absent"
                return fail("invalid_grant", "Invalid JWT: Failed audience check. The right audience is \(Self.googleTokenURL)",
                            because: AuthFailure(.wrongAudience, "aud is \(found); accepted: \(Self.googleTokenURL), the configured token_url, or this server's /token URL"))
            }
            switch checkLifetime(jwt.claims, now: now) {
            case .failure(let failure): return fail("invalid_grant", Self.shortLivedMessage, because: failure)
            case .success(let notes): warnings += notes
            }
            guard !scope.isEmpty else {
                return fail("invalid_scope", "Invalid OAuth scope or ID token audience provided.",
                            because: AuthFailure(.insufficientScope, "the assertion has no scope claim"))
            }
        }
        if !hasMessagingScope {
            warnings.append(.warning("assertion scope has neither firebase.messaging nor cloud-platform; FCM will refuse the token"))
        }

        let lifetime = configuration.accessTokenLifetimeSeconds
        let token = "ya29.mock-" + identifiers.hex(48)
        let projects = configuration.serviceAccounts.first { $0.clientEmail == issuer }?.projects ?? []
        store.insert(token, IssuedAccessToken(clientEmail: issuer, expiresAtSeconds: now + Int64(lifetime),
                                              hasMessagingScope: hasMessagingScope, projects: projects), now: now)
        var w = JSONWriter(capacity: 128)
        w.beginObject()
        w.key("access_token"); w.string(token)
        w.key("expires_in"); w.int(lifetime)
        w.key("token_type"); w.string("Bearer")
        w.endObject()
        let response = HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "application/json; charset=utf-8"),
                                                           HTTPHeader("cache-control", "no-cache, no-store, max-age=0, must-revalidate")],
                                    body: w.bytes)
        return ServiceOutcome(response: response, reason: nil, warnings: warnings, authenticated: true)
    }

    /// `iat` not in the future (beyond `allowedSkewSeconds`), `exp` after now, after `iat` and at
    /// most an hour after it. Both are NumericDates (RFC 7519 §2): google-auth and the other
    /// Google clients send integers, and a non-integer number is valid too, so it passes with
    /// a warning. A string is refused: Google's token endpoint answers invalid_grant for a
    /// non-numeric iat/exp (unlike Apple, which reads a string of digits). On success, the
    /// warnings.
    func checkLifetime(_ claims: JSONObject, now: Int64) -> Result<[GatewayNote], AuthFailure> {
        var notes: [GatewayNote] = []
        func read(_ claim: String) -> Result<Int64, AuthFailure> {
            guard let value = claims[claim] else { return .failure(AuthFailure(.malformed, "the assertion has no \(claim) claim")) }
            guard let date = NumericDate(value, acceptingStrings: false) else {
                return .failure(AuthFailure(.malformed, "\(claim) is a JSON \(value.typeName), not a NumericDate (a JSON number of seconds since the epoch)"))
            }
            if let note = date.warning(claim: claim, acceptedBy: "Google") { notes.append(note) }
            return .success(date.seconds)
        }
        let issuedAt: Int64, expiresAt: Int64
        switch read("iat") {
        case .failure(let failure): return .failure(failure)
        case .success(let seconds): issuedAt = seconds
        }
        switch read("exp") {
        case .failure(let failure): return .failure(failure)
        case .success(let seconds): expiresAt = seconds
        }
        if issuedAt > now + Self.allowedSkewSeconds {
            return .failure(AuthFailure(.issuedInFuture, "iat is \(issuedAt - now) s in the future (\(Self.allowedSkewSeconds) s of clock skew are allowed)"))
        }
        if expiresAt <= now { return .failure(AuthFailure(.expired, "exp was \(now - expiresAt) s ago")) }
        if expiresAt <= issuedAt { return .failure(AuthFailure(.malformed, "exp is not after iat")) }
        if expiresAt - issuedAt > 3600 {
            return .failure(AuthFailure(.tooLongLived, "exp is \(expiresAt - issuedAt) s after iat (at most 3600 s)"))
        }
        return .success(notes)
    }

    /// Python's google-auth sends Google's URL; Go sends the key file's `token_uri` (the mock).
    func acceptedAudience(_ audience: String, request: HTTPRequest) -> Bool {
        if audience == Self.googleTokenURL || audience == configuration.tokenURL { return true }
        guard let authority = request.authority else { return false }
        return audience == "https://\(authority)/token" || audience == "http://\(authority)/token"
    }

    static func errorResponse(_ error: String, _ description: String, status: Int = 400) -> HTTPResponse {
        var w = JSONWriter(capacity: 128)
        w.beginObject()
        w.key("error"); w.string(error)
        w.key("error_description"); w.string(description)
        w.endObject()
        return HTTPResponse(status: status, headers: [HTTPHeader("content-type", "application/json; charset=utf-8")], body: w.bytes)
    }

    /// `application/x-www-form-urlencoded`: `&`-separated `name=value`, `+` for space, `%XX`.
    /// The first occurrence of a name wins.
    static func parseForm(_ body: [UInt8]) -> [String: String] {
        var result: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecode(parts[0])
            let value = parts.count > 1 ? percentDecode(parts[1]) : ""
            if result[name] == nil { result[name] = value }
        }
        return result
    }

    static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: PercentEncoding.decode(bytes, plusIsSpace: true, lenient: true) ?? Array(bytes), as: UTF8.self)
    }

}
