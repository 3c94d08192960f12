import Clocks
import Driver
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import Scenario
import SpecValidator

/// `pushproof check RECORDING`: judges every recorded request against the push specs, offline.
/// Streams the recording (one line in memory at a time), so millions of lines check in
/// bounded memory.
struct CheckCommand: Subcommand {
    static let spec = CommandSpec(
        name: "check",
        abstract: "Judge every request of a recording against the push specs; exit 1 on violations.",
        positionals: ["RECORDING"],
        options: [
            .value("specs", "DIR", "The spec directory.", default: ShippedSpecs.searchOrder),
            .flag("require-spec", "Fail on pushes no product claims (their topic or FCM project is none of specset.json's): "
                  + "by default they are listed as not covered by any spec, and pass."),
            .value("spec-config", "FILE", "JSON that replaces values of specset.json's config (bundle ids, FCM project)."),
            .value("junit", "FILE", "Write JUnit XML: a testcase per spec, its failures listed."),
            .value("json", "FILE", "Write the full result as JSON."),
            .value("max-failures", "N", "Failures listed per spec in the summary and reports.", default: "5"),
            .value("min-requests", "N", "Fail (exit 1) when the recording holds fewer than N requests: a gate on a gateway "
                   + "that recorded nothing.", default: "0"),
            .flag("quiet", "Print only the last line (totals)."),
            .flag("timing", "Report the validation cost per request (µs; judging only, not reading): mean, p50, p99, per spec."),
            .value("expect", "FILE", "The deliveries the recording must hold, as JSON: {\"deliveries\": [{\"token\", \"spec\", "
                   + "\"count\"}]}; exit 1 unless the pushes accepted reach exactly those devices."),
        ],
        discussion: """
        RECORDING is a file written by 'pushproof serve --record' ('-' reads standard input).
        With --expect, the pushes the gateway accepted (2xx) are also compared with the listed
        deliveries: a listed one that is missing or repeated, or a push to a device (or of a spec)
        not listed, fails the check.
        A push is judged by the specs of the product that claims it by its identity (the APNs
        topic's bundle id, the FCM project in the path; specset.json's config). A push no product
        claims is not covered by any spec: counted apart, by topic or project, and not a failure
        unless --require-spec is given. The gateway's own findings (the record's
        gateway_warnings) fail every push they are on, covered or not.
        The recording itself is checked too: a jump in seq means the gateway lost lines (e.g. on
        a full disk), and fails; seq going back to 1 is a new run appended (--record-append). An
        empty recording is warned about (--min-requests N fails it). Where the gateway stored a
        verdict (serve --specs) that differs from today's, one line says how many (the specs
        changed since); that alone is not a failure.
        Exit status: 0 when every request passes its spec (and the deliveries match), 1 when any
        violates one (or its product has no spec for it, or it carries gateway warnings, or the
        deliveries differ, or seq has gaps, or fewer than --min-requests were recorded), 2 when
        the recording, the specs or the expectations cannot be read (unreadable lines, such as
        a record version this pushproof does not read, are listed), 64 on a usage error.

        EXAMPLE:
          pushproof check out/record.jsonl --junit out/conformance.xml --json out/conformance.json
        """)

    let recordingPath: String
    let specsLocation: ShippedSpecs
    var specsDirectory: String { specsLocation.path }
    let requireSpec: Bool
    let specConfigPath: String?
    let junitPath: String?
    let jsonPath: String?
    let maxFailures: Int
    let minRequests: Int
    let quiet: Bool
    let timing: Bool
    let expectPath: String?

    init(_ arguments: ParsedArguments) throws {
        recordingPath = arguments.positionals[0]
        specsLocation = ShippedSpecs.locate(explicit: arguments.value("specs"))
        requireSpec = arguments.has("require-spec")
        specConfigPath = arguments.value("spec-config")
        junitPath = arguments.value("junit")
        jsonPath = arguments.value("json")
        maxFailures = try arguments.int("max-failures", default: 5, range: 0...10_000)
        minRequests = try arguments.int("min-requests", default: 0, range: 0...Int(Int32.max))
        quiet = arguments.has("quiet")
        timing = arguments.has("timing")
        expectPath = arguments.value("expect")
    }

    func run() async -> Int32 {
        let specs: SpecSet
        do {
            let overrides = try specConfigPath.map { try loadSpecConfig($0) } ?? [:]
            specs = try SpecSet.load(directory: specsDirectory, configOverrides: overrides)
        } catch {
            printError("pushproof check: \(specsLocation.description): \(error)"
                       + (specsLocation.foundBy == "./Specs" ? " (no shipped specs found: give --specs DIR or set PUSHPROOF_SPECS)" : ""))
            return ExitCode.ioError
        }
        let expectations: DeliveryExpectations?
        do {
            expectations = try expectPath.map { path throws(FileError) in try DeliveryExpectations(path: path) }
        } catch {
            printError("pushproof check: --expect \(error)")
            return ExitCode.ioError
        }
        var deliveries = DeliveryTally()
        let lines: LineReader
        do {
            lines = try LineReader(path: recordingPath)
        } catch {
            printError("pushproof check: \(error)")
            return ExitCode.ioError
        }
        var result = CheckResult(specIDs: specs.specs.map(\.id), maxFailures: maxFailures, requireSpec: requireSpec)
        if !quiet { print(specsLocation.description) }
        var costs = ValidationCosts()
        var lineNumber = 0
        var sequences = SequenceCheck()
        var storedVerdicts = StoredVerdictDifferences()
        while let line = lines.next() {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let request: RecordLine
            do {
                request = try RecordLine(decoding: line)
            } catch {
                result.noteUnreadable(line: lineNumber, problem: error.description)
                continue
            }
            result.recordedCount += 1
            if let sequence = request.sequence { sequences.add(sequence) }
            // Only the judge call is timed: reading and decoding the record line is the
            // recording's cost, not validation's.
            let started = timing ? SystemClock.monotonicNanoseconds() : 0
            let verdict = specs.judge(route: request.route, method: request.method, path: request.path,
                                      headers: request.headers, body: request.body)
            if timing { costs.add(SystemClock.monotonicNanoseconds() - started, spec: verdict.outOfScope ? nil : (verdict.specID ?? "(unmatched)")) }
            result.add(verdict, gatewayWarnings: request.gatewayWarnings, sequence: request.sequence ?? lineNumber)
            storedVerdicts.compare(stored: request.verdict, computed: verdict, sequence: request.sequence ?? lineNumber)
            if expectations != nil { deliveries.add(request, spec: verdict.specID, sequence: request.sequence ?? lineNumber) }
        }
        if let error = lines.error { result.noteUnreadable(line: lineNumber + 1, problem: error) }
        result.sequenceGaps = sequences.gaps
        result.minRequests = minRequests
        if result.recordedCount == 0 && result.unreadable.isEmpty {
            printError("pushproof check: warning: \(recordingPath) holds no requests: the gateway recorded nothing"
                       + (minRequests > 0 ? "" : " (--min-requests N makes this a failure)"))
        }

        var report = result.report(recording: recordingPath, specsDirectory: specsDirectory)
        let comparison = expectations.map { deliveries.compare(with: $0) }
        if !quiet { print(result.summaryText(), terminator: "") }
        if let line = storedVerdicts.summaryLine, !quiet { print("\n" + line) }
        if let comparison, let expectPath {
            if !quiet { print(comparison.text(path: expectPath, maxListed: max(maxFailures, 20)), terminator: "") }
            if case .object(var object) = report {
                object["deliveries"] = comparison.json(path: expectPath)
                if !comparison.passed { object["ok"] = false }
                report = .object(object)
            }
        }
        if case .object(var object) = report, storedVerdicts.count > 0 {
            object["stored_verdicts_differ"] = storedVerdicts.json()
            report = .object(object)
        }
        if timing {
            print(costs.text(), terminator: "")
            if case .object(var object) = report {
                object["timing"] = costs.json()
                report = .object(object)
            }
        }
        var totals = result.totalsLine
        if let comparison {
            totals += comparison.passed ? "; deliveries as expected"
                : "; deliveries: \(comparison.missing.count) missing, \(comparison.unexpected.count) unexpected, \(comparison.repeated.count) repeated"
        }
        print(totals)
        do {
            let extra = comparison.map { [$0.junitTestcase(path: expectPath ?? "")] } ?? []
            if let junitPath { try Data(result.junitXML(extra: extra).utf8).write(to: URL(fileURLWithPath: junitPath)) }
            if let jsonPath { try Data(report.serialized().utf8 + [0x0A]).write(to: URL(fileURLWithPath: jsonPath)) }
        } catch {
            printError("pushproof check: cannot write a report: \(error.localizedDescription)")
            return ExitCode.ioError
        }
        if !result.unreadable.isEmpty { return ExitCode.ioError }
        return result.failedCount > 0 || !result.recordingComplete || comparison?.passed == false ? ExitCode.failure : ExitCode.success
    }
}

/// Time spent in `SpecSet.judge`, per request (`check --timing`): the issue-3 figure.
struct ValidationCosts {
    private(set) var all = HDRHistogram()
    private(set) var bySpec: [String: HDRHistogram] = [:]

    /// `spec` nil for out-of-scope requests: they count in the total only.
    mutating func add(_ nanos: UInt64, spec: String?) {
        all.record(nanos)
        if let spec { bySpec[spec, default: HDRHistogram()].record(nanos) }
    }

    struct Summary {
        var count: Int
        var meanMicros: Double
        var p50Micros: Double
        var p99Micros: Double
    }

    /// Nearest-rank percentiles (within 0.1 %: the histogram's precision).
    static func summarize(_ nanos: HDRHistogram) -> Summary {
        Summary(count: Int(nanos.totalCount), meanMicros: nanos.mean / 1000,
                p50Micros: Double(nanos.value(atPercentile: 50)) / 1000, p99Micros: Double(nanos.value(atPercentile: 99)) / 1000)
    }

    func text() -> String {
        func line(_ label: String, _ s: Summary) -> String {
            label.padding(to: 32) + String(s.count).leftPadded(9) + micros(s.meanMicros).leftPadded(10)
                + micros(s.p50Micros).leftPadded(10) + micros(s.p99Micros).leftPadded(10) + "\n"
        }
        var out = "\nvalidation cost per request (µs, SpecSet.judge only; reading the recording excluded)\n"
        out += "spec".padding(to: 32) + "requests".leftPadded(9) + "mean".leftPadded(10) + "p50".leftPadded(10) + "p99".leftPadded(10) + "\n"
        for spec in bySpec.keys.sorted() { out += line(spec, Self.summarize(bySpec[spec] ?? HDRHistogram())) }
        let total = Self.summarize(all)
        out += line("(all)", total)
        out += "validation cost: mean \(micros(total.meanMicros)) µs, p50 \(micros(total.p50Micros)) µs, p99 \(micros(total.p99Micros)) µs over \(total.count) requests\n"
        return out
    }

    func json() -> JSONValue {
        func summary(_ s: Summary) -> JSONValue {
            ["requests": .number(Double(s.count)), "mean_us": .number(s.meanMicros),
             "p50_us": .number(s.p50Micros), "p99_us": .number(s.p99Micros)]
        }
        var specs = JSONObject()
        for spec in bySpec.keys.sorted() { specs[spec] = summary(Self.summarize(bySpec[spec] ?? HDRHistogram())) }
        return ["all": summary(Self.summarize(all)), "specs": .object(specs)]
    }

    private func micros(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

extension RecordLine {
    /// The device a push addressed: APNs `/3/device/<token>`, FCM `message.token`.
    var deviceToken: String? { AddressedDevice.token(route: route, path: path, body: body) }
}

/// The record's `seq` numbers in file order: 1, 2, 3… with no gaps. A jump means the gateway
/// lost lines (`RecordFile` counts them on a full disk and leaves the gap); a return to 1 is a
/// new run appended to the file (`serve --record-append`), not a gap.
struct SequenceCheck {
    struct Gap: Equatable {
        var from: Int
        var to: Int
        /// A jump forward: the lines between are missing.
        var missing: Int { to - from - 1 }
        /// Forward, the lines between are missing; backward (not to 1), the file is out of order.
        var description: String {
            to > from
                ? "seq jumps from \(from) to \(to): \(missing) line\(missing == 1 ? "" : "s") missing (the gateway lost them, e.g. on a full disk)"
                : "seq goes back from \(from) to \(to): lines out of order or repeated"
        }
    }

    private var last: Int?
    private(set) var gaps: [Gap] = []

    mutating func add(_ sequence: Int) {
        defer { last = sequence }
        guard let last, sequence != last + 1, sequence != 1 else { return }
        gaps.append(Gap(from: last, to: sequence))
    }
}

/// Where the verdict the gateway stored (`serve --specs`) and the one `check` computes now
/// differ (the specs changed since the run): counted and the first few seqs kept. Today's
/// verdict is the one that counts; this only says the record's own verdicts are stale.
struct StoredVerdictDifferences {
    static let listed = 5
    private(set) var count = 0
    private(set) var firstSequences: [Int] = []

    mutating func compare(stored: JSONValue?, computed: SpecVerdict, sequence: Int) {
        // A verdict without `spec` holds only gateway warnings: the gateway judged nothing.
        guard let stored, let storedSpec = stored[RecordLine.name(RecordLine.Field.spec)] else { return }
        let storedCovered = stored[RecordLine.name(RecordLine.Field.covered)] != .bool(false)
        let same = !computed.outOfScope && storedSpec.stringValue == computed.specID
            && stored[RecordLine.name(RecordLine.Field.ok)]?.boolValue == computed.violations.isEmpty && storedCovered == (computed.uncovered == nil)
        guard !same else { return }
        count += 1
        if firstSequences.count < Self.listed { firstSequences.append(sequence) }
    }

    var summaryLine: String? {
        guard count > 0 else { return nil }
        let seqs = firstSequences.map { "#\($0)" }.joined(separator: ", ") + (count > firstSequences.count ? ", …" : "")
        return "stored verdicts differ on \(count) request\(count == 1 ? "" : "s") (\(seqs)): the specs changed since the recording; "
            + "the results above are today's"
    }

    func json() -> JSONValue {
        ["count": .number(Double(count)), "first_seqs": .array(firstSequences.map { .number(Double($0)) })]
    }
}

/// Tallies per spec, and keeps the first failures of each. Pushes no product claims are counted
/// apart (`notCovered`, by topic or project); they fail only with `requireSpec`, or when the
/// gateway noted something on them.
struct CheckResult {
    struct Tally {
        var checked = 0
        var passed = 0
        var failures: [(sequence: Int, violations: [SpecViolation])] = []
        var failed = 0
    }

    static let unmatchedRow = "(unmatched)"
    static let notCoveredRow = "(not covered)"

    let specIDs: [String]
    let maxFailures: Int
    let requireSpec: Bool
    var tallies: [String: Tally] = [:]
    /// Claimed pushes no spec of their product recognises.
    var unmatched = Tally()
    /// Pushes no product claims that failed anyway (`requireSpec`, gateway warnings).
    var notCoveredFailures = Tally()
    /// Every push no product claims, by what it carried (`UncoveredRequest.label`).
    var notCovered: [String: Int] = [:]
    var outOfScope = 0
    var unreadable: [(line: Int, problem: String)] = []
    /// Lines that decoded as requests (judged or out of scope).
    var recordedCount = 0
    /// `--min-requests`: fewer recorded requests fail the check.
    var minRequests = 0
    /// Jumps in `seq`: lines the gateway lost.
    var sequenceGaps: [SequenceCheck.Gap] = []

    /// The record holds what was asked of it: no lost lines, at least `minRequests` requests.
    var recordingComplete: Bool { sequenceGaps.isEmpty && recordedCount >= minRequests }

    /// Why the recording itself fails, one sentence each.
    var recordingProblems: [String] {
        var problems = sequenceGaps.prefix(20).map(\.description)
        if sequenceGaps.count > 20 { problems.append("… and \(sequenceGaps.count - 20) more seq gaps") }
        if recordedCount < minRequests {
            problems.append("only \(recordedCount) request\(recordedCount == 1 ? "" : "s") recorded, --min-requests \(minRequests)")
        }
        return problems
    }

    init(specIDs: [String], maxFailures: Int, requireSpec: Bool = false) {
        self.specIDs = specIDs
        self.maxFailures = maxFailures
        self.requireSpec = requireSpec
    }

    var failedCount: Int { tallies.values.reduce(0) { $0 + $1.failed } + unmatched.failed + notCoveredFailures.failed }
    var checkedCount: Int { tallies.values.reduce(0) { $0 + $1.checked } + unmatched.checked + notCoveredFailures.checked }
    var notCoveredCount: Int { notCovered.values.reduce(0, +) }

    /// `gatewayWarnings`: the record's `verdict.gateway_warnings`, a failure wherever they are.
    mutating func add(_ verdict: SpecVerdict, gatewayWarnings: [String] = [], sequence: Int) {
        if verdict.outOfScope { outOfScope += 1; return }
        var violations = verdict.violations
        for warning in gatewayWarnings {
            violations.append(SpecViolation(pointer: .root, rule: "gateway-warning", source: nil, expected: "no gateway warning",
                                            found: JSONValue.string(warning).serialized(), message: "the gateway noted: \(warning)"))
        }
        if let uncovered = verdict.uncovered {
            notCovered[uncovered.label, default: 0] += 1
            if requireSpec {
                violations.append(SpecViolation(pointer: .root, rule: "not-covered", source: nil, expected: "a push a product claims",
                                                found: JSONValue.string(uncovered.label).serialized(),
                                                message: "no product claims this push (--require-spec)"))
            }
            guard !violations.isEmpty else { return }
            notCoveredFailures.checked += 1
            notCoveredFailures.failed += 1
            if notCoveredFailures.failures.count < maxFailures { notCoveredFailures.failures.append((sequence, violations)) }
            return
        }
        let id = verdict.specID
        var tally = id.flatMap { tallies[$0] } ?? (id == nil ? unmatched : Tally())
        tally.checked += 1
        if violations.isEmpty {
            tally.passed += 1
        } else {
            tally.failed += 1
            if tally.failures.count < maxFailures { tally.failures.append((sequence, violations)) }
        }
        if let id { tallies[id] = tally } else { unmatched = tally }
    }

    /// The rows after the specs': set-level tallies, when they hold anything.
    private var extraRows: [(id: String, tally: Tally)] {
        [(Self.unmatchedRow, unmatched), (Self.notCoveredRow, notCoveredFailures)].filter { $0.tally.checked > 0 }
    }

    /// `not covered by any spec: 2647 pushes to com.example.loop`, one line per topic or project, most first.
    var notCoveredLines: [String] {
        notCovered.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { label, count in
            "not covered by any spec: \(count) push\(count == 1 ? "" : "es") to \(label)"
        }
    }

    mutating func noteUnreadable(line: Int, problem: String) {
        if unreadable.count < 100 { unreadable.append((line, problem)) }
    }

    /// Specs in file order, then any id seen that the set does not list.
    private var orderedIDs: [String] {
        specIDs + tallies.keys.filter { !specIDs.contains($0) }.sorted()
    }

    var totalsLine: String {
        var line = "\(checkedCount) requests checked: \(checkedCount - failedCount) passed, \(failedCount) failed"
        if outOfScope > 0 { line += ", \(outOfScope) out of scope" }
        if notCoveredCount > 0 {
            line += ", \(notCoveredCount) not covered by any spec" + (requireSpec ? " (--require-spec: failed)" : "")
        }
        if !unreadable.isEmpty { line += ", \(unreadable.count) unreadable lines" }
        let missing = sequenceGaps.reduce(0) { $0 + max(0, $1.missing) }
        if !sequenceGaps.isEmpty { line += ", \(sequenceGaps.count) seq gap\(sequenceGaps.count == 1 ? "" : "s") (\(missing) lines missing)" }
        if recordedCount < minRequests { line += ", only \(recordedCount) recorded (--min-requests \(minRequests))" }
        return line
    }

    func summaryText() -> String {
        var out = "spec                              checked   passed   failed\n"
        for id in orderedIDs {
            let tally = tallies[id] ?? Tally()
            out += id.padding(to: 32) + String(tally.checked).leftPadded(9) + String(tally.passed).leftPadded(9)
                + String(tally.failed).leftPadded(9) + "\n"
        }
        for (id, tally) in extraRows {
            out += id.padding(to: 32) + String(tally.checked).leftPadded(9) + String(tally.passed).leftPadded(9)
                + String(tally.failed).leftPadded(9) + "\n"
        }
        if !notCovered.isEmpty {
            out += "\n" + notCoveredLines.joined(separator: "\n") + "\n"
            if !requireSpec { out += "(no product claims these pushes by topic or FCM project; --require-spec fails on them)\n" }
        }
        for (id, tally) in orderedIDs.map({ ($0, tallies[$0] ?? Tally()) }) + extraRows {
            guard !tally.failures.isEmpty else { continue }
            out += "\n\(id): first \(tally.failures.count) of \(tally.failed) failures\n"
            for failure in tally.failures {
                out += "  request #\(failure.sequence)\n"
                for violation in failure.violations { out += "    \(violation.description)\n" }
            }
        }
        if !recordingProblems.isEmpty { out += "\n" }
        for problem in recordingProblems { out += "recording incomplete: \(problem)\n" }
        for (line, problem) in unreadable { out += "line \(line): \(problem)\n" }
        return out
    }

    /// `extra`: further testcases (the deliveries' comparison).
    func junitXML(extra: [JUnit.TestCase] = []) -> String {
        var cases: [JUnit.TestCase] = []
        for (id, tally) in orderedIDs.map({ ($0, tallies[$0] ?? Tally()) }) + extraRows {
            let product = id.split(separator: ".").first.map(String.init) ?? "pushproof"
            var testCase = JUnit.TestCase(classname: product, name: id, assertions: tally.checked)
            if tally.checked == 0 {
                testCase.result = .skipped(message: "no recorded request matched this spec")
            } else if tally.failed > 0 {
                var text = ""
                for failure in tally.failures {
                    text += "request #\(failure.sequence)\n"
                    for violation in failure.violations { text += "  \(violation.description)\n" }
                }
                testCase.result = .failed(type: "SpecViolation", message: "\(tally.failed) of \(tally.checked) requests violate \(id)", text: text)
            }
            cases.append(testCase)
        }
        if !notCovered.isEmpty, !requireSpec {
            cases.append(JUnit.TestCase(classname: "pushproof", name: "not covered by any spec", assertions: 0,
                                        result: .skipped(message: notCoveredLines.joined(separator: "; "))))
        }
        if !unreadable.isEmpty {
            let text = unreadable.map { "line \($0.line): \($0.problem)" }.joined(separator: "\n")
            cases.append(JUnit.TestCase(classname: "pushproof", name: "recording is readable",
                                        result: .failed(type: "UnreadableRecording", message: "\(unreadable.count) unreadable lines", text: text)))
        }
        if !recordingProblems.isEmpty {
            cases.append(JUnit.TestCase(classname: "pushproof", name: "recording is complete",
                                        result: .failed(type: "IncompleteRecording", message: recordingProblems[0],
                                                        text: recordingProblems.joined(separator: "\n"))))
        }
        return JUnit.document(name: "pushproof check", suites: [JUnit.Suite(name: "pushproof check", cases: cases + extra)])
    }

    func report(recording: String, specsDirectory: String) -> JSONValue {
        func tallyJSON(_ id: String?, _ tally: Tally) -> JSONValue {
            var object: JSONObject = [
                "checked": .number(Double(tally.checked)), "passed": .number(Double(tally.passed)),
                "failed": .number(Double(tally.failed)),
                "failures": .array(tally.failures.map { failure in
                    ["seq": .number(Double(failure.sequence)), "violations": .array(failure.violations.map { $0.json() })]
                }),
            ]
            object["spec"] = id.map { .string($0) } ?? .null
            return .object(object)
        }
        return [
            "recording": .string(recording),
            "specs_directory": .string(specsDirectory),
            "checked": .number(Double(checkedCount)),
            "passed": .number(Double(checkedCount - failedCount)),
            "failed": .number(Double(failedCount)),
            "out_of_scope": .number(Double(outOfScope)),
            "ok": .bool(failedCount == 0 && unreadable.isEmpty && recordingComplete),
            "recorded": .number(Double(recordedCount)),
            "seq_gaps": .array(sequenceGaps.map { ["from": .number(Double($0.from)), "to": .number(Double($0.to))] }),
            "specs": .array(orderedIDs.map { tallyJSON($0, tallies[$0] ?? Tally()) }),
            "unmatched": tallyJSON(nil, unmatched),
            "not_covered": [
                "count": .number(Double(notCoveredCount)), "require_spec": .bool(requireSpec),
                "by_identity": .array(notCovered.keys.sorted().map { ["identity": .string($0), "pushes": .number(Double(notCovered[$0] ?? 0))] }),
                "failures": tallyJSON(nil, notCoveredFailures),
            ],
            "unreadable_lines": .array(unreadable.map { ["line": .number(Double($0.line)), "problem": .string($0.problem)] }),
        ]
    }
}

/// Reads a file line by line with getline(3): one line in memory at a time.
final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0
    private(set) var error: String?

    init(path: String) throws {
        if path == "-" {
            guard let input = fdopen(dup(0), "r") else { throw FileError(path: path, reason: "cannot read standard input") }
            file = input
        } else {
            guard let opened = fopen(path, "r") else {
                throw FileError(path: path, reason: String(cString: strerror(errno)))
            }
            file = opened
        }
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line without its newline; nil at the end (or on a read error, see `error`).
    func next() -> [UInt8]? {
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else {
            if ferror(file) != 0 { error = "read error: \(String(cString: strerror(errno)))" }
            return nil
        }
        var length = count
        if length > 0, buffer[length - 1] == 0x0A { length -= 1 }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
