/// A scenario's people, with every person's devices in one list, person by person in file
/// order. An array of devices a person (Swift's 32-byte array header and a heap block each)
/// was 9.2 MB of a 100,000-person call's heap at its peak (heaptrack), the same devices in
/// one list 6 MB, and a person here keeps where its devices start, not an array of them.
/// Read as a collection of `Person`: a person's `devices` are made when the person is read,
/// so code that walks many people reads `id(at:)`, `devices(at:)` and `devices` instead.
public struct ScenarioPeople: RandomAccessCollection, Equatable, Sendable, ExpressibleByArrayLiteral {
    /// A person without the array of devices.
    private struct Stored: Equatable, Sendable {
        var id: String
        var name: String
        var externalID: String
        var doNotDisturb: Bool
        /// Where the person's devices start in `devices`.
        var firstDevice: Int32
    }

    private var stored: [Stored] = []
    /// Every person's devices, person by person.
    public private(set) var devices: [ScenarioDevice] = []

    public init() {}

    public init(_ people: some Sequence<Person>) {
        for person in people { append(person) }
    }

    public init(arrayLiteral people: Person...) { self.init(people) }

    /// Room for `people` more people with `devices` more devices in all.
    public mutating func reserveCapacity(people: Int, devices: Int) {
        stored.reserveCapacity(stored.count + people)
        self.devices.reserveCapacity(self.devices.count + devices)
    }

    /// A scenario holds fewer than 2^31 devices (a million generated people have at most three
    /// million): where a person's devices start fits in four bytes.
    public mutating func append(_ person: Person) {
        precondition(devices.count + person.devices.count < Int(Int32.max), "a scenario holds fewer than 2^31 devices")
        stored.append(Stored(id: person.id, name: person.name, externalID: person.externalID,
                             doNotDisturb: person.doNotDisturb, firstDevice: Int32(devices.count)))
        devices.append(contentsOf: person.devices)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { stored.count }

    public subscript(index: Int) -> Person {
        let person = stored[index]
        return Person(id: person.id, name: person.name, externalID: person.externalID,
                      doNotDisturb: person.doNotDisturb, devices: Array(devices(at: index)))
    }

    public func id(at index: Int) -> String { stored[index].id }

    public func isDoNotDisturb(at index: Int) -> Bool { stored[index].doNotDisturb }

    /// Where the person's devices are in `devices`.
    public func deviceRange(at index: Int) -> Range<Int> {
        Int(stored[index].firstDevice)..<(index + 1 < stored.count ? Int(stored[index + 1].firstDevice) : devices.count)
    }

    public func devices(at index: Int) -> ArraySlice<ScenarioDevice> { devices[deviceRange(at: index)] }

    /// The first person with this id.
    public func index(ofID id: String) -> Int? { stored.firstIndex { $0.id == id } }
}
