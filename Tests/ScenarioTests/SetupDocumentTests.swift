// The adapter protocol's `setup` scenario and its events one at a time: read back, they are
// the scenario the file decoder reads, for every golden scenario and a generated population.
import Foundation
import JSON
import Scenario
import Testing

private let scenarioDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Specs/scenarios").path

@Suite struct SetupDocumentTests {
    private func roundTrip(_ scenario: Scenario) throws -> Scenario {
        let document = scenario.setupDocument(bundleID: "com.example.app", fcmProject: "proj-1")
        // What crosses the pipe is text.
        let text = document.serialized()
        let parsed = try JSONParser.parse(text)
        #expect(parsed["events"] == nil && parsed["expect"] == nil && parsed["gateway"] == nil && parsed["generate"] == nil)
        return try Scenario(setupDocument: parsed, name: "setup")
    }

    private func expectSamePopulation(_ read: Scenario, _ original: Scenario, _ file: String) {
        #expect(read.product == original.product, "\(file)")
        #expect(read.people == original.people, "\(file)")
        #expect(read.conversations == original.conversations, "\(file)")
        #expect(read.rooms == original.rooms, "\(file)")
        #expect(read.workspace == original.workspace, "\(file)")
        #expect(read.tenant == original.tenant, "\(file)")
        #expect(read.conciergeApp == original.conciergeApp, "\(file)")
        #expect(read.startMs == original.startMs, "\(file)")
        #expect(read.bundleID == "com.example.app" && read.fcmProject == "proj-1", "\(file)")
        #expect(read.events.isEmpty)
    }

    @Test func everyGoldenScenarioReadsBackWithItsEventsOneAtATime() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: scenarioDirectory).filter { $0.hasSuffix(".json") }.sorted()
        #expect(files.count >= 30)
        for file in files {
            let original = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: scenarioDirectory + "/" + file))), name: file)
            let read = try roundTrip(original)
            expectSamePopulation(read, original, file)
            var decoder = ScenarioEventDecoder(population: read)
            for (index, event) in original.events.enumerated() {
                let again = try decoder.event(JSONParser.parse(event.json.serialized()), index: index)
                #expect(again.kind == event.kind, "\(file) event \(index)")
                #expect(again.atMs == event.atMs)
            }
        }
    }

    @Test func aGeneratedPopulationIsSpelledOut() throws {
        let original = try Scenario(json: Array("""
            {"format": 1, "product": "yama", "generate": {"people": 50, "dnd": 0.2, "muted": 0.1, "gone": 0.1},
             "events": [{"type": "message.created", "room": "r0", "author": "p0", "text": "hi"}]}
            """.utf8), name: "generated")
        let read = try roundTrip(original)
        expectSamePopulation(read, original, "generated")
        #expect(read.people.count == 50)
        #expect(read.people.filter(\.doNotDisturb).count > 0)
    }

    @Test func generatedGroupsAndMessagesAreSpelledOut() throws {
        let original = try Scenario(json: Array("""
            {"format": 1, "product": "poolse", "generate": {"people": 60, "muted": 0.2, "groups": 6, "groups_per_person": 2,
             "messages": {"count": 30}}}
            """.utf8), name: "generated")
        let read = try roundTrip(original)
        expectSamePopulation(read, original, "generated")
        #expect(read.conversations.count == 6)
        var decoder = ScenarioEventDecoder(population: read)
        for (index, event) in original.events.enumerated() {
            #expect(try decoder.event(JSONParser.parse(event.adapterDocument.serialized()), index: index).kind == event.kind)
        }
    }

    @Test func anEventIsCheckedAgainstThePopulationAndTheEventsBeforeIt() throws {
        let original = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: scenarioDirectory + "/poolse-01-ring-group.json"))),
                                    name: "poolse-01")
        var decoder = ScenarioEventDecoder(population: try roundTrip(original))
        #expect(throws: JSONFieldError(keyPath: "events[0].call", problem: "no call \"k9\" was placed or started before this event")) {
            try decoder.event(["type": "call.ended", "call": "k9"], index: 0)
        }
        #expect(throws: JSONFieldError.self) {
            try decoder.event(["type": "call.placed", "call": "k1", "conversation": "nowhere", "caller": "alice"], index: 1)
        }
    }

    @Test func aSetupScenarioWithEventsIsRefused() {
        #expect(throws: JSONFieldError.self) {
            try Scenario(setupDocument: ["format": 1, "product": "poolse", "events": []], name: "setup")
        }
    }
}
