// Pairs a PushDeliverer's outcomes with whoever waits for them, by ticket, so a waiter can
// stop waiting (task cancellation) without leaving the deliverer's continuation hanging.
import Clocks
import Foundation
import PushModel
import Synchronization

/// A push's result and when it came back (monotonic nanoseconds).
public struct TimedResult: Sendable {
    public var result: PushResult
    public var finishedAt: UInt64
}

/// Owns one or more `PushDeliverer`s (each a delivery thread with its own libcurl multi handle
/// and connections) and one task per deliverer reading its `outcomes`; hands each result to
/// the waiter of its ticket. Results that arrive before their waiter are kept until it comes.
/// Pushes are spread over the deliverers by device token, so one device's pushes keep to one
/// connection and stay in order.
public final class DeliveryDispatcher: Sendable {
    private struct State {
        var waiters: [UInt64: ResultWaiter] = [:]
        /// Results whose waiter has not arrived yet (a dry run finishes inside `send`).
        var early: [UInt64: TimedResult] = [:]
    }

    public let deliverers: [PushDeliverer]
    private let state = Mutex(State())
    private let readers = Mutex<[Task<Void, Never>]>([])

    public convenience init(deliverer: PushDeliverer) {
        self.init(deliverers: [deliverer])
    }

    /// `deliverers` must not be empty.
    public init(deliverers: [PushDeliverer]) {
        precondition(!deliverers.isEmpty, "a dispatcher needs a deliverer")
        self.deliverers = deliverers
        let tasks = deliverers.enumerated().map { index, deliverer in
            let outcomes = deliverer.outcomes
            return Task { [weak self] in
                for await result in outcomes {
                    self?.complete(TimedResult(result: result, finishedAt: SystemClock.monotonicNanoseconds()), from: index)
                }
            }
        }
        readers.withLock { $0 = tasks }
    }

    /// The first deliverer; with one delivery thread, the only one.
    public var deliverer: PushDeliverer { deliverers[0] }

    /// Tickets count per deliverer: the deliverer's index goes in the top byte.
    private static func key(_ ticket: UInt64, _ index: Int) -> UInt64 { UInt64(index) << 56 | ticket }

    private func complete(_ timed: TimedResult, from index: Int) {
        let key = Self.key(timed.result.ticket, index)
        let waiter = state.withLock { state -> ResultWaiter? in
            if let waiter = state.waiters.removeValue(forKey: key) { return waiter }
            state.early[key] = timed
            return nil
        }
        waiter?.finish(timed)
    }

    /// Which deliverer takes `push`: FNV-1a of the whole token (FCM tokens may share long
    /// prefixes or suffixes, so no part of it alone will do).
    private func shard(of push: PushRequest) -> Int {
        guard deliverers.count > 1 else { return 0 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in push.device.token.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(deliverers.count))
    }

    /// Hands a push to its deliverer (waiting for an in-flight slot if it demands) and returns
    /// the key its result will carry.
    public func submit(_ push: PushRequest) async -> UInt64 {
        let index = shard(of: push)
        return Self.key(await deliverers[index].send(push), index)
    }

    /// Sends a push and waits for its result; nil when the calling task was cancelled first
    /// (the push itself still runs to its end inside the deliverer).
    public func deliver(_ push: PushRequest) async -> TimedResult? {
        await result(of: await submit(push))
    }

    /// Waits for the result of `key` (from `submit`); returns nil at once when the task is
    /// cancelled. The key is always registered (or its early result taken), so nothing is
    /// left behind whichever of result and cancellation comes first.
    public func result(of key: UInt64) async -> TimedResult? {
        let waiter = ResultWaiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<TimedResult?, Never>) in
                waiter.install(continuation)
                let early = state.withLock { state -> TimedResult? in
                    if let timed = state.early.removeValue(forKey: key) { return timed }
                    state.waiters[key] = waiter
                    return nil
                }
                if let early { waiter.finish(early) }
            }
        } onCancel: {
            waiter.finish(nil)
        }
    }

    /// Every deliverer's counters, added up.
    public var statistics: DeliveryStatistics {
        var total = deliverers[0].metrics.snapshot
        for deliverer in deliverers.dropFirst() {
            let s = deliverer.metrics.snapshot
            total.submitted += s.submitted
            total.delivered += s.delivered
            total.failed += s.failed
            total.tokensRemoved += s.tokensRemoved
            total.dryRuns += s.dryRuns
            total.attemptsSent += s.attemptsSent
            total.retriesScheduled += s.retriesScheduled
            total.connectionsOpened += s.connectionsOpened
            total.providerTokensSigned += s.providerTokensSigned
            total.accessTokensFetched += s.accessTokensFetched
            total.tokenRemovalErrors += s.tokenRemovalErrors
            total.devicesDeleted += s.devicesDeleted
            total.tokenCleanup.count += s.tokenCleanup.count
            total.tokenCleanup.sumNanoseconds &+= s.tokenCleanup.sumNanoseconds
            total.tokenCleanup.maxNanoseconds = max(total.tokenCleanup.maxNanoseconds, s.tokenCleanup.maxNanoseconds)
            for (i, n) in s.tokenCleanup.buckets.enumerated() where i < total.tokenCleanup.buckets.count {
                total.tokenCleanup.buckets[i] += n
            }
        }
        return total
    }

    /// Sends every push (waiting for in-flight slots as the deliverers demand) and returns
    /// every result, in the order of `pushes`. Each deliverer takes its share as one batch.
    public func deliverAll(_ pushes: [PushRequest]) async -> [TimedResult] {
        guard !pushes.isEmpty else { return [] }
        var shares = Array(repeating: [Int](), count: deliverers.count)
        for index in pushes.indices { shares[shard(of: pushes[index])].append(index) }
        var keys = Array(repeating: UInt64(0), count: pushes.count)
        await withTaskGroup(of: (Int, [UInt64]).self) { group in
            for (deliverer, share) in shares.enumerated() where !share.isEmpty {
                let batch = share.map { pushes[$0] }
                let target = deliverers[deliverer]
                group.addTask { (deliverer, await target.send(contentsOf: batch)) }
            }
            for await (deliverer, tickets) in group {
                for (index, ticket) in zip(shares[deliverer], tickets) { keys[index] = Self.key(ticket, deliverer) }
            }
        }
        var results: [TimedResult] = []
        results.reserveCapacity(pushes.count)
        for key in keys {
            // Not cancellable here: `send` runs to the end of its batch.
            if let timed = await result(of: key) { results.append(timed) }
        }
        return results
    }

    /// Lets every accepted push finish, then stops the deliverers and the readers.
    public func shutdown() async {
        for deliverer in deliverers { await deliverer.shutdown() }
        for task in readers.withLock({ $0 }) { await task.value }
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
