// A load run split over N machines, each computing its own part from its segment alone, with no
// coordinator: k6's execution segments (grafana/k6 lib/execution_segment.go), reduced to what a
// Kubernetes Indexed Job gives each pod (JOB_COMPLETION_INDEX of N, and optional weights).
// The rules, with a worked example, are in docs/scale-out.md.
import Hashing

/// A positive rational number in lowest terms (a segment's weight).
public struct SegmentFraction: Sendable, Equatable, CustomStringConvertible {
    public let numerator: Int
    public let denominator: Int

    /// nil when `denominator` is not positive or `numerator` is negative.
    public init?(_ numerator: Int, _ denominator: Int) {
        guard denominator > 0, numerator >= 0 else { return nil }
        let divisor = greatestCommonDivisor(numerator, denominator)
        self.numerator = numerator / Swift.max(divisor, 1)
        self.denominator = denominator / Swift.max(divisor, 1)
    }

    /// `n/d` or a whole number `n`.
    init?(parsing text: Substring) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let numerator = Int(parts[0]) else { return nil }
        let denominator = parts.count == 2 ? Int(parts[1]) : 1
        guard let denominator else { return nil }
        self.init(numerator, denominator)
    }

    public var description: String { denominator == 1 ? "\(numerator)" : "\(numerator)/\(denominator)" }
}

/// Why `--segment` or `--segment-weights` cannot be used.
public enum ExecutionSegmentError: Error, Equatable, CustomStringConvertible {
    case malformedSegment(String)
    case noSegments
    case indexOutOfRange(index: Int, count: Int)
    case malformedWeight(String)
    case zeroWeight(String)
    case weightCount(found: Int, segments: Int)
    case weightsDoNotSumToOne(String)
    case denominatorsTooLarge(Int)

    public var description: String {
        switch self {
        case .malformedSegment(let text):
            return "--segment \"\(text)\": expected I/N with whole numbers, I from 0 to N-1 (as JOB_COMPLETION_INDEX of N pods)"
        case .noSegments:
            return "--segment: N must be at least 1"
        case .indexOutOfRange(let index, let count):
            return "--segment \(index)/\(count): the index must be from 0 to \(count - 1)"
        case .malformedWeight(let text):
            return "--segment-weights: \"\(text)\" is not a fraction such as 1/4"
        case .zeroWeight(let text):
            return "--segment-weights: weight \"\(text)\" is zero; every segment needs a share"
        case .weightCount(let found, let segments):
            return "--segment-weights: \(found) weights for \(segments) segments; give one weight a segment"
        case .weightsDoNotSumToOne(let sum):
            return "--segment-weights: the weights sum to \(sum), not exactly 1"
        case .denominatorsTooLarge(let lcd):
            return "--segment-weights: the weights' common denominator \(lcd) is above \(ExecutionSegment.largestCommonDenominator)"
        }
    }
}

/// This machine's part of a run split into segments.
///
/// The segments are consecutive ranges of [0, 1] whose lengths are the weights (equal by
/// default), and each machine knows them all, so it computes its own part, and it alone:
/// - ``owns(index:)`` stripes work items (events, iterations): of every LCD consecutive indices
///   (LCD the weights' common denominator) each segment owns as many as its weight says,
///   spread as evenly as k6 spreads them; equal segments own `i mod N`.
/// - ``count(of:)`` is how many of the indices `0..<total` it owns (k6's `ScaleInt64`): the counts
///   of all segments sum to `total`, and each only grows as `total` grows.
/// - ``share(of:)`` turns the counts into consecutive ranges of `0..<total`, for splitting things that
///   are not striped (``devices(of:)``).
public struct ExecutionSegment: Sendable, Equatable, CustomStringConvertible {
    /// Past this the striping table (one entry a position) would be too large to be worth it.
    public static let largestCommonDenominator = 1 << 20

    public let index: Int
    public let weights: [SegmentFraction]
    /// The lowest common denominator of the weights: the stripe pattern's period.
    public let commonDenominator: Int
    /// `ownerOfPosition[p]`: the segment that owns every index `i` with `i % commonDenominator == p`.
    let ownerOfPosition: [Int]

    public var segmentCount: Int { weights.count }

    /// The whole run, on one machine.
    public static let whole = try! ExecutionSegment(index: 0, count: 1)

    /// Segment `index` of `count`, with `weights` (reduced fractions summing to exactly 1) or equal ones.
    public init(index: Int, count: Int, weights: [SegmentFraction]? = nil) throws(ExecutionSegmentError) {
        guard count >= 1 else { throw .noSegments }
        guard (0..<count).contains(index) else { throw .indexOutOfRange(index: index, count: count) }
        let weights = weights ?? Array(repeating: SegmentFraction(1, count)!, count: count)
        guard weights.count == count else { throw .weightCount(found: weights.count, segments: count) }
        if let zero = weights.first(where: { $0.numerator == 0 }) { throw .zeroWeight(zero.description) }
        var lcd = 1
        for weight in weights {
            lcd = lcd / greatestCommonDivisor(lcd, weight.denominator) * weight.denominator
            guard lcd <= Self.largestCommonDenominator else { throw .denominatorsTooLarge(lcd) }
        }
        let numerators = weights.map { $0.numerator * (lcd / $0.denominator) }
        let sum = numerators.reduce(0, +)
        guard sum == lcd else { throw .weightsDoNotSumToOne(SegmentFraction(sum, lcd)!.description) }
        self.index = index
        self.weights = weights
        self.commonDenominator = lcd
        self.ownerOfPosition = Self.stripe(numerators: numerators, period: lcd)
    }

    /// `--segment I/N` and, optionally, `--segment-weights w0,w1,…` (fractions such as `1/2,1/4,1/4`).
    public init(parsing segment: String, weights weightList: String? = nil) throws(ExecutionSegmentError) {
        let parts = segment.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]),
              parts.allSatisfy({ !$0.hasPrefix("+") }) else { throw .malformedSegment(segment) }
        guard count >= 1 else { throw .noSegments }
        guard index >= 0, index < count else { throw .indexOutOfRange(index: index, count: count) }
        var weights: [SegmentFraction]?
        if let weightList {
            weights = []
            for text in weightList.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = text.drop { $0 == " " }
                guard let weight = SegmentFraction(parsing: trimmed) else { throw .malformedWeight(String(text)) }
                weights?.append(weight)
            }
        }
        try self.init(index: index, count: count, weights: weights)
    }

    /// k6's form `from:to`, e.g. `1/3:2/3`.
    public var description: String {
        let from = weights[..<index].reduce(SegmentFraction(0, 1)!) { add($0, $1) }
        return "\(from):\(add(from, weights[index]))"
    }

    // MARK: - Striping

    /// Whether this segment owns work item `index` (0-based, as the one-machine run numbers them).
    public func owns(index item: Int) -> Bool {
        precondition(item >= 0, "work items are numbered from 0")
        return ownerOfPosition[item % commonDenominator] == index
    }

    /// How many of the work items `0..<total` this segment owns.
    public func count(of total: Int) -> Int {
        count(of: total) { $0 == index }
    }

    /// This segment's consecutive part of `0..<total`: the parts of all segments, in order, tile it;
    /// each is ``count(of:)`` long, so within one of `total × weight`.
    public func share(of total: Int) -> Range<Int> {
        let start = count(of: total) { $0 < index }
        return start..<start + count(of: total)
    }

    /// The devices (by id) this segment owns: ids ordered by SplitMix64's mix of the FNV-1a hash of their UTF-8 bytes (then by
    /// the bytes), the ``share(of:)`` of that order; the result keeps the order of `ids`. The same
    /// ids give the same partition on every machine; the segments' parts are disjoint and cover `ids`.
    public func devices(of ids: [String]) -> [String] {
        // Hashed once each, not once a comparison: a 200,000-member group has 600,000 devices.
        // FNV-1a alone orders ids that differ in their last characters (a token's index) by
        // those characters, in runs, so one kind of token could crowd into one segment;
        // SplitMix64's finalizer spreads every bit of it over the whole value.
        let hashes = ids.map { SplitMix64.mix(FNV1a.hash64($0.utf8)) }
        let order = ids.indices.sorted { left, right in
            let (a, b) = (hashes[left], hashes[right])
            if a != b { return a < b }
            if ids[left] != ids[right] { return ids[left].utf8.lexicographicallyPrecedes(ids[right].utf8) }
            return left < right
        }
        let mine = Set(order[share(of: ids.count)])
        return ids.indices.filter { mine.contains($0) }.map { ids[$0] }
    }

    private func count(of total: Int, ownedBy owner: (Int) -> Bool) -> Int {
        precondition(total >= 0, "a total cannot be negative")
        let perPeriod = ownerOfPosition.lazy.filter(owner).count
        let partial = ownerOfPosition[..<(total % commonDenominator)].lazy.filter(owner).count
        return total / commonDenominator * perPeriod + partial
    }

    /// k6's striping (`GetStripedOffsets`): segments taken from the largest weight down (ties in
    /// their order); position `p` of `0..<period` goes to the first of them whose next due position,
    /// `taken × period / numerator`, is not after `p`. A segment of numerator `k` thus gets every
    /// `period / k`-th position, as near as the larger segments before it leave.
    static func stripe(numerators: [Int], period: Int) -> [Int] {
        let byWeight = numerators.indices.sorted { numerators[$0] > numerators[$1] || (numerators[$0] == numerators[$1] && $0 < $1) }
        var taken = [Int](repeating: 0, count: numerators.count)
        var owners = [Int](repeating: 0, count: period)
        for position in 0..<period {
            guard let segment = byWeight.first(where: { taken[$0] * period <= position * numerators[$0] }) else {
                preconditionFailure("weights summing to 1 always leave a segment due")
            }
            taken[segment] += 1
            owners[position] = segment
        }
        return owners
    }
}

private func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}

private func add(_ a: SegmentFraction, _ b: SegmentFraction) -> SegmentFraction {
    SegmentFraction(a.numerator * b.denominator + b.numerator * a.denominator, a.denominator * b.denominator)!
}
