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
            "judging_reads_wall_s": .number(timing.judgingReadsWall.inSeconds),
        ])
    }

    /// `run --json`'s document, written straight from the reports and handed to `write` in
    /// pieces of about a megabyte: a 100,000-person call lists some 300,000 pushes twice
    /// (expected and delivered), which built as a `JSONValue` tree first took more memory than
    /// the whole run.
    public static func json(_ reports: [ScenarioReport], write: ([UInt8]) throws -> Void) rethrows {
        var w = JSONWriter(capacity: 1 << 20)
        func string(_ value: String?) { if let value { w.string(value) } else { w.null() } }
        // Between two elements of an array, the next one still needing its comma.
        func flushIfFull() throws {
            guard w.bytes.count >= 1 << 20 else { return }
            try write(w.bytes)
            w.removeAll()
            w.continueAfterValue()
        }
        w.beginObject()
        w.key("passed"); w.bool(reports.allSatisfy(\.passed))
        w.key("scenarios"); w.beginArray()
        for report in reports {
            w.beginObject()
            w.key("name"); w.string(report.name)
            w.key("passed"); w.bool(report.passed)
            w.key("sender"); w.string(report.sender)
            w.key("oracle"); w.string(report.oracle)
            w.key("aborted"); string(report.aborted)
            w.key("timing"); w.value(timingJSON(report.timing))
            w.key("events"); w.beginArray()
            for event in report.events {
                w.beginObject()
                w.key("index"); w.double(Double(event.index))
                w.key("type"); w.string(event.type)
                w.key("passed"); w.bool(event.passed)
                w.key("source"); string(event.source)
                w.key("expected"); w.beginArray()
                for push in event.expected {
                    w.beginObject()
                    w.key("device"); w.string(push.device)
                    w.key("spec"); w.string(push.specName)
                    w.endObject()
                    try flushIfFull()
                }
                w.endArray()
                w.key("delivered"); w.beginArray()
                for push in event.delivered {
                    w.beginObject()
                    w.key("device"); w.string(push.device)
                    w.key("spec"); string(push.spec)
                    w.key("seq"); w.double(Double(push.sequence))
                    w.endObject()
                    try flushIfFull()
                }
                w.endArray()
                w.key("problems"); w.beginArray()
                for problem in event.problems {
                    w.beginObject()
                    w.key("kind"); w.string(problem.kind.rawValue)
                    w.key("message"); w.string(problem.message)
                    w.key("source"); string(problem.source)
                    w.endObject()
                }
                w.endArray()
                w.endObject()
            }
            w.endArray()
            w.key("cleanup"); w.beginArray()
            for rule in report.cleanupRules {
                w.beginObject()
                w.key("rule"); w.string(rule.rule)
                w.key("passed"); w.bool(rule.problems.isEmpty)
                w.key("problems"); w.beginArray()
                for (event, problem) in rule.problems { w.string("event \(event): \(problem.message)") }
                w.endArray()
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.endObject()
        try write(w.bytes)
    }

    /// A suite per scenario: a testcase per event and per token-cleanup rule.
    public static func junit(_ reports: [ScenarioReport]) -> String {
        let suites = reports.map { report in
            var cases: [JUnit.TestCase] = []
            for event in report.events {
                var testCase = JUnit.TestCase(classname: report.name, name: "event \(event.index) \(event.type)")
                if !event.passed {
                    let text = event.problems.map { $0.message + ($0.source.map { " (\"\($0)\")" } ?? "") }.joined(separator: "\n")
                    testCase.result = .failed(type: "DeliveryMismatch", message: Format.counted(event.problems.count, "problem"), text: text)
                }
                cases.append(testCase)
            }
            for rule in report.cleanupRules {
                var testCase = JUnit.TestCase(classname: report.name, name: "cleanup: \(rule.rule)")
                if !rule.problems.isEmpty {
                    let text = rule.problems.map { "event \($0.event): \($0.problem.message)" }.joined(separator: "\n")
                    testCase.result = .failed(type: "TokenCleanup", message: Format.counted(rule.problems.count, "problem"), text: text)
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
