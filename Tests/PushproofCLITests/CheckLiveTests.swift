// End to end: seed examples pushed at a live `pushproof serve`, the recording checked by
// `pushproof check`, its JUnit and JSON reports and exit code; and judging live with --specs.
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import JSON
import PushproofTestSupport
import Testing

/// The package's Specs/ directory (PUSHPROOF_SPECS overrides).
let specsDirectory: String = {
    if let override = ProcessInfo.processInfo.environment["PUSHPROOF_SPECS"] { return override }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Specs").path
}()

struct SpecExampleRequest {
    var specID: String
    var transport: String
    var path: String
    var headers: [(String, String)]
    var body: JSONValue
}

/// The first example of every spec file, as the request a sender would make.
func specExamples() throws -> [SpecExampleRequest] {
    var out: [SpecExampleRequest] = []
    let enumerator = FileManager.default.enumerator(atPath: specsDirectory)
    while let relative = enumerator?.nextObject() as? String {
        guard relative.hasSuffix(".json"), relative.contains("/") else { continue }
        let spec = try JSONParser.parse(String(contentsOfFile: specsDirectory + "/" + relative, encoding: .utf8))
        guard let id = spec["id"]?.stringValue, let example = spec["examples"]?[0] else { continue }
        let headers = example["headers"]?.objectValue?.entries.compactMap { entry in entry.value.stringValue.map { (entry.key, $0) } } ?? []
        out.append(SpecExampleRequest(specID: id, transport: spec["transport"]?.stringValue ?? "", path: example["path"]?.stringValue ?? "",
                                      headers: headers, body: example["body"] ?? .null))
    }
    return out.sorted { $0.specID < $1.specID }
}

func send(_ example: SpecExampleRequest, to serve: ServeProcess, body: JSONValue? = nil) throws -> String {
    var arguments = ["--http2-prior-knowledge", "-w", "\n%{http_code}", "-H", "authorization: bearer t", "-H", "content-type: application/json"]
    for (name, value) in example.headers { arguments += ["-H", "\(name): \(value)"] }
    arguments += ["-d", (body ?? example.body).serialized(), serve.baseURL + example.path]
    return try curl(arguments).output
}

@Suite(.serialized) struct CheckLiveTests {
    /// A recording judged by `serve --spec-config` (its Yama tenant's own bundle id), checked
    /// without it: exit 2, naming the bundle id and the config to pass, not a pass with nothing
    /// judged; checked with it: judged and passing.
    @Test func aRecordingJudgedWithAnotherSpecConfigIsNotPassedUnjudged() throws {
        let directory = try TemporaryDirectory("check-spec-config")
        let record = directory.file("record.jsonl")
        let config = try directory.write("spec-config.json", #"{"yama":{"bundle_ids":["com.acme.chat"]}}"#)
        let serve = try ServeProcess(["--h2c", "--record", record, "--specs", specsDirectory, "--spec-config", config],
                                     directory: directory.path)
        var example = try #require(try specExamples().first { $0.specID == "yama.message.apns" })
        example.headers = example.headers.map { $0.0 == "apns-topic" ? ($0.0, "com.acme.chat") : $0 }
        #expect(try send(example, to: serve).hasSuffix("\n200"))
        serve.stop()

        let without = try pushproof(["check", record, "--specs", specsDirectory])
        #expect(without.status == 2, "\(without.output)\(without.error)")
        #expect(without.error.contains("claimed com.acme.chat for yama (1 push)"), "\(without.error)")
        #expect(without.error.contains(#"{"yama":{"bundle_ids":["com.example.yama.tenant","com.acme.chat"]}}"#), "\(without.error)")
        let with = try pushproof(["check", record, "--specs", specsDirectory, "--spec-config", config])
        #expect(with.status == 0, "\(with.output)\(with.error)")
        #expect(with.output.contains("1 requests checked: 1 passed, 0 failed"), "\(with.output)")
    }

    @Test func seedExamplesPassAndABrokenPushFailsWithItsPointerInJUnitAndJSON() throws {
        let examples = try specExamples()
        #expect(examples.count >= 13, "every spec has an example")
        let directory = try TemporaryDirectory("check")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        for example in examples {
            let answer = try send(example, to: serve)
            #expect(answer.hasSuffix("\n200"), "\(example.specID): \(answer)")
        }
        serve.stop()

        let clean = try pushproof(["check", record, "--specs", specsDirectory, "--junit", directory.file("ok.xml")])
        #expect(clean.status == 0, "\(clean.output)\(clean.error)")
        #expect(clean.output.contains("\(examples.count) requests checked: \(examples.count) passed, 0 failed"))

        // --timing: every judged request timed, per spec and overall, in the text and the JSON report.
        let timingJSON = directory.file("timed.json")
        let timed = try pushproof(["check", record, "--specs", specsDirectory, "--timing", "--quiet", "--json", timingJSON])
        #expect(timed.status == 0, "\(timed.output)\(timed.error)")
        #expect(timed.output.contains("over \(examples.count) requests"), "\(timed.output)")
        #expect(timed.output.hasSuffix("\(examples.count) passed, 0 failed\n"), "the totals stay the last line")
        let timing = try JSONParser.parse(String(contentsOfFile: timingJSON, encoding: .utf8))["timing"]
        #expect(timing?["all"]?["requests"]?.intValue == examples.count)
        #expect((timing?["all"]?["mean_us"]?.doubleValue ?? 0) > 0)
        #expect(timing?["specs"]?["poolse.ring.apns"]?["requests"]?.intValue == 1)

        // A poolse ring with a number where Android needs a string, recorded and checked.
        let ring = try #require(examples.first { $0.specID == "poolse.ring.fcm" })
        var message = try #require(ring.body["message"]?.objectValue)
        var data = try #require(message["data"]?.objectValue)
        data["sent_at"] = 1_793_952_000_000
        message["data"] = .object(data)
        let broken: JSONValue = ["message": .object(message)]
        let brokenRecord = directory.file("broken.jsonl")
        let again = try ServeProcess(["--h2c", "--record", brokenRecord], directory: directory.path)
        // FCM itself refuses a non-string data value: recorded with Google's 400.
        #expect(try send(ring, to: again, body: broken).hasSuffix("\n400"))
        #expect(try send(ring, to: again).hasSuffix("\n200"))
        again.stop()

        let junit = directory.file("broken.xml"), json = directory.file("broken.json")
        let failed = try pushproof(["check", brokenRecord, "--specs", specsDirectory, "--junit", junit, "--json", json])
        #expect(failed.status == 1, "\(failed.output)\(failed.error)")
        #expect(failed.output.contains("/body/message/data/sent_at"))
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"<testcase classname="poolse" name="poolse.ring.fcm" assertions="2">"#))
        #expect(xml.contains(#"<failure type="SpecViolation" message="1 of 2 requests violate poolse.ring.fcm""#))
        #expect(XMLParser(data: Data(xml.utf8)).parse(), "the JUnit file is well-formed XML")
        let report = try JSONParser.parse(String(contentsOfFile: json, encoding: .utf8))
        #expect(report["failed"] == 1)
        let ringReport = report["specs"]?.arrayValue?.first { $0["spec"] == "poolse.ring.fcm" }
        #expect(ringReport?["failures"]?[0]?["violations"]?[0]?["pointer"] == "/body/message/data/sent_at")
    }

    @Test func checkReportsUnreadableLinesAndMissingFilesWithExitTwo() throws {
        let directory = try TemporaryDirectory("check-bad")
        let missing = try pushproof(["check", directory.file("nope.jsonl"), "--specs", specsDirectory])
        #expect(missing.status == 2)
        #expect(missing.error.contains("nope.jsonl"))
        let garbage = try directory.write("garbage.jsonl", "{\"route\":\"apns\"\nnot json at all\n")
        let result = try pushproof(["check", garbage, "--specs", specsDirectory])
        #expect(result.status == 2)
        #expect(result.output.contains("line 1: not JSON"))
        #expect(result.output.contains("line 2: not JSON"))
        let badSpecs = try pushproof(["check", garbage, "--specs", directory.path])
        #expect(badSpecs.status == 2)
        #expect(badSpecs.error.contains("specset.json"))
    }

    @Test func serveJudgesLiveRecordsVerdictsCountsThemAndCanReject() throws {
        let examples = try specExamples()
        let missed = try #require(examples.first { $0.specID == "poolse.missed.apns" })
        var body = try #require(missed.body.objectValue)
        var aps = try #require(body["aps"]?.objectValue)
        aps["category"] = "wrong_category"
        body["aps"] = .object(aps)
        let broken = JSONValue.object(body)

        let directory = try TemporaryDirectory("live-specs")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--specs", specsDirectory, "--record", record], directory: directory.path)
        #expect(try send(missed, to: serve).hasSuffix("\n200"))
        // A violation is a finding, not a rejection: Apple would deliver it.
        #expect(try send(missed, to: serve, body: broken).hasSuffix("\n200"))
        let metrics = try curl(["\(serve.adminURL)/metrics"]).output
        #expect(metrics.contains(#"pushproof_spec_violations_total{spec="poolse.missed.apns""#))
        serve.stop()
        let recorded = try lines(of: record)
        #expect(recorded.count == 2)
        #expect(recorded[0]["verdict"]?["spec"] == "poolse.missed.apns")
        #expect(recorded[0]["verdict"]?["ok"] == true)
        #expect(recorded[1]["verdict"]?["ok"] == false)
        #expect(recorded[1]["verdict"]?["violations"]?[0]?["pointer"] == "/body/aps/category")

        let strict = try ServeProcess(["--h2c", "--specs", specsDirectory, "--reject-violations"], directory: directory.path)
        let rejected = try send(missed, to: strict, body: broken)
        #expect(rejected.hasSuffix("\n400"))
        #expect(rejected.contains(#""reason":"SpecViolation""#))
        #expect(try send(missed, to: strict).hasSuffix("\n200"))
        strict.stop()
    }
}

/// `check --expect`: the pushes a recording holds compared with the deliveries a scenario must
/// produce (did the pushes reach exactly the right devices?).
@Suite(.serialized) struct CheckExpectationLiveTests {
    @Test func deliveriesAreComparedWithTheExpectedOnes() throws {
        let examples = try specExamples()
        let ringAPNs = try #require(examples.first { $0.specID == "poolse.ring.apns" })
        let ringFCM = try #require(examples.first { $0.specID == "poolse.ring.fcm" })
        let apnsToken = String(try #require(ringAPNs.path.split(separator: "/").last))
        let fcmToken = try #require(ringFCM.body["message"]?["token"]?.stringValue)
        let goneToken = String(repeating: "0e", count: 32)
        let directory = try TemporaryDirectory("check-expect")
        let config = try directory.write("gateway.json", #"{"tokens": {"gone": ["\#(goneToken)"]}}"#)
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record, "--config", config], directory: directory.path)
        #expect(try send(ringAPNs, to: serve).hasSuffix("\n200"))
        #expect(try send(ringAPNs, to: serve).hasSuffix("\n200"), "the same ring twice: one too many")
        #expect(try send(ringFCM, to: serve).hasSuffix("\n200"))
        var toGone = ringAPNs
        toGone.path = "/3/device/" + goneToken
        #expect(try send(toGone, to: serve).hasSuffix("\n410"), "refused: reaches no device")
        serve.stop()

        let wrong = try directory.write("wrong.json", """
            {"deliveries": [{"token": "\(apnsToken.uppercased())", "spec": "poolse.ring.apns"},
                            {"token": "\(goneToken)", "spec": "poolse.ring.apns"},
                            {"token": "fcm-token-never-rung"}]}
            """)
        let junit = directory.file("check.xml"), json = directory.file("check.json")
        let failed = try pushproof(["check", record, "--specs", specsDirectory, "--expect", wrong, "--junit", junit, "--json", json])
        #expect(failed.status == 1, "\(failed.output)\n\(failed.error)")
        #expect(failed.output.contains("deliveries (\(wrong)): 3 expected, 1 as expected; 2 missing, 1 unexpected, 1 repeated"), "\(failed.output)")
        #expect(failed.output.contains("missing: poolse.ring.apns to \(goneToken): expected 1, accepted 0"))
        #expect(failed.output.contains("missing: a push to fcm-token-never-rung: expected 1, accepted 0"))
        #expect(failed.output.contains("repeated: poolse.ring.apns to \(apnsToken.uppercased()): expected 1, accepted 2 (extra: request #2)"))
        #expect(failed.output.contains("unexpected: poolse.ring.fcm to \(fcmToken) (request #3)"))
        #expect(failed.output.contains("4 requests checked: 4 passed, 0 failed; deliveries: 2 missing, 1 unexpected, 1 repeated"))
        let report = try readJSON(json)
        #expect(report["ok"] == false, "every spec passed, but the deliveries did not match")
        #expect(report["deliveries"]?["missing"]?.arrayValue?.count == 2)
        #expect(report["deliveries"]?["unexpected"]?[0]?["seq"] == 3)
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(XMLParser(data: Data(xml.utf8)).parse())
        #expect(xml.contains(#"type="DeliveryMismatch""#))

        let right = try directory.write("right.json", """
            {"deliveries": [{"token": "\(apnsToken)", "spec": "poolse.ring.apns", "count": 2},
                            {"token": "\(fcmToken)", "spec": "poolse.ring.fcm"}]}
            """)
        let passed = try pushproof(["check", record, "--specs", specsDirectory, "--expect", right, "--quiet"])
        #expect(passed.status == 0, "\(passed.output)\n\(passed.error)")
        #expect(passed.output == "4 requests checked: 4 passed, 0 failed; deliveries as expected\n")
    }

    @Test(arguments: [
        (#"{"deliveries": [{"spec": "poolse.ring.apns"}]}"#, "deliveries[0].token: required (a non-empty string)"),
        (#"{"deliveries": [{"token": "a", "count": 0}]}"#, "deliveries[0].count: must be between 1 and"),
        (#"{"deliveries": [{"token": "a", "kind": "x"}]}"#, "deliveries[0].kind: unknown key (allowed: token, spec, count)"),
        (#"{"deliveries": [{"token": "a"}, {"token": "a"}]}"#, "deliveries[1]: a (any spec) is listed twice; use count"),
        (#"[{"token": "a"}]"#, #"expected {"deliveries""#),
        ("{", "not valid JSON"),
    ])
    func badExpectationFilesExit2NamingTheEntry(text: String, message: String) throws {
        let directory = try TemporaryDirectory("check-expect-bad")
        let record = try directory.write("record.jsonl", "")
        let expect = try directory.write("expect.json", text)
        let result = try pushproof(["check", record, "--specs", specsDirectory, "--expect", expect])
        #expect(result.status == 2, "\(result.error)")
        #expect(result.error.contains(message), "\(result.error)")
    }
}
