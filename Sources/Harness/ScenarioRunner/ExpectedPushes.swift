// An event's expected pushes as `run` holds them while it judges the event. A 100,000-person
// call's end expects ~150,000 pushes, and as `ExpectedPush`es (80 bytes each, each naming its
// token, spec and reference push) they were 13 MB of the run's peak; the reference rules'
// fan-out says the same spec and reference push to every device of one kind, so a push is
// kept as its device's position and its kind: 8 bytes.
import PushModel
import Scenario

/// An event's expected pushes, in the oracle's order: a push the reference rules decided for
/// a device of the run's index as the device's position and its kind (spec and reference
/// push, few an event), anything else (a file's `expect`, a token the index does not know)
/// whole.
public struct ExpectedPushes: RandomAccessCollection, Sendable {
    /// Per push: bit 63 set, the device's position in `devices` (bits 0-31) and the push's
    /// kind in `kinds` (bits 32-62); clear, the push's index in `stored`.
    private var entries: [UInt64] = []
    private var kinds: [Kind] = []
    private var stored: [ExpectedPush] = []
    private let devices: ScenarioDeviceIndex?
    private static let indexedBit: UInt64 = 1 << 63

    private struct Kind: Sendable {
        var spec: String?
        var reference: ContentReference?
    }

    /// Empty; `devices`: the index `append(position:spec:reference:)` takes positions in.
    public init(devices: ScenarioDeviceIndex?) { self.devices = devices }

    /// `pushes` whole; `devices`: the index their `devicePosition`s are in, if they have any.
    public init(_ pushes: [ExpectedPush], devices: ScenarioDeviceIndex? = nil) {
        self.devices = devices
        entries = pushes.indices.map(UInt64.init)
        stored = pushes
    }

    public mutating func reserveCapacity(_ count: Int) { entries.reserveCapacity(count) }

    public mutating func append(_ push: ExpectedPush) {
        entries.append(UInt64(stored.count))
        stored.append(push)
    }

    /// The push to the device at `position` of the index: what it must say, `reference`, and
    /// the spec it must pass.
    public mutating func append(position: Int32, spec: String?, reference: ContentReference?) {
        guard devices != nil, position >= 0 else {
            preconditionFailure("a position needs the index it is in")
        }
        entries.append(Self.indexedBit | UInt64(kind(spec: spec, reference: reference)) << 32 | UInt64(UInt32(position)))
    }

    /// The kind's index: the last few are compared (a fan-out's pushes come a kind at a time).
    private mutating func kind(spec: String?, reference: ContentReference?) -> Int {
        for index in kinds.indices.suffix(4).reversed()
        where kinds[index].spec == spec && Self.same(kinds[index].reference, reference) {
            return index
        }
        kinds.append(Kind(spec: spec, reference: reference))
        return kinds.count - 1
    }

    private static func same(_ left: ContentReference?, _ right: ContentReference?) -> Bool {
        guard let left, let right else { return left == nil && right == nil }
        return left.decidedAtMs == right.decidedAtMs && left.tokenOffset == right.tokenOffset && left.body == right.body
            && left.headers.count == right.headers.count
            && zip(left.headers, right.headers).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { entries.count }

    /// The push whole (its token read from the index).
    public subscript(index: Int) -> ExpectedPush {
        let entry = entries[index]
        guard entry & Self.indexedBit != 0, let devices else { return stored[Int(entry)] }
        let kind = kinds[Int(entry >> 32 & 0x7FFF_FFFF)]
        let position = Int32(bitPattern: UInt32(truncatingIfNeeded: entry))
        return ExpectedPush(token: devices.entries.token(at: Int(position)), spec: kind.spec, reference: kind.reference,
                            devicePosition: position)
    }

    // What judging reads a push at a time, without making the push whole.

    public func token(at index: Int) -> String {
        let entry = entries[index]
        guard entry & Self.indexedBit != 0, let devices else { return stored[Int(entry)].token }
        return devices.entries.token(at: Int(UInt32(truncatingIfNeeded: entry)))
    }

    public func spec(at index: Int) -> String? {
        let entry = entries[index]
        guard entry & Self.indexedBit != 0 else { return stored[Int(entry)].spec }
        return kinds[Int(entry >> 32 & 0x7FFF_FFFF)].spec
    }

    public func reference(at index: Int) -> ContentReference? {
        let entry = entries[index]
        guard entry & Self.indexedBit != 0 else { return stored[Int(entry)].reference }
        return kinds[Int(entry >> 32 & 0x7FFF_FFFF)].reference
    }

    public func devicePosition(at index: Int) -> Int32? {
        let entry = entries[index]
        guard entry & Self.indexedBit != 0 else { return stored[Int(entry)].devicePosition }
        return Int32(bitPattern: UInt32(truncatingIfNeeded: entry))
    }

    /// How many times the push must be accepted.
    public func count(at index: Int) -> Int {
        let entry = entries[index]
        return entry & Self.indexedBit != 0 ? 1 : stored[Int(entry)].count
    }

    /// Whether the push pins body fields or headers (a file's `expect` can).
    public func pinsFieldsOrHeaders(at index: Int) -> Bool {
        let entry = entries[index]
        guard entry & Self.indexedBit == 0 else { return false }
        return !stored[Int(entry)].fields.isEmpty || !stored[Int(entry)].headers.isEmpty
    }

    /// Lets go of what only judging the push's content needed (its pinned fields and headers,
    /// its own reference push); a kind's reference is shared by its pushes and stays.
    public mutating func dropContent(at index: Int) {
        let entry = entries[index]
        guard entry & Self.indexedBit == 0 else { return }
        stored[Int(entry)].fields = []
        stored[Int(entry)].headers = []
        stored[Int(entry)].reference = nil
    }

    /// Every push whole: a list of whole pushes as it is, not copied push by push.
    public var whole: [ExpectedPush] {
        kinds.isEmpty && entries.count == stored.count ? stored : Array(self)
    }

    /// Removes the pushes `isRemoved` says yes to, given each one's device position (nil: not
    /// in the index) and token, keeping the rest in order: in place, so the fan-out's list is
    /// not held twice.
    public mutating func removeAll(where isRemoved: (_ devicePosition: Int32?, _ token: () -> String) -> Bool) {
        let stored = stored
        let devices = devices
        entries.removeAll { entry in
            if entry & Self.indexedBit != 0, let devices {
                let position = Int32(bitPattern: UInt32(truncatingIfNeeded: entry))
                return isRemoved(position) { devices.entries.token(at: Int(position)) }
            }
            return isRemoved(stored[Int(entry)].devicePosition) { stored[Int(entry)].token }
        }
    }

    /// The device's position in `devices` when the push has one (else `self[index].device`
    /// names it), and the spec: what `ExpectedListings` keeps of a push.
    func positionAndSpec(at index: Int) -> (position: Int32?, spec: String?) {
        let entry = entries[index]
        guard entry & Self.indexedBit != 0 else {
            return (devices == nil ? nil : stored[Int(entry)].devicePosition, stored[Int(entry)].spec)
        }
        return (Int32(bitPattern: UInt32(truncatingIfNeeded: entry)), kinds[Int(entry >> 32 & 0x7FFF_FFFF)].spec)
    }
}
