// `generate`: a large population from counts and shares, the same on every run of a file, and
// optionally a storm of messages over its groups.
import JSON

/// Reads `generate` and builds people `p0` … `p<n-1>` (named "Person 0" …), with devices
/// `p<i>-voip`, `p<i>-alert`, `p<i>-android` by the device mix; groups `c0` … `c<g-1>` (poolse
/// group conversations) or rooms `r0` … `r<g-1>` (Yama), named `name` when there is one and
/// "`name` <i>" when there are more; Concierge: one conversation per person, `c<i>`.
///
/// Every population draw comes from one SplitMix64 stream seeded by `seed`, in a fixed order:
/// person by person, the device mix, each device's token state, muted, Do Not Disturb (as before
/// groups existed, so one group gives the same population it always did). With more than one
/// group, then: joins in rounds (round r: every person, p0 first, joins their (r+1)-th group);
/// the first 2 × groups joins fill the groups two at a time (join j goes to group ⌊j/2⌋, no
/// draw), so every group has two members; each later join is one draw, uniform over the groups
/// the person is not in yet. Then, join by join, whether the person mutes that group (one draw
/// each; p0 never mutes). The person-by-person muted draw is still made but unused.
///
/// `messages` draws from a stream of its own (`messages.seed`, default `seed` + 1): message i
/// goes to group i mod groups (Concierge: conversation i mod people), its sender is one draw
/// over that group's members.
struct ScenarioGenerator {
    static let keys = ["people", "seed", "devices", "gone", "bad", "muted", "dnd", "name", "groups", "groups_per_person", "messages"]
    static let messageKeys = ["count", "seed", "team_member"]
    /// Bounds that keep a generated file's memory in hand: half a million groups (two members
    /// each from a million people), a hundred groups a person, ten million memberships (about
    /// the size of a million people's devices), a million messages.
    static let maxGroups = 500_000
    static let maxGroupsPerPerson = 100
    static let maxMemberships = 10_000_000
    static let maxMessages = 1_000_000

    struct Messages {
        let count: Int
        let seed: UInt64
        /// Concierge: the team member who writes every reply.
        let teamMember: String
    }

    let count: Int
    let seed: UInt64
    let voipShare: Double
    let alertShare: Double
    let androidShare: Double
    let goneShare: Double
    let badShare: Double
    let mutedShare: Double
    let dndShare: Double
    let name: String
    let groups: Int
    let groupsPerPerson: Int
    let messages: Messages?
    let product: Product

    init(_ fields: JSONFields, product: Product) throws(JSONFieldError) {
        count = try fields.requiredInt("people", range: 2...1_000_000)
        seed = UInt64(try fields.int("seed", range: 0...Int.max) ?? 1)
        let mix = try fields.object("devices", allowed: ["voip", "alert", "android"])
        voipShare = try mix?.number("voip", range: 0...1) ?? (product == .poolse ? 0.5 : 0)
        alertShare = try mix?.number("alert", range: 0...1) ?? 0.5
        androidShare = try mix?.number("android", range: 0...1) ?? (product == .yama ? 0 : 0.5)
        goneShare = try fields.number("gone", range: 0...1) ?? 0
        badShare = try fields.number("bad", range: 0...1) ?? 0
        if goneShare + badShare > 1 { throw fields.fail("bad", "gone and bad shares add up to more than 1") }
        mutedShare = try fields.number("muted", range: 0...1) ?? 0
        dndShare = try fields.number("dnd", range: 0...1) ?? 0
        if dndShare > 0, product != .yama { throw fields.fail("dnd", "Do Not Disturb is Yama's") }
        if mutedShare > 0, product == .concierge { throw fields.fail("muted", "Concierge conversations cannot be muted") }
        name = try fields.string("name") ?? "Everyone"
        self.product = product

        if product == .concierge {
            for key in ["groups", "groups_per_person"] where fields.has(key) {
                throw fields.fail(key, "Concierge has one conversation per person (c<i>) already; groups are poolse's and Yama's")
            }
        }
        groups = try fields.int("groups", range: 1...Self.maxGroups) ?? 1
        groupsPerPerson = try fields.int("groups_per_person", range: 1...Self.maxGroupsPerPerson) ?? 1
        if groupsPerPerson > groups {
            throw fields.fail("groups_per_person", "must be at most groups (\(groups)), found \(groupsPerPerson)")
        }
        let memberships = count * groupsPerPerson
        if memberships > Self.maxMemberships {
            throw fields.fail("groups_per_person", "\(count) people in \(groupsPerPerson) groups each make \(memberships) memberships; at most \(Self.maxMemberships)")
        }
        if memberships < 2 * groups {
            throw fields.fail("groups", "\(groups) groups of at least two members need \(2 * groups) memberships; \(count) people in \(groupsPerPerson) each make \(memberships)")
        }

        if let storm = try fields.object("messages", allowed: Self.messageKeys) {
            let teamMember = try storm.string("team_member")
            if teamMember != nil, product != .concierge { throw storm.fail("team_member", "replies by a team member are Concierge's") }
            messages = Messages(count: try storm.requiredInt("count", range: 1...Self.maxMessages),
                                seed: try storm.int("seed", range: 0...Int.max).map(UInt64.init) ?? seed &+ 1,
                                teamMember: teamMember ?? "Agent")
        } else {
            messages = nil
        }
    }

    func population() -> (people: ScenarioPeople, conversations: [ScenarioConversation], rooms: [Room],
                          tokenStates: [(device: String, state: TokenState)]) {
        var random = ScenarioRandom(seed: seed)
        var people = ScenarioPeople()
        var states: [(device: String, state: TokenState)] = []
        var muted: [String] = []
        // Devices by the shares expected, a little over: one more doubling of 150,000 devices
        // would leave 4.8 MB of a 100,000-person call unused.
        let expectedDevices = Double(count) * (voipShare + alertShare + androidShare)
        people.reserveCapacity(people: count, devices: Int(expectedDevices * 1.01) + 64)
        for index in 0..<count {
            let id = "p\(index)"
            var person = Person(id: id, name: "Person \(index)", externalID: "ext-\(id)")
            if random.chance(voipShare) { person.devices.append(ScenarioDevice(id: id + "-voip", platform: .ios, voip: true)) }
            if random.chance(alertShare) { person.devices.append(ScenarioDevice(id: id + "-alert", platform: .ios)) }
            if random.chance(androidShare) { person.devices.append(ScenarioDevice(id: id + "-android", platform: .android)) }
            for device in person.devices {
                let draw = random.unit()
                if draw < goneShare {
                    states.append((device.id, .gone(sinceMs: nil)))
                } else if draw < goneShare + badShare {
                    states.append((device.id, .bad))
                }
            }
            // Person 0 writes and calls, so never mutes nor goes Do Not Disturb.
            let mutes = random.chance(mutedShare)
            let dnd = random.chance(dndShare)
            if index > 0 {
                if mutes { muted.append(id) }
                person.doNotDisturb = dnd
            }
            people.append(person)
        }
        let groupList: [(members: [String], mutedBy: [String])]
        if groups == 1 {
            groupList = [(people.indices.map(people.id(at:)), muted)]
        } else {
            groupList = spread(&random)
        }
        func groupName(_ index: Int) -> String { groups == 1 ? name : "\(name) \(index)" }
        switch product {
        case .poolse:
            let conversations = groupList.enumerated().map { index, group in
                ScenarioConversation(id: "c\(index)", kind: .group, name: groupName(index), members: group.members, mutedBy: group.mutedBy)
            }
            return (people, conversations, [], states)
        case .yama:
            let rooms = groupList.enumerated().map { index, group in
                Room(id: "r\(index)", name: groupName(index), members: group.members, mutedBy: group.mutedBy)
            }
            return (people, [], rooms, states)
        case .concierge:
            let conversations = people.indices.map { index in
                ScenarioConversation(id: "c\(index)", kind: .direct, members: [people.id(at: index)], customer: people.id(at: index))
            }
            return (people, conversations, [], states)
        }
    }

    /// Every person into `groupsPerPerson` distinct groups, every group at least two members
    /// (the draw order is the type's doc comment's). Members and mutes in person order.
    private func spread(_ random: inout ScenarioRandom) -> [(members: [String], mutedBy: [String])] {
        let perPerson = groupsPerPerson
        // Person p's groups, ascending, at p * perPerson ..< p * perPerson + rounds so far.
        var held = [Int32](repeating: 0, count: count * perPerson)
        // Join by join, in join order: (person, group).
        var joins: [(person: Int32, group: Int32)] = []
        joins.reserveCapacity(count * perPerson)
        for round in 0..<perPerson {
            for person in 0..<count {
                let join = round * count + person
                var group: Int
                if join < 2 * groups {
                    group = join / 2
                } else {
                    // The r-th group this person is not in yet: step over the held ones at or below it.
                    group = random.next(below: groups - round)
                    for slot in person * perPerson ..< person * perPerson + round {
                        if Int(held[slot]) <= group { group += 1 } else { break }
                    }
                }
                // Keep the person's groups ascending: insert in place.
                var slot = person * perPerson + round
                while slot > person * perPerson, Int(held[slot - 1]) > group {
                    held[slot] = held[slot - 1]
                    slot -= 1
                }
                held[slot] = Int32(group)
                joins.append((Int32(person), Int32(group)))
            }
        }
        var members = [[Int32]](repeating: [], count: groups)
        var mutedBy = [[Int32]](repeating: [], count: groups)
        for (person, group) in joins {
            members[Int(group)].append(person)
            if random.chance(mutedShare), person > 0 { mutedBy[Int(group)].append(person) }
        }
        return (0..<groups).map { group in
            (members[group].sorted().map { "p\($0)" }, mutedBy[group].sorted().map { "p\($0)" })
        }
    }

    /// The storm's events, as a file would write them (`messages`; nil without it): message i
    /// has id `m<i>` and text "message <i>".
    func messageEvents(conversations: [ScenarioConversation], rooms: [Room]) -> [JSONValue] {
        guard let messages else { return [] }
        var random = ScenarioRandom(seed: messages.seed)
        var events: [JSONValue] = []
        events.reserveCapacity(messages.count)
        for index in 0..<messages.count {
            let id = JSONValue.string("m\(index)"), text = JSONValue.string("message \(index)")
            switch product {
            case .poolse:
                let conversation = conversations[index % conversations.count]
                let sender = conversation.members[random.next(below: conversation.members.count)]
                events.append(["type": "message.sent", "conversation": .string(conversation.id), "message": id,
                               "sender": .string(sender), "text": text])
            case .yama:
                let room = rooms[index % rooms.count]
                let author = room.members[random.next(below: room.members.count)]
                events.append(["type": "message.created", "room": .string(room.id), "message": id, "author": .string(author), "text": text])
            case .concierge:
                let conversation = conversations[index % conversations.count]
                events.append(["type": "reply.sent", "conversation": .string(conversation.id), "message": id,
                               "author": ["team_member": .string(messages.teamMember)], "text": text])
            }
        }
        return events
    }
}
