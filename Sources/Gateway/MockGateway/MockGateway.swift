import Clocks
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
/// fails valid and invalid requests alike. Answer rules (`AnswerRules`) answer after it, in
/// the place of the device's own checks (its rate, its token's state): a rule answers as the
/// real gateway would a request it has validated and authenticated. Every answer, faults included, is reported to the
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
    /// Answers chosen by what a request carries (admin API: replace at runtime).
    public let answerRules: AnswerRules
    private let observers: [any GatewayObserver]
    /// A `Recorder` is among the observers: the exchange carries the request's headers
    /// encoded for the record line, reused from the connection's previous request.
    private let recordsLines: Bool
    /// Judges each request against the push specs (`serve --specs`), when given.
    public let judge: SpecJudge?
    /// `judge != nil`, read first on every request: testing the optional copied the judge
    /// (its spec set, a retain of each of its parts) each time (perf, ~1% of a push).
    private let judges: Bool
    private let clock: WallClock
    private let identifiers = IdentifierSource()
    private let apns: APNSService
    private let fcm: FCMService
    private let oauth: OAuthService
    private let maxConcurrentStreams: Atomic<UInt32>
    private let exchangeCount = Atomic<UInt64>(0)

    /// Builds the gateway; throws when a configured key cannot be read.
    public init(configuration: GatewayConfiguration, observers: [any GatewayObserver] = [],
                judge: SpecJudge? = nil, clock: WallClock = .system) throws(GatewayConfigurationError) {
        self.configuration = configuration
        self.observers = observers
        recordsLines = observers.contains { $0.wantsRecordedRequestHead }
        self.judge = judge
        judges = judge != nil
        self.clock = clock
        tokens = DeviceTokenRegistry(configuration: configuration.tokens, nowMillis: UInt64(clock.nowMilliseconds))
        faults = FaultInjector(configuration: configuration.faults)
        answerRules = AnswerRules(configuration.answerRules)
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

    /// Forgets every team's provider-token updates (`POST /reset`, `DELETE /provider-tokens`);
    /// how many teams had some.
    @discardableResult
    func forgetProviderTokenUpdates() -> Int { apns.authority.forgetTokenUpdates() }
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

    /// One request, in stages that only go forward: each reads what the request and the stages
    /// before it produced, none reaches into a later one. Faults are rolled before the service
    /// (an overloaded gateway fails valid and invalid requests alike); the answer rules follow the
    /// service's checks of the request (and take the place of its device's); the stream limit follows
    /// the service's verdict on the credentials; the judge reads the body the service parsed, if
    /// it parsed one; the observers see the final answer.
    public func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        let state = connectionState(of: connection)
        state.requestCount += 1
        let route = Self.route(of: request)
        let clientCertificate = state.readClientCertificate(connection.clientCertificateDER)
        if route == .apns { judgeProviderCertificate(of: connection, state: state, identity: clientCertificate) }

        let fault = injectFaults(route: route, request: request, state: state)
        var answer = fault.outcome ?? dispatch(request, route: route, state: state)
        let rule = answerByRules(request, route: route, answer: &answer)
        answer.response.delayNanos += fault.delayNanos
        raiseStreamLimit(after: &answer, route: route, request: request, state: state)
        answer.response.actions.append(contentsOf: fault.actions)
        let judgement = judge(request, route: route, answer: &answer)

        exchangeCount.add(1, ordering: .relaxed)
        if !observers.isEmpty {
            observe(request, answer: answer, route: route, fault: fault.label, rule: rule, judgement: judgement,
                    clientCertificateSubject: clientCertificate?.subject, state: state)
        }
        return answer.response
    }

    /// The gateway's state of a connection (`connectionOpened` sets it; a handler called
    /// without it, as tests do, gets a fresh one).
    private func connectionState(of connection: ConnectionContext) -> GatewayConnectionState {
        if let existing = connection.applicationState as? GatewayConnectionState { return existing }
        let state = GatewayConnectionState()
        connection.applicationState = state
        return state
    }

    /// The provider certificate's verdict, once per connection, at its first APNs request.
    private func judgeProviderCertificate(of connection: ConnectionContext, state: GatewayConnectionState,
                                          identity: ClientCertificateIdentity?) {
        guard state.providerCertificate == nil else { return }
        if let authorities = configuration.apns.certificateAuthorities {
            state.providerCertificate = ProviderCertificateVerdict(
                der: connection.clientCertificateDER, authorities: authorities,
                environment: configuration.apns.environment, nowSeconds: Int64(clock.nowNanoseconds / 1_000_000_000))
        } else if connection.clientCertificateDER != nil {
            // Zero config: no issuer to check against, so any certificate authenticates.
            state.providerCertificate = .unverified(identity?.providerCertificate)
        } else {
            state.providerCertificate = .absent
        }
    }

    /// What the fault stage decided for one request: an answer that replaces the service's
    /// (close, reset, an injected status), added latency, connection actions (GOAWAY after N
    /// streams), and the label the record shows.
    private struct FaultDecision {
        var outcome: ServiceOutcome?
        var label: String?
        var delayNanos: UInt64 = 0
        var actions: [ConnectionAction] = []
    }

    private func injectFaults(route: GatewayRoute, request: HTTPRequest, state: GatewayConnectionState) -> FaultDecision {
        var decision = FaultDecision()
        guard let plan = faults.plan(for: route) else { return decision }
        if let fault = faults.roll(plan) {
            decision.label = fault.label
            switch fault {
            case .close:
                decision.outcome = ServiceOutcome(response: HTTPResponse(status: 0, actions: [.closeConnection]), reason: nil)
            case .reset:
                decision.outcome = ServiceOutcome(response: HTTPResponse(status: 0, actions: [.resetStream(errorCode: HTTP2ErrorCode.refusedStream)]),
                                                  reason: nil)
            case .status(let status, let retryAfter):
                decision.outcome = faultAnswer(route: route, status: status, retryAfter: retryAfter, request: request)
            }
        }
        if let latency = plan.latency {
            decision.delayNanos = faults.latencyNanos(latency)
            if decision.label == nil { decision.label = "latency" }
        }
        if let limit = plan.goAwayAfterStreams, state.requestCount == limit {
            decision.actions.append(.goAway(errorCode: HTTP2ErrorCode.noError, debugData: APNSGoAway.shutdownDebugData))
            decision.label = decision.label.map { $0 + ",goaway" } ?? "goaway"
        }
        return decision
    }

    /// The answer rules, on a request the service let through to its device's own checks (an
    /// injected fault answered before the service: `reachedDevice` is false): the first rule
    /// that matches replaces the service's answer with its own, built as the service builds it
    /// (APNs `{"reason"}` with the request's apns-id, a 410's `timestamp`; Google's error).
    /// What the service read stays (warnings, credentials, the tape the judge reads). The
    /// rule's name, for the record line.
    private func answerByRules(_ request: HTTPRequest, route: GatewayRoute, answer: inout ServiceOutcome) -> String? {
        guard answer.reachedDevice, answerRules.isActive else { return nil }
        let now = UInt64(clock.nowMilliseconds)
        guard let rule = answerRules.decide(AnswerRuleRequest(route: route, token: answer.deviceToken.map(DeviceTokenRegistry.key),
                                                              headers: request.headers, body: request.body, nowMillis: now)) else {
            return nil
        }
        let retryAfter = rule.answer.retryAfterSeconds
        if route == .apns, let reason = rule.answer.apns {
            let apnsID = answer.response.headers.first { $0.name == "apns-id" }?.value ?? identifiers.uuid()
            let timestamp = reason.status == 410 ? rule.answer.sinceMillis ?? now : nil
            answer.response = apns.errorResponse(reason, apnsID: apnsID, timestamp: timestamp, retryAfter: retryAfter)
            answer.reason = reason.rawValue
        } else if route == .fcm, let code = rule.answer.fcm {
            let error = FCMService.error(code, project: FCMService.project(in: request.path) ?? "", retryAfter: retryAfter)
            answer.response = error.response
            answer.reason = error.reason
        }
        return rule.name
    }

    /// The stream limit (apns.md, Transport): raised by the first APNs request with valid
    /// credentials, or at once by an FCM or OAuth one, when token auth is on.
    private func raiseStreamLimit(after answer: inout ServiceOutcome, route: GatewayRoute, request: HTTPRequest,
                                  state: GatewayConnectionState) {
        guard !state.streamLimitRaised, request.version == .http2 else { return }
        let raise = route == .apns ? answer.authenticated : route != .unknown
        if raise && apns.authority.isEnabled {
            answer.response.actions.append(.setMaxConcurrentStreams(configuredMaxConcurrentStreams))
        }
        if raise || !apns.authority.isEnabled { state.streamLimitRaised = true }
    }

    /// The spec judge (`serve --specs`), on the payload tape the service built when it read
    /// the body (else the judge reads the body itself); a body over the route's limit is judged
    /// from its size alone. With `--reject-violations` a would-be 200 becomes the rejection.
    private func judge(_ request: HTTPRequest, route: GatewayRoute, answer: inout ServiceOutcome) -> SpecJudge.Judgement? {
        guard judges, route != .unknown, let judge else { return nil }
        let bodyOverLimit = route.maxBodyBytes.map { request.body.count > $0 } ?? false
        let judgement = bodyOverLimit ? .verdict(judge.oversizedBodyVerdict(request, route: route))
                                      : judge.judge(request, route: route, tape: answer.payloadTape)
        // Only a would-be success is replaced: the gateway's own errors say more.
        if judge.rejectViolations, case .verdict(let verdict) = judgement, !verdict.passed, answer.response.status == 200 {
            let rejection = judge.rejection(for: verdict, route: route, apnsID: answer.response.headers.first { $0.name == "apns-id" }?.value)
            answer.response.status = rejection.response.status
            answer.response.headers = rejection.response.headers
            answer.response.body = rejection.response.body
            answer.reason = rejection.reason
        }
        return judgement
    }

    /// Hands the exchange to every observer: the verdict as recorded (the spec's, when in
    /// scope, plus the gateway's own warnings), detail, auth failure, certificate subject.
    private func observe(_ request: HTTPRequest, answer: ServiceOutcome, route: GatewayRoute, fault: String?, rule: String?,
                         judgement: SpecJudge.Judgement?, clientCertificateSubject: String?, state: GatewayConnectionState) {
        var verdict: RecordedVerdict?
        var verdictEncoding: [UInt8]?
        switch judgement {
        case .passed(let kept):
            verdictEncoding = kept.encoded
            verdict = kept.recorded
        case .verdict(let specVerdict) where !specVerdict.outOfScope:
            if let recorded = judge?.recordedForm(of: specVerdict) {
                verdictEncoding = recorded.encoded
                verdict = recorded.verdict
            }
        default: break
        }
        if !answer.warnings.isEmpty {
            verdictEncoding = nil
            var noted = verdict ?? RecordedVerdict(judgement: nil)
            noted.gatewayWarnings = answer.warnings.filter { $0.kind == .warning }.map(\.text)
            noted.gatewayNotes = answer.warnings.filter { $0.kind == .informational }.map(\.text)
            verdict = noted
        }
        let requestHead = recordsLines
            ? state.recordedRequestHead.encode(request, route: route, clientCertificateSubject: clientCertificateSubject)
            : nil
        // The memberwise initializer, straight into the call's argument: built member by member
        // in a variable, the exchange was copied whole (a retain of each of its Strings and
        // arrays) and the first one destroyed, ~2.3% of a request (perf).
        notify(GatewayExchange(request: request, response: answer.response, route: route, reason: answer.reason,
                               fault: fault, answerRule: rule, verdict: verdict, answeredNanos: clock.nowNanoseconds,
                               detail: answer.detail, authFailure: answer.authFailure,
                               clientCertificateSubject: clientCertificateSubject, deviceToken: answer.deviceToken,
                               recordedRequestHead: requestHead, verdictEncoding: verdictEncoding,
                               bodyParsedAsJSON: answer.bodyParsedAsJSON))
    }

    /// Each observer in turn, on the loop thread that served the request.
    @inline(never)
    private func notify(_ exchange: GatewayExchange) {
        for observer in observers { observer.observe(exchange) }
    }

    /// The transport's own answers (413, 431, 400, 408) are recorded and counted like the
    /// gateway's, with what arrived of the request and the route its path names.
    public func transportRejected(_ partial: HTTPRequest, response: HTTPResponse, on connection: ConnectionContext) {
        exchangeCount.add(1, ordering: .relaxed)
        guard !observers.isEmpty else { return }
        let exchange = GatewayExchange(request: partial, response: response, route: Self.route(of: partial),
                                       answeredNanos: clock.nowNanoseconds)
        for observer in observers { observer.observe(exchange) }
    }

    /// The service of the route. A judge will read the body, so the APNs service keeps the
    /// payload tape it reads `aps` from (`ServiceOutcome.payloadTape`) for it.
    private func dispatch(_ request: HTTPRequest, route: GatewayRoute, state: GatewayConnectionState) -> ServiceOutcome {
        switch route {
        case .apns: return apns.handle(request, connection: state, keepPayloadTape: judges)
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
            var texts = APNSService.HeaderTexts()
            let headers = APNSService.Headers(request.headers, texts: &texts)
            let apnsID = headers.id.flatMap { isCanonicalUUID($0) ? $0 : nil } ?? identifiers.uuid()
            return ServiceOutcome(response: apns.errorResponse(reason, apnsID: apnsID, retryAfter: retry), reason: reason.rawValue)
        case .fcm:
            var error: GoogleError
            switch status {
            case 429:
                error = GoogleError(.quotaExceeded, message: "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com'.")
                error.quotaViolation = ("project_number:\(configuration.fcm.projectNumber ?? configuration.fcm.projectID ?? "0")",
                                        "Send requests per minute exceeded")
            default: error = FCMService.error(status == 500 ? .internalError : .unavailable, project: "", retryAfter: retry)
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
        if request.version == .http2,
           request.headers.withUnsafeFields({ fields in (0..<fields.count).contains { fields.name(at: $0, hasPrefix: "apns-") } }) {
            return .apns
        }
        return .unknown
    }
}
