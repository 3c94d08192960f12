import Driver
import Clocks
import Foundation
import JSON
import Metrics
import PushModel
import RemoteGateway
import Reports
import Sender
import Synchronization

/// `pushproof drive`: a load run of the reference sender against a gateway, measured by the
/// Driver (HDR histograms, coordinated-omission correction) and judged by thresholds and a
/// baseline (load-testing.md, "CI gating").
struct DriveCommand: Subcommand {
    static let spec = CommandSpec(
        name: "drive",
        abstract: "Load-run a sender: the reference one's group calls and message storms, or a scenario through any sender; thresholds, baselines, reports.",
        positionals: ["ring-fanout|message-storm?"],
        options: [
            .value("members", "N", "People in the group: a call or a message fans out to 2 pushes per other member.", default: "1000"),
            .value("rate", "R", "Open model: iterations per second (ring-fanout: calls/s; message-storm: messages/s; "
                   + "--scenario: events/s).", default: "message-storm 10"),
            .value("duration", "SECONDS", "Open model: how long iterations are started.", default: "10"),
            .value("stages", "LIST", "Open model, ramping (k6's ramping-arrival-rate): DURATION:RATE stages, the rate moving "
                   + "linearly to each stage's RATE over its DURATION (500ms, 30s, 2m, 1h, 1m30s), e.g. 30s:100,2m:1000,30s:0. "
                   + "Instead of --rate and --duration."),
            .value("start-rate", "R", "With --stages: iterations per second at the start.", default: "0"),
            .value("count", "N", "Closed model: measured iterations (ring-fanout: calls).", default: "ring-fanout 5"),
            .value("concurrency", "N", "Closed model: workers, i.e. pushes in flight.", default: "--max-in-flight"),
            .value("warm-up", "SECONDS", "Iterations started this early are sent but not measured.", default: "0"),
            .value("time-limit", "SECONDS", "No push starts after this; in-flight sends are cancelled 10 s later.",
                   default: "open: warm-up + duration + 10; closed: 600"),
            .value("late-after", "MS", "A push sent this late after its intended time counts as late.", default: "10"),
            .value("drop-after", "MS", "Open model: an iteration that cannot start this late is dropped (k6).",
                   default: "never"),
            .value("transport", "apns|fcm|both", "Only push to APNs, or only to FCM.", default: "both"),
            .value("devices", "FILE", "SQLite device store, created if missing.", default: "in memory"),
            .value("admin", "URL", "The gateway's control API: --gone-tokens are marked there, earlier runs' provider tokens forgotten, and spec violations "
                   + "read from its /metrics after the run. Repeat it (or give a name that resolves to several addresses, as a "
                   + "headless Service's does) for replicas: each is set alike, and their counts are added.", repeatable: true),
            .value("gone-tokens", "N", "With --admin: mark N of the group's tokens gone first, to measure token cleanup.",
                   default: "0"),
        ] + DriveSegmentOptions.specs + LoadReportOptions.specs + ScenarioDrive.specs + SenderOptions.specs,
        discussion: """
        SCENARIOS:
          ring-fanout    each iteration is one group call: the rules ring every other member's
                         devices (evaluated per call, so deleted tokens drop out), all due at once.
                         Closed model (--count, --concurrency) unless --rate is given.
          message-storm  each iteration is one message from member 0 to the group: the rules push it
                         to every other member's alert and Android tokens, all due at once.
                         Open model (--rate, --duration) unless --count is given.
          --scenario F   a scenario file (Specs/scenarios/README.md, generated populations
                         included) instead: its events go through the sender (--sender) at
                         --rate events/s, or back to back, up to --events-in-flight delivering at
                         once; every push the embedded gateway answers is matched (token and spec)
                         to the event that caused it. Latency runs from the event's intended time;
                         time to ring all is per event; token cleanup is judged as 'pushproof run'
                         judges it. With --gateway URL --admin URL (and --ca, credentials, as for
                         run), a pushproof serve --specs instead, its arrivals read from its request
                         journal by one long poll (timed by answered_ns: the clocks must agree).

        Needs credentials (--apns-key with --key-id/--team-id, and/or --service-account; 'pushproof
        credentials' writes test ones): without them the sender only logs.
        Exit status: 0 passed; 3 a threshold or baseline bound failed; 1 the run failed (no push
        completed, the sender could not start); 2 a file could not be read or written; 64 usage.

        EXAMPLES:
          pushproof drive ring-fanout --members 10000 --count 10 --h2c --gateway http://127.0.0.1:8080 \\
              --apns-key apns-key.p8 --key-id ABC123DEFG --team-id TEAM123456 --transport apns
          pushproof drive message-storm --rate 20 --duration 30 --threshold 'p99_ms<250' --junit load.xml ...
          pushproof drive --scenario Benchmarks/scenarios/group-call-10000.json --threshold 'time_to_ring_all_ms<2000'
        """)

    enum Scenario: String { case ringFanout = "ring-fanout", messageStorm = "message-storm" }

    let scenario: Scenario
    let options: SenderOptions
    let members: Int
    let plan: LoadPlan
    let transports: Set<PushTransport>
    let devicesPath: String?
    let admin: GatewayReplicas?
    let goneTokens: Int
    let reporting: LoadReportOptions
    let scaleOut: DriveSegmentOptions

    /// `drive ring-fanout|message-storm`, or `drive --scenario FILE` (``ScenarioDrive``).
    static func make(_ arguments: ParsedArguments) throws -> any Subcommand {
        arguments.value("scenario") != nil ? try ScenarioDrive(arguments) : try DriveCommand(arguments)
    }

    init(_ arguments: ParsedArguments) throws {
        guard let name = arguments.positionals.first else {
            throw UsageError(message: "give a workload: ring-fanout, message-storm, or --scenario FILE")
        }
        guard let scenario = Scenario(rawValue: name) else {
            throw UsageError(message: "unknown scenario '\(name)' (ring-fanout or message-storm)")
        }
        try ScenarioDrive.rejectScenarioOptions(arguments)
        self.scenario = scenario
        options = try SenderOptions(arguments)
        guard options.hasCredentials else {
            throw UsageError(message: "drive sends for real: give --apns-key (with --key-id, --team-id) and/or "
                             + "--service-account ('pushproof credentials' writes test ones); without them the sender only logs")
        }
        members = try arguments.int("members", default: 1000, range: 2...1_000_000)

        let rate = try Self.double(arguments, "rate", range: 0.001...10_000_000)
        let duration = try Self.double(arguments, "duration", range: 0.001...86_400)
        let stages = try Self.stages(arguments)
        let count = try arguments.value("count").map { _ throws(UsageError) in try arguments.int("count", default: 0, range: 1...100_000_000) }
        let concurrency = try arguments.value("concurrency").map { _ throws(UsageError) in
            try arguments.int("concurrency", default: 0, range: 1...100_000)
        }
        if rate != nil, count != nil { throw UsageError(message: "--rate (open model) and --count (closed model) exclude each other") }
        if stages != nil, count != nil { throw UsageError(message: "--stages (open model) and --count (closed model) exclude each other") }
        if rate != nil || stages != nil || (scenario == .messageStorm && count == nil) {
            if concurrency != nil { throw UsageError(message: "--concurrency is for the closed model (--count), not --rate") }
        } else if duration != nil {
            throw UsageError(message: "--duration is for the open model (--rate)")
        }
        let model: LoadModel
        if let count {
            model = .closed(concurrency: concurrency ?? options.maxInFlight, count: count)
        } else if let stages {
            model = .open(stages)
        } else if let rate {
            model = .open(ratePerSecond: rate, duration: .milliseconds(Int64((duration ?? 10) * 1000)))
        } else if scenario == .messageStorm {
            model = .open(ratePerSecond: 10, duration: .milliseconds(Int64((duration ?? 10) * 1000)))
        } else {
            model = .closed(concurrency: concurrency ?? options.maxInFlight, count: 5)
        }
        let warmUp = try Self.double(arguments, "warm-up", range: 0...86_400) ?? 0
        let timeLimit = try Self.double(arguments, "time-limit", range: 0.001...864_000)
        let lateAfter = try arguments.int("late-after", default: 10, range: 0...3_600_000)
        let dropAfter = try arguments.value("drop-after").map { _ throws(UsageError) in
            try arguments.int("drop-after", default: 0, range: 0...3_600_000)
        }
        plan = LoadPlan(scenario: scenario.rawValue, model: model, warmUp: .milliseconds(Int64(warmUp * 1000)),
                        maxInFlight: options.maxInFlight, lateAfter: .milliseconds(lateAfter),
                        dropAfter: dropAfter.map { .milliseconds($0) },
                        timeLimit: timeLimit.map { .milliseconds(Int64($0 * 1000)) })
        do {
            try plan.validate()
        } catch {
            throw UsageError(message: error.description)
        }

        transports = try SenderOptions.transports(arguments)
        devicesPath = arguments.value("devices")
        admin = try GatewayOptions.replicas(arguments)
        goneTokens = try arguments.int("gone-tokens", default: 0, range: 0...1_000_000)
        if goneTokens > 0, admin == nil { throw UsageError(message: "--gone-tokens needs --admin (tokens are marked gone there)") }
        if goneTokens > (members - 1) * 2 {
            throw UsageError(message: "--gone-tokens \(goneTokens): a group of \(members) has only \((members - 1) * 2) tokens that get pushes")
        }
        reporting = try LoadReportOptions(arguments)
        scaleOut = try DriveSegmentOptions(arguments)
    }

    static func double(_ arguments: ParsedArguments, _ name: String, range: ClosedRange<Double>) throws(UsageError) -> Double? {
        guard let text = arguments.value(name) else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw UsageError(message: "--\(name) takes a number from \(Format.significant(range.lowerBound)) to "
                             + "\(Format.significant(range.upperBound)), not '\(text)'")
        }
        return value
    }

    /// Workers the runner starts: the deliverer gets at least as many slots, so the target
    /// never waits for one and cancellation reaches it at once.
    private var runnerWorkers: Int {
        switch plan.model {
        case .open: plan.maxInFlight
        case .closed(let concurrency, _): concurrency
        }
    }

    func run() async -> Int32 {
        // Inputs first: nothing is sent when a file is missing.
        let inputs: LoadReportOptions.Inputs
        switch reporting.readInputs(command: "drive") {
        case .success(let read): inputs = read
        case .failure(let status): return status.code
        }
        guard let (credentials, projectID, store) = options.openDelivery(command: "drive", devicesPath: devicesPath) else {
            return ExitCode.ioError
        }

        let workspace: GroupWorkspace
        let pool: DeliveryPool
        do {
            workspace = try GroupWorkspace(members: members, store: store,
                                           app: AppConfig(iosBundleID: options.bundleID, fcmProjectID: projectID), scope: 0x20,
                                           segment: scaleOut.segment)
            pool = try options.makePool(credentials: credentials, projectID: projectID, store: store,
                                        minimumInFlight: runnerWorkers, log: { _ in })
        } catch {
            printError("pushproof drive: \(error)")
            return ExitCode.failure
        }
        do {
            try admin?.forgetProviderTokenUpdates()
            try markTokensGone(in: workspace)
        } catch {
            printError("pushproof drive: \(error)")
            await pool.shutdown()
            return ExitCode.failure
        }

        let violationsBefore = try? admin?.specViolationCount()
        let sourceError = ErrorNote()
        let counters = progressCounters()
        let source = Self.counting(makeSource(workspace: workspace, sourceError: sourceError), into: counters)
        if !reporting.quiet {
            printNow("pushproof drive \(scenario.rawValue): \(plan.modelDescription), group of \(members), "
                     + "\(options.transportDescription) to \(options.apnsURL)"
                     + (options.fcmURL == options.apnsURL ? "" : " and \(options.fcmURL)")
                     + ", \(Format.counted(options.senders, "delivery thread")) x \(Format.counted(options.connections, "connection")) per origin, "
                     + "\(options.streams) streams each")
            if let note = scaleOut.note(workspace: workspace) { printNow(note) }
            if let plannedStart = scaleOut.plannedStart { printNow("starting at \(plannedStart)") }
        }
        // Set up first, then wait: every segment's iterations count from the same instant.
        let planned = await scaleOut.plannedStart?.wait()
        let actualStart = planned.map { (scaleOut.plannedStart?.unixMilliseconds ?? 0) * 1_000_000 + $0.offsetNanoseconds }
            ?? Int64(WallClock.system.nowNanoseconds)
        let result: RunResult
        let abortedBy: String?
        let progress = TerminalProgress.start(counters, unit: scenario == .ringFanout ? "calls" : "messages", quiet: reporting.quiet)
        let metrics: MetricsStream?
        do {
            metrics = try reporting.metricsOutPath.map { try MetricsStream(path: $0, counters: counters) }
        } catch {
            printError("pushproof drive: --metrics-out: \(error)")
            await pool.shutdown()
            return ExitCode.ioError
        }
        do {
            let sender = SenderTarget(pool: pool)
            let counted = progress != nil || metrics != nil || reporting.abortOnFail
            let target: any PushTarget = counted ? ProgressTarget(target: sender, counters: counters) : sender
            let plan = self.plan
            let keepingFanOuts = scaleOut.resultPath != nil
            (result, abortedBy) = try await runAbortingOnFail(reporting.abortOnFail ? LiveThresholds(inputs.thresholds.thresholds) : nil,
                                                              counters: counters) {
                try await LoadRunner(plan: plan, target: target).run(source: source, startingAt: planned?.start, keepingFanOuts: keepingFanOuts)
            }
            await progress?.stop()
            await metrics?.stop()
        } catch {
            await progress?.stop()
            await metrics?.stop()
            printError("pushproof drive: \(error)")
            await pool.shutdown()
            return ExitCode.usage
        }
        await pool.shutdown()

        var summary = result.summary
        if let abortedBy { summary.notes.append(abortedBy) }
        if let note = scaleOut.note(workspace: workspace) { summary.notes.append(note) }
        if let plannedStart = scaleOut.plannedStart {
            let offset = actualStart - plannedStart.unixMilliseconds * 1_000_000
            summary.notes.append("started \(Format.milliseconds(Double(offset))) ms after --start-at \(plannedStart)")
        }
        let statistics = pool.statistics
        summary.notes.append(cleanupNote(statistics))
        if let error = sourceError.text.withLock({ $0 }) { summary.notes.append("the run stopped early: \(error)") }
        if statistics.dryRuns > 0 {
            summary.notes.append("\(statistics.dryRuns) pushes were only logged (no credentials for their gateway); they count as failed")
        }
        if let admin {
            // The gateway counts since it started: the run's share is the difference.
            do {
                if let after = try admin.specViolationCount() {
                    summary.violations = after - (violationsBefore ?? 0)
                }
            } catch {
                summary.notes.append("spec violations unknown: \(error)")
            }
        }
        summary.sender = ScenarioSenderChoice.reference(gatewaySharesMachine: options.gatewayIsLocal)
        var json = JSONObject()
        json["token_cleanup"] = cleanupJSON(statistics)
        json["sender"] = [
            "transport": .string(options.transportDescription), "apns": .string(options.apnsURL), "fcm": .string(options.fcmURL),
            "connections_per_origin": .number(Double(options.connections)), "streams_per_connection": .number(Double(options.streams)),
            "connections_opened": .number(Double(statistics.connectionsOpened)), "requests": .number(Double(statistics.attemptsSent)),
            "retries": .number(Double(statistics.retriesScheduled)), "members": .number(Double(members)),
            "delivery_threads": .number(Double(options.senders)),
        ]
        var findings: [String] = []
        if summary.counts.completed == 0 { findings.append("no push completed in the measured part of the run") }
        if let failure = sourceError.text.withLock({ $0 }) { findings.append(failure) }
        var files = ReportFiles(command: "drive")
        if let resultPath = scaleOut.resultPath {
            let identity = scaleOut.identity(workload: scenario.rawValue, members: members, plan: plan,
                                             transports: transports.map(\.rawValue).sorted().joined(separator: ","), goneTokens: goneTokens)
            let segmentResult = SegmentResult(
                identity: identity, segment: scaleOut.segment, plannedStart: scaleOut.plannedStart?.unixMilliseconds,
                actualStart: actualStart, devicesOwned: workspace.ownedDeviceCount, devicesTotal: workspace.deviceCount,
                run: result, summary: summary,
                cleanup: CleanupCounts(tokensRemoved: statistics.tokensRemoved, devicesDeleted: statistics.devicesDeleted,
                                       removalErrors: statistics.tokenRemovalErrors),
                senderDetails: json["sender"] ?? .null)
            files.write(resultPath) {
                try Data((try segmentResult.json().serialized() + "\n").utf8).write(to: URL(fileURLWithPath: resultPath))
            }
        }
        let status = reporting.finish(summary, inputs: inputs, findings: findings, extraJSON: json, command: "drive")
        return files.failed ? ExitCode.ioError : status
    }

    /// `--stages` with `--start-rate`, nil without; they exclude `--rate` and `--duration`.
    static func stages(_ arguments: ParsedArguments) throws(UsageError) -> ArrivalSchedule? {
        guard let text = arguments.value("stages") else {
            if arguments.value("start-rate") != nil { throw UsageError(message: "--start-rate is for --stages") }
            return nil
        }
        for other in ["rate", "duration"] where arguments.value(other) != nil {
            throw UsageError(message: "--stages and --\(other) exclude each other: the stages say the rate and how long")
        }
        let startRate = try double(arguments, "start-rate", range: 0...10_000_000) ?? 0
        do {
            return try ArrivalSchedule.parse(stages: text, startRate: startRate)
        } catch {
            throw UsageError(message: "--stages: \(error.description)")
        }
    }

    /// The plan's iterations (open: rate x duration) and, open, its length.
    private func progressCounters() -> ProgressCounters {
        switch plan.model {
        case .open(let schedule):
            let whole = schedule.preceded(by: plan.warmUp)
            return ProgressCounters(total: whole.iterationCount, plannedSeconds: whole.durationSeconds)
        case .closed(_, let count):
            return ProgressCounters(total: count, plannedSeconds: nil)
        }
    }

    /// Counts the iterations the runner takes, for the progress line.
    private static func counting(_ source: @escaping LoadSource, into counters: ProgressCounters) -> LoadSource {
        { iteration in
            let item = source(iteration)
            if item != nil { counters.played.add(1, ordering: .relaxed) }
            return item
        }
    }

    /// Iterations as the scenario defines them, restricted to `transports`.
    private func makeSource(workspace: GroupWorkspace, sourceError: ErrorNote) -> LoadSource {
        let transports = self.transports
        let keep: @Sendable ([PushRequest]) -> [PushRequest] = { pushes in
            transports.count == 2 ? pushes : pushes.filter { transports.contains($0.transport) }
        }
        switch scenario {
        case .ringFanout:
            // Every call evaluates the rules afresh, as a sender does: devices deleted by
            // earlier calls are no longer rung.
            return { iteration in
                do {
                    return .fanOut(keep(try workspace.ring(callID: "call-load-\(iteration)")))
                } catch {
                    sourceError.text.withLock { $0 = "the ring rules failed: \(error)" }
                    return nil
                }
            }
        case .messageStorm:
            // A message storm is messages: each one fanned out by the rules to the group's
            // other members (their alert and Android tokens), as a chat backend does.
            return { iteration in
                do {
                    return .fanOut(keep(try workspace.message(id: "msg-load-\(iteration)")))
                } catch {
                    sourceError.text.withLock { $0 = "the message rules failed: \(error)" }
                    return nil
                }
            }
        }
    }

    /// Marks `goneTokens` of the group's push-receiving tokens gone: PushKit and Android
    /// tokens of members 1, 2, ... alternately (the ones a ring reaches).
    private func markTokensGone(in workspace: GroupWorkspace) throws {
        guard let admin, goneTokens > 0 else { return }
        var marked = 0
        var member = 1
        while marked < goneTokens, member < workspace.users.count {
            let userID = workspace.users[member].id
            let devices = GroupWorkspace.devices(of: userID, index: member, scope: workspace.scope)
            let candidates = scenario == .ringFanout
                ? devices.filter { $0.kind == .voip || $0.platform == .android }
                : devices.filter { $0.kind == .alert || $0.platform == .android }
            // A segment marks the whole run's choice of tokens where it owns them: the segments'
            // marks together are an unsegmented run's.
            let owned = workspace.ownedDeviceCount == workspace.deviceCount ? nil : Set(try workspace.store.devices(of: userID).map(\.token))
            for device in candidates where marked < goneTokens && transports.contains(device.transport) {
                if owned?.contains(device.token) ?? true { try admin.setTokenState(device.token, state: "gone") }
                marked += 1
            }
            member += 1
        }
    }

    private func cleanupNote(_ s: DeliveryStatistics) -> String {
        let cleanup = s.tokenCleanup
        var note = "token cleanup: \(s.tokensRemoved) pushes found their token gone, \(s.devicesDeleted) devices deleted from the store"
        if s.tokenRemovalErrors > 0 { note += ", \(s.tokenRemovalErrors) deletions failed" }
        if cleanup.totalCount > 0 {
            note += "; answer to deletion mean \(Format.milliseconds(UInt64(cleanup.mean))) ms, "
                + "max \(Format.milliseconds(cleanup.max)) ms"
        }
        return note
    }

    private func cleanupJSON(_ s: DeliveryStatistics) -> JSONValue {
        [
            "tokens_removed": .number(Double(s.tokensRemoved)), "devices_deleted": .number(Double(s.devicesDeleted)),
            "removal_errors": .number(Double(s.tokenRemovalErrors)), "latency_count": .number(Double(s.tokenCleanup.totalCount)),
            "latency_mean_ms": .number(s.tokenCleanup.mean / 1e6),
            "latency_max_ms": .number(Double(s.tokenCleanup.max) / 1e6),
        ]
    }
}

/// The first error a load source met, read after the run.
final class ErrorNote: Sendable {
    let text = Mutex<String?>(nil)
}
