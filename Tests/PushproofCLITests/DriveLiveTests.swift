// `pushproof drive` end to end: load runs of the reference sender against a live
// `pushproof serve`, their reports, thresholds, baselines and exit codes.
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import JSON
import PushproofTestSupport
import Testing

@Suite(.serialized) struct DriveLiveTests {
    @Test func aThresholdThatCannotPassExits3AndItsJUnitTestcaseNamesIt() throws {
        let directory = try TemporaryDirectory("drive-threshold")
        let credentials = try writeCredentials(in: directory)
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json", "--record", record], directory: directory.path)
        let junit = directory.file("load.xml"), json = directory.file("load.json"), html = directory.file("load.html")
        let result = try pushproof(["drive", "ring-fanout", "--members", "20", "--count", "2", "--h2c", "--gateway", serve.baseURL,
                                    "--threshold", "p99_ms<0", "--threshold", "error_rate<=0",
                                    "--junit", junit, "--json", json, "--html", html]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 3, "\(result.output)\n\(result.error)")
        #expect(result.error.contains("p99_ms<0 failed"))
        #expect(result.output.contains("FAIL p99_ms<0"))
        #expect(result.output.contains("PASS error_rate<=0"))

        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(XMLParser(data: Data(xml.utf8)).parse(), "well-formed JUnit")
        #expect(xml.contains(#"name="p99_ms&lt;0" time="0">"#), "the failing threshold is its own testcase")
        #expect(xml.contains(#"<failure type="threshold" message="p99_ms&lt;0 failed: p99_ms = "#))
        #expect(xml.contains(#"name="error_rate&lt;=0" time="0"/>"#), "the passing one has no failure")

        let report = try readJSON(json)
        #expect(report["passed"] == false)
        #expect(report["scenario"] == "ring-fanout")
        // Two calls ringing 19 callees on PushKit and Android: every push delivered.
        #expect(report["counts"]?["sent"] == 76)
        #expect(report["counts"]?["delivered"] == 76)
        #expect(report["counts"]?["fan_outs_fully_delivered"] == 2)
        #expect(report["token_cleanup"]?["devices_deleted"] == 0)
        #expect(try lines(of: record).filter { $0["route"] == "apns" || $0["route"] == "fcm" }.count == 76)
        #expect(try String(contentsOfFile: html, encoding: .utf8).contains("ring-fanout"))
    }

    @Test func tokenCleanupCountsAndLatencyGoIntoTheReport() throws {
        let directory = try TemporaryDirectory("drive-cleanup")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json", "--specs", specsDirectory],
                                     directory: directory.path)
        let json = directory.file("load.json")
        let result = try pushproof(["drive", "ring-fanout", "--members", "10", "--count", "3", "--concurrency", "1",
                                    "--h2c", "--gateway", serve.baseURL, "--admin", serve.adminURL, "--gone-tokens", "3",
                                    "--json", json, "--threshold", "tokens_removed==3", "--threshold", "violations==0"]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        let report = try readJSON(json)
        // One push at a time: the first call meets the 3 gone tokens and deletes them before the
        // next call is evaluated, which no longer rings them.
        #expect(report["counts"]?["tokens_removed"] == 3)
        #expect(report["counts"]?["sent"] == 48, "18 + 15 + 15")
        #expect(report["token_cleanup"]?["devices_deleted"] == 3)
        #expect(report["token_cleanup"]?["latency_count"] == 3)
        #expect((report["token_cleanup"]?["latency_max_ms"]?.doubleValue ?? -1) >= 0)
        #expect(result.output.contains("token cleanup: 3 pushes found their token gone, 3 devices deleted from the store"))
        #expect(report["violations"] == 0, "the gateway judged every ring against Specs/ and found nothing")
    }

    @Test func aBaselineRatioThatFailsExits3AndABaselineFileRoundTrips() throws {
        let directory = try TemporaryDirectory("drive-baseline")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"], directory: directory.path)
        let common = ["drive", "message-storm", "--members", "5", "--count", "40", "--concurrency", "8", "--transport", "apns",
                      "--h2c", "--gateway", serve.baseURL] + credentialArguments(credentials, gateway: serve.baseURL)
        let baseline = directory.file("baseline.json")
        let first = try pushproof(common + ["--save-baseline", baseline, "--quiet"])
        #expect(first.status == 0, "\(first.output)\n\(first.error)")
        #expect(first.output.isEmpty, "--quiet prints no report")
        let junit = directory.file("baseline.xml")
        let second = try pushproof(common + ["--baseline", baseline, "--baseline-rules", "throughput>=1000x", "--junit", junit])
        let missing = try pushproof(common + ["--baseline", directory.file("nope.json")])
        serve.stop()
        #expect(second.status == 3, "\(second.output)\n\(second.error)")
        #expect(try String(contentsOfFile: junit, encoding: .utf8).contains(#"name="baseline throughput&gt;=1000x""#))
        #expect(second.output.contains("baseline 'message-storm'"))
        #expect(missing.status == 2)
        #expect(missing.error.contains("nope.json"))
        let saved = try readJSON(baseline)
        // 40 messages, each to the 4 other members' alert tokens (APNs only).
        #expect(saved["counts"]?["delivered"] == 160)
        #expect(saved["counts"]?["fan_outs"] == 40)
    }

    /// `--metrics-out` (into a folder that does not exist yet): a JSON line a second while the
    /// run goes, the last marked final and counting every push the report counts.
    @Test func metricsOutWritesALineASecondAndAFinalOne() throws {
        let directory = try TemporaryDirectory("drive-metrics")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"], directory: directory.path)
        let metrics = directory.file("out/metrics.jsonl")
        let json = directory.file("storm.json")
        let result = try pushproof(["drive", "message-storm", "--members", "4", "--rate", "50", "--duration", "2.5",
                                    "--h2c", "--gateway", serve.baseURL, "--json", json, "--metrics-out", metrics]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        let lines = try String(contentsOfFile: metrics, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
        #expect(lines.count >= 3, "one a second over 2.5 s, and the final one: \(lines.count)")
        #expect(lines.dropLast().allSatisfy { $0["final"] == nil } && lines.last?["final"] == true)
        let pushes = lines.compactMap { $0["pushes"]?.intValue }
        #expect(pushes == pushes.sorted(), "pushes only grow")
        #expect(lines.contains { ($0["pushes_per_s"]?.doubleValue ?? 0) > 0 && $0["p99_ms"] != nil })
        #expect(pushes.last == (try readJSON(json))["counts"]?["completed"]?.intValue, "the final line has every push")
    }

    /// A `--metrics-out` that cannot be written is an I/O error naming it, before anything is sent.
    @Test func aMetricsOutThatCannotBeWrittenIsAnIOErrorBeforeTheRun() throws {
        let directory = try TemporaryDirectory("drive-metrics-bad")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"], directory: directory.path)
        let notAFolder = try directory.write("plain-file", "x")
        let result = try pushproof(["drive", "message-storm", "--members", "3", "--rate", "10", "--duration", "1",
                                    "--h2c", "--gateway", serve.baseURL, "--metrics-out", notAFolder + "/metrics.jsonl"]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        let requests = try curl(["-s", serve.adminURL + "/status"])
        serve.stop()
        #expect(result.status == 2, "\(result.output)\n\(result.error)")
        #expect(result.error.contains("--metrics-out") && result.error.contains("plain-file"), "\(result.error)")
        #expect((try JSONParser.parse(requests.output))["requests"] == 0, "nothing was sent")
    }

    /// A message storm is messages: --rate 200 for 1 s is 200 messages, each fanned out by the
    /// rules to the 5 other members' alert and Android tokens.
    @Test func anOpenModelMessageStormSendsEveryMessageDueInItsDurationToEveryMember() throws {
        let directory = try TemporaryDirectory("drive-open")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"], directory: directory.path)
        let json = directory.file("storm.json")
        let result = try pushproof(["drive", "message-storm", "--members", "6", "--rate", "200", "--duration", "1",
                                    "--h2c", "--gateway", serve.baseURL, "--json", json]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        let report = try readJSON(json)
        #expect(report["model"]?["kind"] == "open")
        #expect(report["counts"]?["iterations"] == 200)
        #expect(report["counts"]?["sent"] == 2000)
        #expect(report["counts"]?["delivered"] == 2000)
        #expect(report["counts"]?["fan_outs_fully_delivered"] == 200)
        #expect(report["counts"]?["dropped_iterations"] == 0)
        #expect(report["notes"]?.arrayValue?.contains { $0.stringValue?.hasPrefix("noise:") == true } == true)
        #expect(report["sender"]?["delivery_threads"] == 1)
        #expect(report["sender_under_test"]?["name"] == "pushproof reference")
        #expect(report["sender_under_test"]?["gateway_shares_machine"] == true, "serve on loopback")
        #expect(result.output.contains("sender: pushproof reference "))
    }

    @Test(arguments: [
        ["drive"],
        ["drive", "flood"],
        ["drive", "ring-fanout", "--count", "1"],  // no credentials: a dry run measures nothing
        ["drive", "message-storm", "--rate", "10", "--count", "5"],
        ["drive", "ring-fanout", "--threshold", "p99<1"],
        ["drive", "ring-fanout", "--threshold", "p99_ms<abc"],
        ["drive", "message-storm", "--rate", "-5"],
        ["drive", "ring-fanout", "--gone-tokens", "2"],
        ["drive", "ring-fanout", "--transport", "sms"],
        ["drive", "message-storm", "--baseline-rules", "throughput>=0.9x"],
        ["drive", "message-storm", "--concurrency", "5"],
    ])
    func usageErrorsExit64(_ arguments: [String]) throws {
        let withKey = arguments.count > 1 && arguments != ["drive", "ring-fanout", "--count", "1"]
        let full = arguments + (withKey ? ["--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"] : [])
        let result = try pushproof(full)
        #expect(result.status == 64, "\(full): \(result.output)\(result.error)")
        #expect(!result.error.isEmpty)
    }
}
