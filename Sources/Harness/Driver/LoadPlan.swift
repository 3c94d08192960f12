import PushModel

/// What the driver pushes through. The CLI adapts the reference sender (or any other) to it.
///
/// Outcomes are the sender's own `PushOutcome`; a run counts `.delivered` as delivered,
/// `.tokenRemoved` as token cleanup, and everything else (`.dryRun` too: nothing went on the
/// wire) as failed.
public protocol PushTarget: Sendable {
    /// Sends one push; returns when its outcome is known. Should return promptly once the
    /// calling task is cancelled: the runner cancels in-flight sends when a run hits its time limit.
    func send(_ push: PushRequest) async -> PushOutcome

    /// Sends a fan-out at once (what `send ring` measures) and calls `finished(index, outcome)`
    /// once per push as each ends, from any thread, all before returning. Once the calling task
    /// is cancelled it should return promptly, having reported the pushes still out as failed.
    /// The default sends every push through `send(_:)` concurrently.
    func send(contentsOf pushes: [PushRequest], finished: @escaping @Sendable (Int, PushOutcome) -> Void) async
}

extension PushTarget {
    public func send(contentsOf pushes: [PushRequest], finished: @escaping @Sendable (Int, PushOutcome) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for (index, push) in pushes.enumerated() {
                group.addTask { finished(index, await send(push)) }
            }
        }
    }
}

/// How a run tallies an outcome: "delivered", "failed" or "token_removed", and the provider's
/// reason (empty for delivered). A dry run counts as failed, reason "DryRun": not a delivery
/// the run may count.
public struct OutcomeTally: Hashable, Sendable {
    public var name: String
    public var reason: String

    public init(_ outcome: PushOutcome) {
        switch outcome {
        case .delivered: (name, reason) = ("delivered", "")
        case .failed(let reason, _): (name, self.reason) = ("failed", reason)
        case .tokenRemoved(let reason): (name, self.reason) = ("token_removed", reason)
        case .dryRun: (name, reason) = ("failed", "DryRun")
        }
    }
}

/// One iteration of a load run: a single push (a message storm is many of these) or a
/// fan-out (one group call ringing every member's devices), whose pushes are all due at the
/// iteration's intended start.
public enum LoadItem: Sendable {
    case push(PushRequest)
    case fanOut([PushRequest])

    var pushCount: Int {
        switch self {
        case .push: 1
        case .fanOut(let pushes): pushes.count
        }
    }
}

/// How iterations are started (load-testing.md, "Coordinated omission").
public enum LoadModel: Sendable, Equatable {
    /// Iterations start on `schedule` (a constant rate, wrk2's constant throughput, or k6's
    /// ramping stages), whether or not earlier ones have finished. Latency is measured from
    /// each push's intended send time, so a stalled target shows up in the percentiles. A
    /// warm-up runs at the schedule's start rate before its stages.
    case open(ArrivalSchedule)
    /// `concurrency` workers each run the next iteration as soon as their previous push
    /// finished, `count` measured iterations in all (h2load's model). Under-reports latency when
    /// the target stalls; intended and actual send times coincide.
    case closed(concurrency: Int, count: Int)

    /// `ratePerSecond`, evenly spaced, for `duration`.
    public static func open(ratePerSecond: Double, duration: Duration) -> LoadModel {
        .open(.constant(ratePerSecond, for: duration))
    }
}

/// What to run: a named scenario, a load model, a warm-up, and the bounds that end it.
public struct LoadPlan: Sendable, Equatable {
    /// Names the run in every report (a JUnit testsuite, a baseline file).
    public var scenario: String
    public var model: LoadModel
    /// Iterations due (open) or started (closed) before this much time has passed are sent but
    /// not measured: connection set-up and caches settle first.
    public var warmUp: Duration
    /// Most pushes in flight at once. Open model: the worker pool; when every worker is busy,
    /// due pushes wait and are counted late. Closed model: ignored (`concurrency` rules).
    public var maxInFlight: Int
    /// A push sent more than this after its intended time counts as a late iteration.
    public var lateAfter: Duration
    /// Open model: a push that could not start within this much of its intended time is
    /// dropped (not sent, counted), as k6 drops iterations; `nil` sends every push however late.
    public var dropAfter: Duration?
    /// The hard bound: no push starts after this much time from the start, and the run returns
    /// at most `drainTimeout` later, cancelling sends still in flight. Defaults: open model,
    /// warm-up + duration + `drainTimeout`; closed model, 10 minutes.
    public var timeLimit: Duration?
    /// How long the run waits for in-flight pushes once no new push may start.
    public var drainTimeout: Duration

    public init(scenario: String, model: LoadModel, warmUp: Duration = .zero, maxInFlight: Int = 256,
                lateAfter: Duration = .milliseconds(10), dropAfter: Duration? = nil,
                timeLimit: Duration? = nil, drainTimeout: Duration = .seconds(10)) {
        self.scenario = scenario
        self.model = model
        self.warmUp = warmUp
        self.maxInFlight = maxInFlight
        self.lateAfter = lateAfter
        self.dropAfter = dropAfter
        self.timeLimit = timeLimit
        self.drainTimeout = drainTimeout
    }

    /// Checks the plan describes a run that can end: positive rate, duration, concurrency, count.
    public func validate() throws(LoadPlanError) {
        if scenario.isEmpty { throw LoadPlanError("scenario name is empty") }
        switch model {
        case .open(let schedule):
            if schedule.isConstant {
                let rate = schedule.startRate
                guard rate.isFinite, rate > 0 else { throw LoadPlanError("open model: rate must be a positive number, got \(rate)") }
                guard schedule.duration > .zero else { throw LoadPlanError("open model: duration must be positive") }
            }
            guard maxInFlight > 0 else { throw LoadPlanError("maxInFlight must be at least 1, got \(maxInFlight)") }
            try schedule.preceded(by: warmUp).validate()
        case .closed(let concurrency, let count):
            guard concurrency > 0 else { throw LoadPlanError("closed model: concurrency must be at least 1, got \(concurrency)") }
            guard count >= 0 else { throw LoadPlanError("closed model: count must not be negative, got \(count)") }
        }
        if warmUp < .zero { throw LoadPlanError("warm-up must not be negative") }
        if let timeLimit, timeLimit <= .zero { throw LoadPlanError("time limit must be positive") }
        if drainTimeout < .zero { throw LoadPlanError("drain timeout must not be negative") }
    }

    /// The bound after which no push starts.
    var effectiveTimeLimit: Duration {
        if let timeLimit { return timeLimit }
        switch model {
        case .open(let schedule): return warmUp + schedule.duration + drainTimeout
        case .closed: return .seconds(600)
        }
    }

    /// True for rate-based runs, whose figures are noise below ~10 s (load-testing.md).
    public var isRateBased: Bool {
        if case .open = model { true } else { false }
    }

    /// "open 5000/s for 30s", "open ramping 0/s, 100/s over 30s, ..." or "closed 64 workers x 100000".
    public var modelDescription: String {
        switch model {
        case .open(let schedule):
            "open \(schedule.description)"
        case .closed(let concurrency, let count):
            "closed \(concurrency) workers x \(count)"
        }
    }

}

public struct LoadPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
