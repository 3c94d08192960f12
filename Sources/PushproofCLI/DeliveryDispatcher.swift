// Pairs a PushDeliverer's outcomes with whoever waits for them, by ticket, so a waiter can
// stop waiting (task cancellation) without leaving the deliverer's continuation hanging.
import Driver
import Foundation
import PushModel
import Sender
import Synchronization

/// A push's result and when it came back (monotonic nanoseconds).
struct TimedResult: Sendable {
    var result: PushResult
    var finishedAt: UInt64
}

/// Owns a `PushDeliverer` and one task reading its `outcomes`; hands each result to the
/// waiter of its ticket. Results that arrive before their waiter are kept until it comes.
final class DeliveryDispatcher: Sendable {
    private struct State {
        var waiters: [UInt64: ResultWaiter] = [:]
        /// Results whose waiter has not arrived yet (a dry run finishes inside `send`).
        var early: [UInt64: TimedResult] = [:]
    }

    let deliverer: PushDeliverer
    private let state = Mutex(State())
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(deliverer: PushDeliverer) {
        self.deliverer = deliverer
        let outcomes = deliverer.outcomes
        let task = Task { [weak self] in
            for await result in outcomes {
                self?.complete(TimedResult(result: result, finishedAt: monotonicNow()))
            }
        }
        reader.withLock { $0 = task }
    }

    private func complete(_ timed: TimedResult) {
        let ticket = timed.result.ticket
        let waiter = state.withLock { state -> ResultWaiter? in
            if let waiter = state.waiters.removeValue(forKey: ticket) { return waiter }
            state.early[ticket] = timed
            return nil
        }
        waiter?.finish(timed)
    }

    /// Sends a push and waits for its result; nil when the calling task was cancelled first
    /// (the push itself still runs to its end inside the deliverer).
    func deliver(_ push: PushRequest) async -> TimedResult? {
        let ticket = await deliverer.send(push)
        return await result(of: ticket)
    }

    /// Waits for the result of `ticket`; returns nil at once when the task is cancelled.
    /// The ticket is always registered (or its early result taken), so nothing is left
    /// behind whichever of result and cancellation comes first.
    func result(of ticket: UInt64) async -> TimedResult? {
        let waiter = ResultWaiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<TimedResult?, Never>) in
                waiter.install(continuation)
                let early = state.withLock { state -> TimedResult? in
                    if let timed = state.early.removeValue(forKey: ticket) { return timed }
                    state.waiters[ticket] = waiter
                    return nil
                }
                if let early { waiter.finish(early) }
            }
        } onCancel: {
            waiter.finish(nil)
        }
    }

    /// Sends every push (waiting for in-flight slots as the deliverer demands) and returns
    /// every result, in the order of `pushes`.
    func deliverAll(_ pushes: [PushRequest]) async -> [TimedResult] {
        guard !pushes.isEmpty else { return [] }
        var tickets: [UInt64] = []
        tickets.reserveCapacity(pushes.count)
        for push in pushes { tickets.append(await deliverer.send(push)) }
        var results: [TimedResult] = []
        results.reserveCapacity(pushes.count)
        for ticket in tickets {
            // Not cancellable here: `send` runs to the end of its batch.
            if let timed = await result(of: ticket) { results.append(timed) }
        }
        return results
    }

    /// Lets every accepted push finish, then stops the deliverer and the reader.
    func shutdown() async {
        await deliverer.shutdown()
        let task = reader.withLock { $0 }
        await task?.value
    }
}

/// The reference sender as the driver's `PushTarget`.
///
/// Returns promptly once its task is cancelled: the wait for the outcome is cancellable, and
/// the deliverer is configured with at least as many in-flight slots as the runner has
/// workers, so handing a push over never waits for a slot.
struct SenderTarget: PushTarget {
    let dispatcher: DeliveryDispatcher

    func send(_ push: PushRequest) async -> PushOutcomeKind {
        if Task.isCancelled { return .failed(reason: "Cancelled") }
        guard let timed = await dispatcher.deliver(push) else { return .failed(reason: "Cancelled") }
        return Self.kind(of: timed.result.outcome)
    }

    static func kind(of outcome: PushOutcome) -> PushOutcomeKind {
        switch outcome {
        case .delivered: .delivered
        case .failed(let reason, _): .failed(reason: reason)
        case .tokenRemoved(let reason): .tokenRemoved(reason: reason)
        // Nothing went on the wire: not a delivery the run may count.
        case .dryRun: .failed(reason: "DryRun")
        }
    }
}

/// One wait for one result: resumed exactly once, by the result or by cancellation,
/// whichever comes first (either may come before the continuation is installed).
private final class ResultWaiter: Sendable {
    private struct State {
        var continuation: CheckedContinuation<TimedResult?, Never>?
        var outcome: TimedResult??
    }
    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<TimedResult?, Never>) {
        let settled = state.withLock { state -> TimedResult?? in
            if let outcome = state.outcome { return .some(outcome) }
            state.continuation = continuation
            return .none
        }
        if let settled { continuation.resume(returning: settled) }
    }

    func finish(_ value: TimedResult?) {
        let continuation = state.withLock { state -> CheckedContinuation<TimedResult?, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = .some(value)
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
    }
}

/// Nanoseconds on the monotonic clock.
func monotonicNow() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}
