import JSON
import Metrics
import Reports

/// A finished run with its verdicts, rendered for people (``text``), tools (``json``), CI
/// (``JUnitReport``) and browsers (``htmlReport``): load-testing.md, "CI gating".
public struct RunReport: Sendable, Equatable {
    /// The exit code the CLI uses when a threshold or baseline bound fails; distinct from usage
    /// errors (64) and ordinary failures (1).
    public static let thresholdFailureExitCode: Int32 = 3

    public var summary: RunSummary
    public var thresholds: ThresholdResult?
    public var baseline: BaselineComparison?
    /// What failed the run besides its bounds: the sender stopped, a token-cleanup rule broke,
    /// no push arrived. Each fails the run as a bound does, so the printed result and the exit
    /// status are one decision.
    public var findings: [String] = []

    public init(summary: RunSummary, thresholds: ThresholdResult? = nil, baseline: BaselineComparison? = nil) {
        self.summary = summary
        self.thresholds = thresholds
        self.baseline = baseline
    }

    /// Evaluates `thresholds` and, when given, compares with `baseline` by `rules`.
    public init(summary: RunSummary, thresholds: Thresholds, baseline: RunSummary? = nil,
                rules: [BaselineRule] = BaselineRule.standard) {
        self.init(summary: summary,
                  thresholds: thresholds.isEmpty ? nil : thresholds.evaluate(summary),
                  baseline: baseline.map { BaselineComparison(current: summary, baseline: $0, rules: rules) })
    }

    /// Every threshold and baseline bound held, and nothing else failed the run.
    public var passed: Bool { boundsHeld && findings.isEmpty }

    /// Every threshold and baseline bound held (a failed one exits `thresholdFailureExitCode`).
    public var boundsHeld: Bool { (thresholds?.passed ?? true) && (baseline?.passed ?? true) }

    /// One line per failed bound and per finding, for the CLI's stderr.
    public var failureMessages: [String] {
        findings + (thresholds?.failures.map(\.message) ?? []) + (baseline?.failures.map { "baseline " + $0.message } ?? [])
    }

    // MARK: - Text

    /// The summary for people.
    public var text: String {
        let s = summary
        let c = s.counts
        var lines: [String] = []
        var heading = "load run '\(s.scenario)': \(s.modelDescription)"
        if s.warmUpSeconds > 0 { heading += ", warm-up \(Format.seconds(s.warmUpSeconds))" }
        lines.append(heading)
        lines.append("machine: \(s.environment.cores) cores, \(s.environment.hostname), \(s.environment.date)")
        if let sender = s.sender { lines.append("sender: \(sender.text)") }
        lines.append("pushes: \(c.sent) sent, \(c.completed) completed: \(c.delivered) delivered, \(c.failed) failed, "
                     + "\(c.tokensRemoved) tokens removed" + (c.abandoned > 0 ? "; \(c.abandoned) abandoned" : ""))
        lines.append("iterations: \(c.iterations) measured, \(c.lateIterations) late, \(c.droppedIterations) dropped"
                     + (c.warmUpIterations > 0 ? " (+\(c.warmUpIterations) warm-up)" : ""))
        lines.append("throughput: \(Format.significant(s.throughput)) pushes/s (\(Format.significant(s.deliveredThroughput)) delivered/s)"
                     + " over \(Format.significant(s.measuredSeconds)) s; error rate \(Format.percent(s.errorRate))")
        lines.append("latency from intended send (ms): " + Self.latencyLine(s.latency))
        lines.append("latency from actual send (ms):   " + Self.latencyLine(s.serviceTime))
        lines.append("send lag behind schedule (ms):   " + Self.latencyLine(s.sendLag))
        if c.fanOuts > 0 || c.fanOutsIncomplete > 0 {
            lines.append("fan-outs: \(c.fanOuts) complete (\(c.fanOutsFullyDelivered) fully delivered, \(c.fanOutsIncomplete) incomplete)")
            lines.append("time to ring all (ms):           " + Self.latencyLine(s.timeToRingAll))
        }
        if let violations = s.violations { lines.append("conformance violations: \(violations)") }
        if !s.outcomes.isEmpty {
            lines.append("outcomes:")
            let labelWidth = s.outcomes.map { Self.outcomeLabel($0).count }.max() ?? 0
            let countWidth = s.outcomes.map { String($0.count).count }.max() ?? 0
            for outcome in s.outcomes {
                let label = Self.outcomeLabel(outcome)
                let count = String(outcome.count)
                lines.append("  " + label + String(repeating: " ", count: labelWidth - label.count + 2 + countWidth - count.count) + count)
            }
        }
        if let thresholds {
            let failed = thresholds.failures.count
            lines.append("thresholds: \(thresholds.outcomes.count - failed) passed, \(failed) failed")
            for outcome in thresholds.outcomes { lines.append("  \(outcome.passed ? "PASS" : "FAIL") \(outcome.message)") }
        }
        if let baseline {
            lines.append("baseline '\(baseline.baselineScenario)' of \(baseline.baselineDate):")
            for entry in baseline.entries { lines.append("  \(entry.passed ? "PASS" : "FAIL") \(entry.message)") }
            for caveat in baseline.caveats { lines.append("  caveat: \(caveat)") }
        }
        if !s.notes.isEmpty {
            lines.append("notes:")
            for note in s.notes { lines.append("  - \(note)") }
        }
        if !findings.isEmpty {
            lines.append("findings:")
            for finding in findings { lines.append("  FAIL \(finding)") }
        }
        lines.append(passed ? "result: PASSED" : "result: FAILED")
        return lines.joined(separator: "\n") + "\n"
    }

    static func latencyLine(_ l: LatencySummary) -> String {
        guard l.count > 0 else { return "no samples" }
        return "p50 \(Format.milliseconds(l.p50))  p90 \(Format.milliseconds(l.p90))  p99 \(Format.milliseconds(l.p99))"
            + "  p99.9 \(Format.milliseconds(l.p999))  max \(Format.milliseconds(l.max))"
            + "  (min \(Format.milliseconds(l.min)), mean \(Format.milliseconds(l.mean)), n=\(l.count))"
    }

    static func outcomeLabel(_ outcome: OutcomeCount) -> String {
        outcome.reason.isEmpty ? outcome.kind : "\(outcome.kind): \(outcome.reason)"
    }

    // MARK: - JSON

    /// The report for tools: the summary's keys (so a report is also a baseline file), plus
    /// `passed`, `thresholds` and `baseline`.
    public var json: JSONValue {
        guard case .object(var object) = summary.json else { return summary.json }
        object["passed"] = .bool(passed)
        object["findings"] = .array(findings.map { .string($0) })
        if let thresholds {
            object["thresholds"] = [
                "passed": .bool(thresholds.passed),
                "results": .array(thresholds.outcomes.map { outcome in
                    [
                        "threshold": .string(outcome.threshold.description),
                        "metric": .string(outcome.threshold.metric.rawValue),
                        "operator": .string(outcome.threshold.comparison.rawValue),
                        "limit": .number(outcome.threshold.limit),
                        "actual": outcome.actual.map(JSONValue.number) ?? .null,
                        "passed": .bool(outcome.passed),
                        "message": .string(outcome.message),
                    ]
                }),
            ]
        } else {
            object["thresholds"] = .null
        }
        if let baseline {
            object["baseline"] = [
                "scenario": .string(baseline.baselineScenario),
                "date": .string(baseline.baselineDate),
                "passed": .bool(baseline.passed),
                "caveats": .array(baseline.caveats.map { .string($0) }),
                "comparisons": .array(baseline.entries.map { entry in
                    [
                        "rule": .string(entry.rule.description),
                        "metric": .string(entry.rule.metric.rawValue),
                        "baseline": entry.baseline.map(JSONValue.number) ?? .null,
                        "current": entry.current.map(JSONValue.number) ?? .null,
                        // Infinity has no JSON form: a zero baseline gives null.
                        "ratio": entry.ratio.flatMap { $0.isFinite ? JSONValue.number($0) : nil } ?? .null,
                        "passed": .bool(entry.passed),
                        "message": .string(entry.message),
                    ]
                }),
            ]
        } else {
            object["baseline"] = .null
        }
        return .object(object)
    }

    /// ``json`` as text.
    public var jsonText: String { json.serialized() }
}
