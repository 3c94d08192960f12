// A scenario's devices held once per run. A generated population has 150,000 devices for
// 100,000 people; the runner's names, the walk, the oracle's and the in-process sender's
// device stores each kept their own dictionaries of those strings (~40 MB a copy at that
// size). This index is built once and shared: the devices themselves stay in the scenario's
// `people` (their strings are shared, not copied), and the index keeps positions.
import PushModel
import Scenario
import Synchronization

/// Every device of a scenario once, by id and by token: its people's in file order, then
/// the new ones its events register. Immutable, so one is shared by every part of a run.
public final class ScenarioDeviceIndex: Sendable {
    /// A device and the person it belongs to.
    public struct Entry: Sendable {
        public let person: String
        public let device: ScenarioDevice

        /// The device as the reference rules' store holds it.
        public var storedDevice: Device {
            Device(userID: person, platform: device.platform == .ios ? .ios : .android,
                   kind: device.platform == .ios ? (device.voip ? .voip : .alert) : nil, token: device.token)
        }
    }

    /// People's devices person by person (the first `initialCount`), then events' new ones.
    public let entries: [Entry]
    /// How many of `entries` the people have at the start (what a sender's store starts with).
    public let initialCount: Int
    private let positionOfToken: [DeviceToken: Int32]
    private let positionOfID: [String: Int32]
    /// Each person's devices at the start: a range of `entries` (people's are contiguous).
    private let initialRangeOfPerson: [String: Range<Int32>]
    /// Each device's report name once made: a 100,000-person call's report names every push
    /// of every event, and a fresh string each time cost ~25 MB at its peak.
    private let names: Mutex<[String?]>

    public init(_ scenario: Scenario) {
        var entries: [Entry] = []
        // Exactly: doubling as it grows would leave up to half again unused.
        entries.reserveCapacity(scenario.people.reduce(0) { $0 + $1.devices.count } + scenario.events.count {
            if case .deviceRegistered(_, _, isNew: true) = $0.kind { true } else { false }
        })
        var ranges: [String: Range<Int32>] = [:]
        ranges.reserveCapacity(scenario.people.count)
        for person in scenario.people {
            let first = Int32(entries.count)
            for device in person.devices { entries.append(Entry(person: person.id, device: device)) }
            ranges[person.id] = first..<Int32(entries.count)
        }
        initialCount = entries.count
        for event in scenario.events {
            if case .deviceRegistered(let person, let device, isNew: true) = event.kind {
                entries.append(Entry(person: person, device: device))
            }
        }
        var byToken: [DeviceToken: Int32] = [:]
        var byID: [String: Int32] = [:]
        byToken.reserveCapacity(entries.count)
        byID.reserveCapacity(entries.count)
        for (position, entry) in entries.enumerated() {
            byToken[DeviceToken(entry.device.token)] = Int32(position)
            byID[entry.device.id] = Int32(position)
        }
        self.entries = entries
        positionOfToken = byToken
        positionOfID = byID
        initialRangeOfPerson = ranges
        names = Mutex(Array(repeating: nil, count: entries.count))
    }

    /// The position in `entries` of the device with `token` (any form).
    public func position(ofToken token: DeviceToken) -> Int? { positionOfToken[token].map(Int.init) }

    /// The token, as written, of the device with this id.
    public func token(ofDevice id: String) -> String? { positionOfID[id].map { entries[Int($0)].device.token } }

    /// The token as the scenario writes it (what the reference rules and the sender's store
    /// hold) of `token` in any form.
    public func writtenToken(_ token: DeviceToken) -> String? { positionOfToken[token].map { entries[Int($0)].device.token } }

    /// How reports name the device of `token` (any form): `<person>/<device>`, else the token.
    /// Made when asked: a load run names devices only in its findings.
    public func name(ofToken token: String) -> String {
        guard let position = positionOfToken[DeviceToken(token)].map(Int.init) else { return token }
        return name(at: position)
    }

    /// How reports name the device at `position`: `<person>/<device>`.
    public func name(at position: Int) -> String {
        names.withLock { names in
            if let name = names[position] { return name }
            let entry = entries[position]
            let name = entry.person + "/" + entry.device.id
            names[position] = name
            return name
        }
    }

    /// How many devices there are: positions run from 0 to this.
    public var count: Int { entries.count }

    /// The positions of the person's devices at the start (empty for someone unknown).
    public func initialPositions(of person: String) -> Range<Int> {
        initialRangeOfPerson[person].map { Int($0.lowerBound)..<Int($0.upperBound) } ?? 0..<0
    }

    /// The scenario has an Android device (then FCM pushes, and its project, matter).
    public var hasAndroidDevices: Bool { entries.contains { $0.device.platform == .android } }
}

/// Positions of a `ScenarioDeviceIndex`'s devices, a bit each: the walk's live devices, the
/// devices a sender's store lists. A set of 150,000 tokens hashed every token it was asked
/// about; a bit is found by its position.
public struct DevicePositions: Sendable, Equatable {
    private var words: [UInt64]

    /// Room for positions below `count` (more grow it).
    public init(count: Int) { words = Array(repeating: 0, count: (count + 63) / 64) }

    public func contains(_ position: Int) -> Bool {
        let word = position >> 6
        return word < words.count && words[word] & (1 << UInt64(position & 63)) != 0
    }

    public mutating func insert(_ position: Int) {
        let word = position >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(position & 63)
    }

    public mutating func remove(_ position: Int) {
        let word = position >> 6
        if word < words.count { words[word] &= ~(1 << UInt64(position & 63)) }
    }

    public var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// The positions in this set and not in `other`, ascending.
    public func subtracting(_ other: DevicePositions) -> [Int] {
        var positions: [Int] = []
        for (index, word) in words.enumerated() {
            var left = word & ~(index < other.words.count ? other.words[index] : 0)
            while left != 0 {
                positions.append(index << 6 | left.trailingZeroBitCount)
                left &= left - 1
            }
        }
        return positions
    }

    /// Every position in the set, ascending.
    public var positions: [Int] { subtracting(DevicePositions(count: 0)) }
}
