// `SystemClock`'s monotonic time as a Swift `Clock`, for code that sleeps and measures
// through the standard protocol (the load runner, the scenario runner's waits), and a test
// clock that only moves when told to, so the same code runs in tests without wall time.
import Synchronization

/// CLOCK_MONOTONIC (`SystemClock.monotonicNanoseconds()`) as a `Clock`: instants are the
/// nanoseconds `SystemClock` reads, so they compare with times taken elsewhere in the process.
public struct MonotonicClock: Clock {
    public struct Instant: InstantProtocol, Hashable, Sendable {
        /// `SystemClock.monotonicNanoseconds()` at this instant.
        public var nanoseconds: UInt64

        public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

        public func advanced(by duration: Duration) -> Instant {
            Instant(nanoseconds: Self.offset(nanoseconds, by: duration))
        }

        public func duration(to other: Instant) -> Duration {
            other.nanoseconds >= nanoseconds ? .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds))
                : .zero - .nanoseconds(Int64(clamping: nanoseconds - other.nanoseconds))
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

        public static func + (lhs: Instant, rhs: Duration) -> Instant { lhs.advanced(by: rhs) }

        public static func - (lhs: Instant, rhs: Instant) -> Duration { rhs.duration(to: lhs) }

        /// `base` moved by `duration`, clamped to 0 ... UInt64.max.
        static func offset(_ base: UInt64, by duration: Duration) -> UInt64 {
            if duration >= .zero {
                let (sum, overflow) = base.addingReportingOverflow(duration.clampedNanoseconds)
                return overflow ? .max : sum
            }
            let step = (.zero - duration).clampedNanoseconds
            return base > step ? base - step : 0
        }
    }

    public init() {}

    public var now: Instant { Instant(nanoseconds: SystemClock.monotonicNanoseconds()) }

    /// Instants count nanoseconds; sleeps are timed by `ContinuousClock`, which the scheduler knows.
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        // Only the length comes from here: both clocks run at the same rate.
        let left = now.duration(to: deadline)
        guard left > .zero else { return }
        try await Task.sleep(for: left, tolerance: tolerance, clock: .continuous)
    }
}

/// A `Clock` that stands still until `advance(by:)` moves it: sleepers whose deadline has come
/// resume, in deadline order. Starts at instant 0 (nanoseconds). A cancelled sleeper throws
/// `CancellationError` at once.
public final class TestClock: Clock {
    public typealias Instant = MonotonicClock.Instant

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(nanoseconds: 0)
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are asleep on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // A task cancelled before it got here has had its `onCancel` run already, which
                // found no sleeper to remove: check under the lock, so a cancellation is seen
                // either here or by `onCancel`, never by neither.
                let resumeNow = state.withLock { state -> Bool? in
                    if Task.isCancelled { return nil }
                    if deadline <= state.now { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                switch resumeNow {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume()
                case false?: break
                }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index).continuation
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock to the earliest sleeper's deadline (if later than now) and resumes the
    /// sleepers due then; does nothing when nobody sleeps.
    public func advanceToNextDeadline() {
        let step = state.withLock { state -> Duration? in
            guard let earliest = state.sleepers.map(\.deadline).min() else { return nil }
            return earliest > state.now ? state.now.duration(to: earliest) : .zero
        }
        if let step { advance(by: step) }
    }

    /// Moves the clock forward and resumes every sleeper whose deadline is now due.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
