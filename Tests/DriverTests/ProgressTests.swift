@testable import Driver
import JSON
import Testing

private let second: UInt64 = 1_000_000_000

@Suite struct ProgressTests {
    private func snapshot(played: Int, pushes: Int, at elapsed: UInt64, p99: UInt64? = nil, total: Int? = 100,
                          planned: Double? = nil) -> ProgressSnapshot {
        ProgressSnapshot(played: played, total: total, pushes: pushes, p99Nanoseconds: p99, elapsedNanoseconds: elapsed,
                         plannedSeconds: planned)
    }

    @Test func theFirstLineHasNoRateYetAndTheNextOneTakesTheRateSinceTheLast() {
        var line = ProgressLine(unit: "events")
        #expect(line.line(for: snapshot(played: 0, pushes: 0, at: 0)) == "events 0/100  pushes 0  -/s  p99 -  elapsed 0:00")
        let text = line.line(for: snapshot(played: 40, pushes: 12_000, at: 2 * second, p99: 12_400_000))
        #expect(text == "events 40/100  pushes 12,000  6,000/s  p99 12.4 ms  elapsed 0:02  remaining 0:03")
    }

    @Test func aRunThatTimesNothingShowsNoP99AndTheDrainIsNamed() {
        var untimed = snapshot(played: 3, pushes: 9, at: 2 * second, total: 10)
        untimed.measuresLatency = false
        #expect(ProgressLine.format(untimed, unit: "events", rate: nil) == "events 3/10  pushes 9  -/s  elapsed 0:02  remaining 0:04")
        // All handed over: the pushes still out are waited for, not counted down.
        #expect(ProgressLine.format(snapshot(played: 100, pushes: 90, at: 2 * second), unit: "events", rate: nil)
                == "events 100/100  pushes 90  -/s  p99 -  elapsed 0:02  draining")
        #expect(ProgressLine.format(snapshot(played: 7, pushes: 7, at: 11 * second, total: nil, planned: 10), unit: "messages", rate: nil)
                == "messages 7  pushes 7  -/s  p99 -  elapsed 0:11  draining")
    }

    @Test func atMostFourLinesASecond() {
        var line = ProgressLine(unit: "calls")
        #expect(line.line(for: snapshot(played: 1, pushes: 10, at: second)) != nil)
        #expect(line.line(for: snapshot(played: 2, pushes: 20, at: second + 100_000_000)) == nil, "100 ms later: too soon")
        #expect(line.line(for: snapshot(played: 3, pushes: 30, at: second + 250_000_000)) != nil)
    }

    @Test func anOpenPlanSaysItsRemainingTimeAndAnUnknownTotalSaysNone() {
        var open = ProgressLine(unit: "messages")
        #expect(open.line(for: snapshot(played: 5, pushes: 5, at: 65 * second, total: nil, planned: 3725))
                == "messages 5  pushes 5  -/s  p99 -  elapsed 1:05  remaining 1:01:00")
        var unknown = ProgressLine(unit: "events")
        #expect(unknown.line(for: snapshot(played: 0, pushes: 0, at: second, total: nil))?.contains("remaining") == false)
    }

    @Test func countersSnapshotWhatWasRecorded() {
        let counters = ProgressCounters(total: 3, plannedSeconds: nil)
        counters.played.add(2, ordering: .relaxed)
        counters.pushArrived(latencyNanoseconds: 5_000_000)
        counters.pushArrived(latencyNanoseconds: nil)
        let s = counters.snapshot(elapsedNanoseconds: second)
        #expect(s.played == 2)
        #expect(s.pushes == 2)
        #expect(s.p99Nanoseconds.map { $0 >= 4_900_000 && $0 <= 5_100_000 } == true)
        #expect(s.total == 3)
    }

    /// `--metrics-out`: each line carries the interval's rate and latencies, and the interval
    /// starts afresh after each line; the run's p99 (the progress line's) is not reset.
    @Test func metricsLinesCarryTheIntervalSinceThePreviousLine() throws {
        let counters = ProgressCounters(total: 10, plannedSeconds: nil)
        var line = MetricsLine()
        counters.played.add(2, ordering: .relaxed)
        for _ in 0..<4 { counters.pushArrived(latencyNanoseconds: 20_000_000) }
        let first = try JSONParser.parse(line.line(for: counters.snapshot(elapsedNanoseconds: second), interval: counters.takeInterval()))
        #expect(first["t"]?.doubleValue == 1 && first["played"] == 2 && first["total"] == 10 && first["pushes"] == 4)
        #expect(first["pushes_per_s"]?.doubleValue == 4)
        #expect(first["p99_ms"]?.doubleValue.map { abs($0 - 20) < 0.1 } == true)
        counters.pushArrived(latencyNanoseconds: 2_000_000)
        let last = try JSONParser.parse(line.line(for: counters.snapshot(elapsedNanoseconds: 3 * second),
                                                  interval: counters.takeInterval(), final: true))
        #expect(last["pushes_per_s"]?.doubleValue == 0.5, "1 push over the 2 s since the first line")
        #expect(last["max_ms"]?.doubleValue.map { abs($0 - 2) < 0.01 } == true, "only the interval's push")
        #expect(last["final"] == true)
        #expect(counters.snapshot(elapsedNanoseconds: 0).p99Nanoseconds.map { $0 >= 19_000_000 } == true)
        let idle = try JSONParser.parse(line.line(for: counters.snapshot(elapsedNanoseconds: 4 * second), interval: counters.takeInterval()))
        #expect(idle["p50_ms"] == nil, "no latency over an interval without pushes")
    }
}
