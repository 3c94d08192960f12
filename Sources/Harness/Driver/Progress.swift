// Progress while a run works, as k6 and h2load show it on a terminal: one line, rewritten in
// place. The counters are fed by whatever runs (the load runner's target, a scenario's
// gateway observer); `ProgressLine` turns their snapshots into the line and decides when a
// new one is due. Neither touches a terminal: the CLI writes the line, and only to a TTY.
import JSON
import Metrics
import Reports
import Synchronization

/// What a run has done so far, updated from any thread.
public final class ProgressCounters: Sendable {
    /// Events (scenario) or iterations (built-in load) handed to the sender.
    public let played = Atomic<Int>(0)
    /// Pushes that reached the gateway (or whose outcome came back).
    public let pushes = Atomic<Int>(0)
    /// The whole run's latencies, and those since the last `takeInterval` (`--metrics-out`).
    private let latency = Mutex((run: HDRHistogram(), interval: HDRHistogram()))
    /// Findings so far, for `--abort-on-fail` (scenario runs count them; they stay 0 otherwise).
    public let unexpected = Atomic<Int>(0)
    public let deadTokenPushes = Atomic<Int>(0)
    public let retriesTooSoon = Atomic<Int>(0)
    /// How many events or iterations the run has in all; nil when not known in advance.
    public let total: Int?
    /// Open model: how long the run is planned to take, in seconds.
    public let plannedSeconds: Double?

    /// False when the run times no push (`run` plays events back to back and judges what
    /// arrived): its line then has no p99 at all rather than a dash throughout.
    public let measuresLatency: Bool

    public init(total: Int?, plannedSeconds: Double?, measuresLatency: Bool = true) {
        self.total = total
        self.plannedSeconds = plannedSeconds
        self.measuresLatency = measuresLatency
    }

    /// One push arrived, `latencyNanoseconds` after its intended time (nil: not measured).
    public func pushArrived(latencyNanoseconds: UInt64?) {
        pushes.add(1, ordering: .relaxed)
        if let latencyNanoseconds {
            latency.withLock { histograms in
                histograms.run.record(latencyNanoseconds)
                histograms.interval.record(latencyNanoseconds)
            }
        }
    }

    /// The run's figure for `metric` so far, where the counters keep it: the longest latency
    /// recorded and the scenario findings; nil for the rest.
    public func liveValue(of metric: ThresholdMetric) -> Double? {
        switch metric {
        case .maxLatency:
            let (count, max) = latency.withLock { ($0.run.totalCount, $0.run.max) }
            return count > 0 ? Double(max) / 1e6 : nil
        case .unexpected: return Double(unexpected.load(ordering: .relaxed))
        case .deadTokenPushes: return Double(deadTokenPushes.load(ordering: .relaxed))
        case .retriesTooSoon: return Double(retriesTooSoon.load(ordering: .relaxed))
        default: return nil
        }
    }

    /// The latencies recorded since the last call, and a fresh start for the next interval.
    public func takeInterval() -> LatencySummary {
        latency.withLock { histograms in
            defer { histograms.interval = HDRHistogram() }
            return histograms.interval.summary
        }
    }

    public func snapshot(elapsedNanoseconds: UInt64) -> ProgressSnapshot {
        let (count, p99) = latency.withLock { ($0.run.totalCount, $0.run.value(atPercentile: 99)) }
        var snapshot = ProgressSnapshot(played: played.load(ordering: .relaxed), total: total, pushes: pushes.load(ordering: .relaxed),
                                        p99Nanoseconds: count > 0 ? p99 : nil, elapsedNanoseconds: elapsedNanoseconds,
                                        plannedSeconds: plannedSeconds)
        snapshot.measuresLatency = measuresLatency
        return snapshot
    }
}

/// The counters at one moment.
public struct ProgressSnapshot: Sendable, Equatable {
    public var played: Int
    public var total: Int?
    public var pushes: Int
    public var p99Nanoseconds: UInt64?
    public var elapsedNanoseconds: UInt64
    public var plannedSeconds: Double?
    /// False: the line shows no p99 (the run times nothing).
    public var measuresLatency = true

    public init(played: Int, total: Int?, pushes: Int, p99Nanoseconds: UInt64?, elapsedNanoseconds: UInt64, plannedSeconds: Double?) {
        self.played = played
        self.total = total
        self.pushes = pushes
        self.p99Nanoseconds = p99Nanoseconds
        self.elapsedNanoseconds = elapsedNanoseconds
        self.plannedSeconds = plannedSeconds
    }
}

/// Turns snapshots into the progress line, at most one every `interval`:
/// `events 40/100  pushes 39,960  19,980/s  p99 12.4 ms  elapsed 0:02  remaining 0:03`.
/// The current rate is taken over the time since the previous line.
public struct ProgressLine: Sendable {
    /// k6 redraws about four times a second; more is flicker.
    public static let defaultIntervalNanoseconds: UInt64 = 250_000_000

    public let intervalNanoseconds: UInt64
    /// "events" for scenarios, "calls" or "messages" for the built-in load.
    public let unit: String
    private var last: ProgressSnapshot?

    public init(unit: String, intervalNanoseconds: UInt64 = ProgressLine.defaultIntervalNanoseconds) {
        self.unit = unit
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// The line for `snapshot`, or nil when the previous one is younger than the interval.
    public mutating func line(for snapshot: ProgressSnapshot) -> String? {
        var rate: Double?
        if let last {
            let span = snapshot.elapsedNanoseconds &- last.elapsedNanoseconds
            guard span >= intervalNanoseconds else { return nil }
            rate = Double(snapshot.pushes - last.pushes) / (Double(span) / 1e9)
        }
        last = snapshot
        return Self.format(snapshot, unit: unit, rate: rate)
    }

    static func format(_ s: ProgressSnapshot, unit: String, rate: Double?) -> String {
        var parts: [String] = []
        parts.append("\(unit) \(Format.grouped(s.played))" + (s.total.map { "/\(Format.grouped($0))" } ?? ""))
        parts.append("pushes \(Format.grouped(s.pushes))")
        parts.append(rate.map { "\(Format.grouped(Int($0.rounded())))/s" } ?? "-/s")
        if s.measuresLatency { parts.append("p99 " + (s.p99Nanoseconds.map { Format.milliseconds($0) + " ms" } ?? "-")) }
        let elapsed = Double(s.elapsedNanoseconds) / 1e9
        parts.append("elapsed " + clock(elapsed))
        if isDraining(s, elapsed: elapsed) {
            // Everything handed over: what is left is the pushes still out, which no clock predicts.
            parts.append("draining")
        } else if let remaining = remainingSeconds(s, elapsed: elapsed) {
            parts.append("remaining " + clock(remaining))
        }
        return parts.joined(separator: "  ")
    }

    /// Every event or iteration was handed over (or the plan's time is up): the run waits for
    /// the pushes still out, which "remaining 0:00" would hide.
    static func isDraining(_ s: ProgressSnapshot, elapsed: Double) -> Bool {
        if let total = s.total, total > 0, s.played >= total { return true }
        if let planned = s.plannedSeconds, elapsed >= planned { return true }
        return false
    }

    /// The plan's end when it has one (open model), else the played share of a known total.
    static func remainingSeconds(_ s: ProgressSnapshot, elapsed: Double) -> Double? {
        if let planned = s.plannedSeconds { return max(0, planned - elapsed) }
        guard let total = s.total, s.played > 0 else { return nil }
        return max(0, elapsed * Double(total - s.played) / Double(s.played))
    }

    /// "1:05", "12:00:03".
    static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        let (h, m, s) = (whole / 3600, whole / 60 % 60, whole % 60)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return h > 0 ? "\(h):\(two(m)):\(two(s))" : "\(m):\(two(s))"
    }
}

/// One line of `--metrics-out`: the run's figures at one moment, and over the interval since
/// the previous line (k6's `--out json`, one object a second), so a dashboard or a script can
/// follow a long run. Fields: `t` (seconds since the start), `played` and `total` (events or
/// iterations handed over, of how many), `pushes` (so far), `pushes_per_s` (over the
/// interval), `p50_ms`, `p99_ms`, `max_ms` (of the pushes completed in the interval; absent when
/// none), `final` (the last line, written when the run ends).
public struct MetricsLine: Sendable {
    private var previousPushes = 0
    private var previousNanoseconds: UInt64 = 0

    public init() {}

    public mutating func line(for snapshot: ProgressSnapshot, interval: LatencySummary, final: Bool = false) -> [UInt8] {
        let seconds = Double(snapshot.elapsedNanoseconds &- previousNanoseconds) / 1e9
        let rate = seconds > 0 ? Double(snapshot.pushes - previousPushes) / seconds : 0
        previousPushes = snapshot.pushes
        previousNanoseconds = snapshot.elapsedNanoseconds
        var w = JSONWriter(capacity: 160)
        w.beginObject()
        w.key("t"); w.double((Double(snapshot.elapsedNanoseconds) / 1e6).rounded() / 1e3)
        w.key("played"); w.int(snapshot.played)
        if let total = snapshot.total { w.key("total"); w.int(total) }
        w.key("pushes"); w.int(snapshot.pushes)
        w.key("pushes_per_s"); w.double((rate * 10).rounded() / 10)
        if interval.count > 0 {
            func ms(_ ns: UInt64) -> Double { (Double(ns) / 1e3).rounded() / 1e3 }
            w.key("p50_ms"); w.double(ms(interval.p50))
            w.key("p99_ms"); w.double(ms(interval.p99))
            w.key("max_ms"); w.double(ms(interval.max))
        }
        if final { w.key("final"); w.bool(true) }
        w.endObject()
        var bytes = w.bytes
        bytes.append(0x0A)
        return bytes
    }
}
