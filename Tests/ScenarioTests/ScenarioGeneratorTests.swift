// `generate`: the population and events it builds, pinned against the generator before
// many groups and generated messages existed, and the new keys' rules.
import Foundation
import Hashing
import JSON
import Scenario
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

private func decode(_ text: String) throws(JSONFieldError) -> Scenario {
    try Scenario(json: Array(text.utf8), name: "test.json")
}

/// Every field of the population, spelled out one line per thing, in order.
private func populationText(_ scenario: Scenario) -> String {
    var lines: [String] = []
    for person in scenario.people {
        lines.append("person \(person.id)|\(person.name)|\(person.externalID)|\(person.doNotDisturb)")
        for device in person.devices {
            lines.append("device \(device.id)|\(device.platform.rawValue)|\(device.voip)|\(device.token)")
        }
    }
    for conversation in scenario.conversations {
        lines.append("conversation \(conversation.id)|\(conversation.kind)|\(conversation.name ?? "-")|"
            + "\(conversation.members.joined(separator: ","))|\(conversation.mutedBy.joined(separator: ","))|\(conversation.customer ?? "-")")
    }
    for room in scenario.rooms {
        lines.append("room \(room.id)|\(room.name)|\(room.members.joined(separator: ","))|\(room.mutedBy.joined(separator: ","))")
    }
    for (device, state) in scenario.tokenStates { lines.append("token \(device)|\(state)") }
    return lines.joined(separator: "\n")
}

private func digest(_ scenario: Scenario) -> UInt64 { FNV1a.hash64(populationText(scenario).utf8) }

/// Populations from `generate` with one group. The digests were recorded by running this
/// test against the generator as it was before `groups`, `groups_per_person` and `messages`
/// (commit 0410835): those keys must leave a one-group population byte for byte as it was.
private let pinned: [(name: String, generate: String, product: String, event: String, digest: UInt64)] = [
    ("poolse", #"{"people": 500, "seed": 7, "devices": {"voip": 0.6, "alert": 0.8, "android": 0.4}, "gone": 0.1, "bad": 0.05, "muted": 0.2, "name": "Team"}"#,
     "poolse", #"{"type": "message.sent", "conversation": "c0", "sender": "p0", "text": "hi"}"#, 609328053746093155),
    ("yama", #"{"people": 500, "seed": 3, "devices": {"alert": 0.9}, "dnd": 0.2, "muted": 0.1, "gone": 0.1, "bad": 0.1}"#,
     "yama", #"{"type": "message.created", "room": "r0", "author": "p0", "text": "hi"}"#, 14079513685648280122),
    ("concierge", #"{"people": 300, "seed": 11, "gone": 0.05}"#,
     "concierge", #"{"type": "reply.sent", "conversation": "c0", "author": {"team_member": "Ann"}, "text": "hi"}"#, 5616196115446500700),
]

/// The benchmark scenarios' populations, recorded the same way.
private let pinnedBenchmarks: [(file: String, digest: UInt64)] = [
    ("group-call-10000.json", 11417089225332486452),
    ("message-storm-1000.json", 17390786646965190086),
]

@Suite struct ScenarioGeneratorTests {
    @Test func oneGroupIsAsBefore() throws {
        for entry in pinned {
            let scenario = try decode(#"{"format": 1, "product": "\#(entry.product)", "generate": \#(entry.generate), "events": [\#(entry.event)]}"#)
            #expect(digest(scenario) == entry.digest, "\(entry.name): \(digest(scenario))")
        }
    }

    @Test func theBenchmarkScenariosDecodeWithTheirPopulationsAsBefore() throws {
        for entry in pinnedBenchmarks {
            let path = repository.appendingPathComponent("Benchmarks/scenarios/" + entry.file).path
            let scenario = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: path))), name: entry.file)
            #expect(digest(scenario) == entry.digest, "\(entry.file): \(digest(scenario))")
        }
    }
}
