// A scenario's devices held once per run. A generated population has 150,000 devices for
// 100,000 people; the runner's names, the walk, the oracle's and the in-process sender's
// device stores each kept their own dictionaries of those strings (~40 MB a copy at that
// size). This index is built once and shared: the devices themselves stay in the scenario's
// `people` (read from there, not copied), and the index keeps positions.
import Hashing
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

    /// Every device by position: people's person by person (the first `initialCount`: the
    /// scenario's own list of its people's devices, read from there, not copied), then events'
    /// new ones. A copy of each device with its person was 8.4 MB at 150,000 devices, a
    /// position's person 4 bytes.
    public struct Entries: RandomAccessCollection, Sendable {
        private let people: ScenarioPeople
        /// Each initial position's person, as an index into `people`.
        private let personOfPosition: [Int32]
        /// The devices events register, after the people's.
        private let registered: [Entry]

        init(_ scenario: Scenario) {
            people = scenario.people
            var personOfPosition: [Int32] = []
            // Exactly: doubling as they grow would leave up to half again unused.
            personOfPosition.reserveCapacity(people.devices.count)
            for index in people.indices {
                personOfPosition.append(contentsOf: repeatElement(Int32(index), count: people.deviceRange(at: index).count))
            }
            self.personOfPosition = personOfPosition
            registered = scenario.events.compactMap { event in
                guard case .deviceRegistered(let person, let device, isNew: true) = event.kind else { return nil }
                return Entry(person: person, device: device)
            }
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int { personOfPosition.count + registered.count }

        public subscript(position: Int) -> Entry {
            guard position < personOfPosition.count else { return registered[position - personOfPosition.count] }
            return Entry(person: people.id(at: Int(personOfPosition[position])), device: people.devices[position])
        }

        /// The id of the device at `position` (no entry made: its token is not retained).
        func deviceID(at position: Int) -> String {
            guard position < personOfPosition.count else { return registered[position - personOfPosition.count].device.id }
            return people.devices[position].id
        }

        /// The token, as written, of the device at `position` (no entry made).
        func token(at position: Int) -> String {
            guard position < personOfPosition.count else { return registered[position - personOfPosition.count].device.token }
            return people.devices[position].token
        }

        /// How many people the scenario has: `personID(_:)` and `initialPositions(ofPerson:)` take 0 to this.
        var personCount: Int { people.count }

        func personID(_ index: Int) -> String { people.id(at: index) }

        /// The positions of the person's devices at the start.
        func initialPositions(ofPerson index: Int) -> Range<Int> { people.deviceRange(at: index) }

        /// How many of the positions the people have at the start.
        var initialCount: Int { personOfPosition.count }
    }

    public let entries: Entries
    /// How many of `entries` the people have at the start (what a sender's store starts with).
    public let initialCount: Int
    private let positionOfToken: TokenPositions
    /// Positions by device id, confirmed against `entries` (a `[String: Int32]` was 5 MB at
    /// 150,000 devices, this 2).
    private let positionOfID: PositionTable
    /// People by id (indices into the scenario's people), confirmed against `entries`.
    private let personOfID: PositionTable
    /// Report names once made, by position: only the devices a finding names (a problem, a
    /// dead token), again and again; a report's listing names its pushes afresh
    /// (`makeName(at:)`), so a slot for every device (2.4 MB at 150,000) was mostly empty.
    private let names = Mutex<[Int32: String]>([:])

    public init(_ scenario: Scenario) {
        let entries = Entries(scenario)
        self.entries = entries
        initialCount = entries.initialCount
        positionOfToken = TokenPositions(entries)
        positionOfID = PositionTable(count: entries.count, hashAt: { entries.deviceID(at: $0).hashed(seed: $1) },
                                     sameKey: { entries.deviceID(at: $0) == entries.deviceID(at: $1) })
        personOfID = PositionTable(count: entries.personCount, hashAt: { entries.personID($0).hashed(seed: $1) },
                                   sameKey: { entries.personID($0) == entries.personID($1) })
    }

    /// The position in `entries` of the device with `token` (any form).
    public func position(ofToken token: DeviceToken) -> Int? { positionOfToken.position(of: token) }

    /// The token, as written, of the device with this id.
    public func token(ofDevice id: String) -> String? {
        positionOfID.position(hash: id.hashed(seed: positionOfID.seed)) { entries.deviceID(at: $0) == id }.map { entries[$0].device.token }
    }

    /// The token as the scenario writes it (what the reference rules and the sender's store
    /// hold) of `token` in any form.
    public func writtenToken(_ token: DeviceToken) -> String? { position(ofToken: token).map { entries[$0].device.token } }

    /// How reports name the device of `token` (any form): `<person>/<device>`, else the token.
    /// Made when asked: a load run names devices only in its findings.
    public func name(ofToken token: String) -> String {
        guard let position = position(ofToken: DeviceToken(token)) else { return token }
        return name(at: position)
    }

    /// How reports name the device at `position`: `<person>/<device>`, kept once made (a
    /// problem or a dead token names its device again and again).
    public func name(at position: Int) -> String {
        names.withLock { names in
            if let name = names[Int32(position)] { return name }
            let name = makeName(at: position)
            names[Int32(position)] = name
            return name
        }
    }

    /// `name(at:)` made afresh and not kept: for a report listing every push once.
    public func makeName(at position: Int) -> String {
        let entry = entries[position]
        return entry.person + "/" + entry.device.id
    }

    /// Every device's person and id, by position: what a report that outlives the run names
    /// its devices by, without the people, their tokens and this index.
    public func reportNames() -> DeviceNames {
        DeviceNames(people: entries.indices.map { entries[$0].person }, devices: entries.indices.map(entries.deviceID(at:)))
    }

    /// How many devices there are: positions run from 0 to this.
    public var count: Int { entries.count }

    /// The positions of the person's devices at the start (empty for someone unknown).
    public func initialPositions(of person: String) -> Range<Int> {
        guard let index = personOfID.position(hash: person.hashed(seed: personOfID.seed),
                                              matching: { entries.personID($0) == person }) else { return 0..<0 }
        return entries.initialPositions(ofPerson: index)
    }

    /// The scenario has an Android device (then FCM pushes, and its project, matter).
    public var hasAndroidDevices: Bool { entries.contains { $0.device.platform == .android } }
}

/// What names a device at a position: `<person>/<device>`.
public protocol DeviceNaming: AnyObject, Sendable {
    func makeName(at position: Int) -> String
}

extension ScenarioDeviceIndex: DeviceNaming {}

/// Each position's person and device id (ids a scenario writes are short: mostly no storage
/// of their own), named when asked. Named devices once kept a name string each and a table of
/// them (the end of a 100,000-person run made 23 MB of names while its people were alive).
public final class DeviceNames: DeviceNaming {
    private let people: [String]
    private let devices: [String]

    init(people: [String], devices: [String]) {
        self.people = people
        self.devices = devices
    }

    public func makeName(at position: Int) -> String { people[position] + "/" + devices[position] }
}

/// Device positions by token, for the index: every push `run` judges and every device a
/// sender's store lists is looked up here. A `[DeviceToken: Int32]` of 150,000 tokens was the
/// largest part of judging a 100,000-person call (perf: Swift's SipHash over each 64- or
/// 160-byte token, then the key, the bitmap and the value in three arrays). Here the hash
/// reads the token eight bytes at a time (`PositionTable`), and a tag that matches is
/// confirmed against the token itself.
struct TokenPositions: Sendable {
    private let table: PositionTable
    /// The devices, whose tokens confirm a match: a list of every token as compared was 2.4 MB
    /// at 150,000 devices, and a token as written is its compared form but for upper-case hex.
    private let entries: ScenarioDeviceIndex.Entries

    /// A token two devices have is found at its last position.
    init(_ entries: ScenarioDeviceIndex.Entries) {
        self.entries = entries
        table = PositionTable(count: entries.count, hashAt: { DeviceToken(entries.token(at: $0)).comparable.hashed(seed: $1) },
                              sameKey: { DeviceToken(entries.token(at: $0)) == DeviceToken(entries.token(at: $1)) })
    }

    func position(of token: DeviceToken) -> Int? {
        table.position(hash: token.comparable.hashed(seed: table.seed)) { position in
            // As written first (the common case, and no pass over its bytes to classify them).
            let written = entries.token(at: position)
            return written == token.comparable || DeviceToken(written) == token
        }
    }
}

/// Positions 0..<count by a key the table does not hold: a slot is a tag of the key's hash and
/// the position in one 32-bit word, and a tag that matches is confirmed by the caller against
/// the key at that position (4 bytes a slot, where a dictionary held the key and the value).
/// The position takes the bits `count` needs and the tag the rest: 15 bits of tag at 100,000
/// people, so one probe in 32,768 that reaches another key confirms it in vain. Slots of a
/// 32-bit tag and a 32-bit position were 5.2 MB of a 100,000-person call's heap (heaptrack),
/// these 2.6. Built once and never changed: a key not in the table only walks the slots the
/// table's own keys filled, and the seed is random, so no input can make a look-up long.
struct PositionTable: Sendable {
    /// A tag (the hash's top bits) in the high bits, the position + 1 in the low `positionBits`;
    /// 0 is an empty slot.
    private let slots: [UInt32]
    private let mask: Int
    /// How many low bits of a slot hold the position + 1.
    private let positionBits: UInt32
    /// What a key's hash is seeded with (`String.hashed(seed:)`).
    let seed: UInt64

    /// `hashAt(position, seed)`: the hash of the key at `position`. `sameKey`: two positions
    /// have one key (the later is found). `count` below 2^31 (a scenario's devices, read into
    /// memory, are far fewer).
    init(count: Int, hashAt: (Int, UInt64) -> UInt64, sameKey: (Int, Int) -> Bool) {
        precondition(count < 1 << 31, "a position table holds fewer than 2^31 positions")
        seed = UInt64.random(in: .min ... .max)
        positionBits = UInt32(max(1, Int.bitWidth - (count + 1).leadingZeroBitCount))
        // At most 4/5 full: a few probes a look-up, most in the same cache line (sixteen slots
        // a line). At 2/3 the 100,000 people of a generated call took 262,144 slots, not half.
        var capacity = 8
        while capacity < count + count / 4 { capacity *= 2 }
        mask = capacity - 1
        let positionMask = Self.positionMask(positionBits)
        var slots = [UInt32](repeating: 0, count: capacity)
        for position in 0..<count {
            let hash = hashAt(position, seed)
            let tag = Self.tag(of: hash, positionMask: positionMask)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] != 0, !(slots[slot] & ~positionMask == tag && sameKey(Int(slots[slot] & positionMask) - 1, position)) {
                slot = (slot + 1) & mask
            }
            slots[slot] = tag | UInt32(position + 1)
        }
        self.slots = slots
    }

    private static func positionMask(_ positionBits: UInt32) -> UInt32 { UInt32.max >> (32 - positionBits) }

    /// The hash's top bits, where a slot keeps them (none when the position takes all 32).
    private static func tag(of hash: UInt64, positionMask: UInt32) -> UInt32 {
        UInt32(truncatingIfNeeded: hash >> 32) & ~positionMask
    }

    /// The position whose key hashes to `hash` (seeded with `seed`) and that `matching` confirms.
    func position(hash: UInt64, matching: (Int) -> Bool) -> Int? {
        let positionMask = Self.positionMask(positionBits)
        let tag = Self.tag(of: hash, positionMask: positionMask)
        return slots.withUnsafeBufferPointer { slots -> Int? in
            var slot = Int(truncatingIfNeeded: hash) & mask
            while true {
                let entry = slots[slot]
                if entry == 0 { return nil }
                if entry & ~positionMask == tag {
                    let position = Int(entry & positionMask) - 1
                    if matching(position) { return position }
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// The slots' bytes (what the table costs beyond its keys).
    var slotBytes: Int { slots.count * MemoryLayout<UInt32>.stride }
}

extension String {
    /// The UTF-8 bytes, eight at a time, each word mixed in (SplitMix64's mixer): a
    /// `PositionTable`'s hash.
    func hashed(seed: UInt64) -> UInt64 {
        var text = self
        return text.withUTF8 { bytes -> UInt64 in
            let raw = UnsafeRawBufferPointer(bytes)
            var hash = seed ^ UInt64(raw.count)
            var offset = 0
            while offset + 8 <= raw.count {
                hash = SplitMix64.mix(hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            var tail: UInt64 = 0
            for (shift, byte) in raw[offset...].enumerated() { tail |= UInt64(byte) << UInt64(8 * shift) }
            return SplitMix64.mix(hash ^ tail)
        }
    }
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
