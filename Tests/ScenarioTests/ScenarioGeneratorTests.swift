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

/// The population and every event as written (serialized).
private func digestWithEvents(_ scenario: Scenario) -> UInt64 {
    FNV1a.hash64((populationText(scenario) + scenario.events.map { "\n" + $0.json.serialized() }.joined()).utf8)
}

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
    // Recorded when it was added (many rooms, generated messages).
    ("message-storm-rooms.json", 3168858795819625515),
]

@Suite struct ScenarioGeneratorTests {
    @Test func oneGroupIsAsBefore() throws {
        for entry in pinned {
            let scenario = try decode(#"{"format": 1, "product": "\#(entry.product)", "generate": \#(entry.generate), "events": [\#(entry.event)]}"#)
            #expect(digest(scenario) == entry.digest, "\(entry.name): \(digest(scenario))")
        }
    }

    @Test func theBenchmarkScenariosDecodeWithTheirPopulationsAsBefore() throws {
        let directory = repository.appendingPathComponent("Benchmarks/scenarios").path
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        #expect(files == pinnedBenchmarks.map(\.file).sorted(), "every benchmark scenario is pinned here")
        for entry in pinnedBenchmarks {
            let scenario = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + entry.file))), name: entry.file)
            #expect(digest(scenario) == entry.digest, "\(entry.file): \(digest(scenario))")
        }
    }

    // MARK: Many groups

    @Test(arguments: [
        // (product, people, groups, groups per person): more people than two a group, fewer
        // (the first joins of later rounds fill the groups), everyone in every group.
        ("yama", 2000, 50, 2), ("poolse", 10, 8, 2), ("poolse", 5, 5, 5), ("yama", 7, 3, 1), ("poolse", 3, 3, 2), ("yama", 300, 40, 7),
    ])
    func everyPersonIsInTheirGroupsAndEveryGroupHasTwo(product: String, people: Int, groups: Int, perPerson: Int) throws {
        let scenario = try decode("""
            {"format": 1, "product": "\(product)", "generate": {"people": \(people), "seed": 4, "muted": 0.3, "name": "Team",
             "groups": \(groups), "groups_per_person": \(perPerson), "messages": {"count": 5}}}
            """)
        let prefix = product == "yama" ? "r" : "c"
        let list: [(id: String, name: String, members: [String], mutedBy: [String])] = product == "yama"
            ? scenario.rooms.map { ($0.id, $0.name, $0.members, $0.mutedBy) }
            : scenario.conversations.map { ($0.id, $0.name ?? "", $0.members, $0.mutedBy) }
        #expect(list.map(\.id) == (0..<groups).map { "\(prefix)\($0)" })
        #expect(list.map(\.name) == (0..<groups).map { "Team \($0)" })
        if product == "poolse" { #expect(scenario.conversations.allSatisfy { $0.kind == .group }) }
        var groupsOf: [String: Int] = [:]
        for group in list {
            #expect(group.members.count >= 2, "\(group.id)")
            #expect(Set(group.members).count == group.members.count, "\(group.id): a member once")
            #expect(group.members == group.members.sorted { Int($0.dropFirst())! < Int($1.dropFirst())! }, "\(group.id): in person order")
            #expect(group.mutedBy.allSatisfy(group.members.contains) && !group.mutedBy.contains("p0"), "\(group.id)")
            for member in group.members { groupsOf[member, default: 0] += 1 }
        }
        #expect(groupsOf.count == people && groupsOf.values.allSatisfy { $0 == perPerson })
    }

    @Test func manyGroupsAreTheSameEveryRunAndAsRecorded() throws {
        let text = """
            {"format": 1, "product": "poolse", "generate": {"people": 1000, "seed": 8, "muted": 0.1, "groups": 30, "groups_per_person": 3,
             "messages": {"count": 300}}}
            """
        let first = try decode(text), second = try decode(text)
        #expect(populationText(first) == populationText(second))
        #expect(first.events.map(\.kind) == second.events.map(\.kind))
        // Recorded from the commit that made groups: a change here changes every file that uses them.
        #expect(digestWithEvents(first) == 12311997401943802063, "\(digestWithEvents(first))")
        let other = try decode(text.replacingFirst(#""seed": 8"#, with: #""seed": 9"#))
        #expect(populationText(other) != populationText(first), "the seed decides the spread")
    }

    @Test func mutedIsDrawnPerMembership() throws {
        let scenario = try decode("""
            {"format": 1, "product": "yama", "generate": {"people": 1000, "seed": 2, "muted": 0.3, "groups": 10, "groups_per_person": 3},
             "events": [{"type": "message.created", "room": "r0", "author": "p0", "text": "hi"}]}
            """)
        let memberships = scenario.rooms.map(\.members.count).reduce(0, +)
        let muted = scenario.rooms.map(\.mutedBy.count).reduce(0, +)
        #expect(memberships == 3000)
        #expect(Double(muted) > 0.25 * 3000 && Double(muted) < 0.35 * 3000, "\(muted) of \(memberships)")
        // Some person mutes one of their rooms and not another.
        let mixed = scenario.people.contains { person in
            let rooms = scenario.rooms.filter { $0.members.contains(person.id) }
            return rooms.contains { $0.mutedBy.contains(person.id) } && rooms.contains { !$0.mutedBy.contains(person.id) }
        }
        #expect(mixed)
    }

    // MARK: Generated messages

    @Test func poolseMessagesGoRoundTheGroupsFromTheirMembersAfterTheWrittenEvents() throws {
        let scenario = try decode("""
            {"format": 1, "product": "poolse", "generate": {"people": 100, "seed": 3, "groups": 7, "groups_per_person": 2, "messages": {"count": 50}},
             "events": [{"type": "message.sent", "conversation": "c1", "message": "hello", "sender": "p2", "text": "hi"}]}
            """)
        #expect(scenario.events.count == 51)
        #expect(scenario.events[0].kind == .messageSent(conversation: "c1", message: "hello", sender: "p2", text: "hi", kind: .text, mentions: []))
        var senders: Set<String> = []
        for (index, event) in scenario.events.dropFirst().enumerated() {
            guard case .messageSent(let conversation, let message, let sender, let text, .text, []) = event.kind else {
                Issue.record("event \(index + 1): \(event.kind)")
                continue
            }
            #expect(conversation == "c\(index % 7)" && message == "m\(index)" && text == "message \(index)")
            #expect(scenario.conversations[index % 7].members.contains(sender), "m\(index): \(sender) is a member of \(conversation)")
            #expect(event.type == "message.sent" && event.json["sender"]?.stringValue == sender)
            senders.insert(sender)
        }
        #expect(senders.count > 20, "senders are drawn, not always the first member")
    }

    @Test func yamaMessagesComeFromMembersOfTheirRoomWithoutWrittenEvents() throws {
        let scenario = try decode("""
            {"format": 1, "product": "yama", "generate": {"people": 40, "groups": 4, "groups_per_person": 1, "messages": {"count": 12, "seed": 5}}}
            """)
        #expect(scenario.events.count == 12)
        for (index, event) in scenario.events.enumerated() {
            guard case .yamaMessage(let room, let message, let author, let text) = event.kind else {
                Issue.record("event \(index): \(event.kind)")
                continue
            }
            #expect(room == "r\(index % 4)" && message == "m\(index)" && text == "message \(index)")
            #expect(scenario.rooms[index % 4].members.contains(author), "m\(index): \(author) in \(room)")
        }
    }

    @Test func conciergeRepliesGoRoundThePeoplesConversations() throws {
        let scenario = try decode("""
            {"format": 1, "product": "concierge", "generate": {"people": 3, "messages": {"count": 4, "team_member": "Ann"}}}
            """)
        #expect(scenario.events.map(\.kind) == (0..<4).map { index in
            .replySent(conversation: "c\(index % 3)", message: "m\(index)", author: .teamMember(name: "Ann"), text: "message \(index)", unread: nil)
        })
    }

    @Test func messagesLeaveThePopulationAsItWas() throws {
        // The pinned one-group populations, with a storm: the messages draw from their own stream.
        for entry in pinned {
            let generate = entry.generate.dropLast() + #", "messages": {"count": 20}}"#
            let scenario = try decode(#"{"format": 1, "product": "\#(entry.product)", "generate": \#(generate), "events": [\#(entry.event)]}"#)
            #expect(digest(scenario) == entry.digest, "\(entry.name)")
            #expect(scenario.events.count == 21)
        }
        let text = #"{"format": 1, "product": "yama", "generate": {"people": 200, "groups": 5, "messages": {"count": 50, "seed": 1}}}"#
        let one = try decode(text), other = try decode(text.replacingFirst(#""seed": 1"#, with: #""seed": 2"#))
        #expect(populationText(one) == populationText(other))
        #expect(one.events.map(\.kind) != other.events.map(\.kind), "messages.seed decides the authors")
    }

    // MARK: Errors

    @Test(arguments: [
        ("poolse", #""groups": 0"#, "generate.groups: must be between 1 and 500000, found 0"),
        ("poolse", #""groups": 500001"#, "generate.groups: must be between 1 and 500000, found 500001"),
        ("yama", #""groups": 2, "groups_per_person": 3"#, "generate.groups_per_person: must be at most groups (2), found 3"),
        ("yama", #""groups_per_person": 2"#, "generate.groups_per_person: must be at most groups (1), found 2"),
        ("yama", #""groups": 200, "groups_per_person": 101"#, "generate.groups_per_person: must be between 1 and 100, found 101"),
        ("poolse", #""groups": 51"#, "generate.groups: 51 groups of at least two members need 102 memberships; 100 people in 1 each make 100"),
        ("concierge", #""groups": 2"#, "generate.groups: Concierge has one conversation per person (c<i>) already"),
        ("concierge", #""groups_per_person": 1"#, "generate.groups_per_person: Concierge has one conversation per person"),
        ("poolse", #""messages": {"count": 0}"#, "generate.messages.count: must be between 1 and 1000000, found 0"),
        ("poolse", #""messages": {"count": 1000001}"#, "generate.messages.count: must be between 1 and 1000000, found 1000001"),
        ("yama", #""messages": {"seed": 3}"#, "generate.messages.count: required"),
        ("yama", #""messages": {"count": 3, "rate": 5}"#, "generate.messages.rate: unknown key"),
        ("yama", #""messages": {"count": 3, "team_member": "Ann"}"#, "generate.messages.team_member: replies by a team member are Concierge's"),
        ("poolse", #""messages": 5"#, "generate.messages: expected an object"),
        ("poolse", #""messages": {"count": 5}, "x": 1"#, "generate.x: unknown key"),
    ])
    func badKeysNameTheirKeyPath(product: String, keys: String, message: String) {
        let event = product == "yama" ? #"{"type": "user.status", "user": "p1", "status": "dnd"}"# : #"{"type": "device.unregistered", "device": "p1-alert"}"#
        let text = #"{"format": 1, "product": "\#(product)", "generate": {"people": 100, "devices": {"alert": 1}, \#(keys)}, "events": [\#(event)]}"#
        do {
            _ = try decode(text)
            Issue.record("decoded, expected \(message)")
        } catch {
            #expect(error.description.hasPrefix(message), "\(error.description)")
        }
    }

    @Test func tooManyMembershipsAreRefusedBeforeAnythingIsBuilt() {
        #expect(throws: JSONFieldError(keyPath: "generate.groups_per_person",
                                       problem: "1000000 people in 11 groups each make 11000000 memberships; at most 10000000")) {
            try decode(#"{"format": 1, "product": "yama", "generate": {"people": 1000000, "groups": 100, "groups_per_person": 11}}"#)
        }
    }

    @Test func aGeneratedMessageIdWrittenInEventsIsRefused() {
        #expect(throws: JSONFieldError(keyPath: "generate.messages", problem: #"message "m3" is in events already; generated messages are m0 to m9"#)) {
            try decode("""
                {"format": 1, "product": "poolse", "generate": {"people": 10, "messages": {"count": 10}},
                 "events": [{"type": "message.sent", "conversation": "c0", "message": "m30", "sender": "p0"},
                            {"type": "message.sent", "conversation": "c0", "message": "m3", "sender": "p0"},
                            {"type": "message.sent", "conversation": "c0", "message": "m03", "sender": "p0"}]}
                """)
        }
    }
}
