import Clocks
import Driver
import Foundation
import JSON
import PushModel
import RemoteGateway
import Sender

/// `pushproof plan`: capacity planning for a group call. Rings one group through the reference
/// sender with each candidate set-up (delivery threads x connections per origin), measures the
/// time until every phone was rung, and answers the launch question: which set-up rings the
/// whole group within the target, or, if none does on this machine, how many machines would.
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
                   + "and its request journal, where arrivals are read)."),
            .flag("quiet", "Print only the plan, no progress line."),
        ] + ScenarioSpecs.options(prefix: "With --scenario: ") + ScenarioSenderChoice.specs
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

        With --scenario, the set-up is the sender's own (a team's sender has its own pool); the
        figure of a play is its slowest event's time to ring all (intended time of the event to
        the last push the gateway accepted), and the play meets the target when every expected
        push arrived and was accepted within --within-ms.

        EXAMPLES:
          pushproof plan --scenario Benchmarks/scenarios/group-call-10000.json --within-ms 2000 --calls 3
          pushproof plan --members 10000 --within-ms 1000 --try-connections 1,2,4,8 --try-senders 1,2 \\
              --gateway https://gateway.test:8443 --ca pushproof-cert-8443.pem \\
              --apns-key apns-key.p8 --key-id ABC123DEFG --team-id TEAM123456 --service-account service-account.json
        """)

    /// One candidate set-up.
    struct Setup: Equatable {
        var senders: Int
        var connections: Int
        /// A sender measured as it is configured (`--scenario`): its name instead of the counts.
        var described: String? = nil
        var totalConnections: Int { senders * connections }
        var label: String {
            described ?? "\(senders) thread\(senders == 1 ? "" : "s") x \(connections) connection\(connections == 1 ? "" : "s")"
        }
    }

    /// What one set-up did.
    struct Measurement {
        var setup: Setup
        var pushesPerCall: Int
        var ringAllNanoseconds: [UInt64] = []
        var undelivered = 0
        var connectionsOpened = 0

        var worstNanoseconds: UInt64 { ringAllNanoseconds.max() ?? 0 }
        var medianNanoseconds: UInt64 {
            let sorted = ringAllNanoseconds.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }
        /// Pushes per second over the slowest call.
        var rate: Double {
            worstNanoseconds == 0 ? 0 : Double(pushesPerCall) / (Double(worstNanoseconds) / 1e9)
        }
        func meets(withinNanoseconds target: UInt64) -> Bool {
            undelivered == 0 && !ringAllNanoseconds.isEmpty && worstNanoseconds <= target
        }
    }

    let options: SenderOptions
    let members: Int
    let withinMilliseconds: Int
    let setups: [Setup]
    let calls: Int
    let transports: Set<PushTransport>
    let jsonPath: String?
    let junitPath: String?
    let quiet: Bool
    /// `--scenario`: the file, its spec directory, the events in flight and where it plays.
    let scenarioPlay: (path: String, specs: ScenarioSpecs, eventsInFlight: Int, gateway: ScenarioLoadGateway)?
    let senderChoice: ScenarioSenderChoice

    init(_ arguments: ParsedArguments) throws {
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
            for name in ["specs", "spec-config", "events-in-flight", "admin"] + ScenarioSenderChoice.specs.map(\.name) where arguments.value(name) != nil {
                throw UsageError(message: "--\(name) goes with --scenario")
            }
        }
        guard scenarioPlay != nil || options.hasCredentials else {
            throw UsageError(message: "plan sends for real: give --apns-key (with --key-id, --team-id) and/or "
                             + "--service-account ('pushproof credentials' writes test ones)")
        }
        members = try arguments.int("members", default: 10_000, range: 2...1_000_000)
        withinMilliseconds = try arguments.int("within-ms", default: 1000, range: 1...3_600_000)
        calls = try arguments.int("calls", default: 3, range: 1...1000)
        let connections = try Self.list(arguments, "try-connections", default: [1, 2, 4], range: 1...256)
        let senders = try Self.list(arguments, "try-senders", default: [1], range: 1...64)
        setups = senders.flatMap { threads in connections.map { Setup(senders: threads, connections: $0) } }
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
        let credentials: DeliveryCredentials
        let projectID: String
        do {
            (credentials, projectID) = try options.loadCredentials()
        } catch {
            printError("pushproof plan: \(error)")
            return ExitCode.ioError
        }
        let store = InMemoryDeviceStore()
        let workspace: GroupWorkspace
        do {
            workspace = try GroupWorkspace(members: members, store: store,
                                           app: AppConfig(iosBundleID: options.bundleID, fcmProjectID: projectID), scope: 0x30)
        } catch {
            printError("pushproof plan: \(error)")
            return ExitCode.failure
        }
        var setups = self.setups
        if DeliveryConfiguration.h2cIsOneConnectionPerOrigin, options.apnsURL.hasPrefix("http://") || options.fcmURL.hasPrefix("http://") {
            // Every h2c set-up would run on one connection whatever it asked for.
            let limited = setups.filter { $0.connections == 1 }
            printNow("note: this libcurl cannot reuse h2c prior-knowledge connections (before 8.0): h2c runs on one "
                     + "connection per origin, so only 1-connection set-ups are tried; use TLS to try more")
            setups = limited.isEmpty ? [Setup(senders: setups[0].senders, connections: 1)] : limited
        }
        let target = UInt64(withinMilliseconds) * 1_000_000
        var measurements: [Measurement] = []
        var callNumber = 0
        printNow("pushproof plan: a call to a group of \(members), \(options.transportDescription), "
                 + "target: every phone rung within \(withinMilliseconds) ms; \(calls) measured call(s) per set-up")
        let counters = ProgressCounters(total: setups.count * (calls + 1), plannedSeconds: nil)
        let progress = TerminalProgress.start(counters, unit: "calls", quiet: quiet)
        for setup in setups {
            var senderOptions = options
            senderOptions.senders = setup.senders
            senderOptions.connections = setup.connections
            // Every push of a call in flight at once: the connections' streams are the limit.
            senderOptions.maxInFlight = max(1, setup.connections * options.streams)
            let pool: DeliveryPool
            do {
                pool = try senderOptions.makePool(credentials: credentials, projectID: projectID, store: store, log: { _ in })
            } catch {
                printError("pushproof plan: \(error)")
                return ExitCode.failure
            }
            var measurement = Measurement(setup: setup, pushesPerCall: 0)
            for round in 0...calls {
                callNumber += 1
                let started = SystemClock.monotonicNanoseconds()
                let pushes: [PushRequest]
                do {
                    pushes = try workspace.ring(callID: "call-plan-\(callNumber)").filter { transports.contains($0.transport) }
                } catch {
                    await progress?.stop()
                    printError("pushproof plan: the ring rules failed: \(error)")
                    await pool.shutdown()
                    return ExitCode.failure
                }
                let results = await pool.deliver(contentsOf: pushes)
                counters.played.add(1, ordering: .relaxed)
                counters.pushes.add(results.count, ordering: .relaxed)
                guard round > 0 else { continue }  // the warm-up call opens connections and signs tokens
                measurement.pushesPerCall = pushes.count
                var last = started
                for result in results {
                    if case .delivered = result.outcome { last = max(last, result.finishedAt) } else { measurement.undelivered += 1 }
                }
                measurement.ringAllNanoseconds.append(last - started)
            }
            await pool.shutdown()
            measurement.connectionsOpened = pool.statistics.connectionsOpened
            measurements.append(measurement)
            progress?.clear()
            printNow("  " + line(for: measurement, target: target))
        }
        await progress?.stop()

        let identity = ScenarioSenderChoice.reference(gatewaySharesMachine: options.gatewayIsLocal)
        let verdict = Verdict(measurements: measurements, target: target, members: members)
        printNow("sender: \(identity.text)")
        printNow(verdict.text(withinMilliseconds: withinMilliseconds))
        var files = ReportFiles(command: "plan")
        files.write(jsonPath, json(measurements, verdict: verdict, sender: identity, people: members).serialized() + "\n")
        files.write(junitPath, junit(measurements, verdict: verdict, target: target, people: members))
        if files.failed { return ExitCode.ioError }
        if measurements.allSatisfy({ $0.undelivered == $0.pushesPerCall * calls }) {
            printError("pushproof plan: no push was delivered; is the gateway up, and are the credentials its own?")
            return ExitCode.failure
        }
        return verdict.recommended == nil ? RunReport.thresholdFailureExitCode : ExitCode.success
    }

    func line(for m: Measurement, target: UInt64) -> String {
        let verdict = m.meets(withinNanoseconds: target) ? "meets" : "misses"
        var text = "\(m.setup.label): \(m.pushesPerCall) pushes a call, all rung in "
            + "\(Format.milliseconds(m.medianNanoseconds)) ms median, \(Format.milliseconds(m.worstNanoseconds)) ms worst "
            + "(\(Format.significant(m.rate)) pushes/s) -> \(verdict) the target"
        if m.undelivered > 0 { text += "; \(m.undelivered) pushes not delivered" }
        return text
    }

    /// The answer to the launch question.
    struct Verdict {
        /// The set-up that meets the target with the fewest connections (then the fastest).
        var recommended: Measurement?
        /// Without one: the fastest set-up, and the machines that would ring the group in time at its rate.
        var fastest: Measurement?
        var machines: Int?

        init(measurements: [Measurement], target: UInt64, members: Int) {
            recommended = measurements.filter { $0.meets(withinNanoseconds: target) }
                .min { ($0.setup.totalConnections, $0.worstNanoseconds) < ($1.setup.totalConnections, $1.worstNanoseconds) }
            let delivering = measurements.filter { $0.undelivered == 0 && $0.rate > 0 }
            fastest = delivering.max { $0.rate < $1.rate }
            if recommended == nil, let fastest {
                // Each machine rings an equal share of the group at the rate one machine reached.
                let perMachine = fastest.rate * Double(target) / 1e9
                machines = perMachine > 0 ? Int((Double(fastest.pushesPerCall) / perMachine).rounded(.up)) : nil
            }
        }

        func text(withinMilliseconds: Int) -> String {
            if let recommended {
                return "plan: \(recommended.setup.label) per machine rings all \(recommended.pushesPerCall) phones within "
                    + "\(withinMilliseconds) ms (worst call \(Format.milliseconds(recommended.worstNanoseconds)) ms)"
            }
            guard let fastest, let machines else {
                return "plan: no set-up delivered every push; no plan can be made from this run"
            }
            return "plan: no set-up rings all \(fastest.pushesPerCall) phones within \(withinMilliseconds) ms on this machine; "
                + "the fastest, \(fastest.setup.label), reached \(Format.significant(fastest.rate)) pushes/s, "
                + "so \(machines) machines, each ringing an equal share of the group, would be needed"
        }
    }

    /// `people`: the group's size (a scenario's people).
    func json(_ measurements: [Measurement], verdict: Verdict, sender: SenderIdentity, people: Int) -> JSONValue {
        func setupJSON(_ setup: Setup) -> JSONValue {
            ["delivery_threads": .number(Double(setup.senders)), "connections_per_origin": .number(Double(setup.connections))]
        }
        var plan: JSONObject = ["meets_target": .bool(verdict.recommended != nil)]
        if let recommended = verdict.recommended { plan["setup"] = setupJSON(recommended.setup) }
        if let machines = verdict.machines, let fastest = verdict.fastest {
            plan["machines"] = .number(Double(machines))
            plan["setup"] = setupJSON(fastest.setup)
        }
        return [
            "members": .number(Double(people)), "within_ms": .number(Double(withinMilliseconds)),
            "calls_per_setup": .number(Double(calls)), "transport": .string(options.transportDescription),
            "streams_per_connection": .number(Double(options.streams)),
            "setups": .array(measurements.map { m in
                [
                    "setup": setupJSON(m.setup), "pushes_per_call": .number(Double(m.pushesPerCall)),
                    "ring_all_ms": .array(m.ringAllNanoseconds.map { .number(Double($0) / 1e6) }),
                    "worst_ms": .number(Double(m.worstNanoseconds) / 1e6), "median_ms": .number(Double(m.medianNanoseconds) / 1e6),
                    "pushes_per_second": .number(m.rate), "undelivered": .number(Double(m.undelivered)),
                    "connections_opened": .number(Double(m.connectionsOpened)),
                    "meets_target": .bool(m.meets(withinNanoseconds: UInt64(withinMilliseconds) * 1_000_000)),
                ]
            }),
            "plan": .object(plan),
            "sender_under_test": sender.json,
        ]
    }

    /// One testcase per set-up, which fails only when it did not deliver every push (a set-up
    /// missing the target is an answer, not a failure), and one for the plan, which fails when
    /// no set-up meets the target, as the exit status does.
    func junit(_ measurements: [Measurement], verdict: Verdict, target: UInt64, people: Int) -> String {
        var cases: [JUnit.TestCase] = measurements.map { m in
            let detail = line(for: m, target: target)
            return JUnit.TestCase(classname: "plan.setups", name: "\(m.setup.label): \(m.pushesPerCall) phones",
                                  time: Double(m.worstNanoseconds) / 1e9,
                                  result: m.undelivered > 0 ? .failed(type: "undelivered", message: detail) : .passed,
                                  systemOut: m.undelivered > 0 ? nil : detail)
        }
        let planText = verdict.text(withinMilliseconds: withinMilliseconds)
        cases.append(JUnit.TestCase(classname: "plan", name: "a set-up rings all phones of a \(people)-member group within \(withinMilliseconds) ms",
                                    time: 0, result: verdict.recommended != nil ? .passed : .failed(type: "capacity", message: planText),
                                    systemOut: verdict.recommended != nil ? planText : nil))
        return JUnit.document(name: "pushproof plan", suites: [JUnit.Suite(name: "pushproof plan", cases: cases)])
    }
}
