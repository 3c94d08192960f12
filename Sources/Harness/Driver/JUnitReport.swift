/// JUnit XML for CI systems (load-testing.md, "CI gating"): one `<testsuite>` per run, one
/// `<testcase>` per threshold and per baseline bound, a `<failure>` carrying the miss message,
/// and a `run` testcase that fails when the run measured nothing.
import Reports

public enum JUnitReport {
    public static func xml(_ reports: [RunReport]) -> String {
        let suites = reports.map { report in
            let s = report.summary
            return JUnit.Suite(
                name: s.scenario, time: s.elapsedSeconds,
                attributes: [("timestamp", s.environment.date), ("hostname", s.environment.hostname)],
                properties: properties(s),
                cases: testCases(report).map { testCase in
                    JUnit.TestCase(classname: "pushproof.load.\(s.scenario)", name: testCase.name, time: 0,
                                   result: testCase.failure.map { .failed(type: testCase.type, message: $0, text: $0) } ?? .passed)
                },
                systemOut: report.text)
        }
        return JUnit.document(name: "pushproof load", suites: suites, time: reports.reduce(0.0) { $0 + $1.summary.elapsedSeconds })
    }

    public static func xml(_ report: RunReport) -> String { xml([report]) }

    struct TestCase {
        var name: String
        var type: String
        var failure: String?
    }

    static func testCases(_ report: RunReport) -> [TestCase] {
        var cases: [TestCase] = []
        let nothingMeasured = report.summary.counts.completed == 0
        cases.append(TestCase(name: "run", type: "run",
                              failure: nothingMeasured ? "no push completed in the measured part of the run" : nil))
        for outcome in report.thresholds?.outcomes ?? [] {
            cases.append(TestCase(name: outcome.threshold.description, type: "threshold",
                                  failure: outcome.passed ? nil : outcome.message))
        }
        for entry in report.baseline?.entries ?? [] {
            cases.append(TestCase(name: "baseline " + entry.rule.description, type: "baseline",
                                  failure: entry.passed ? nil : entry.message))
        }
        return cases
    }

    static func properties(_ s: RunSummary) -> [(name: String, value: String)] {
        [
            ("model", s.modelDescription),
            ("cores", String(s.environment.cores)),
            ("sent", String(s.counts.sent)),
            ("delivered", String(s.counts.delivered)),
            ("failed", String(s.counts.failed)),
            ("tokens_removed", String(s.counts.tokensRemoved)),
            ("dropped_iterations", String(s.counts.droppedIterations)),
            ("late_iterations", String(s.counts.lateIterations)),
            ("throughput_per_s", Format.significant(s.throughput)),
            ("p50_ms", Format.milliseconds(s.latency.p50)),
            ("p99_ms", Format.milliseconds(s.latency.p99)),
            ("p99.9_ms", Format.milliseconds(s.latency.p999)),
            ("max_ms", Format.milliseconds(s.latency.max)),
        ]
    }
}
