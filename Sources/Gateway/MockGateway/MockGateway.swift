import Crypto
import HTTPCore
import SpecValidator
import JSON
import PushModel
import RecordLine
import Synchronization

/// The mock APNs + FCM + Google OAuth gateway: protocol logic only, served by the transport
/// (HTTP2Server) through `HTTPHandler`. Routes:
/// - APNs `POST /3/device/{token}` (see `APNSService` for every rule and its order)
/// - FCM `POST /v1/projects/{project}/messages:send`, HTTP/2 and HTTP/1.1 (see `FCMService`)
/// - OAuth `POST /token` (see `OAuthService`)
/// Anything else on HTTP/2 that looks like APNs (a path under `/3/` or an `apns-*` header) is
/// APNs 404 BadPath; the rest is 404 with a Google-style error.
///
/// Faults (per route, `FaultInjector`) are rolled before validation: an overloaded gateway
/// fails valid and invalid requests alike. Every answer, faults included, is reported to the
/// observers as a `GatewayExchange`: `reason` is the APNs reason, the FCM errorCode (or the
/// canonical status when there is no FcmError detail) or the OAuth error; `fault` names the
/// injected fault ("status:503", "reset", "close", "latency", "goaway"); an injected reset or
/// close has no answer, so its response has status 0 and the action only. Things a real gateway
/// accepts but a conformance run should see (a background push with an alert, a missing
/// content-type) are reported as `verdict = {"gateway_warnings": [...]}`; the spec validator's
/// verdict should keep that key when it fills in its own.
///
/// Stream limit (apns.md, Transport): with APNs token auth on, a new connection allows one
/// stream; the answer to its first request with a valid provider token raises
/// SETTINGS_MAX_CONCURRENT_STREAMS to the configured value (default 1000). FCM and OAuth
/// requests raise it at once (Google has no such rule, and an FCM client must not be stuck
/// at one stream). With auth off, connections start at the configured value.
public final class MockGateway: HTTPHandler {
    public let configuration: GatewayConfiguration
    /// Device token states (admin API: set/clear/reset).
    public let tokens: DeviceTokenRegistry
    /// Injected faults (admin API: change per route at runtime).
    public let faults: FaultInjector
    private let observers: [any GatewayObserver]
    /// Judges each request against the push specs (`serve --specs`), when given.
    public let judge: SpecJudge?
    private let clock: GatewayClock
    private let identifiers = IdentifierSource()
    private let apns: APNSService
    private let fcm: FCMService
    private let oauth: OAuthService
    private let maxConcurrentStreams: Atomic<UInt32>
    private let exchangeCount = Atomic<UInt64>(0)

    /// Builds the gateway; throws when a configured key cannot be read.
    public init(configuration: GatewayConfiguration, observers: [any GatewayObserver] = [],
                judge: SpecJudge? = nil, clock: GatewayClock = .system) throws(GatewayConfigurationError) {
        self.configuration = configuration
        self.observers = observers
        self.judge = judge
        self.clock = clock
        tokens = DeviceTokenRegistry(configuration: configuration.tokens, nowMillis: clock.nowMillis)
        faults = FaultInjector(configuration: configuration.faults)
        maxConcurrentStreams = Atomic(configuration.faults.maxConcurrentStreams ?? configuration.apns.maxConcurrentStreams)
        let authority = try APNSProviderTokenAuthority(configuration: configuration.apns, clock: clock)
        apns = APNSService(configuration: configuration.apns, authority: authority, registry: tokens,
                           identifiers: identifiers, clock: clock)
        let store = AccessTokenStore()
        fcm = FCMService(configuration: configuration.fcm, registry: tokens, store: store, identifiers: identifiers, clock: clock)
        oauth = try OAuthService(configuration: configuration.fcm, store: store, identifiers: identifiers, clock: clock)
    }

    /// Whether APNs requests need a valid provider token (keys are configured).
    public var apnsTokenAuthEnabled: Bool { apns.authority.isEnabled }
    /// Whether FCM requests need an access token issued by this gateway (service accounts configured).
    public var fcmAuthEnabled: Bool { oauth.authEnabled }

    /// The stream limit of an authenticated connection; changeable at runtime (new value applies
    /// to connections not yet raised).
    public var configuredMaxConcurrentStreams: UInt32 {
        get { maxConcurrentStreams.load(ordering: .relaxed) }
        set { maxConcurrentStreams.store(max(1, newValue), ordering: .relaxed) }
    }

    /// Exchanges answered so far.
    public var answeredCount: UInt64 { exchangeCount.load(ordering: .relaxed) }

    public func initialMaxConcurrentStreams() -> UInt32 {
        apns.authority.isEnabled ? 1 : configuredMaxConcurrentStreams
    }

    public func connectionOpened(_ connection: ConnectionContext) {
        connection.applicationState = GatewayConnectionState()
    }

    public func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        let state: GatewayConnectionState
        if let existing = connection.applicationState as? GatewayConnectionState {
            state = existing
        } else {
            state = GatewayConnectionState()
            connection.applicationState = state
        }
        state.requestCount += 1

        let route = Self.route(of: request)
        let clientCertificate = state.readClientCertificate(connection.clientCertificateDER)
        if route == .apns, state.providerCertificate == nil {
            if let authorities = configuration.apns.certificateAuthorities {
                state.providerCertificate = ProviderCertificateVerdict(
                    der: connection.clientCertificateDER, authorities: authorities,
                    environment: configuration.apns.environment, nowSeconds: Int64(clock.nowNanos / 1_000_000_000))
            } else if connection.clientCertificateDER != nil {
                // Zero config: no issuer to check against, so any certificate authenticates.
                state.providerCertificate = .unverified(clientCertificate?.providerCertificate)
            } else {
                state.providerCertificate = .absent
            }
        }
        var outcome: ServiceOutcome?
        var faultLabel: String?
        var delayNanos: UInt64 = 0
        var actions: [ConnectionAction] = []

        if let plan = faults.plan(for: route) {
            if let fault = faults.roll(plan) {
                faultLabel = fault.label
                switch fault {
                case .close:
                    outcome = ServiceOutcome(response: HTTPResponse(status: 0, actions: [.closeConnection]), reason: nil)
                case .reset:
                    outcome = ServiceOutcome(response: HTTPResponse(status: 0, actions: [.resetStream(errorCode: HTTP2ErrorCode.refusedStream)]),
                                             reason: nil)
                case .status(let status, let retryAfter):
                    outcome = faultAnswer(route: route, status: status, retryAfter: retryAfter, request: request)
                }
            }
            if let latency = plan.latency {
                delayNanos = faults.latencyNanos(latency)
                if faultLabel == nil { faultLabel = "latency" }
            }
            if let limit = plan.goAwayAfterStreams, state.requestCount == limit {
                actions.append(.goAway(errorCode: HTTP2ErrorCode.noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8)))
                faultLabel = faultLabel.map { $0 + ",goaway" } ?? "goaway"
            }
        }

        // An APNs payload that will be judged is scanned once, into a tape that the payload
        // check reads `aps` from and the judge reads everything from (perf, --specs: the two
        // scans were ~0.6 µs a request apart). Built at the payload check's depth limit, a tape
        // is what both would have read; anything else (no tape) leaves each to read on its own,
        // so answers, verdicts and error messages stay as they were.
        // A body over the route's limit is answered from its size and judged without a parse.
        let bodyOverLimit = route.maxBodyBytes.map { request.body.count > $0 } ?? false
        var sharedTape: JSONTape?
        if let judge, route == .apns, !request.body.isEmpty, !bodyOverLimit,
           !judge.specs.isOutOfScope(route: route.rawValue, path: request.path) {
            sharedTape = JSONParser.tape(request.body, options: .init(maxDepth: APNSService.payloadMaxDepth))
        }

        var answer = outcome ?? dispatch(request, route: route, state: state, tape: sharedTape)
        answer.response.delayNanos += delayNanos
        if !state.streamLimitRaised, request.version == .http2 {
            let raise = route == .apns ? answer.authenticated : route != .unknown
            if raise && apns.authority.isEnabled {
                answer.response.actions.append(.setMaxConcurrentStreams(configuredMaxConcurrentStreams))
            }
            if raise || !apns.authority.isEnabled { state.streamLimitRaised = true }
        }
        answer.response.actions.append(contentsOf: actions)

        var specVerdict: SpecVerdict?
        if let judge, route != .unknown {
            let verdict = bodyOverLimit ? judge.oversizedBodyVerdict(request, route: route)
                                        : judge.judge(request, route: route, tape: sharedTape)
            specVerdict = verdict
            // Only a would-be success is replaced: the gateway's own errors say more.
            if judge.rejectViolations, !verdict.passed, answer.response.status == 200 {
                let rejection = judge.rejection(for: verdict, route: route, apnsID: answer.response.headers.first { $0.name == "apns-id" }?.value)
                answer.response.status = rejection.response.status
                answer.response.headers = rejection.response.headers
                answer.response.body = rejection.response.body
                answer.reason = rejection.reason
            }
        }

        exchangeCount.add(1, ordering: .relaxed)
        if !observers.isEmpty {
            var verdict: JSONValue?
            if let specVerdict, !specVerdict.outOfScope { verdict = specVerdict.json() }
            if !answer.warnings.isEmpty {
                var object = verdict?.objectValue ?? JSONObject()
                object[RecordLine.name(RecordLine.Field.gatewayWarnings)] = .array(answer.warnings.map { .string($0) })
                verdict = .object(object)
            }
            var exchange = GatewayExchange(request: request, response: answer.response, route: route, reason: answer.reason,
                                           fault: faultLabel, verdict: verdict, answeredNanos: clock.nowNanos)
            exchange.detail = answer.detail
            exchange.authFailure = answer.authFailure
            exchange.clientCertificateSubject = clientCertificate?.subject
            for observer in observers { observer.observe(exchange) }
        }
        return answer.response
    }

    /// The transport's own answers (413, 431, 400, 408) are recorded and counted like the
    /// gateway's, with what arrived of the request and the route its path names.
    public func transportRejected(_ partial: HTTPRequest, response: HTTPResponse, on connection: ConnectionContext) {
        exchangeCount.add(1, ordering: .relaxed)
        guard !observers.isEmpty else { return }
        let exchange = GatewayExchange(request: partial, response: response, route: Self.route(of: partial),
                                       answeredNanos: clock.nowNanos)
        for observer in observers { observer.observe(exchange) }
    }

    private func dispatch(_ request: HTTPRequest, route: GatewayRoute, state: GatewayConnectionState,
                          tape: JSONTape?) -> ServiceOutcome {
        switch route {
        case .apns: return apns.handle(request, connection: state, tape: tape)
        case .fcm: return fcm.handle(request, connection: state)
        case .oauth: return oauth.handle(request)
        case .unknown:
            let error = GoogleError(code: 404, status: "NOT_FOUND", message: "The requested URL \(request.path) was not found on this server.")
            return ServiceOutcome(response: error.response, reason: error.reason)
        }
    }

    /// An injected 429/500/503 in the route's own error shape.
    private func faultAnswer(route: GatewayRoute, status: Int, retryAfter: Int, request: HTTPRequest) -> ServiceOutcome {
        let retry = status == 429 || status == 503 ? retryAfter : nil
        switch route {
        case .apns, .unknown:
            let reason: APNSReason = status == 429 ? .tooManyRequests : status == 500 ? .internalServerError : .serviceUnavailable
            let headers = APNSService.Headers(request.headers)
            let apnsID = headers.id.flatMap { isCanonicalUUID($0) ? $0 : nil } ?? identifiers.uuid()
            return ServiceOutcome(response: apns.errorResponse(reason, apnsID: apnsID, retryAfter: retry), reason: reason.rawValue)
        case .fcm:
            var error: GoogleError
            switch status {
            case 429:
                error = GoogleError(.quotaExceeded, message: "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com'.")
                error.quotaViolation = ("project_number:\(configuration.fcm.projectNumber ?? configuration.fcm.projectID ?? "0")",
                                        "Send requests per minute exceeded")
            case 500: error = GoogleError(.internalError, message: "Internal error encountered.")
            default: error = GoogleError(.unavailable, message: "The service is currently unavailable.")
            }
            error.retryAfterSeconds = retry
            return ServiceOutcome(response: error.response, reason: error.reason)
        case .oauth:
            let name = status == 429 ? "rate_limit_exceeded" : status == 500 ? "internal_failure" : "temporarily_unavailable"
            var response = OAuthService.errorResponse(name, "Injected fault: HTTP \(status)", status: status)
            if let retry { response.headers.append(HTTPHeader("retry-after", String(retry))) }
            return ServiceOutcome(response: response, reason: name)
        }
    }

    /// Which service a request is for, from its path (and, on HTTP/2, its headers).
    public static func route(of request: HTTPRequest) -> GatewayRoute {
        let path = request.path.utf8
        if path.starts(with: "/3/".utf8) || path.elementsEqual("/3".utf8) { return .apns }
        if path.starts(with: "/v1/".utf8) { return .fcm }
        if path.elementsEqual("/token".utf8) || path.starts(with: "/token?".utf8) { return .oauth }
        if request.version == .http2, request.headers.contains(where: { $0.name.utf8.starts(with: "apns-".utf8) }) { return .apns }
        return .unknown
    }
}
