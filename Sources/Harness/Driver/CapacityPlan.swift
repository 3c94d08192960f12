import Clocks
import JSON
import PushModel
import Reports

/// `pushproof plan`: capacity planning for a group call. Rings one group through a sender with
/// each candidate set-up (delivery threads x connections per origin), measures the time until
/// every phone was rung, and answers the launch question: which set-up rings the whole group
/// within the target, or, if none does on this machine, how many machines would.
public struct CapacityPlan: Sendable {
    /// One candidate set-up.
    public struct Setup: Equatable, Sendable {
        public var senders: Int
        public var connections: Int
        /// A sender measured as it is configured (`--scenario`): its name instead of the counts.
        public var described: String? = nil
        public var totalConnections: Int { senders * connections }
        public var label: String {
            described ?? "\(Format.counted(senders, "thread")) x \(Format.counted(connections, "connection"))"
        }

        public init(senders: Int, connections: Int, described: String? = nil) {
            self.senders = senders
            self.connections = connections
            self.described = described
        }
    }

    /// What one set-up did.
    public struct Measurement: Sendable {
        public var setup: Setup
        public var pushesPerCall: Int
        public var ringAllNanoseconds: [UInt64] = []
        public var undelivered = 0
        public var connectionsOpened = 0
        /// Over the measured calls: this process's CPU (driver and sender, every thread), the part
        /// of it spent building the calls' pushes (the driver's), and the calls' wall time.
        public var cpuNanoseconds: UInt64 = 0
        public var driverCPUNanoseconds: UInt64 = 0
        public var wallNanoseconds: UInt64 = 0
        /// The soonest a measured call had its first push delivered.
        public var firstRingNanoseconds: UInt64?

        public init(setup: Setup, pushesPerCall: Int) {
            self.setup = setup
            self.pushesPerCall = pushesPerCall
        }

        public var worstNanoseconds: UInt64 { ringAllNanoseconds.max() ?? 0 }
        public var medianNanoseconds: UInt64 {
            let sorted = ringAllNanoseconds.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }
        /// Pushes per second over the slowest call.
        public var rate: Double {
            worstNanoseconds == 0 ? 0 : Double(pushesPerCall) / (Double(worstNanoseconds) / 1e9)
        }
        /// Cores the process kept busy while it rang: what a segment pod needs to ring at `rate`.
        public var cores: Double { wallNanoseconds == 0 ? 0 : Double(cpuNanoseconds) / Double(wallNanoseconds) }
        /// CPU per push delivered, driver and sender, and the driver's part of it.
        public var cpuNanosecondsPerPush: Double { deliveredCount == 0 ? 0 : Double(cpuNanoseconds) / Double(deliveredCount) }
        public var driverCPUNanosecondsPerPush: Double { deliveredCount == 0 ? 0 : Double(driverCPUNanoseconds) / Double(deliveredCount) }
        var deliveredCount: Int { pushesPerCall * ringAllNanoseconds.count - undelivered }

        public func meets(withinNanoseconds target: UInt64) -> Bool {
            undelivered == 0 && !ringAllNanoseconds.isEmpty && worstNanoseconds <= target
        }

        /// One play of a scenario (`plan --scenario`) as a measured call: its slowest event's
        /// time to ring all.
        public mutating func add(play summary: RunSummary) {
            let counts = summary.counts
            pushesPerCall = counts.sent
            // Pushes answered gone are the sender's cleanup, not undelivered rings.
            undelivered += counts.sent - counts.delivered - counts.tokensRemoved
            ringAllNanoseconds.append(summary.timeToRingAll.max)
        }
    }

    /// The answer to the launch question.
    public struct Verdict: Sendable {
        /// The set-up that meets the target with the fewest connections (then the fastest).
        public var recommended: Measurement?
        /// Without one: the fastest set-up, and the machines that would ring the group in time at its rate.
        public var fastest: Measurement?
        public var machines: Int?

        public init(measurements: [Measurement], target: UInt64, members: Int) {
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

        public func text(withinMilliseconds: Int) -> String {
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

    /// Why a plan stopped before measuring every set-up.
    public enum Failure: Error, CustomStringConvertible {
        /// A set-up's sender could not be made.
        case senderDidNotStart(any Error)
        /// The call's pushes could not be made (the ring rules).
        case ringFailed(any Error)

        public var description: String {
            switch self {
            case .senderDidNotStart(let error): "\(error)"
            case .ringFailed(let error): "the ring rules failed: \(error)"
            }
        }
    }

    /// The group's size (a scenario's people).
    public var members: Int
    public var withinMilliseconds: Int
    /// Measured calls (or plays) per set-up, after one warm-up call.
    public var calls: Int
    public var setups: [Setup]

    public init(members: Int, withinMilliseconds: Int, calls: Int, setups: [Setup]) {
        self.members = members
        self.withinMilliseconds = withinMilliseconds
        self.calls = calls
        self.setups = setups
    }

    /// Every pair of delivery threads and connections per origin, threads first.
    public static func setups(senders: [Int], connections: [Int]) -> [Setup] {
        senders.flatMap { threads in connections.map { Setup(senders: threads, connections: $0) } }
    }

    public var targetNanoseconds: UInt64 { UInt64(withinMilliseconds) * 1_000_000 }

    /// The plan with only 1-connection set-ups (a libcurl that cannot reuse h2c connections
    /// runs every h2c set-up on one connection per origin, whatever it asked for).
    public func limitedToOneConnection() -> CapacityPlan {
        var plan = self
        let limited = setups.filter { $0.connections == 1 }
        plan.setups = limited.isEmpty ? [Setup(senders: setups[0].senders, connections: 1)] : limited
        return plan
    }

    /// Measures each set-up in turn on a sender of its own (fresh connections): one warm-up
    /// call that opens the connections and signs tokens, then `calls` measured ones, each call's
    /// figure from its start to the last delivered push's end on `clock`; the CPU of each
    /// measured call on `processCPU` (and of building its pushes, on `threadCPU`). `measured`
    /// is called after each set-up.
    public func measure(sender makeSender: (Setup) throws -> any CapacitySender,
                        ring: (_ callNumber: Int) throws -> [PushRequest],
                        clock: () -> UInt64 = SystemClock.monotonicNanoseconds,
                        processCPU: () -> UInt64 = SystemClock.processCPUNanoseconds,
                        threadCPU: () -> UInt64 = SystemClock.threadCPUNanoseconds,
                        counters: ProgressCounters? = nil,
                        measured: (Measurement) -> Void = { _ in }) async throws(Failure) -> [Measurement] {
        var measurements: [Measurement] = []
        var callNumber = 0
        for setup in setups {
            let sender: any CapacitySender
            do {
                sender = try makeSender(setup)
            } catch {
                throw .senderDidNotStart(error)
            }
            var measurement = Measurement(setup: setup, pushesPerCall: 0)
            for round in 0...calls {
                callNumber += 1
                let started = clock()
                let (cpuStarted, driverStarted) = (processCPU(), threadCPU())
                let pushes: [PushRequest]
                do {
                    pushes = try ring(callNumber)
                } catch {
                    await sender.shutdown()
                    throw .ringFailed(error)
                }
                let driverCPU = threadCPU() &- driverStarted
                let results = await sender.deliver(call: pushes)
                let (cpu, ended) = (processCPU() &- cpuStarted, clock())
                counters?.played.add(1, ordering: .relaxed)
                counters?.pushes.add(results.count, ordering: .relaxed)
                guard round > 0 else { continue }  // the warm-up call opens connections and signs tokens
                measurement.pushesPerCall = pushes.count
                var (first, last) = (UInt64.max, started)
                for result in results {
                    if case .delivered = result.outcome {
                        last = max(last, result.finishedAt)
                        first = min(first, result.finishedAt)
                    } else {
                        measurement.undelivered += 1
                    }
                }
                measurement.ringAllNanoseconds.append(last - started)
                measurement.cpuNanoseconds += cpu
                measurement.driverCPUNanoseconds += driverCPU
                measurement.wallNanoseconds += ended &- started
                if first != .max { measurement.firstRingNanoseconds = min(measurement.firstRingNanoseconds ?? .max, first &- started) }
            }
            await sender.shutdown()
            measurement.connectionsOpened = sender.connectionsOpened
            measurements.append(measurement)
            measured(measurement)
        }
        return measurements
    }

    public func verdict(_ measurements: [Measurement]) -> Verdict {
        Verdict(measurements: measurements, target: targetNanoseconds, members: members)
    }

    /// One set-up's line: its median and worst call, its rate, whether it meets the target.
    public func line(for m: Measurement) -> String {
        let verdict = m.meets(withinNanoseconds: targetNanoseconds) ? "meets" : "misses"
        var text = "\(m.setup.label): \(m.pushesPerCall) pushes a call, all rung in "
            + "\(Format.milliseconds(m.medianNanoseconds)) ms median, \(Format.milliseconds(m.worstNanoseconds)) ms worst "
            + "(\(Format.significant(m.rate)) pushes/s) -> \(verdict) the target"
        if m.undelivered > 0 { text += "; \(m.undelivered) pushes not delivered" }
        return text
    }

    /// The plan as JSON (`plan --json`); `transport` and `streams` describe the sender's configuration.
    public func json(_ measurements: [Measurement], verdict: Verdict, sender: SenderIdentity, transport: String,
                     streams: Int) -> JSONValue {
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
            "members": .number(Double(members)), "within_ms": .number(Double(withinMilliseconds)),
            "calls_per_setup": .number(Double(calls)), "transport": .string(transport),
            "streams_per_connection": .number(Double(streams)),
            "setups": .array(measurements.map { m in
                [
                    "setup": setupJSON(m.setup), "pushes_per_call": .number(Double(m.pushesPerCall)),
                    "ring_all_ms": .array(m.ringAllNanoseconds.map { .number(Double($0) / 1e6) }),
                    "worst_ms": .number(Double(m.worstNanoseconds) / 1e6), "median_ms": .number(Double(m.medianNanoseconds) / 1e6),
                    "pushes_per_second": .number(m.rate), "undelivered": .number(Double(m.undelivered)),
                    "connections_opened": .number(Double(m.connectionsOpened)),
                    "cpu_us_per_push": .number(m.cpuNanosecondsPerPush / 1e3), "driver_cpu_us_per_push": .number(m.driverCPUNanosecondsPerPush / 1e3),
                    "cores": .number(m.cores),
                    "meets_target": .bool(m.meets(withinNanoseconds: targetNanoseconds)),
                ]
            }),
            "plan": .object(plan),
            "sender_under_test": sender.json,
        ]
    }

    /// One testcase per set-up, which fails only when it did not deliver every push (a set-up
    /// missing the target is an answer, not a failure), and one for the plan, which fails when
    /// no set-up meets the target, as the exit status does.
    public func junit(_ measurements: [Measurement], verdict: Verdict) -> String {
        var cases: [JUnit.TestCase] = measurements.map { m in
            let detail = line(for: m)
            return JUnit.TestCase(classname: "plan.setups", name: "\(m.setup.label): \(m.pushesPerCall) phones",
                                  time: Double(m.worstNanoseconds) / 1e9,
                                  result: m.undelivered > 0 ? .failed(type: "undelivered", message: detail) : .passed,
                                  systemOut: m.undelivered > 0 ? nil : detail)
        }
        let planText = verdict.text(withinMilliseconds: withinMilliseconds)
        cases.append(JUnit.TestCase(classname: "plan", name: "a set-up rings all phones of a \(members)-member group within \(withinMilliseconds) ms",
                                    time: 0, result: verdict.recommended != nil ? .passed : .failed(type: "capacity", message: planText),
                                    systemOut: verdict.recommended != nil ? planText : nil))
        return JUnit.document(name: "pushproof plan", suites: [JUnit.Suite(name: "pushproof plan", cases: cases)])
    }
}

/// A set-up's sender as the plan rings through it: the CLI adapts the reference sender's pool.
public protocol CapacitySender: Sendable {
    /// Delivers a call's pushes at once; each push's outcome and when it ended (monotonic ns,
    /// the plan's clock), in push order.
    func deliver(call pushes: [PushRequest]) async -> [(outcome: PushOutcome, finishedAt: UInt64)]
    /// After `shutdown`: the connections it opened in all.
    var connectionsOpened: Int { get }
    func shutdown() async
}
