// `generate`: a large population from counts and shares, the same on every run of a file.
import JSON

/// Reads `generate` and builds people `p0` … `p<n-1>` (named "Person 0" …), with devices
/// `p<i>-voip`, `p<i>-alert`, `p<i>-android` by the device mix; one conversation `c0` (poolse:
/// a group of everyone, named by `name`; Concierge: one per person, `c<i>`) or room `r0` (Yama).
/// Every draw comes from one SplitMix64 stream seeded by `seed`, in a fixed order.
struct ScenarioGenerator {
    static let keys = ["people", "seed", "devices", "gone", "bad", "muted", "dnd", "name"]

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
    }

    func population() -> (people: [Person], conversations: [ScenarioConversation], rooms: [Room],
                          tokenStates: [(device: String, state: TokenState)]) {
        var random = ScenarioRandom(seed: seed)
        var people: [Person] = []
        var states: [(device: String, state: TokenState)] = []
        var muted: [String] = []
        people.reserveCapacity(count)
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
        let everyone = people.map(\.id)
        switch product {
        case .poolse:
            return (people, [ScenarioConversation(id: "c0", kind: .group, name: name, members: everyone, mutedBy: muted)], [], states)
        case .yama:
            return (people, [], [Room(id: "r0", name: name, members: everyone, mutedBy: muted)], states)
        case .concierge:
            let conversations = everyone.enumerated().map { index, id in
                ScenarioConversation(id: "c\(index)", kind: .direct, members: [id], customer: id)
            }
            return (people, conversations, [], states)
        }
    }
}
