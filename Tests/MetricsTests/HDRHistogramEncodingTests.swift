import Encoding
import Foundation
import Testing
@testable import Metrics

@Suite struct HDRHistogramEncodingTests {
    static func roundTrips(_ histogram: HDRHistogram) throws {
        let plain = try HDRHistogram(decodingV2: histogram.encodedV2())
        let compressed = try HDRHistogram(decodingCompressedV2: histogram.encodedCompressedV2())
        for decoded in [plain, compressed] {
            #expect(decoded.counts == histogram.counts)
            #expect(decoded.totalCount == histogram.totalCount)
            #expect(decoded.encodedV2() == histogram.encodedV2())
            for p in checkedPercentiles {
                #expect(HDRHistogram.highestEquivalentValue(decoded.value(atPercentile: p))
                        == HDRHistogram.highestEquivalentValue(histogram.value(atPercentile: p)))
            }
        }
    }

    /// HdrHistogram with lowest 1, highest 1 h, 3 digits: 2048 sub-buckets, 32 buckets, 33,792
    /// counters; the index of a value as AbstractHistogram.countsArrayIndex computes it.
    @Test func layoutIsHdrHistogramsForTheseSettings() {
        #expect(HDRHistogram.subBucketCount == 2048)
        #expect(HDRHistogram.bucketCount == 32)
        #expect(HDRHistogram.countsLength == 33_792)
        func javaIndex(_ value: UInt64) -> Int {
            let bucket = 53 - (value | 2047).leadingZeroBitCount
            let subBucket = Int(value >> UInt64(bucket))
            return ((bucket + 1) << 10) + subBucket - 1024
        }
        for value in [0, 1, 2047, 2048, 2049, 4095, 4096, 1_000_000, 123_456_789, HDRHistogram.highestTrackableValue] as [UInt64] {
            #expect(HDRHistogram.index(of: value) == javaIndex(value))
        }
        #expect(HDRHistogram.index(of: HDRHistogram.highestTrackableValue) < HDRHistogram.countsLength)
    }

    @Test func emptyRoundTrips() throws {
        let empty = HDRHistogram()
        // Header and one zero counter (index 0, that of max 0), written as Java writes a single zero.
        #expect(empty.encodedV2().count == 41)
        #expect(empty.encodedV2().last == 0)
        try Self.roundTrips(empty)
        #expect(try HDRHistogram(decodingV2: empty.encodedV2()).isEmpty)
    }

    @Test func oneValueAndTheWholeRange() throws {
        var one = HDRHistogram()
        one.record(1_234_567)
        try Self.roundTrips(one)
        let decoded = try HDRHistogram(decodingV2: one.encodedV2())
        #expect(decoded.min == 1_233_920 && decoded.max == HDRHistogram.highestEquivalentValue(1_234_567))

        var range = HDRHistogram()
        for value in randomLatencies(count: 50_000, seed: 7) { range.record(value) }
        for value in [0, 1, 2, 2047, 2048] as [UInt64] { range.record(value) }
        try Self.roundTrips(range)
    }

    @Test func countsAboveTwoToThe32AndNineByteWords() throws {
        var histogram = HDRHistogram()
        histogram.record(5_000, count: 5_000_000_000)
        histogram.record(7, count: 1 << 62)   // ZigZag 2^63: the ninth byte carries 8 bits
        try Self.roundTrips(histogram)
        #expect(try HDRHistogram(decodingV2: histogram.encodedV2()).totalCount == 5_000_000_000 + (1 << 62))
    }

    @Test func anHourIsClampedAndKept() throws {
        var histogram = HDRHistogram()
        histogram.record(HDRHistogram.highestTrackableValue * 2)
        #expect(histogram.clampedCount == 1)
        try Self.roundTrips(histogram)
        #expect(try HDRHistogram(decodingCompressedV2: histogram.encodedCompressedV2()).max == HDRHistogram.highestTrackableValue)
    }

    /// Values 1 (once), 3 (twice), 10 (300 times), derived by hand from the V2 rules.
    @Test func encodedBytesOfASmallHistogram() throws {
        var histogram = HDRHistogram()
        histogram.record(1)
        histogram.record(3, count: 2)
        histogram.record(10, count: 300)
        let header: [UInt8] = [
            0x1c, 0x84, 0x93, 0x13,   // cookie
            0, 0, 0, 7,               // payload length
            0, 0, 0, 0,               // normalizing index offset
            0, 0, 0, 3,               // significant digits
            0, 0, 0, 0, 0, 0, 0, 1,   // lowest discernible value
            0, 0, 0x03, 0x46, 0x30, 0xb8, 0xa0, 0x00,  // 3,600,000,000,000
            0x3f, 0xf0, 0, 0, 0, 0, 0, 0,              // 1.0
        ]
        // counter 0 empty (a lone zero: 0), 1 once (ZigZag 2), 2 empty (0), 3 twice (4),
        // 4…9 empty (six: -6, ZigZag 11), 10 300 times (ZigZag 600 = LEB128 0xd8 0x04).
        let payload: [UInt8] = [0x00, 0x02, 0x00, 0x04, 0x0b, 0xd8, 0x04]
        #expect(histogram.encodedV2() == header + payload)
        let compressed = histogram.encodedCompressedV2()
        #expect(Array(compressed[0..<4]) == [0x1c, 0x84, 0x93, 0x14])
        #expect(Base64.standard.encode(compressed).hasPrefix("HISTF"))
    }

    @Test func refusals() {
        var histogram = HDRHistogram()
        histogram.record(42, count: 3)
        let blob = histogram.encodedV2()

        #expect(throws: HistogramDecodingError.wrongCookie(found: 0x1c84_9314, expected: 0x1c84_9313)) {
            try HDRHistogram(decodingV2: histogram.encodedCompressedV2())
        }
        #expect(throws: HistogramDecodingError.wrongCookie(found: 0x1c84_9313, expected: 0x1c84_9314)) {
            try HDRHistogram(decodingCompressedV2: blob)
        }
        #expect(throws: HistogramDecodingError.truncated("39 bytes, shorter than the 40-byte header")) {
            try HDRHistogram(decodingV2: Array(blob.prefix(39)))
        }
        #expect(throws: HistogramDecodingError.self) { try HDRHistogram(decodingV2: Array(blob.dropLast())) }
        #expect(throws: HistogramDecodingError.self) { try HDRHistogram(decodingCompressedV2: Array(histogram.encodedCompressedV2().dropLast())) }
        #expect(throws: HistogramDecodingError.trailingBytes(1)) { try HDRHistogram(decodingV2: blob + [0]) }

        func changed(_ offset: Int, _ bytes: [UInt8]) -> [UInt8] {
            var copy = blob
            copy.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            return copy
        }
        let digits = HistogramDecodingError.differentSettings(setting: "significant digits", found: "2", expected: "3")
        #expect(throws: digits) { try HDRHistogram(decodingV2: changed(12, [0, 0, 0, 2])) }
        #expect(digits.description.contains("significant digits 2"))
        #expect(throws: HistogramDecodingError.differentSettings(setting: "lowest discernible value", found: "1000", expected: "1")) {
            try HDRHistogram(decodingV2: changed(16, [0, 0, 0, 0, 0, 0, 0x03, 0xe8]))
        }
        #expect(throws: HistogramDecodingError.differentSettings(setting: "highest trackable value", found: "3600000000", expected: "3600000000000")) {
            try HDRHistogram(decodingV2: changed(24, [0, 0, 0, 0, 0xd6, 0x93, 0xa4, 0x00]))
        }

        // A zero run of 33,792 then one count: the count falls past the array.
        var past = Array(blob[0..<40])
        past += [0xff, 0x8f, 0x04, 0x02]  // ZigZag(-33_792) = 67_583, then a count of 1
        past.replaceSubrange(4..<8, with: [0, 0, 0, 4])
        #expect(throws: HistogramDecodingError.countPastArray(index: 33_792)) { try HDRHistogram(decodingV2: past) }
        // A zero run longer than the array (Int64.min + 1 empty counters) is refused, not added up.
        var longRun = Array(blob[0..<40])
        longRun += [0xfd] + [UInt8](repeating: 0xff, count: 7) + [0xff]  // ZigZag(-(2^63 - 1)) = 2^64 - 3
        longRun.replaceSubrange(4..<8, with: [0, 0, 0, 9])
        #expect(throws: HistogramDecodingError.countPastArray(index: 33_792)) { try HDRHistogram(decodingV2: longRun) }
    }
}

@Suite struct HistogramIntervalLogTests {
    static func shards(_ count: Int, values: Int, seed: UInt64) -> (shards: [HDRHistogram], union: HDRHistogram) {
        var shards = [HDRHistogram](repeating: HDRHistogram(), count: count)
        var union = HDRHistogram()
        for (i, value) in randomLatencies(count: values, seed: seed).enumerated() {
            shards[i % count].record(value)
            union.record(value)
        }
        return (shards, union)
    }

    static func log(of shards: [HDRHistogram]) -> HistogramIntervalLog {
        HistogramIntervalLog(startTime: 1_764_770_913.25, baseTime: 1_764_770_913.25, intervals: shards.enumerated().map {
            .init(tag: "segment-\($0.offset)", startSeconds: 0, lengthSeconds: 10, histogram: $0.element)
        })
    }

    @Test func writtenInTheJavaDialect() throws {
        var histogram = HDRHistogram()
        histogram.record(12_582_911)   // the top of its counter: 12.583 ms in the max column
        let text = try HistogramIntervalLog(startTime: 1_764_770_913.25, baseTime: 1_764_770_913.25, intervals: [
            .init(tag: "segment-0", startSeconds: 1.5, lengthSeconds: 10, histogram: histogram),
        ]).text()
        let lines = text.split(separator: "\n")
        #expect(lines[0] == "#[Histogram log format version 1.3]")
        #expect(lines[1] == "#[StartTime: 1764770913.250 (seconds since epoch), Wed Dec 03 14:08:33 UTC 2025]")
        #expect(lines[2] == "#[BaseTime: 1764770913.250 (seconds since epoch)]")
        #expect(lines[3] == "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")
        #expect(lines[4].hasPrefix("Tag=segment-0,1.500,10.000,12.583,HISTF"))
        #expect(HistogramIntervalLog.threeDecimals(0.0005) == "0.001")
        #expect(HistogramIntervalLog.threeDecimals(2.0) == "2.000")
    }

    @Test func readBackAndAddedEqualsTheUnion() throws {
        let (shards, union) = Self.shards(4, values: 20_000, seed: 99)
        let log = Self.log(of: shards)
        let read = try HistogramIntervalLog(reading: try log.text())
        #expect(read.startTime == 1_764_770_913.25 && read.baseTime == 1_764_770_913.25)
        #expect(read.tags == ["segment-0", "segment-1", "segment-2", "segment-3"])
        #expect(read.intervals.map(\.histogram.counts) == shards.map(\.counts))
        #expect(read.intervals.map(\.maxMilliseconds) == log.intervals.map { ($0.maxMilliseconds * 1000).rounded() / 1000 })
        let merged = read.sum()
        #expect(merged.counts == union.counts && merged.totalCount == union.totalCount)
        for p in checkedPercentiles {
            #expect(HDRHistogram.highestEquivalentValue(merged.value(atPercentile: p))
                    == HDRHistogram.highestEquivalentValue(union.value(atPercentile: p)))
        }
        #expect(read.sum(tag: "segment-2").counts == shards[2].counts)
    }

    @Test func refusals() throws {
        #expect(throws: HistogramLogError.badTag("a b")) {
            try HistogramIntervalLog(startTime: nil, intervals: [.init(tag: "a b", startSeconds: 0, lengthSeconds: 1, histogram: HDRHistogram())]).text()
        }
        #expect(throws: HistogramLogError.malformedLine(2, "3 fields after the tag, expected start, length, max and histogram")) {
            try HistogramIntervalLog(reading: "#[Histogram log format version 1.3]\n0.000,1.000,HISTFAAAA\n")
        }
        #expect(throws: HistogramLogError.malformedLine(1, "the histogram is not base64")) {
            try HistogramIntervalLog(reading: "0.000,1.000,0.000,!!!\n")
        }
        var plain = HDRHistogram()
        plain.record(5)
        let uncompressed = Base64.standard.encode(plain.encodedV2())
        #expect(throws: HistogramLogError.badHistogram(1, .wrongCookie(found: 0x1c84_9313, expected: 0x1c84_9314))) {
            try HistogramIntervalLog(reading: "0.000,1.000,0.000,\(uncompressed)\n")
        }
    }
}
