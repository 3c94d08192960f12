import PushModel
import PushproofTestSupport
import Scenario
import ScenarioRunner
import Sender
import Testing

/// A small population: three people with two devices each, one with none, and a device a later
/// event registers for the first time.
private func scenario() -> Scenario {
    var scenario = Scenario(name: "devices", product: .poolse)
    scenario.people = ScenarioPeople((0..<4).map { person in
        Person(id: "p\(person)", name: "P\(person)", externalID: "x\(person)",
               devices: person == 3 ? [] : [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true),
                                            ScenarioDevice(id: "p\(person)-android", platform: .android)])
    })
    scenario.events = [ScenarioEvent(kind: .deviceRegistered(person: "p3", device: ScenarioDevice(id: "p3-ios", platform: .ios), isNew: true),
                                     type: "device.registered")]
    return scenario
}

@Suite struct ScenarioDeviceStoreTests {
    @Test func theIndexFindsEveryDeviceByIdAndTokenInAnyForm() {
        let scenario = scenario()
        let index = ScenarioDeviceIndex(scenario)
        #expect(index.entries.count == 7)
        #expect(index.initialCount == 6)
        let voip = scenario.people[1].devices[0]
        #expect(index.token(ofDevice: "p1-voip") == voip.token)
        #expect(index.writtenToken(DeviceToken(voip.token.uppercased())) == voip.token)
        #expect(index.name(ofToken: voip.token.uppercased()) == "p1/p1-voip")
        #expect(index.name(ofToken: "unknown") == "unknown")
        #expect(index.token(ofDevice: "p3-ios") != nil, "a device an event registers is known too")
        #expect(index.initialPositions(of: "p2") == 4..<6)
        #expect(index.initialPositions(of: "p3").isEmpty)
        #expect(index.hasAndroidDevices)
    }

    /// The index's table of tokens finds what a dictionary of them finds: every token in any
    /// case (APNs hex) or exactly (FCM), any length, a token two devices share at its last
    /// position, and nothing for a token it does not hold.
    @Test func theTokenTableFindsWhatADictionaryFinds() {
        var scenario = Scenario(name: "tokens", product: .poolse)
        scenario.people = ScenarioPeople((0..<3_000).map { person in
            var devices = [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true),
                           ScenarioDevice(id: "p\(person)-android", platform: .android)]
            // Lengths around the hash's eight-byte words, and one token two people share.
            if person % 7 == 0 { devices.append(ScenarioDevice(id: "p\(person)-short", platform: .android, token: String(repeating: "x", count: person % 17))) }
            if person == 5 || person == 2_000 { devices.append(ScenarioDevice(id: "p\(person)-shared", platform: .ios, token: "ABCDEF0123")) }
            return Person(id: "p\(person)", name: "P", externalID: "x\(person)", devices: devices)
        })
        let index = ScenarioDeviceIndex(scenario)
        var reference: [DeviceToken: Int] = [:]
        for (position, entry) in index.entries.enumerated() { reference[DeviceToken(entry.device.token)] = position }
        for (token, position) in reference {
            #expect(index.position(ofToken: token) == position)
            #expect(index.position(ofToken: DeviceToken(token.comparable.uppercased())) == (token.comparable.allSatisfy(\.isHexDigit) ? position : nil))
        }
        #expect(index.position(ofToken: "abcdef0123") == reference["ABCDEF0123"], "the shared token: its last device")
        #expect(index.entries[index.position(ofToken: "abcdef0123")!].person == "p2000")
        for stray in ["", "nope", String(repeating: "a", count: 64), String(repeating: "x", count: 40)] where reference[DeviceToken(stray)] == nil {
            #expect(index.position(ofToken: DeviceToken(stray)) == nil)
        }
    }

    /// Device ids and people are found through position tables, confirmed against the
    /// scenario's people: what dictionaries built from the people find, for each, with a person
    /// without devices (an empty range where their devices would start), an id two devices share
    /// (its last device), and nothing for an id or a person the scenario does not have.
    @Test func theIdAndPersonTablesFindWhatDictionariesFind() {
        var scenario = Scenario(name: "ids", product: .poolse)
        scenario.people = ScenarioPeople((0..<2_000).map { person in
            var devices = person % 5 == 0 ? [] : [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true)]
            if person % 3 == 0 { devices.append(ScenarioDevice(id: "p\(person)-a-longer-device-id-\(person)", platform: .android)) }
            if person == 7 || person == 1_001 { devices.append(ScenarioDevice(id: "two-owners", platform: .ios, token: "ab\(person)")) }
            return Person(id: person == 42 ? "a person whose id is longer than a word or two" : "p\(person)", name: "P",
                          externalID: "x\(person)", devices: devices)
        })
        let index = ScenarioDeviceIndex(scenario)
        var tokenOfID: [String: String] = [:]
        var rangeOfPerson: [String: Range<Int>] = [:]
        var position = 0
        for person in scenario.people {
            rangeOfPerson[person.id] = position..<(position + person.devices.count)
            for device in person.devices { tokenOfID[device.id] = device.token }
            position += person.devices.count
        }
        #expect(index.initialCount == position)
        for (id, token) in tokenOfID { #expect(index.token(ofDevice: id) == token, "\(id)") }
        #expect(index.token(ofDevice: "two-owners") == "ab1001")
        for (person, range) in rangeOfPerson { #expect(index.initialPositions(of: person) == range, "\(person)") }
        #expect(index.initialPositions(of: "p10").isEmpty && index.initialPositions(of: "p10").lowerBound > 0)
        for stray in ["", "p2000", "p1-android", "two-owners "] {
            #expect(index.token(ofDevice: stray) == nil && index.initialPositions(of: stray).isEmpty)
        }
    }

    @Test func devicePositionsAreBitsByPosition() {
        var positions = DevicePositions(count: 70)
        for position in [0, 3, 63, 64, 69] { positions.insert(position) }
        positions.insert(130)  // past the count: grows
        positions.remove(3)
        positions.remove(1_000)  // never held: nothing happens
        #expect(positions.positions == [0, 63, 64, 69, 130])
        #expect(positions.count == 5)
        #expect(positions.contains(64) && !positions.contains(3) && !positions.contains(10_000))
        var other = DevicePositions(count: 0)
        other.insert(63)
        other.insert(69)
        #expect(positions.subtracting(other) == [0, 64, 130])
        #expect(other.subtracting(positions).isEmpty)
    }

    /// `run`'s store comparison by position says what the one by token says.
    @Test func theStoreComparedByPositionSaysWhatTheOneByTokenSays() {
        let scenario = scenario()
        let index = ScenarioDeviceIndex(scenario)
        let tokens = index.entries.map(\.device.token)
        var live = DevicePositions(count: index.count)
        for position in [0, 1, 2, 4, 6] { live.insert(position) }
        let liveTokens = Set([0, 1, 2, 4, 6].map { DeviceToken(tokens[$0]) })
        let dead: Set<DeviceToken> = [DeviceToken(tokens[3]), "tok-unknown-dead"]
        let listings: [[ListedDevice]] = [
            [],
            tokens.map { ListedDevice(id: "x", token: $0) },
            [ListedDevice(id: "x", token: tokens[0].uppercased()), ListedDevice(id: "x", token: tokens[0]),
             ListedDevice(id: "x", token: tokens[3]), ListedDevice(id: "x", token: "tok-unknown-dead"), ListedDevice(id: "x", token: "stray")],
            [0, 1, 2, 4, 6].map { ListedDevice(id: "x", token: tokens[$0]) },
        ]
        for listed in listings {
            let byToken = EventJudge.compareStore(listed: listed, live: liveTokens, dead: dead, deviceName: { index.name(ofToken: $0) })
            let byPosition = EventJudge.compareStore(listed: listed, live: live, dead: dead, devices: index,
                                                     deviceName: { index.name(ofToken: $0) })
            #expect(byPosition == byToken)
        }
        let third = EventJudge.compareStore(listed: listings[2], live: live, dead: dead, devices: index, deviceName: { index.name(ofToken: $0) })
        #expect(third.prefix(2).allSatisfy { $0.message.contains("still holds") }, "kept dead tokens first")
        #expect(Set(third.map(\.message)) == [
            "the sender's store still holds p1/p1-android, whose token was answered gone or bad",
            "the sender's store still holds tok-unknown-dead, whose token was answered gone or bad",
            "the sender's store lost p0/p0-android, whose token is live",
            "the sender's store lost p1/p1-voip, whose token is live",
            "the sender's store lost p2/p2-voip, whose token is live",
            "the sender's store lost p3/p3-ios, whose token is live",
        ])
    }

    /// Every operation, in a long pseudo-random sequence, answers as an `InMemoryDeviceStore`
    /// into which the people's devices were registered in order.
    @Test func itBehavesAsAStoreFilledWithThePopulation() {
        let scenario = scenario()
        let index = ScenarioDeviceIndex(scenario)
        let store = ScenarioDeviceStore(index)
        let reference = InMemoryDeviceStore(index.entries.prefix(index.initialCount).map(\.storedDevice))
        #expect(store.allDevices() == reference.allDevices())
        let users = scenario.people.map(\.id) + ["newcomer"]
        let tokens = index.entries.map(\.device.token) + ["fresh-token-1", "fresh-token-2"]
        var random = SplitMix64(seed: 7)
        for step in 0..<3000 {
            let token = tokens[random.next(below: tokens.count)]
            let user = users[random.next(below: users.count)]
            switch random.next(below: 4) {
            case 0:
                let device = Device(userID: user, platform: random.next(below: 2) == 0 ? .ios : .android, kind: .alert, token: token)
                store.register(device)
                reference.register(device)
            case 1:
                #expect(store.remove(token: token) == reference.remove(token: token), "step \(step)")
            case 2:
                #expect(store.devices(of: user) == reference.devices(of: user), "step \(step)")
            default:
                #expect(store.allDevices() == reference.allDevices(), "step \(step)")
            }
            #expect(store.count == reference.count, "step \(step)")
        }
    }

    @Test func aTokenInAnotherCaseIsAnotherToken() {
        let index = ScenarioDeviceIndex(scenario())
        let store = ScenarioDeviceStore(index)
        let token = index.entries[0].device.token
        #expect(!store.remove(token: token.uppercased()), "the store keys tokens as written, as InMemoryDeviceStore does")
        #expect(store.remove(token: token))
        #expect(!store.remove(token: token))
        #expect(store.devices(of: "p0").map(\.token) == [index.entries[1].device.token])
    }
}
