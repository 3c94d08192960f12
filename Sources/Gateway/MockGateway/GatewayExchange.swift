import HTTPCore
import JSON
import PushModel
import RecordLine

extension GatewayRoute {
    /// The largest body read (parsed, judged) on this route; a larger one is answered from its
    /// size alone, so a hostile body costs no parse. APNs: 5120 bytes, the VoIP limit
    /// (apns.md, Payload; each push type's own limit is checked in its place, answered 413
    /// PayloadTooLarge). FCM: 64 KiB, sixteen times the 4096-byte message limit (fcm.md, Size;
    /// room for whitespace and the envelope), answered 400 INVALID_ARGUMENT. `/token`: 8 KiB,
    /// several times a service account's form (~1 KB of RS256 assertion), answered 400
    /// invalid_request.
    public var maxBodyBytes: Int? {
        switch self {
        case .apns: APNSPushType.voip.maxPayloadBytes
        case .fcm: 65_536
        case .oauth: 8_192
        case .unknown: nil
        }
    }

    /// Google's wording for a request over an API's size limit.
    static func payloadSizeExceeded(limit: Int) -> String { "Request payload size exceeds the limit: \(limit) bytes." }
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
    /// The answer rule that answered (`AnswerRule.name`), if one did.
    public var answerRule: String?
    /// The spec judge's finding and the gateway's own notes, as the record line keeps them; nil
    /// when there are neither.
    public var verdict: RecordedVerdict?
    /// When the answer was decided, nanoseconds since the Unix epoch.
    public var answeredNanos: UInt64
    /// The gateway's own explanation of the answer, never sent to the client: why a credential
    /// was refused ("iat is 4000 s old", "kid XYZ is not configured (apns.keys)").
    public var detail: String?
    /// The kind of credential failure that answered, from a fixed set (a metric label).
    public var authFailure: AuthFailureKind?
    /// The subject of the connection's TLS client certificate, when it presented one.
    public var clientCertificateSubject: String?
    /// The device token the request addressed, as written, when the service read one (an FCM
    /// message's `token`; APNs' is in the path).
    public var deviceToken: String?
    /// The record line's members from `protocol` to the request's `headers`, as the line writes
    /// them (`RecordedRequestHead`, kept per connection), when the gateway records lines; nil:
    /// the recorder encodes them.
    public var recordedRequestHead: [UInt8]?
    /// `verdict` already encoded as the record line writes it, when the gateway has it (a
    /// spec's passing verdict); nil: the recorder encodes `verdict`.
    public var verdictEncoding: [UInt8]?
    /// The service parsed the request's body as JSON (`ServiceOutcome.bodyParsedAsJSON`): the
    /// record line holds it as `json` without checking it again (`RecordLine.embedsAsJSON`).
    public var bodyParsedAsJSON = false
}

extension GatewayExchange {
    /// Here, not in the type's body, so the type keeps its memberwise initializer: the gateway
    /// makes every exchange with it, because an initializer that sets the members one by one
    /// builds the exchange aside and copies it whole (a retain of each of its Strings and
    /// arrays, and a release of each after, ~2.3% of a request, perf).
    public init(request: HTTPRequest, response: HTTPResponse, route: GatewayRoute, reason: String? = nil,
                fault: String? = nil, verdict: RecordedVerdict? = nil, answeredNanos: UInt64, detail: String? = nil,
                authFailure: AuthFailureKind? = nil, clientCertificateSubject: String? = nil) {
        self.init(request: request, response: response, route: route, reason: reason, fault: fault, answerRule: nil,
                  verdict: verdict, answeredNanos: answeredNanos, detail: detail, authFailure: authFailure,
                  clientCertificateSubject: clientCertificateSubject, deviceToken: nil, recordedRequestHead: nil,
                  verdictEncoding: nil)
    }
}

extension RecordedExchange {
    /// The exchange as its record line holds it, from what the gateway hands its observers (on
    /// its event loop: the body and the strings are shared, not copied). `headers: false`
    /// leaves the request's header fields out: a load run's arrivals read none, and making
    /// them Strings is what a copy would cost.
    public init(_ exchange: GatewayExchange, sequence: Int? = nil, headers: Bool = true) {
        self.init(sequence: sequence, protocol: exchange.request.version.rawValue, route: exchange.route,
                  method: exchange.request.method, path: exchange.request.path,
                  headers: headers ? exchange.request.headers.map { ($0.name, $0.value) } : [], body: exchange.request.body,
                  status: exchange.response.status, reason: exchange.reason, detail: exchange.detail,
                  retryAfterSeconds: exchange.response.retryAfterSeconds, answeredNanos: exchange.answeredNanos,
                  fault: exchange.fault, rule: exchange.answerRule, verdict: exchange.verdict)
        arrivalNanos = exchange.request.arrivalNanos
        // The FCM service parsed the body for its token already: as written, the same value.
        // (APNs' is the registry's key, lowercased; `token` reads the path as written.)
        if exchange.route == .fcm, let token = exchange.deviceToken { keepToken(token) }
    }
}

/// Receives every exchange, on the event-loop thread that served it: must be cheap and
/// must not block (the recorder appends to a buffer; metrics bump atomics).
public protocol GatewayObserver: Sendable {
    func observe(_ exchange: GatewayExchange)
    /// This observer writes record lines: the gateway then hands it the request's members
    /// already encoded (`GatewayExchange.recordedRequestHead`, kept per connection), which
    /// saves the encoding of what repeats from one request to the next.
    var wantsRecordedRequestHead: Bool { get }
}

extension GatewayObserver {
    public var wantsRecordedRequestHead: Bool { false }
}
