import Encoding
import Foundation
import PushproofTestSupport
import Testing
@testable import Metrics

/// A log pushproof writes, read by a third party: PyPI's hdrhistogram (HdrHistogram_py, pinned and
/// sha256-checked by Scripts/fetch-hdrhistogram-py.sh into .build/test-data, which `make test`
/// and `make test-unit` run first). Scripts/hdr-log-check.py decodes every line with
/// `HdrHistogram.decode`, adds them, and prints what is compared here.
///
/// Conventions: both report a percentile as the top of its counter's range
/// (`highestEquivalentValue`), but pushproof caps it at the exact maximum it kept, which a
/// decoder cannot know; so pushproof's values are compared after `highestEquivalentValue`. Both
/// take the rank `round(p / 100 × count)` (at least 1); Java's `getValueAtPercentile` takes
/// `ceil` instead, which differs only where `p / 100 × count` has a fraction, never here
/// (20,000 values: 50, 90, 99 and 99.9 % of it are whole).
@Suite struct HistogramInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let readerDirectory = testDataDirectory(repositoryRoot: root).appendingPathComponent("hdrhistogram-py")

    static func python3() -> URL? { python3OnPath() }

    struct ReaderOutput: Decodable {
        var lines: Int
        var count: UInt64
        var p50: UInt64
        var p90: UInt64
        var p99: UInt64
        var p999: UInt64
        var max: UInt64
        var bucket_count: Int
        var counts_len: Int
        var indices: [Int]
        var encoded: String
    }

    @Test func pythonHdrHistogramReadsAndAddsOurLog() throws {
        guard let python = Self.python3() else {
            print("HistogramInteropTests skipped: python3 is not on PATH (make deps installs it)")
            return
        }
        let hdrh = Self.readerDirectory.appendingPathComponent("hdrh")
        try #require(FileManager.default.fileExists(atPath: hdrh.path),
                     "PyPI hdrhistogram not found in \(Self.readerDirectory.path): `make test-data` fetches it (Scripts/fetch-hdrhistogram-py.sh)")

        var (shards, union) = HistogramIntervalLogTests.shards(4, values: 19_998, seed: 2026)
        shards[0].record(HDRHistogram.highestTrackableValue + 1)   // clamped to 1 h
        shards[3].record(0)
        union.record(HDRHistogram.highestTrackableValue + 1)
        union.record(0)
        let log = try HistogramIntervalLogTests.log(of: shards).text()
        let logFile = FileManager.default.temporaryDirectory.appendingPathComponent("pushproof-interop-\(getpid()).hlog")
        try log.write(to: logFile, atomically: true, encoding: .ascii)
        defer { try? FileManager.default.removeItem(at: logFile) }

        let probes: [UInt64] = [0, 1, 2047, 2048, 4097, 1_000_000, 987_654_321, HDRHistogram.highestTrackableValue]
        // Through env(1), so runTool (and its watchdog) serves with PYTHONPATH set for python3 alone.
        let script = Self.root.appendingPathComponent("Scripts/hdr-log-check.py").path
        let result = try runTool("/usr/bin/env", ["PYTHONPATH=\(Self.readerDirectory.path)", python.path, script, logFile.path]
                                 + probes.map(String.init), timeoutSeconds: 60)
        try #require(result.status == 0, "hdr-log-check.py failed: \(result.error)")
        let reader = try JSONDecoder().decode(ReaderOutput.self, from: Data(result.outputBytes))

        #expect(reader.lines == 4)
        #expect(reader.bucket_count == HDRHistogram.bucketCount)
        #expect(reader.counts_len == HDRHistogram.countsLength)
        #expect(reader.indices == probes.map(HDRHistogram.index(of:)))
        #expect(reader.count == union.totalCount)
        let ours = [50.0, 90, 99, 99.9].map { HDRHistogram.highestEquivalentValue(union.value(atPercentile: $0)) }
        #expect([reader.p50, reader.p90, reader.p99, reader.p999] == ours)
        #expect(reader.max == HDRHistogram.highestEquivalentValue(union.max))
        // The other way: the library's own encoding of the sum (it writes a lone empty counter as
        // -1 where Java writes 0) decodes in pushproof to the union's counts.
        let blob = try #require(Base64.standard.decode(reader.encoded))
        let theirs = try HDRHistogram(decodingCompressedV2: blob)
        #expect(theirs.counts == union.counts && theirs.totalCount == union.totalCount)
        print("hdrhistogram (PyPI) over pushproof's log: count \(reader.count), p50 \(reader.p50), p90 \(reader.p90), p99 \(reader.p99), p99.9 \(reader.p999), max \(reader.max) ns")
    }
}
