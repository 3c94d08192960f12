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
/// anything else is delivered. Each send takes `latency`; cancellation ends the wait early.
struct ScriptedTarget: PushTarget {
    var latency: Duration = .zero

    func send(_ push: PushRequest) async -> PushOutcome {
        if latency > .zero { try? await Task.sleep(for: latency) }
        let token = push.device.token
        if token.hasPrefix("fail-") { return .failed(reason: "TooManyRequests", status: 429) }
        if token.hasPrefix("gone-") { return .tokenRemoved(reason: "Unregistered") }
        return .delivered(id: nil)
    }
}

/// The first `slowPushes` sends each take `stall`; the rest return at once.
final class StallingTarget: PushTarget {
    let stall: Duration
    let slowPushes: Int
    private let sends = Atomic<Int>(0)

    init(stall: Duration, slowPushes: Int) {
        self.stall = stall
        self.slowPushes = slowPushes
    }

    func send(_ push: PushRequest) async -> PushOutcome {
        let (index, _) = sends.add(1, ordering: .relaxed)
        if index <= slowPushes {
            // Not cut short by cancellation: the stall is the point of the test.
            let stall = self.stall
            await Task.detached { try? await Task.sleep(for: stall) }.value
        }
        return .delivered(id: nil)
    }
}

/// Never answers within the test's lifetime and ignores cancellation, like a wedged transport.
struct HangingTarget: PushTarget {
    func send(_ push: PushRequest) async -> PushOutcome {
        await Task.detached { try? await Task.sleep(for: .seconds(3600)) }.value
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

/// Runs `plan` on a `TestClock`, so an open-model schedule plays out in virtual time and no
/// wall time is read. Time jumps to the next deadline whenever at least two tasks sleep on the
/// clock (the run's own time-limit timer and a worker waiting for its iteration): the timer's
/// deadline is then never the earliest while a worker still waits.
func runOnTestClock(_ plan: LoadPlan, target: any PushTarget, source: @escaping LoadSource) async throws -> RunResult {
    let clock = TestClock()
    let run = Task { try await LoadRunner(plan: plan, target: target, clock: clock).run(source: source) }
    let finished = Atomic<Bool>(false)
    let ticker = Task {
        while !finished.load(ordering: .relaxed) {
            for _ in 0..<8 { await Task.yield() }
            if clock.sleeperCount >= 2 { clock.advanceToNextDeadline() }
        }
    }
    defer {
        finished.store(true, ordering: .relaxed)
        ticker.cancel()
    }
    return try await run.value
}
