// A scenario's people with their devices in one list: each person reads back as given, with
// its own devices, however many (none included), and the list is theirs in order.
import Scenario
import Testing

@Suite struct ScenarioPeopleTests {
    private static let given: [Person] = (0..<7).map { index in
        Person(id: "p\(index)", name: "Person \(index)", externalID: "x\(index)", doNotDisturb: index % 3 == 1,
               devices: (0..<index % 4).map { ScenarioDevice(id: "p\(index)-d\($0)", platform: $0 == 1 ? .android : .ios, voip: $0 == 0) })
    }

    @Test func everyPersonReadsBackAsGiven() {
        let people = ScenarioPeople(Self.given)
        #expect(Array(people) == Self.given)
        #expect(people.devices == Self.given.flatMap(\.devices))
        for (index, person) in Self.given.enumerated() {
            #expect(people.id(at: index) == person.id)
            #expect(people.isDoNotDisturb(at: index) == person.doNotDisturb)
            #expect(Array(people.devices(at: index)) == person.devices)
            #expect(people.index(ofID: person.id) == index)
        }
        #expect(people.index(ofID: "nobody") == nil)
    }

    @Test func peopleWithoutDevicesTakeNoRoomInTheList() {
        let people: ScenarioPeople = [Person(id: "a", name: "A", externalID: "a"),
                                      Person(id: "b", name: "B", externalID: "b", devices: [ScenarioDevice(id: "b1", platform: .android)]),
                                      Person(id: "c", name: "C", externalID: "c")]
        #expect(people.deviceRange(at: 0) == 0..<0)
        #expect(people.deviceRange(at: 1) == 0..<1)
        #expect(people.deviceRange(at: 2) == 1..<1)
        #expect(people[2].devices.isEmpty)
    }

    @Test func appendingAndReservingKeepWhatIsThere() {
        var people = ScenarioPeople(Self.given.prefix(3))
        people.reserveCapacity(people: 100, devices: 300)
        for person in Self.given.dropFirst(3) { people.append(person) }
        #expect(people == ScenarioPeople(Self.given))
        #expect(people != ScenarioPeople(Self.given.dropLast()))
    }
}
