import Clocks
import Synchronization
import Testing

/// Which sleepers woke, in order.
private final class WakeLog: Sendable {
    let order = Mutex<[Int]>([])
}

@Suite struct TestClockTests {
    @Test func sleepersWakeOnlyWhenTheClockReachesTheirDeadline() async throws {
        let clock = TestClock()
        let woken = WakeLog()
        let sleepers = (1...3).map { index in
            Task {
                try await clock.sleep(until: clock.now.advanced(by: .milliseconds(10 * index)), tolerance: nil)
                woken.order.withLock { $0.append(index) }
            }
        }
        while clock.sleeperCount < 3 { await Task.yield() }
        clock.advance(by: .milliseconds(15))
        try await sleepers[0].value
        #expect(woken.order.withLock { $0 } == [1])
        #expect(clock.sleeperCount == 2)
        clock.advance(by: .milliseconds(15))
        try await sleepers[1].value
        try await sleepers[2].value
        #expect(woken.order.withLock { $0 }.sorted() == [1, 2, 3])
        #expect(clock.now.nanoseconds == 30_000_000)
    }

    @Test func aDeadlineAlreadyPassedDoesNotSleep() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(1))
        try await clock.sleep(until: clock.now.advanced(by: .milliseconds(-5)), tolerance: nil)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aCancelledSleeperThrowsAndLeaves() async {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(3600)), tolerance: nil) }
        while clock.sleeperCount < 1 { await Task.yield() }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aTaskCancelledBeforeItSleepsThrowsAtOnce() async {
        let clock = TestClock()
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.now.advanced(by: .seconds(3600)), tolerance: nil)
        }
        // Before the fix this waited for a clock nobody advances.
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func monotonicInstantsAreSystemClockNanoseconds() {
        let before = SystemClock.monotonicNanoseconds()
        let now = MonotonicClock().now
        let after = SystemClock.monotonicNanoseconds()
        #expect(now.nanoseconds >= before && now.nanoseconds <= after)
        #expect(now.duration(to: now.advanced(by: .milliseconds(3))) == .milliseconds(3))
        #expect(now.advanced(by: .milliseconds(3)).duration(to: now) == .milliseconds(-3))
    }
}
