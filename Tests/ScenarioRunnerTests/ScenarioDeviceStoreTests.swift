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
    scenario.people = (0..<4).map { person in
        Person(id: "p\(person)", name: "P\(person)", externalID: "x\(person)",
               devices: person == 3 ? [] : [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true),
                                            ScenarioDevice(id: "p\(person)-android", platform: .android)])
    }
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
