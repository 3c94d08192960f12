// How a PushDeliverer reaches the gateways. Everything a test needs to point the sender at
// a mock (`pushproof serve`, nghttpd) is here: base URLs, the OAuth token URL, TLS trust.
import Synchronization

/// TLS trust for https:// gateways.
public enum TLSTrust: Sendable, Equatable {
    /// The system's CA bundle: the real gateways.
    case systemRoots
    /// A PEM file of trusted certificates, e.g. the mock gateway's self-signed certificate.
    case caFile(String)
    /// No certificate or host name check. Local testing only.
    case insecure
}

public struct DeliveryConfiguration: Sendable {
    /// APNs origin without a trailing slash; pushes go to `{base}/3/device/{token}`.
    /// `http://` means HTTP/2 with prior knowledge (h2c); `https://` means HTTP/2 over TLS.
    public var apnsBaseURL: String
    /// FCM origin; pushes go to `{base}/v1/projects/{project}/messages:send`.
    public var fcmBaseURL: String
    /// Where to get OAuth2 access tokens instead of the service account's `token_uri`.
    public var oauthTokenURL: String?
    /// The FCM project instead of the service account's `project_id`.
    public var fcmProjectID: String?
    /// The most connections libcurl opens to one host (CURLMOPT_MAX_HOST_CONNECTIONS).
    /// libcurl multiplexes streams on an open connection before it opens another
    /// (CURLOPT_PIPEWAIT), so this is an upper bound. A mock serving APNs, FCM and OAuth on
    /// one host:port shares the bound among them. With http:// (h2c) on libcurl before 8.0
    /// it is 1 (see `CurlTransfer.priorKnowledgeReuseIsBroken`).
    public var connectionsPerGateway: Int
    /// Whether this process's libcurl runs h2c (http://) on one connection per origin
    /// whatever `connectionsPerGateway` says (libcurl before 8.0).
    public static var h2cIsOneConnectionPerOrigin: Bool { CurlTransfer.priorKnowledgeReuseIsBroken }
    /// Most streams libcurl opens on one connection; the server's SETTINGS may lower it
    /// (APNs allows 1 until the first authenticated request succeeds).
    public var streamsPerConnection: Int
    /// Pushes accepted but not yet finished; `send` suspends while this many are out.
    public var maxInFlight: Int
    public var tls: TLSTrust
    public var retry: RetryPolicy
    /// Age at which the APNs provider token is re-signed. Apple: no more often than every
    /// 20 minutes, no less often than every 60 (apns.md, "Token-based authentication");
    /// clamped to that window.
    public var apnsTokenRefreshSeconds: Int
    /// An OAuth2 access token is replaced this long before `expires_in` runs out.
    public var accessTokenRefreshMarginSeconds: Int
    /// Whole-transfer timeout for one attempt, in milliseconds (0 = none).
    public var requestTimeoutMilliseconds: Int
    public var connectTimeoutMilliseconds: Int

    public init(
        apnsBaseURL: String = "https://api.push.apple.com",
        fcmBaseURL: String = "https://fcm.googleapis.com",
        oauthTokenURL: String? = nil,
        fcmProjectID: String? = nil,
        connectionsPerGateway: Int = 1,
        streamsPerConnection: Int = 1000,
        maxInFlight: Int = 1000,
        tls: TLSTrust = .systemRoots,
        retry: RetryPolicy = RetryPolicy(),
        apnsTokenRefreshSeconds: Int = 50 * 60,
        accessTokenRefreshMarginSeconds: Int = 5 * 60,
        requestTimeoutMilliseconds: Int = 30_000,
        connectTimeoutMilliseconds: Int = 10_000
    ) {
        self.apnsBaseURL = Self.trimmingTrailingSlash(apnsBaseURL)
        self.fcmBaseURL = Self.trimmingTrailingSlash(fcmBaseURL)
        self.oauthTokenURL = oauthTokenURL
        self.fcmProjectID = fcmProjectID
        self.connectionsPerGateway = max(1, connectionsPerGateway)
        self.streamsPerConnection = max(1, streamsPerConnection)
        self.maxInFlight = max(1, maxInFlight)
        self.tls = tls
        self.retry = retry
        self.apnsTokenRefreshSeconds = min(60 * 60, max(20 * 60, apnsTokenRefreshSeconds))
        self.accessTokenRefreshMarginSeconds = max(0, accessTokenRefreshMarginSeconds)
        self.requestTimeoutMilliseconds = max(0, requestTimeoutMilliseconds)
        self.connectTimeoutMilliseconds = max(0, connectTimeoutMilliseconds)
    }

    private static func trimmingTrailingSlash(_ url: String) -> String {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

/// Credentials per gateway. A gateway without credentials runs dry: its pushes are logged
/// and not sent.
///
/// Copies share one APNs provider token (`SharedProviderTokens`): every deliverer made from
/// these credentials signs with the same one, as Apple wants of a team; a new `apns` source
/// starts a token of its own.
public struct DeliveryCredentials: Sendable {
    public var apns: (any ProviderTokenSource)? {
        didSet { providerTokens = ProviderTokenSharing() }
    }
    public var fcm: (any OAuthAssertionSource)?
    private var providerTokens = ProviderTokenSharing()

    public init(apns: (any ProviderTokenSource)? = nil, fcm: (any OAuthAssertionSource)? = nil) {
        self.apns = apns
        self.fcm = fcm
    }

    /// The provider token these credentials (and their copies) sign with; nil without `apns`.
    /// The first deliverer to ask sets the refresh interval.
    func sharedProviderTokens(refreshSeconds: Int) -> SharedProviderTokens? {
        apns.map { providerTokens.tokens(source: $0, refreshSeconds: refreshSeconds) }
    }

    /// No credentials at all: local development, every push is logged instead of sent.
    public static let none = DeliveryCredentials()
}

/// What copies of one `DeliveryCredentials` share: its provider token, made on first use.
private final class ProviderTokenSharing: Sendable {
    private let made = Mutex<SharedProviderTokens?>(nil)

    func tokens(source: any ProviderTokenSource, refreshSeconds: Int) -> SharedProviderTokens {
        made.withLock { made in
            if let made { return made }
            let tokens = SharedProviderTokens(source: source, refreshSeconds: refreshSeconds)
            made = tokens
            return tokens
        }
    }
}
