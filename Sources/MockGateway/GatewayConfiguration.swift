// The gateway's configuration file. Cold path: Foundation is used to read key files.
import Crypto
import Foundation
import JSON

/// A configuration problem, naming the key path (`apns.keys[0].team_id`) and what is wrong:
/// the JSON module's typed-reading error, so the gateway's file, the control API and the
/// scenario format word their errors alike.
public typealias GatewayConfigurationError = JSONFieldError

/// `production` (api.push.apple.com) or `development` (api.sandbox.push.apple.com).
/// The development environment adds `apns-unique-id` to answers (apns.md: development only).
public enum APNSEnvironment: String, Sendable {
    case production, development
}

/// Everything `pushproof serve` can be told, decodable from one JSON file. Every key is
/// optional: the empty object `{}` is the zero-config gateway (no auth, every token valid,
/// no faults). Unknown keys are rejected so that typos do not silently do nothing.
///
/// ```
/// {
///   "apns": {
///     "keys": [{"key_id": "ABC123DEFG", "team_id": "TEAM123456",
///               "public_key_pem": "-----BEGIN PUBLIC KEY-----...",   // or "public_key_file": "key.pub.pem"
///               "environment": "production"}],                       // optional: the key's environment
///     "bundle_ids": ["com.example.app"],      // allowed topics' bundles; absent = any (TopicDisallowed)
///     "token_hex_length": 64,                 // shortest device token accepted (hex digits)
///     "max_token_hex_length": 64,             // longest; raise to accept longer tokens
///     "max_concurrent_streams": 1000,         // advertised once a connection is authenticated
///     "environment": "production",            // or "development"
///     "accept_der_signatures": false,         // also accept DER ES256 signatures (lenient clients)
///     "device_rate_limit": {"max": 10, "per_seconds": 1},  // 429 TooManyRequests beyond it; absent = off
///     "certificate_authorities": [{"pem": "-----BEGIN CERTIFICATE-----..."}]  // or {"file": "ca.pem"}:
///                                             // certificate-based auth on; clients' certificates are asked for
///   },
///   "fcm": {
///     "project_id": "my-project",             // absent = any project in the path
///     "project_number": "1234567890",         // also accepted in the path
///     "token_url": "https://127.0.0.1:8443/token", // an extra accepted OAuth `aud`
///     "service_accounts": [{"client_email": "x@my-project.iam.gserviceaccount.com",
///                           "private_key_id": "abc",
///                           "public_key_pem": "..."}],          // or "private_key_pem", or
///                                                               // "service_account_file": "sa.json"
///     "access_token_lifetime_seconds": 3600,
///     "quota_per_minute": 600000,             // per project, 429 QUOTA_EXCEEDED beyond it; absent = off
///     "device_rate_limit": {"max": 240, "per_seconds": 60} // per token, 429 QUOTA_EXCEEDED; absent = off
///   },
///   "tokens": {
///     "default": "valid",                     // unknown tokens: "valid" or "refuse" (treated as bad)
///     "valid": ["..."], "bad": ["..."],
///     "gone": [{"token": "...", "since_ms": 1700000000000}],   // or plain strings
///     "expired": [{"token": "...", "since_ms": 1700000000000}], // APNs 410 ExpiredToken
///     "other_sender": ["..."]                 // FCM 403 SENDER_ID_MISMATCH, APNs 400 DeviceTokenNotForTopic
///   },
///   "faults": {
///     "seed": 42,
///     "max_concurrent_streams": 500,          // overrides apns.max_concurrent_streams
///     "apns": {"latency": {"fixed_ms": 5}, "error_rates": {"429": 0.01, "500": 0.001, "503": 0.002},
///              "retry_after_seconds": 30, "goaway_after_streams": 1000,
///              "reset_rate": 0.0005, "close_rate": 0.0001},
///     "fcm": {"latency": {"distribution": {"kind": "normal", "mean_ms": 20, "stddev_ms": 5}}},
///     "oauth": {}
///   }
/// }
/// ```
/// Latency distributions: `{"kind": "uniform", "min_ms", "max_ms"}`,
/// `{"kind": "normal", "mean_ms", "stddev_ms"}` (clamped at 0), `{"kind": "exponential", "mean_ms"}`.
public struct GatewayConfiguration: Sendable {
    public var apns: APNSConfiguration
    public var fcm: FCMConfiguration
    public var tokens: TokenConfiguration
    public var faults: FaultConfiguration

    public init(apns: APNSConfiguration = .init(), fcm: FCMConfiguration = .init(),
                tokens: TokenConfiguration = .init(), faults: FaultConfiguration = .init()) {
        self.apns = apns
        self.fcm = fcm
        self.tokens = tokens
        self.faults = faults
    }

    /// Reads a configuration file; relative key file paths resolve against its directory.
    public static func load(path: String) throws(GatewayConfigurationError) -> GatewayConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw GatewayConfigurationError(keyPath: "", problem: "cannot read configuration file \(path)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        return try parse(json: [UInt8](data), baseDirectory: directory.isEmpty ? "." : directory)
    }

    /// Parses configuration JSON. `baseDirectory` resolves relative `*_file` keys.
    public static func parse(json: [UInt8], baseDirectory: String = ".") throws(GatewayConfigurationError) -> GatewayConfiguration {
        let document: JSONValue
        do {
            document = try JSONParser.parse(json, options: .init(duplicateKeys: .reject))
        } catch {
            throw GatewayConfigurationError(keyPath: "", problem: "not valid JSON: \(error)")
        }
        var reader = ConfigReader(baseDirectory: baseDirectory)
        return try reader.configuration(document)
    }
}

/// APNs settings. Token auth is on exactly when `keys` is not empty.
public struct APNSConfiguration: Sendable {
    /// A provider-token signing key (.p8), as Apple's developer account lists it.
    public struct SigningKey: Sendable {
        /// The 10-character key id (`kid` in the JWT header).
        public var keyID: String
        /// The 10-character team id the key belongs to (`iss` must equal it).
        public var teamID: String
        /// The P-256 public key, SPKI PEM.
        public var publicKeyPEM: String
        /// When set and different from the gateway's environment: BadEnvironmentKeyIdInToken.
        public var environment: APNSEnvironment?

        public init(keyID: String, teamID: String, publicKeyPEM: String, environment: APNSEnvironment? = nil) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
            self.environment = environment
        }
    }

    public var keys: [SigningKey]
    /// Bundle ids topics may name; nil accepts any (else 400 TopicDisallowed).
    public var bundleIDs: Set<String>?
    public var tokenHexLength: Int
    public var maxTokenHexLength: Int
    public var maxConcurrentStreams: UInt32
    public var environment: APNSEnvironment
    /// JWS requires the 64-byte R||S form; some clients send DER. Apple's behaviour with DER is
    /// not documented, so it is refused (InvalidProviderToken) unless this is on (apns.md).
    public var acceptDERSignatures: Bool
    /// Pushes to one device token beyond this rate: 429 TooManyRequests. nil: no limit.
    public var deviceRateLimit: RateLimit?
    /// Issuers of provider certificates (Apple's WWDR CA in the real service). When set,
    /// TLS connections are asked for a client certificate and a connection that presents
    /// one is authenticated by it (certificate-based trust).
    public var certificateAuthorities: ProviderCertificateAuthorities?

    public init(keys: [SigningKey] = [], bundleIDs: Set<String>? = nil, tokenHexLength: Int = 64,
                maxTokenHexLength: Int? = nil, maxConcurrentStreams: UInt32 = 1000,
                environment: APNSEnvironment = .production, acceptDERSignatures: Bool = false,
                deviceRateLimit: RateLimit? = nil, certificateAuthorities: ProviderCertificateAuthorities? = nil) {
        self.certificateAuthorities = certificateAuthorities
        self.acceptDERSignatures = acceptDERSignatures
        self.deviceRateLimit = deviceRateLimit
        self.keys = keys
        self.bundleIDs = bundleIDs
        self.tokenHexLength = tokenHexLength
        self.maxTokenHexLength = max(maxTokenHexLength ?? tokenHexLength, tokenHexLength)
        self.maxConcurrentStreams = maxConcurrentStreams
        self.environment = environment
    }

    public var tokenAuthEnabled: Bool { !keys.isEmpty }
    public var certificateAuthEnabled: Bool { certificateAuthorities != nil }
}

/// FCM and Google OAuth settings. Auth is on exactly when `serviceAccounts` is not empty.
public struct FCMConfiguration: Sendable {
    public struct ServiceAccount: Sendable {
        public var clientEmail: String
        public var privateKeyID: String
        /// An RSA public key, certificate or private key PEM (the public half is derived).
        public var keyPEM: String

        public init(clientEmail: String, privateKeyID: String, keyPEM: String) {
            self.clientEmail = clientEmail
            self.privateKeyID = privateKeyID
            self.keyPEM = keyPEM
        }
    }

    public var projectID: String?
    public var projectNumber: String?
    public var serviceAccounts: [ServiceAccount]
    /// Accepted as the assertion's `aud` besides Google's own URL and this server's `/token`.
    public var tokenURL: String?
    public var accessTokenLifetimeSeconds: Int
    /// Messages per minute per project (Google's default quota is 600,000); every request
    /// counts, client errors included. Beyond it: 429 QUOTA_EXCEEDED. nil: no quota.
    public var quotaPerMinute: Int?
    /// Messages to one registration token beyond this rate: 429 QUOTA_EXCEEDED. nil: no limit.
    public var deviceRateLimit: RateLimit?

    public init(projectID: String? = nil, projectNumber: String? = nil, serviceAccounts: [ServiceAccount] = [],
                tokenURL: String? = nil, accessTokenLifetimeSeconds: Int = 3600, quotaPerMinute: Int? = nil,
                deviceRateLimit: RateLimit? = nil) {
        self.quotaPerMinute = quotaPerMinute
        self.deviceRateLimit = deviceRateLimit
        self.projectID = projectID
        self.projectNumber = projectNumber
        self.serviceAccounts = serviceAccounts
        self.tokenURL = tokenURL
        self.accessTokenLifetimeSeconds = accessTokenLifetimeSeconds
    }

    public var authEnabled: Bool { !serviceAccounts.isEmpty }
}

/// The device tokens the gateway starts with (APNs and FCM share one registry).
public struct TokenConfiguration: Sendable {
    public var unknownTokens: UnknownTokenPolicy
    public var valid: [String]
    public var gone: [(token: String, sinceMillis: UInt64?)]
    /// APNs 410 ExpiredToken (FCM: 404 UNREGISTERED).
    public var expired: [(token: String, sinceMillis: UInt64?)]
    public var bad: [String]
    /// Registered to another sender: FCM 403 SENDER_ID_MISMATCH, APNs 400 DeviceTokenNotForTopic.
    public var otherSender: [String]

    public init(unknownTokens: UnknownTokenPolicy = .accept, valid: [String] = [],
                gone: [(token: String, sinceMillis: UInt64?)] = [], expired: [(token: String, sinceMillis: UInt64?)] = [],
                bad: [String] = [], otherSender: [String] = []) {
        self.unknownTokens = unknownTokens
        self.expired = expired
        self.valid = valid
        self.gone = gone
        self.bad = bad
        self.otherSender = otherSender
    }
}

/// What happens to a token the registry does not hold.
public enum UnknownTokenPolicy: String, Sendable {
    /// Delivered (the zero-config default: any well-formed token works).
    case accept = "valid"
    /// Treated as a bad token: APNs 400 BadDeviceToken, FCM 400 INVALID_ARGUMENT (invalid token).
    case refuse
}

/// Injected faults, per route.
public struct FaultConfiguration: Sendable {
    public var seed: UInt64
    /// Replaces `apns.max_concurrent_streams` when set.
    public var maxConcurrentStreams: UInt32?
    public var routes: [GatewayRoute: RouteFaults]

    public init(seed: UInt64 = 0x5EED, maxConcurrentStreams: UInt32? = nil, routes: [GatewayRoute: RouteFaults] = [:]) {
        self.seed = seed
        self.maxConcurrentStreams = maxConcurrentStreams
        self.routes = routes
    }
}

/// Faults for one route. Rates are probabilities per request in [0, 1].
public struct RouteFaults: Sendable, Equatable {
    public var latency: LatencyDistribution?
    /// HTTP status (429, 500, 503) -> probability. Answered with the route's error shape.
    public var errorRates: [Int: Double]
    /// `retry-after` on injected 429 and 503 answers.
    public var retryAfterSeconds: Int
    /// GOAWAY (NO_ERROR, `{"reason":"Shutdown"}`) with the answer to the Nth request on a connection.
    public var goAwayAfterStreams: Int?
    /// RST_STREAM (REFUSED_STREAM) instead of an answer.
    public var resetRate: Double
    /// TCP close without an answer.
    public var closeRate: Double

    public init(latency: LatencyDistribution? = nil, errorRates: [Int: Double] = [:], retryAfterSeconds: Int = 30,
                goAwayAfterStreams: Int? = nil, resetRate: Double = 0, closeRate: Double = 0) {
        self.latency = latency
        self.errorRates = errorRates
        self.retryAfterSeconds = retryAfterSeconds
        self.goAwayAfterStreams = goAwayAfterStreams
        self.resetRate = resetRate
        self.closeRate = closeRate
    }

    public var isEmpty: Bool {
        latency == nil && errorRates.values.allSatisfy { $0 == 0 } && goAwayAfterStreams == nil
            && resetRate == 0 && closeRate == 0
    }
}

/// Added latency, in milliseconds.
public enum LatencyDistribution: Sendable, Equatable {
    case fixed(milliseconds: Double)
    case uniform(minMilliseconds: Double, maxMilliseconds: Double)
    case normal(meanMilliseconds: Double, standardDeviationMilliseconds: Double)
    case exponential(meanMilliseconds: Double)
}

// MARK: - Reading

/// Walks the configuration document with ``JSONFields``, which keeps the key path for error
/// messages; this adds what only the configuration has (key files, rate limits, faults).
struct ConfigReader {
    let baseDirectory: String

    func fail(_ path: String, _ problem: String) -> GatewayConfigurationError {
        GatewayConfigurationError(keyPath: path, problem: problem)
    }

    /// A gone or expired token's `since_ms`: whole milliseconds since 1970, not negative. Shared
    /// by the configuration file and the control API's `PUT /tokens/<t>`.
    func sinceMillis(_ o: JSONFields) throws(GatewayConfigurationError) -> UInt64? {
        try o.int("since_ms", range: 0...Int(Int64.max)).map { UInt64($0) }
    }

    func rateLimit(_ o: JSONFields, _ key: String) throws(GatewayConfigurationError) -> RateLimit? {
        guard let limit = try o.object(key, allowed: ["max", "per_seconds"]) else { return nil }
        guard let maximum = try limit.int("max", range: 1...Int(Int32.max)) else {
            throw limit.fail("max", "required (a positive integer)")
        }
        guard let seconds = try limit.number("per_seconds", range: 0.001...86_400) else {
            throw limit.fail("per_seconds", "required (seconds, a positive number)")
        }
        return RateLimit(maximum: maximum, perSeconds: seconds)
    }

    func readFile(_ file: String, _ path: String) throws(GatewayConfigurationError) -> String {
        let full = file.hasPrefix("/") ? file : baseDirectory + "/" + file
        guard let data = FileManager.default.contents(atPath: full) else { throw fail(path, "cannot read file \(full)") }
        return String(decoding: data, as: UTF8.self)
    }

    mutating func configuration(_ document: JSONValue) throws(GatewayConfigurationError) -> GatewayConfiguration {
        let root = try JSONFields(document, allowed: ["apns", "fcm", "tokens", "faults"])
        var configuration = GatewayConfiguration()
        if let apns = root.object["apns"] { configuration.apns = try apnsConfiguration(apns, "apns") }
        if let fcm = root.object["fcm"] { configuration.fcm = try fcmConfiguration(fcm, "fcm") }
        if let tokens = root.object["tokens"] { configuration.tokens = try tokenConfiguration(tokens, "tokens") }
        if let faults = root.object["faults"] { configuration.faults = try faultConfiguration(faults, "faults") }
        return configuration
    }

    func environment(_ o: JSONFields, _ key: String) throws(GatewayConfigurationError) -> APNSEnvironment? {
        guard let text = try o.string(key) else { return nil }
        switch text {
        case "production": return .production
        case "development", "sandbox": return .development
        default: throw o.fail(key, "expected \"production\" or \"development\", found \"\(text)\"")
        }
    }

    func apnsConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> APNSConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["keys", "bundle_ids", "token_hex_length", "max_token_hex_length",
                                                            "max_concurrent_streams", "environment", "accept_der_signatures",
                                                            "device_rate_limit", "certificate_authorities"])
        var keys: [APNSConfiguration.SigningKey] = []
        for k in try o.objects("keys", allowed: ["key_id", "team_id", "public_key_pem", "public_key_file", "environment"]) {
            let keyID = try k.requiredString("key_id")
            let teamID = try k.requiredString("team_id")
            let pem: String
            if let inline = try k.string("public_key_pem") {
                pem = inline
            } else if let file = try k.string("public_key_file") {
                pem = try readFile(file, k.path("public_key_file"))
            } else {
                throw fail(k.path, "needs public_key_pem or public_key_file")
            }
            if keys.contains(where: { $0.keyID == keyID }) { throw k.fail("key_id", "duplicate key id \(keyID)") }
            keys.append(.init(keyID: keyID, teamID: teamID, publicKeyPEM: pem, environment: try environment(k, "environment")))
        }
        // Present (even null) means a list: `"bundle_ids": null` allows no bundle, as before.
        let bundles = o.object["bundle_ids"] == nil ? nil : Set(try o.strings("bundle_ids") ?? [])
        let minLength = try o.int("token_hex_length", range: 8...1024) ?? 64
        let maxLength = try o.int("max_token_hex_length", range: 8...1024) ?? minLength
        guard maxLength >= minLength else {
            throw o.fail("max_token_hex_length", "must not be less than token_hex_length (\(minLength))")
        }
        let streams = try o.int("max_concurrent_streams", range: 1...Int(Int32.max)) ?? 1000
        return APNSConfiguration(keys: keys, bundleIDs: bundles, tokenHexLength: minLength, maxTokenHexLength: maxLength,
                                 maxConcurrentStreams: UInt32(streams),
                                 environment: try environment(o, "environment") ?? .production,
                                 acceptDERSignatures: try o.bool("accept_der_signatures") ?? false,
                                 deviceRateLimit: try rateLimit(o, "device_rate_limit"),
                                 certificateAuthorities: try certificateAuthorities(o))
    }

    func certificateAuthorities(_ o: JSONFields) throws(GatewayConfigurationError) -> ProviderCertificateAuthorities? {
        guard o.object["certificate_authorities"] != nil else { return nil }
        var pems: [String] = []
        for item in try o.objects("certificate_authorities", allowed: ["pem", "file"]) {
            if let inline = try item.string("pem") {
                pems.append(inline)
            } else if let file = try item.string("file") {
                pems.append(try readFile(file, item.path("file")))
            } else {
                throw fail(item.path, "needs pem or file")
            }
        }
        guard !pems.isEmpty else { throw o.fail("certificate_authorities", "lists no authority; leave it out to turn certificate auth off") }
        do {
            return try ProviderCertificateAuthorities(pems: pems)
        } catch {
            throw o.fail("certificate_authorities", "\(error)")
        }
    }

    func fcmConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> FCMConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["project_id", "project_number", "token_url", "service_accounts",
                                                            "access_token_lifetime_seconds", "quota_per_minute", "device_rate_limit"])
        var accounts: [FCMConfiguration.ServiceAccount] = []
        for a in try o.objects("service_accounts", allowed: ["client_email", "private_key_id", "public_key_pem",
                                                             "private_key_pem", "service_account_file"]) {
            var email = try a.string("client_email")
            var keyID = try a.string("private_key_id")
            var pem = try a.string("public_key_pem")
            if pem == nil { pem = try a.string("private_key_pem") }
            if let file = try a.string("service_account_file") {
                let filePath = a.path("service_account_file")
                let text = try readFile(file, filePath)
                guard case .object(let sa)? = try? JSONParser.parse(text) else {
                    throw fail(filePath, "\(file) is not a service-account JSON object")
                }
                email = email ?? sa["client_email"]?.stringValue
                keyID = keyID ?? sa["private_key_id"]?.stringValue
                pem = pem ?? sa["private_key"]?.stringValue
            }
            guard let email, !email.isEmpty else { throw a.fail("client_email", "required (a non-empty string)") }
            guard let keyID, !keyID.isEmpty else { throw a.fail("private_key_id", "required (a non-empty string)") }
            guard let pem, !pem.isEmpty else {
                throw fail(a.path, "needs public_key_pem, private_key_pem or service_account_file")
            }
            accounts.append(.init(clientEmail: email, privateKeyID: keyID, keyPEM: pem))
        }
        let lifetime = try o.int("access_token_lifetime_seconds", range: 1...86_400) ?? 3600
        return FCMConfiguration(projectID: try o.string("project_id"), projectNumber: try o.string("project_number"),
                                serviceAccounts: accounts, tokenURL: try o.string("token_url"),
                                accessTokenLifetimeSeconds: lifetime,
                                quotaPerMinute: try o.int("quota_per_minute", range: 1...Int(Int32.max)),
                                deviceRateLimit: try rateLimit(o, "device_rate_limit"))
    }

    func tokenConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> TokenConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["default", "valid", "gone", "expired", "bad", "other_sender"])
        var policy = UnknownTokenPolicy.accept
        if let text = try o.string("default") {
            guard let p = UnknownTokenPolicy(rawValue: text) else {
                throw o.fail("default", "expected \"valid\" or \"refuse\", found \"\(text)\"")
            }
            policy = p
        }
        func datedTokens(_ key: String) throws(GatewayConfigurationError) -> [(token: String, sinceMillis: UInt64?)] {
            var tokens: [(token: String, sinceMillis: UInt64?)] = []
            for (i, element) in (try o.array(key) ?? []).enumerated() {
                let elementPath = o.path(key, i)
                switch element {
                case .string(let token) where !token.isEmpty:
                    tokens.append((token, nil))
                case .object:
                    let g = try JSONFields(element, path: elementPath, allowed: ["token", "since_ms"])
                    let since = try sinceMillis(g)
                    tokens.append((try g.requiredString("token"), since))
                default:
                    throw fail(elementPath, "expected a token string or {\"token\", \"since_ms\"}")
                }
            }
            return tokens
        }
        let gone = try datedTokens("gone")
        let expired = try datedTokens("expired")
        return TokenConfiguration(unknownTokens: policy, valid: try o.strings("valid") ?? [], gone: gone,
                                  expired: expired, bad: try o.strings("bad") ?? [],
                                  otherSender: try o.strings("other_sender") ?? [])
    }

    func faultConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> FaultConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["seed", "max_concurrent_streams", "apns", "fcm", "oauth"])
        var faults = FaultConfiguration()
        if let seed = try o.int("seed", range: 0...Int.max) { faults.seed = UInt64(seed) }
        faults.maxConcurrentStreams = try o.int("max_concurrent_streams", range: 1...Int(Int32.max)).map { UInt32($0) }
        for route in [GatewayRoute.apns, .fcm, .oauth] {
            if let routeValue = o.object[route.rawValue] {
                faults.routes[route] = try routeFaults(routeValue, o.path(route.rawValue))
            }
        }
        return faults
    }

    func routeFaults(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> RouteFaults {
        let o = try JSONFields(value, path: path, allowed: ["latency", "error_rates", "retry_after_seconds", "goaway_after_streams",
                                                            "reset_rate", "close_rate"])
        var faults = RouteFaults()
        if let latency = o.value("latency") { faults.latency = try latencyDistribution(latency, o.path("latency")) }
        if let rates = o.value("error_rates") {
            let ratesPath = o.path("error_rates")
            guard case .object = rates else { throw fail(ratesPath, "expected an object like {\"503\": 0.01}") }
            let r = try JSONFields(rates, path: ratesPath)
            for (key, _) in r.object.entries {
                guard let status = Int(key), [429, 500, 503].contains(status) else {
                    throw r.fail(key, "status must be one of 429, 500, 503")
                }
                faults.errorRates[status] = try r.number(key, range: 0...1)
            }
            guard faults.errorRates.values.reduce(0, +) <= 1 else { throw fail(ratesPath, "rates add up to more than 1") }
        }
        faults.retryAfterSeconds = try o.int("retry_after_seconds", range: 0...86_400) ?? 30
        faults.goAwayAfterStreams = try o.int("goaway_after_streams", range: 1...Int(Int32.max))
        faults.resetRate = try o.number("reset_rate", range: 0...1) ?? 0
        faults.closeRate = try o.number("close_rate", range: 0...1) ?? 0
        return faults
    }

    func latencyDistribution(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> LatencyDistribution {
        let o = try JSONFields(value, path: path, allowed: ["fixed_ms", "distribution"])
        let limit = 600_000.0
        if let fixed = try o.number("fixed_ms", range: 0...limit) {
            guard o.object["distribution"] == nil else { throw fail(path, "give fixed_ms or distribution, not both") }
            return .fixed(milliseconds: fixed)
        }
        guard let d = o.object["distribution"] else { throw fail(path, "needs fixed_ms or distribution") }
        let dist = try JSONFields(d, path: o.path("distribution"), allowed: ["kind", "min_ms", "max_ms", "mean_ms", "stddev_ms"])
        func need(_ key: String) throws(GatewayConfigurationError) -> Double {
            guard let v = try dist.number(key, range: 0...limit) else { throw dist.fail(key, "required for this kind") }
            return v
        }
        switch try dist.requiredString("kind") {
        case "uniform":
            let low = try need("min_ms"), high = try need("max_ms")
            guard high >= low else { throw dist.fail("max_ms", "must not be less than min_ms") }
            return .uniform(minMilliseconds: low, maxMilliseconds: high)
        case "normal":
            return .normal(meanMilliseconds: try need("mean_ms"), standardDeviationMilliseconds: try need("stddev_ms"))
        case "exponential":
            return .exponential(meanMilliseconds: try need("mean_ms"))
        case let other:
            throw dist.fail("kind", "expected uniform, normal or exponential, found \"\(other)\"")
        }
    }
}
