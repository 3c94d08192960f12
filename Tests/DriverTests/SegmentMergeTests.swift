import Clocks
import JSON
import Metrics
import Testing
@testable import Driver

/// `SegmentResult` files and `SegmentMerge`: refusals name the files; the merge is exact.
@Suite struct SegmentMergeTests {
    static let identity = RunIdentity(fields: ["workload": "ring-fanout", "members": "300", "segments": "3",
                                               "segment_weights": "1/3,1/3,1/3", "start_at_unix_ms": "1800000000000"])
    static let plan = LoadPlan(scenario: "ring-fanout", model: .closed(concurrency: 4, count: 3))

    /// Segment `index` of 3 with these latencies and fan-outs, written and read back as a file is.
    static func result(_ index: Int, latencies: [UInt64], fanOuts: [FanOutCompletion] = [], identity: RunIdentity = identity,
                       count: Int = 3, startOffset: Int64 = 1_000_000) throws -> SegmentResult {
        var latency = HDRHistogram()
        for value in latencies { latency.record(value) }
        var counts = RunCounts()
        counts.iterations = 3
        counts.sent = latencies.count
        counts.completed = latencies.count
        counts.delivered = latencies.count
        let summary = RunSummary(plan: plan, environment: RunEnvironment(cores: 2, hostname: "h\(index)", operatingSystem: "Linux", date: "d"),
                                 counts: counts, outcomes: [OutcomeCount(kind: "delivered", reason: "", count: latencies.count)],
                                 elapsedSeconds: 1, measuredSeconds: 1, latency: latency, serviceTime: latency, sendLag: HDRHistogram(),
                                 timeToRingAll: HDRHistogram(), completedPerSecond: [latencies.count], deliveredPerSecond: [latencies.count],
                                 timedOut: false)
        let run = RunResult(summary: summary, latency: latency, serviceTime: latency, sendLag: HDRHistogram(),
                            timeToRingAll: HDRHistogram(), fanOuts: fanOuts)
        let written = SegmentResult(identity: identity, segment: try ExecutionSegment(index: index, count: count),
                                    plannedStart: 1_800_000_000_000, actualStart: 1_800_000_000_000 * 1_000_000 + startOffset,
                                    devicesOwned: 300, devicesTotal: 900, run: run, summary: summary,
                                    cleanup: CleanupCounts(tokensRemoved: index), senderDetails: .null)
        return try SegmentResult(jsonText: try written.json().serialized())
    }

    static func parts(_ results: [SegmentResult]) -> [SegmentMerge.Part] {
        results.enumerated().map { SegmentMerge.Part(path: "seg-\($0.offset).json", result: $0.element) }
    }

    @Test func aHistogramSplitOverThreeResultsMergesToTheUnionsPercentilesExactly() throws {
        var generator = SplitMix(seed: 7)
        let values = (0..<30_000).map { _ in 1_000 + generator.next() % 900_000_000 }
        var union = HDRHistogram()
        for value in values { union.record(value) }
        let results = try (0..<3).map { index in
            try Self.result(index, latencies: values.enumerated().filter { $0.offset % 3 == index }.map(\.element))
        }
        let merge = try SegmentMerge(Self.parts(results))
        // A result file carries counts, not the exact min and max: the union as one file would carry it.
        union = try HDRHistogram(decodingCompressedV2: union.encodedCompressedV2())
        #expect(merge.latency == union)
        #expect(merge.summary.latency == union.summary)
        #expect(merge.summary.latencyTable == union.percentileTable())
        #expect(merge.summary.counts.completed == 30_000)
        #expect(merge.summary.counts.iterations == 3, "every segment plays every iteration")
        #expect(merge.summary.outcomes == [OutcomeCount(kind: "delivered", reason: "", count: 30_000)])
        #expect(merge.cleanup.tokensRemoved == 0 + 1 + 2)
        #expect(merge.segmentLines.count == 3)
        #expect(merge.segmentLines[1].hasPrefix("segment 1/3 (1/3:2/3) seg-1.json: 300 of 900 devices, 10000 pushes"))
        #expect(merge.segmentLines[1].hasSuffix("start +1 ms"))
    }

    @Test func aFanOutSpreadOverSegmentsRangAllWhenItsLatestPartDid() throws {
        let results = try [
            Self.result(0, latencies: [5], fanOuts: [FanOutCompletion(iteration: 0, pushes: 2, delivered: 2, ringAll: 40, late: false, complete: true),
                                                     FanOutCompletion(iteration: 1, pushes: 2, delivered: 1, ringAll: 10, late: false, complete: true)]),
            Self.result(1, latencies: [5], fanOuts: [FanOutCompletion(iteration: 0, pushes: 3, delivered: 3, ringAll: 90, late: true, complete: true)]),
            Self.result(2, latencies: [5], fanOuts: [FanOutCompletion(iteration: 1, pushes: 1, delivered: 0, ringAll: nil, late: false, complete: false)]),
        ]
        let merge = try SegmentMerge(Self.parts(results))
        var expected = HDRHistogram()
        expected.record(90)
        expected.record(10)
        #expect(merge.timeToRingAll == expected)
        #expect(merge.summary.counts.fanOuts == 1, "iteration 1 still had a part waiting")
        #expect(merge.summary.counts.fanOutsFullyDelivered == 1)
        #expect(merge.summary.counts.fanOutsIncomplete == 1)
        #expect(merge.summary.counts.lateIterations == 1)
    }

    @Test func resultsOfDifferentRunsAreRefusedNamingTheFilesAndTheOption() throws {
        var other = Self.identity
        other.fields["members"] = "301"
        let results = try [Self.result(0, latencies: [1]), Self.result(1, latencies: [1], identity: other), Self.result(2, latencies: [1])]
        #expect(throws: SegmentMergeError("seg-0.json and seg-1.json are not segments of one run: they differ in members 300 vs 301")) {
            try SegmentMerge(Self.parts(results))
        }
    }

    @Test func aSegmentGivenTwiceOrMissingIsRefused() throws {
        let zero = try Self.result(0, latencies: [1]), one = try Self.result(1, latencies: [1])
        #expect(throws: SegmentMergeError("segment 1/3 is given twice: seg-1.json and seg-2.json")) {
            try SegmentMerge(Self.parts([zero, one, one]))
        }
        #expect(throws: SegmentMergeError("segment 2/3 missing: given seg-0.json (0/3), seg-1.json (1/3)")) {
            try SegmentMerge(Self.parts([zero, one]))
        }
    }

    @Test func aSegmentThatStartedLateIsRefusedUnlessTheSkewAllowsIt() throws {
        let results = try [Self.result(0, latencies: [1]), Self.result(1, latencies: [1], startOffset: 250_000_000), Self.result(2, latencies: [1])]
        #expect(throws: SegmentMergeError("seg-1.json: segment 1/3 started 250 ms after the planned start, more than --max-start-skew 100 ms: "
                                          + "its load did not overlap the others'")) {
            try SegmentMerge(Self.parts(results))
        }
        #expect(try SegmentMerge(Self.parts(results), maxStartSkew: .milliseconds(300)).summary.counts.completed == 3)
    }

    @Test func anEditedFileOrAForeignHistogramIsRefusedAsItIsRead() throws {
        let text = try Self.result(0, latencies: [1]).json().serialized()
        #expect(throws: SegmentResultError("identity: does not match the load fields: the file was edited")) {
            try SegmentResult(jsonText: text.replacingOccurrences(of: "\"members\":\"300\"", with: "\"members\":\"3000\""))
        }
        // A blob that is not one of pushproof's histograms (the interval log's reader also
        // refuses other shapes: HistogramIntervalLog's tests): refused, not added.
        let log = try Self.result(0, latencies: [1]).histogramLog()
        let foreign = "HISTFAAAACF4nJNpmSzMwMDAwQABTFCaEUzOmNZg/wEi0NjEBADGTAVa"
        let replaced = log.split(separator: "\n").map { line in
            line.hasPrefix("Tag=latency,") ? line.split(separator: ",").dropLast().joined(separator: ",") + "," + foreign : String(line)
        }.joined(separator: "\n") + "\n"
        var object = try #require(try Self.result(0, latencies: [1]).json().objectValue)
        object["histograms"] = .string(replaced)
        let edited = JSONValue.object(object).serialized()
        #expect(edited != text)
        #expect {
            try SegmentResult(jsonText: edited)
        } throws: { error in
            (error as? SegmentResultError)?.message.hasPrefix("histograms: interval log line") == true
        }
    }

    @Test func theIdentityIsTheSameTextAndDigestOnEveryMachine() {
        let reordered = RunIdentity(fields: Dictionary(uniqueKeysWithValues: Self.identity.fields.reversed()))
        #expect(reordered.canonicalText == Self.identity.canonicalText)
        #expect(reordered.digest == Self.identity.digest)
        #expect(Self.identity.digest.count == 64)
        var other = Self.identity
        other.fields["start_at_unix_ms"] = "1800000000001"
        #expect(other.digest != Self.identity.digest)
        #expect(other.differences(from: Self.identity) == ["start_at_unix_ms"])
    }

    @Test func startTimesAreRFC3339WithAZoneOrUnixMillisecondsAndNotLongPast() throws {
        let now: Int64 = 1_800_000_000_000
        #expect(try PlannedStart(parsing: "1800000060000", now: now).unixMilliseconds == 1_800_000_060_000)
        #expect(try PlannedStart(parsing: "2027-01-15T08:01:00Z", now: now).unixMilliseconds == 1_800_000_060_000)
        #expect(try PlannedStart(parsing: "2027-01-15T09:01:00.250+01:00", now: now).unixMilliseconds == 1_800_000_060_250)
        #expect(throws: PlannedStartError.malformed("2027-01-15T08:01:00")) { try PlannedStart(parsing: "2027-01-15T08:01:00", now: now) }
        #expect(throws: PlannedStartError.tooFarPast("1799999000000", secondsAgo: 1000)) {
            try PlannedStart(parsing: "1799999000000", now: now)
        }
        #expect(try PlannedStart(parsing: "1799999500000", now: now).description == "2027-01-15T07:51:40.000Z")
    }
}

/// Deterministic values for the exactness test.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}


/// What the runner gives a segment: its fan-outs, when asked, and latency from a planned start.
@Suite struct LoadRunnerSegmentTests {
    static func ring(_ iteration: Int) -> LoadItem {
        .fanOut((0..<4).map { push(token: iteration == 1 && $0 == 0 ? "gone-\($0)" : "ok-\(iteration)-\($0)", kind: "poolse.ring") })
    }

    @Test func fanOutCompletionsAreKeptOnlyWhenAsked() async throws {
        let plan = LoadPlan(scenario: "ring", model: .closed(concurrency: 2, count: 3))
        let kept = try await LoadRunner(plan: plan, target: ScriptedTarget()).run(source: Self.ring, keepingFanOuts: true)
        #expect(kept.fanOuts.map(\.iteration) == [0, 1, 2])
        #expect(kept.fanOuts.map(\.delivered) == [4, 3, 4])
        #expect(kept.fanOuts.allSatisfy { $0.complete && $0.pushes == 4 && $0.ringAll != nil })
        let ringAll = kept.fanOuts.compactMap(\.ringAll)
        #expect(ringAll.max().map { HDRHistogram.highestEquivalentValue($0) } == HDRHistogram.highestEquivalentValue(kept.timeToRingAll.max))
        let plain = try await LoadRunner(plan: plan, target: ScriptedTarget()).run(source: Self.ring)
        #expect(plain.fanOuts.isEmpty)
    }

    @Test func aStartInThePastShowsAsLatencyAndLateness() async throws {
        let plan = LoadPlan(scenario: "ring", model: .open(ratePerSecond: 100, duration: .milliseconds(30)), lateAfter: .milliseconds(10))
        let clock = MonotonicClock()
        let start = clock.now.advanced(by: .milliseconds(-200))
        let result = try await LoadRunner(plan: plan, target: ScriptedTarget()).run(source: Self.ring, startingAt: start)
        #expect(result.summary.counts.iterations == 3)
        #expect(result.summary.counts.lateIterations == 3, "every iteration was due before the run began")
        #expect(result.latency.min >= 150_000_000, "latency counts from the planned start: \(result.latency.min)")
    }
}
