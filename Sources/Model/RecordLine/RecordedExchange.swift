import PushModel

/// One push or other request the gateway answered, as the record line holds it: the one
/// exchange type above the gateway. A line read back (`RecordedExchange(decoding:)`: a
/// recording for `check` and `show`, `GET /requests` for `run --gateway` and a journal
/// follower) and an exchange an embedded gateway hands its observers (`init(_:sequence:headers:)`
/// in MockGateway, for `run`, load runs and the library) are the same value.
public struct RecordedExchange: Sendable {
    /// 1, 2, 3, … in the order answers were decided (the line's `seq`); nil on a line of a
    /// hand-made file, and on a load run's arrivals, which its matcher numbers itself.
    public var sequence: Int?
    /// `h2`, `http/1.1`.
    public var `protocol`: String?
    public var route: GatewayRoute
    public var method: String
    public var path: String
    /// The request's header fields, in order (empty on a load run's arrivals, which read none).
    public var headers: [(name: String, value: String)]
    /// The bytes received: from `json` (version 2: the bytes themselves), `body` (UTF-8 text) or `body_base64`.
    public var body: [UInt8]
    /// The answer's status (0: the stream was reset or the connection dropped); nil when a
    /// line has none.
    public var status: Int?
    /// APNs `reason`, FCM `errorCode` or OAuth `error`; nil on success.
    public var reason: String?
    /// The gateway's own explanation of a refusal, never sent to the client: "the signature is
    /// 71 bytes, not 64: DER-encoded?".
    public var detail: String?
    /// The answer's `retry-after` in whole seconds (a 429 or 503 asking the client to wait).
    public var retryAfterSeconds: Int?
    /// When the request arrived, Unix nanoseconds on the gateway's clock (`arrival_ns`): what
    /// `check` merges several gateways' recordings by.
    public var arrivalNanos: UInt64?
    /// When the answer was decided, Unix nanoseconds on the gateway's clock (`answered_ns`).
    public var answeredNanos: UInt64?
    /// The injected fault that shaped the answer (`latency`, `status:503`, …), if any.
    public var fault: String?
    /// The answer rule that answered (its name), if one did.
    public var rule: String?
    /// What the gateway stored: the spec judge's finding (`serve --specs`) and its own notes.
    public var verdict: RecordedVerdict?
    /// `token`, once read (`readToken()`, `keepToken(_:)`).
    private var keptToken: String??

    public init(sequence: Int? = nil, protocol: String? = nil, route: GatewayRoute, method: String = "POST", path: String,
                headers: [(name: String, value: String)] = [], body: [UInt8], status: Int?, reason: String? = nil,
                detail: String? = nil, retryAfterSeconds: Int? = nil, answeredNanos: UInt64? = nil, fault: String? = nil,
                rule: String? = nil, verdict: RecordedVerdict? = nil) {
        self.sequence = sequence
        self.protocol = `protocol`
        self.route = route
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.status = status
        self.reason = reason
        self.detail = detail
        self.retryAfterSeconds = retryAfterSeconds
        self.answeredNanos = answeredNanos
        self.fault = fault
        self.rule = rule
        self.verdict = verdict
    }

    /// The device token the push went to, as written (APNs: the path; FCM: `message.token` in
    /// the body; `AddressedDevice.token`). An FCM body is parsed for it on each call until
    /// `readToken()` keeps it: a reader that asks several times per push (the verdicts) reads
    /// it once, off the gateway's event loop.
    public var token: String? { keptToken ?? AddressedDevice.token(route: route, path: path, body: body) }

    /// `token` as tokens are compared.
    public var deviceToken: DeviceToken? { token.map { DeviceToken($0) } }

    /// Reads `token` once and keeps it.
    public mutating func readToken() {
        if keptToken == nil { keptToken = .some(AddressedDevice.token(route: route, path: path, body: body)) }
    }

    /// Keeps `token` as the one `token` reads (whoever made the exchange read it already: the
    /// FCM service parses the body for it).
    public mutating func keepToken(_ token: String?) { keptToken = .some(token) }

    /// An APNs or FCM push, not a token grant or an unknown path.
    public var isPush: Bool { route.carriesPushes }
    /// Answered 2xx.
    public var accepted: Bool { status.map { (200..<300).contains($0) } ?? false }
    /// The spec the gateway's judge named (`verdict.spec`).
    public var specID: String? { verdict?.specID }
    /// What the gateway itself noted (`verdict.gateway_warnings`): protocol findings of its own.
    public var gatewayWarnings: [String] { verdict?.gatewayWarnings ?? [] }
    /// What the gateway noted that the RFCs allow (`verdict.gateway_notes`): informational.
    public var gatewayNotes: [String] { verdict?.gatewayNotes ?? [] }

    /// How the gateway answered, for a finding: `403 InvalidProviderToken (the signature is 71
    /// bytes, not 64: DER-encoded?)`, `no answer (reset)`.
    public var answer: String {
        guard let status, status != 0 else { return "no answer (the stream was reset or the connection dropped)" }
        return "\(status)" + (reason.map { " \($0)" } ?? "") + (detail.map { " (\($0))" } ?? "")
    }
}
