import Driver
import MockGateway
import RemoteGateway
import Reports
import Scenario
import ScenarioLoad
import ScenarioRunner

extension PlanCommand {
    /// `plan --scenario FILE`: the scenario played `calls` times, each through a fresh sender
    /// (as it is configured: a team's sender has its own pool) and gateway (the embedded one
    /// fresh, or a `pushproof serve` reset), events back to back (`--events-in-flight` at a time). A play's figure is its slowest event's time to ring all; it meets the
    /// target when every expected push was accepted within it.
    func runScenario(path: String, specs: ScenarioSpecs, eventsInFlight: Int, gateway: ScenarioLoadGateway) async -> Int32 {
        guard let (scenario, judge) = ScenarioDrive.load(path, specs: specs, command: "plan") else { return ExitCode.ioError }
        printNow("pushproof plan --scenario \(scenario.name): \(Format.counted(scenario.events.count, "event")), \(scenario.people.count) people, "
                 + "through \(senderChoice.description) against \(gateway.description), at most \(Format.counted(eventsInFlight, "event")) in flight; "
                 + "target: every phone rung within \(withinMilliseconds) ms; \(Format.counted(calls, "play"))")
        let plan = CapacityPlan(members: scenario.people.count, withinMilliseconds: withinMilliseconds, calls: calls,
                                setups: [CapacityPlan.Setup(senders: 1, connections: 1)])
        var measurement = CapacityPlan.Measurement(setup: plan.setups[0], pushesPerCall: 0)
        var identity = senderChoice.identity(of: senderChoice.make(scenarioFile: path), gatewaySharesMachine: gateway.sharesMachine)
        var options = ScenarioLoadOptions()
        options.eventsInFlight = eventsInFlight
        let counters = ProgressCounters(total: calls * scenario.events.count, plannedSeconds: nil)
        let progress = TerminalProgress.start(counters, unit: "events", quiet: quiet)
        var findings: [String] = []
        for play in 1...calls {
            let result: ScenarioLoadResult
            let sender = senderChoice.make(scenarioFile: path)
            do {
                result = try await gateway.run(scenario, judge: judge, sender: sender, options: options, progress: counters)
                // After the run: an adapter names itself in its `hello`.
                identity = senderChoice.identity(of: sender, gatewaySharesMachine: gateway.sharesMachine)
            } catch {
                await progress?.stop()
                printError("pushproof plan: \(error)")
                return ExitCode.failure
            }
            if let aborted = result.aborted {
                await progress?.stop()
                printError("pushproof plan: play \(play): the sender failed: \(aborted)")
                return ExitCode.failure
            }
            let counts = result.summary.counts
            // A plan of a sender that pushes the wrong devices sizes nothing: findings fail it.
            findings += result.findings.map { "play \(play): \($0)" }
            if counts.abandoned > 0 { findings.append("play \(play): \(counts.abandoned) expected pushes never reached the gateway") }
            if counts.unexpected > 0 { findings.append("play \(play): \(counts.unexpected) pushes reached the gateway that no event called for") }
            measurement.add(play: result.summary)
        }
        await progress?.stop()
        measurement.setup.described = "\(identity.name) as configured"
        printNow("  " + plan.line(for: measurement))
        let verdict = plan.verdict([measurement])
        printNow("sender: \(identity.text)")
        printNow(verdict.text(withinMilliseconds: withinMilliseconds))
        var files = ReportFiles(command: "plan")
        files.write(jsonPath, plan.json([measurement], verdict: verdict, sender: identity, transport: self.options.transportDescription,
                                        streams: self.options.streams).serialized() + "\n")
        files.write(junitPath, plan.junit([measurement], verdict: verdict))
        if files.failed { return ExitCode.ioError }
        if measurement.pushesPerCall == 0 || measurement.undelivered == measurement.pushesPerCall * calls {
            printError("pushproof plan: no push was delivered")
            return ExitCode.failure
        }
        if !findings.isEmpty {
            printNow("result: FAILED")
            for finding in findings { printError("pushproof plan: \(finding)") }
            return ExitCode.failure
        }
        return verdict.recommended == nil ? RunReport.thresholdFailureExitCode : ExitCode.success
    }
}
