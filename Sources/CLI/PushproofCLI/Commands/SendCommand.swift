import Clocks
import Driver
import JSON
import PushModel
import RemoteGateway
import Reports
import Sender

/// `pushproof send`: the reference sender pushing the products' events at a gateway (the
/// mock, or Apple's and Google's), printing what became of every push.
struct SendCommand: Subcommand {
    static let spec = CommandSpec(
        name: "send",
        abstract: "Push poolse, Yama and Concierge events through the reference sender (demo, ring, message).",
        positionals: ["demo|ring|message"],
        options: [
            .value("members", "N", "ring, message: people in the group (member 0 calls or writes).", default: "1000"),
            .value("repeat", "N", "ring, message: events sent one after another (--build-only: timed rounds).",
                   default: "1, --build-only 5"),
            .value("devices", "FILE", "SQLite device store, created if missing; gone tokens are deleted from it.",
                   default: "in memory"),
            .value("admin", "URL", "demo: the gateway's control API (pushproof serve --admin); two of the demo's "
                   + "tokens are marked gone through it first."),
            .value("yama-bundle-id", "ID", "demo: the Yama tenant app's bundle id.", default: "--bundle-id"),
            .value("concierge-bundle-id", "ID", "demo: the Concierge customer app's bundle id.", default: "--bundle-id"),
            .value("json", "FILE", "Also write the results as JSON."),
            .value("expect-out", "FILE", "Write the deliveries made (each push the gateway accepted; in a dry run, each "
                   + "decided) as a 'pushproof check --expect' file: the oracle for another sender's run of the scenario."),
            .value("transport", "apns|fcm|both", "ring, message: only the pushes to APNs, or to FCM.", default: "both"),
            .flag("build-only", "ring, message: only evaluate the rules and build the payloads, timed; send nothing."),
        ] + SenderOptions.specs,
        discussion: """
        SCENARIOS:
          demo      a poolse group of 5: a group call (ring, one joins, one declines, the call ends:
                    ring_ended, finished, missed), a message with a mention, a read, a Yama and a
                    Concierge push; then a second ring, which skips the devices deleted on the way.
          ring      one group call ringing every other member's devices (2 pushes each).
          message   one text message to the group (2 pushes per recipient).

        Without --apns-key and --service-account nothing is sent: each push is logged as the
        request it would have been (local development, as the Concierge seed describes).
        Exit status: 0 every push delivered (or logged, or its dead token cleaned up); 1 some
        push failed; 2 a file could not be read or written; 64 usage.

        EXAMPLES:
          pushproof send demo --ca pushproof-cert-8443.pem --apns-key apns-key.p8 --key-id ABC123DEFG \\
              --team-id TEAM123456 --service-account service-account.json --admin http://127.0.0.1:8444
          pushproof send ring --members 10000 --h2c --gateway http://127.0.0.1:8080 --apns-key ... 
          pushproof send ring --members 10000 --build-only
        """)

    enum Scenario: String { case demo, ring, message }

    let scenario: Scenario
    let options: SenderOptions
    let members: Int
    let rounds: Int
    let devicesPath: String?
    let admin: AdminClient?
    let yamaBundleID: String
    let conciergeBundleID: String
    let jsonPath: String?
    let expectOutPath: String?
    let buildOnly: Bool
    let transports: Set<PushTransport>

    init(_ arguments: ParsedArguments) throws {
        guard let scenario = Scenario(rawValue: arguments.positionals[0]) else {
            throw UsageError(message: "unknown scenario '\(arguments.positionals[0])' (demo, ring or message)")
        }
        self.scenario = scenario
        options = try SenderOptions(arguments)
        buildOnly = arguments.has("build-only")
        if scenario == .demo {
            for name in ["members", "repeat"] where arguments.value(name) != nil {
                throw UsageError(message: "--\(name) is for ring and message; demo has a fixed group of 5")
            }
            if buildOnly { throw UsageError(message: "--build-only is for ring and message") }
        } else if arguments.value("admin") != nil {
            throw UsageError(message: "--admin is for demo")
        }
        members = try arguments.int("members", default: scenario == .demo ? 5 : 1000, range: 2...1_000_000)
        rounds = try arguments.int("repeat", default: buildOnly ? 5 : 1, range: 1...100_000)
        devicesPath = arguments.value("devices")
        admin = try arguments.value("admin").map { url throws(UsageError) in try AdminClient(url: url) }
        yamaBundleID = arguments.value("yama-bundle-id") ?? options.bundleID
        conciergeBundleID = arguments.value("concierge-bundle-id") ?? options.bundleID
        jsonPath = arguments.value("json")
        expectOutPath = arguments.value("expect-out")
        transports = try SenderOptions.transports(arguments)
        if scenario == .demo, transports.count < 2 { throw UsageError(message: "--transport is for ring and message") }
    }

    func run() async -> Int32 {
        if buildOnly {
            guard let timings = buildOnlyRun() else { return ExitCode.failure }
            if expectOutPath != nil { printError("pushproof send: --expect-out: --build-only sends nothing, so no file is written") }
            return writeJSON(timings, deliveries: nil)
        }
        guard let (credentials, projectID, store) = options.openDelivery(command: "send", devicesPath: devicesPath) else {
            return ExitCode.ioError
        }
        let pool: DeliveryPool
        do {
            pool = try options.makePool(credentials: credentials, projectID: projectID, store: store,
                                        log: { printNow($0) })
        } catch {
            printError("pushproof send: \(error)")
            return ExitCode.failure
        }
        let dryRun = credentials.apns == nil && credentials.fcm == nil
        var run = SendRun(pool: pool, dryRun: dryRun)
        printNow("pushproof send \(scenario.rawValue): APNs \(options.apnsURL), FCM \(options.fcmURL) (project \(projectID)), "
                 + "\(options.transportDescription), \(Format.counted(options.senders, "delivery thread"))"
                 + (dryRun ? "; no credentials: every push is logged, nothing is sent" : ""))
        if credentials.apns == nil, !dryRun { printNow("no --apns-key: APNs pushes are logged, not sent") }
        if credentials.fcm == nil, !dryRun { printNow("no --service-account: FCM pushes are logged, not sent") }
        var extra: JSONObject = [:]
        do {
            switch scenario {
            case .demo:
                extra = try await demo(&run, store: store, projectID: projectID)
            case .ring, .message:
                extra = try await fanOuts(&run, store: store, projectID: projectID)
            }
        } catch let error as AdminError {
            printError("pushproof send: \(error)")
            await pool.shutdown()
            return ExitCode.failure
        } catch {
            printError("pushproof send: \(error)")
            await pool.shutdown()
            return ExitCode.ioError
        }
        await pool.shutdown()
        let statistics = pool.statistics
        run.printByKind()
        printNow("connections opened \(statistics.connectionsOpened), requests \(statistics.attemptsSent) "
                 + "(retries \(statistics.retriesScheduled)), provider tokens signed \(statistics.providerTokensSigned), "
                 + "access tokens fetched \(statistics.accessTokensFetched)")
        var json = run.json
        json["scenario"] = .string(scenario.rawValue)
        json["transport"] = .string(options.transportDescription)
        json["delivery"] = deliveryJSON(statistics)
        for (key, value) in extra { json[key] = value }
        let status = writeJSON(json, deliveries: run.deliveriesJSON)
        if status != ExitCode.success { return status }
        return run.failedCount > 0 ? ExitCode.failure : ExitCode.success
    }

    private func writeJSON(_ json: JSONObject, deliveries: JSONValue?) -> Int32 {
        var files = ReportFiles(command: "send")
        files.write(jsonPath, JSONValue.object(json).serialized() + "\n")
        if let deliveries { files.write(expectOutPath, deliveries.serialized() + "\n") }
        return files.failed ? ExitCode.ioError : ExitCode.success
    }

    // MARK: - ring, message

    private func fanOuts(_ run: inout SendRun, store: any DeviceStore, projectID: String) async throws -> JSONObject {
        let app = AppConfig(iosBundleID: options.bundleID, fcmProjectID: projectID)
        let setupStart = SystemClock.monotonicNanoseconds()
        let workspace = try GroupWorkspace(members: members, store: store, app: app)
        printNow("group of \(members): \(members * 3) devices registered in "
                 + "\(Format.milliseconds(SystemClock.monotonicNanoseconds() - setupStart)) ms (\(devicesPath ?? "in memory"))")
        var roundsJSON: [JSONValue] = []
        var throughputs: [Double] = []
        for round in 1...rounds {
            let started = SystemClock.monotonicNanoseconds()
            var pushes = scenario == .ring
                ? try workspace.ring(callID: "call-\(round)-\(started)")
                : try workspace.message(id: "msg-\(round)-\(started)")
            if transports.count < 2 { pushes.removeAll { !transports.contains($0.transport) } }
            let built = SystemClock.monotonicNanoseconds()
            let step = await run.step(scenario == .ring ? "ring" : "message", pushes, startedAt: started).step
            let elapsed = Double(step.lastFinish &- started) / 1e9
            let throughput = elapsed > 0 ? Double(pushes.count) / elapsed : 0
            throughputs.append(throughput)
            let allLabel = scenario == .ring ? "time to ring all" : "time to notify all"
            printNow("  \(pushes.count) pushes built in \(Format.milliseconds(built - started)) ms; "
                     + "\(Format.significant(throughput)) pushes/s; \(allLabel) "
                     + (step.lastDelivered > 0 ? "\(Format.milliseconds(step.lastDelivered - started)) ms" : "n/a (none delivered)"))
            var entry = step.json
            entry["build_ms"] = .number(Double(built - started) / 1e6)
            entry["throughput_per_s"] = .number(throughput)
            entry[scenario == .ring ? "time_to_ring_all_ms" : "time_to_notify_all_ms"] =
                step.lastDelivered > 0 ? .number(Double(step.lastDelivered - started) / 1e6) : .null
            roundsJSON.append(.object(entry))
        }
        let median = throughputs.sorted()[throughputs.count / 2]
        if rounds > 1 { printNow("median throughput over \(rounds) rounds: \(Format.significant(median)) pushes/s") }
        return ["members": .number(Double(members)), "rounds": .array(roundsJSON), "median_throughput_per_s": .number(median)]
    }

    /// Times rule evaluation plus payload building alone (it must cost a small
    /// fraction of delivery). The workspace is set up once, untimed; one untimed round warms up.
    private func buildOnlyRun() -> JSONObject? {
        let setupStart = SystemClock.monotonicNanoseconds()
        let workload = SenderWorkload(members: members)
        let setup = SystemClock.monotonicNanoseconds() - setupStart
        let isRing = scenario == .ring
        let build = { () throws -> [PushRequest] in isRing ? try workload.ringFanout() : try workload.messageFanout() }
        var perPush: [Double] = []
        var pushCount = 0
        do {
            pushCount = try build().count
            for _ in 0..<rounds {
                let start = SystemClock.monotonicNanoseconds()
                let pushes = try build()
                let elapsed = SystemClock.monotonicNanoseconds() - start
                perPush.append(Double(elapsed) / Double(max(1, pushes.count)))
            }
        } catch {
            printError("pushproof send: building the fan-out failed: \(error)")
            return nil
        }
        let sorted = perPush.sorted()
        let median = sorted[sorted.count / 2]
        printNow("build only: \(scenario.rawValue) fan-out of \(members) members = \(pushCount) pushes "
                 + "(rules + payloads, nothing sent); workspace set-up \(Format.milliseconds(setup)) ms")
        printNow("  per push: median \(Format.significant(median)) ns, best \(Format.significant(sorted[0])) ns "
                 + "over \(rounds) rounds = \(Format.significant(1e9 / median)) pushes/s built")
        return [
            "scenario": .string(scenario.rawValue), "build_only": true, "members": .number(Double(members)),
            "pushes": .number(Double(pushCount)), "rounds": .number(Double(rounds)),
            "ns_per_push_median": .number(median), "ns_per_push_best": .number(sorted[0]),
            "pushes_built_per_s": .number(1e9 / median),
        ]
    }
}
