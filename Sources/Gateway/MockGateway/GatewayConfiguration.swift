// The gateway's configuration: the model. Reading it from JSON is in GatewayConfigurationReading.swift.
import Crypto
import JSON
import PushModel

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
///   },
///   "answer_rules": [                         // first match answers (AnswerRule): see the README
///     {"name": "third-push-throttled", "route": "apns",
///      "match": {"token": "...", "nth": 3}, "answer": {"status": 429, "retry_after_seconds": 2}}
///   ]
/// }
/// ```
/// Latency distributions: `{"kind": "uniform", "min_ms", "max_ms"}`,
/// `{"kind": "normal", "mean_ms", "stddev_ms"}` (clamped at 0), `{"kind": "exponential", "mean_ms"}`.
public struct GatewayConfiguration: Sendable {
    public var apns: APNSConfiguration
    public var fcm: FCMConfiguration
    public var tokens: TokenConfiguration
    public var faults: FaultConfiguration
    /// Answers chosen by what a request carries, in order (`AnswerRules`).
    public var answerRules: [AnswerRule]

    public init(apns: APNSConfiguration = .init(), fcm: FCMConfiguration = .init(),
                tokens: TokenConfiguration = .init(), faults: FaultConfiguration = .init(),
                answerRules: [AnswerRule] = []) {
        self.apns = apns
        self.fcm = fcm
        self.tokens = tokens
        self.faults = faults
        self.answerRules = answerRules
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
        /// Projects besides its own it may send to (`send_to_projects`): an account granted the
        /// Firebase Cloud Messaging role on another project, as an IAM policy would.
        public var grantedProjects: [String]

        public init(clientEmail: String, privateKeyID: String, keyPEM: String, grantedProjects: [String] = []) {
            self.clientEmail = clientEmail
            self.privateKeyID = privateKeyID
            self.keyPEM = keyPEM
            self.grantedProjects = grantedProjects
        }

        /// The project a service account belongs to, from its email
        /// (`name@PROJECT.iam.gserviceaccount.com`); nil for another form.
        public static func project(ofEmail email: String) -> String? {
            guard let at = email.lastIndex(of: "@") else { return nil }
            let domain = email[email.index(after: at)...]
            let suffix = ".iam.gserviceaccount.com"
            guard domain.hasSuffix(suffix), domain.count > suffix.count else { return nil }
            return String(domain.dropLast(suffix.count))
        }

        /// The projects it may send to: its own and the granted ones (empty: its email names no
        /// project, and nothing is checked).
        public var projects: [String] {
            (Self.project(ofEmail: clientEmail).map { [$0] } ?? []) + grantedProjects
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
