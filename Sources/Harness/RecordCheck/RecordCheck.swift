// `pushproof check RECORDING…`'s judging: every recorded request against the push specs, and the
// recording itself (its seq numbers, its stored verdicts), into a `RecordCheckReport`.
import Clocks
import JSON
import RecordLine
import SpecValidator

/// Judges a recording, or several as one, streamed one line at a time (one line in memory per
/// recording), so millions of lines check in bounded memory.
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
        run([Recording(name: "", path: "", lines: lines)], judged: judged)
    }

    /// Several recordings (gateway replicas with one configuration) judged as one, merged by
    /// arrival (`ArrivalOrderMerge`): each request against its spec, each recording's seq apart,
    /// and the rules over the whole traffic (`GoneTokenPushes`, `ProviderTokenUpdatesAcrossReplicas`)
    /// across all of them. With more than one, every finding names its recording. One pending line
    /// per recording is held.
    public func run(_ recordings: [Recording], judged: (RecordedExchange, SpecVerdict, Int) -> Void = { _, _, _ in }) -> RecordCheckReport {
        var result = CheckResult(specIDs: specs.specs.map(\.id), maxFailures: maxFailures, requireSpec: requireSpec)
        var costs = ValidationCosts()
        var sequences = SequenceCheck()
        var storedVerdicts = StoredVerdictDifferences()
        let named = recordings.count > 1
        var recorded = Array(repeating: 0, count: recordings.count)
        let readers = recordings.map { RecordingItems($0.lines) }
        var merge = ArrivalOrderMerge(readers.map { reader in { reader.next() } }, arrival: \.arrivalNanos)
        while let (index, item) = merge.next() {
            let replica = named ? recordings[index].name : nil
            guard case .request(var request, let lineNumber) = item.kind else {
                if case .unreadable(let lineNumber, let problem) = item.kind {
                    result.noteUnreadable(line: lineNumber, problem: problem, replica: replica)
                }
                continue
            }
            request.readToken()
            result.recordedCount += 1
            recorded[index] += 1
            if let sequence = request.sequence { sequences.add(sequence, recording: index, replica: replica) }
            // Only the judge call is timed: reading and decoding the record line is the
            // recording's cost, not validation's.
            let started = timing ? SystemClock.monotonicNanoseconds() : 0
            let verdict = specs.judge(route: request.route, method: request.method, path: request.path,
                                      headers: request.headers, body: request.body)
            if timing { costs.add(SystemClock.monotonicNanoseconds() - started, spec: verdict.outOfScope ? nil : (verdict.specID ?? "(unmatched)")) }
            let place = RecordPlace(replica: replica, sequence: request.sequence ?? lineNumber)
            result.add(verdict, gatewayWarnings: request.gatewayWarnings, gatewayNotes: request.gatewayNotes, at: place)
            storedVerdicts.compare(stored: request.verdict, computed: verdict, at: place)
            result.goneTokenPushes.observe(request, at: place, arrivalNanos: request.arrivalNanos)
            result.providerTokenUpdates.observe(request, at: place, arrivalNanos: request.arrivalNanos)
            judged(request, verdict, place.sequence)
        }
        result.sequenceGaps = sequences.gaps
        result.missingLines = sequences.missingLines
        result.minRequests = minRequests
        if named { result.replicas = recordings.indices.map { (recordings[$0].name, recordings[$0].path, recorded[$0]) } }
        return RecordCheckReport(result: result, costs: timing ? costs : nil, storedVerdicts: storedVerdicts,
                                 unclaimedMessage: storedVerdicts.unclaimedMessage(config: specs.config))
    }
}

/// One recording of those a check reads as one, and the name its findings carry.
public struct Recording {
    /// The replica's name in findings (`gw-b #12`): `--replica-names`, or the file's name.
    public var name: String
    public var path: String
    public var lines: LineReader

    public init(name: String, path: String, lines: LineReader) {
        self.name = name
        self.path = path
        self.lines = lines
    }

    /// Names for `paths`: each file's name, or the path as given where two share a name
    /// (`a/record.jsonl`, `b/record.jsonl`); `-` is `stdin`.
    public static func names(paths: [String]) -> [String] {
        let base = paths.map { $0 == "-" ? "stdin" : String($0.split(separator: "/").last ?? Substring($0)) }
        return paths.indices.map { base.firstIndex(of: base[$0]) != base.lastIndex(of: base[$0]) ? paths[$0] : base[$0] }
    }
}

/// A recording's lines, decoded, each with the arrival time it merges by: a line without
/// `arrival_ns` (a hand-made file), or one that cannot be read, takes the time of the line before
/// it, so it keeps its place in its file.
final class RecordingItems {
    struct Item {
        enum Kind {
            case request(RecordedExchange, line: Int)
            case unreadable(line: Int, problem: String)
        }
        var kind: Kind
        var arrivalNanos: UInt64
    }

    private let lines: LineReader
    private var lineNumber = 0
    private var lastArrival: UInt64 = 0
    private var ended = false

    init(_ lines: LineReader) { self.lines = lines }

    func next() -> Item? {
        while !ended, let read = lines.next() {
            lineNumber += 1
            guard case .text(let line) = read else {
                if case .tooLong(let bytes) = read {
                    return Item(kind: .unreadable(line: lineNumber, problem: "a line of \(bytes) bytes, over the \(LineReader.maxLineBytes >> 20) MiB "
                                                  + "a record line can hold: skipped unread"), arrivalNanos: lastArrival)
                }
                continue
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            do {
                let request = try RecordedExchange(decoding: line)
                if let arrival = request.arrivalNanos { lastArrival = arrival }
                return Item(kind: .request(request, line: lineNumber), arrivalNanos: lastArrival)
            } catch {
                return Item(kind: .unreadable(line: lineNumber, problem: error.description), arrivalNanos: lastArrival)
            }
        }
        guard !ended else { return nil }
        ended = true
        return lines.error.map { Item(kind: .unreadable(line: lineNumber + 1, problem: $0), arrivalNanos: lastArrival) }
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
    public var failed: Bool { result.failedCount > 0 || !result.recordingComplete || !result.trafficRulesPassed }

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
