import Clocks
import HTTPCore
import JSON
import PushModel

/// The control API on the admin listener (loopback by default): status, reset, device token
/// states, faults, answer rules (`/answer-rules`), recording counters, the request journal (`/requests`) and `/metrics`. JSON in, JSON out; every error is
/// `{"error": "..."}` with a 4xx status. The endpoints are listed in the README ("Control API").
public final class AdminAPI: HTTPHandler {
    public struct Statistics: Sendable {
        public var openConnections: Int
        public var acceptedConnections: Int
        public var requestsServed: Int
        /// HTTP/2 connections the transport closed with GOAWAY(ENHANCE_YOUR_CALM) for resetting
        /// too many streams before their answer (`HTTPServer.rapidResetCloses`); nil when the
        /// transport does not say, and then /metrics leaves it out.
        public var rapidResetCloses: Int?
        public init(openConnections: Int, acceptedConnections: Int, requestsServed: Int, rapidResetCloses: Int? = nil) {
            self.openConnections = openConnections
            self.acceptedConnections = acceptedConnections
            self.requestsServed = requestsServed
            self.rapidResetCloses = rapidResetCloses
        }
    }

    private let gateway: MockGateway
    private let metrics: GatewayMetrics
    private let recorder: Recorder?
    private let statistics: @Sendable () -> Statistics
    private let startedNanos: UInt64
    private let description: @Sendable () -> JSONObject

    /// - Parameters:
    ///   - description: facts for `/status` that the API does not own (bound addresses, TLS, specs…).
    ///   - statistics: the transport's live counters.
    public init(gateway: MockGateway, metrics: GatewayMetrics, recorder: Recorder?,
                description: @escaping @Sendable () -> JSONObject = { [:] },
                statistics: @escaping @Sendable () -> Statistics) {
        self.gateway = gateway
        self.metrics = metrics
        self.recorder = recorder
        self.statistics = statistics
        self.description = description
        startedNanos = WallClock.system.nowNanoseconds
    }

    public func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (request.method, parts.first ?? "", parts.count) {
        case ("GET", "status", 1): return json(200, status())
        case ("GET", "metrics", 1): return metricsResponse()
        case ("POST", "reset", 1): return reset()
        case ("GET", "tokens", 1): return json(200, tokenCounts())
        case ("POST", "tokens", 1): return bulkTokens(request.body)
        case ("GET", "tokens", 2): return json(200, tokenState(parts[1]))
        case ("PUT", "tokens", 2): return setToken(parts[1], body: request.body)
        case ("DELETE", "tokens", 2):
            gateway.tokens.clear(parts[1])
            return json(200, tokenState(parts[1]))
        case ("GET", "faults", 1): return json(200, allFaults())
        case ("DELETE", "faults", 1):
            gateway.faults.clearAll()
            return json(200, allFaults())
        case ("GET", "faults", 2), ("PUT", "faults", 2), ("DELETE", "faults", 2):
            return routeFaults(request.method, parts[1], body: request.body)
        case ("GET", "answer-rules", 1): return json(200, answerRules())
        case ("PUT", "answer-rules", 1), ("POST", "answer-rules", 1): return setAnswerRules(request.body, appending: request.method == "POST")
        case ("DELETE", "answer-rules", 1):
            gateway.answerRules.replace(with: [])
            return json(200, answerRules())
        case ("DELETE", "provider-tokens", 1):
            return json(200, ["teams_forgotten": .number(Double(gateway.forgetProviderTokenUpdates()))])
        case ("GET", "recording", 1): return json(200, recording())
        case ("POST", "recording", 2) where parts[1] == "flush":
            recorder?.file?.flush()
            return json(200, recording())
        case ("GET", "requests", 1): return requests(request.path, counting: false)
        case ("GET", "requests", 2) where parts[1] == "count": return requests(request.path, counting: true)
        case ("DELETE", "requests", 1):
            guard let journal = recorder?.journal else { return journalOff() }
            journal.clear()
            return json(200, journalStatus())
        case (_, "requests", 2) where parts[1] == "count":
            return error(405, "method \(request.method) not allowed on \(path)")
        case (_, "status", 1), (_, "metrics", 1), (_, "reset", 1), (_, "tokens", _), (_, "faults", _), (_, "recording", _),
             (_, "requests", 1), (_, "provider-tokens", 1), (_, "answer-rules", 1):
            return error(405, "method \(request.method) not allowed on \(path)")
        default:
            return error(404, "no such endpoint \(path); see GET /status and the README's Control API")
        }
    }

    // MARK: Endpoints

    private func status() -> JSONValue {
        let stats = statistics()
        var object = description()
        object["uptime_seconds"] = .number(Double(WallClock.system.nowNanoseconds &- startedNanos) / 1e9)
        object["connections"] = ["open": .number(Double(stats.openConnections)),
                                 "accepted": .number(Double(stats.acceptedConnections))]
        object["requests"] = .number(Double(stats.requestsServed))
        object["answered"] = .number(Double(gateway.answeredCount))
        // The serving process's CPU (every thread): per answered push, what `plan` sizes gateways by.
        object["process_cpu_seconds"] = .number(Double(SystemClock.processCPUNanoseconds()) / 1e9)
        object["apns_token_auth"] = .bool(gateway.apnsTokenAuthEnabled)
        object["fcm_auth"] = .bool(gateway.fcmAuthEnabled)
        object["max_concurrent_streams"] = .number(Double(gateway.configuredMaxConcurrentStreams))
        object["tokens"] = tokenCounts()
        object["recording"] = recording()
        object["journal"] = journalStatus()
        return .object(object)
    }

    private func metricsResponse() -> HTTPResponse {
        let stats = statistics()
        var gauges = [
            GatewayMetrics.Gauge(name: "pushproof_open_connections", help: "Connections open now.", value: Double(stats.openConnections)),
            GatewayMetrics.Gauge(name: "pushproof_accepted_connections", help: "Connections accepted since start.",
                                 value: Double(stats.acceptedConnections)),
        ]
        if let closes = stats.rapidResetCloses {
            gauges.append(.init(name: "pushproof_rapid_reset_closes_total",
                                help: "Connections closed with GOAWAY(ENHANCE_YOUR_CALM) for resetting too many streams before their answer.",
                                value: Double(closes), isCounter: true))
        }
        if let file = recorder?.file {
            gauges.append(.init(name: "pushproof_record_lines", help: "Lines appended to the record file.",
                                value: Double(file.lineCount)))
            gauges.append(.init(name: "pushproof_record_failed_writes", help: "Writes to the record file that failed.",
                                value: Double(file.failedWrites)))
            gauges.append(.init(name: "pushproof_record_lost_lines", help: "Record lines lost to failed writes (a gap in seq).",
                                value: Double(file.lostLines)))
        }
        if let journal = recorder?.journal {
            let counts = journal.counts
            gauges.append(.init(name: "pushproof_journal_requests", help: "Requests the journal (GET /requests) holds.",
                                value: Double(counts.held)))
            gauges.append(.init(name: "pushproof_journal_dropped_total",
                                help: "Requests the journal dropped, oldest first, to stay within --journal-size and --journal-mib.",
                                value: Double(counts.dropped), isCounter: true))
        }
        let ruleMatches = GatewayMetrics.LabeledCounter(
            name: "pushproof_answer_rule_matches_total", help: "Requests an answer rule answered, by rule (the rules in force; replacing them starts again at 0).",
            label: "rule", values: gateway.answerRules.counts.map { ($0.rule.name, $0.answered) })
        return HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "text/plain; version=0.0.4; charset=utf-8")],
                            body: Array(metrics.render(gauges: gauges, counters: [ruleMatches]).utf8))
    }

    /// Back to the state at start: configured token states, faults and answer rules (their
    /// counts at zero), metrics zeroed, no
    /// team's provider-token updates counted. The record file is never truncated (it is the
    /// evidence); its counters keep counting.
    private func reset() -> HTTPResponse {
        let configuration = gateway.configuration
        _ = gateway.forgetProviderTokenUpdates()
        gateway.tokens.reset(unknownTokens: configuration.tokens.unknownTokens)
        gateway.tokens.apply(configuration.tokens, nowMillis: UInt64(WallClock.system.nowMilliseconds))
        gateway.faults.clearAll()
        for (route, faults) in configuration.faults.routes { gateway.faults.setFaults(faults, for: route) }
        gateway.answerRules.replace(with: configuration.answerRules)
        metrics.reset()
        return json(200, status())
    }

    private func tokenCounts() -> JSONValue {
        let counts = gateway.tokens.counts()
        return ["valid": .number(Double(counts.valid)), "gone": .number(Double(counts.gone)), "bad": .number(Double(counts.bad)),
                "other_sender": .number(Double(counts.otherSender)),
                "unknown_tokens": .string(gateway.tokens.unknownTokens.rawValue)]
    }

    private func tokenState(_ token: String) -> JSONValue {
        let recorded = gateway.tokens.recordedState(of: token)
        var object: JSONObject = ["token": .string(token), "known": .bool(recorded != nil)]
        switch gateway.tokens.state(of: token) {
        case .valid: object["state"] = "valid"
        case .bad: object["state"] = "bad"
        case .otherSender: object["state"] = "other_sender"
        case .gone(let since):
            object["state"] = "gone"
            object["since_ms"] = .number(Double(since))
        case .expired(let since):
            object["state"] = "expired"
            object["since_ms"] = .number(Double(since))
        }
        return .object(object)
    }

    /// `{"state": "valid" | "gone" | "expired" | "bad" | "other_sender", "since_ms"?: N}`.
    private func setToken(_ token: String, body: [UInt8]) -> HTTPResponse {
        let document: JSONValue
        do { document = try JSONParser.parse(body) } catch { return self.error(400, "body is not JSON: \(error)") }
        guard let state = document["state"]?.stringValue else { return error(400, #"body needs "state": "valid", "gone", "expired", "bad" or "other_sender""#) }
        switch state {
        case "valid": gateway.tokens.set(token, to: .valid)
        case "bad": gateway.tokens.set(token, to: .bad)
        case "other_sender": gateway.tokens.set(token, to: .otherSender)
        case "gone", "expired":
            let given: UInt64?
            do { given = try ConfigReader(baseDirectory: ".").sinceMillis(JSONFields(document)) } catch {
                return self.error(400, "\(error)")
            }
            let since = given ?? UInt64(WallClock.system.nowMilliseconds)
            gateway.tokens.set(token, to: state == "gone" ? .gone(sinceMillis: since) : .expired(sinceMillis: since))
        default:
            return error(400, "state must be valid, gone, expired, bad or other_sender, not \"\(state)\"")
        }
        return json(200, tokenState(token))
    }

    /// The configuration file's `tokens` shape (`valid`, `gone`, `expired`, `bad`, `other_sender`, `default`),
    /// applied on top of the current states.
    private func bulkTokens(_ body: [UInt8]) -> HTTPResponse {
        do {
            let document = try JSONParser.parse(body)
            let reader = ConfigReader(baseDirectory: ".")
            let tokens = try reader.tokenConfiguration(document, "tokens")
            if document["default"] != nil { gateway.tokens.unknownTokens = tokens.unknownTokens }
            gateway.tokens.apply(tokens, nowMillis: UInt64(WallClock.system.nowMilliseconds))
            return json(200, tokenCounts())
        } catch {
            return self.error(400, "\(error)")
        }
    }

    private func allFaults() -> JSONValue {
        var object = JSONObject()
        for route in [GatewayRoute.apns, .fcm, .oauth] { object[route.rawValue] = gateway.faults.faults(for: route).json }
        return .object(object)
    }

    private func routeFaults(_ method: String, _ routeName: String, body: [UInt8]) -> HTTPResponse {
        guard let route = GatewayRoute(rawValue: routeName), route != .unknown else {
            return error(404, "no route \"\(routeName)\" (apns, fcm or oauth)")
        }
        switch method {
        case "PUT":
            do {
                let document = try JSONParser.parse(body)
                let faults = try ConfigReader(baseDirectory: ".").routeFaults(document, "faults.\(routeName)")
                gateway.faults.setFaults(faults, for: route)
            } catch {
                return self.error(400, "\(error)")
            }
        case "DELETE":
            gateway.faults.setFaults(RouteFaults(), for: route)
        default:
            break
        }
        return json(200, gateway.faults.faults(for: route).json)
    }

    /// `{"answer_rules": [rule, …]}`, each in the configuration's shape with `seen` (requests
    /// that reached it and matched, `nth` aside) and `answered`.
    private func answerRules() -> JSONValue {
        ["answer_rules": .array(gateway.answerRules.counts.map { entry in
            var object = entry.rule.json.objectValue ?? [:]
            object["seen"] = .number(Double(entry.seen))
            object["answered"] = .number(Double(entry.answered))
            return .object(object)
        })]
    }

    /// PUT: the configuration's `answer_rules` array replaces the rules; POST: one rule (an
    /// object) is added after them. Counts start at zero for a replaced list; the rules kept by
    /// a POST keep theirs.
    private func setAnswerRules(_ body: [UInt8], appending: Bool) -> HTTPResponse {
        do {
            let document = try JSONParser.parse(body)
            let reader = ConfigReader(baseDirectory: ".")
            if appending {
                let current = gateway.answerRules.rules
                let rule = try reader.answerRule(document, "answer_rules[\(current.count)]")
                // Checked as the whole list would be: names unique, at most the maximum.
                _ = try reader.answerRules(.array((current + [rule]).map(\.json)), "answer_rules")
                gateway.answerRules.append(rule)
            } else {
                gateway.answerRules.replace(with: try reader.answerRules(document, "answer_rules"))
            }
            return json(200, answerRules())
        } catch {
            return self.error(400, "\(error)")
        }
    }

    private func recording() -> JSONValue {
        guard let file = recorder?.file else { return ["enabled": false] }
        return ["enabled": true, "path": .string(file.path), "lines": .number(Double(file.lineCount)),
                "failed_writes": .number(Double(file.failedWrites)), "lost_lines": .number(Double(file.lostLines))]
    }

    // MARK: Request journal

    private func journalStatus() -> JSONValue {
        guard let journal = recorder?.journal else { return ["enabled": false] }
        let counts = journal.counts
        return ["enabled": true, "size": .number(Double(journal.capacity)), "max_bytes": .number(Double(journal.maxBytes)),
                "requests": .number(Double(counts.held)), "bytes": .number(Double(counts.bytes)),
                "dropped": .number(Double(counts.dropped)), "last_seq": .number(Double(counts.lastSequence)),
                "waiting": .number(Double(counts.waiting))]
    }

    private func journalOff() -> HTTPResponse {
        error(404, "the request journal is off (serve --journal-size 0)")
    }

    /// `GET /requests?…` (the matching record lines, a JSON array) and `GET /requests/count?…`
    /// (`{"count": N}`). With `wait_ms`: a long poll, answered once `min` requests match or
    /// when the time is up, as `{"requests": […], "count": N, "dropped": D, "timed_out": bool}`
    /// (or `{"count": N, "timed_out": bool}`), without holding up the loop meanwhile. Lines
    /// are streamed from the journal as the client reads them (`JournalAnswer`).
    private func requests(_ path: String, counting: Bool) -> HTTPResponse {
        guard let journal = recorder?.journal else { return journalOff() }
        let queryString = path.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        let query: JournalQuery
        do { query = try JournalQuery(queryString: queryString, counting: counting) } catch { return self.error(400, error.description) }
        guard query.waitMillis != nil else {
            if counting { return Self.countAnswer(journal.count(query).count, timedOut: nil) }
            return Self.linesAnswer(JournalAnswer(journal: journal, query: query, form: .lines))
        }
        if !counting, query.minimum > journal.capacity {
            return error(400, "min: \(query.minimum) is more requests than the journal holds (--journal-size \(journal.capacity)): "
                         + "the answer could not carry them; wait on /requests/count instead")
        }
        let waiter = JournalWaiter(query: query, journal: journal) { count, through, timedOut in
            counting ? Self.countAnswer(count, timedOut: timedOut)
                     : Self.linesAnswer(JournalAnswer(journal: journal, query: query, through: through,
                                                      form: .waited(count: count, timedOut: timedOut)))
        }
        guard waiter.start() else {
            var refusal = error(503, "\(RequestJournal.maxWaiters) long polls are waiting already; try again shortly")
            refusal.headers.append(HTTPHeader("retry-after", "1"))
            return refusal
        }
        return .deferred(waiter.responder)
    }

    private static func linesAnswer(_ body: JournalAnswer) -> HTTPResponse {
        var response = HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "application/json")])
        response.streamedBody = body
        return response
    }

    /// `timedOut` nil: `{"count": N}`; else the waiting form.
    private static func countAnswer(_ count: Int, timedOut: Bool?) -> HTTPResponse {
        let text = timedOut.map { #"{"count":\#(count),"timed_out":\#($0)}"# } ?? #"{"count":\#(count)}"#
        return HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "application/json")], body: Array((text + "\n").utf8))
    }

    // MARK: Responses

    private func json(_ status: Int, _ value: JSONValue) -> HTTPResponse {
        var body = value.bytes()
        body.append(0x0A)
        return HTTPResponse(status: status, headers: [HTTPHeader("content-type", "application/json")], body: body)
    }

    private func error(_ status: Int, _ message: String) -> HTTPResponse {
        json(status, ["error": .string(message)])
    }
}

extension AnswerRule {
    /// The configuration-file form (`answer_rules[i]`), for `GET /answer-rules`.
    public var json: JSONValue {
        var object: JSONObject = ["name": .string(name)]
        switch (answer.apns, answer.fcm) {
        case (_?, nil): object["route"] = "apns"
        case (nil, _?): object["route"] = "fcm"
        default: break
        }
        var m = JSONObject()
        switch match.token {
        case .exactly(let token)?: m["token"] = .string(token)
        case .prefix(let prefix)?: m["token_prefix"] = .string(prefix)
        case nil: break
        }
        switch match.count {
        case .nth(let n)?: m["nth"] = .number(Double(n))
        case .fromNth(let n)?: m["from_nth"] = .number(Double(n))
        case nil: break
        }
        if let after = match.afterMillis { m["after_ms"] = .number(Double(after)) }
        if let before = match.beforeMillis { m["before_ms"] = .number(Double(before)) }
        if !match.fields.isEmpty {
            m["fields"] = .object(JSONObject(match.fields.map { (key: $0.pointer.description, value: $0.value) }))
        }
        if !match.absentFields.isEmpty { m["absent"] = .array(match.absentFields.map { .string($0.description) }) }
        if !match.headers.isEmpty {
            m["headers"] = .object(JSONObject(match.headers.map { (key: $0.name, value: $0.value.map(JSONValue.string) ?? .null) }))
        }
        if !m.isEmpty { object["match"] = .object(m) }
        var a: JSONObject = ["status": .number(Double(answer.apns?.status ?? answer.fcm?.status ?? 0))]
        switch (answer.apns, answer.fcm) {
        case (let reason?, nil): a["reason"] = .string(reason.rawValue)
        case (nil, let code?): a["reason"] = .string(code.rawValue)
        default: break
        }
        if let retry = answer.retryAfterSeconds { a["retry_after_seconds"] = .number(Double(retry)) }
        if let since = answer.sinceMillis { a["since_ms"] = .number(Double(since)) }
        object["answer"] = .object(a)
        if let times { object["times"] = .number(Double(times)) }
        return .object(object)
    }
}

extension RouteFaults {
    /// The configuration-file form (`faults.<route>`), for `GET /faults`.
    public var json: JSONValue {
        var object = JSONObject()
        if let latency {
            switch latency {
            case .fixed(let ms): object["latency"] = ["fixed_ms": .number(ms)]
            case .uniform(let low, let high):
                object["latency"] = ["distribution": ["kind": "uniform", "min_ms": .number(low), "max_ms": .number(high)]]
            case .normal(let mean, let deviation):
                object["latency"] = ["distribution": ["kind": "normal", "mean_ms": .number(mean), "stddev_ms": .number(deviation)]]
            case .exponential(let mean):
                object["latency"] = ["distribution": ["kind": "exponential", "mean_ms": .number(mean)]]
            }
        }
        if !errorRates.isEmpty {
            object["error_rates"] = .object(JSONObject(errorRates.sorted { $0.key < $1.key }.map { (key: String($0.key), value: .number($0.value)) }))
        }
        object["retry_after_seconds"] = .number(Double(retryAfterSeconds))
        if let goAwayAfterStreams { object["goaway_after_streams"] = .number(Double(goAwayAfterStreams)) }
        if resetRate > 0 { object["reset_rate"] = .number(resetRate) }
        if closeRate > 0 { object["close_rate"] = .number(closeRate) }
        return .object(object)
    }
}
