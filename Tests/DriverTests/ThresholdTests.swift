import Metrics
import Testing
@testable import Driver

/// A summary with chosen figures (latencies in milliseconds).
func fixtureSummary(p50: Double = 5, p99: Double = 200, p999: Double = 400, max: Double = 500,
                    throughput: Double = 5000, completed: Int = 10_000, failed: Int = 50, tokensRemoved: Int = 20,
                    ringAllMax: Double? = 900, violations: Int? = 0, scenario: String = "storm", cores: Int = 2) -> RunSummary {
    func ns(_ ms: Double) -> UInt64 { UInt64(ms * 1e6) }
    var counts = RunCounts()
    counts.iterations = completed
    counts.sent = completed
    counts.completed = completed
    counts.failed = failed
    counts.tokensRemoved = tokensRemoved
    counts.delivered = completed - failed - tokensRemoved
    counts.fanOuts = ringAllMax == nil ? 0 : 2
    let latency = LatencySummary(count: UInt64(completed), min: ns(1), mean: Double(ns(p50)), p50: ns(p50), p90: ns(p99 / 2),
                                 p99: ns(p99), p999: ns(p999), max: ns(max))
    let ringAll = ringAllMax.map { LatencySummary(count: 2, min: ns($0 / 2), mean: Double(ns($0 * 0.75)), p50: ns($0 / 2),
                                                  p90: ns($0), p99: ns($0), p999: ns($0), max: ns($0)) } ?? LatencySummary()
    return RunSummary(
        scenario: scenario, modelKind: "open", modelDescription: "open 5000/s for 2s", targetRate: 5000, plannedSeconds: 2,
        concurrency: nil, plannedCount: nil, warmUpSeconds: 0.5,
        environment: RunEnvironment(cores: cores, hostname: "test-host", operatingSystem: "Linux", date: "2026-11-29T20:00:00Z"),
        counts: counts,
        outcomes: [OutcomeCount(kind: "delivered", reason: "", count: counts.delivered),
                   OutcomeCount(kind: "failed", reason: "TooManyRequests", count: failed),
                   OutcomeCount(kind: "token_removed", reason: "Unregistered", count: tokensRemoved)],
        elapsedSeconds: 2.6, measuredSeconds: Double(completed) / throughput,
        throughput: throughput, deliveredThroughput: throughput * Double(counts.delivered) / Double(completed),
        errorRate: Double(failed) / Double(completed),
        latency: latency, serviceTime: latency, sendLag: LatencySummary(count: UInt64(completed), min: 0, mean: 1000, p50: 900, p90: 2000, p99: 5000, p999: 9000, max: 12000),
        timeToRingAll: ringAll,
        latencyTable: [PercentilePoint(percentile: 0, value: ns(1)), PercentilePoint(percentile: 50, value: ns(p50)),
                       PercentilePoint(percentile: 99, value: ns(p99)), PercentilePoint(percentile: 100, value: ns(max))],
        serviceTimeTable: [PercentilePoint(percentile: 0, value: ns(1)), PercentilePoint(percentile: 100, value: ns(max))],
        completedPerSecond: [5000, 5000], deliveredPerSecond: [4970, 4965], violations: violations, timedOut: false,
        notes: ["noise: rate-based run shorter than 10 s; its figures do not compare (load-testing.md)"])
}

@Suite struct ThresholdTests {
    @Test func parsesTheTextForms() throws {
        let parsed = try Thresholds(parsing: """
            p99_ms<250, error_rate < 0.01; throughput>=5000
            # tail and fan-outs
            p99.9_ms <= 400   # comment after
            time_to_ring_all_ms<1000
            violations==0, tokens_removed>0, dropped = 0
            """)
        #expect(parsed.thresholds == [
            Threshold(metric: .p99, comparison: .lessThan, limit: 250),
            Threshold(metric: .errorRate, comparison: .lessThan, limit: 0.01),
            Threshold(metric: .throughput, comparison: .greaterOrEqual, limit: 5000),
            Threshold(metric: .p999, comparison: .lessOrEqual, limit: 400),
            Threshold(metric: .timeToRingAll, comparison: .lessThan, limit: 1000),
            Threshold(metric: .violations, comparison: .equal, limit: 0),
            Threshold(metric: .tokensRemoved, comparison: .greaterThan, limit: 0),
            Threshold(metric: .droppedIterations, comparison: .equal, limit: 0),
        ])
        #expect(parsed.thresholds.map(\.description).first == "p99_ms<250")
        // The canonical form parses back to itself.
        for threshold in parsed.thresholds { #expect(try Threshold(parsing: threshold.description) == threshold) }
    }

    @Test func parsesTheJSONForms() throws {
        let array = try Thresholds(parsing: #"["p99_ms<250", "throughput>=5000"]"#)
        let object = try Thresholds(parsing: #"{"p99_ms": "<250", "throughput": ">= 5000"}"#)
        let expected = [Threshold(metric: .p99, comparison: .lessThan, limit: 250),
                        Threshold(metric: .throughput, comparison: .greaterOrEqual, limit: 5000)]
        #expect(array.thresholds == expected)
        #expect(object.thresholds == expected)
    }

    @Test(arguments: ["p99_ms", "p98_ms<3", "p99_ms<abc", "<250", "p99_ms=>3", "p99_ms<", "p99_ms<inf",
                      #"{"p99_ms": 250}"#, "[1]", "{broken", #""p99_ms<1""#])
    func rejectsMalformedThresholds(text: String) {
        #expect(throws: ThresholdParseError.self) { try Thresholds(parsing: text) }
    }

    @Test func unknownMetricErrorListsTheKnownOnes() {
        #expect {
            try Threshold(parsing: "p98_ms<3")
        } throws: { error in
            let message = (error as? ThresholdParseError)?.message ?? ""
            return message.contains("p98_ms") && message.contains("p99_ms") && message.contains("error_rate")
        }
    }

    @Test func evaluatesAndNamesEachMiss() throws {
        let summary = fixtureSummary(p99: 312, throughput: 4500, violations: 3)
        let result = try Thresholds(parsing: "p99_ms<250, error_rate<0.01, throughput>=5000, violations==0, p50_ms<10")
            .evaluate(summary)
        #expect(!result.passed)
        #expect(result.outcomes.map(\.passed) == [false, true, false, false, true])
        #expect(result.failures.count == 3)
        let p99 = result.outcomes[0]
        #expect(p99.actual == 312)
        #expect(p99.message == "p99_ms<250 failed: p99_ms = 312, over the limit by 62 (24.8%)")
        #expect(result.outcomes[2].message == "throughput>=5000 failed: throughput = 4500, under the limit by 500 (10%)")
        #expect(result.outcomes[3].message.hasPrefix("violations==0 failed: violations = 3, off by 3"))
        #expect(result.outcomes[1].message.hasPrefix("error_rate<0.01 passed"))
    }

    @Test func unmeasuredMetricFails() throws {
        let summary = fixtureSummary(ringAllMax: nil, violations: nil)
        let result = try Thresholds(parsing: "time_to_ring_all_ms<1000, violations==0").evaluate(summary)
        #expect(result.failures.count == 2)
        #expect(result.outcomes.allSatisfy { $0.actual == nil })
        #expect(result.failures[0].message.contains("not measured"))
    }

    @Test func allHoldingPasses() throws {
        let result = try Thresholds(parsing: "p99_ms<=200, p99.9_ms<401, max_ms<=500, time_to_ring_all_ms<1000, tokens_removed==20")
            .evaluate(fixtureSummary())
        #expect(result.passed)
        #expect(result.failures.isEmpty)
    }
}

@Suite struct BaselineTests {
    @Test func reportsRatiosAndFailsOutsideTolerance() {
        let baseline = fixtureSummary(p50: 5, p99: 200, throughput: 5000, ringAllMax: 900)
        let current = fixtureSummary(p50: 5.5, p99: 260, throughput: 4600, ringAllMax: 900)
        let comparison = BaselineComparison(current: current, baseline: baseline)
        #expect(comparison.entries.map(\.rule) == BaselineRule.standard)
        let ratios = comparison.entries.map { $0.ratio ?? -1 }
        #expect(abs(ratios[0] - 0.92) < 1e-9)   // throughput 4600 / 5000
        #expect(abs(ratios[1] - 1.1) < 1e-9)    // p50 5.5 / 5
        #expect(abs(ratios[2] - 1.3) < 1e-9)    // p99 260 / 200
        #expect(ratios[3] == 1)
        #expect(comparison.entries.map(\.passed) == [true, true, false, true])
        #expect(!comparison.passed)
        #expect(comparison.failures.first?.message == "p99_ms<=1.2x failed: 260 vs baseline 200, ratio 1.3x")
        #expect(comparison.caveats.isEmpty)
    }

    @Test func parsesRulesAndNotesDifferentMachines() throws {
        let rules = try BaselineRule.parseList("throughput>=0.95x; p99_ms<=1.1")
        #expect(rules == [BaselineRule(metric: .throughput, comparison: .greaterOrEqual, limit: 0.95),
                          BaselineRule(metric: .p99, comparison: .lessOrEqual, limit: 1.1)])
        let comparison = BaselineComparison(current: fixtureSummary(throughput: 4800, cores: 8),
                                            baseline: fixtureSummary(throughput: 5000, scenario: "other"), rules: rules)
        #expect(comparison.entries.map(\.passed) == [true, true])
        #expect(comparison.caveats.count == 2)
        #expect(throws: ThresholdParseError.self) { try BaselineRule.parseList("speed>=0.9x") }
    }

    @Test func unmeasuredMetricIsSkippedAndZeroBaselineHandled() {
        let rules = [BaselineRule(metric: .timeToRingAll, comparison: .lessOrEqual, limit: 1.2),
                     BaselineRule(metric: .tokensRemoved, comparison: .lessOrEqual, limit: 1.5)]
        let comparison = BaselineComparison(current: fixtureSummary(tokensRemoved: 0, ringAllMax: nil),
                                            baseline: fixtureSummary(tokensRemoved: 0), rules: rules)
        #expect(comparison.entries[0].ratio == nil)
        #expect(comparison.entries[0].passed)
        #expect(comparison.entries[0].message.contains("skipped"))
        #expect(comparison.entries[1].ratio == 1)
        #expect(comparison.passed)
    }
}

@Suite struct LiveThresholdTests {
    private func thresholds(_ texts: String...) throws -> [Threshold] { try texts.map { try Threshold(parsing: $0) } }

    @Test func onlyUpperBoundsOnGrowingFiguresAreWatched() throws {
        let live = LiveThresholds(try thresholds("unexpected==0", "max_ms<50", "dead_token_pushes<=2", "retry_too_soon<1",
                                                 "p99_ms<5", "error_rate<0.01", "tokens_removed>=1", "unexpected>=0", "missing==0"))
        #expect(live.watched.map(\.description) == ["unexpected==0", "max_ms<50", "dead_token_pushes<=2", "retry_too_soon<1"])
    }

    @Test func aBreachIsReportedOnlyOnceTheBoundCanNeverHold() throws {
        let counters = ProgressCounters(total: nil, plannedSeconds: nil)
        let live = LiveThresholds(try thresholds("unexpected==3", "max_ms<50"))
        #expect(live.firstBreach(counters) == nil)
        counters.unexpected.store(3, ordering: .relaxed)
        #expect(live.firstBreach(counters) == nil, "3 may still be the end's figure")
        counters.pushArrived(latencyNanoseconds: 49_000_000)
        #expect(live.firstBreach(counters) == nil)
        counters.unexpected.store(4, ordering: .relaxed)
        #expect(live.firstBreach(counters) == "unexpected==3 failed: unexpected = 4")
        counters.unexpected.store(0, ordering: .relaxed)
        counters.pushArrived(latencyNanoseconds: 60_000_000)
        #expect(live.firstBreach(counters)?.hasPrefix("max_ms<50 failed: max_ms = 60") == true)
    }
}
