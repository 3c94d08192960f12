import HTTPCore
import JSON

/// Which of the gateway's services a request was for.
public enum GatewayRoute: String, Sendable, CaseIterable {
    /// `POST /3/device/{token}` (and every other path on an HTTP/2 APNs-looking request).
    case apns
    /// `POST /v1/projects/{project}/messages:send`.
    case fcm
    /// `POST /token` (Google OAuth2 JWT-bearer grant).
    case oauth
    /// Anything else: answered 404.
    case unknown
}

/// One request and the answer the gateway gave it: what the recorder writes as a line,
/// what `/metrics` counts, what the spec validator judges.
public struct GatewayExchange: Sendable {
    public var request: HTTPRequest
    public var response: HTTPResponse
    public var route: GatewayRoute
    /// APNs `reason`, FCM `errorCode` or OAuth `error`; nil on success.
    public var reason: String?
    /// The injected fault that shaped the answer ("latency", "status:503", "goaway", …), if any.
    public var fault: String?
    /// The spec verdict as it goes into the record (spec id, violations), when specs are loaded.
    public var verdict: JSONValue?
    /// When the answer was decided, nanoseconds since the Unix epoch.
    public var answeredNanos: UInt64
    /// The gateway's own explanation of the answer, never sent to the client: why a credential
    /// was refused ("iat is 4000 s old", "kid XYZ is not configured (apns.keys)").
    public var detail: String?
    /// The kind of credential failure that answered, from a fixed set (a metric label).
    public var authFailure: AuthFailureKind?
    /// The subject of the connection's TLS client certificate, when it presented one.
    public var clientCertificateSubject: String?

    public init(request: HTTPRequest, response: HTTPResponse, route: GatewayRoute, reason: String? = nil,
                fault: String? = nil, verdict: JSONValue? = nil, answeredNanos: UInt64, detail: String? = nil,
                authFailure: AuthFailureKind? = nil, clientCertificateSubject: String? = nil) {
        self.request = request
        self.response = response
        self.route = route
        self.reason = reason
        self.fault = fault
        self.verdict = verdict
        self.answeredNanos = answeredNanos
        self.detail = detail
        self.authFailure = authFailure
        self.clientCertificateSubject = clientCertificateSubject
    }
}

/// Receives every exchange, on the event-loop thread that served it: must be cheap and
/// must not block (the recorder appends to a buffer; metrics bump atomics).
public protocol GatewayObserver: Sendable {
    func observe(_ exchange: GatewayExchange)
}
