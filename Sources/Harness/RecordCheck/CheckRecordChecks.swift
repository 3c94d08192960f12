// What `check` verifies about the recording itself: its sequence numbers and its stored verdicts.
import Clocks
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import Reports
import SpecValidator

/// The record's `seq` numbers in file order: 1, 2, 3… with no gaps. A jump means the gateway
/// lost lines (`RecordFile` counts them on a full disk and leaves the gap); a return to 1 is a
/// new run appended to the file (`serve --record-append`), not a gap. Each recording of several
/// (replicas) numbers its own lines, so each is judged apart.
public struct SequenceCheck {
    public struct Gap: Equatable {
        public var from: Int
        public var to: Int
        /// The recording it is in, when several are checked.
        public var replica: String?
        /// A jump forward: the lines between are missing.
        public var missing: Int { to - from - 1 }
        /// Forward, the lines between are missing; backward (not to 1), the file is out of order.
        public var description: String {
            (replica.map { "\($0): " } ?? "") + (to > from
                ? "seq jumps from \(from) to \(to): \(Format.counted(missing, "line")) missing (the gateway lost them, e.g. on a full disk)"
                : "seq goes back from \(from) to \(to): lines out of order or repeated")
        }
    }

    /// The last seq of each recording, by its index.
    private var last: [Int: Int] = [:]
    /// Every gap counted, the first 20 kept: a million of them cost no more than 20.
    public private(set) var gaps = FirstExamples<Gap>()
    /// Lines missing over all forward gaps.
    public private(set) var missingLines = 0

    public init() {}

    /// `recording`: which of several recordings the line is from (its index), and `replica` its name.
    public mutating func add(_ sequence: Int, recording: Int = 0, replica: String? = nil) {
        defer { last[recording] = sequence }
        guard let last = last[recording], sequence != last + 1, sequence != 1 else { return }
        let gap = Gap(from: last, to: sequence, replica: replica)
        gaps.add(gap)
        missingLines += max(0, gap.missing)
    }
}

/// Where the verdict the gateway stored (`serve --specs`) and the one `check` computes now
/// differ (the specs changed since the run): counted and the first few seqs kept. Today's
/// verdict is the one that counts; this only says the record's own verdicts are stale.
public struct StoredVerdictDifferences {
    public static let listed = 5
    public private(set) var count = 0
    public private(set) var firstPlaces: [RecordPlace] = []
    /// Apps the recording's verdicts claimed for a product (a spec judged them) that today's
    /// spec set and configuration do not: product → bundle ids and FCM projects, with how
    /// many pushes. Checked so, the pushes are "not covered" and nothing is judged: the
    /// recording was made with another `--spec-config`.
    public private(set) var unclaimed: [String: (bundleIDs: [String], projects: [String], pushes: Int)] = [:]

    public mutating func compare(stored: RecordedVerdict?, computed: SpecVerdict, at place: RecordPlace) {
        // A verdict without a judgement holds only gateway warnings: the gateway judged nothing.
        guard let stored = stored?.judgement else { return }
        let storedCovered = stored.covered
        if storedCovered, let uncovered = computed.uncovered, let identity = uncovered.identity,
           let product = stored.spec?.split(separator: ".").first.map(String.init) {
            var entry = unclaimed[product] ?? ([], [], 0)
            entry.pushes += 1
            if uncovered.route == .apns {
                let bundleID = APNSPushType.allCases.compactMap(\.requiredTopicSuffix).first { identity.hasSuffix($0) }
                    .map { String(identity.dropLast($0.count)) } ?? identity
                if !entry.bundleIDs.contains(bundleID) { entry.bundleIDs.append(bundleID) }
            } else if !entry.projects.contains(identity) {
                entry.projects.append(identity)
            }
            unclaimed[product] = entry
        }
        let same = !computed.outOfScope && stored.spec == computed.specID
            && stored.ok == computed.violations.isEmpty && storedCovered == (computed.uncovered == nil)
        guard !same else { return }
        count += 1
        if firstPlaces.count < Self.listed { firstPlaces.append(place) }
    }

    public var summaryLine: String? {
        guard count > 0 else { return nil }
        let seqs = firstPlaces.map(\.description).joined(separator: ", ") + (count > firstPlaces.count ? ", …" : "")
        return "stored verdicts differ on \(Format.counted(count, "request")) (\(seqs)): the specs changed since the recording; "
            + "the results above are today's"
    }

    public func json() -> JSONValue {
        var object: JSONObject = ["count": .number(Double(count)), "first_seqs": .array(firstPlaces.map { .number(Double($0.sequence)) })]
        if firstPlaces.contains(where: { $0.replica != nil }) {
            object["first_replicas"] = .array(firstPlaces.map { .string($0.replica ?? "") })
        }
        return .object(object)
    }

    /// Why this check judged less than the recording did, and what to pass; nil when today's
    /// spec set claims every app the recording's verdicts claimed. `specs` is today's config.
    public func unclaimedMessage(config: JSONValue) -> String? {
        guard !unclaimed.isEmpty else { return nil }
        var override = JSONObject()
        var named: [String] = []
        for product in unclaimed.keys.sorted() {
            let entry = unclaimed[product]!
            if let claim = ProductIdentities.claimingEntry(config: config, product: product, bundleIDs: entry.bundleIDs,
                                                           fcmProjects: entry.projects) {
                override[product] = .object(claim.entry)
            }
            named.append("\((entry.bundleIDs + entry.projects.map { "FCM project " + $0 }).joined(separator: ", ")) for \(product) "
                         + "(\(entry.pushes) push\(entry.pushes == 1 ? "" : "es"))")
        }
        return "the recording was judged with specs that claimed \(named.joined(separator: "; ")), which these specs and this "
            + "configuration do not: those pushes are not judged here. Pass the --spec-config the gateway ran with, or one holding "
            + JSONValue.object(override).serialized()
    }
}
