// What `check` verifies about the recording itself: its sequence numbers and its stored verdicts.
import Clocks
import Driver
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import Scenario
import SpecValidator

/// The record's `seq` numbers in file order: 1, 2, 3… with no gaps. A jump means the gateway
/// lost lines (`RecordFile` counts them on a full disk and leaves the gap); a return to 1 is a
/// new run appended to the file (`serve --record-append`), not a gap.
struct SequenceCheck {
    struct Gap: Equatable {
        var from: Int
        var to: Int
        /// A jump forward: the lines between are missing.
        var missing: Int { to - from - 1 }
        /// Forward, the lines between are missing; backward (not to 1), the file is out of order.
        var description: String {
            to > from
                ? "seq jumps from \(from) to \(to): \(missing) line\(missing == 1 ? "" : "s") missing (the gateway lost them, e.g. on a full disk)"
                : "seq goes back from \(from) to \(to): lines out of order or repeated"
        }
    }

    private var last: Int?
    private(set) var gaps: [Gap] = []

    mutating func add(_ sequence: Int) {
        defer { last = sequence }
        guard let last, sequence != last + 1, sequence != 1 else { return }
        gaps.append(Gap(from: last, to: sequence))
    }
}

/// Where the verdict the gateway stored (`serve --specs`) and the one `check` computes now
/// differ (the specs changed since the run): counted and the first few seqs kept. Today's
/// verdict is the one that counts; this only says the record's own verdicts are stale.
struct StoredVerdictDifferences {
    static let listed = 5
    private(set) var count = 0
    private(set) var firstSequences: [Int] = []

    mutating func compare(stored: JSONValue?, computed: SpecVerdict, sequence: Int) {
        // A verdict without `spec` holds only gateway warnings: the gateway judged nothing.
        guard let stored, let storedSpec = stored[RecordLine.name(RecordLine.Field.spec)] else { return }
        let storedCovered = stored[RecordLine.name(RecordLine.Field.covered)] != .bool(false)
        let same = !computed.outOfScope && storedSpec.stringValue == computed.specID
            && stored[RecordLine.name(RecordLine.Field.ok)]?.boolValue == computed.violations.isEmpty && storedCovered == (computed.uncovered == nil)
        guard !same else { return }
        count += 1
        if firstSequences.count < Self.listed { firstSequences.append(sequence) }
    }

    var summaryLine: String? {
        guard count > 0 else { return nil }
        let seqs = firstSequences.map { "#\($0)" }.joined(separator: ", ") + (count > firstSequences.count ? ", …" : "")
        return "stored verdicts differ on \(count) request\(count == 1 ? "" : "s") (\(seqs)): the specs changed since the recording; "
            + "the results above are today's"
    }

    func json() -> JSONValue {
        ["count": .number(Double(count)), "first_seqs": .array(firstSequences.map { .number(Double($0)) })]
    }
}
