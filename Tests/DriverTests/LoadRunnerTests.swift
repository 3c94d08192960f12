import Testing
import PushModel
import Synchronization
import Clocks
@testable import Driver

@Suite struct LoadRunnerTests {
    @Test func closedRunCountsEveryOutcomeExactly() async throws {
        let plan = LoadPlan(scenario: "storm", model: .closed(concurrency: 4, count: 200))
        let clock = TestClock()
        let result = try await runOnTestClock(plan, on: clock, target: ScriptedTarget(latency: .microseconds(200), clock: clock),
                                              source: mixedSource)
        let s = result.summary
        let expected = mixedCounts(200)
        #expect(s.counts.iterations == 200)
        #expect(s.counts.sent == 200)
        #expect(s.counts.completed == 200)
        #expect(s.counts.delivered == expected.delivered)
        #expect(s.counts.failed == expected.failed)
        #expect(s.counts.tokensRemoved == expected.removed)
        #expect(s.counts.abandoned == 0)
        #expect(s.counts.droppedIterations == 0)
        #expect(!s.timedOut)
        #expect(s.outcomes == [
            OutcomeCount(kind: "delivered", reason: "", count: expected.delivered),
            OutcomeCount(kind: "failed", reason: "TooManyRequests", count: expected.failed),
            OutcomeCount(kind: "token_removed", reason: "Unregistered", count: expected.removed),
        ])
        #expect(result.latency.totalCount == 200)
        #expect(result.serviceTime.totalCount == 200)
        #expect(s.completedPerSecond.reduce(0, +) == 200)
        #expect(s.deliveredPerSecond.reduce(0, +) == expected.delivered)
        #expect(s.errorRate == Double(expected.failed) / 200)
        // Every send slept at least 200 µs.
        #expect(result.serviceTime.min >= 200_000)
        // A closed run is not rate-based: no noise note.
        #expect(!s.notes.contains { $0.hasPrefix("noise") })
    }

    @Test func openRunSendsTheScheduleAndSeparatesWarmUp() async throws {
        // 200/s: iterations due every 5 ms; 100 ms warm-up (20 iterations), then 500 ms (100).
        let plan = LoadPlan(scenario: "open", model: .open(ratePerSecond: 200, duration: .milliseconds(500)),
                            warmUp: .milliseconds(100), maxInFlight: 16)
        let result = try await runOnTestClock(plan, target: ScriptedTarget(), source: mixedSource)
        let c = result.summary.counts
        #expect(c.warmUpIterations == 20)
        #expect(c.warmUpPushes == 20)
        #expect(c.iterations == 100)
        #expect(c.sent == 100)
        #expect(c.completed == 100)
        #expect(c.droppedIterations == 0)
        // Iterations 20..<120 were measured.
        let failed = (20..<120).filter { $0 % 10 == 0 }.count
        let removed = (20..<120).filter { $0 % 10 != 0 && $0 % 25 == 0 }.count
        #expect(c.failed == failed)
        #expect(c.tokensRemoved == removed)
        #expect(c.delivered == 100 - failed - removed)
        #expect(result.summary.targetRate == 200)
        // Shorter than 10 s: the report says the figures are noise.
        #expect(result.summary.notes.contains { $0.hasPrefix("noise") })
    }

    @Test func sourceEndingEarlyStopsTheRunWithoutDrops() async throws {
        let plan = LoadPlan(scenario: "short", model: .closed(concurrency: 3, count: 1000))
        let result = try await LoadRunner(plan: plan, target: ScriptedTarget()).run { iteration in
            iteration < 17 ? .push(push(token: "ok-\(iteration)")) : nil
        }
        #expect(result.summary.counts.sent == 17)
        #expect(result.summary.counts.iterations == 17)
        #expect(result.summary.counts.droppedIterations == 0)
    }

    @Test func fanOutsMeasureTimeToRingAll() async throws {
        let plan = LoadPlan(scenario: "ring", model: .closed(concurrency: 8, count: 3))
        let clock = TestClock()
        let target = ScriptedTarget(latency: .microseconds(100), clock: clock)
        let result = try await runOnTestClock(plan, on: clock, target: target) { iteration in
            // Iteration 1 rings one member whose token is gone.
            .fanOut((0..<50).map { member in
                push(token: iteration == 1 && member == 7 ? "gone-\(member)" : "ok-\(iteration)-\(member)", kind: "poolse.ring")
            })
        }
        let s = result.summary
        #expect(s.counts.iterations == 3)
        #expect(s.counts.sent == 150)
        #expect(s.counts.completed == 150)
        #expect(s.counts.delivered == 149)
        #expect(s.counts.tokensRemoved == 1)
        #expect(s.counts.fanOuts == 3)
        #expect(s.counts.fanOutsFullyDelivered == 2)
        #expect(s.counts.fanOutsIncomplete == 0)
        #expect(result.timeToRingAll.totalCount == 3)
        // The slowest fan-out ends with the slowest delivered push (both from the fan-out's start).
        #expect(result.timeToRingAll.max <= result.latency.max)
        #expect(result.timeToRingAll.max >= 100_000)
    }

    @Test func tenThousandMemberRingIsOneIteration() async throws {
        // The poolse "ring every phone" case: one call, 10,000 devices, 64 in flight.
        let members = (0..<10_000).map { push(token: $0 % 1000 == 999 ? "gone-\($0)" : "ok-\($0)", kind: "poolse.ring") }
        let plan = LoadPlan(scenario: "ring-10k", model: .open(ratePerSecond: 1, duration: .milliseconds(1)), maxInFlight: 64)
        let result = try await runOnTestClock(plan, target: ScriptedTarget(), source: LoadSources.fanOut(members))
        let s = result.summary
        #expect(s.counts.iterations == 1)
        #expect(s.counts.sent == 10_000)
        #expect(s.counts.delivered == 9_990)
        #expect(s.counts.tokensRemoved == 10)
        #expect(s.counts.fanOuts == 1)
        #expect(s.counts.fanOutsFullyDelivered == 0)
        #expect(result.timeToRingAll.totalCount == 1)
        // Every push of the ring is due at the call's start, so the ring takes as long as its
        // slowest delivered push measured from that start.
        #expect(result.timeToRingAll.max <= result.latency.max)
        // Only 10 pushes were not delivered, so the 99th percentile sample is a delivered push
        // (the histogram reports it at most 0.1 % high).
        #expect(Double(result.timeToRingAll.max) >= Double(result.latency.value(atPercentile: 99)) / 1.001)
    }

    @Test func stalledTargetShowsInCorrectedLatencyAndLateIterations() async throws {
        // 100/s for 1 s through one worker; the first two pushes take 300 ms each, so the
        // iterations due meanwhile go out late. Measured from their intended time they carry
        // the stall; measured from their actual send they do not.
        let stall = Duration.milliseconds(300)
        let plan = LoadPlan(scenario: "stall", model: .open(ratePerSecond: 100, duration: .seconds(1)), maxInFlight: 1)
        let clock = TestClock()
        let result = try await runOnTestClock(plan, on: clock, target: StallingTarget(stall: stall, slowPushes: 2, clock: clock),
                                              source: { .push(push(token: "ok-\($0)")) })
        let s = result.summary
        #expect(s.counts.sent == 100)
        #expect(s.counts.completed == 100)
        #expect(s.counts.lateIterations > 0)
        let stallNanos = UInt64(300_000_000)
        #expect(s.latency.p99 >= stallNanos)
        #expect(s.latency.p90 >= stallNanos)
        #expect(s.serviceTime.p90 < s.latency.p90)
        #expect(s.latency.max >= 2 * stallNanos - 10_000_000)
        // The driver itself sent those pushes late: the lag behind schedule shows the stall.
        #expect(s.sendLag.max >= stallNanos)
        #expect(result.sendLag.totalCount == 100)
    }

    @Test func iterationsThatCannotStartInTimeAreDropped() async throws {
        let plan = LoadPlan(scenario: "drop", model: .open(ratePerSecond: 100, duration: .seconds(1)), maxInFlight: 1,
                            dropAfter: .milliseconds(50))
        let clock = TestClock()
        let result = try await runOnTestClock(plan, on: clock, target: StallingTarget(stall: .milliseconds(300), slowPushes: 1, clock: clock),
                                              source: { .push(push(token: "ok-\($0)")) })
        let c = result.summary.counts
        // The first push holds the only worker until 300 ms: iterations 1...24 (due 10 to 240 ms)
        // are more than 50 ms late by then and dropped; from 250 ms on they are sent.
        #expect(c.droppedIterations == 24)
        // Every scheduled iteration is either sent or dropped.
        #expect(c.sent + c.droppedIterations == 100)
        #expect(c.iterations == c.sent)
        #expect(result.summary.notes.contains { $0.contains("dropped") })
    }

    @Test func runStopsByItselfWhenTheTargetHangs() async throws {
        let plan = LoadPlan(scenario: "hang", model: .closed(concurrency: 3, count: 10),
                            timeLimit: .milliseconds(500), drainTimeout: .milliseconds(100))
        let clock = TestClock()
        // All three workers and the run's timer asleep: only then may the time limit pass.
        let result = try await runOnTestClock(plan, on: clock, advancingWhenAsleep: 4, target: HangingTarget(clock: clock),
                                              source: { .push(push(token: "ok-\($0)")) })
        let c = result.summary.counts
        // Each of the 3 workers is stuck in its first send.
        #expect(c.sent == 3)
        #expect(c.completed == 0)
        #expect(c.abandoned == 3)
        // The rest of the count never started: the time limit came first.
        #expect(c.droppedIterations == 7)
        #expect(result.summary.timedOut)
        #expect(result.summary.notes.contains { $0.contains("no outcome") })
    }

    @Test func cancellableSlowTargetIsCutAtTheTimeLimit() async throws {
        // A 1 h send that honours cancellation: the run cancels it at its bound and counts it.
        let plan = LoadPlan(scenario: "slow", model: .closed(concurrency: 2, count: 5),
                            timeLimit: .milliseconds(300), drainTimeout: .milliseconds(50))
        let clock = TestClock()
        let result = try await runOnTestClock(plan, on: clock, advancingWhenAsleep: 3,
                                              target: ScriptedTarget(latency: .seconds(3600), clock: clock),
                                              source: { .push(push(token: "ok-\($0)")) })
        let c = result.summary.counts
        #expect(c.sent == 2)
        #expect(c.sent == c.completed + c.abandoned)
        #expect(c.droppedIterations == 3)
        #expect(result.summary.timedOut)
    }

    @Test func iterationsPastTheTimeLimitCountAsDropped() async throws {
        // 10/s for 10 s plans 100 iterations; a 300 ms limit lets the first 3 start (0, 100, 200 ms).
        let plan = LoadPlan(scenario: "cut", model: .open(ratePerSecond: 10, duration: .seconds(10)),
                            timeLimit: .milliseconds(300), drainTimeout: .milliseconds(100))
        let result = try await runOnTestClock(plan, target: ScriptedTarget(), source: { .push(push(token: "ok-\($0)")) })
        let c = result.summary.counts
        #expect(c.sent == 3)
        #expect(c.sent + c.unsentPushes + c.droppedIterations == 100)
    }

    @Test func cancellingARunKeepsTheAccountingWhole() async throws {
        // 40 iterations over 2 s; the run is cancelled at 300 ms. Each iteration is sent, taken
        // but left unsent, or never reached (dropped); the six due before 300 ms were sent.
        let plan = LoadPlan(scenario: "cancel", model: .open(ratePerSecond: 20, duration: .seconds(2)), maxInFlight: 8)
        // Eight workers waiting for their iterations, the run's timer and the canceller asleep.
        let result = try await runOnTestClock(plan, advancingWhenAsleep: 10, cancelAt: .milliseconds(300),
                                              target: ScriptedTarget(), source: { .push(push(token: "ok-\($0)")) })
        let c = result.summary.counts
        #expect(c.sent >= 6)
        #expect(c.sent == c.completed)
        #expect(c.sent + c.unsentPushes + c.droppedIterations == 40)
        #expect(c.iterations == c.sent + c.unsentPushes)
    }

    @Test(arguments: [
        LoadPlan(scenario: "", model: .closed(concurrency: 1, count: 1)),
        LoadPlan(scenario: "x", model: .closed(concurrency: 0, count: 1)),
        LoadPlan(scenario: "x", model: .closed(concurrency: 1, count: -1)),
        LoadPlan(scenario: "x", model: .open(ratePerSecond: 0, duration: .seconds(1))),
        LoadPlan(scenario: "x", model: .open(ratePerSecond: .nan, duration: .seconds(1))),
        LoadPlan(scenario: "x", model: .open(ratePerSecond: 10, duration: .zero)),
        LoadPlan(scenario: "x", model: .open(ratePerSecond: 10, duration: .seconds(1)), maxInFlight: 0),
        LoadPlan(scenario: "x", model: .closed(concurrency: 1, count: 1), timeLimit: .zero),
    ])
    func invalidPlansAreRejected(plan: LoadPlan) async {
        await #expect(throws: LoadPlanError.self) {
            _ = try await LoadRunner(plan: plan, target: ScriptedTarget()).run(source: { _ in nil })
        }
    }
}

@Suite struct LoadSourceTests {
    @Test func cyclingRepeatsThePushesUpToTheLimit() {
        let source = LoadSources.cycling([push(token: "a"), push(token: "b")], limit: 3)
        let tokens = (0..<5).map { iteration -> String? in
            guard case .push(let p)? = source(iteration) else { return nil }
            return p.device.token
        }
        #expect(tokens == ["a", "b", "a", nil, nil])
        #expect(LoadSources.cycling([])(0).map { _ in true } == nil)
    }

    @Test func fanOutRingsEveryMemberEachIteration() async throws {
        let members = (0..<100).map { push(token: "ok-\($0)", kind: "poolse.ring") }
        let plan = LoadPlan(scenario: "ring", model: .closed(concurrency: 16, count: 10))
        let result = try await LoadRunner(plan: plan, target: ScriptedTarget())
            .run(source: LoadSources.fanOut(members, limit: 2))
        #expect(result.summary.counts.iterations == 2)
        #expect(result.summary.counts.sent == 200)
        #expect(result.summary.counts.fanOutsFullyDelivered == 2)
    }
}

/// A target that only logs (no credentials): every outcome is a dry run.
private struct DryRunTarget: PushTarget {
    func send(_ push: PushRequest) async -> PushOutcome { .dryRun(line: "would send") }
}

/// Records how it was called: a fan-out must arrive as one batch, not push by push.
private final class BatchCountingTarget: PushTarget {
    let batches = Mutex<[Int]>([])
    func send(_ push: PushRequest) async -> PushOutcome {
        batches.withLock { $0.append(1) }
        return .delivered(id: nil)
    }
    func send(contentsOf pushes: [PushRequest], finished: @escaping @Sendable (Int, PushOutcome) -> Void) async {
        batches.withLock { $0.append(pushes.count) }
        for index in pushes.indices.reversed() { finished(index, index == 3 ? .tokenRemoved(reason: "Unregistered") : .delivered(id: nil)) }
    }
}

@Suite struct LoadRunnerOutcomeTests {
    @Test func aDryRunCountsAsFailedNotDelivered() async throws {
        let plan = LoadPlan(scenario: "dry", model: .closed(concurrency: 2, count: 10))
        let result = try await LoadRunner(plan: plan, target: DryRunTarget()).run(source: { .push(push(token: "ok-\($0)")) })
        #expect(result.summary.counts.delivered == 0)
        #expect(result.summary.counts.failed == 10)
        #expect(result.summary.outcomes == [OutcomeCount(kind: "failed", reason: "DryRun", count: 10)])
    }

    @Test func aFanOutGoesToTheTargetAsOneBatch() async throws {
        let target = BatchCountingTarget()
        let plan = LoadPlan(scenario: "ring", model: .closed(concurrency: 4, count: 3))
        let result = try await LoadRunner(plan: plan, target: target)
            .run(source: { iteration in .fanOut((0..<20).map { push(token: "ok-\(iteration)-\($0)") }) })
        #expect(target.batches.withLock { $0 } == [20, 20, 20])
        let s = result.summary
        #expect(s.counts.sent == 60)
        #expect(s.counts.completed == 60)
        #expect(s.counts.tokensRemoved == 3)
        #expect(s.counts.fanOuts == 3)
        #expect(s.counts.fanOutsFullyDelivered == 0)
        #expect(result.timeToRingAll.totalCount == 3)
    }
}
