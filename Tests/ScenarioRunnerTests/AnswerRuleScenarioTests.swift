import Foundation
import JSON
import MockGateway
import Scenario
import ScenarioRunner
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// poolse-25 (Carol's Android token gone) with its `gateway` section replaced.
private func goneTokenScenario(gateway: JSONValue?) throws -> Scenario {
    let path = repository.appendingPathComponent("Specs/scenarios/poolse-25-gone-token.json").path
    var document = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))).objectValue ?? [:]
    document["gateway"] = gateway
    return try Scenario(json: Array(JSONValue.object(document).serialized().utf8), name: "poolse-25-by-rule")
}

@Suite(.serialized) struct AnswerRuleScenarioTests {
    /// An answer rule in `gateway.answer_rules` says Carol's Android token is gone, as the token
    /// state did: the reference sender sees FCM's 404 UNREGISTERED, drops the token, and every
    /// event passes. Without it, she gets the pushes the expectations say she must not.
    @Test func aGoneRuleMakesTheReferenceSenderCleanUpTheToken() async throws {
        let judge = try SpecJudge(directory: repository.appendingPathComponent("Specs").path)
        let ruled = try goneTokenScenario(gateway: ["answer_rules": [
            ["name": "carol-android-gone", "match": ["device": "c-android"], "answer": ["status": 410]],
        ]])
        #expect(ruled.tokenStates.isEmpty)
        let report = try await ScenarioRunner.run(ruled, judge: judge, sender: ReferenceSender())
        #expect(report.aborted == nil)
        #expect(report.events.count == 2)
        for event in report.events {
            #expect(event.passed, "event \(event.index) \(event.type): \(event.problems.map(\.message))")
        }

        let unruled = try goneTokenScenario(gateway: nil)
        let failing = try await ScenarioRunner.run(unruled, judge: judge, sender: ReferenceSender())
        #expect(failing.events.contains { !$0.passed })
    }

    @Test func aRuleNamesADeviceOfThePopulationAndTheGatewayChecksTheRest() async throws {
        let unknown = #expect(throws: JSONFieldError.self) {
            try goneTokenScenario(gateway: ["answer_rules": [["name": "x", "match": ["device": "zed"], "answer": ["status": 410]]]])
        }
        #expect(unknown?.description == #"gateway.answer_rules[0].match.device: unknown device "zed""#)
        let wrong = try goneTokenScenario(gateway: ["answer_rules": [["name": "x", "answer": ["status": 418]]]])
        let judge = try SpecJudge(directory: repository.appendingPathComponent("Specs").path)
        let error = await #expect(throws: GatewayStartError.self) {
            _ = try await ScenarioRunner.run(wrong, judge: judge, sender: ReferenceSender())
        }
        #expect(error?.description.hasPrefix("gateway.answer_rules[0].answer.status: without a route") == true, "\(error?.description ?? "")")
    }
}
