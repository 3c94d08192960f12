import Clocks
import Driver
import Foundation
import JSON
import PushModel
import RemoteGateway
import Reports
import Sender

/// `pushproof plan`: capacity planning for a group call (`CapacityPlan`, in the Driver) through
/// the reference sender or, with `--scenario`, a scenario's events through `--sender`.
struct PlanCommand: Subcommand {
    static let spec = CommandSpec(
        name: "plan",
        abstract: "Capacity planning: which connections and delivery threads ring a whole group within a target time.",
        positionals: [],
        options: [
            .value("members", "N", "People in the group; a ring goes to every other member's devices.", default: "10000"),
            .value("within-ms", "MS", "Target: every phone rung (its push answered) this soon after the call.", default: "1000"),
            .value("try-connections", "LIST", "Connections per gateway origin to try, comma-separated.", default: "1,2,4"),
            .value("try-senders", "LIST", "Delivery threads to try, comma-separated.", default: "1"),
            .value("calls", "N", "Measured calls per set-up, after one warm-up call that opens the connections.", default: "3"),
            .value("transport", "apns|fcm|both", "Only ring over APNs, or only over FCM.", default: "both"),
            .value("json", "FILE", "Write the plan as JSON."),
            .value("junit", "FILE", "Write JUnit XML: a testcase per set-up and one for the plan, failing when no set-up meets the target."),
            .value("scenario", "FILE", "Ring as this scenario's events do (e.g. a generated group), through --sender as it is "
                   + "configured, against the embedded gateway: --calls plays, each on a fresh sender and gateway."),
            ScenarioDrive.eventsInFlightSpec(default: "1: each event's pushes answered before the next, so a play's figure is "
                                             + "each event's own time to ring all"),
            .value("admin", "URL", "With --scenario and --gateway: that pushproof serve's control API (token states, faults, "
                   + "and its request journal, where arrivals are read); repeated, or a name of several addresses, for replicas.",
                   repeatable: true),
            .flag("quiet", "Print only the plan, no progress line."),
        ] + FleetRequest.specs + ScenarioSpecs.options(prefix: "With --scenario: ") + ScenarioSenderChoice.specs
          + SenderOptions.specs.filter { !["connections", "senders", "max-in-flight"].contains($0.name) },
        discussion: """
        Each set-up gets its own sender (fresh connections); its figure is the slowest of its
        measured calls. A set-up meets the target when every push of every call was delivered
        within --within-ms. The recommendation is the set-up that meets it with the fewest
        connections in all; when none does, the fastest set-up's rate says how many machines,
        each ringing an equal share of the group, would.

        The answer is only as good as the gateway's round trip: a mock on loopback answers in
        microseconds, Apple and Google in tens of milliseconds. Give `pushproof serve` a latency
        fault that models them (e.g. "apns": {"latency": {"fixed_ms": 40}} in its --config)
        and run serve on another machine than the sender, or its CPU is shared.
        Exit status: 0 a set-up meets the target; 3 none does; 1 the sender could not start or
        nothing was delivered; 2 a file could not be read or written; 64 usage.

        With --target-members N, plan sizes a fleet instead: the segments (driver + sender pods)
        and gateway replicas that ring a group of N within --within, each count the needed rate
        (a call's pushes over --within) over --headroom of one unit's rate, rounded up. A
        segment's rate is the fastest set-up's, measured as above (or --sender-rate); a gateway
        core's is the pushes the --admin gateway answered over the CPU it used meanwhile (its
        GET /status; run it with --threads 1 --specs --record, as a fleet's gateways judge and
        record every push), or --gateway-rate. It prints each number's arithmetic and what it
        rests on, and the 'pushproof k8s render' command that runs the fleet, each segment pod's
        CPU the cores the measured sender kept busy. Exit status: 0 a fleet reaches the target,
        3 none can (a limit is named), 64 usage. docs/scale-out.md, "Sizing a fleet", walks it.

        With --scenario, the set-up is the sender's own (a team's sender has its own pool); the
        figure of a play is its slowest event's time to ring all (intended time of the event to
        the last push the gateway accepted), and the play meets the target when every expected
        push arrived and was accepted within --within-ms.

        EXAMPLES:
          pushproof plan --target-members 200000 --within 2s --members 10000 --h2c --gateway http://127.0.0.1:8080 \\
              --admin http://127.0.0.1:8081 --apns-key cred/apns-key.p8 --key-id ABC123DEFG --team-id TEAM123456 \\
              --service-account cred/service-account.json --token-url http://127.0.0.1:8080/token
          pushproof plan --target-members 200000 --within 2s --sender-rate 18400 --gateway-rate 76900
          pushproof plan --scenario Benchmarks/scenarios/group-call-10000.json --within-ms 2000 --calls 3
          pushproof plan --members 10000 --within-ms 1000 --try-connections 1,2,4,8 --try-senders 1,2 \\
              --gateway https://gateway.test:8443 --ca pushproof-cert-8443.pem \\
              --apns-key apns-key.p8 --key-id ABC123DEFG --team-id TEAM123456 --service-account service-account.json
        """)

    let options: SenderOptions
    let members: Int
    let withinMilliseconds: Int
    let setups: [CapacityPlan.Setup]
    let calls: Int
    let transports: Set<PushTransport>
    let jsonPath: String?
    let junitPath: String?
    let quiet: Bool
    /// `--scenario`: the file, its spec directory, the events in flight and where it plays.
    let scenarioPlay: (path: String, specs: ScenarioSpecs, eventsInFlight: Int, gateway: ScenarioLoadGateway)?
    let senderChoice: ScenarioSenderChoice
    /// `--target-members`: size a fleet from the measured (or given) rates.
    let fleet: FleetRequest?

    init(_ arguments: ParsedArguments) throws {
        fleet = try FleetRequest(arguments)
        options = try SenderOptions(arguments)
        senderChoice = try ScenarioSenderChoice(arguments)
        quiet = arguments.has("quiet")
        if let path = arguments.value("scenario") {
            let builtInOnly = ["members", "try-connections", "try-senders", "transport"]
                + SenderOptions.specs.map(\.name).filter { !ScenarioLoadGateway.optionNames.contains($0) }
            if let stray = builtInOnly.first(where: { arguments.value($0) != nil || arguments.has($0) }) {
                throw UsageError(message: "--\(stray) is for the built-in group; a scenario brings its own people and devices")
            }
            scenarioPlay = (path, ScenarioSpecs(arguments), try arguments.int("events-in-flight", default: 1, range: 1...100_000),
                            try ScenarioLoadGateway(arguments))
        } else {
            scenarioPlay = nil
            let scenarioOnly = ["specs", "spec-config", "events-in-flight"] + (fleet == nil ? ["admin"] : [])
            for name in scenarioOnly + ScenarioSenderChoice.specs.map(\.name) where arguments.value(name) != nil {
                throw UsageError(message: "--\(name) goes with --scenario")
            }
        }
        guard scenarioPlay != nil || options.hasCredentials || fleet?.needsMeasuring == false else {
            throw UsageError(message: "plan sends for real: give --apns-key (with --key-id, --team-id) and/or "
                             + "--service-account ('pushproof credentials' writes test ones)")
        }
        members = try arguments.int("members", default: 10_000, range: 2...1_000_000)
        // Sizing a fleet, each set-up is measured against the fleet's target.
        withinMilliseconds = try fleet.map { Int(min(3_600_000, ($0.withinNanoseconds + 999_999) / 1_000_000)) }
            ?? arguments.int("within-ms", default: 1000, range: 1...3_600_000)
        calls = try arguments.int("calls", default: 3, range: 1...1000)
        let connections = try Self.list(arguments, "try-connections", default: [1, 2, 4], range: 1...256)
        let senders = try Self.list(arguments, "try-senders", default: [1], range: 1...64)
        setups = CapacityPlan.setups(senders: senders, connections: connections)
        transports = try SenderOptions.transports(arguments)
        jsonPath = arguments.value("json")
        junitPath = arguments.value("junit")
    }

    /// "1,2,4" as distinct numbers in `range`, in the order given.
    static func list(_ arguments: ParsedArguments, _ name: String, default defaultValue: [Int],
                     range: ClosedRange<Int>) throws(UsageError) -> [Int] {
        guard let text = arguments.value(name) else { return defaultValue }
        var values: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard let value = Int(trimmed), range.contains(value) else {
                throw UsageError(message: "--\(name) takes numbers from \(range.lowerBound) to \(range.upperBound) "
                                 + "separated by commas, not '\(text)'")
            }
            if !values.contains(value) { values.append(value) }
        }
        return values
    }

    func run() async -> Int32 {
        if let scenarioPlay {
            return await runScenario(path: scenarioPlay.path, specs: scenarioPlay.specs, eventsInFlight: scenarioPlay.eventsInFlight,
                                     gateway: scenarioPlay.gateway)
        }
        if let fleet { return await runFleet(fleet) }
        let plan: CapacityPlan, measurements: [CapacityPlan.Measurement]
        switch await measureSetups() {
        case .measured(let measuredPlan, let measured): (plan, measurements) = (measuredPlan, measured)
        case .failed(let status): return status
        }
        let identity = ScenarioSenderChoice.reference(gatewaySharesMachine: options.gatewayIsLocal)
        let verdict = plan.verdict(measurements)
        printNow("sender: \(identity.text)")
        printNow(verdict.text(withinMilliseconds: withinMilliseconds))
        var files = ReportFiles(command: "plan")
        files.write(jsonPath, plan.json(measurements, verdict: verdict, sender: identity, transport: options.transportDescription,
                                        streams: options.streams).serialized() + "\n")
        files.write(junitPath, plan.junit(measurements, verdict: verdict))
        if files.failed { return ExitCode.ioError }
        if measurements.allSatisfy({ $0.undelivered == $0.pushesPerCall * calls }) {
            printError("pushproof plan: no push was delivered; is the gateway up, and are the credentials its own?")
            return ExitCode.failure
        }
        return verdict.recommended == nil ? RunReport.thresholdFailureExitCode : ExitCode.success
    }

    /// The set-ups measured, or the exit status of why not (the error printed).
    enum MeasuredSetups {
        case measured(CapacityPlan, [CapacityPlan.Measurement])
        case failed(Int32)
    }

    /// Rings the group through each set-up in turn (`CapacityPlan.measure`), a line a set-up.
    func measureSetups() async -> MeasuredSetups {
        let credentials: DeliveryCredentials
        let projectID: String
        do {
            (credentials, projectID) = try options.loadCredentials()
        } catch {
            printError("pushproof plan: \(error)")
            return .failed(ExitCode.ioError)
        }
        let store = InMemoryDeviceStore()
        let workspace: GroupWorkspace
        do {
            workspace = try GroupWorkspace(members: members, store: store,
                                           app: AppConfig(iosBundleID: options.bundleID, fcmProjectID: projectID), scope: 0x30)
        } catch {
            printError("pushproof plan: \(error)")
            return .failed(ExitCode.failure)
        }
        var plan = CapacityPlan(members: members, withinMilliseconds: withinMilliseconds, calls: calls, setups: setups)
        if DeliveryConfiguration.h2cIsOneConnectionPerOrigin, options.anyCleartext {
            printNow("note: this libcurl cannot reuse h2c prior-knowledge connections (before 8.0): h2c runs on one "
                     + "connection per origin, so only 1-connection set-ups are tried; use TLS to try more")
            plan = plan.limitedToOneConnection()
        }
        printNow("pushproof plan: a call to a group of \(members), \(options.transportDescription), "
                 + "target: every phone rung within \(withinMilliseconds) ms; \(Format.counted(calls, "measured call")) per set-up")
        let counters = ProgressCounters(total: plan.setups.count * (calls + 1), plannedSeconds: nil)
        let progress = TerminalProgress.start(counters, unit: "calls", quiet: quiet)
        let measurements: [CapacityPlan.Measurement]
        do {
            measurements = try await plan.measure(sender: { setup in
                var senderOptions = options
                senderOptions.senders = setup.senders
                senderOptions.connections = setup.connections
                // Every push of a call in flight at once: the connections' streams are the limit.
                senderOptions.maxInFlight = max(1, setup.connections * options.streams)
                return PoolCapacitySender(pool: try senderOptions.makePool(credentials: credentials, projectID: projectID,
                                                                          store: store, log: { _ in }))
            }, ring: { callNumber in
                try workspace.ring(callID: "call-plan-\(callNumber)").filter { transports.contains($0.transport) }
            }, counters: counters, measured: { measurement in
                progress?.clear()
                printNow("  " + plan.line(for: measurement))
            })
        } catch {
            if case .ringFailed = error { await progress?.stop() }
            printError("pushproof plan: \(error)")
            return .failed(ExitCode.failure)
        }
        await progress?.stop()
        return .measured(plan, measurements)
    }
}

/// A set-up's reference sender, a `DeliveryPool`, as the plan rings through it.
struct PoolCapacitySender: CapacitySender {
    let pool: DeliveryPool

    func deliver(call pushes: [PushRequest]) async -> [(outcome: PushOutcome, finishedAt: UInt64)] {
        await pool.deliver(contentsOf: pushes).map { ($0.outcome, $0.finishedAt) }
    }
    var connectionsOpened: Int { pool.statistics.connectionsOpened }
    func shutdown() async { await pool.shutdown() }
}
