import Clocks
import Driver
import Foundation
import JSON
import Metrics
import RecordCheck
import PushModel
import RecordLine
import Reports
import Scenario
import SpecValidator

/// `pushproof check RECORDING…`: judges every recorded request against the push specs, offline
/// (`RecordCheck`), with `--expect` also the deliveries; several recordings (gateway replicas)
/// as one, merged by arrival.
struct CheckCommand: Subcommand {
    static let spec = CommandSpec(
        name: "check",
        abstract: "Judge every request of a recording (or of several replicas', as one) against the push specs; exit 1 on violations.",
        positionals: ["RECORDING…"],
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
            .value("replica-names", "NAME,…", "What findings call each RECORDING, in order (default: each file's name)."),
            .value("gone-grace-ms", "MS", "A push to a token that arrives this soon after a gateway answered it gone passes: "
                   + "the sender hears the answer only then, and what it decided before (an overlapping call) is on its way.",
                   default: "1000"),
        ],
        discussion: """
        RECORDING is a file written by 'pushproof serve --record' ('-' reads standard input).
        Several recordings (replicas of one gateway configuration behind a load balancer) are
        judged as one: merged by arrival time (arrival_ns, each gateway's clock: one machine's, or
        as close as NTP keeps them), each finding naming its recording (--replica-names, or the
        file's name) and seq; seq gaps are judged per recording.
        With --expect, the pushes the gateway accepted (2xx) are also compared with the listed
        deliveries: a listed one that is missing or repeated, or a push to a device (or of a spec)
        not listed, fails the check.
        A push is judged by the specs of the product that claims it by its identity (the APNs
        topic's bundle id, the FCM project in the path; specset.json's config). A push no product
        claims is not covered by any spec: counted apart, by topic or project, and not a failure
        unless --require-spec is given. The gateway's own findings (the record's
        gateway_warnings: what breaks a rule Apple, Google or an RFC states) fail every push they
        are on, covered or not; its informational notes (gateway_notes: what the RFCs allow, such
        as a float iat) are listed and counted, and never fail.
        Two rules span the whole traffic, every connection and every recording: no push to a
        token a gateway answered gone (APNs 410 Unregistered or ExpiredToken, FCM 404
        UNREGISTERED) that arrived more than --gone-grace-ms after that answer, whichever replica answered it (a 2xx from
        the same gateway later means it holds the token live again); and provider-token updates
        per team as Apple counts them: a new provider token (kid, iss, iat as recorded) within 20
        minutes of the team's previous new one on another replica is TooManyProviderTokenUpdates,
        though each replica alone saw one token (a sender whose replicas each mint their own token
        trips it; what one gateway saw, it answered by the same rule itself).
        Both fail the check, and are a testcase each in --junit.
        The recording itself is checked too: a jump in seq means the gateway lost lines (e.g. on
        a full disk), and fails; seq going back to 1 is a new run appended (--record-append). An
        empty recording is warned about (--min-requests N fails it). Where the gateway stored a
        verdict (serve --specs) that differs from today's, one line says how many (the specs
        changed since); that alone is not a failure.
        Exit status: 0 when every request passes its spec (and the deliveries match), 1 when any
        violates one (or its product has no spec for it, or it carries gateway warnings, or the
        deliveries differ, or seq has gaps, or fewer than --min-requests were recorded, or a rule
        over the traffic is broken), 2 when
        the recording, the specs or the expectations cannot be read (unreadable lines, such as
        a record version this pushproof does not read, are listed), 64 on a usage error.

        EXAMPLE:
          pushproof check out/record.jsonl --junit out/conformance.xml --json out/conformance.json
          pushproof check gw-0/record.jsonl gw-1/record.jsonl --replica-names gw-0,gw-1
        """)

    let recordingPaths: [String]
    let replicaNames: [String]
    /// What the report and the warnings call the recording(s).
    var recordingDescription: String { recordingPaths.joined(separator: ", ") }
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
    let goneGraceMilliseconds: Int

    init(_ arguments: ParsedArguments) throws {
        recordingPaths = arguments.positionals
        if recordingPaths.filter({ $0 == "-" }).count > 1 { throw UsageError(message: "'-' (standard input) can be given once") }
        if let names = arguments.value("replica-names") {
            replicaNames = names.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard replicaNames.count == recordingPaths.count else {
                throw UsageError(message: "--replica-names names \(Format.counted(replicaNames.count, "recording")); "
                                 + "\(recordingPaths.count) given")
            }
            guard !replicaNames.contains(where: \.isEmpty), Set(replicaNames).count == replicaNames.count else {
                throw UsageError(message: "--replica-names: each recording needs its own, non-empty name")
            }
        } else {
            replicaNames = Recording.names(paths: recordingPaths)
        }
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
        goneGraceMilliseconds = try arguments.int("gone-grace-ms", default: 1000, range: 0...3_600_000)
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
        var recordings: [Recording] = []
        do {
            for (path, name) in zip(recordingPaths, replicaNames) {
                recordings.append(Recording(name: name, path: path, lines: try LineReader(path: path)))
            }
        } catch {
            printError("pushproof check: \(error)")
            return ExitCode.ioError
        }
        if !quiet { print(specsLocation.description) }
        var check = RecordCheck(specs: specs, maxFailures: maxFailures, minRequests: minRequests, requireSpec: requireSpec, timing: timing)
        check.goneGraceNanoseconds = UInt64(goneGraceMilliseconds) * 1_000_000
        let checked = check.run(recordings) { request, verdict, sequence in
            if expectations != nil { deliveries.add(request, spec: verdict.specID, sequence: sequence) }
        }
        let result = checked.result
        if checked.isEmpty {
            printError("pushproof check: warning: \(recordingDescription) \(recordingPaths.count == 1 ? "holds" : "hold") no requests: "
                       + "the gateway\(recordingPaths.count == 1 ? "" : "s") recorded nothing"
                       + (minRequests > 0 ? "" : " (--min-requests N makes this a failure)"))
        }

        let comparison = expectations.map { deliveries.compare(with: $0) }
        if !quiet { print(result.summaryText(), terminator: "") }
        if let unclaimed = checked.unclaimedMessage {
            // Passing with nothing judged would be a false pass: the specs, not the pushes, are wrong.
            printError("pushproof check: \(unclaimed)")
            return ExitCode.ioError
        }
        if let line = checked.storedVerdicts.summaryLine, !quiet { print("\n" + line) }
        if let comparison, let expectPath, !quiet {
            print(comparison.text(path: expectPath, maxListed: max(maxFailures, 20)), terminator: "")
        }
        if let costs = checked.costs { print(costs.text(), terminator: "") }
        let report = checked.json(recording: recordingDescription, specsDirectory: specsDirectory,
                                  deliveries: comparison.map { ($0.json(path: expectPath ?? ""), $0.passed) })
        var totals = result.totalsLine
        if let comparison {
            totals += comparison.passed ? "; deliveries as expected"
                : "; deliveries: \(comparison.missing.count) missing, \(comparison.unexpected.count) unexpected, \(comparison.repeated.count) repeated"
        }
        print(totals)
        do {
            let extra = comparison.map { [$0.junitTestcase(path: expectPath ?? "")] } ?? []
            if let junitPath {
                try createParentDirectory(of: junitPath)
                try Data(result.junitXML(extra: extra).utf8).write(to: URL(fileURLWithPath: junitPath))
            }
            if let jsonPath {
                try createParentDirectory(of: jsonPath)
                try Data(report.serialized().utf8 + [0x0A]).write(to: URL(fileURLWithPath: jsonPath))
            }
        } catch {
            printError("pushproof check: cannot write a report: \(error.localizedDescription)")
            return ExitCode.ioError
        }
        if checked.hasUnreadableLines { return ExitCode.ioError }
        return checked.failed || comparison?.passed == false ? ExitCode.failure : ExitCode.success
    }
}
