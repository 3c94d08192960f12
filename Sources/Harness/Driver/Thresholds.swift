import JSON
import Reports

// CI gating (load-testing.md, "CI gating"): thresholds on named metrics, evaluated at the end;
// a failed threshold names itself and says by how much it missed. The CLI exits 3 on failure.

/// A figure of a run that a threshold can bound.
public enum ThresholdMetric: String, Sendable, CaseIterable {
    /// Latency from intended send time (corrected), milliseconds.
    case p50 = "p50_ms"
    case p90 = "p90_ms"
    case p99 = "p99_ms"
    case p999 = "p99.9_ms"
    case maxLatency = "max_ms"
    /// Latency from actual send time (uncorrected), milliseconds.
    case serviceP99 = "service_p99_ms"
    /// Failed / completed pushes.
    case errorRate = "error_rate"
    /// Completed pushes per second.
    case throughput = "throughput"
    case deliveredThroughput = "delivered_throughput"
    /// The slowest fan-out: first intended send to last delivered push, milliseconds.
    case timeToRingAll = "time_to_ring_all_ms"
    /// Conformance violations the gateway counted.
    case violations = "violations"
    case tokensRemoved = "tokens_removed"
    case droppedIterations = "dropped"
    case lateIterations = "late"
    /// Scenario runs: expected pushes that never reached the gateway (`counts.abandoned`).
    case missing = "missing"
    /// Scenario runs: pushes that reached the gateway that no event called for.
    case unexpected = "unexpected"
    /// Scenario runs: retries of a 429 or 503 sent before its Retry-After had passed.
    case retriesTooSoon = "retry_too_soon"
    /// Scenario runs: pushes to a token already answered gone or bad.
    case deadTokenPushes = "dead_token_pushes"

    /// Other spellings accepted on input.
    static let aliases: [String: ThresholdMetric] = [
        "p999_ms": .p999, "p99_9_ms": .p999, "throughput_per_s": .throughput, "ring_all_ms": .timeToRingAll,
        "dropped_iterations": .droppedIterations, "late_iterations": .lateIterations,
        // The names issue reports and k6 users reach for.
        "abandoned": .missing, "retry_after_violations": .retriesTooSoon, "retries_too_soon": .retriesTooSoon,
    ]

    init?(name: String) {
        if let metric = ThresholdMetric(rawValue: name) ?? Self.aliases[name] { self = metric } else { return nil }
    }

    /// The metric's value in a run, or nil when the run did not measure it.
    public func value(in summary: RunSummary) -> Double? {
        func ms(_ ns: UInt64) -> Double? { summary.latency.count > 0 ? Double(ns) / 1e6 : nil }
        switch self {
        case .p50: return ms(summary.latency.p50)
        case .p90: return ms(summary.latency.p90)
        case .p99: return ms(summary.latency.p99)
        case .p999: return ms(summary.latency.p999)
        case .maxLatency: return ms(summary.latency.max)
        case .serviceP99: return summary.serviceTime.count > 0 ? Double(summary.serviceTime.p99) / 1e6 : nil
        case .errorRate: return summary.counts.completed > 0 ? summary.errorRate : nil
        case .throughput: return summary.throughput
        case .deliveredThroughput: return summary.deliveredThroughput
        case .timeToRingAll:
            return summary.timeToRingAll.count > 0 ? Double(summary.timeToRingAll.max) / 1e6 : nil
        case .violations: return summary.violations.map(Double.init)
        case .tokensRemoved: return Double(summary.counts.tokensRemoved)
        case .droppedIterations: return Double(summary.counts.droppedIterations)
        case .lateIterations: return Double(summary.counts.lateIterations)
        case .missing: return Double(summary.counts.abandoned)
        case .unexpected: return Double(summary.counts.unexpected)
        case .retriesTooSoon: return Double(summary.counts.retriesTooSoon)
        case .deadTokenPushes: return Double(summary.counts.deadTokenPushes)
        }
    }
}

public enum ThresholdOperator: String, Sendable, CaseIterable {
    case lessThan = "<"
    case lessOrEqual = "<="
    case greaterThan = ">"
    case greaterOrEqual = ">="
    case equal = "=="

    func holds(_ actual: Double, _ limit: Double) -> Bool {
        switch self {
        case .lessThan: actual < limit
        case .lessOrEqual: actual <= limit
        case .greaterThan: actual > limit
        case .greaterOrEqual: actual >= limit
        case .equal: actual == limit
        }
    }
}

/// One bound: `p99_ms<250`, `error_rate<0.01`, `throughput>=5000`.
public struct Threshold: Sendable, Equatable, CustomStringConvertible {
    public var metric: ThresholdMetric
    public var comparison: ThresholdOperator
    public var limit: Double

    public init(metric: ThresholdMetric, comparison: ThresholdOperator, limit: Double) {
        self.metric = metric
        self.comparison = comparison
        self.limit = limit
    }

    /// Parses `metric op limit`, spaces allowed around each part; `=` means `==`.
    public init(parsing text: String) throws(ThresholdParseError) {
        let trimmed = text.trimmingSpaces
        guard let operatorStart = trimmed.firstIndex(where: { "<>=!".contains($0) }) else {
            throw ThresholdParseError("'\(text)': no comparison (use <, <=, >, >= or ==)")
        }
        let name = String(trimmed[..<operatorStart]).trimmingSpaces
        let afterName = trimmed[operatorStart...]
        let operatorText = String(afterName.prefix { "<>=!".contains($0) })
        let limitText = String(afterName.dropFirst(operatorText.count)).trimmingSpaces
        guard !name.isEmpty else { throw ThresholdParseError("'\(text)': no metric name before '\(operatorText)'") }
        guard let metric = ThresholdMetric(name: name) else {
            let known = ThresholdMetric.allCases.map(\.rawValue).joined(separator: ", ")
            throw ThresholdParseError("'\(text)': unknown metric '\(name)' (known: \(known))")
        }
        guard let comparison = ThresholdOperator(rawValue: operatorText == "=" ? "==" : operatorText) else {
            throw ThresholdParseError("'\(text)': unknown comparison '\(operatorText)' (use <, <=, >, >= or ==)")
        }
        guard let limit = Double(limitText), limit.isFinite else {
            throw ThresholdParseError("'\(text)': limit '\(limitText)' is not a number")
        }
        self.init(metric: metric, comparison: comparison, limit: limit)
    }

    /// The canonical text form, e.g. `p99_ms<250`.
    public var description: String { "\(metric.rawValue)\(comparison.rawValue)\(Format.number(limit))" }

    /// Checks this bound against a run.
    public func evaluate(_ summary: RunSummary) -> ThresholdOutcome {
        guard let actual = metric.value(in: summary) else {
            return ThresholdOutcome(threshold: self, actual: nil, passed: false,
                                    message: "\(self) failed: \(metric.rawValue) was not measured in this run")
        }
        if comparison.holds(actual, limit) {
            return ThresholdOutcome(threshold: self, actual: actual, passed: true,
                                    message: "\(self) passed: \(metric.rawValue) = \(Format.significant(actual))")
        }
        let miss = abs(actual - limit)
        var message = "\(self) failed: \(metric.rawValue) = \(Format.significant(actual)), "
        switch comparison {
        case .lessThan, .lessOrEqual: message += "over the limit by \(Format.significant(miss))"
        case .greaterThan, .greaterOrEqual: message += "under the limit by \(Format.significant(miss))"
        case .equal: message += "off by \(Format.significant(miss))"
        }
        if limit != 0 { message += " (\(Format.percent(miss / abs(limit))))" }
        return ThresholdOutcome(threshold: self, actual: actual, passed: false, message: message)
    }
}

/// `--abort-on-fail` (k6's `abortOnFail`): the thresholds a run can fail for good before it
/// ends, checked while it goes. Unlike k6, which also aborts on a percentile that the rest of
/// the run might have brought back, only bounds that can never pass again are watched: an
/// upper bound (`<`, `<=`, `==`) on a figure that only grows (the longest latency, unexpected
/// pushes, pushes to dead tokens, retries too soon). So an aborted run fails exactly the
/// threshold it would have failed at the end, sooner.
public struct LiveThresholds: Sendable {
    public let watched: [Threshold]

    public static let growingMetrics: Set<ThresholdMetric> = [.maxLatency, .unexpected, .deadTokenPushes, .retriesTooSoon]

    public init(_ thresholds: [Threshold]) {
        watched = thresholds.filter { threshold in
            Self.growingMetrics.contains(threshold.metric)
                && [.lessThan, .lessOrEqual, .equal].contains(threshold.comparison)
        }
    }

    /// The first watched threshold the figures so far fail for good, as its end-of-run message would say it.
    public func firstBreach(_ counters: ProgressCounters) -> String? {
        for threshold in watched {
            guard let actual = counters.liveValue(of: threshold.metric) else { continue }
            // `==` fails for good only once the figure is past the limit; below it may still get there.
            let lost = threshold.comparison == .equal ? actual > threshold.limit : !threshold.comparison.holds(actual, threshold.limit)
            if lost { return "\(threshold) failed: \(threshold.metric.rawValue) = \(Format.significant(actual))" }
        }
        return nil
    }
}

/// One threshold's verdict. `actual` is nil when the run did not measure the metric (a failure).
public struct ThresholdOutcome: Sendable, Equatable {
    public var threshold: Threshold
    public var actual: Double?
    public var passed: Bool
    /// Names the threshold and, on failure, by how much it missed.
    public var message: String
}

/// Every threshold's verdict on one run.
public struct ThresholdResult: Sendable, Equatable {
    public var outcomes: [ThresholdOutcome]
    public var passed: Bool { outcomes.allSatisfy(\.passed) }
    public var failures: [ThresholdOutcome] { outcomes.filter { !$0.passed } }
}

/// A set of thresholds, from text (`p99_ms<250, error_rate<0.01` — commas, semicolons or
/// newlines between them, `#` starts a comment) or JSON (an array of such strings, or an object
/// `{"p99_ms": "<250", "throughput": ">=5000"}`).
public struct Thresholds: Sendable, Equatable {
    public var thresholds: [Threshold]

    public init(_ thresholds: [Threshold] = []) { self.thresholds = thresholds }

    /// What a scenario run holds unless told otherwise: every expected push arrived, no push
    /// came that no event called for, and no retry came before its Retry-After (k6's checks as
    /// default thresholds). A threshold the
    /// user gives on either metric replaces its default (`--threshold missing<=5`).
    public func withScenarioDefaults() -> Thresholds {
        var all = self
        for metric in [ThresholdMetric.missing, .unexpected, .retriesTooSoon] where !thresholds.contains(where: { $0.metric == metric }) {
            all.thresholds.append(Threshold(metric: metric, comparison: .equal, limit: 0))
        }
        return all
    }

    /// Parses the text or JSON form; JSON when the text starts with `[` or `{`.
    public init(parsing text: String) throws(ThresholdParseError) {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("[") || trimmed.hasPrefix("{") {
            try self.init(jsonText: trimmed)
            return
        }
        var parsed: [Threshold] = []
        for line in trimmed.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for part in content.split(whereSeparator: { $0 == "," || $0 == ";" }) {
                let item = String(part).trimmingSpaces
                if !item.isEmpty { parsed.append(try Threshold(parsing: item)) }
            }
        }
        self.init(parsed)
    }

    private init(jsonText: String) throws(ThresholdParseError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(jsonText)
        } catch {
            throw ThresholdParseError("thresholds are not valid JSON: \(error)")
        }
        var parsed: [Threshold] = []
        switch value {
        case .array(let items):
            for (index, item) in items.enumerated() {
                guard let text = item.stringValue else {
                    throw ThresholdParseError("thresholds[\(index)]: expected a string like \"p99_ms<250\"")
                }
                parsed.append(try Threshold(parsing: text))
            }
        case .object(let object):
            for (name, bound) in object {
                guard let text = bound.stringValue else {
                    throw ThresholdParseError("thresholds.\(name): expected a string like \"<250\"")
                }
                parsed.append(try Threshold(parsing: name + text))
            }
        default:
            throw ThresholdParseError("thresholds JSON must be an array of strings or an object")
        }
        self.init(parsed)
    }

    public var isEmpty: Bool { thresholds.isEmpty }

    public func evaluate(_ summary: RunSummary) -> ThresholdResult {
        ThresholdResult(outcomes: thresholds.map { $0.evaluate(summary) })
    }
}

public struct ThresholdParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension StringProtocol {
    var trimmingSpaces: String {
        let characters = Array(self)
        var start = 0, end = characters.count
        while start < end, characters[start].isWhitespace { start += 1 }
        while end > start, characters[end - 1].isWhitespace { end -= 1 }
        return String(characters[start..<end])
    }
}
