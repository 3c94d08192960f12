// `check`'s tallies per spec and its reports (text, JSON, JUnit).
import Clocks
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import Reports
import SpecValidator

/// Tallies per spec, and keeps the first failures of each. Pushes no product claims are counted
/// apart (`notCovered`, by topic or project); they fail only with `requireSpec`, or when the
/// gateway noted something on them.
public struct CheckResult {
    public struct Tally {
        public var checked = 0
        public var passed = 0
        public var failures: [(place: RecordPlace, violations: [SpecViolation])] = []
        public var failed = 0
    }

    public static let unmatchedRow = "(unmatched)"
    public static let notCoveredRow = "(not covered)"

    public let specIDs: [String]
    public let maxFailures: Int
    public let requireSpec: Bool
    public var tallies: [String: Tally] = [:]
    /// Claimed pushes no spec of their product recognises.
    public var unmatched = Tally()
    /// Pushes no product claims that failed anyway (`requireSpec`, gateway warnings).
    public var notCoveredFailures = Tally()
    /// Every push no product claims, by what it carried (`UncoveredRequest.label`).
    public var notCovered: [String: Int] = [:]
    public var outOfScope = 0
    /// Unreadable lines: all counted, the first 20 kept (`replica`: their recording, when several).
    public var unreadable = FirstExamples<(line: Int, problem: String, replica: String?)>()
    /// Lines that decoded as requests (judged or out of scope).
    public var recordedCount = 0
    /// `--min-requests`: fewer recorded requests fail the check.
    public var minRequests = 0
    /// Jumps in `seq`: lines the gateway lost.
    public var sequenceGaps = FirstExamples<SequenceCheck.Gap>()
    /// Lines missing over all forward gaps.
    public var missingLines = 0
    /// The gateway's informational notes (`verdict.gateway_notes`: what the RFCs allow), by
    /// text, with the first request each was on: shown and counted, never a failure.
    public var informational: [String: (count: Int, first: RecordPlace)] = [:]
    /// The recordings checked as one, with the requests each held; empty for one recording.
    public var replicas: [(name: String, path: String, recorded: Int)] = []
    /// Pushes to a token a replica answered gone (`GoneTokenPushes`).
    public var goneTokenPushes = GoneTokenPushes()
    /// New provider tokens a team brought too soon over all connections (`ProviderTokenUpdatesAcrossReplicas`).
    public var providerTokenUpdates = ProviderTokenUpdatesAcrossReplicas()

    /// The record holds what was asked of it: no lost lines, at least `minRequests` requests.
    public var recordingComplete: Bool { sequenceGaps.isEmpty && recordedCount >= minRequests }
    /// No rule over the whole traffic broken (gone tokens, provider-token updates).
    public var trafficRulesPassed: Bool { goneTokenPushes.findings.isEmpty && providerTokenUpdates.findings.isEmpty }

    /// Why the recording itself fails, one sentence each.
    public var recordingProblems: [String] {
        var problems = sequenceGaps.first.map(\.description)
        if sequenceGaps.count > sequenceGaps.first.count {
            problems.append("… and \(sequenceGaps.count - sequenceGaps.first.count) more seq gaps")
        }
        if recordedCount < minRequests {
            problems.append("only \(Format.counted(recordedCount, "request")) recorded, --min-requests \(minRequests)")
        }
        return problems
    }

    public init(specIDs: [String], maxFailures: Int, requireSpec: Bool = false) {
        self.specIDs = specIDs
        self.maxFailures = maxFailures
        self.requireSpec = requireSpec
    }

    public var failedCount: Int { tallies.values.reduce(0) { $0 + $1.failed } + unmatched.failed + notCoveredFailures.failed }
    public var checkedCount: Int { tallies.values.reduce(0) { $0 + $1.checked } + unmatched.checked + notCoveredFailures.checked }
    public var notCoveredCount: Int { notCovered.values.reduce(0, +) }

    /// `gatewayWarnings`: the record's `verdict.gateway_warnings`, a failure wherever they are;
    /// `gatewayNotes`: its `verdict.gateway_notes`, counted and never a failure.
    public mutating func add(_ verdict: SpecVerdict, gatewayWarnings: [String] = [], gatewayNotes: [String] = [], sequence: Int) {
        add(verdict, gatewayWarnings: gatewayWarnings, gatewayNotes: gatewayNotes, at: RecordPlace(sequence: sequence))
    }

    /// `add`, for the request at `place` (of one of several recordings).
    public mutating func add(_ verdict: SpecVerdict, gatewayWarnings: [String] = [], gatewayNotes: [String] = [], at place: RecordPlace) {
        for note in gatewayNotes {
            let seen = informational[note]
            informational[note] = ((seen?.count ?? 0) + 1, seen?.first ?? place)
        }
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
            if notCoveredFailures.failures.count < maxFailures { notCoveredFailures.failures.append((place, violations)) }
            return
        }
        let id = verdict.specID
        var tally = id.flatMap { tallies[$0] } ?? (id == nil ? unmatched : Tally())
        tally.checked += 1
        if violations.isEmpty {
            tally.passed += 1
        } else {
            tally.failed += 1
            if tally.failures.count < maxFailures { tally.failures.append((place, violations)) }
        }
        if let id { tallies[id] = tally } else { unmatched = tally }
    }

    /// The rows after the specs': set-level tallies, when they hold anything.
    private var extraRows: [(id: String, tally: Tally)] {
        [(Self.unmatchedRow, unmatched), (Self.notCoveredRow, notCoveredFailures)].filter { $0.tally.checked > 0 }
    }

    /// `not covered by any spec: 2647 pushes to com.example.loop`, one line per topic or project, most first.
    public var notCoveredLines: [String] {
        notCovered.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { label, count in
            "not covered by any spec: \(count) push\(count == 1 ? "" : "es") to \(label)"
        }
    }

    public mutating func noteUnreadable(line: Int, problem: String, replica: String? = nil) {
        unreadable.add((line, problem, replica))
    }

    /// `line 3`, or `gw-b line 3` with several recordings.
    private static func lineLabel(_ unreadable: (line: Int, problem: String, replica: String?)) -> String {
        (unreadable.replica.map { "\($0) " } ?? "") + "line \(unreadable.line)"
    }

    /// Specs in file order, then any id seen that the set does not list.
    private var orderedIDs: [String] {
        specIDs + tallies.keys.filter { !specIDs.contains($0) }.sorted()
    }

    public var totalsLine: String {
        var line = "\(checkedCount) requests checked: \(checkedCount - failedCount) passed, \(failedCount) failed"
        if outOfScope > 0 { line += ", \(outOfScope) out of scope" }
        if notCoveredCount > 0 {
            line += ", \(notCoveredCount) not covered by any spec" + (requireSpec ? " (--require-spec: failed)" : "")
        }
        if !unreadable.isEmpty { line += ", " + Format.counted(unreadable.count, "unreadable line") }
        if !sequenceGaps.isEmpty {
            line += ", \(Format.counted(sequenceGaps.count, "seq gap")) (\(missingLines) lines missing)"
        }
        if recordedCount < minRequests { line += ", only \(recordedCount) recorded (--min-requests \(minRequests))" }
        let gone = goneTokenPushes.findings.count, updates = providerTokenUpdates.findings.count
        if gone > 0 { line += ", \(gone) " + (gone == 1 ? "push to a gone token" : "pushes to gone tokens") }
        if updates > 0 { line += ", \(Format.counted(updates, "provider-token update")) too soon" }
        if !replicas.isEmpty { line += " (\(replicas.count) recordings)" }
        return line
    }

    public func summaryText() -> String {
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
                out += "  request \(failure.place)\n"
                for violation in failure.violations { out += "    \(violation.description)\n" }
            }
        }
        if !informational.isEmpty {
            out += "\ngateway notes (informational: what the RFCs allow; never a failure)\n"
            for (note, seen) in informationalSorted {
                out += "  \(Format.counted(seen.count, "request")) (first \(seen.first)): \(note)\n"
            }
        }
        out += Self.findingsText(GoneTokenPushes.name, goneTokenPushes.findings, counted: "push to a gone token", "pushes to gone tokens")
        out += Self.findingsText(ProviderTokenUpdatesAcrossReplicas.name, providerTokenUpdates.findings,
                                 counted: "new provider token too soon", "new provider tokens too soon")
        if !recordingProblems.isEmpty { out += "\n" }
        for problem in recordingProblems { out += "recording incomplete: \(problem)\n" }
        for line in unreadable.first { out += "\(Self.lineLabel(line)): \(line.problem)\n" }
        if unreadable.count > unreadable.first.count {
            out += "… and " + Format.counted(unreadable.count - unreadable.first.count, "more unreadable line") + "\n"
        }
        return out
    }

    /// `extra`: further testcases (the deliveries' comparison).
    public func junitXML(extra: [JUnit.TestCase] = []) -> String {
        var cases: [JUnit.TestCase] = []
        for (id, tally) in orderedIDs.map({ ($0, tallies[$0] ?? Tally()) }) + extraRows {
            let product = id.split(separator: ".").first.map(String.init) ?? "pushproof"
            var testCase = JUnit.TestCase(classname: product, name: id, assertions: tally.checked)
            if tally.checked == 0 {
                testCase.result = .skipped(message: "no recorded request matched this spec")
            } else if tally.failed > 0 {
                var text = ""
                for failure in tally.failures {
                    text += "request \(failure.place)\n"
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
        cases.append(Self.ruleTestcase(GoneTokenPushes.name, findings: goneTokenPushes.findings, judged: goneTokenPushes.judged,
                                       type: "GoneTokenPush"))
        cases.append(Self.ruleTestcase(ProviderTokenUpdatesAcrossReplicas.name, findings: providerTokenUpdates.findings,
                                       judged: providerTokenUpdates.judged, type: "TooManyProviderTokenUpdates"))
        if !unreadable.isEmpty {
            let text = unreadable.first.map { "\(Self.lineLabel($0)): \($0.problem)" }.joined(separator: "\n")
            cases.append(JUnit.TestCase(classname: "pushproof", name: "recording is readable",
                                        result: .failed(type: "UnreadableRecording", message: Format.counted(unreadable.count, "unreadable line"), text: text)))
        }
        if !recordingProblems.isEmpty {
            cases.append(JUnit.TestCase(classname: "pushproof", name: "recording is complete",
                                        result: .failed(type: "IncompleteRecording", message: recordingProblems[0],
                                                        text: recordingProblems.joined(separator: "\n"))))
        }
        return JUnit.document(name: "pushproof check", suites: [JUnit.Suite(name: "pushproof check", cases: cases + extra)])
    }

    public func report(recording: String, specsDirectory: String) -> JSONValue {
        func tallyJSON(_ id: String?, _ tally: Tally) -> JSONValue {
            var object: JSONObject = [
                "checked": .number(Double(tally.checked)), "passed": .number(Double(tally.passed)),
                "failed": .number(Double(tally.failed)),
                "failures": .array(tally.failures.map { failure in
                    var object = JSONObject()
                    failure.place.add(to: &object)
                    object["violations"] = .array(failure.violations.map { $0.json() })
                    return .object(object)
                }),
            ]
            object["spec"] = id.map { .string($0) } ?? .null
            return .object(object)
        }
        var report: JSONObject = [
            "recording": .string(recording),
            "specs_directory": .string(specsDirectory),
            "checked": .number(Double(checkedCount)),
            "passed": .number(Double(checkedCount - failedCount)),
            "failed": .number(Double(failedCount)),
            "out_of_scope": .number(Double(outOfScope)),
            "ok": .bool(failedCount == 0 && unreadable.isEmpty && recordingComplete && trafficRulesPassed),
            "recorded": .number(Double(recordedCount)),
            "seq_gaps": .array(sequenceGaps.first.map { ["from": .number(Double($0.from)), "to": .number(Double($0.to))] }),
            "seq_gap_count": .number(Double(sequenceGaps.count)),
            "missing_lines": .number(Double(missingLines)),
            "specs": .array(orderedIDs.map { tallyJSON($0, tallies[$0] ?? Tally()) }),
            "unmatched": tallyJSON(nil, unmatched),
            "not_covered": [
                "count": .number(Double(notCoveredCount)), "require_spec": .bool(requireSpec),
                "by_identity": .array(notCovered.keys.sorted().map { ["identity": .string($0), "pushes": .number(Double(notCovered[$0] ?? 0))] }),
                "failures": tallyJSON(nil, notCoveredFailures),
            ],
            "unreadable_lines": .array(unreadable.first.map { line in
                var object: JSONObject = ["line": .number(Double(line.line)), "problem": .string(line.problem)]
                if let replica = line.replica { object["replica"] = .string(replica) }
                return .object(object)
            }),
            "unreadable_count": .number(Double(unreadable.count)),
            "gateway_notes": .array(informationalSorted.map { note, seen in
                var object: JSONObject = ["note": .string(note), "requests": .number(Double(seen.count))]
                seen.first.add(to: &object, prefix: "first_")
                return .object(object)
            }),
            "gone_token_pushes": Self.findingsJSON(goneTokenPushes.findings, judged: goneTokenPushes.judged) { $0.json() },
            "provider_token_updates": Self.findingsJSON(providerTokenUpdates.findings, judged: providerTokenUpdates.judged) { $0.json() },
        ]
        if !replicas.isEmpty {
            // Gaps are judged per recording: each numbers its own lines.
            report["seq_gaps"] = .array(sequenceGaps.first.map {
                ["from": .number(Double($0.from)), "to": .number(Double($0.to)), "replica": .string($0.replica ?? "")]
            })
            report["recordings"] = .array(replicas.map {
                ["replica": .string($0.name), "path": .string($0.path), "recorded": .number(Double($0.recorded))]
            })
        }
        return .object(report)
    }

    /// A traffic rule's section of the summary: nothing when it holds.
    private static func findingsText<Finding: CustomStringConvertible>(_ rule: String, _ findings: FirstExamples<Finding>,
                                                                        counted one: String, _ many: String) -> String {
        guard !findings.isEmpty else { return "" }
        var out = "\n\(rule): \(findings.count) \(findings.count == 1 ? one : many)\n"
        for finding in findings.first { out += "  \(finding)\n" }
        if findings.count > findings.first.count { out += "  … and \(findings.count - findings.first.count) more\n" }
        return out
    }

    /// A traffic rule as a testcase: failed with its findings listed, or passed over what it judged.
    private static func ruleTestcase<Finding: CustomStringConvertible>(_ rule: String, findings: FirstExamples<Finding>, judged: Int,
                                                                        type: String) -> JUnit.TestCase {
        var testCase = JUnit.TestCase(classname: "pushproof", name: rule, assertions: judged)
        if !findings.isEmpty {
            testCase.result = .failed(type: type, message: "\(findings.count) of \(judged) requests break it",
                                      text: findings.first.map(\.description).joined(separator: "\n"))
        }
        return testCase
    }

    private static func findingsJSON<Finding>(_ findings: FirstExamples<Finding>, judged: Int, _ json: (Finding) -> JSONValue) -> JSONValue {
        ["judged": .number(Double(judged)), "count": .number(Double(findings.count)), "first": .array(findings.first.map(json))]
    }

    /// The informational notes, the most frequent first.
    public var informationalSorted: [(note: String, seen: (count: Int, first: RecordPlace))] {
        informational.map { ($0.key, $0.value) }.sorted { ($1.seen.count, $0.note) < ($0.seen.count, $1.note) }
    }
}
