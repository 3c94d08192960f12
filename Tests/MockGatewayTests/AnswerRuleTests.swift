import Clocks
import HTTPCore
import JSON
import PushModel
import RecordLine
import Testing
@testable import MockGateway

/// Rules read from JSON as the configuration file has them.
func answerRules(_ text: String) throws -> [AnswerRule] {
    try ConfigReader(baseDirectory: ".").answerRules(try JSONParser.parse(text), "answer_rules")
}

/// The decision alone: requests as the gateway shows them to the rules, no gateway, no socket.
@Suite struct AnswerRuleDecisionTests {
    static let token = String(repeating: "ab", count: 32)

    static func request(_ route: GatewayRoute = .apns, token: String? = AnswerRuleDecisionTests.token, headers: [HTTPHeader] = [],
                        body: String = #"{"aps":{"alert":{"title":"Hi"}}}"#, now: UInt64 = 1_800_000_000_000) -> AnswerRuleRequest {
        AnswerRuleRequest(route: route, token: token, headers: HTTPFields(headers), body: Array(body.utf8), nowMillis: now)
    }

    static func names(_ rules: AnswerRules, _ requests: [AnswerRuleRequest]) -> [String?] {
        requests.map { rules.decide($0)?.name }
    }

    @Test func theNthMatchingRequestOnlyAndTheTokenIsComparedWithoutCase() throws {
        let rules = AnswerRules(try answerRules("""
            [{"name": "third", "route": "apns", "match": {"token": "\(Self.token.uppercased())", "nth": 3},
              "answer": {"status": 429, "retry_after_seconds": 2}}]
            """))
        let other = Self.request(token: String(repeating: "cd", count: 32))
        // Another token's pushes do not count towards the third.
        #expect(Self.names(rules, [Self.request(), other, Self.request(), other, Self.request(), Self.request()])
                == [nil, nil, nil, nil, "third", nil])
        let rule = try #require(rules.rules.first)
        #expect(rule.answer == AnswerRule.Answer(apns: .tooManyRequests, retryAfterSeconds: 2))
        #expect(rules.counts.map { [$0.seen, $0.answered] } == [[4, 1]])
    }

    @Test func fromNthAnswersUntilItsTimesAreUsedUp() throws {
        let rules = AnswerRules(try answerRules(#"[{"name": "r", "match": {"from_nth": 2}, "answer": {"status": 503}, "times": 2}]"#))
        #expect(Self.names(rules, (0..<5).map { _ in Self.request() }) == [nil, "r", "r", nil, nil])
        // Used up, the rule stops counting too.
        #expect(rules.counts.map(\.seen) == [3])
    }

    @Test func theFirstRuleThatMatchesAnswersAndTheLaterOnesDoNotSeeTheRequest() throws {
        let rules = AnswerRules(try answerRules("""
            [{"name": "first", "match": {"nth": 2}, "answer": {"status": 500}},
             {"name": "second", "match": {"nth": 2}, "answer": {"status": 503}}]
            """))
        #expect(Self.names(rules, [Self.request(), Self.request(), Self.request()]) == [nil, "first", "second"])
        #expect(rules.counts.map { [$0.seen, $0.answered] } == [[3, 1], [2, 1]])
    }

    @Test func aTokenPrefixFromATime() throws {
        let rules = AnswerRules(try answerRules("""
            [{"name": "gone-later", "route": "apns", "match": {"token_prefix": "AB", "after_ms": 1800000000000},
              "answer": {"status": 410, "since_ms": 1700000000000}}]
            """))
        #expect(rules.decide(Self.request(now: 1_799_999_999_999)) == nil)
        #expect(rules.decide(Self.request(now: 1_800_000_000_000))?.name == "gone-later")
        #expect(rules.decide(Self.request(token: String(repeating: "cd", count: 32))) == nil)
        #expect(rules.decide(Self.request(token: nil)) == nil)
        #expect(rules.rules.first?.answer == AnswerRule.Answer(apns: .unregistered, sinceMillis: 1_700_000_000_000))
    }

    @Test func bodyFieldsEqualAValueOrAreAbsent() throws {
        let rules = AnswerRules(try answerRules("""
            [{"name": "empty-title", "match": {"fields": {"/aps/alert/title": ""}}, "answer": {"status": 500}},
             {"name": "no-sound", "match": {"absent": ["/aps/sound"], "fields": {"/aps/badge": 3}}, "answer": {"status": 503}}]
            """))
        #expect(rules.decide(Self.request(body: #"{"aps":{"alert":{"title":""}}}"#))?.name == "empty-title")
        #expect(rules.decide(Self.request(body: #"{"aps":{"alert":{"title":"x"}}}"#)) == nil)
        #expect(rules.decide(Self.request(body: #"{"aps":{"badge":3.0}}"#))?.name == "no-sound")
        #expect(rules.decide(Self.request(body: #"{"aps":{"badge":3,"sound":"a"}}"#)) == nil)
        #expect(rules.decide(Self.request(body: "not json")) == nil)
    }

    @Test func headersEqualAValueOrAreAbsent() throws {
        let rules = AnswerRules(try answerRules("""
            [{"name": "voip", "match": {"headers": {"APNS-Push-Type": "voip", "apns-collapse-id": null}}, "answer": {"status": 500}}]
            """))
        #expect(rules.decide(Self.request(headers: [HTTPHeader("apns-push-type", "voip")]))?.name == "voip")
        #expect(rules.decide(Self.request(headers: [HTTPHeader("apns-push-type", "alert")])) == nil)
        #expect(rules.decide(Self.request(headers: [HTTPHeader("apns-push-type", "voip"), HTTPHeader("apns-collapse-id", "c")])) == nil)
    }

    @Test func aRuleAnswersOnlyTheRoutesItHasAReasonFor() throws {
        let rules = AnswerRules(try answerRules("""
            [{"name": "fcm-only", "route": "fcm", "answer": {"status": 404}},
             {"name": "both", "answer": {"status": 410}}]
            """))
        #expect(rules.decide(Self.request(.fcm, token: "t"))?.name == "fcm-only")
        #expect(rules.decide(Self.request(.apns))?.name == "both")
        #expect(rules.decide(Self.request(.oauth)) == nil)
        #expect(rules.rules.map(\.answer) == [AnswerRule.Answer(fcm: .unregistered), AnswerRule.Answer(apns: .unregistered, fcm: .unregistered)])
    }

    @Test func replacingTheRulesStartsTheirCountsAgainAndAnEmptyListIsOff() throws {
        let rules = AnswerRules(try answerRules(#"[{"name": "r", "match": {"nth": 2}, "answer": {"status": 500}}]"#))
        #expect(rules.isActive)
        _ = rules.decide(Self.request())
        rules.replace(with: rules.rules)
        #expect(Self.names(rules, [Self.request(), Self.request()]) == [nil, "r"])
        rules.replace(with: [])
        #expect(!rules.isActive)
        #expect(rules.decide(Self.request()) == nil)
    }

    @Test(arguments: [
        (#"{}"#, "answer_rules: expected an array of rules"),
        (#"[{"answer": {"status": 500}}]"#, "answer_rules[0].name: required (a non-empty string)"),
        (#"[{"name": "a", "answer": {"status": 500}}, {"name": "a", "answer": {"status": 503}}]"#,
         #"answer_rules[1].name: "a" names an earlier rule too"#),
        (#"[{"name": "a"}]"#, #"answer_rules[0].answer: required ({"status": 429, …})"#),
        (#"[{"name": "a", "answer": {"status": 400}}]"#, "answer_rules[0].answer.status: without a route, one of 410, 429, 500, 503 (give a route for the others)"),
        (#"[{"name": "a", "answer": {"status": 500, "reason": "InternalServerError"}}]"#,
         #"answer_rules[0].answer.reason: a reason is APNs' or FCM's own: give the rule a route ("apns" or "fcm")"#),
        (#"[{"name": "a", "route": "apns", "answer": {"status": 400}}]"#,
         "answer_rules[0].answer.reason: required for 400: which APNs reason (e.g. BadCollapseId)"),
        (#"[{"name": "a", "route": "apns", "answer": {"status": 500, "reason": "BadTopic"}}]"#,
         "answer_rules[0].answer.status: BadTopic is answered 400, not 500"),
        (#"[{"name": "a", "route": "apns", "answer": {"reason": "Nope"}}]"#, "answer_rules[0].answer.reason: not an APNs reason: Nope"),
        (#"[{"name": "a", "route": "fcm", "answer": {"status": 410}}]"#, "answer_rules[0].answer.status: one of 400, 403, 404, 429, 500, 503"),
        (#"[{"name": "a", "answer": {"status": 500, "retry_after_seconds": 2}}]"#,
         "answer_rules[0].answer.retry_after_seconds: only on a 429 or a 503 (this rule answers 500)"),
        (#"[{"name": "a", "route": "apns", "answer": {"status": 429, "since_ms": 1}}]"#,
         "answer_rules[0].answer.since_ms: only on a 410 (the token's timestamp)"),
        (#"[{"name": "a", "route": "mqtt", "answer": {"status": 500}}]"#, #"answer_rules[0].route: expected one of "apns", "fcm", found "mqtt""#),
        (#"[{"name": "a", "match": {"token": "x", "token_prefix": "y"}, "answer": {"status": 500}}]"#,
         "answer_rules[0].match.token_prefix: give token or token_prefix, not both"),
        (#"[{"name": "a", "match": {"nth": 0}, "answer": {"status": 500}}]"#, "answer_rules[0].match.nth: "),
        (#"[{"name": "a", "match": {"after_ms": 5, "before_ms": 5}, "answer": {"status": 500}}]"#,
         "answer_rules[0].match.before_ms: must be later than after_ms (5)"),
        (#"[{"name": "a", "match": {"fields": {"aps": 1}}, "answer": {"status": 500}}]"#,
         "answer_rules[0].match.fields.aps: not a JSON Pointer (like /aps/alert/title)"),
        (#"[{"name": "a", "match": {"headers": {"x": 1}}, "answer": {"status": 500}}]"#,
         "answer_rules[0].match.headers.x: a header's value is a string (null: the header must be absent)"),
        (#"[{"name": "a", "match": {"body": {}}, "answer": {"status": 500}}]"#, "answer_rules[0].match.body: unknown key"),
        (#"[{"name": "a", "answer": {"status": 500}, "times": 0}]"#, "answer_rules[0].times: "),
    ])
    func everyMistakeIsNamedByItsKeyPath(text: String, expected: String) throws {
        let error = #expect(throws: GatewayConfigurationError.self) { try answerRules(text) }
        #expect(error?.description.hasPrefix(expected) == true, "\(error?.description ?? "no error")")
    }

    @Test func atMostAThousandRules() throws {
        let many = (0...AnswerRule.maximumCount).map { #"{"name": "r\#($0)", "answer": {"status": 500}}"# }
        let error = #expect(throws: GatewayConfigurationError.self) { try answerRules("[" + many.joined(separator: ",") + "]") }
        #expect(error?.description == "answer_rules: 1001 rules; at most 1000")
        #expect(try answerRules("[" + many.dropLast().joined(separator: ",") + "]").count == 1000)
    }

    @Test func aRuleReadsBackAsItWasWritten() throws {
        let text = """
            [{"name": "a", "route": "apns", "match": {"token_prefix": "ab", "from_nth": 2, "after_ms": 1, "before_ms": 9,
              "fields": {"/aps/alert/title": ""}, "absent": ["/aps/sound"], "headers": {"apns-push-type": "voip", "x": null}},
              "answer": {"status": 400, "reason": "BadDeviceToken"}, "times": 3},
             {"name": "b", "answer": {"status": 429, "retry_after_seconds": 2}},
             {"name": "c", "route": "fcm", "answer": {"status": 404}}]
            """
        let rules = try answerRules(text)
        #expect(try answerRules(JSONValue.array(rules.map(\.json)).serialized()) == rules)
    }
}

/// The rules inside the gateway's pipeline: where they answer, and how.
@Suite struct AnswerRuleGatewayTests {
    static func harness(_ rules: String, clock: ManualClock = ManualClock()) throws -> Harness {
        var configuration = GatewayConfiguration()
        configuration.answerRules = try answerRules(rules)
        return try Harness(configuration, clock: clock)
    }

    @Test func anAPNsRuleAnswersAsApple() throws {
        let h = try Self.harness("""
            [{"name": "third-push-throttled", "route": "apns", "match": {"token": "\(deviceToken)", "nth": 3},
              "answer": {"status": 429, "retry_after_seconds": 2}},
             {"name": "gone", "route": "apns", "match": {"fields": {"/aps/alert": "bye"}}, "answer": {"status": 410}}]
            """)
        #expect(h.push().status == 200)
        #expect(h.push().status == 200)
        let throttled = h.push(headers: ["apns-id": validAPNSID])
        #expect(throttled.status == 429)
        #expect(reason(throttled) == "TooManyRequests")
        #expect(header(throttled, "retry-after") == "2")
        #expect(header(throttled, "apns-id") == validAPNSID)
        #expect(h.observer.last?.answerRule == "third-push-throttled")
        #expect(h.observer.last?.reason == "TooManyRequests")
        #expect(h.push().status == 200)
        #expect(h.observer.last?.answerRule == nil)

        let gone = h.push(payload: #"{"aps":{"alert":"bye"}}"#)
        #expect(gone.status == 410)
        #expect(json(gone)?["reason"] == "Unregistered")
        #expect(json(gone)?["timestamp"]?.doubleValue == Double(h.clock.nowSeconds * 1000))
    }

    @Test func anFCMRuleAnswersAsGoogle() throws {
        let h = try Self.harness("""
            [{"name": "throttled", "route": "fcm", "match": {"token": "\(fcmToken)"}, "answer": {"status": 429, "retry_after_seconds": 7}},
             {"name": "gone", "match": {"fields": {"/message/data/k": "gone"}}, "answer": {"status": 410}}]
            """)
        let throttled = h.fcmMessage(#"{"token":"\#(fcmToken)"}"#)
        #expect(throttled.status == 429)
        #expect(header(throttled, "retry-after") == "7")
        let body = GoogleErrorBody(throttled)
        #expect(body.status == "RESOURCE_EXHAUSTED")
        #expect(body.fcmErrorCode == "QUOTA_EXCEEDED")
        let gone = h.fcmMessage(#"{"token":"other","data":{"k":"gone"}}"#)
        #expect(gone.status == 404)
        #expect(GoogleErrorBody(gone).fcmErrorCode == "UNREGISTERED")
        #expect(GoogleErrorBody(gone).message == "Requested entity was not found.")
        #expect(h.observer.last?.answerRule == "gone")
        #expect(h.fcmMessage(#"{"token":"other"}"#).status == 200)
    }

    /// In Apple's order: what fails validation or authentication is answered for that, and the
    /// rule neither answers nor counts it; a rule takes the place of the token's state.
    @Test func aRuleAnswersOnlyRequestsThatPassedTheChecksBeforeTheDevice() throws {
        var configuration = GatewayConfiguration()
        configuration.tokens = TokenConfiguration(bad: [deviceToken])
        configuration.answerRules = try answerRules(#"[{"name": "every-second", "match": {"nth": 2}, "answer": {"status": 503}}]"#)
        let h = try Harness(configuration)
        #expect(reason(h.push(headers: ["apns-topic": nil])) == "MissingTopic")
        #expect(reason(h.push(headers: ["authorization": nil])) == "MissingProviderToken")
        #expect(reason(h.push(payload: "")) == "PayloadEmpty")
        #expect(reason(h.push()) == "BadDeviceToken")
        #expect(reason(h.push()) == "ServiceUnavailable")
        #expect(h.gateway.answerRules.counts.map(\.seen) == [2])
    }

    @Test func anInjectedFaultAnswersBeforeTheRules() throws {
        var configuration = GatewayConfiguration()
        configuration.faults = FaultConfiguration(routes: [.apns: RouteFaults(errorRates: [500: 1])])
        configuration.answerRules = try answerRules(#"[{"name": "r", "answer": {"status": 503}}]"#)
        let h = try Harness(configuration)
        #expect(reason(h.push()) == "InternalServerError")
        #expect(h.observer.last?.answerRule == nil)
        #expect(h.gateway.answerRules.counts.map(\.seen) == [0])
    }

    @Test func theRecordLineNamesTheRuleOnlyWhenOneAnswered() throws {
        let h = try Self.harness(#"[{"name": "second", "match": {"nth": 2}, "answer": {"status": 500}}]"#)
        h.push()
        h.push()
        let lines = try h.observer.exchanges.map { exchange in
            let (prefix, suffix) = Recorder.encode(exchange)
            return try RecordedExchange(decoding: Array((prefix + Array("1".utf8) + suffix).dropLast()))
        }
        #expect(lines.map(\.rule) == [nil, "second"])
        let first = Recorder.encode(h.observer.exchanges[0]).suffix
        #expect(!String(decoding: first, as: UTF8.self).contains(#""rule""#))
        #expect(String(decoding: Recorder.encode(h.observer.exchanges[1]).suffix, as: UTF8.self).contains(#"},"rule":"second"}"#))
    }
}

@Suite struct AnswerRuleAdminTests {
    static func call(_ admin: AdminAPI, _ method: String, _ path: String, _ body: String = "") -> (Int, JSONValue?, String) {
        let connection = ConnectionContext(id: 1, version: .http1_1, isTLS: false, peer: "127.0.0.1:1")
        let response = admin.handle(HTTPRequest(method: method, path: path, body: Array(body.utf8), version: .http1_1), on: connection)
        return (response.status, try? JSONParser.parse(response.body), String(decoding: response.body, as: UTF8.self))
    }

    @Test func putGetPostDeleteResetAndMetrics() throws {
        var configuration = GatewayConfiguration()
        configuration.answerRules = try answerRules(#"[{"name": "configured", "match": {"nth": 1}, "answer": {"status": 500}}]"#)
        let h = try Harness(configuration)
        let admin = AdminAPI(gateway: h.gateway, metrics: GatewayMetrics(), recorder: nil) {
            .init(openConnections: 0, acceptedConnections: 0, requestsServed: 0)
        }
        #expect(Self.call(admin, "GET", "/answer-rules").1?["answer_rules"]?[0]?["name"] == "configured")
        h.push()
        #expect(Self.call(admin, "GET", "/metrics").2.contains(#"pushproof_answer_rule_matches_total{rule="configured"} 1"#))

        let put = Self.call(admin, "PUT", "/answer-rules", #"[{"name": "a", "answer": {"status": 503}}]"#)
        #expect(put.0 == 200)
        #expect(put.1?["answer_rules"]?.arrayValue?.count == 1)
        #expect(Self.call(admin, "POST", "/answer-rules", #"{"name": "a", "answer": {"status": 500}}"#).2
                == #"{"error":"answer_rules[1].name: \"a\" names an earlier rule too"}"# + "\n")
        #expect(Self.call(admin, "POST", "/answer-rules", #"{"name": "b", "route": "apns", "answer": {"status": 7}}"#).0 == 400)
        #expect(Self.call(admin, "POST", "/answer-rules", #"{"name": "b", "answer": {"status": 500}}"#).0 == 200)
        h.push()
        let rules = try #require(Self.call(admin, "GET", "/answer-rules").1?["answer_rules"]?.arrayValue)
        #expect(rules.map { $0["name"]?.stringValue } == ["a", "b"])
        #expect(rules.map { $0["answered"]?.intValue } == [1, 0])
        let metrics = Self.call(admin, "GET", "/metrics").2
        #expect(metrics.contains("# TYPE pushproof_answer_rule_matches_total counter\n" + #"pushproof_answer_rule_matches_total{rule="a"} 1"#
                                 + "\n" + #"pushproof_answer_rule_matches_total{rule="b"} 0"#))

        #expect(Self.call(admin, "DELETE", "/answer-rules").1?["answer_rules"]?.arrayValue?.isEmpty == true)
        #expect(h.push().status == 200)
        _ = Self.call(admin, "POST", "/reset")
        #expect(Self.call(admin, "GET", "/answer-rules").1?["answer_rules"]?[0]?["answered"]?.intValue == 0)
        #expect(h.push().status == 500)
        #expect(Self.call(admin, "PATCH", "/answer-rules").0 == 405)
    }
}
