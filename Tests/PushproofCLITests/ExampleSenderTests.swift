// The example sender (examples/python-sender: Python's standard library, the curl and openssl
// command lines) through `pushproof run --sender-cmd`, end to end through the binary: it passes
// the golden scenarios of the products it implements, and each of its seeded bugs makes `run`
// fail with the finding that names that bug and nothing else.
import Foundation
import JSON
import PushproofTestSupport
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
private let example = repository + "/examples/python-sender"

/// The adapter command, with `bug` switched on through the environment variable it reads.
private func senderCommand(bug: String? = nil) -> String {
    (bug.map { "PUSHPROOF_EXAMPLE_BUG=\($0) " } ?? "") + "python3 '\(example)/adapter.py'"
}

/// Runs `scenarios` through the example sender; the parsed `--json` report and the exit status.
/// The example answers an event once its pushes are answered, so an event still short of its
/// expected count a second after is short for good: a seeded bug's run need not wait the
/// default 10 s for each missing push.
private func runExample(_ scenarios: [String], bug: String? = nil) throws -> (status: Int32, report: JSONValue, output: String) {
    let directory = try TemporaryDirectory("example-sender")
    let json = directory.file("report.json")
    let result = try pushproof(["run"] + scenarios + ["--specs", specsDirectory, "--json", json, "--event-timeout-ms", "1000",
                                                      "--sender-cmd", senderCommand(bug: bug)],
                               directory: directory.path)
    let data = (try? Data(contentsOf: URL(fileURLWithPath: json))) ?? Data()
    let report = (try? JSONParser.parse(Array(data))) ?? .null
    return (result.status, report, result.output + result.error)
}

/// Every problem the report lists, over all scenarios and events.
private func problems(_ report: JSONValue) -> [JSONValue] {
    (report["scenarios"]?.arrayValue ?? []).flatMap { scenario in
        (scenario["events"]?.arrayValue ?? []).flatMap { $0["problems"]?.arrayValue ?? [] }
    }
}

private func problemKinds(_ report: JSONValue) -> Set<String> { Set(problems(report).compactMap { $0["kind"]?.stringValue }) }

private func problemMessages(_ report: JSONValue) -> [String] { problems(report).compactMap { $0["message"]?.stringValue } }

/// The scenario file at `path` without its `expect` (the reference rules become the oracle),
/// and with `app: true` a made-up app of the team's own (`com.acme.<product>`).
private func withoutExpect(_ path: String, app: Bool) throws -> String {
    guard case .object(var root) = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))) else { return "" }
    root["expect"] = nil
    if app, let product = root["product"]?.stringValue {
        root["app"] = ["bundle_id": .string("com.acme.\(product)"), "fcm_project": .string("acme-\(product)")]
    }
    return JSONValue.object(root).serialized()
}

private func scenario(_ name: String) -> String {
    name.hasPrefix("examples/") ? repository + "/" + name : specsDirectory + "/scenarios/" + name + ".json"
}

@Suite(.serialized) struct ExampleSenderTests {
    /// The example's own unit tests (rules, answer classification, retries, the protocol loop;
    /// no gateway) pass.
    /// The README's 10-minute path: the adapter skeleton speaks the protocol as it stands and
    /// sends nothing, so its own-app scenario runs and fails on exactly the two missing pushes;
    /// the reference sender passes the same file.
    @Test func theAdapterSkeletonRunsAndMissesEveryPushUntilItIsFilledIn() throws {
        let skeleton = repository + "/examples/adapter-skeleton"
        let directory = try TemporaryDirectory("adapter-skeleton")
        let json = directory.file("report.json")
        let result = try pushproof(["run", skeleton + "/my-app.json", "--specs", specsDirectory, "--json", json,
                                    "--event-timeout-ms", "500", "--sender-cmd", "python3 adapter.py"], directory: directory.path)
        #expect(result.status == 1, "\(result.output)\(result.error)")
        #expect(result.output.contains("sender my sender 0.0.1, oracle: reference rules"), "\(result.output)")
        #expect(result.output.contains("missing: concierge.reply.apns to ana/ana-iphone"))
        #expect(result.output.contains("missing: concierge.reply.fcm to ana/ana-android"))
        #expect(result.output.contains("1 scenario, 1 event: 1 scenario failed, 1 event failed"), "\(result.output)")
        #expect(result.error.contains("[sender] adapter: setup: 1 people of com.acme.shop"), "\(result.error)")
        let problems = problems(try readJSON(json))
        #expect(problems.count == 2, "\(problems)")
        let reference = try pushproof(["run", skeleton + "/my-app.json", "--specs", specsDirectory], directory: directory.path)
        #expect(reference.status == 0, "\(reference.output)\(reference.error)")
        #expect(reference.output.contains("1 scenario, 1 event: all passed"), "\(reference.output)")
    }

    @Test func itsPythonUnitTestsPass() throws {
        let result = try runTool("/usr/bin/env", ["python3", "-m", "unittest", "discover", "-s", "tests"], currentDirectory: example)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(result.error.contains("OK"), "unittest reports on stderr: \(result.error)")
    }

    /// The example implements all three products completely, so every golden scenario is its:
    /// none is skipped. One `run` plays them all (one adapter process a scenario).
    @Test func passesEveryGoldenScenario() throws {
        let golden = try FileManager.default.contentsOfDirectory(atPath: specsDirectory + "/scenarios")
            .filter { $0.hasSuffix(".json") }.sorted().map { specsDirectory + "/scenarios/" + $0 }
        #expect(golden.count >= 30)
        let result = try runExample(golden + [scenario("examples/python-sender/scenarios/transient-503.json"),
                                              scenario("examples/python-sender/scenarios/retry-after-429.json")])
        let scenarios = result.report["scenarios"]?.arrayValue ?? []
        #expect(scenarios.count == golden.count + 2, "\(result.output)")
        for entry in scenarios where entry["passed"]?.boolValue != true {
            let messages = (entry["events"]?.arrayValue ?? []).flatMap { $0["problems"]?.arrayValue ?? [] }
                .compactMap { $0["message"]?.stringValue }
            Issue.record("\(entry["name"]?.stringValue ?? "?"): aborted \(entry["aborted"]?.stringValue ?? "no"), \(messages)")
        }
        #expect(result.status == 0, "\(result.output.suffix(3000))")
        #expect(scenarios.allSatisfy { $0["sender"]?.stringValue?.contains("teamsender") == true },
                "the report names the adapter's sender: \(scenarios.first?["sender"] ?? .null)")
    }

    /// Without `expect` the reference rules are the oracle, and what every push says is
    /// compared with theirs: the correct example says the same on every golden scenario (no
    /// false positive), and with each scenario's own app too.
    @Test func passesEveryGoldenScenarioWithTheReferenceRulesAsOracleAndItsOwnApp() throws {
        let directory = try TemporaryDirectory("no-expect")
        let golden = try FileManager.default.contentsOfDirectory(atPath: specsDirectory + "/scenarios").filter { $0.hasSuffix(".json") }.sorted()
        let files = try golden.map { name in
            try directory.write(name, try withoutExpect(specsDirectory + "/scenarios/" + name, app: true))
        }
        let result = try runExample(files)
        let scenarios = result.report["scenarios"]?.arrayValue ?? []
        #expect(scenarios.count == golden.count, "\(result.output.suffix(2000))")
        #expect(scenarios.allSatisfy { $0["oracle"]?.stringValue == "reference rules" })
        for entry in scenarios where entry["passed"]?.boolValue != true {
            let messages = (entry["events"]?.arrayValue ?? []).flatMap { $0["problems"]?.arrayValue ?? [] }
                .compactMap { $0["message"]?.stringValue }
            Issue.record("\(entry["name"]?.stringValue ?? "?"): \(messages)")
        }
        #expect(result.status == 0, "\(result.output.suffix(3000))")
    }

    struct SeededBug: CustomTestStringConvertible, Sendable {
        var name: String
        var scenario: String
        /// The problem kinds `run` must report: these and no others.
        var findings: Set<String>
        /// Words one of the problems must say: the device or field the bug is about.
        var says: String
        /// Played without the scenario's `expect`: the reference rules are the oracle.
        var withoutExpect = false
        var testDescription: String { name }
    }

    static let bugs: [SeededBug] = [
        SeededBug(name: "author-notified", scenario: "yama-01-room-message", findings: ["unexpected"],
                  says: "unexpected: yama.message.apns to alice/a-iphone"),
        SeededBug(name: "muted-notified", scenario: "yama-03-muted-room", findings: ["unexpected"], says: "unexpected: yama.message.apns"),
        SeededBug(name: "dnd-notified", scenario: "yama-02-dnd", findings: ["unexpected"],
                  says: "unexpected: yama.message.apns to carol/c-iphone"),
        // The ring on the alert token is a wrong token, and so the PushKit ring is missing.
        SeededBug(name: "ring-to-alert-token", scenario: "poolse-01-ring-group", findings: ["wrong_token", "missing"],
                  says: "wrong token: poolse.ring.apns went to bob/b-ios"),
        // The push breaks its spec ("FCM turns every value into a string"), and FCM refuses it (400).
        SeededBug(name: "number-in-fcm-data", scenario: "poolse-01-ring-group", findings: ["spec_violation", "missing"],
                  says: "at /body/message/data/ring_deadline: expected string, found number"),
        SeededBug(name: "keep-gone-token", scenario: "poolse-25-gone-token", findings: ["dead_token_push", "store_mismatch"],
                  says: "a push to a dead token: carol/c-android"),
        SeededBug(name: "delete-on-503", scenario: "examples/python-sender/scenarios/transient-503.json",
                  findings: ["dropped_on_transient", "store_mismatch", "missing"], says: "token dropped on a transient error"),
        SeededBug(name: "retry-whole-batch", scenario: "examples/python-sender/scenarios/transient-503.json", findings: ["duplicate"],
                  says: "duplicate: yama.message.apns"),
        SeededBug(name: "no-apns-expiration", scenario: "poolse-01-ring-group", findings: ["spec_violation"],
                  says: "at /headers/apns-expiration: apns-expiration is required"),
        // A retry storm: the 429's Retry-After: 1 is not waited for.
        SeededBug(name: "ignore-retry-after", scenario: "examples/python-sender/scenarios/retry-after-429.json", findings: ["retry_too_soon"],
                  says: "with Retry-After: 1 (wait at least 1 s)"),
        // Content bugs: every push fits its spec and says the wrong thing. Only the reference
        // rules as oracle catch them.
        SeededBug(name: "app-name-title", scenario: "concierge-01-team-names-on", findings: ["content"],
                  says: "content: concierge.reply.apns to ana/ana-iphone (request #", withoutExpect: true),
        SeededBug(name: "unread-counts-new-twice", scenario: "poolse-16-message-group", findings: ["content"],
                  says: "/body/aps/badge is 2, expected 1", withoutExpect: true),
        SeededBug(name: "customer-as-conversation-id", scenario: "concierge-01-team-names-on", findings: ["content"],
                  says: "/body/aps/thread-id is \"cnv_ana\", expected \"cnv_1\"", withoutExpect: true),
        SeededBug(name: "collapse-replies", scenario: "concierge-01-team-names-on", findings: ["content"],
                  says: "/headers/apns-collapse-id is \"cnv_1\", expected nothing", withoutExpect: true),
        SeededBug(name: "ring-ended-always-finished", scenario: "poolse-04-cancelled", findings: ["content"],
                  says: "/body/message/data/reason is \"finished\", expected \"cancelled\"", withoutExpect: true),
    ]

    @Test(arguments: bugs)
    func eachSeededBugIsCaughtWithItsFinding(_ bug: SeededBug) throws {
        let directory = try TemporaryDirectory("seeded-bug")
        let file = bug.withoutExpect ? try directory.write("\(bug.scenario).json", try withoutExpect(scenario(bug.scenario), app: false))
            : scenario(bug.scenario)
        let result = try runExample([file], bug: bug.name)
        #expect(result.status == 1, "\(bug.name): run must fail\n\(result.output.suffix(3000))")
        #expect(result.report["scenarios"]?[0]?["aborted"] == .null, "\(result.output.suffix(2000))")
        #expect(problemKinds(result.report) == bug.findings, "\(bug.name)\n\(result.output.suffix(3000))")
        #expect(problemMessages(result.report).contains { $0.contains(bug.says) }, "\(bug.name)\n\(result.output.suffix(3000))")
    }
}
