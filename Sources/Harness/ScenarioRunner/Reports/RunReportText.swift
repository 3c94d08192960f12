// `pushproof run`'s report of its scenarios: as text, JSON and JUnit.
import Foundation
import JSON
import Reports

/// The report's text, JSON and JUnit forms.
public enum RunReportText {
    public static func text(_ report: ScenarioReport, quiet: Bool) -> String {
        var out = "\n\(report.name): \(report.passed ? "PASS" : "FAIL") (sender \(report.sender), oracle: \(report.oracle))\n"
        if let description = report.description, !quiet { out += "  \(description)\n" }
        for event in report.events where !quiet || !event.passed {
            out += "  event \(event.index) \(event.type): \(event.passed ? "ok" : "FAILED"); expected \(event.expected.count), "
                + "delivered \(event.delivered.count)\n"
            if !quiet, !event.passed || event.expected.count != event.delivered.count {
                for push in event.expected { out += "    expected \(push.specName) to \(push.device)\n" }
                for push in event.delivered { out += "    delivered \(push.spec ?? "(no spec)") to \(push.device) (#\(push.sequence))\n" }
            }
            // A sentence behind several problems in a row is quoted once, after the last of them.
            for (index, problem) in event.problems.enumerated() {
                out += "    \(problem.message)\n"
                let repeats = index + 1 < event.problems.count && event.problems[index + 1].source == problem.source
                if let source = problem.source, !repeats { out += "      \"\(source)\"\n" }
            }
        }
        if let aborted = report.aborted { out += "  stopped: \(aborted)\n" }
        return out
    }

    /// One line: pushes accepted per second of the whole run, and each phase's share of it.
    public static func timing(_ report: ScenarioReport) -> String {
        let t = report.timing
        let total = t.total.inSeconds
        let pushes = report.events.reduce(0) { $0 + $1.delivered.count }
        func share(_ d: Duration) -> String { String(format: "%.1f%%", total > 0 ? 100 * d.inSeconds / total : 0) }
        return String(format: "  timing: %.3fs total, %d pushes accepted (%.0f/s); ", total, pushes, total > 0 ? Double(pushes) / total : 0)
            + "sending \(share(t.sending)), settling \(share(t.settling)), oracle \(share(t.oracle)), judging \(share(t.judging))"
            + String(format: " (%.3fs)", t.judging.inSeconds)
    }

    public static func timingJSON(_ timing: RunTiming) -> JSONValue {
        .object([
            "total_s": .number(timing.total.inSeconds), "sending_s": .number(timing.sending.inSeconds),
            "settling_s": .number(timing.settling.inSeconds), "oracle_s": .number(timing.oracle.inSeconds),
            "judging_s": .number(timing.judging.inSeconds),
            "judging_share": .number(timing.judgingShare),
        ])
    }

    public static func json(_ reports: [ScenarioReport]) -> JSONValue {
        .object([
            "passed": .bool(reports.allSatisfy(\.passed)),
            "scenarios": .array(reports.map { report in
                .object([
                    "name": .string(report.name), "passed": .bool(report.passed), "sender": .string(report.sender),
                    "oracle": .string(report.oracle), "aborted": report.aborted.map(JSONValue.string) ?? .null,
                    "timing": timingJSON(report.timing),
                    "events": .array(report.events.map { event in
                        .object([
                            "index": .number(Double(event.index)), "type": .string(event.type), "passed": .bool(event.passed),
                            "source": event.source.map(JSONValue.string) ?? .null,
                            "expected": .array(event.expected.map { ["device": .string($0.device), "spec": .string($0.specName)] }),
                            "delivered": .array(event.delivered.map {
                                ["device": .string($0.device), "spec": $0.spec.map(JSONValue.string) ?? .null, "seq": .number(Double($0.sequence))]
                            }),
                            "problems": .array(event.problems.map {
                                ["kind": .string($0.kind.rawValue), "message": .string($0.message),
                                 "source": $0.source.map(JSONValue.string) ?? .null]
                            }),
                        ])
                    }),
                    "cleanup": .array(report.cleanupRules.map { rule in
                        ["rule": .string(rule.rule), "passed": .bool(rule.problems.isEmpty),
                         "problems": .array(rule.problems.map { .string("event \($0.event): \($0.problem.message)") })]
                    }),
                ])
            }),
        ])
    }

    /// A suite per scenario: a testcase per event and per token-cleanup rule.
    public static func junit(_ reports: [ScenarioReport]) -> String {
        let suites = reports.map { report in
            var cases: [JUnit.TestCase] = []
            for event in report.events {
                var testCase = JUnit.TestCase(classname: report.name, name: "event \(event.index) \(event.type)")
                if !event.passed {
                    let text = event.problems.map { $0.message + ($0.source.map { " (\"\($0)\")" } ?? "") }.joined(separator: "\n")
                    testCase.result = .failed(type: "DeliveryMismatch", message: "\(event.problems.count) problem(s)", text: text)
                }
                cases.append(testCase)
            }
            for rule in report.cleanupRules {
                var testCase = JUnit.TestCase(classname: report.name, name: "cleanup: \(rule.rule)")
                if !rule.problems.isEmpty {
                    let text = rule.problems.map { "event \($0.event): \($0.problem.message)" }.joined(separator: "\n")
                    testCase.result = .failed(type: "TokenCleanup", message: "\(rule.problems.count) problem(s)", text: text)
                }
                cases.append(testCase)
            }
            if let aborted = report.aborted {
                var testCase = JUnit.TestCase(classname: report.name, name: "sender")
                testCase.result = .failed(type: "SenderStopped", message: "the run stopped", text: aborted)
                cases.append(testCase)
            }
            return JUnit.Suite(name: report.name, cases: cases)
        }
        return JUnit.document(name: "pushproof run", suites: suites)
    }
}
