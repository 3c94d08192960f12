// `pushproof check RECORDING`'s judging: every recorded request against the push specs, and the
// recording itself (its seq numbers, its stored verdicts), into a `RecordCheckReport`.
import Clocks
import JSON
import RecordLine
import SpecValidator

/// Judges a recording, streamed one line at a time (one line in memory), so millions of
/// lines check in bounded memory.
public struct RecordCheck {
    public var specs: SpecSet
    /// Failures listed per spec in the summary and reports.
    public var maxFailures: Int
    /// Fewer recorded requests fail the check.
    public var minRequests: Int
    /// Pushes no product claims fail.
    public var requireSpec: Bool
    /// Time each judge call (`check --timing`).
    public var timing: Bool

    public init(specs: SpecSet, maxFailures: Int, minRequests: Int, requireSpec: Bool, timing: Bool) {
        self.specs = specs
        self.maxFailures = maxFailures
        self.minRequests = minRequests
        self.requireSpec = requireSpec
        self.timing = timing
    }

    /// Every line of `lines`; `judged(request, verdict, sequence)` is called for each request
    /// judged (`check --expect` tallies the deliveries there).
    public func run(_ lines: LineReader, judged: (RecordedExchange, SpecVerdict, Int) -> Void = { _, _, _ in }) -> RecordCheckReport {
        var result = CheckResult(specIDs: specs.specs.map(\.id), maxFailures: maxFailures, requireSpec: requireSpec)
        var costs = ValidationCosts()
        var lineNumber = 0
        var sequences = SequenceCheck()
        var storedVerdicts = StoredVerdictDifferences()
        while let read = lines.next() {
            lineNumber += 1
            guard case .text(let line) = read else {
                if case .tooLong(let bytes) = read {
                    result.noteUnreadable(line: lineNumber, problem: "a line of \(bytes) bytes, over the \(LineReader.maxLineBytes >> 20) MiB "
                                          + "a record line can hold: skipped unread")
                }
                continue
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let request: RecordedExchange
            do {
                request = try RecordedExchange(decoding: line)
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
            result.add(verdict, gatewayWarnings: request.gatewayWarnings, gatewayNotes: request.gatewayNotes,
                       sequence: request.sequence ?? lineNumber)
            storedVerdicts.compare(stored: request.verdict, computed: verdict, sequence: request.sequence ?? lineNumber)
            judged(request, verdict, request.sequence ?? lineNumber)
        }
        if let error = lines.error { result.noteUnreadable(line: lineNumber + 1, problem: error) }
        result.sequenceGaps = sequences.gaps
        result.missingLines = sequences.missingLines
        result.minRequests = minRequests
        return RecordCheckReport(result: result, costs: timing ? costs : nil, storedVerdicts: storedVerdicts,
                                 unclaimedMessage: storedVerdicts.unclaimedMessage(config: specs.config))
    }
}

/// What `RecordCheck.run` found.
public struct RecordCheckReport {
    /// The tallies per spec, the recording's own problems.
    public var result: CheckResult
    /// The judge's cost per request, when timed.
    public var costs: ValidationCosts?
    public var storedVerdicts: StoredVerdictDifferences
    /// Why this check judged less than the recording did (another `--spec-config`), if it did:
    /// passing with nothing judged would be a false pass.
    public var unclaimedMessage: String?

    /// No request decoded and no line was unreadable: the gateway recorded nothing.
    public var isEmpty: Bool { result.recordedCount == 0 && result.unreadable.isEmpty }
    /// Lines that could not be read (exit 2).
    public var hasUnreadableLines: Bool { !result.unreadable.isEmpty }
    /// A request violates its spec, or the recording is incomplete.
    public var failed: Bool { result.failedCount > 0 || !result.recordingComplete }

    /// The full result as JSON (`check --json`); `deliveries`: the `--expect` comparison's
    /// object and whether it passed.
    public func json(recording: String, specsDirectory: String, deliveries: (json: JSONValue, passed: Bool)?) -> JSONValue {
        var report = result.report(recording: recording, specsDirectory: specsDirectory)
        if let deliveries, case .object(var object) = report {
            object["deliveries"] = deliveries.json
            if !deliveries.passed { object["ok"] = false }
            report = .object(object)
        }
        if case .object(var object) = report, storedVerdicts.count > 0 {
            object["stored_verdicts_differ"] = storedVerdicts.json()
            report = .object(object)
        }
        if let costs, case .object(var object) = report {
            object["timing"] = costs.json()
            report = .object(object)
        }
        return report
    }
}
