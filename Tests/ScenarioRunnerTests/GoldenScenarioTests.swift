import Foundation
import MockGateway
import PushproofTestSupport
import Scenario
import ScenarioRunner
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
private let specs = repository.appendingPathComponent("Specs").path
private let scenarioDirectory = repository.appendingPathComponent("Specs/scenarios").path

private let goldenFiles: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: scenarioDirectory)) ?? [])
    .filter { $0.hasSuffix(".json") }.sorted()

/// Every golden scenario (expectations derived by hand from the seeds) played through the
/// reference sender against the embedded gateway: each event must pass; and again through
/// `pushproof adapter`, the same sender behind the adapter protocol, with the same verdicts.
@Suite(.serialized) struct GoldenScenarioTests {
    @Test func thereAreAtLeastThirty() {
        #expect(goldenFiles.count >= 30)
    }

    @Test(arguments: goldenFiles)
    func passesThroughTheReferenceSender(_ file: String) async throws {
        let path = scenarioDirectory + "/" + file
        let scenario = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: path))), name: file)
        #expect(scenario.expectations != nil, "a golden scenario states its own expectations")
        let judge = try SpecJudge(directory: specs)
        let report = try await ScenarioRunner.run(scenario, judge: judge, sender: ReferenceSender())
        #expect(report.aborted == nil)
        #expect(report.events.count == scenario.events.count)
        for event in report.events {
            #expect(event.passed, "\(file) event \(event.index) \(event.type): \(event.problems.map(\.message))")
        }

        let adapter = AdapterSender(AdapterLaunch(command: "'\(pushproofExecutable())' adapter", directory: scenarioDirectory))
        let throughAdapter = try await ScenarioRunner.run(scenario, judge: judge, sender: adapter)
        #expect(throughAdapter.sender == "pushproof reference \(adapter.hello?.version ?? "?")")
        #expect(Verdicts(throughAdapter) == Verdicts(report), "\(file): through the adapter protocol")
    }

    /// A team's own app: the golden scenario with a bundle id and FCM project no spec set lists
    /// passes all the same, through the reference sender and `pushproof adapter`. The
    /// scenario's product claims its app, and its pushes are judged by that product's specs.
    @Test(arguments: goldenFiles)
    func passesWithTheTeamsOwnApp(_ file: String) async throws {
        let path = scenarioDirectory + "/" + file
        var scenario = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: path))), name: file)
        scenario.bundleID = "com.acme.\(scenario.product.rawValue)"
        scenario.fcmProject = "acme-\(scenario.product.rawValue)"
        let judge = try SpecJudge(directory: specs)
        let report = try await ScenarioRunner.run(scenario, judge: judge, sender: ReferenceSender())
        #expect(report.aborted == nil)
        for event in report.events {
            #expect(event.passed, "\(file) event \(event.index) \(event.type): \(event.problems.map(\.message))")
            #expect(event.delivered.allSatisfy { $0.spec != nil }, "\(file) event \(event.index): every push judged by a spec")
        }
        let adapter = AdapterSender(AdapterLaunch(command: "'\(pushproofExecutable())' adapter", directory: scenarioDirectory))
        let throughAdapter = try await ScenarioRunner.run(scenario, judge: judge, sender: adapter)
        #expect(Verdicts(throughAdapter) == Verdicts(report), "\(file): through the adapter protocol")
    }

    /// Without `expect`, the reference rules are the oracle, and the reference sender agrees
    /// with itself; a gone token is still judged from outside.
    @Test func withoutExpectTheReferenceRulesAreTheOracle() async throws {
        var scenario = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: scenarioDirectory + "/poolse-25-gone-token.json"))),
                                    name: "oracle")
        scenario.expectations = nil
        let report = try await ScenarioRunner.run(scenario, judge: try SpecJudge(directory: specs), sender: ReferenceSender())
        #expect(report.oracle == "reference rules")
        #expect(report.passed, "\(report.events.flatMap(\.problems).map(\.message))")
        #expect(report.events[1].expected.count == 6)
    }
}

/// What a report judged, without the sender's name or the gateway's sequence numbers (the
/// pushes of one event may arrive in another order).
private struct Verdicts: Equatable {
    struct Event: Equatable {
        var index: Int
        var type: String
        var passed: Bool
        var expected: [String]
        var delivered: [String]
        var problems: [String]
        var tokensDied: [String]
    }
    var aborted: String?
    var events: [Event]

    init(_ report: ScenarioReport) {
        aborted = report.aborted
        events = report.events.map { event in
            Event(index: event.index, type: event.type, passed: event.passed,
                  expected: event.expected.map { "\($0.device) \($0.specName)" }.sorted(),
                  delivered: event.delivered.map { "\($0.device) \($0.spec ?? "-")" }.sorted(),
                  problems: event.problems.map(\.message).sorted(),
                  tokensDied: event.tokensDied.map { "\($0.device) \($0.answer)" })
        }
    }
}
