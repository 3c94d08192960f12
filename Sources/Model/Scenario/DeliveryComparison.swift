// Did the pushes reach exactly the right devices? The comparison `check --expect` and
// `run` share.
import JSON
import PushModel

/// The accepted pushes of a recording (or of one event), per device token and spec.
///
/// A push counts as delivered when the gateway accepted it (2xx): a retried 503 followed by a
/// 200 is one delivery, and a push the gateway refused (a gone token's 410) reached no device.
public struct DeliveryTally: Sendable {
    /// One listed delivery: (device token, spec) accepted exactly `count` times.
    public struct Expected: Sendable, Equatable {
        public var token: String
        /// nil: any spec (or none) will do.
        public var spec: String?
        public var count: Int

        public init(token: String, spec: String?, count: Int = 1) {
            self.token = token
            self.spec = spec
            self.count = count
        }
    }

    public struct Delivery: Sendable {
        public var spec: String?
        public var sequence: Int
    }

    public private(set) var byToken: [String: [Delivery]] = [:]

    public init() {}

    /// Notes one answered request: counted only if it was a push (`token` non-nil) the
    /// gateway accepted.
    public mutating func add(token: String?, status: Int?, spec: String?, sequence: Int) {
        guard let status, (200..<300).contains(status), let token else { return }
        byToken[AddressedDevice.comparable(token), default: []].append(Delivery(spec: spec, sequence: sequence))
    }

    /// The comparison: listed deliveries that did not happen as often as listed, and pushes to
    /// devices (or of specs) nobody listed.
    public func compare(with expected: [Expected]) -> DeliveryComparison {
        var remaining = byToken
        var comparison = DeliveryComparison(expectedCount: expected.reduce(0) { $0 + $1.count })
        // Entries naming a spec first, so a "(any spec)" entry only takes what they leave.
        let ordered = expected.filter { $0.spec != nil } + expected.filter { $0.spec == nil }
        for entry in ordered {
            let key = AddressedDevice.comparable(entry.token)
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
            for delivery in deliveries { comparison.unexpected.append((token, delivery.spec, delivery.sequence)) }
        }
        comparison.unexpected.sort { $0.sequence < $1.sequence }
        return comparison
    }
}

/// What `compare` found.
public struct DeliveryComparison: Sendable {
    public var expectedCount: Int
    public var asExpected = 0
    public var missing: [(entry: DeliveryTally.Expected, got: Int)] = []
    public var repeated: [(entry: DeliveryTally.Expected, got: Int, extraSequences: [Int])] = []
    public var unexpected: [(token: String, spec: String?, sequence: Int)] = []

    public init(expectedCount: Int) { self.expectedCount = expectedCount }

    public var passed: Bool { missing.isEmpty && repeated.isEmpty && unexpected.isEmpty }

    public var problems: [String] {
        func name(_ spec: String?) -> String { spec ?? "a push" }
        return missing.map { "missing: \(name($0.entry.spec)) to \($0.entry.token): expected \($0.entry.count), accepted \($0.got)" }
            + repeated.map {
                "repeated: \(name($0.entry.spec)) to \($0.entry.token): expected \($0.entry.count), accepted \($0.got) "
                    + "(extra: request #\($0.extraSequences.map(String.init).joined(separator: ", #")))"
            }
            + unexpected.map { "unexpected: \($0.spec ?? "an unmatched push") to \($0.token) (request #\($0.sequence))" }
    }
}
