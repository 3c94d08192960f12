import Clocks
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import JSON
import Testing
@testable import Driver

/// Parses XML and collects elements with their attributes, or the parser's error.
final class XMLCollector: NSObject, XMLParserDelegate {
    struct Element {
        var name: String
        var attributes: [String: String]
    }
    var elements: [Element] = []
    var text = ""

    static func parse(_ xml: String) throws -> XMLCollector {
        let collector = XMLCollector()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = collector
        guard parser.parse() else {
            throw XMLProblem(message: parser.parserError.map { "\($0)" } ?? "unknown", line: parser.lineNumber)
        }
        return collector
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
        elements.append(Element(name: elementName, attributes: attributeDict))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func named(_ name: String) -> [Element] { elements.filter { $0.name == name } }
}

struct XMLProblem: Error { var message: String; var line: Int }

/// A short run (on a test clock) with every kind of outcome and a fan-out, for the report tests.
func sampleRun() async throws -> RunResult {
    let plan = LoadPlan(scenario: "poolse <ring> & \"storm\"", model: .closed(concurrency: 4, count: 60))
    let clock = TestClock()
    return try await runOnTestClock(plan, on: clock, target: ScriptedTarget(latency: .microseconds(50), clock: clock)) { iteration in
        iteration % 20 == 0
            ? .fanOut((0..<10).map { push(token: $0 == 3 ? "gone-\(iteration)-\($0)" : "ok-\(iteration)-\($0)") })
            : mixedSource(iteration)
    }
}

@Suite struct ReportTests {
    @Test func summaryJSONRoundTrips() async throws {
        var summary = try await sampleRun().summary
        summary.violations = 4
        let text = summary.json.serialized()
        let decoded = try RunSummary(jsonText: text)
        #expect(decoded == summary)
        #expect(!summary.latencyTable.isEmpty)
        #expect(summary.counts.fanOuts == 3)

        // The fixture's optional fields (rate, duration) and nil violations round-trip too.
        var fixture = fixtureSummary()
        fixture.violations = nil
        #expect(try RunSummary(json: fixture.json) == fixture)
    }

    @Test func reportJSONCarriesVerdictsAndReadsBackAsABaseline() throws {
        let summary = fixtureSummary(p99: 312)
        let report = RunReport(summary: summary, thresholds: try Thresholds(parsing: "p99_ms<250, throughput>=1000"),
                               baseline: fixtureSummary(p99: 200))
        #expect(!report.passed)
        let json = try JSONParser.parse(report.jsonText)
        #expect(json["passed"] == .bool(false))
        #expect(json["thresholds"]?["results"]?[0]?["passed"] == .bool(false))
        #expect(json["thresholds"]?["results"]?[0]?["actual"] == .number(312))
        #expect(json["thresholds"]?["results"]?[1]?["passed"] == .bool(true))
        #expect(json["baseline"]?["comparisons"]?[2]?["ratio"]?.doubleValue.map { abs($0 - 1.56) < 1e-9 } == true)
        #expect(json["environment"]?["cores"] == .number(2))
        #expect(json["notes"]?[0]?.stringValue?.hasPrefix("noise") == true)
        #expect(json["latency_ns"]?["p99"] == .number(312_000_000))
        // A whole report is a valid baseline file.
        #expect(try RunSummary(json: json) == summary)
        #expect(report.failureMessages.count == 2)
        #expect(report.failureMessages[1].hasPrefix("baseline p99_ms<=1.2x failed"))
    }

    @Test(arguments: ["", "[]", "{}", #"{"scenario": 3}"#, "not json"])
    func malformedSummariesThrow(text: String) {
        #expect(throws: ReportDecodingError.self) { try RunSummary(jsonText: text) }
    }

    @Test func missingFieldNamesItsKeyPath() throws {
        guard case .object(var object) = fixtureSummary().json else { Issue.record("not an object"); return }
        var counts = try #require(object["counts"]?.objectValue)
        counts["sent"] = .string("many")
        object["counts"] = .object(counts)
        #expect(throws: ReportDecodingError(#"counts.sent: expected a whole number, found "many""#)) {
            try RunSummary(json: .object(object))
        }
    }

    @Test func baselineFileRoundTrips() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("baseline-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let summary = fixtureSummary()
        try summary.writeBaseline(to: path)
        #expect(try RunSummary.readBaseline(from: path) == summary)
    }

    @Test func textSummaryNamesFiguresAndFailures() throws {
        let report = RunReport(summary: fixtureSummary(p99: 312), thresholds: try Thresholds(parsing: "p99_ms<250"))
        let text = report.text
        #expect(text.contains("load run 'storm': open 5000/s for 2s, warm-up 0.5s"))
        #expect(text.contains("p99 312"))
        #expect(text.contains("FAIL p99_ms<250 failed: p99_ms = 312, over the limit by 62 (24.8%)"))
        #expect(text.contains("failed: TooManyRequests"))
        #expect(text.contains("noise"))
        #expect(text.hasSuffix("result: FAILED\n"))
    }

    @Test func junitIsWellFormedWithATestcasePerThreshold() async throws {
        let run = try await sampleRun()
        let passing = RunReport(summary: run.summary, thresholds: try Thresholds(parsing: "error_rate<0.5, p99_ms<60000"))
        let failing = RunReport(summary: fixtureSummary(p99: 312), thresholds: try Thresholds(parsing: "p99_ms<250, throughput>=1000"),
                                baseline: fixtureSummary(p99: 200))
        let xml = JUnitReport.xml([passing, failing])
        let parsed = try XMLCollector.parse(xml)
        let suites = parsed.named("testsuite")
        #expect(suites.count == 2)
        #expect(suites[0].attributes["name"] == "poolse <ring> & \"storm\"")
        #expect(suites[0].attributes["tests"] == "3")
        #expect(suites[0].attributes["failures"] == "0")
        // run + 2 thresholds + 4 baseline bounds; p99 threshold and p99 baseline bound fail.
        #expect(suites[1].attributes["tests"] == "7")
        #expect(suites[1].attributes["failures"] == "2")
        #expect(parsed.named("testsuites").first?.attributes["tests"] == "10")
        let cases = parsed.named("testcase").map { $0.attributes["name"] ?? "" }
        #expect(cases.contains("p99_ms<250"))
        #expect(cases.contains("baseline throughput>=0.9x"))
        let failures = parsed.named("failure")
        #expect(failures.count == 2)
        #expect(failures[0].attributes["message"] == "p99_ms<250 failed: p99_ms = 312, over the limit by 62 (24.8%)")
        #expect(failures[0].attributes["type"] == "threshold")
        #expect(parsed.named("property").contains { $0.attributes["name"] == "p99_ms" })
    }

    @Test func junitFailsARunThatMeasuredNothing() throws {
        var summary = fixtureSummary()
        summary.counts = RunCounts()
        let parsed = try XMLCollector.parse(JUnitReport.xml(RunReport(summary: summary)))
        #expect(parsed.named("failure").count == 1)
        #expect(parsed.named("testcase").first?.attributes["name"] == "run")
    }

    @Test func htmlIsSelfContainedWellFormedAndHasTheCharts() async throws {
        let run = try await sampleRun()
        let report = RunReport(summary: run.summary, thresholds: try Thresholds(parsing: "p99_ms<0.001, error_rate<0.5"),
                               baseline: run.summary)
        let html = HTMLReport.html(report)
        // For eyeballing: DRIVER_REPORT_SAMPLES=/some/dir writes the sample reports there.
        if let directory = ProcessInfo.processInfo.environment["DRIVER_REPORT_SAMPLES"] {
            try html.write(toFile: directory + "/sample.html", atomically: true, encoding: .utf8)
            try JUnitReport.xml(report).write(toFile: directory + "/sample-junit.xml", atomically: true, encoding: .utf8)
            try report.jsonText.write(toFile: directory + "/sample.json", atomically: true, encoding: .utf8)
            try report.text.write(toFile: directory + "/sample.txt", atomically: true, encoding: .utf8)
        }
        let parsed = try XMLCollector.parse(html)
        #expect(parsed.named("svg").count == 4)
        #expect(parsed.named("polyline").count >= 2)
        #expect(parsed.named("section").count == 1)
        #expect(parsed.named("script").isEmpty)
        // No external assets: no src/href attributes, no remote URLs beyond namespace names.
        #expect(parsed.elements.allSatisfy { $0.attributes["src"] == nil && $0.attributes["href"] == nil })
        #expect(!html.replacingOccurrences(of: "http://www.w3.org/", with: "").contains("http"))
        #expect(parsed.text.contains("FAILED"))
        #expect(parsed.text.contains("poolse <ring> & \"storm\""))
        // One bar per outcome (delivered, failed, token removed) plus one per second of throughput.
        let bars = parsed.named("rect").filter { $0.attributes["fill"] == "#3a9d5d" || $0.attributes["fill"] == "#c8453b" || $0.attributes["fill"] == "#d9a400" }
        #expect(bars.count == run.summary.outcomes.count)
    }

    @Test func htmlOfAnEmptyRunStillParses() throws {
        var summary = fixtureSummary()
        summary.latencyTable = []
        summary.serviceTimeTable = []
        summary.completedPerSecond = []
        summary.deliveredPerSecond = []
        summary.outcomes = []
        let parsed = try XMLCollector.parse(HTMLReport.html([RunReport(summary: summary), RunReport(summary: fixtureSummary())]))
        #expect(parsed.named("svg").count == 8)
        #expect(parsed.text.contains("no latency samples"))
    }

    /// The storm report's complaints: a failed run says why at the top, in red; findings are
    /// rows; latency over time and offered against served are charts; nothing is clipped.
    @Test func htmlShowsTheVerdictFirstLatencyOverTimeAndOfferedAgainstServed() async throws {
        let run = try await sampleRun()
        #expect(!run.summary.perSecond.offered.isEmpty && run.summary.perSecond.latencyCount.reduce(0, +) == run.summary.counts.completed)
        #expect(run.summary.perSecond.offered.reduce(0, +) == run.summary.counts.sent)
        var report = RunReport(summary: run.summary, thresholds: try Thresholds(parsing: "p99_ms<0.001"))
        report.findings = ["token cleanup 'a dead token is not pushed again' (1): a push to a dead token: p7/p7-alert (push #12)"]
        let html = HTMLReport.html(report)
        let parsed = try XMLCollector.parse(html)
        #expect(parsed.elements.contains { $0.attributes["class"] == "verdict failed" })
        #expect(html.range(of: "verdict failed")!.lowerBound < html.range(of: "<table>")!.lowerBound, "the verdict comes before the figures")
        #expect(html.contains("<li>p99_ms&lt;0.001 failed"), "the failed threshold is named in the verdict")
        #expect(parsed.elements.contains { $0.attributes["class"] == "finding fail" })
        #expect(parsed.text.contains("p7/p7-alert"))
        #expect(parsed.text.contains("Latency over time") && parsed.text.contains("Offered and served per second"))
        #expect(parsed.named("polyline").contains { $0.attributes["stroke-dasharray"] != nil }, "offered, dashed")
        // The percentile axis's last label ends at the plot's right edge instead of running past the picture.
        let labels = parsed.named("text").filter { ($0.attributes["y"].flatMap(Double.init) ?? 0) == HTMLReport.top + HTMLReport.plotHeight + 16 }
        let rightmost = try #require(labels.max { Double($0.attributes["x"]!)! < Double($1.attributes["x"]!)! })
        #expect(Double(rightmost.attributes["x"]!)! <= HTMLReport.width - HTMLReport.right)
        #expect(labels.filter { $0.attributes["text-anchor"] == "end" }.count >= 1)
        // The series survive the JSON a baseline is read from.
        let read = try RunSummary(jsonText: run.summary.json.serialized())
        #expect(read.perSecond == run.summary.perSecond)
        // A report written before the series reads as having none.
        var old = run.summary.json.objectValue!
        old["offered_per_second"] = nil
        old["latency_per_second"] = nil
        #expect(try RunSummary(jsonText: JSONValue.object(old).serialized()).perSecond.isEmpty)
    }
}
