// Did the pushes reach exactly the right devices? The comparison `check --expect` and
// `run` share, over the one expected push.
import JSON
import PushModel

/// A push that must be delivered: to one device token, of one spec (or of any), so many times.
/// The one expected push: an event's in `run` and in a load run (the file's `expect`, or the
/// reference rules' decision: `ScenarioOracle.expected`), an entry of `check --expect`'s file.
public struct ExpectedPush: Sendable {
    /// As written (compared as a `DeviceToken`).
    public var token: String
    /// The spec id the gateway's judge will name; nil: any spec (or none) will do (`check
    /// --expect` without `spec`).
    public var spec: String?
    /// The reference rules' push for this device, when they are the oracle: what the sender's
    /// push must say (`PushSpec.compareContent`).
    public var reference: ContentReference?
    /// The device's position in the run's device index, when a scenario's oracle listed the
    /// push: `run` keys the expectation by it rather than by hashing the token again.
    public var devicePosition: Int32?
    /// What only some expectations have (a file's `expect`, `check --expect`), in one box: a
    /// fan-out's 150,000 expectations from the reference rules have none of it, and held
    /// inline it was a third of each (7 MB of a 100,000-person call's peak).
    private var particulars: Particulars?

    /// How many times it must be accepted (`check --expect`'s `count`; 1 in a scenario).
    public var count: Int {
        get { particulars?.details.count ?? 1 }
        set { details.count = newValue }
    }
    /// As reports name the device: `<person>/<device>` in a scenario, the token otherwise.
    public var device: String {
        get { particulars?.details.device ?? token }
        set { details.device = newValue }
    }
    /// Pinned body fields (the file's `expect`).
    public var fields: [(pointer: JSONPointer, value: JSONValue)] {
        get { particulars?.details.fields ?? [] }
        set { details.fields = newValue }
    }
    /// Pinned request headers (lowercase names; nil: absent).
    public var headers: [(name: String, value: String?)] {
        get { particulars?.details.headers ?? [] }
        set { details.headers = newValue }
    }
    /// The seed sentence behind the expectation.
    public var source: String? {
        get { particulars?.details.source }
        set { details.source = newValue }
    }

    public init(device: String? = nil, token: String, spec: String?, count: Int = 1,
                fields: [(pointer: JSONPointer, value: JSONValue)] = [], headers: [(name: String, value: String?)] = [],
                source: String? = nil, reference: ContentReference? = nil, devicePosition: Int32? = nil) {
        self.devicePosition = devicePosition
        self.token = token
        self.spec = spec
        self.reference = reference
        details = Details(count: count, device: device == token ? nil : device, fields: fields, headers: headers, source: source)
    }

    private struct Details: Sendable {
        var count = 1
        /// nil: the token.
        var device: String?
        var fields: [(pointer: JSONPointer, value: JSONValue)] = []
        var headers: [(name: String, value: String?)] = []
        var source: String?

        var isDefault: Bool { count == 1 && device == nil && fields.isEmpty && headers.isEmpty && source == nil }
    }

    private final class Particulars: Sendable {
        let details: Details
        init(_ details: Details) { self.details = details }
    }

    /// Changed as a whole: a new box (or none, when nothing is left in it).
    private var details: Details {
        get { particulars?.details ?? Details() }
        set { particulars = newValue.isDefault ? nil : Particulars(newValue) }
    }

    /// `spec`, or what a report says of a push of any spec.
    public var specName: String { spec ?? "a push" }
}

/// The accepted pushes of a recording (or of one event), per device token and spec.
///
/// A push counts as delivered when the gateway accepted it (2xx): a retried 503 followed by a
/// 200 is one delivery, and a push the gateway refused (a gone token's 410) reached no device.
public struct DeliveryTally: Sendable {
    public struct Delivery: Sendable {
        public var spec: String?
        public var sequence: Int
    }

    public private(set) var byToken: [DeviceToken: [Delivery]] = [:]

    public init() {}

    /// Notes one answered request: counted only if it was a push (`token` non-nil) the
    /// gateway accepted.
    public mutating func add(token: String?, status: Int?, spec: String?, sequence: Int) {
        guard let status, (200..<300).contains(status), let token else { return }
        byToken[DeviceToken(token), default: []].append(Delivery(spec: spec, sequence: sequence))
    }

    /// The comparison: listed deliveries that did not happen as often as listed, and pushes to
    /// devices (or of specs) nobody listed.
    public func compare(with expected: [ExpectedPush]) -> DeliveryComparison {
        var remaining = byToken
        var comparison = DeliveryComparison(expectedCount: expected.reduce(0) { $0 + $1.count })
        // Entries naming a spec first, so a "(any spec)" entry only takes what they leave.
        let ordered = expected.filter { $0.spec != nil } + expected.filter { $0.spec == nil }
        for entry in ordered {
            let key = DeviceToken(entry.token)
            var deliveries = remaining[key] ?? []
            let matching = deliveries.indices.filter { entry.spec == nil || deliveries[$0].spec == entry.spec }
            let taken = Array(matching.prefix(entry.count))
            comparison.asExpected += taken.count
            if taken.count < entry.count {
                comparison.missing.append((entry, taken.count))
            } else if matching.count > entry.count {
                let extra = matching.dropFirst(entry.count).map { deliveries[$0].sequence }
                comparison.repeated.append((entry, matching.count, extra))
            }
            let used = Set(matching)  // repeats are reported above, not again as unexpected
            deliveries = deliveries.indices.filter { !used.contains($0) }.map { deliveries[$0] }
            remaining[key] = deliveries
        }
        for (token, deliveries) in remaining.sorted(by: { $0.key < $1.key }) {
            for delivery in deliveries { comparison.unexpected.append((token.comparable, delivery.spec, delivery.sequence)) }
        }
        comparison.unexpected.sort { $0.sequence < $1.sequence }
        return comparison
    }
}

/// What `compare` found.
public struct DeliveryComparison: Sendable {
    public var expectedCount: Int
    public var asExpected = 0
    public var missing: [(entry: ExpectedPush, got: Int)] = []
    public var repeated: [(entry: ExpectedPush, got: Int, extraSequences: [Int])] = []
    public var unexpected: [(token: String, spec: String?, sequence: Int)] = []

    public init(expectedCount: Int) { self.expectedCount = expectedCount }

    public var passed: Bool { missing.isEmpty && repeated.isEmpty && unexpected.isEmpty }

    public var problems: [String] {
        missing.map { "missing: \($0.entry.specName) to \($0.entry.token): expected \($0.entry.count), accepted \($0.got)" }
            + repeated.map {
                "repeated: \($0.entry.specName) to \($0.entry.token): expected \($0.entry.count), accepted \($0.got) "
                    + "(extra: request #\($0.extraSequences.map(String.init).joined(separator: ", #")))"
            }
            + unexpected.map { "unexpected: \($0.spec ?? "an unmatched push") to \($0.token) (request #\($0.sequence))" }
    }
}
