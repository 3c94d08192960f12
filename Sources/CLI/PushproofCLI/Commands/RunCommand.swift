import Driver
import Foundation
import JSON
import MockGateway
import RemoteGateway
import Reports
import Scenario
import ScenarioRunner

/// `pushproof run SCENARIO…`: plays scenarios through a sender against an embedded gateway and
/// judges every event's deliveries and the sender's token cleanup.
struct RunCommand: Subcommand {
    static let spec = CommandSpec(
        name: "run",
        abstract: "Play scenarios through a sender against an embedded gateway; a verdict per event and per cleanup rule.",
        positionals: ["SCENARIO…"],
        options: [
            .value("settle-ms", "MS", "An event is answered once its expected pushes are accepted and no request came for this long.",
                   default: "50"),
            .value("event-timeout-ms", "MS", "The longest an event may take to reach its expected count.", default: "10000"),
            .value("time-limit", "SECONDS", "The longest one scenario may take; past it the run stops after the event in progress "
                   + "(the scenario fails, its reports written). Default: none."),
            .value("json", "FILE", "Also write the report as JSON."),
            .value("junit", "FILE", "Also write a JUnit file: a testcase per event and per token-cleanup rule."),
            .value("html", "FILE", "Also write a self-contained HTML report: the per-event table and a token-cleanup timeline."),
            .value("record", "FILE", "Keep the gateway's recording (for pushproof check and show)."),
            .flag("timing", "Print where each scenario's time went: sending, settling, judging (also in --json as timing)."),
            .value("gateway", "URL", "Play against this pushproof serve instead of the embedded gateway (needs --admin, credentials, "
                   + "and --ca for https://; http:// is a serve --h2c)."),
            .value("admin", "URL", "That gateway's control API: token states and faults are set, and what arrived is read, through it. "
                   + "Repeat it (or give a name that resolves to several addresses, as a headless Service's does) for replicas "
                   + "of one configuration: each is set alike, and every one's journal is read.", repeatable: true),
            .value("ca", "FILE", "The gateway's TLS certificate (PEM) to trust."),
            .value("token-url", "URL", "The OAuth token endpoint.", default: "<gateway>/token"),
            .value("apns-key", "FILE", "APNs .p8 signing key (provider token auth)."),
            .value("key-id", "ID", "APNs key id (kid)."),
            .value("team-id", "ID", "APNs team id (iss)."),
            .value("service-account", "FILE", "Google service account JSON (FCM OAuth)."),
            .flag("quiet", "Print only failures and the summary (and no progress line)."),
        ] + ScenarioSpecs.options() + ScenarioSenderChoice.specs,
        discussion: """
        SCENARIO is a scenario file (Specs/scenarios/README.md) or a folder of them (*.json, in name order).
        With --sender-cmd, each scenario starts CMD afresh: hello, setup, an event request per
        event, shutdown. Its stderr is forwarded prefixed "[sender] ". A missing reply, a line
        that is not JSON, a wrong id, "ok": false or an exit mid-run stops the run (exit 1),
        the reports and recording so far written, the reason in each.
        The gateway is the mock, in this process: loopback, TLS with generated test credentials,
        strict APNs and FCM auth, every push judged against the specs. With --gateway, a
        pushproof serve started with --specs, --admin and a config trusting the credentials given
        (pushproof credentials): run resets it (POST /reset), sets token states and faults
        through --admin, and reads each event's requests from its journal (GET /requests).
        An http:// --gateway is a pushproof serve --h2c (no --ca); the sender is told h2c.
        Events are played one at a time, each settled before the next: verdicts are per event.
        Exit status: 0 every event and cleanup rule passed; 1 one failed; 2 a scenario or the specs
        could not be read; 64 usage.

        EXAMPLES:
          pushproof run Specs/scenarios
          pushproof run my-workspace.json --junit out/scenarios.xml --record out/record.jsonl
          pushproof run Specs/scenarios --sender-cmd 'pushproof adapter'
        """)

    let paths: [String]
    /// The reference sender, or `--sender-cmd`'s adapter started per scenario.
    let senderChoice: ScenarioSenderChoice
    let specs: ScenarioSpecs
    let options: RunOptions
    let jsonPath: String?
    let junitPath: String?
    let htmlPath: String?
    let recordPath: String?
    let timing: Bool
    let quiet: Bool
    /// `--gateway`: the pushproof serve to play against, and how (nil: the embedded gateway).
    let external: (replicas: GatewayReplicas, access: GatewayAccess)?

    init(_ arguments: ParsedArguments) throws {
        paths = arguments.positionals
        senderChoice = try ScenarioSenderChoice(arguments)
        specs = ScenarioSpecs(arguments)
        var options = RunOptions()
        options.settleMilliseconds = try arguments.int("settle-ms", default: 50, range: 0...60_000)
        options.eventTimeoutMilliseconds = try arguments.int("event-timeout-ms", default: 10_000, range: 10...600_000)
        if arguments.value("time-limit") != nil {
            options.timeLimit = .seconds(try arguments.int("time-limit", default: 0, range: 1...31_536_000))
        }
        self.options = options
        jsonPath = arguments.value("json")
        junitPath = arguments.value("junit")
        htmlPath = arguments.value("html")
        recordPath = arguments.value("record")
        timing = arguments.has("timing")
        quiet = arguments.has("quiet")
        external = try GatewayOptions.external(arguments)
        if external != nil, recordPath != nil {
            throw UsageError(message: "--record keeps the embedded gateway's recording; with --gateway, the gateway records (serve --record)")
        }
    }

    /// The scenario files named: files as given, folders' `*.json` in name order.
    static func scenarioFiles(_ paths: [String]) throws(FileError) -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw FileError(path: path, reason: "no such file or folder")
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                files += names.filter { $0.hasSuffix(".json") }.sorted().map { (path as NSString).appendingPathComponent($0) }
            } else {
                files.append(path)
            }
        }
        return files
    }

    static func load(_ path: String) throws(FileError) -> Scenario {
        let text = try readText(path)
        do {
            return try Scenario(json: Array(text.utf8), name: path)
        } catch {
            throw FileError(path: path, reason: error.description)
        }
    }

    func run() async -> Int32 {
        let scenarioFiles: [String]
        let scenarios: [Scenario]
        let judge: SpecJudge
        do {
            scenarioFiles = try Self.scenarioFiles(paths)
            scenarios = try scenarioFiles.map { path throws(FileError) in try Self.load(path) }
        } catch {
            printError("pushproof run: \(error)")
            return ExitCode.ioError
        }
        if scenarios.isEmpty {
            printError("pushproof run: no scenario files in \(paths.joined(separator: ", "))")
            return ExitCode.ioError
        }
        do {
            judge = try specs.load()
        } catch {
            printError("pushproof run: \(error)")
            return ExitCode.ioError
        }
        print(specs.location.description)
        var record: RecordFile?
        if let recordPath {
            do {
                try createParentDirectory(of: recordPath)
                record = try RecordFile(path: recordPath)
            } catch {
                printError("pushproof run: \(error)")
                return ExitCode.ioError
            }
        }
        var reports: [ScenarioReport] = []
        let counters = ProgressCounters(total: scenarios.reduce(0) { $0 + $1.events.count }, plannedSeconds: nil,
                                        measuresLatency: false)
        let progress = TerminalProgress.start(counters, unit: "events", quiet: quiet)
        for (file, scenario) in zip(scenarioFiles, scenarios) {
            do {
                let report: ScenarioReport
                let made = senderChoice.make(scenarioFile: file)
                let sender = progress == nil ? made : ProgressSender(sender: made, counters: counters)
                if let external {
                    report = try await ScenarioRunner.run(scenario, judge: judge, sender: sender, options: options) {
                        opening throws(GatewayStartError) in
                        try ExternalGateway(replicas: external.replicas, access: external.access, opening: opening)
                    }
                } else {
                    report = try await ScenarioRunner.run(scenario, judge: judge, sender: sender, options: options, record: record,
                                                          observers: progress == nil ? [] : [ProgressObserver(counters: counters)])
                }
                progress?.clear()
                print(RunReportText.text(report, quiet: quiet), terminator: "")
                if timing { print(RunReportText.timing(report)) }
                reports.append(report)
                // An adapter that broke the protocol says nothing about the next scenario but
                // that it is broken: the run stops here, its reports kept.
                if senderChoice.isAdapter, let aborted = report.aborted {
                    printError("pushproof run: \(scenario.name): stopped: \(aborted)")
                    break
                }
            } catch {
                await progress?.stop()
                printError("pushproof run: \(scenario.name): \(error)")
                record?.close()
                return ExitCode.ioError
            }
        }
        await progress?.stop()
        record?.close()
        if reports.count < scenarios.count {
            print("\nstopped after \(reports.count) of \(scenarios.count) scenarios: the sender failed")
        }
        let failed = reports.filter { !$0.passed }
        let events = reports.reduce(0) { $0 + $1.events.count }
        let failedEvents = reports.reduce(0) { $0 + $1.events.filter { !$0.passed }.count }
        print("\n\(Format.counted(reports.count, "scenario")), \(Format.counted(events, "event")): "
              + (failed.isEmpty ? "all passed"
                                : "\(Format.counted(failed.count, "scenario")) failed, \(Format.counted(failedEvents, "event")) failed"))
        var files = ReportFiles(command: "run")
        if let jsonPath {
            files.write(jsonPath) {
                guard FileManager.default.createFile(atPath: jsonPath, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
                let file = try FileHandle(forWritingTo: URL(fileURLWithPath: jsonPath))
                defer { try? file.close() }
                try RunReportText.json(reports) { try file.write(contentsOf: $0) }
                try file.write(contentsOf: [0x0A])
            }
        }
        files.write(junitPath, RunReportText.junit(reports))
        files.write(htmlPath, RunReportHTML.html(reports))
        if files.failed { return ExitCode.ioError }
        return failed.isEmpty ? ExitCode.success : ExitCode.failure
    }
}
