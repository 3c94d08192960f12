import Foundation
import Reports

// Performance regression (load-testing.md, "CI gating"): compare to a stored baseline run on the
// same machine class, by ratio, with a tolerance; report the ratio. Absolute figures are not
// stable on a shared machine, ratios to a run on the same class are.

/// One ratio bound: `current / baseline` of `metric` compared with `limit`,
/// e.g. throughput >= 0.9 (at most 10 % slower), p99_ms <= 1.2 (at most 20 % worse).
public struct BaselineRule: Sendable, Equatable, CustomStringConvertible {
    /// The bound, read on the ratio: its limit is a factor of the baseline's figure, not a figure.
    public var ratioBound: Threshold

    public init(metric: ThresholdMetric, comparison: ThresholdOperator, limit: Double) {
        ratioBound = Threshold(metric: metric, comparison: comparison, limit: limit)
    }

    /// Parses `throughput>=0.9x` or `p99_ms<=1.2` (the trailing `x` is optional).
    public init(parsing text: String) throws(ThresholdParseError) {
        var body = text.trimmingSpaces
        if body.hasSuffix("x") || body.hasSuffix("X") { body.removeLast() }
        ratioBound = try Threshold(parsing: body)
    }

    public var metric: ThresholdMetric { ratioBound.metric }

    public var description: String { "\(ratioBound)x" }

    /// Throughput may drop 10 %, median and tail latency may grow 20 %, the slowest fan-out 20 %.
    public static let standard: [BaselineRule] = [
        BaselineRule(metric: .throughput, comparison: .greaterOrEqual, limit: 0.9),
        BaselineRule(metric: .p50, comparison: .lessOrEqual, limit: 1.2),
        BaselineRule(metric: .p99, comparison: .lessOrEqual, limit: 1.2),
        BaselineRule(metric: .timeToRingAll, comparison: .lessOrEqual, limit: 1.2),
    ]

    /// Parses a list separated by commas, semicolons or newlines.
    public static func parseList(_ text: String) throws(ThresholdParseError) -> [BaselineRule] {
        var rules: [BaselineRule] = []
        for part in text.split(whereSeparator: { $0 == "," || $0 == ";" || $0 == "\n" }) {
            let item = part.trimmingSpaces
            if !item.isEmpty { rules.append(try BaselineRule(parsing: item)) }
        }
        return rules
    }
}

/// One metric compared with the baseline.
public struct BaselineEntry: Sendable, Equatable {
    public var rule: BaselineRule
    /// nil when either run did not measure the metric; the entry is then skipped (passed).
    public var baseline: Double?
    public var current: Double?
    /// current / baseline; 1 when both are 0.
    public var ratio: Double?
    public var passed: Bool
    public var message: String
}

/// A run compared with a stored baseline run.
public struct BaselineComparison: Sendable, Equatable {
    public var baselineScenario: String
    public var baselineDate: String
    public var entries: [BaselineEntry]
    /// Why the two runs may not compare (different scenario, machine class, model).
    public var caveats: [String]

    public var passed: Bool { entries.allSatisfy(\.passed) }
    public var failures: [BaselineEntry] { entries.filter { !$0.passed } }

    public init(current: RunSummary, baseline: RunSummary, rules: [BaselineRule] = BaselineRule.standard) {
        baselineScenario = baseline.scenario
        baselineDate = baseline.environment.date
        var caveats: [String] = []
        if current.scenario != baseline.scenario {
            caveats.append("scenario differs: baseline '\(baseline.scenario)', this run '\(current.scenario)'")
        }
        if current.modelDescription != baseline.modelDescription {
            caveats.append("load model differs: baseline '\(baseline.modelDescription)', this run '\(current.modelDescription)'")
        }
        if current.environment.cores != baseline.environment.cores {
            caveats.append("machine class differs: baseline \(baseline.environment.cores) cores, this run \(current.environment.cores)")
        }
        self.caveats = caveats
        entries = rules.map { rule in
            let old = rule.metric.value(in: baseline)
            let new = rule.metric.value(in: current)
            guard let old, let new else {
                return BaselineEntry(rule: rule, baseline: old, current: new, ratio: nil, passed: true,
                                     message: "\(rule) skipped: \(rule.metric.rawValue) not measured in \(old == nil ? "the baseline" : "this run")")
            }
            let ratio = old == 0 ? (new == 0 ? 1 : .infinity) : new / old
            let passed = rule.ratioBound.comparison.holds(ratio, rule.ratioBound.limit)
            let figures = "\(Format.significant(new)) vs baseline \(Format.significant(old)), ratio \(Format.ratio(ratio))"
            return BaselineEntry(rule: rule, baseline: old, current: new, ratio: ratio, passed: passed,
                                 message: "\(rule) \(passed ? "passed" : "failed"): \(figures)")
        }
    }
}

extension Format {
    /// "0.912x", "1.2x".
    static func ratio(_ value: Double) -> String {
        value.isFinite ? significant(value) + "x" : "inf"
    }
}

// MARK: - Files

extension RunSummary {
    /// Writes this summary as a baseline file (the same JSON as the report's summary part).
    public func writeBaseline(to path: String) throws {
        try Data(json.bytes()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Reads a baseline: a summary or a whole JSON report.
    public static func readBaseline(from path: String) throws -> RunSummary {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try RunSummary(jsonText: String(decoding: data, as: UTF8.self))
    }
}
