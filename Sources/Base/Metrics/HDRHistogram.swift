// A log-linear (HDR) latency histogram, after Gil Tene's HdrHistogram: a fixed array of counts
// indexed by (power-of-two bucket, linear sub-bucket), so recording is a few shifts and an add,
// and merging is element-wise addition. The suite's convention (load-testing.md, "Latency"):
// 3 significant digits over 0 ns .. 1 h (exact up to 2047 ns), merge across threads, never average percentiles.
import Clocks

/// Latency histogram over nanoseconds, 0 ns ... 1 h, 3 significant decimal digits.
///
/// Values are **nanoseconds**. Every value up to 2047 ns is counted exactly; above that a value
/// shares its counter with neighbours less than 1/1024 of it away, so every reported
/// percentile is within 0.1 % of the true sample (load-testing.md: "3 significant digits, 1 us to
/// 1 h"). Values above one hour are clamped to one hour and counted in ``clampedCount``.
///
/// A value type: each worker records into its own copy (O(1), no allocation) and the copies
/// are combined with ``merge(_:)``.
public struct HDRHistogram: Sendable, Equatable {
    /// The largest value kept apart from its neighbours: one hour in nanoseconds.
    public static let highestTrackableValue: UInt64 = 3_600_000_000_000

    // 3 significant digits need 2 * 10^3 linear steps per power of two: 2048 = 2^11 sub-buckets,
    // of which the upper half (1024) are new in each bucket after the first.
    static let subBucketCountMagnitude = 11
    static let subBucketHalfCountMagnitude = 10
    static let subBucketCount = 1 << subBucketCountMagnitude
    static let subBucketHalfCount = 1 << subBucketHalfCountMagnitude
    static let subBucketMask: UInt64 = UInt64(subBucketCount - 1)
    /// Buckets needed so that `subBucketCount << (bucketCount - 1)` exceeds the highest value.
    static let bucketCount: Int = {
        var smallestUntrackable = UInt64(subBucketCount)
        var count = 1
        while smallestUntrackable <= highestTrackableValue {
            smallestUntrackable <<= 1
            count += 1
        }
        return count
    }()
    static let countsLength = (bucketCount + 1) * subBucketHalfCount

    // Internal, not private: the V2 decoder (HDRHistogramEncoding.swift) rebuilds them from counts.
    var counts: [UInt64]
    public internal(set) var totalCount: UInt64 = 0
    /// Exact smallest and largest recorded values (after clamping); `UInt64.max` / 0 when empty.
    /// A histogram decoded from HdrHistogram's encoding knows only their counters' ranges.
    var minimum: UInt64 = .max
    var maximum: UInt64 = 0
    /// Values above ``highestTrackableValue`` that were recorded as that value.
    public private(set) var clampedCount: UInt64 = 0

    public init() {
        counts = [UInt64](repeating: 0, count: Self.countsLength)
    }

    public var isEmpty: Bool { totalCount == 0 }

    // MARK: - Recording

    /// Records one value (nanoseconds). O(1), allocation-free once this copy is uniquely owned.
    public mutating func record(_ value: UInt64) {
        record(value, count: 1)
    }

    /// Records `count` occurrences of `value` (nanoseconds).
    public mutating func record(_ value: UInt64, count: UInt64) {
        guard count > 0 else { return }
        var value = value
        if value > Self.highestTrackableValue {
            value = Self.highestTrackableValue
            clampedCount &+= count
        }
        counts[Self.index(of: value)] &+= count
        totalCount &+= count
        if value < minimum { minimum = value }
        if value > maximum { maximum = value }
    }

    /// Records a duration, rounding to whole nanoseconds; negative durations count as 0.
    public mutating func record(_ duration: Duration) {
        record(duration.clampedNanoseconds)
    }

    /// Records `value` and, when it exceeds `expectedInterval`, the samples a closed-loop
    /// generator would have taken had it not been blocked: `value - interval`,
    /// `value - 2 * interval`, ... down to `interval` (HdrHistogram's `recordValueWithExpectedInterval`,
    /// the coordinated-omission correction of load-testing.md, "Latency"). Both in nanoseconds;
    /// an interval of 0 records `value` alone.
    public mutating func recordCorrected(value: UInt64, expectedInterval: UInt64) {
        record(value)
        guard expectedInterval > 0, value > expectedInterval else { return }
        var missing = value - expectedInterval
        while missing >= expectedInterval {
            record(missing)
            missing -= expectedInterval
        }
    }

    /// Adds every count of `other` to this histogram.
    public mutating func merge(_ other: HDRHistogram) {
        guard other.totalCount > 0 else { return }
        counts.withUnsafeMutableBufferPointer { mine in
            other.counts.withUnsafeBufferPointer { theirs in
                for i in 0..<mine.count where theirs[i] != 0 { mine[i] &+= theirs[i] }
            }
        }
        totalCount &+= other.totalCount
        clampedCount &+= other.clampedCount
        minimum = Swift.min(minimum, other.minimum)
        maximum = Swift.max(maximum, other.maximum)
    }

    public mutating func reset() {
        self = HDRHistogram()
    }

    // MARK: - Queries

    /// The smallest recorded value, exact; 0 when empty.
    public var min: UInt64 { totalCount == 0 ? 0 : minimum }
    /// The largest recorded value, exact; 0 when empty.
    public var max: UInt64 { maximum }

    /// Mean of the recorded values, each taken at the middle of its counter's range (within 0.1 %).
    public var mean: Double {
        guard totalCount > 0 else { return 0 }
        var total = 0.0
        for i in counts.indices where counts[i] != 0 {
            let low = Self.valueFromIndex(i)
            let mid = Double(low) + Double(Self.sizeOfEquivalentRange(low) - 1) / 2
            total += mid * Double(counts[i])
        }
        return Swift.min(Swift.max(total / Double(totalCount), Double(min)), Double(max))
    }

    /// The value at `percentile` (0 ... 100): the smallest recorded value such that `percentile`
    /// percent of all samples are at or below it, reported as the top of its counter's range
    /// (never above the exact maximum). Matches a sorted array's element at index
    /// `max(1, round(p / 100 * count)) - 1` to within 0.1 %. 0 when empty.
    public func value(atPercentile percentile: Double) -> UInt64 {
        guard totalCount > 0 else { return 0 }
        let p = Swift.min(Swift.max(percentile, 0), 100)
        if p == 0 { return min }
        let wanted = Swift.max(1, UInt64((p / 100 * Double(totalCount)).rounded()))
        var seen: UInt64 = 0
        for i in counts.indices where counts[i] != 0 {
            seen += counts[i]
            if seen >= wanted {
                let low = Self.valueFromIndex(i)
                let high = low + Self.sizeOfEquivalentRange(low) - 1
                return Swift.max(Swift.min(high, max), min)
            }
        }
        return max
    }

    /// Standard percentiles, for reports.
    public var summary: LatencySummary {
        LatencySummary(count: totalCount, min: min, mean: mean,
                       p50: value(atPercentile: 50), p90: value(atPercentile: 90),
                       p99: value(atPercentile: 99), p999: value(atPercentile: 99.9), max: max)
    }

    /// The percentile distribution as HdrHistogram prints it: percentiles that halve the
    /// remaining tail (0, 50, 75, 87.5, ...), `ticksPerHalf` steps per halving, up to 100 %.
    /// For a latency-by-percentile curve on a log axis of `1 / (1 - p)`.
    public func percentileTable(ticksPerHalf: Int = 2, maxHalvings: Int = 20) -> [PercentilePoint] {
        guard totalCount > 0 else { return [] }
        var points: [PercentilePoint] = []
        let ticks = Swift.max(1, ticksPerHalf)
        var seenPercentiles = Set<Double>()
        for halving in 0..<maxHalvings {
            let tailStart = 1 - 1 / Double(1 << halving)          // 0, 0.5, 0.75, ...
            let tailWidth = 1 / Double(1 << (halving + 1))
            for tick in 0..<ticks {
                let fraction = tailStart + tailWidth * Double(tick) / Double(ticks)
                let percentile = fraction * 100
                guard seenPercentiles.insert(percentile).inserted else { continue }
                points.append(PercentilePoint(percentile: percentile, value: value(atPercentile: percentile)))
            }
            // Stop once the tail is thinner than one sample: further points repeat the maximum.
            if Double(totalCount) * tailWidth < 1 { break }
        }
        points.append(PercentilePoint(percentile: 100, value: max))
        return points
    }

    // MARK: - Index arithmetic (HdrHistogram's layout with unit magnitude 0)

    @inline(__always)
    static func index(of value: UInt64) -> Int {
        // The power-of-two bucket: how far `value` reaches above the first 2048 values.
        let bucketIndex = (64 - subBucketCountMagnitude) - (value | subBucketMask).leadingZeroBitCount
        let subBucketIndex = Int(truncatingIfNeeded: value >> UInt64(bucketIndex))
        return ((bucketIndex + 1) << subBucketHalfCountMagnitude) + (subBucketIndex - subBucketHalfCount)
    }

    static func valueFromIndex(_ index: Int) -> UInt64 {
        var bucketIndex = (index >> subBucketHalfCountMagnitude) - 1
        var subBucketIndex = (index & (subBucketHalfCount - 1)) + subBucketHalfCount
        if bucketIndex < 0 {
            subBucketIndex -= subBucketHalfCount
            bucketIndex = 0
        }
        return UInt64(subBucketIndex) << UInt64(bucketIndex)
    }

    /// How many distinct values share the counter of `value`.
    static func sizeOfEquivalentRange(_ value: UInt64) -> UInt64 {
        let bucketIndex = (64 - subBucketCountMagnitude) - (value | subBucketMask).leadingZeroBitCount
        return 1 << UInt64(bucketIndex)
    }


    public static func == (lhs: HDRHistogram, rhs: HDRHistogram) -> Bool {
        lhs.totalCount == rhs.totalCount && lhs.min == rhs.min && lhs.max == rhs.max
            && lhs.clampedCount == rhs.clampedCount && lhs.counts == rhs.counts
    }
}

/// One point of a percentile distribution: `percentile` (0 ... 100) and its value in nanoseconds.
public struct PercentilePoint: Sendable, Equatable {
    public var percentile: Double
    public var value: UInt64

    public init(percentile: Double, value: UInt64) {
        self.percentile = percentile
        self.value = value
    }
}

/// The figures a report quotes for one latency distribution, in nanoseconds.
public struct LatencySummary: Sendable, Equatable {
    public var count: UInt64
    public var min: UInt64
    public var mean: Double
    public var p50: UInt64
    public var p90: UInt64
    public var p99: UInt64
    public var p999: UInt64
    public var max: UInt64

    public init(count: UInt64 = 0, min: UInt64 = 0, mean: Double = 0, p50: UInt64 = 0, p90: UInt64 = 0,
                p99: UInt64 = 0, p999: UInt64 = 0, max: UInt64 = 0) {
        self.count = count
        self.min = min
        self.mean = mean
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
    }
}
