import Crypto
import Driver
import Foundation
import JSON
import MockGateway
import RemoteGateway
import Reports
import Scenario
import ScenarioLoad
import ScenarioRunner

/// `pushproof drive --scenario FILE`: a scenario's events through a sender (``ScenarioSenderChoice``)
/// against the embedded gateway, measured by ``ScenarioLoad`` into the Driver's report, so
/// thresholds, baselines and report files are those of the built-in workloads.
struct ScenarioDrive: Subcommand {
    static var spec: CommandSpec { DriveCommand.spec }

    /// The options only a scenario run takes.
    static let specs: [OptionSpec] = [
        .value("scenario", "FILE", "Play this scenario's events instead of a built-in workload (Specs/scenarios/README.md)."),
        .value("settle-ms", "MS", "With --scenario: the run ends once every expected push arrived and none came for this long.",
               default: "50"),
        .value("drain-timeout-ms", "MS", "With --scenario: the longest the end waits for pushes still expected.", default: "10000"),
        eventsInFlightSpec(default: "64 with --rate (open model: events come on schedule, as users send them), "
                           + "1 without (closed: each event's pushes answered before the next)"),
    ] + ScenarioSpecs.options(prefix: "With --scenario: ") + ScenarioSenderChoice.specs

    /// `--events-in-flight`, for drive and plan.
    static func eventsInFlightSpec(default text: String) -> OptionSpec {
        .value("events-in-flight", "N", "With --scenario: the most events whose pushes are still being delivered. Events are "
               + "handed to the sender one at a time and in order (so it decides a call's answer after its ring), but "
               + "the pushes of overlapping events reach the gateway in any order between them. An adapter answers "
               + "once it accepted an event, so it overlaps events whatever this says.", default: text)
    }

    /// The open model's default: enough for a storm of 20 messages/s at a few hundred ms each
    /// to keep up, few enough that a sender that cannot is seen falling behind its schedule.
    static let openModelEventsInFlight = 64

    /// What a built-in workload takes and a scenario does not: the scenario brings its people,
    /// devices and token states, and the embedded gateway makes its own credentials.
    static var builtInOnly: [String] {
        ["members", "duration", "count", "concurrency", "warm-up", "time-limit", "drop-after", "transport", "devices",
         "gone-tokens"] + SenderOptions.specs.map(\.name).filter { !ScenarioLoadGateway.optionNames.contains($0) }
    }

    let path: String
    let specs: ScenarioSpecs
    let options: ScenarioLoadOptions
    let senderChoice: ScenarioSenderChoice
    let gateway: ScenarioLoadGateway
    let reporting: LoadReportOptions
    let scaleOut: DriveSegmentOptions

    /// `drive ring-fanout` with a scenario-only option is a mistake worth naming.
    static func rejectScenarioOptions(_ arguments: ParsedArguments) throws(UsageError) {
        if let stray = specs.map(\.name).first(where: { arguments.value($0) != nil }) {
            throw UsageError(message: "--\(stray) goes with --scenario")
        }
    }

    init(_ arguments: ParsedArguments) throws {
        path = arguments.value("scenario")!
        if let workload = arguments.positionals.first {
            throw UsageError(message: "--scenario replaces the built-in workload '\(workload)': give one of them")
        }
        if let stray = Self.builtInOnly.first(where: { arguments.value($0) != nil || arguments.has($0) }) {
            throw UsageError(message: "--\(stray) is for the built-in workloads; a scenario brings its own people, devices and gateway")
        }
        specs = ScenarioSpecs(arguments)
        var options = ScenarioLoadOptions()
        options.rate = try DriveCommand.double(arguments, "rate", range: 0.001...10_000_000)
        options.stages = try DriveCommand.stages(arguments)
        options.lateAfter = .milliseconds(try arguments.int("late-after", default: 10, range: 0...3_600_000))
        options.settleMilliseconds = try arguments.int("settle-ms", default: 50, range: 0...60_000)
        options.drainTimeoutMilliseconds = try arguments.int("drain-timeout-ms", default: 10_000, range: 10...3_600_000)
        options.eventsInFlight = try arguments.int("events-in-flight", default: options.isOpenModel ? Self.openModelEventsInFlight : 1,
                                                   range: 1...100_000)
        scaleOut = try DriveSegmentOptions(arguments)
        if scaleOut.segment.segmentCount > 1 { options.segment = scaleOut.segment }
        if options.segment != nil, !options.isOpenModel, arguments.value("sender-cmd") != nil {
            throw UsageError(message: "--segment with --sender-cmd needs --rate or --stages: each event is handed over by one "
                             + "segment, and the others time its pushes from its intended time, which only a schedule gives")
        }
        options.plannedStart = scaleOut.plannedStart
        self.options = options
        senderChoice = try ScenarioSenderChoice(arguments)
        gateway = try ScenarioLoadGateway(arguments)
        reporting = try LoadReportOptions(arguments)
    }

    /// The scenario and the specs its gateway judges against (named on the first line); nil
    /// once it said why not.
    static func load(_ path: String, specs: ScenarioSpecs, command: String) -> (Scenario, SpecJudge)? {
        do {
            let loaded = (try RunCommand.load(path), try specs.load())
            printNow(specs.location.description)
            return loaded
        } catch {
            printError("pushproof \(command): \(error)")
            return nil
        }
    }

    func run() async -> Int32 {
        let inputs: LoadReportOptions.Inputs
        switch reporting.readInputs(command: "drive") {
        case .success(let read): inputs = read
        case .failure(let status): return status.code
        }
        guard let (scenario, judge) = Self.load(path, specs: specs, command: "drive") else { return ExitCode.ioError }
        let sender = senderChoice.make(scenarioFile: path)
        if !reporting.quiet {
            let pace = (options.stages.map { "open, events \($0.description)" }
                ?? options.rate.map { "open \(Format.significant($0)) events/s" } ?? "closed, events back to back")
                + ", at most \(options.eventsInFlight) in flight"
            printNow("pushproof drive --scenario \(scenario.name): \(scenario.events.count) events, \(scenario.people.count) people, "
                     + "\(pace), through \(senderChoice.description) against \(gateway.description)")
        }
        let counters = ProgressCounters(total: min(scenario.events.count, options.stages?.iterationCount ?? .max),
                                        plannedSeconds: options.stages.map(\.durationSeconds)
                                            ?? options.rate.map { Double(scenario.events.count) / $0 })
        let progress = TerminalProgress.start(counters, unit: "events", quiet: reporting.quiet)
        let metrics: MetricsStream?
        do {
            metrics = try reporting.metricsOutPath.map { try MetricsStream(path: $0, counters: counters) }
        } catch {
            await progress?.stop()
            printError("pushproof drive: --metrics-out: \(error)")
            return ExitCode.ioError
        }
        let result: ScenarioLoadResult
        let abortedBy: String?
        do {
            let (gateway, options) = (self.gateway, self.options)
            let live = reporting.abortOnFail ? LiveThresholds(inputs.thresholds.withScenarioDefaults().thresholds) : nil
            (result, abortedBy) = try await runAbortingOnFail(live, counters: counters) {
                try await gateway.run(scenario, judge: judge, sender: sender, options: options, progress: counters)
            }
            await progress?.stop()
            await metrics?.stop()
        } catch {
            await progress?.stop()
            await metrics?.stop()
            printError("pushproof drive: \(error)")
            return ExitCode.failure
        }
        var summary = result.summary
        if let abortedBy { summary.notes.append(abortedBy) }
        // After the run: an adapter names itself in its `hello`.
        summary.sender = senderChoice.identity(of: sender, gatewaySharesMachine: gateway.sharesMachine)
        summary.notes.append("token cleanup: \(summary.counts.tokensRemoved) pushes answered gone or bad; "
                             + "\(result.cleanup.filter(\.passed).count) of \(result.cleanup.count) rules held")
        let extra: JSONObject = [
            "token_cleanup": [
                "tokens_removed": .number(Double(summary.counts.tokensRemoved)),
                "passed": .bool(result.cleanup.allSatisfy(\.passed)),
                "rules": .array(result.cleanup.map { finding in
                    ["rule": .string(finding.rule), "passed": .bool(finding.passed), "problems": .array(finding.problems.map(JSONValue.string))]
                }),
            ],
            "unexpected_pushes": .number(Double(result.unexpectedPushes)),
            "aborted": result.aborted.map(JSONValue.string) ?? .null,
        ]
        var scenarioInputs = inputs
        scenarioInputs.thresholds = inputs.thresholds.withScenarioDefaults()
        var files = ReportFiles(command: "drive")
        if let resultPath = scaleOut.resultPath {
            let share = ScenarioSegment(scaleOut.segment, scenario: scenario)
            let segmentResult = SegmentResult(
                identity: identity(scenarioFile: path), segment: scaleOut.segment,
                plannedStart: scaleOut.plannedStart?.unixMilliseconds, actualStart: result.actualStartUnixNanoseconds,
                devicesOwned: share.ownedDevices, devicesTotal: share.totalDevices, run: result.measured, summary: summary,
                cleanup: CleanupCounts(tokensRemoved: summary.counts.tokensRemoved),
                senderDetails: ["name": .string(result.sender)], findings: result.findings)
            files.write(resultPath) {
                try Data((try segmentResult.json().serialized() + "\n").utf8).write(to: URL(fileURLWithPath: resultPath))
            }
        }
        let status = reporting.finish(summary, inputs: scenarioInputs, findings: result.findings, extraJSON: extra, command: "drive")
        return files.failed ? ExitCode.ioError : status
    }

    /// What every segment of a scenario run computes alike: the scenario file's bytes, every
    /// option that changes the load, the sender, N, the weights and the start.
    private func identity(scenarioFile: String) -> RunIdentity {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: scenarioFile))).map { [UInt8]($0) } ?? []
        var fields = scaleOut.identityFields
        fields["scenario_sha256"] = SHA256.hexDigest(bytes)
        fields["model"] = options.stages.map { "stages \($0.description)" } ?? options.rate.map { "rate \($0)" } ?? "closed"
        fields["events_in_flight"] = String(options.eventsInFlight)
        fields["late_after_ms"] = String(options.lateAfter.components.seconds * 1000 + options.lateAfter.components.attoseconds / 1_000_000_000_000_000)
        fields["settle_ms"] = String(options.settleMilliseconds)
        fields["drain_timeout_ms"] = String(options.drainTimeoutMilliseconds)
        fields["sender"] = senderChoice.description
        return RunIdentity(fields: fields)
    }
}
