// Live test of answer rules (issue 21): a real `pushproof serve --h2c --config` holding rules,
// pushed to with curl, its /metrics and /requests read back.
import Foundation
import JSON
import PushproofTestSupport
import Testing

@Suite struct AnswerRulesLiveTests {
    @Test func configuredRulesAnswerAreCountedAndJournalled() throws {
        let directory = try TemporaryDirectory("answer-rules")
        let throttled = String(repeating: "ab", count: 32), doomed = "dead" + String(repeating: "0", count: 60)
        let config = try directory.write("gateway.json", """
            {"answer_rules": [
              {"name": "third-push-throttled", "route": "apns", "match": {"token": "\(throttled)", "nth": 3},
               "answer": {"status": 429, "retry_after_seconds": 2}},
              {"name": "empty-title", "match": {"fields": {"/aps/alert/title": ""}}, "answer": {"status": 500}},
              {"name": "dead-prefix", "route": "apns", "match": {"token_prefix": "DEAD", "after_ms": 1000000000000},
               "answer": {"status": 410, "since_ms": 1793952000000}}
            ]}
            """)
        let serve = try ServeProcess(["--h2c", "--config", config], directory: directory.path)
        defer { serve.stop() }
        func push(_ token: String, _ body: String = ringBody, headers: [String] = voipHeaders) throws -> (status: Int, head: String, body: String) {
            let result = try curl(["--http2-prior-knowledge", "-sS", "-i"] + zeroConfigAuth + headers
                                  + ["-d", body, "\(serve.baseURL)/3/device/\(token)"])
            #expect(result.status == 0, "\(result.error)")
            let parts = result.output.components(separatedBy: "\r\n\r\n")
            let status = Int(parts[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            return (status, parts[0].lowercased(), parts.dropFirst().joined())
        }

        #expect(try push(throttled).status == 200)
        #expect(try push(throttled).status == 200)
        let third = try push(throttled)
        #expect(third.status == 429)
        #expect(third.head.contains("retry-after: 2"))
        #expect(third.body == #"{"reason":"TooManyRequests"}"#)
        #expect(try push(throttled).status == 200)

        let alertHeaders = ["-H", "apns-push-type: alert", "-H", "apns-topic: com.example.loop"]
        let emptyTitle = try push(String(repeating: "cd", count: 32), #"{"aps":{"alert":{"title":"","body":"x"}}}"#, headers: alertHeaders)
        #expect(emptyTitle.status == 500)
        #expect(emptyTitle.body == #"{"reason":"InternalServerError"}"#)
        #expect(try push(String(repeating: "cd", count: 32), #"{"aps":{"alert":{"title":"Hi"}}}"#, headers: alertHeaders).status == 200)

        let gone = try push(doomed)
        #expect(gone.status == 410)
        #expect(gone.body == #"{"reason":"Unregistered","timestamp":1793952000000}"#)

        let metrics = try curl(["\(serve.adminURL)/metrics"]).output
        for line in [#"pushproof_answer_rule_matches_total{rule="third-push-throttled"} 1"#,
                     #"pushproof_answer_rule_matches_total{rule="empty-title"} 1"#,
                     #"pushproof_answer_rule_matches_total{rule="dead-prefix"} 1"#] {
            #expect(metrics.contains(line + "\n"), "\(line)")
        }
        let lines = try JSONParser.parse(try curl(["\(serve.adminURL)/requests"]).output).arrayValue ?? []
        #expect(lines.map { $0["rule"]?.stringValue } == [nil, nil, "third-push-throttled", nil, "empty-title", nil, "dead-prefix"])
        #expect(lines.map { $0["response"]?["status"]?.intValue } == [200, 200, 429, 200, 500, 200, 410])
        let rules = try JSONParser.parse(try curl(["\(serve.adminURL)/answer-rules"]).output)["answer_rules"]?.arrayValue ?? []
        #expect(rules.map { $0["seen"]?.intValue } == [4, 1, 1])
    }

    @Test func aConfigurationMistakeNamesItsKeyPath() throws {
        let directory = try TemporaryDirectory("answer-rules-bad")
        let config = try directory.write("gateway.json", #"{"answer_rules": [{"name": "x", "route": "apns", "answer": {"status": 418}}]}"#)
        let result = try pushproof(["serve", "--h2c", "--config", config], directory: directory.path)
        #expect(result.status != 0)
        #expect(result.error.contains("answer_rules[0].answer.status: APNs answers 400, 403, 404, 405, 410, 413, 429, 500, 503"), "\(result.error)")
    }
}
