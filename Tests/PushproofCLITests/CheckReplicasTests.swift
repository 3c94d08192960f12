// `pushproof check REC…`: several gateway replicas' recordings judged as one, merged by arrival;
// the rules that span replicas (a push to a token another replica answered gone, provider-token
// updates per team), each finding naming its recording.
import Foundation
import JSON
import PushproofTestSupport
import Testing

@Suite struct CheckReplicasTests {
    static let second: UInt64 = 1_000_000_000
    static let start: UInt64 = 1_790_000_000 * second

    /// A provider token as the record keeps it: header and claims, the signature redacted.
    static func authorization(iat: Int) -> String {
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return "bearer " + base64URL(#"{"alg":"ES256","kid":"KEY1234567"}"#) + "." + base64URL(#"{"iss":"TEAM123456","iat":\#(iat)}"#)
            + ".<redacted>"
    }

    /// A line in the current format: a push no shipped product claims (it passes the specs).
    static func line(seq: Int, arrival: UInt64, status: Int = 200, reason: String? = nil, iat: Int) -> String {
        let line: JSONValue = [
            "v": 1, "seq": .number(Double(seq)), "arrival_ns": .number(Double(arrival)), "answered_ns": .number(Double(arrival + 4_096_000)),
            "route": "apns", "method": "POST", "path": "/3/device/abcd",
            "headers": [["apns-topic", "com.nobody.app"], ["apns-push-type", "alert"], ["authorization", .string(authorization(iat: iat))]],
            "body": #"{"aps":{"alert":"hi"}}"#,
            "response": ["status": .number(Double(status)), "reason": reason.map { .string($0) } ?? .null, "headers": [], "body": ""],
        ]
        return line.serialized() + "\n"
    }

    @Test func twoRecordingsAreJudgedAsOneAndTheRulesAcrossThemNameBothReplicas() throws {
        let directory = try TemporaryDirectory("check-replicas")
        // gw-a answers the token gone; gw-b pushed it a second before (fine) and two after (not).
        // Each replica signs its own provider token: one each, yet two for the team within a second.
        let a = try directory.write("a.jsonl", Self.line(seq: 1, arrival: Self.start, status: 410, reason: "Unregistered", iat: 1_790_000_000))
        let b = try directory.write("b.jsonl", Self.line(seq: 1, arrival: Self.start - Self.second, iat: 1_789_999_999)
                                    + Self.line(seq: 2, arrival: Self.start + 2 * Self.second, iat: 1_789_999_999))
        for alone in [a, b] {
            let result = try pushproof(["check", alone, "--specs", specsDirectory])
            #expect(result.status == 0, "each replica alone passes: \(result.output)\(result.error)")
        }

        let json = directory.file("check.json"), junit = directory.file("check.xml")
        let together = try pushproof(["check", a, b, "--specs", specsDirectory, "--json", json, "--junit", junit])
        #expect(together.status == 1, "\(together.output)\(together.error)")
        #expect(together.output.contains("push b.jsonl #2 to abcd arrived"), "\(together.output)")
        #expect(together.output.contains("after a.jsonl #1 was answered 410 Unregistered"), "\(together.output)")
        #expect(together.output.contains("a.jsonl #1: team TEAM123456's new provider token (kid KEY1234567, iat 1790000000) 1 s after "
                                         + "its previous new one (b.jsonl #1)"), "\(together.output)")
        #expect(together.output.contains("0 requests checked: 0 passed, 0 failed, 3 not covered by any spec, 1 push to a gone token, "
                                         + "1 provider-token update too soon (2 recordings)"), "\(together.output)")
        #expect(!together.output.contains("seq jumps") && !together.output.contains("seq goes back"),
                "each recording numbers its own lines: \(together.output)")

        let report = try JSONParser.parse(String(contentsOfFile: json, encoding: .utf8))
        #expect(report["ok"] == false)
        #expect(report["gone_token_pushes"]?["count"] == 1)
        #expect(report["gone_token_pushes"]?["first"]?[0]?["replica"] == "b.jsonl")
        #expect(report["gone_token_pushes"]?["first"]?[0]?["gone_replica"] == "a.jsonl")
        #expect(report["provider_token_updates"]?["count"] == 1)
        #expect(report["provider_token_updates"]?["first"]?[0]?["previous_replica"] == "b.jsonl")
        #expect(report["recordings"]?.arrayValue?.map { $0["recorded"]?.intValue } == [1, 2])
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"name="no push to a token answered gone" assertions="3""#), "\(xml)")
        #expect(xml.contains(#"type="GoneTokenPush""#) && xml.contains(#"type="TooManyProviderTokenUpdates""#), "\(xml)")

        let named = try pushproof(["check", a, b, "--specs", specsDirectory, "--replica-names", "gw-a,gw-b", "--quiet"])
        #expect(named.status == 1)
        #expect(named.output.hasSuffix("1 provider-token update too soon (2 recordings)\n"), "\(named.output)")
        let detailed = try pushproof(["check", a, b, "--specs", specsDirectory, "--replica-names", "gw-a,gw-b"])
        #expect(detailed.output.contains("push gw-b #2 to abcd"), "\(detailed.output)")
        let miscounted = try pushproof(["check", a, b, "--specs", specsDirectory, "--replica-names", "gw-a"])
        #expect(miscounted.status == 64, "\(miscounted.output)\(miscounted.error)")
        // A grace longer than the push came after: the sender could not have heard the answer yet.
        let lenient = try pushproof(["check", a, b, "--specs", specsDirectory, "--gone-grace-ms", "600000", "--quiet"])
        #expect(!lenient.output.contains("push to a gone token") && !lenient.output.contains("pushes to gone tokens"), "\(lenient.output)")
        for bad in ["-1", "soon", "3600001"] {
            let refused = try pushproof(["check", a, b, "--specs", specsDirectory, "--gone-grace-ms", bad])
            #expect(refused.status == 64, "--gone-grace-ms \(bad): \(refused.error)")
            #expect(refused.error.contains("--gone-grace-ms"), "\(refused.error)")
        }
    }

    @Test func seqGapsAndUnreadableLinesNameTheirRecording() throws {
        let directory = try TemporaryDirectory("check-replicas-broken")
        let a = try directory.write("a.jsonl", Self.line(seq: 1, arrival: Self.start, iat: 1_790_000_000)
                                    + Self.line(seq: 2, arrival: Self.start + Self.second, iat: 1_790_000_000))
        let b = try directory.write("b.jsonl", Self.line(seq: 1, arrival: Self.start, iat: 1_790_000_000) + "not json\n"
                                    + Self.line(seq: 4, arrival: Self.start + Self.second, iat: 1_790_000_000))
        let result = try pushproof(["check", a, b, "--specs", specsDirectory])
        #expect(result.status == 2, "\(result.output)\(result.error)")
        #expect(result.output.contains("recording incomplete: b.jsonl: seq jumps from 1 to 4: 2 lines missing"), "\(result.output)")
        #expect(result.output.contains("b.jsonl line 2: not JSON"), "\(result.output)")
        #expect(!result.output.contains("a.jsonl: seq"), "\(result.output)")
    }
}
