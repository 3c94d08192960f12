// The one way results of a hand-over reach whoever waits for them: each push carries its
// batch and its place in it to the end (`DeliveryShared.finish`), so no ticket is looked up,
// nothing waits in a map of early results, and a waiter can stop waiting (task cancellation)
// without leaving a continuation hanging.
import Clocks
import Hashing
import PushModel
import Synchronization

/// One or more `PushDeliverer`s (each a delivery thread with its own libcurl multi handle and
/// connections) behind one cancellable `deliver`. Pushes are spread over the deliverers by
/// device token, so one device's pushes keep to one connection and stay in order.
public final class DeliveryPool: Sendable {
    public let deliverers: [PushDeliverer]

    public convenience init(deliverer: PushDeliverer) {
        self.init(deliverers: [deliverer])
    }

    /// `deliverers` must not be empty.
    public init(deliverers: [PushDeliverer]) {
        precondition(!deliverers.isEmpty, "a pool needs a deliverer")
        self.deliverers = deliverers
    }

    /// The first deliverer; with one delivery thread, the only one.
    public var deliverer: PushDeliverer { deliverers[0] }

    /// Which deliverer takes `push`: FNV-1a of the whole token (FCM tokens may share long
    /// prefixes or suffixes, so no part of it alone will do).
    private func shard(of push: PushRequest) -> Int {
        guard deliverers.count > 1 else { return 0 }
        return Int(FNV1a.hash64(push.device.token.utf8) % UInt64(deliverers.count))
    }

    /// Sends one push and waits for its result; see `deliver(contentsOf:each:)` for cancellation.
    public func deliver(_ push: PushRequest) async -> PushResult {
        await deliver(contentsOf: [push])[0]
    }

    /// Sends every push (waiting for in-flight slots as the deliverers demand; each deliverer
    /// takes its share as one batch) and returns every result, in the order of `pushes`.
    /// `each(index, result)` is called once per push as it ends (on a delivery thread; keep it
    /// short), all before this returns.
    ///
    /// Cancellable: once the calling task is cancelled, pushes not yet handed over are not sent,
    /// and this returns at once; every push without a result by then ends, for the caller,
    /// `.failed(reason: "Cancelled", status: 0)` (attempts 0). Pushes already handed over still
    /// run to their end inside their deliverer and count in its metrics. (Handing over itself
    /// waits for in-flight slots without a way out: give the deliverers enough slots.)
    public func deliver(contentsOf pushes: [PushRequest], each: (@Sendable (Int, PushResult) -> Void)? = nil) async -> [PushResult] {
        guard !pushes.isEmpty else { return [] }
        let batch = ResultBatch(pushes, each: each)
        return await withTaskCancellationHandler {
            if deliverers.count == 1 {
                _ = await deliverers[0].handOver(pushes, at: nil, to: batch)
            } else {
                var shares = Array(repeating: [Int](), count: deliverers.count)
                for index in pushes.indices { shares[shard(of: pushes[index])].append(index) }
                await withTaskGroup(of: Void.self) { group in
                    for (deliverer, share) in shares.enumerated() where !share.isEmpty {
                        let target = deliverers[deliverer]
                        group.addTask { _ = await target.handOver(share.map { pushes[$0] }, at: share, to: batch) }
                    }
                }
            }
            return await batch.results()
        } onCancel: {
            batch.abandon()
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
            total.tokenCleanup.merge(s.tokenCleanup)
        }
        return total
    }

    /// Lets every accepted push finish, then stops the deliverers.
    public func shutdown() async {
        for deliverer in deliverers { await deliverer.shutdown() }
    }
}

/// The waiter of one hand-over: each push's result goes into its place, and the one waiting
/// task resumes when the last arrives, or at once when the batch is abandoned (its task was
/// cancelled). Every place is filled exactly once, by its result or by "Cancelled"; a result
/// arriving after that is dropped here (the deliverer's metrics still count it).
final class ResultBatch: Sendable {
    private struct State {
        var results: [PushResult?]
        var remaining: Int
        var abandoned = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private let pushes: [PushRequest]
    private let each: (@Sendable (Int, PushResult) -> Void)?
    private let state: Mutex<State>

    init(_ pushes: [PushRequest], each: (@Sendable (Int, PushResult) -> Void)?) {
        self.pushes = pushes
        self.each = each
        state = Mutex(State(results: Array(repeating: nil, count: pushes.count), remaining: pushes.count))
    }

    /// True once the waiter stopped waiting: pushes not handed over yet should not be.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Delivery side: the push at `index` ended.
    func complete(_ index: Int, with result: PushResult) {
        // `each` runs inside the lock, so every call has returned when the waiter resumes.
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.abandoned, state.results[index] == nil else { return nil }
            state.results[index] = result
            state.remaining -= 1
            each?(index, result)
            guard state.remaining == 0 else { return nil }
            defer { state.continuation = nil }
            return state.continuation
        }
        waiter?.resume()
    }

    /// The waiter's task was cancelled: every place still open ends "Cancelled" and the waiter
    /// resumes (at once, or as soon as it starts waiting).
    func abandon() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.abandoned, state.remaining > 0 else { return nil }
            state.abandoned = true
            let now = SystemClock.monotonicNanoseconds()
            for index in state.results.indices where state.results[index] == nil {
                let push = pushes[index]
                let cancelled = PushResult(ticket: 0, kind: push.kind, device: push.device,
                                           outcome: .failed(reason: "Cancelled", status: 0), attempts: 0, finishedAt: now)
                state.results[index] = cancelled
                each?(index, cancelled)
            }
            state.remaining = 0
            defer { state.continuation = nil }
            return state.continuation
        }
        waiter?.resume()
    }

    /// Waits until every place is filled (not itself cancellable: `abandon` fills them).
    func results() async -> [PushResult] {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.remaining == 0 { return true }
                state.continuation = continuation
                return false
            }
            if done { continuation.resume() }
        }
        return state.withLock { state in state.results.map { $0! } }
    }
}
