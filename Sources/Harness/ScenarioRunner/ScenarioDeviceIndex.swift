// A scenario's devices held once per run. A generated population has 150,000 devices for
// 100,000 people; the runner's names, the walk, the oracle's and the in-process sender's
// device stores each kept their own dictionaries of those strings (~40 MB a copy at that
// size). This index is built once and shared: the devices themselves stay in the scenario's
// `people` (their strings are shared, not copied), and the index keeps positions.
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

    /// People's devices person by person (the first `initialCount`), then events' new ones.
    public let entries: [Entry]
    /// How many of `entries` the people have at the start (what a sender's store starts with).
    public let initialCount: Int
    private let positionOfToken: TokenPositions
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
        var byID: [String: Int32] = [:]
        byID.reserveCapacity(entries.count)
        for (position, entry) in entries.enumerated() { byID[entry.device.id] = Int32(position) }
        self.entries = entries
        positionOfToken = TokenPositions(entries.map { DeviceToken($0.device.token) })
        positionOfID = byID
        initialRangeOfPerson = ranges
        names = Mutex(Array(repeating: nil, count: entries.count))
    }

    /// The position in `entries` of the device with `token` (any form).
    public func position(ofToken token: DeviceToken) -> Int? { positionOfToken.position(of: token) }

    /// The token, as written, of the device with this id.
    public func token(ofDevice id: String) -> String? { positionOfID[id].map { entries[Int($0)].device.token } }

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
            if let name = names[position] { return name }
            let name = makeName(at: position)
            names[position] = name
            return name
        }
    }

    /// `name(at:)` made afresh and not kept: for a report listing every push once.
    public func makeName(at position: Int) -> String {
        let entry = entries[position]
        return entry.person + "/" + entry.device.id
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

/// Device positions by token, for the index: every push `run` judges and every device a
/// sender's store lists is looked up here. A `[DeviceToken: Int32]` of 150,000 tokens was the
/// largest part of judging a 100,000-person call (perf: Swift's SipHash over each 64- or
/// 160-byte token, then the key, the bitmap and the value in three arrays). Here a slot holds
/// a tag of the hash and the position in one word, the hash reads the token eight bytes at a
/// time, and a tag that matches is confirmed against the token itself. Built once and never
/// changed: a token not in the table (a sender's stray push) only walks the slots the
/// scenario's own tokens filled, so no input can make a look-up long.
struct TokenPositions: Sendable {
    /// The hash's top 32 bits, then the position + 1; 0 is an empty slot.
    private let slots: [UInt64]
    private let mask: Int
    private let seed: UInt64
    /// Each position's token, as compared.
    private let tokens: [DeviceToken]

    /// `tokens` in position order; a token listed twice is found at its last position.
    init(_ tokens: [DeviceToken]) {
        self.tokens = tokens
        seed = UInt64.random(in: .min ... .max)
        // At most ~2/3 full: a few probes a look-up, most in the same cache line.
        var capacity = 8
        while capacity < tokens.count + tokens.count / 2 { capacity *= 2 }
        mask = capacity - 1
        var slots = [UInt64](repeating: 0, count: capacity)
        for (position, token) in tokens.enumerated() {
            let hash = Self.hash(token, seed: seed)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] != 0, !(slots[slot] >> 32 == hash >> 32 && tokens[Int(slots[slot] & 0xFFFF_FFFF) - 1] == token) {
                slot = (slot + 1) & mask
            }
            slots[slot] = hash & 0xFFFF_FFFF_0000_0000 | UInt64(position + 1)
        }
        self.slots = slots
    }

    func position(of token: DeviceToken) -> Int? {
        let hash = Self.hash(token, seed: seed)
        let tag = hash >> 32
        return slots.withUnsafeBufferPointer { slots -> Int? in
            var slot = Int(truncatingIfNeeded: hash) & mask
            while true {
                let entry = slots[slot]
                if entry == 0 { return nil }
                if entry >> 32 == tag {
                    let position = Int(entry & 0xFFFF_FFFF) - 1
                    if tokens[position] == token { return position }
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// The token's bytes, eight at a time, each word mixed in (SplitMix64's mixer).
    private static func hash(_ token: DeviceToken, seed: UInt64) -> UInt64 {
        var text = token.comparable
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
