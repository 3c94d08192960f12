import Driver
import Foundation
import JSON
import Reports

/// What `drive` does with a finished run, whichever workload it drove: thresholds, a
/// baseline, report files and the exit status (load-testing.md, "CI gating").
struct LoadReportOptions {
    static let specs: [OptionSpec] = [
        .value("threshold", "EXPR", "Fail (exit 3) unless it holds, e.g. 'p99_ms<250', 'error_rate<0.01', "
               + "'throughput>=5000'.", repeatable: true),
        .value("thresholds", "FILE", "Thresholds from a file (text or JSON)."),
        .value("baseline", "FILE", "Compare with this earlier run's JSON (report or --save-baseline file)."),
        .value("baseline-rules", "RULES", "Ratio bounds against the baseline.",
               default: "throughput>=0.9x,p50_ms<=1.2x,p99_ms<=1.2x,time_to_ring_all_ms<=1.2x"),
        .value("save-baseline", "FILE", "Write this run's summary as a baseline."),
        .value("json", "FILE", "Write the report as JSON."),
        .value("junit", "FILE", "Write JUnit XML: a testcase per threshold and baseline bound."),
        .value("html", "FILE", "Write a self-contained HTML report."),
        .value("metrics-out", "FILE", "While the run goes, append a JSON line of its figures every second (played, pushes, "
               + "pushes/s, p50/p99/max over the second), for a dashboard or a script to follow; the last line has \"final\": true."),
        .flag("abort-on-fail", "Stop the run as soon as a threshold fails for good (k6's abortOnFail): an upper bound on "
              + "max_ms, unexpected, dead_token_pushes or retry_too_soon, checked four times a second; the report says when."),
        .flag("quiet", "Print no report text and no progress line, only failures."),
    ]

    let thresholds: Thresholds
    let thresholdsPath: String?
    let baselinePath: String?
    let baselineRules: [BaselineRule]
    let saveBaselinePath: String?
    let jsonPath: String?
    let junitPath: String?
    let htmlPath: String?
    let metricsOutPath: String?
    let abortOnFail: Bool
    let quiet: Bool

    init(_ arguments: ParsedArguments) throws(UsageError) {
        var parsed: [Threshold] = []
        for text in arguments.all("threshold") {
            do {
                parsed += try Thresholds(parsing: text).thresholds
            } catch {
                throw UsageError(message: "--threshold \(error)")
            }
        }
        thresholds = Thresholds(parsed)
        thresholdsPath = arguments.value("thresholds")
        baselinePath = arguments.value("baseline")
        if let rules = arguments.value("baseline-rules") {
            do {
                baselineRules = try BaselineRule.parseList(rules)
            } catch {
                throw UsageError(message: "--baseline-rules \(error)")
            }
            if baselinePath == nil { throw UsageError(message: "--baseline-rules goes with --baseline") }
        } else {
            baselineRules = BaselineRule.standard
        }
        saveBaselinePath = arguments.value("save-baseline")
        jsonPath = arguments.value("json")
        junitPath = arguments.value("junit")
        htmlPath = arguments.value("html")
        metricsOutPath = arguments.value("metrics-out")
        abortOnFail = arguments.has("abort-on-fail")
        quiet = arguments.has("quiet")
    }

    /// The inputs a report needs, read before anything is sent: nothing is sent when a file is missing.
    struct Inputs {
        var thresholds: Thresholds
        var baseline: RunSummary?
    }

    /// Thresholds with `--thresholds`' file added, and the baseline. Prints the error and gives
    /// the exit status when a file is unreadable.
    func readInputs(command: String) -> Result<Inputs, ExitStatus> {
        var thresholds = self.thresholds
        do {
            if let thresholdsPath {
                thresholds.thresholds += try Thresholds(parsing: readText(thresholdsPath)).thresholds
            }
            return .success(Inputs(thresholds: thresholds, baseline: try baselinePath.map { path throws in try RunSummary.readBaseline(from: path) }))
        } catch let error as ThresholdParseError {
            printError("pushproof \(command): \(thresholdsPath ?? ""): \(error)")
            return .failure(ExitStatus(ExitCode.usage))
        } catch {
            printError("pushproof \(command): \(error)")
            return .failure(ExitStatus(ExitCode.ioError))
        }
    }

    /// Judges `summary`, prints it (unless quiet) and its failures, writes the files asked for
    /// (the JSON with `extraJSON`'s keys added), and returns the exit status: 2 a file could
    /// not be written, 3 a bound failed, 1 a finding failed the run (`findings`), else 0. The
    /// report's printed result is the same decision.
    func finish(_ summary: RunSummary, inputs: Inputs, findings: [String] = [], extraJSON: JSONObject, command: String) -> Int32 {
        var report = RunReport(summary: summary, thresholds: inputs.thresholds, baseline: inputs.baseline, rules: baselineRules)
        report.findings = findings
        if !quiet { printNow(report.text) }
        for message in report.failureMessages { printError("pushproof \(command): \(message)") }
        var json = report.json.objectValue ?? JSONObject()
        for (key, value) in extraJSON { json[key] = value }
        var files = ReportFiles(command: command)
        files.write(jsonPath, JSONValue.object(json).serialized() + "\n")
        files.write(junitPath, JUnitReport.xml(report))
        files.write(htmlPath, HTMLReport.html(report))
        if let saveBaselinePath {
            files.write(saveBaselinePath) { try summary.writeBaseline(to: saveBaselinePath) }
        }
        if files.failed { return ExitCode.ioError }
        if !report.boundsHeld { return RunReport.thresholdFailureExitCode }
        return report.passed ? ExitCode.success : ExitCode.failure
    }
}

/// An exit status as an error, for `Result`.
struct ExitStatus: Error {
    var code: Int32
    init(_ code: Int32) { self.code = code }
}
