// `pushproof drive --scenario` and `plan --scenario` end to end: a generated scenario through
// the reference sender against the embedded gateway, in the Driver's reports.
import Foundation
import JSON
@testable import PushproofCLI
import Driver
import PushproofTestSupport
import Testing

/// 40 people with PushKit and alert tokens, half with Android; 10% of tokens gone: a call
/// rung and cancelled, and a message.
private let generated = """
{"format": 1, "product": "poolse",
 "generate": {"people": 40, "seed": 9, "devices": {"voip": 1, "alert": 1, "android": 0.5}, "gone": 0.1, "name": "Load"},
 "events": [
  {"type": "call.placed", "call": "k1", "conversation": "c0", "caller": "p0", "media": "audio"},
  {"type": "call.ended", "call": "k1", "reason": "cancelled"},
  {"type": "message.sent", "conversation": "c0", "message": "m1", "sender": "p1", "text": "hi"}
 ]}
"""

private func writeScenario(in directory: TemporaryDirectory) throws -> String {
    let path = directory.file("load.json")
    try Data(generated.utf8).write(to: URL(fileURLWithPath: path))
    return path
}

@Suite(.serialized) struct DriveScenarioLiveTests {
    @Test func aScenarioDriveCountsEveryPushTimesItAndJudgesTheCleanup() throws {
        let directory = try TemporaryDirectory("drive-scenario")
        let json = directory.file("report.json"), html = directory.file("report.html")
        let result = try pushproof(["drive", "--scenario", try writeScenario(in: directory), "--rate", "20", "--specs", specsDirectory,
                                    "--json", json, "--html", html, "--threshold", "tokens_removed>=1", "--threshold", "error_rate==0"])
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        #expect(!result.error.contains("\r") && !result.error.contains("elapsed"), "no progress line when stderr is not a TTY")
        let report = try readJSON(json)
        let sent = report["counts"]?["sent"]?.intValue ?? 0
        #expect(sent > 80)
        #expect(report["counts"]?["completed"]?.intValue == sent)
        #expect(report["counts"]?["iterations"] == 3)
        #expect(report["latency_ns"]?["count"]?.intValue == sent, "a latency per push")
        #expect((report["counts"]?["tokens_removed"]?.intValue ?? 0) >= 1)
        #expect(report["token_cleanup"]?["passed"] == true)
        #expect(report["token_cleanup"]?["rules"]?.arrayValue?.count == 4)
        #expect(report["sender_under_test"]?["name"] == "pushproof reference")
        #expect(report["sender_under_test"]?["version"]?.stringValue == PushproofCommand.version)
        #expect(report["sender_under_test"]?["gateway_shares_machine"] == true)
        #expect(result.output.contains("sender: pushproof reference \(PushproofCommand.version); the gateway shared its machine"))
        #expect(report["passed"] == true)
        #expect(try String(contentsOfFile: html, encoding: .utf8).contains("sender: pushproof reference"))
        // The report is a baseline like any drive report.
        let baseline = try RunSummary(jsonText: String(contentsOfFile: json, encoding: .utf8))
        #expect(baseline.sender?.name == "pushproof reference")
    }

    /// `--stages` paces the events as k6's ramping-arrival-rate would: 0 -> 2 events/s over
    /// 1 s calls for one event, so the second and third are not played, and the report says so.
    @Test func aScenarioDriveOnStagesPlaysTheEventsTheRampHasTimeFor() throws {
        let directory = try TemporaryDirectory("drive-scenario-stages")
        let json = directory.file("report.json")
        let result = try pushproof(["drive", "--scenario", try writeScenario(in: directory), "--stages", "1s:2", "--specs", specsDirectory,
                                    "--json", json])
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        #expect(result.output.contains("open, events ramping 0/s, 2/s over 1s"), "\(result.output)")
        let report = try readJSON(json)
        #expect(report["counts"]?["iterations"] == 1)
        #expect(report["model"]?["description"] == "open ramping 0/s, 2/s over 1s")
        #expect(report["model"]?["rate_per_s"] == 2)
        let notes = report["notes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(notes.contains("2 of 3 events not played: the stages end first"), "\(notes)")
        #expect(notes.contains { $0.hasPrefix("pushproof's own work: each event's expected pushes took ") }, "\(notes)")
    }

    /// `--abort-on-fail`: a scenario whose `expect` calls for no push makes every push
    /// unexpected, so `unexpected==0` (a scenario run's default) fails for good at the first;
    /// the run stops long before its 10 s of events and says why.
    @Test func abortOnFailStopsAScenarioRunAtTheFirstBreach() throws {
        let directory = try TemporaryDirectory("drive-scenario-abort")
        let events = (0..<200).map { #"{"type": "message.sent", "conversation": "c0", "message": "m\#($0)", "sender": "p1", "text": "hi"}"# }
        let path = directory.file("abort.json")
        try Data("""
            {"format": 1, "product": "poolse", "generate": {"people": 20, "seed": 3, "devices": {"alert": 1}},
             "events": [\(events.joined(separator: ","))], "expect": []}
            """.utf8).write(to: URL(fileURLWithPath: path))
        let json = directory.file("report.json")
        let started = Date()
        let result = try pushproof(["drive", "--scenario", path, "--rate", "20", "--specs", specsDirectory, "--abort-on-fail", "--json", json])
        #expect(result.status == 3, "\(result.output)\n\(result.error)")
        #expect(Date().timeIntervalSince(started) < 9, "stopped before the schedule's 10 s")
        let report = try readJSON(json)
        #expect((report["counts"]?["iterations"]?.intValue ?? 200) < 200)
        let notes = report["notes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(notes.contains { $0.hasPrefix("aborted after") && $0.contains("(--abort-on-fail): unexpected==0 failed") }, "\(notes)")
        #expect(notes.contains { $0.hasSuffix("events not played: the run was cancelled") }, "\(notes)")
    }

    /// The same scenario through the reference sender behind the adapter protocol: the same
    /// pushes, and the report names the sender its `hello` gave.
    @Test func aScenarioDriveThroughAnAdapterCountsTheSamePushes() throws {
        let directory = try TemporaryDirectory("drive-scenario-adapter")
        let scenario = try writeScenario(in: directory)
        let inProcess = directory.file("in-process.json"), adapter = directory.file("adapter.json")
        let first = try pushproof(["drive", "--scenario", scenario, "--specs", specsDirectory, "--json", inProcess, "--quiet"])
        let second = try pushproof(["drive", "--scenario", scenario, "--specs", specsDirectory, "--json", adapter, "--quiet",
                                    "--sender-cmd", "'\(pushproofExecutable())' adapter"])
        #expect(first.status == 0, "\(first.output)\n\(first.error)")
        #expect(second.status == 0, "\(second.output)\n\(second.error)")
        let a = try readJSON(inProcess), b = try readJSON(adapter)
        #expect(a["counts"]?["sent"] != nil)
        #expect(a["counts"]?["sent"] == b["counts"]?["sent"])
        #expect(a["counts"]?["delivered"] == b["counts"]?["delivered"])
        #expect(a["counts"]?["tokens_removed"] == b["counts"]?["tokens_removed"])
        #expect(b["token_cleanup"]?["passed"] == true)
        #expect(b["sender_under_test"]?["name"] == "pushproof reference", "named by its hello")
        #expect(b["sender_under_test"]?["version"]?.stringValue == PushproofCommand.version)
    }

    @Test func aScenarioPlanRingsTheScenariosPeopleAndNamesTheSender() throws {
        let directory = try TemporaryDirectory("plan-scenario")
        let json = directory.file("plan.json")
        let result = try pushproof(["plan", "--scenario", try writeScenario(in: directory), "--specs", specsDirectory,
                                    "--calls", "1", "--within-ms", "600000", "--json", json])
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        let plan = try readJSON(json)
        #expect(plan["members"] == 40)
        #expect(plan["plan"]?["meets_target"] == true)
        #expect(plan["setups"]?[0]?["undelivered"] == 0)
        #expect(plan["sender_under_test"]?["name"] == "pushproof reference")
        #expect(result.output.contains("pushproof reference as configured"))
    }

    /// `--gateway`: the scenario's pushes go to a `pushproof serve` and are read back from its
    /// journal (one long-polling follower); the counts are those of the embedded gateway.
    @Test func aScenarioDriveAndPlanAgainstServeReadArrivalsFromItsJournal() throws {
        let directory = try TemporaryDirectory("drive-scenario-external")
        let (serve, credentials) = try serveTrustingCredentials(in: directory, ["--specs", specsDirectory])
        defer { _ = serve.stop() }
        let certificate = try #require(serve.certificatePath)
        let scenario = try writeScenario(in: directory)
        let external = ["--gateway", serve.baseURL, "--admin", serve.adminURL, "--ca", certificate]
            + credentialArguments(credentials, gateway: serve.baseURL)
        let embeddedJSON = directory.file("embedded.json"), externalJSON = directory.file("external.json")
        let embedded = try pushproof(["drive", "--scenario", scenario, "--specs", specsDirectory, "--json", embeddedJSON, "--quiet"])
        // One event at a time, as the embedded run plays them: at 20 events/s on a loaded machine the
        // call's end could start before the ring's gone tokens were cleaned up, and push to them again.
        let drive = try pushproof(["drive", "--scenario", scenario, "--rate", "20", "--events-in-flight", "1", "--specs", specsDirectory,
                                   "--json", externalJSON] + external, directory: directory.path)
        #expect(embedded.status == 0, "\(embedded.output)\n\(embedded.error)")
        #expect(drive.status == 0, "\(drive.output)\n\(drive.error)")
        #expect(drive.output.contains("against the gateway at \(serve.baseURL)"))
        let a = try readJSON(embeddedJSON), b = try readJSON(externalJSON)
        let sent = b["counts"]?["sent"]?.intValue ?? 0
        #expect(sent > 80)
        #expect(b["counts"]?["sent"] == a["counts"]?["sent"])
        #expect(b["counts"]?["completed"]?.intValue == sent, "every push read back from the journal")
        #expect(b["counts"]?["tokens_removed"] == a["counts"]?["tokens_removed"])
        #expect(b["latency_ns"]?["count"]?.intValue == sent)
        #expect(b["token_cleanup"]?["passed"] == true)
        #expect(b["unexpected_pushes"] == 0)
        #expect(b["sender_under_test"]?["gateway_shares_machine"] == true, "serve is on loopback")
        let pushes = try JSONParser.parse(try curl(["-sS", serve.adminURL + "/requests/count?route=fcm"]).output)
        #expect((pushes["count"]?.intValue ?? 0) > 0, "the pushes reached serve")

        let planJSON = directory.file("plan.json")
        let plan = try pushproof(["plan", "--scenario", scenario, "--specs", specsDirectory, "--calls", "1", "--within-ms", "600000",
                                  "--json", planJSON] + external, directory: directory.path)
        #expect(plan.status == 0, "\(plan.output)\n\(plan.error)")
        #expect(try readJSON(planJSON)["setups"]?[0]?["undelivered"] == 0)
    }

    /// A serve without --specs records no spec ids to match arrivals by: refused, saying so.
    @Test func aScenarioDriveAgainstAServeThatJudgesNothingIsRefused() throws {
        let directory = try TemporaryDirectory("drive-scenario-nospecs")
        let (serve, credentials) = try serveTrustingCredentials(in: directory, [])
        defer { _ = serve.stop() }
        let certificate = try #require(serve.certificatePath)
        let result = try pushproof(["drive", "--scenario", try writeScenario(in: directory), "--specs", specsDirectory, "--quiet",
                                    "--gateway", serve.baseURL, "--admin", serve.adminURL, "--ca", certificate]
                                   + credentialArguments(credentials, gateway: serve.baseURL), directory: directory.path)
        #expect(result.status == 1)
        #expect(result.error.contains("start pushproof serve with --specs"), "\(result.error)")
    }

    @Test(arguments: [
        ["drive", "--scenario", "s.json", "--members", "5"],
        ["drive", "--scenario", "s.json", "--events-in-flight", "0"],
        ["drive", "ring-fanout", "--events-in-flight", "4"],
        ["plan", "--events-in-flight", "4", "--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"],
        ["drive", "--scenario", "s.json", "--admin", "http://127.0.0.1:1"],
        ["drive", "--scenario", "s.json", "--gateway", "http://127.0.0.1:1"],
        ["drive", "ring-fanout", "--scenario", "s.json"],
        ["drive", "ring-fanout", "--settle-ms", "5", "--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"],
        ["drive", "--scenario", "s.json", "--sender", "mine"],
        ["plan", "--scenario", "s.json", "--members", "5"],
        ["plan", "--specs", "Specs", "--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"],
        ["drive", "--scenario", "s.json", "--stages", "10s:5", "--rate", "3"],
        ["drive", "--scenario", "s.json", "--stages", "10x:5"],
        ["drive", "--scenario", "s.json", "--stages", "10s:0"],
        ["drive", "--scenario", "s.json", "--start-rate", "5"],
        ["drive", "--scenario", "s.json", "--segment", "1/3", "--sender-cmd", "python3 adapter.py"],
        ["drive", "--scenario", "s.json", "--segment", "3/3", "--rate", "5"],
        ["drive", "message-storm", "--stages", "10s:5", "--count", "3", "--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"],
        ["drive", "message-storm", "--stages", "10s:5", "--duration", "3", "--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"],
    ])
    func scenarioUsageErrorsExit64(_ arguments: [String]) throws {
        let result = try pushproof(arguments)
        #expect(result.status == 64, "\(arguments): \(result.output)\(result.error)")
        #expect(!result.error.isEmpty)
    }

    @Test func noProgressWithoutATerminalOrWithQuiet() {
        let counters = ProgressCounters(total: 1, plannedSeconds: nil)
        #expect(TerminalProgress.start(counters, unit: "events", quiet: false, isTerminal: false) == nil)
        #expect(TerminalProgress.start(counters, unit: "events", quiet: true, isTerminal: true) == nil)
    }
}
