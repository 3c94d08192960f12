import Foundation
import PushproofTestSupport
import Testing
@testable import Metrics

/// The value a sorted array reports at `percentile`, by the same rank rule as the histogram.
func bruteForcePercentile(_ sorted: [UInt64], _ percentile: Double) -> UInt64 {
    let rank = max(1, Int((percentile / 100 * Double(sorted.count)).rounded()))
    return sorted[min(rank, sorted.count) - 1]
}

/// Log-uniform nanosecond values over 1 µs ... 1 h, the histogram's range.
func randomLatencies(count: Int, seed: UInt64) -> [UInt64] {
    var rng = SplitMix64(seed: seed)
    let low = 3.0, high = log10(Double(HDRHistogram.highestTrackableValue))
    return (0..<count).map { _ in UInt64(pow(10, Double.random(in: low...high, using: &rng))) }
}

let checkedPercentiles: [Double] = [0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100]

@Suite struct HDRHistogramTests {
    @Test(arguments: [UInt64(1), 42, 1234])
    func percentilesWithinAThousandthOfBruteForce(seed: UInt64) {
        let values = randomLatencies(count: 100_000, seed: seed)
        var histogram = HDRHistogram()
        for value in values { histogram.record(value) }
        let sorted = values.sorted()
        #expect(histogram.totalCount == UInt64(values.count))
        for p in checkedPercentiles {
            let expected = Double(bruteForcePercentile(sorted, p))
            let reported = Double(histogram.value(atPercentile: p))
            #expect(abs(reported - expected) / expected <= 0.001, "p\(p): histogram \(reported), sorted \(expected)")
        }
        #expect(histogram.min == sorted.first)
        #expect(histogram.max == sorted.last)
        let mean = Double(values.reduce(0, +)) / Double(values.count)
        #expect(abs(histogram.mean - mean) / mean <= 0.001)
        let summary = histogram.summary
        #expect(summary.p99 == histogram.value(atPercentile: 99))
        #expect(summary.p999 == histogram.value(atPercentile: 99.9))
    }

    @Test func narrowDistributionAroundTypicalLoopbackLatency() {
        // 20 µs ... 2 ms, where most local runs land.
        var rng = SplitMix64(seed: 7)
        let values = (0..<50_000).map { _ in UInt64.random(in: 20_000...2_000_000, using: &rng) }
        var histogram = HDRHistogram()
        for value in values { histogram.record(value) }
        let sorted = values.sorted()
        for p in checkedPercentiles {
            let expected = Double(bruteForcePercentile(sorted, p))
            let reported = Double(histogram.value(atPercentile: p))
            #expect(abs(reported - expected) / expected <= 0.001, "p\(p)")
        }
    }

    @Test func smallValuesAreExact() {
        var histogram = HDRHistogram()
        for value in UInt64(0)..<2048 { histogram.record(value) }
        let sorted = Array(UInt64(0)..<2048)
        for p in checkedPercentiles {
            #expect(histogram.value(atPercentile: p) == bruteForcePercentile(sorted, p))
        }
    }

    @Test func indexLayoutCoversEveryValueOnce() {
        var rng = SplitMix64(seed: 99)
        var values: [UInt64] = [0, 1, 2047, 2048, 2049, 4095, 4096, HDRHistogram.highestTrackableValue]
        values += randomLatencies(count: 10_000, seed: 5)
        values += (0..<1000).map { _ in UInt64.random(in: 0...HDRHistogram.highestTrackableValue, using: &rng) }
        for value in values {
            let index = HDRHistogram.index(of: value)
            #expect(index >= 0 && index < HDRHistogram.countsLength)
            let low = HDRHistogram.valueFromIndex(index)
            let size = HDRHistogram.sizeOfEquivalentRange(low)
            #expect(low <= value && value < low + size, "value \(value) index \(index) low \(low) size \(size)")
            // The range is narrow enough for 3 significant digits.
            #expect(size == 1 || Double(size - 1) / Double(low) < 0.001)
        }
    }

    @Test func mergeEqualsRecordingEverythingInOne() {
        let values = randomLatencies(count: 40_000, seed: 11)
        var whole = HDRHistogram()
        var parts = [HDRHistogram](repeating: HDRHistogram(), count: 4)
        for (i, value) in values.enumerated() {
            whole.record(value)
            parts[i % 4].record(value)
        }
        var merged = HDRHistogram()
        for part in parts { merged.merge(part) }
        #expect(merged == whole)
        #expect(merged.totalCount == 40_000)
        #expect(merged.min == whole.min)
        #expect(merged.max == whole.max)
        for p in checkedPercentiles { #expect(merged.value(atPercentile: p) == whole.value(atPercentile: p)) }
        // Merging an empty histogram changes nothing.
        merged.merge(HDRHistogram())
        #expect(merged == whole)
    }

    @Test func correctedRecordingAddsTheMissingSamples() {
        var histogram = HDRHistogram()
        // A 10 ms stall in a stream expected every 1 ms: 10, 9, ..., 1 ms.
        histogram.recordCorrected(value: 10_000_000, expectedInterval: 1_000_000)
        #expect(histogram.totalCount == 10)
        #expect(histogram.min == 1_000_000)
        #expect(histogram.max == 10_000_000)
        for k in 1...10 {
            // k-th smallest sample is k ms (within the histogram's resolution).
            let value = Double(histogram.value(atPercentile: Double(k) * 10))
            #expect(abs(value - Double(k) * 1e6) / (Double(k) * 1e6) <= 0.001)
        }

        var uncorrected = HDRHistogram()
        uncorrected.record(10_000_000)
        #expect(uncorrected.totalCount == 1)

        // At or under the interval nothing is added; an interval of 0 disables correction.
        var quiet = HDRHistogram()
        quiet.recordCorrected(value: 1_000_000, expectedInterval: 1_000_000)
        quiet.recordCorrected(value: 500, expectedInterval: 1_000_000)
        quiet.recordCorrected(value: 10_000_000, expectedInterval: 0)
        #expect(quiet.totalCount == 3)

        // 2.5 intervals: the value and one synthetic sample 1.5 intervals long.
        var partial = HDRHistogram()
        partial.recordCorrected(value: 2_500, expectedInterval: 1_000)
        #expect(partial.totalCount == 2)
        #expect(partial.min == 1_500)
    }

    @Test func valuesAboveAnHourAreClampedAndCounted() {
        var histogram = HDRHistogram()
        histogram.record(HDRHistogram.highestTrackableValue * 3)
        histogram.record(5)
        #expect(histogram.clampedCount == 1)
        #expect(histogram.max == HDRHistogram.highestTrackableValue)
        #expect(histogram.totalCount == 2)
    }

    @Test func emptyHistogramReportsZeros() {
        let histogram = HDRHistogram()
        #expect(histogram.isEmpty)
        #expect(histogram.value(atPercentile: 99) == 0)
        #expect(histogram.min == 0 && histogram.max == 0 && histogram.mean == 0)
        #expect(histogram.percentileTable().isEmpty)
    }

    @Test func percentileTableIsMonotoneAndEndsAtTheMaximum() {
        var histogram = HDRHistogram()
        for value in randomLatencies(count: 10_000, seed: 3) { histogram.record(value) }
        let table = histogram.percentileTable()
        #expect(table.first?.percentile == 0)
        #expect(table.last == PercentilePoint(percentile: 100, value: histogram.max))
        for (a, b) in zip(table, table.dropFirst()) {
            #expect(a.percentile < b.percentile)
            #expect(a.value <= b.value)
        }
        #expect(table.contains { $0.percentile >= 99.9 })
    }

    @Test func durationsRecordAsNanoseconds() {
        var histogram = HDRHistogram()
        histogram.record(Duration.microseconds(1500))
        histogram.record(Duration.seconds(-1))
        #expect(histogram.max == 1_500_000)
        #expect(histogram.min == 0)
    }
}
