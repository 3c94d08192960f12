import Foundation
import Testing
@testable import Driver

/// Not a test of its own: with PUSHPROOF_MERGE_BENCH_DIR set, writes the result files
/// `Benchmarks/merge.sh` times `pushproof merge` over (64 segments of 1,000,000 pushes in
/// 32,000 fan-outs each). Skipped otherwise, so `make test` writes nothing.
@Suite struct SegmentMergeBenchmarkFiles {
    static let directory = ProcessInfo.processInfo.environment["PUSHPROOF_MERGE_BENCH_DIR"]

    @Test(.enabled(if: directory != nil, "set PUSHPROOF_MERGE_BENCH_DIR to write the benchmark's files"))
    func writeSixtyFourSegmentsOfAMillionPushes() throws {
        let directory = try #require(Self.directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let segments = 64, pushes = 1_000_000, fanOuts = 32_000
        let identity = RunIdentity(fields: ["workload": "ring-fanout", "members": "15626", "segments": "\(segments)",
                                            "start_at_unix_ms": "1800000000000"])
        var state: UInt64 = 42
        for index in 0..<segments {
            let latencies = (0..<pushes).map { _ -> UInt64 in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return 200_000 + (state >> 33) % 2_000_000_000
            }
            let completions = (0..<fanOuts).map {
                FanOutCompletion(iteration: $0, pushes: pushes / fanOuts, delivered: pushes / fanOuts,
                                 ringAll: 1_000_000 + UInt64($0 * 997 % 500_000_000), late: false, complete: true)
            }
            let result = try SegmentMergeTests.result(index, latencies: latencies, fanOuts: completions, identity: identity,
                                                      count: segments, startOffset: 1_000_000 + Int64(index))
            let path = directory + "/segment-\(index).json"
            try Data(try result.json().serialized().utf8).write(to: URL(fileURLWithPath: path))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.count == segments)
    }
}
