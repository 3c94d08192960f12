import Clocks
import Driver
import PushModel
import Synchronization

/// A push to device `token`; fake targets decide its outcome from the token's prefix.
func push(token: String, kind: String = "yama.message") -> PushRequest {
    PushRequest(device: Device(userID: "user-\(token)", platform: .ios, kind: .alert, token: token),
                kind: kind, headers: [("apns-push-type", "alert")], body: Array(#"{"aps":{}}"#.utf8))
}

/// Outcome by token prefix: "fail-" fails with TooManyRequests, "gone-" has its token removed,
/// anything else is delivered. Each send takes `latency` on `clock` (a `TestClock` in tests that
/// run on one); cancellation ends the wait early.
struct ScriptedTarget: PushTarget {
    var latency: Duration = .zero
    var clock: any Clock<Duration> = ContinuousClock()

    func send(_ push: PushRequest) async -> PushOutcome {
        if latency > .zero { try? await clock.sleep(for: latency) }
        let token = push.device.token
        if token.hasPrefix("fail-") { return .failed(reason: "TooManyRequests", status: 429) }
        if token.hasPrefix("gone-") { return .tokenRemoved(reason: "Unregistered") }
        return .delivered(id: nil)
    }
}

/// The first `slowPushes` sends each take `stall` on `clock`; the rest return at once.
final class StallingTarget: PushTarget {
    let stall: Duration
    let slowPushes: Int
    let clock: any Clock<Duration>
    private let sends = Atomic<Int>(0)

    init(stall: Duration, slowPushes: Int, clock: any Clock<Duration>) {
        self.stall = stall
        self.slowPushes = slowPushes
        self.clock = clock
    }

    func send(_ push: PushRequest) async -> PushOutcome {
        let (index, _) = sends.add(1, ordering: .relaxed)
        if index < slowPushes {  // `add` returns the count before this send
            // Not cut short by cancellation: the stall is the point of the test.
            let (stall, clock) = (self.stall, self.clock)
            await Task.detached { try? await clock.sleep(for: stall) }.value
        }
        return .delivered(id: nil)
    }
}

/// Never answers within the run (an hour on `clock`) and ignores cancellation, like a wedged
/// transport.
struct HangingTarget: PushTarget {
    let clock: any Clock<Duration>

    func send(_ push: PushRequest) async -> PushOutcome {
        let clock = self.clock
        await Task.detached { try? await clock.sleep(for: .seconds(3600)) }.value
        return .failed(reason: "never", status: 0)
    }
}

/// Iteration i is a push to "fail-i" every 10th, "gone-i" every 25th (when not a 10th), else "ok-i".
func mixedSource(_ iteration: Int) -> LoadItem? {
    if iteration % 10 == 0 { return .push(push(token: "fail-\(iteration)")) }
    if iteration % 25 == 0 { return .push(push(token: "gone-\(iteration)")) }
    return .push(push(token: "ok-\(iteration)"))
}

/// Expected outcome counts of `mixedSource` over iterations 0..<n.
func mixedCounts(_ n: Int) -> (delivered: Int, failed: Int, removed: Int) {
    let failed = (0..<n).filter { $0 % 10 == 0 }.count
    let removed = (0..<n).filter { $0 % 10 != 0 && $0 % 25 == 0 }.count
    return (n - failed - removed, failed, removed)
}

/// Runs `plan` on `clock`, a `TestClock`, so the schedule, the targets' sleeps, the time limit
/// and the drain play out in virtual time and no wall time is read.
///
/// Time jumps to the next deadline once at least `asleep` tasks sleep on the clock and that
/// number has held over a few rounds of yields: the default 2 is the run's own time-limit timer
/// and one worker (or target) waiting. A test whose tasks are all known to block sets `asleep`
/// to that number, so no deadline passes while one of them has yet to reach its sleep.
/// `cancelAt`: the run is cancelled when the clock reaches that time.
/// Afterwards the clock jumps far ahead, so a target that ignored cancellation returns too.
func runOnTestClock(_ plan: LoadPlan, on clock: TestClock = TestClock(), advancingWhenAsleep asleep: Int = 2,
                    cancelAt: Duration? = nil,
                    target: any PushTarget, source: @escaping LoadSource) async throws -> RunResult {
    let run = Task { try await LoadRunner(plan: plan, target: target, clock: clock).run(source: source) }
    let canceller = cancelAt.map { time in
        Task {
            try await clock.sleep(until: .init(nanoseconds: 0).advanced(by: time), tolerance: nil)
            run.cancel()
        }
    }
    let finished = Atomic<Bool>(false)
    let ticker = Task {
        var seen = -1
        var steadyRounds = 0
        var steadySince = SystemClock.monotonicNanoseconds()
        while !finished.load(ordering: .relaxed) {
            await Task.yield()
            let sleepers = clock.sleeperCount
            if sleepers == seen, sleepers >= asleep {
                steadyRounds += 1
            } else {
                (seen, steadyRounds) = (sleepers, 0)
                steadySince = SystemClock.monotonicNanoseconds()
            }
            // Only a long quiet moves the clock: a runner between two sleeps (sending, taking the
            // next due time) must not see its deadline overtaken by another sleeper's. Counted in
            // yields and in real time: on a loaded machine (tests of other suites sharing the two
            // threads of the pool) a runnable task may wait longer than 64 yields for a thread.
            if steadyRounds >= 64, SystemClock.monotonicNanoseconds() &- steadySince >= 5_000_000 {
                clock.advanceToNextDeadline()
                (seen, steadyRounds) = (-1, 0)
                steadySince = SystemClock.monotonicNanoseconds()
            }
        }
    }
    defer {
        finished.store(true, ordering: .relaxed)
        ticker.cancel()
        canceller?.cancel()
        clock.advance(by: .seconds(86_400))
    }
    return try await run.value
}
