import Clocks
import Metrics
import PushModel
import Synchronization

/// Produces the iterations of a run: called with 0, 1, 2, ... (warm-up iterations included);
/// `nil` ends the run early. Called one at a time, never concurrently.
public typealias LoadSource = @Sendable (_ iteration: Int) -> LoadItem?

/// Drives a ``PushTarget`` through a ``LoadPlan`` and measures it.
///
/// Workers (Swift tasks; `maxInFlight` of them in the open model, `concurrency` in the closed
/// model) take the next due iteration from a shared cursor, wait for its intended send time,
/// send it (a fan-out in one `send(contentsOf:)`, as `send ring` does), and record per push two
/// latencies: from the intended time (corrected for coordinated omission,
/// load-testing.md "Latency") and from the actual send. Records go to a few lock-striped
/// shards, so the hot path takes two short uncontended locks and allocates nothing of its own.
///
/// A run always ends by itself: no push starts after the plan's time limit, and the run returns
/// at most `drainTimeout` later, cancelling sends still in flight and counting them abandoned.
///
/// Every time is read from, and every wait is a sleep on, `clock`: `MonotonicClock` for real
/// runs, a `TestClock` in tests that should not depend on wall time.
public struct LoadRunner<C: Clock>: Sendable where C.Duration == Duration {
    public let plan: LoadPlan
    public let target: any PushTarget
    public let clock: C

    public init(plan: LoadPlan, target: any PushTarget, clock: C) {
        self.plan = plan
        self.target = target
        self.clock = clock
    }

    /// Runs the plan; throws only when the plan is invalid. `start`: the instant intended times
    /// count from, when the run was planned to start at a given time (`drive --start-at`); if it
    /// has passed, the first iterations are due at once and late, so a late start shows as
    /// latency. Now when nil. `keepingFanOuts`: the result lists every measured fan-out's
    /// completion (``RunResult/fanOuts``), which merging segments needs and other runs need not keep.
    public func run(source: @escaping LoadSource, startingAt start: C.Instant? = nil,
                    keepingFanOuts: Bool = false) async throws(LoadPlanError) -> RunResult {
        try plan.validate()
        let environment = RunEnvironment.current()
        let state = RunState(plan: plan, source: source, clock: clock, start: start ?? clock.now, keepsFanOuts: keepingFanOuts)
        let workerCount: Int
        switch plan.model {
        case .open: workerCount = plan.maxInFlight
        case .closed(let concurrency, _): workerCount = concurrency
        }
        let target = self.target
        let workers = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<workerCount {
                    group.addTask { await state.work(worker: index, target: target) }
                }
            }
        }
        let deadline = (plan.effectiveTimeLimit + plan.drainTimeout).clampedNanoseconds
        let finished = await withTaskCancellationHandler {
            await Self.wait(for: workers, until: deadline, in: state)
        } onCancel: {
            workers.cancel()
        }
        if !finished {
            // Sends still running past the bound: cancel them and give well-behaved targets a
            // moment to return, so their outcomes still count.
            workers.cancel()
            _ = await Self.wait(for: workers, until: state.now() &+ 500_000_000, in: state)
        }
        return state.result(environment: environment, end: state.now(), timedOut: !finished)
    }

    /// Waits until `task` finishes (true) or `deadline` (nanoseconds from the run's start)
    /// passes (false), whichever comes first.
    private static func wait(for task: Task<Void, Never>, until deadline: UInt64, in state: RunState<C>) async -> Bool {
        let signal = FirstSignal()
        let finisher = Task {
            await task.value
            signal.fire(true)
        }
        let timer = Task {
            try? await state.sleep(until: deadline)
            signal.fire(false)
        }
        let result = await signal.wait()
        timer.cancel()
        if !result { finisher.cancel() }
        return result
    }
}

extension LoadRunner where C == MonotonicClock {
    /// A run on the monotonic clock.
    public init(plan: LoadPlan, target: any PushTarget) {
        self.init(plan: plan, target: target, clock: MonotonicClock())
    }
}

/// A one-shot Bool that the first of several tasks sets and one waiter reads.
private final class FirstSignal: Sendable {
    private struct State {
        var value: Bool?
        var waiter: CheckedContinuation<Bool, Never>?
    }
    private let state = Mutex(State())

    func fire(_ value: Bool) {
        let waiter: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            let ready: Bool? = state.withLock { state in
                if let value = state.value { return value }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

// MARK: - Shared run state

/// One iteration a worker has taken: what to send, when it was due, and which it is.
struct Job: Sendable {
    var item: LoadItem
    /// Nanoseconds from the run's start.
    var intended: UInt64
    var measured: Bool
    var iteration: Int
}

/// Where the next iteration comes from. Guarded by `RunState.cursor`.
struct Cursor {
    var nextIteration = 0
    var exhausted = false
    /// The source returned nil: iterations not reached were never meant to run.
    var sourceEnded = false
    /// Closed model: measured iterations started so far.
    var measuredStarted = 0
    /// Measured iterations started (both models).
    var iterations = 0
    var warmUpIterations = 0
    var droppedIterations = 0
    var fanOuts: [Int: FanOutProgress] = [:]
    var ringAll = HDRHistogram()
    var fanOutsCompleted = 0
    var fanOutsFullyDelivered = 0
    /// Measured fan-outs that ended, in the order they ended.
    var completions: [FanOutCompletion] = []
    /// Measured pushes by the second they were due in, after warm-up.
    var offered = PerSecondSeries()
}

struct FanOutProgress {
    var intended: UInt64
    var total: Int
    var remaining: Int
    var delivered = 0
    var lastDelivered: UInt64 = 0
    var measured: Bool
    var late = false

    func completion(iteration: Int, complete: Bool) -> FanOutCompletion {
        FanOutCompletion(iteration: iteration, pushes: total, delivered: delivered,
                         ringAll: delivered > 0 ? lastDelivered &- Swift.min(intended, lastDelivered) : nil,
                         late: late, complete: complete)
    }
}

/// Per-shard measurements; merged at the end.
struct ShardStats {
    var corrected = HDRHistogram()
    var uncorrected = HDRHistogram()
    /// Actual minus intended send time: the driver's own lateness (scheduling, full worker pool).
    var sendLag = HDRHistogram()
    var outcomes: [OutcomeTally: Int] = [:]
    var completed = 0
    var delivered = 0
    var failed = 0
    var tokensRemoved = 0
    var lateIterations = 0
    /// Measured completions per second since the end of warm-up.
    var completedPerSecond: [Int] = []
    var deliveredPerSecond: [Int] = []
    /// Served latency second by second (offered is the cursor's).
    var perSecond = PerSecondSeries()
    /// Nanoseconds from the start of the last measured completion.
    var lastCompletion: UInt64 = 0
}

/// One lock stripe of measurements; workers share a stripe by index.
final class Shard: Sendable {
    let stats = Mutex(ShardStats())
}

final class RunState<C: Clock>: Sendable where C.Duration == Duration {
    let plan: LoadPlan
    let source: LoadSource
    let clock: C
    /// The run's start; every other time is an offset from it in nanoseconds.
    let start: C.Instant
    let cursor = Mutex(Cursor())
    let shards: [Shard]
    /// Measured and warm-up pushes handed to the target, counted at the send so pushes still in
    /// flight when the run returns are known.
    let sentMeasured = Atomic<Int>(0)
    let sentWarmUp = Atomic<Int>(0)
    /// Measured pushes taken from the cursor whose worker was cancelled before sending them.
    let cancelledBeforeSend = Atomic<Int>(0)
    let warmUpEnd: UInt64
    let timeLimit: UInt64
    let lateAfter: UInt64
    let dropAfter: UInt64?
    /// Open model: when each iteration is due, the warm-up first.
    let schedule: ArrivalSchedule?
    /// Open model: iterations due before this offset are in the plan...
    let plannedEnd: UInt64
    /// ...and those due before this one (the plan cut at the time limit) are started.
    let scheduleEnd: UInt64
    let keepsFanOuts: Bool

    init(plan: LoadPlan, source: @escaping LoadSource, clock: C, start: C.Instant, keepsFanOuts: Bool = false) {
        self.plan = plan
        self.keepsFanOuts = keepsFanOuts
        self.source = source
        self.clock = clock
        self.start = start
        warmUpEnd = plan.warmUp.clampedNanoseconds
        timeLimit = plan.effectiveTimeLimit.clampedNanoseconds
        lateAfter = plan.lateAfter.clampedNanoseconds
        dropAfter = plan.dropAfter.map(\.clampedNanoseconds)
        switch plan.model {
        case .open(let stages):
            schedule = stages.preceded(by: plan.warmUp)
            plannedEnd = warmUpEnd &+ stages.duration.clampedNanoseconds
            scheduleEnd = Swift.min(plannedEnd, timeLimit)
        case .closed:
            schedule = nil
            plannedEnd = timeLimit
            scheduleEnd = timeLimit
        }
        let shardCount = 8
        shards = (0..<shardCount).map { _ in Shard() }
    }

    /// Nanoseconds since the start.
    @inline(__always)
    func now() -> UInt64 {
        (start.duration(to: clock.now)).clampedNanoseconds
    }

    /// Sleeps until `offset` nanoseconds after the start.
    func sleep(until offset: UInt64) async throws {
        try await clock.sleep(until: start.advanced(by: .nanoseconds(Int64(clamping: offset))), tolerance: .zero)
    }

    /// Open model: how many iterations are due strictly before `offset`.
    func iterationsDue(before offset: UInt64) -> Int {
        schedule?.iterationsDue(before: offset) ?? 0
    }

    func work(worker: Int, target: any PushTarget) async {
        let shard = shards[worker % shards.count]
        while !Task.isCancelled {
            guard let job = next(at: now()) else { return }
            let early = now()
            if job.intended > early {
                do {
                    try await sleep(until: job.intended)
                } catch {
                    // Cancelled while waiting: the pushes were never sent.
                    if job.measured { cancelledBeforeSend.add(job.item.pushCount, ordering: .relaxed) }
                    return
                }
            }
            let sentAt = now()
            if job.measured {
                sentMeasured.add(job.item.pushCount, ordering: .relaxed)
            } else {
                sentWarmUp.add(job.item.pushCount, ordering: .relaxed)
            }
            switch job.item {
            case .push(let push):
                let outcome = await target.send(push)
                record(job: job, outcome: outcome, sentAt: sentAt, doneAt: now(), decidesLateness: true, in: shard)
            case .fanOut(let pushes):
                let late = sentAt > job.intended &+ lateAfter
                await target.send(contentsOf: pushes) { [self] index, outcome in
                    let doneAt = now()
                    record(job: job, outcome: outcome, sentAt: sentAt, doneAt: doneAt, decidesLateness: index == 0, in: shard)
                    finishFanOutPush(iteration: job.iteration, outcome: outcome, doneAt: doneAt, late: late)
                }
            }
        }
    }

    /// Takes the next iteration due, or nil when the run has no more to send.
    func next(at now: UInt64) -> Job? {
        cursor.withLock { cursor -> Job? in
            while true {
                if cursor.exhausted || now >= timeLimit { return nil }

                let iteration = cursor.nextIteration
                let intended: UInt64
                let measured: Bool
                switch plan.model {
                case .open:
                    guard let due = schedule?.dueTime(of: iteration), due < scheduleEnd else {
                        cursor.exhausted = true
                        return nil
                    }
                    intended = due
                    measured = intended >= warmUpEnd
                    if let dropAfter, now > intended &+ dropAfter {
                        // k6's dropped iteration: no worker was free in time; it is never sent.
                        cursor.nextIteration += 1
                        if measured { cursor.droppedIterations += 1 }
                        continue
                    }
                case .closed(_, let count):
                    intended = now
                    measured = now >= warmUpEnd
                    if measured && cursor.measuredStarted >= count {
                        cursor.exhausted = true
                        return nil
                    }
                }
                cursor.nextIteration += 1
                guard let item = source(iteration) else {
                    cursor.exhausted = true
                    cursor.sourceEnded = true
                    return nil
                }
                if measured {
                    cursor.measuredStarted += 1
                    cursor.iterations += 1
                    cursor.offered.offer(item.pushCount, atSecond: Int((intended &- Swift.min(warmUpEnd, intended)) / 1_000_000_000))
                } else {
                    cursor.warmUpIterations += 1
                }
                if case .fanOut(let pushes) = item {
                    guard !pushes.isEmpty else { continue }
                    cursor.fanOuts[iteration] = FanOutProgress(intended: intended, total: pushes.count,
                                                               remaining: pushes.count, measured: measured)
                }
                // A fan-out shares the source's storage: no copy of a 10,000-member ring.
                return Job(item: item, intended: intended, measured: measured, iteration: iteration)
            }
        }
    }

    /// Records one push's end. `decidesLateness`: the iteration's first push, whose send time
    /// says whether the iteration was late.
    func record(job: Job, outcome: PushOutcome, sentAt: UInt64, doneAt: UInt64, decidesLateness: Bool, in shard: Shard) {
        let measureFrom = warmUpEnd
        guard job.measured else { return }
        shard.stats.withLock { stats in
            stats.corrected.record(doneAt &- Swift.min(job.intended, doneAt))
            stats.uncorrected.record(doneAt &- Swift.min(sentAt, doneAt))
            stats.sendLag.record(sentAt &- Swift.min(job.intended, sentAt))
            if decidesLateness, sentAt > job.intended &+ lateAfter { stats.lateIterations += 1 }
            stats.outcomes[OutcomeTally(outcome), default: 0] += 1
            stats.completed += 1
            let second = Int((doneAt &- Swift.min(measureFrom, doneAt)) / 1_000_000_000)
            if stats.completedPerSecond.count <= second {
                let grown = second + 1
                stats.completedPerSecond.append(contentsOf: repeatElement(0, count: grown - stats.completedPerSecond.count))
                stats.deliveredPerSecond.append(contentsOf: repeatElement(0, count: grown - stats.deliveredPerSecond.count))
            }
            stats.completedPerSecond[second] += 1
            stats.perSecond.complete(latency: doneAt &- Swift.min(job.intended, doneAt), atSecond: second)
            switch outcome {
            case .delivered:
                stats.delivered += 1
                stats.deliveredPerSecond[second] += 1
            case .tokenRemoved: stats.tokensRemoved += 1
            case .failed, .dryRun: stats.failed += 1
            }
            if doneAt > stats.lastCompletion { stats.lastCompletion = doneAt }
        }
    }

    func finishFanOutPush(iteration: Int, outcome: PushOutcome, doneAt: UInt64, late: Bool) {
        cursor.withLock { cursor in
            guard var progress = cursor.fanOuts[iteration] else { return }
            progress.remaining -= 1
            progress.late = late
            if case .delivered = outcome {
                progress.delivered += 1
                progress.lastDelivered = Swift.max(progress.lastDelivered, doneAt)
            }
            guard progress.remaining == 0 else {
                cursor.fanOuts[iteration] = progress
                return
            }
            cursor.fanOuts[iteration] = nil
            guard progress.measured else { return }
            cursor.fanOutsCompleted += 1
            if progress.delivered == progress.total { cursor.fanOutsFullyDelivered += 1 }
            let completion = progress.completion(iteration: iteration, complete: true)
            if let ringAll = completion.ringAll { cursor.ringAll.record(ringAll) }
            if keepsFanOuts { cursor.completions.append(completion) }
        }
    }

    /// `end`: nanoseconds from the start.
    func result(environment: RunEnvironment, end: UInt64, timedOut: Bool) -> RunResult {
        var merged = ShardStats()
        for shard in shards {
            shard.stats.withLock { stats in
                merged.corrected.merge(stats.corrected)
                merged.uncorrected.merge(stats.uncorrected)
                merged.sendLag.merge(stats.sendLag)
                for (kind, count) in stats.outcomes { merged.outcomes[kind, default: 0] += count }
                merged.completed += stats.completed
                merged.delivered += stats.delivered
                merged.failed += stats.failed
                merged.tokensRemoved += stats.tokensRemoved
                merged.lateIterations += stats.lateIterations
                merged.lastCompletion = Swift.max(merged.lastCompletion, stats.lastCompletion)
                addSeries(stats.completedPerSecond, into: &merged.completedPerSecond)
                addSeries(stats.deliveredPerSecond, into: &merged.deliveredPerSecond)
                merged.perSecond.merge(stats.perSecond)
            }
        }
        let cursor = self.cursor.withLock { $0 }
        let elapsed = end
        let sent = sentMeasured.load(ordering: .relaxed)

        var counts = RunCounts()
        counts.iterations = cursor.iterations
        counts.warmUpIterations = cursor.warmUpIterations
        counts.lateIterations = merged.lateIterations
        counts.droppedIterations = cursor.droppedIterations
        if !cursor.sourceEnded {
            // Measured iterations the plan called for that never started: the time limit came first.
            switch plan.model {
            case .open:
                let due = iterationsDue(before: plannedEnd)
                let firstMeasured = iterationsDue(before: warmUpEnd)
                counts.droppedIterations += Swift.max(0, due - Swift.max(cursor.nextIteration, firstMeasured))
            case .closed(_, let count):
                counts.droppedIterations += Swift.max(0, count - cursor.measuredStarted)
            }
        }
        counts.unsentPushes = cancelledBeforeSend.load(ordering: .relaxed)
        counts.sent = sent
        counts.completed = merged.completed
        counts.delivered = merged.delivered
        counts.failed = merged.failed
        counts.tokensRemoved = merged.tokensRemoved
        counts.warmUpPushes = sentWarmUp.load(ordering: .relaxed)
        counts.abandoned = Swift.max(0, sent - merged.completed)
        counts.fanOuts = cursor.fanOutsCompleted
        counts.fanOutsFullyDelivered = cursor.fanOutsFullyDelivered
        counts.fanOutsIncomplete = cursor.fanOuts.values.filter(\.measured).count

        let measuredNanos = merged.lastCompletion > warmUpEnd ? merged.lastCompletion - warmUpEnd : 0
        let outcomes = merged.outcomes.map { OutcomeCount(kind: $0.key.name, reason: $0.key.reason, count: $0.value) }
            .sorted { ($0.kind, $0.reason) < ($1.kind, $1.reason) }

        let summary = RunSummary(
            plan: plan, environment: environment, counts: counts, outcomes: outcomes,
            elapsedSeconds: Double(elapsed) / 1e9, measuredSeconds: Double(measuredNanos) / 1e9,
            latency: merged.corrected, serviceTime: merged.uncorrected, sendLag: merged.sendLag,
            timeToRingAll: cursor.ringAll,
            completedPerSecond: merged.completedPerSecond, deliveredPerSecond: merged.deliveredPerSecond,
            timedOut: timedOut)
        var withSeries = summary
        var series = merged.perSecond
        series.merge(cursor.offered)
        withSeries.perSecond = series
        let unfinished = !keepsFanOuts ? [] : cursor.fanOuts.filter(\.value.measured).map { $0.value.completion(iteration: $0.key, complete: false) }
        return RunResult(summary: withSeries, latency: merged.corrected, serviceTime: merged.uncorrected,
                         sendLag: merged.sendLag, timeToRingAll: cursor.ringAll,
                         fanOuts: (cursor.completions + unfinished).sorted { $0.iteration < $1.iteration })
    }

}

/// Adds a per-second series into `total`, element by element, lengthening it as needed.
func addSeries(_ series: [Int], into total: inout [Int]) {
    if total.count < series.count { total.append(contentsOf: repeatElement(0, count: series.count - total.count)) }
    for (i, value) in series.enumerated() { total[i] += value }
}

/// What a run measured: the serialisable summary and the full histograms behind it.
public struct RunResult: Sendable {
    public var summary: RunSummary
    /// Latency from each push's intended send time (corrected for coordinated omission).
    public var latency: HDRHistogram
    /// Latency from each push's actual send time (what a closed-loop tool would report).
    public var serviceTime: HDRHistogram
    /// How late each push went out after its intended time.
    public var sendLag: HDRHistogram
    /// Per fan-out: first intended send to last delivered push.
    public var timeToRingAll: HDRHistogram
    /// Every measured fan-out, by iteration: what a merge of segments needs to judge a fan-out
    /// whose pushes went out from several machines (``SegmentMerge``).
    public var fanOuts: [FanOutCompletion] = []

    public init(summary: RunSummary, latency: HDRHistogram, serviceTime: HDRHistogram, sendLag: HDRHistogram,
                timeToRingAll: HDRHistogram, fanOuts: [FanOutCompletion] = []) {
        self.summary = summary
        self.latency = latency
        self.serviceTime = serviceTime
        self.sendLag = sendLag
        self.timeToRingAll = timeToRingAll
        self.fanOuts = fanOuts
    }
}

/// How one measured fan-out ended on this machine.
public struct FanOutCompletion: Sendable, Equatable {
    public var iteration: Int
    public var pushes: Int
    public var delivered: Int
    /// Nanoseconds from the iteration's intended time to its last delivered push; nil when none was.
    public var ringAll: UInt64?
    /// Its pushes went out more than `lateAfter` after the intended time.
    public var late: Bool
    /// Every push has an outcome (false: still waiting when the run returned).
    public var complete: Bool

    public init(iteration: Int, pushes: Int, delivered: Int, ringAll: UInt64?, late: Bool, complete: Bool) {
        self.iteration = iteration
        self.pushes = pushes
        self.delivered = delivered
        self.ringAll = ringAll
        self.late = late
        self.complete = complete
    }
}
