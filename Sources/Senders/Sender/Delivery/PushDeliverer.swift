// The reference sender's transport: pushes in through a bounded queue, one libcurl multi
// handle on one thread multiplexing them over HTTP/2, outcomes out through an AsyncStream.
import Descriptors
import Clocks
import Dispatch
import Foundation
import PushModel
import Synchronization

/// Why a `PushDeliverer` could not start.
public enum DeliveryError: Error, Sendable, Equatable, CustomStringConvertible {
    case setupFailed(String)

    public var description: String {
        switch self {
        case .setupFailed(let message): "push delivery could not start: \(message)"
        }
    }
}

/// Sends pushes to APNs and FCM over HTTP/2 and removes dead tokens from a `DeviceStore`.
///
/// - One thread owns the libcurl multi handle and every easy handle; it multiplexes all
///   requests to a gateway over at most `connectionsPerGateway` connections.
/// - `send` suspends while `maxInFlight` pushes are unfinished (a retry waiting for its
///   backoff still counts), so a fast producer cannot queue without bound.
/// - Every push ends with exactly one `PushOutcome`, counted in `metrics` and handed to its
///   waiter (`deliver`, or a `DeliveryPool`), or, when nobody waits for it (`send`), yielded on
///   `outcomes`. A push the gateway accepted is never sent again.
/// - A gateway without credentials runs dry: each push is logged as one line through `log`
///   and ends `.dryRun(line:)`; nothing is sent.
public final class PushDeliverer: Sendable {
    public let configuration: DeliveryConfiguration
    public let metrics: DeliveryMetrics
    /// The result of every push handed over with `send` (pushes someone waits for go to their
    /// waiter instead), in the order they finish. Unbounded: consume it, or ignore it and read
    /// `metrics` (results then accumulate until the deliverer is released).
    public let outcomes: AsyncStream<PushResult>
    let shared: DeliveryShared

    /// Starts the delivery thread. `log` receives dry-run lines (default: standard error).
    public init(
        configuration: DeliveryConfiguration,
        credentials: DeliveryCredentials,
        deviceStore: any DeviceStore,
        log: @escaping @Sendable (String) -> Void = { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
    ) throws(DeliveryError) {
        self.configuration = configuration
        let metrics = DeliveryMetrics()
        self.metrics = metrics
        let (stream, continuation) = AsyncStream<PushResult>.makeStream()
        outcomes = stream
        let wakeEvent: FileDescriptor
        do {
            wakeEvent = try makeWakeEvent()
        } catch {
            throw .setupFailed("\(error)")
        }
        shared = DeliveryShared(
            configuration: configuration, credentials: credentials, deviceStore: deviceStore,
            metrics: metrics, continuation: continuation, wakeEvent: wakeEvent, log: log)
        try shared.startLoopThread()
    }

    deinit {
        shared.requestStop()
    }

    /// Hands a push over; returns its ticket (the `PushResult.ticket` of its outcome).
    /// Suspends while `maxInFlight` pushes are unfinished.
    @discardableResult
    public func send(_ push: PushRequest) async -> UInt64 {
        await handOver([push], at: nil, to: nil)[0]
    }

    /// Hands pushes over in order; returns their tickets in the same order. Suspends while
    /// `maxInFlight` pushes are unfinished, and then waits for several slots at a time, so a
    /// fan-out of thousands costs a handful of hand-overs rather than one per push.
    public func send(contentsOf pushes: [PushRequest]) async -> [UInt64] {
        await handOver(pushes, at: nil, to: nil)
    }

    /// Sends a push and waits for its outcome (not cancellable: a `DeliveryPool` is).
    public func deliver(_ push: PushRequest) async -> PushResult {
        let batch = ResultBatch([push], each: nil)
        _ = await handOver([push], at: nil, to: batch)
        return await batch.results()[0]
    }

    /// Hands `pushes` over in order and returns their tickets. With a `batch`, push `k` reports
    /// to it at place `places?[k] ?? k`, and hand-over stops once the batch is abandoned;
    /// without one, results go to `outcomes`.
    func handOver(_ pushes: [PushRequest], at places: [Int]?, to batch: ResultBatch?) async -> [UInt64] {
        var tickets: [UInt64] = []
        tickets.reserveCapacity(pushes.count)
        var next = pushes.startIndex
        // The end of the run of live (not dry) pushes starting at `next`, found once per run.
        var liveEnd = next
        while next < pushes.endIndex {
            if let batch, batch.isAbandoned { break }
            if shared.runsDry(pushes[next]) {
                tickets.append(shared.dryRun(pushes[next], waiter: batch.map { ($0, places?[next] ?? next) }))
                next += 1
                continue
            }
            if liveEnd <= next {
                liveEnd = pushes[next...].firstIndex { shared.runsDry($0) } ?? pushes.endIndex
            }
            let granted = await shared.acquireSlots(upTo: liveEnd - next)
            tickets.append(contentsOf: shared.enqueue(pushes[next..<(next + granted)], places: places, waiter: batch))
            next += granted
        }
        return tickets
    }

    /// Stops taking pushes, lets every accepted push finish (retries included), stops the
    /// thread and finishes `outcomes`. Pushes sent afterwards end `.failed("DelivererShutDown", 0)`.
    public func shutdown() async {
        shared.requestStop()
        let shared = self.shared
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                shared.waitUntilStopped()
                continuation.resume()
            }
        }
    }
}

/// One push on its way: what to send, how often it went, whom to tell.
struct DeliveryJob: Sendable {
    var ticket: UInt64
    var push: PushRequest
    var attempts = 0
    var holdsSlot: Bool
    /// Who waits for the result, and at which place (nil: `outcomes`).
    var waiter: ResultBatch?
    var place = 0
    /// Which provider token or access token the last attempt carried.
    var credentialGeneration = 0
}

/// State shared by callers, the loop thread and the cleanup queue. Everything mutable is
/// behind `state`'s mutex or atomic.
final class DeliveryShared: Sendable {
    struct State {
        var submissions: [DeliveryJob] = []
        var inFlight = 0
        /// FIFO of callers waiting for slots; `slotWaitersHead` is the first still waiting,
        /// so handing a slot over is O(1) however many wait. A finishing push's slot goes
        /// straight to the first waiter (it stays counted in `inFlight`).
        var slotWaiters: [SlotWaiter] = []
        var slotWaitersHead = 0
        /// Slots handed to the first waiter but not yet to its caller.
        var slotsHeldForWaiter = 0
        var nextTicket: UInt64 = 1
        var stopping = false
        var loopExited = false
        /// Transfers the loop had running when it last went to wait: their answers wake it anyway.
        var loopActiveTransfers = 0
    }

    let configuration: DeliveryConfiguration
    let credentials: DeliveryCredentials
    let deviceStore: any DeviceStore
    let metrics: DeliveryMetrics
    let continuation: AsyncStream<PushResult>.Continuation
    /// An eventfd that wakes the loop thread from curl_multi_poll, so no thread but the loop
    /// ever touches the CURLM handle (not even for curl_multi_wakeup).
    let wakeEvent: FileDescriptor
    let log: @Sendable (String) -> Void
    let state = Mutex(State())
    /// A push queued while the loop waits on at least this many transfers does not wake it:
    /// the next answer will, and the loop then takes every queued push in one go (a wake-up
    /// per handful of pushes costs a poll, a perform over every transfer and an empty read).
    let wakeBelowActiveTransfers: Int
    /// ... unless this many are queued.
    let wakeAtQueuedPushes: Int
    private let loopStopped = DispatchSemaphore(value: 0)
    private let cleanupQueue = DispatchQueue(label: "pushproof.sender.token-cleanup")

    init(configuration: DeliveryConfiguration, credentials: DeliveryCredentials, deviceStore: any DeviceStore,
         metrics: DeliveryMetrics, continuation: AsyncStream<PushResult>.Continuation, wakeEvent: consuming FileDescriptor,
         log: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.credentials = credentials
        self.deviceStore = deviceStore
        self.metrics = metrics
        self.continuation = continuation
        self.wakeEvent = wakeEvent
        self.log = log
        wakeBelowActiveTransfers = max(1, configuration.maxInFlight / 4)
        wakeAtQueuedPushes = max(1, min(configuration.maxInFlight / 8, 64))
    }

    func startLoopThread() throws(DeliveryError) {
        let started = DispatchSemaphore(value: 0)
        let startupError = Mutex<String?>(nil)
        let thread = Thread { [self] in
            let loop: CurlLoop
            do {
                loop = try CurlLoop(shared: self)
            } catch {
                startupError.withLock { $0 = "\(error)" }
                state.withLock { $0.loopExited = true }
                started.signal()
                loopStopped.signal()
                return
            }
            started.signal()
            loop.run()
            // Token removals still queued finish before anyone hears the loop stopped.
            cleanupQueue.sync {}
            continuation.finish()
            loopStopped.signal()
        }
        thread.name = "pushproof.sender.curl"
        thread.start()
        started.wait()
        if let message = startupError.withLock({ $0 }) { throw .setupFailed(message) }
    }

    func waitUntilStopped() {
        loopStopped.wait()
        loopStopped.signal()  // later waiters return too
    }

    /// Whether `shutdown` (or the deliverer's release) asked the loop to stop.
    var stopRequested: Bool { state.withLock { $0.stopping } }

    func requestStop() {
        state.withLock { $0.stopping = true }
        wake()
    }

    func wake() {
        postWakeEvent(wakeEvent.raw)
    }

    // MARK: - Intake

    func runsDry(_ push: PushRequest) -> Bool {
        switch push.transport {
        case .apns: credentials.apns == nil
        case .fcm: credentials.fcm == nil
        }
    }

    /// A caller waiting for `wanted` slots.
    struct SlotWaiter {
        var continuation: CheckedContinuation<Int, Never>
        var wanted: Int
    }

    /// Waits until at least one in-flight slot is free, takes up to `wanted` (at least 1), and
    /// returns how many it took; the caller enqueues that many pushes. While stopping, slots
    /// are granted beyond the limit: those pushes end `DelivererShutDown` without waiting.
    func acquireSlots(upTo wanted: Int) async -> Int {
        let wanted = max(1, wanted)
        let limit = configuration.maxInFlight
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let granted = state.withLock { state -> Int in
                if state.stopping {
                    state.inFlight += wanted
                    return wanted
                }
                let free = limit - state.inFlight
                if free > 0 && state.slotWaitersHead == state.slotWaiters.count {
                    let granted = min(free, wanted)
                    state.inFlight += granted
                    return granted
                }
                state.slotWaiters.append(SlotWaiter(continuation: continuation, wanted: wanted))
                return 0
            }
            if granted > 0 { continuation.resume(returning: granted) }
        }
    }

    /// A push ended: its slot goes to the first waiter, who is woken once it holds all it
    /// wanted or an eighth of the limit, or when no unfinished push is left to free another.
    /// Waking a waiter per slot would cost a task hand-over per push.
    private func releaseSlot() {
        let wakeAt = max(1, configuration.maxInFlight / 8)
        let woken = state.withLock { state -> (CheckedContinuation<Int, Never>, Int)? in
            guard state.slotWaitersHead < state.slotWaiters.count else {
                state.inFlight -= 1
                return nil
            }
            state.slotsHeldForWaiter += 1
            let waiter = state.slotWaiters[state.slotWaitersHead]
            let nothingElseWillFinish = state.inFlight == state.slotsHeldForWaiter
            guard state.slotsHeldForWaiter >= min(waiter.wanted, wakeAt) || nothingElseWillFinish else { return nil }
            let granted = state.slotsHeldForWaiter
            state.slotsHeldForWaiter = 0
            state.slotWaitersHead += 1
            if state.slotWaitersHead >= 1024, state.slotWaitersHead * 2 >= state.slotWaiters.count {
                state.slotWaiters.removeFirst(state.slotWaitersHead)
                state.slotWaitersHead = 0
            } else if state.slotWaitersHead == state.slotWaiters.count {
                state.slotWaiters.removeAll(keepingCapacity: true)
                state.slotWaitersHead = 0
            }
            return (waiter.continuation, granted)
        }
        if let (continuation, granted) = woken { continuation.resume(returning: granted) }
    }

    /// Queues pushes for the loop thread in one critical section; the caller holds a slot for
    /// each. A push's place in `waiter` is `places?[i] ?? i` for its index `i` in the hand-over.
    func enqueue(_ pushes: ArraySlice<PushRequest>, places: [Int]?, waiter: ResultBatch?) -> [UInt64] {
        metrics.submitted.add(pushes.count, ordering: .relaxed)
        let (firstTicket, accepted, needsWake) = state.withLock { state -> (UInt64, Bool, Bool) in
            let firstTicket = state.nextTicket
            state.nextTicket += UInt64(pushes.count)
            guard !state.loopExited else { return (firstTicket, false, false) }
            // Only the push that makes the queue non-empty wakes the loop (it takes them all),
            // and only if no answer is due to wake it first; a long queue wakes it regardless.
            let wasEmpty = state.submissions.isEmpty
            let countBefore = state.submissions.count
            var ticket = firstTicket
            for index in pushes.indices {
                state.submissions.append(DeliveryJob(ticket: ticket, push: pushes[index], holdsSlot: true, waiter: waiter,
                                                     place: places?[index] ?? index))
                ticket += 1
            }
            let wake = (wasEmpty && state.loopActiveTransfers < wakeBelowActiveTransfers)
                || (countBefore < wakeAtQueuedPushes && state.submissions.count >= wakeAtQueuedPushes)
            return (firstTicket, true, wake)
        }
        let tickets = (0..<UInt64(pushes.count)).map { firstTicket + $0 }
        if accepted {
            if needsWake { wake() }
        } else {
            for (index, ticket) in zip(pushes.indices, tickets) {
                finish(DeliveryJob(ticket: ticket, push: pushes[index], holdsSlot: true, waiter: waiter, place: places?[index] ?? index),
                       .failed(reason: "DelivererShutDown", status: 0))
            }
        }
        return tickets
    }

    @discardableResult
    func dryRun(_ push: PushRequest, waiter: (batch: ResultBatch, place: Int)?) -> UInt64 {
        metrics.submitted.add(1, ordering: .relaxed)
        let ticket = state.withLock { state -> UInt64 in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
        let line = DryRun.logLine(for: push, fcmProjectID: configuration.fcmProjectID)
        log(line)
        finish(DeliveryJob(ticket: ticket, push: push, holdsSlot: false, waiter: waiter?.batch, place: waiter?.place ?? 0), .dryRun(line: line))
        return ticket
    }

    /// Loop side: everything submitted since the last call. When stopping was requested,
    /// nothing was submitted and the loop has nothing left, the loop is marked exited in
    /// the same critical section, so no later push can slip into a queue nobody reads.
    func takeSubmissions(loopIsIdle: Bool) -> (jobs: [DeliveryJob], exit: Bool) {
        state.withLock { state in
            if state.submissions.isEmpty {
                if state.stopping && loopIsIdle {
                    state.loopExited = true
                    return ([], true)
                }
                return ([], false)
            }
            let jobs = state.submissions
            state.submissions.removeAll(keepingCapacity: true)
            return (jobs, false)
        }
    }

    /// Loop side, just before it waits: records how many transfers it waits on (see
    /// `enqueue`) and says whether pushes are already queued, in which case it should not wait.
    /// One critical section with `enqueue`, so a push queued after it sees the new count.
    func loopWillWait(activeTransfers: Int) -> Bool {
        state.withLock { state in
            state.loopActiveTransfers = activeTransfers
            return !state.submissions.isEmpty
        }
    }

    // MARK: - Outcomes

    /// The one place a push ends.
    func finish(_ job: DeliveryJob, _ outcome: PushOutcome) {
        let result = PushResult(ticket: job.ticket, kind: job.push.kind, device: job.push.device, outcome: outcome,
                                attempts: job.attempts, finishedAt: SystemClock.monotonicNanoseconds())
        metrics.record(outcome)
        if let waiter = job.waiter {
            waiter.complete(job.place, with: result)
        } else {
            continuation.yield(result)
        }
        if job.holdsSlot { releaseSlot() }
    }

    /// Deletes the device off the loop thread (SQLite may wait on the disk), measuring the
    /// time from the gateway's answer to the deletion.
    func removeToken(of job: DeliveryJob, reason: String, status: Int, answeredAtNanoseconds: UInt64) {
        cleanupQueue.async { [self] in
            do {
                if try deviceStore.remove(token: job.push.device.token) {
                    metrics.devicesDeleted.add(1, ordering: .relaxed)
                }
                let elapsed = SystemClock.monotonicNanoseconds() &- answeredAtNanoseconds
                metrics.recordTokenCleanup(nanoseconds: elapsed)
                finish(job, .tokenRemoved(reason: reason))
            } catch {
                metrics.tokenRemovalErrors.add(1, ordering: .relaxed)
                finish(job, .failed(reason: "\(reason) (token removal failed: \(error))", status: status))
            }
        }
    }
}
