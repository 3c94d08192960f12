/// When the open model's iterations are due: a rate that ramps linearly from one target to
/// the next, stage by stage (k6's `ramping-arrival-rate`), a constant rate being one stage
/// that starts and ends at the same target.
///
/// Iteration `i` is due at the first instant the schedule's integral, the number of
/// iterations it calls for so far, reaches `i`: iteration 0 at the start, and at a constant
/// rate `r`, iteration `i` at `i / r` seconds. The times depend only on the stages, never on
/// how the run is going, so a stalled target shows up as latency (load-testing.md,
/// "Coordinated omission") and every instance computing the same schedule fires the same
/// iterations at the same times.
import Reports

public struct ArrivalSchedule: Sendable, Equatable {
    /// A stretch of the schedule: the rate moves linearly to `target` over `duration`.
    public struct Stage: Sendable, Equatable {
        public var duration: Duration
        /// Iterations per second at the stage's end.
        public var target: Double

        public init(duration: Duration, target: Double) {
            self.duration = duration
            self.target = target
        }
    }

    /// Iterations per second at the start (k6's `startRate`).
    public let startRate: Double
    public let stages: [Stage]
    /// The stages as the integral's pieces, computed once: a due time is asked for each iteration.
    private let compiled: Compiled

    /// The most stages a schedule may have (k6 has no limit; a longer list is a typing error).
    public static let maxStages = 1_000

    public init(startRate: Double, stages: [Stage]) {
        self.startRate = startRate
        self.stages = stages
        compiled = Compiled(startRate: startRate, stages: stages)
    }

    /// `rate` iterations per second for `duration`.
    public static func constant(_ rate: Double, for duration: Duration) -> ArrivalSchedule {
        ArrivalSchedule(startRate: rate, stages: [Stage(duration: duration, target: rate)])
    }

    /// True when the rate never changes: the schedule `--rate` and `--duration` describe.
    public var isConstant: Bool { stages.allSatisfy { $0.target == startRate } }

    public var duration: Duration { stages.reduce(.zero) { $0 + $1.duration } }

    public var durationSeconds: Double { duration.inSeconds }

    /// The highest rate the schedule reaches.
    public var peakRate: Double { stages.reduce(startRate) { Swift.max($0, $1.target) } }

    /// Iterations the whole schedule calls for: those due before its end.
    public var iterationCount: Int { compiled.count }

    /// The schedule with `lead` at the start rate before its stages (a run's warm-up).
    public func preceded(by lead: Duration) -> ArrivalSchedule {
        lead > .zero ? ArrivalSchedule(startRate: startRate, stages: [Stage(duration: lead, target: startRate)] + stages) : self
    }

    /// Checks every rate is a finite non-negative number, every stage has a length, and the
    /// schedule calls for at least one iteration and fewer than 10^12.
    public func validate() throws(LoadPlanError) {
        guard !stages.isEmpty else { throw LoadPlanError("open model: no stages") }
        guard stages.count <= Self.maxStages else { throw LoadPlanError("open model: more than \(Self.maxStages) stages") }
        guard startRate.isFinite, startRate >= 0 else { throw LoadPlanError("open model: start rate must be a number of at least 0, got \(startRate)") }
        for (index, stage) in stages.enumerated() {
            guard stage.target.isFinite, stage.target >= 0 else {
                throw LoadPlanError("open model: stage \(index + 1)'s rate must be a number of at least 0, got \(stage.target)")
            }
            guard stage.duration > .zero else { throw LoadPlanError("open model: stage \(index + 1)'s duration must be positive") }
        }
        let total = compiled.total
        guard total > 0 else { throw LoadPlanError("open model: the rate is 0 throughout, no iteration would start") }
        // Every iteration is scheduled by index; keep the index in range.
        guard total < 1e12 else { throw LoadPlanError("open model: rate x duration is too large") }
    }

    /// When iteration `index` is due, in nanoseconds from the schedule's start; nil when the
    /// schedule ends first.
    public func dueTime(of index: Int) -> UInt64? {
        compiled.dueTime(of: Double(index))
    }

    /// How many iterations are due strictly before `offset` nanoseconds (all of them, past the end).
    public func iterationsDue(before offset: UInt64) -> Int {
        guard offset < compiled.end else { return compiled.count }
        // The integral up to `offset`, then corrected for rounding in both directions.
        var count = Int(Swift.max(0, compiled.integral(at: Double(offset))).rounded(.up))
        while count > 0, let due = compiled.dueTime(of: Double(count - 1)), due >= offset { count -= 1 }
        while let due = compiled.dueTime(of: Double(count)), due < offset { count += 1 }
        return count
    }

    /// "100/s for 30s" or "ramping 0/s, 100/s over 30s, 1000/s over 2m, 0/s over 30s".
    public var description: String {
        if isConstant { return "\(Format.number(startRate))/s for \(Format.seconds(duration.inSeconds))" }
        return "ramping \(Format.number(startRate))/s, "
            + stages.map { "\(Format.number($0.target))/s over \(Format.seconds($0.duration.inSeconds))" }.joined(separator: ", ")
    }

    // MARK: Parsing

    /// Reads k6's stage list, `30s:100,2m:1000,30s:0`: each stage a duration (`500ms`, `30s`,
    /// `2m`, `1h`, `1m30s`, or bare seconds) and the rate per second it ramps to.
    public static func parse(stages text: String, startRate: Double) throws(LoadPlanError) -> ArrivalSchedule {
        var stages: [Stage] = []
        for (index, part) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 else {
                throw LoadPlanError("stage \(index + 1) '\(part)': write DURATION:RATE, e.g. 30s:100")
            }
            guard let duration = parseDuration(String(fields[0])) else {
                throw LoadPlanError("stage \(index + 1) '\(part)': '\(fields[0])' is not a duration (500ms, 30s, 2m, 1h, 1m30s)")
            }
            guard let target = Double(fields[1]), target.isFinite, target >= 0 else {
                throw LoadPlanError("stage \(index + 1) '\(part)': '\(fields[1])' is not a rate (a number of at least 0)")
            }
            stages.append(Stage(duration: duration, target: target))
        }
        let schedule = ArrivalSchedule(startRate: startRate, stages: stages)
        try schedule.validate()
        return schedule
    }

    /// `1m30s`, `500ms`, `2h`, or a bare number of seconds; nil for anything else.
    public static func parseDuration(_ text: String) -> Duration? {
        if let seconds = Double(text) { return seconds.isFinite && seconds >= 0 ? .nanoseconds(Int64(seconds * 1e9)) : nil }
        var total = 0.0
        var rest = Substring(text)
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isNumber || $0 == "." }
            guard !digits.isEmpty, let value = Double(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            switch unit {
            case "ms": total += value / 1000
            case "s": total += value
            case "m": total += value * 60
            case "h": total += value * 3600
            default: return nil
            }
        }
        guard total.isFinite, total <= 864_000 else { return nil }
        return .nanoseconds(Int64(total * 1e9))
    }

    // MARK: The integral and its inverse

    /// The stages as boundaries: each stage's start time (ns), start rate (per ns) and the
    /// iterations called for before it.
    struct Compiled: Sendable, Equatable {
        struct Boundary: Sendable, Equatable {
            var start: Double
            var rate: Double
            var before: Double
        }
        /// One per stage, then one for the end (its `rate` is the last target).
        var boundaries: [Boundary] = []
        /// The end, in nanoseconds: an iteration due then or later is not in the schedule.
        var end: UInt64 = 0
        /// Iterations due before `end`.
        var count = 0

        init(startRate: Double, stages: [Stage]) {
            var start = 0.0, rate = startRate / 1e9, before = 0.0
            for stage in stages {
                boundaries.append(Boundary(start: start, rate: rate, before: before))
                let length = stage.duration.inSeconds * 1e9
                let target = stage.target / 1e9
                before += (rate + target) / 2 * length
                start += length
                rate = target
            }
            boundaries.append(Boundary(start: start, rate: rate, before: before))
            end = UInt64(start.rounded())
            // The integral says how many, to within rounding; the due times decide. (A schedule
            // `validate` refuses, NaN or 10^12 iterations and more, counts none.)
            guard before.isFinite, before > 0, before < 1e12, start.isFinite else { return }
            count = Int(before.rounded(.up))
            while count > 0, dueTime(of: Double(count - 1)) == nil { count -= 1 }
            while dueTime(of: Double(count)) != nil { count += 1 }
        }

        var total: Double { boundaries.last!.before }

        /// Iterations called for in [0, t).
        func integral(at t: Double) -> Double {
            guard let stage = boundaries.lastIndex(where: { $0.start <= t }), stage + 1 < boundaries.count else { return total }
            let from = boundaries[stage], to = boundaries[stage + 1]
            let x = t - from.start
            let slope = (to.rate - from.rate) / (to.start - from.start)
            return from.before + from.rate * x + slope * x * x / 2
        }

        /// The first time the integral reaches `count`, rounded to the nanosecond.
        func dueTime(of count: Double) -> UInt64? {
            guard count < total else { return nil }
            // The last stage that begins with fewer iterations called for than `count`
            // (iteration 0 is due at the start).
            var low = 0, high = boundaries.count - 2
            while low < high {
                let middle = (low + high + 1) / 2
                if boundaries[middle].before <= count { low = middle } else { high = middle - 1 }
            }
            // A stage whose rate is 0 throughout calls for nothing and has the same `before` as
            // the next: the search lands past it, where the rate rises again.
            let from = boundaries[low], to = boundaries[low + 1]
            let needed = count - from.before
            let slope = (to.rate - from.rate) / (to.start - from.start)
            // Solves from.rate·x + slope·x²/2 = needed, in the form that stays exact when the
            // slope is 0 or tiny: x = 2·needed / (rate + sqrt(rate² + 2·slope·needed)).
            let root = (from.rate * from.rate + 2 * slope * needed).squareRoot()
            let denominator = from.rate + root
            let x = needed == 0 ? 0 : (denominator > 0 ? 2 * needed / denominator : to.start - from.start)
            let due = UInt64((from.start + Swift.min(x, to.start - from.start)).rounded())
            return due < end ? due : nil
        }
    }
}
