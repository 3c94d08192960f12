import Driver
import Fleet
import Foundation
import JSON
import PushModel
import RemoteGateway
import Reports
import Sender

/// `plan --target-members N --within 2s`: the fleet (N segments, M gateway replicas) that rings
/// a group of N within the target, sized by `FleetSizing` from this machine's measured rates
/// (or rates given with --sender-rate and --gateway-rate), with the `k8s render` that runs it.
struct FleetRequest {
    var members: Int
    var withinNanoseconds: UInt64
    var senderRate: Double?
    var gatewayRate: Double?
    var headroom: Double
    var image: String
    /// The measured gateway's control API: its CPU per answered push.
    var admin: AdminClient?
    var needsMeasuring: Bool { senderRate == nil || gatewayRate == nil }

    static let optionNames = ["within", "sender-rate", "gateway-rate", "headroom", "image"]

    static let specs: [OptionSpec] = [
        .value("target-members", "N", "Size a fleet that rings a group of N within --within: segments (driver + sender pods) and "
               + "gateway replicas, from this machine's rates, and the 'pushproof k8s render' that runs it."),
        .value("within", "DURATION", "With --target-members: the target, e.g. 2s or 1500ms.", default: "--within-ms"),
        .value("sender-rate", "PUSHES/S", "With --target-members: one segment's rate, instead of measuring the set-ups.", default: "measured"),
        .value("gateway-rate", "PUSHES/S", "With --target-members: one gateway core's rate with specs and record on, instead of "
               + "measuring the --admin gateway's CPU per push.", default: "measured"),
        .value("headroom", "FRACTION", "With --target-members: the share of each measured rate the fleet is sized on.", default: "0.7"),
        .value("image", "IMAGE", "With --target-members: the image in the printed k8s render command.", default: "registry.example/pushproof:0.1"),
    ]

    /// Nil without --target-members (whose companions are then refused).
    init?(_ arguments: ParsedArguments) throws(UsageError) {
        guard arguments.value("target-members") != nil else {
            if let stray = Self.optionNames.first(where: { arguments.value($0) != nil }) {
                throw UsageError(message: "--\(stray) goes with --target-members")
            }
            return nil
        }
        if arguments.value("scenario") != nil {
            throw UsageError(message: "--target-members sizes a fleet for the built-in group call, not a --scenario")
        }
        members = try arguments.int("target-members", default: 2, range: 2...100_000_000)
        if let text = arguments.value("within") {
            guard let duration = ArrivalSchedule.parseDuration(text), duration > .zero else {
                throw UsageError(message: "--within takes a duration above 0 (2s, 1500ms), not '\(text)'")
            }
            withinNanoseconds = UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
        } else {
            withinNanoseconds = UInt64(try arguments.int("within-ms", default: 1000, range: 1...3_600_000)) * 1_000_000
        }
        func rate(_ name: String) throws(UsageError) -> Double? {
            guard let text = arguments.value(name) else { return nil }
            guard let value = Double(text), value.isFinite, value > 0 else {
                throw UsageError(message: "--\(name) takes pushes per second above 0, not '\(text)'")
            }
            return value
        }
        senderRate = try rate("sender-rate")
        gatewayRate = try rate("gateway-rate")
        let headroomText = arguments.value("headroom") ?? "0.7"
        guard let headroom = Double(headroomText), headroom > 0, headroom <= 1 else {
            throw UsageError(message: "--headroom is the share of a measured rate to plan on, above 0 and at most 1, not '\(headroomText)'")
        }
        self.headroom = headroom
        image = arguments.value("image") ?? "registry.example/pushproof:0.1"
        admin = try arguments.value("admin").map { url throws(UsageError) in try AdminClient(url: url) }
        if arguments.value("junit") != nil {
            throw UsageError(message: "--junit is for a one-machine plan; a fleet's sizing goes to --json")
        }
        if senderRate != nil, gatewayRate != nil,
           let stray = ["members", "try-connections", "try-senders", "gateway", "admin"].first(where: { arguments.value($0) != nil }) {
            throw UsageError(message: "--\(stray) is for measuring; with --sender-rate and --gateway-rate nothing is measured")
        }
        if gatewayRate == nil, admin == nil {
            throw UsageError(message: "--target-members measures a gateway core through its control API: give --admin URL "
                             + "(the --gateway serve's, run with --threads 1 --specs --record) or --gateway-rate")
        }
    }
}

/// What the gateway's `GET /status` says of its cost: its CPU and the pushes it answered.
struct GatewayCost {
    var cpuSeconds: Double
    var answered: Double
    var threads: Int?
    var specs: Bool
    var recording: Bool
    /// Spec violations counted so far: pushes that broke a rule take another path through the judge.
    var violations: Int?

    init(_ admin: AdminClient) throws {
        let answer = try admin.request("GET", "/status", body: nil)
        guard answer.status == 200, let status = try? JSONParser.parse(answer.body) else {
            throw AdminError(message: "control API: GET /status answered HTTP \(answer.status)")
        }
        guard let cpu = status["process_cpu_seconds"]?.doubleValue, let answered = status["answered"]?.doubleValue else {
            throw AdminError(message: "\(admin.baseURL)/status has no process_cpu_seconds (a pushproof serve before plan sized fleets): "
                             + "give --gateway-rate")
        }
        cpuSeconds = cpu
        self.answered = answered
        threads = status["threads"]?.intValue
        specs = status["specs"].map { $0 != .null } ?? false
        recording = status["recording"]?["enabled"] == true
        violations = specs ? try admin.specViolationCount() : nil
    }
}

extension PlanCommand {
    /// Pushes one call rings a callee on, with the transports asked for (the poolse rules on a group of two).
    func pushesPerCallee() throws -> Int {
        let workspace = try GroupWorkspace(members: 2, store: InMemoryDeviceStore(),
                                           app: AppConfig(iosBundleID: options.bundleID, fcmProjectID: "plan-fleet"), scope: 0x31)
        return try workspace.ring(callID: "call-fleet").filter { transports.contains($0.transport) }.count
    }

    func runFleet(_ fleet: FleetRequest) async -> Int32 {
        let pushes: Int
        do {
            pushes = try pushesPerCallee() * (fleet.members - 1)
        } catch {
            printError("pushproof plan: the ring rules failed: \(error)")
            return ExitCode.failure
        }
        let within = Format.milliseconds(fleet.withinNanoseconds)
        printNow("pushproof plan: a fleet to ring a group of \(Format.grouped(fleet.members)) (\(Format.grouped(pushes)) pushes a call) "
                 + "within \(within) ms")
        // Given rates keep their defaults: the sender's own set-up, no segment CPU, no first ring.
        var measured = FleetMeasurement(setup: CapacityPlan.Setup(senders: options.senders, connections: options.connections))
        if fleet.needsMeasuring {
            switch await measure(for: fleet) {
            case .measured(let measurement): measured = measurement
            case .failed(let status): return status
            }
        }
        let senderRate = fleet.senderRate ?? measured.senderRate, gatewayRate = fleet.gatewayRate ?? measured.gatewayRate
        let senderBasis = fleet.senderRate == nil ? measured.senderBasis : "given (--sender-rate)"
        let gatewayBasis = fleet.gatewayRate == nil ? measured.gatewayBasis : "given (--gateway-rate)"
        let (setup, segmentCPU, firstRing) = (measured.setup, measured.segmentCPU, measured.firstRing)
        let sizing: FleetSizing
        do {
            sizing = try FleetSizing(.init(pushes: pushes, withinNanoseconds: fleet.withinNanoseconds, senderRate: senderRate,
                                           gatewayRate: gatewayRate, headroom: fleet.headroom, firstRingNanoseconds: firstRing))
        } catch {
            printError("pushproof plan: \(error)")
            return ExitCode.usage
        }
        printNow("sender: \(Format.grouped(Int(senderRate.rounded()))) pushes/s a segment, \(senderBasis)")
        printNow("gateway: \(Format.grouped(Int(gatewayRate.rounded()))) pushes/s a core, \(gatewayBasis)")
        for reason in sizing.reasons { printNow(reason) }
        var fleetJSON: JSONObject = sizing.json.objectValue ?? [:]
        fleetJSON["sender_basis"] = .string(senderBasis)
        fleetJSON["gateway_basis"] = .string(gatewayBasis)
        if let unreachable = sizing.unreachable {
            printNow("plan: no fleet rings all \(Format.grouped(pushes)) phones within \(within) ms: \(unreachable)")
        } else {
            let render = renderArguments(sizing, fleet: fleet, setup: setup, segmentCPU: segmentCPU)
            // The printed command is one `k8s render` takes: checked here, not left to the user.
            do {
                _ = try K8sRenderCommand(ParsedArguments.parse(Array(render.dropFirst(2)), for: K8sRenderCommand.spec))
            } catch {
                printError("pushproof plan: the k8s render command it would print is refused: \(error)")
                return ExitCode.failure
            }
            let line = "pushproof " + render.map(FleetManifests.shellQuoted).joined(separator: " ")
            printNow("plan: \(Format.counted(sizing.segments, "segment")) (\(Format.grouped(sizing.pushesPerSegment)) pushes each) "
                     + "and \(Format.counted(sizing.gateways, "gateway")) ring all \(Format.grouped(pushes)) phones within \(within) ms")
            printNow("run it (docs/scale-out.md, \"Sizing a fleet\"): \(line)"
                     + (segmentCPU == nil ? "  (add --segment-cpu: a given --sender-rate says nothing of a segment's CPU)" : ""))
            fleetJSON["render_command"] = .array((["pushproof"] + render).map { .string($0) })
        }
        var document: JSONObject = measured.json?.objectValue ?? [:]
        document["fleet"] = .object(fleetJSON)
        var files = ReportFiles(command: "plan")
        files.write(jsonPath, JSONValue.object(document).serialized() + "\n")
        if files.failed { return ExitCode.ioError }
        return sizing.unreachable == nil ? ExitCode.success : RunReport.thresholdFailureExitCode
    }

    /// What measuring found for a fleet: the rates not given, what each rests on, the fastest
    /// set-up, a segment's CPU and the soonest first ring.
    struct FleetMeasurement {
        var senderRate = 0.0, gatewayRate = 0.0
        var senderBasis = "", gatewayBasis = ""
        var setup: CapacityPlan.Setup
        var segmentCPU: String?
        var firstRing: UInt64?
        var json: JSONValue?
    }

    enum FleetMeasuring {
        case measured(FleetMeasurement)
        case failed(Int32)
    }

    /// The set-ups measured as `plan` measures them, and the --admin gateway's CPU per push meanwhile.
    func measure(for fleet: FleetRequest) async -> FleetMeasuring {
        var found = FleetMeasurement(setup: CapacityPlan.Setup(senders: options.senders, connections: options.connections))
        do {
            let before = try fleet.admin.map { try GatewayCost($0) }
            let plan: CapacityPlan, measurements: [CapacityPlan.Measurement]
            switch await measureSetups() {
            case .measured(let measuredPlan, let measuredSetups): (plan, measurements) = (measuredPlan, measuredSetups)
            case .failed(let status): return .failed(status)
            }
            let after = try fleet.admin.map { try GatewayCost($0) }
            let delivering = measurements.filter { $0.undelivered == 0 && $0.rate > 0 }
            guard let fastest = delivering.max(by: { $0.rate < $1.rate }) else {
                printError("pushproof plan: no set-up delivered every push; no fleet can be sized from this run")
                return .failed(ExitCode.failure)
            }
            found.firstRing = measurements.compactMap(\.firstRingNanoseconds).min()
            let sharesMachine = options.gatewayIsLocal == true
            let shared = sharesMachine
                ? "; the gateway shared this machine's \(ProcessInfo.processInfo.activeProcessorCount) cores" : ""
            if fleet.senderRate == nil {
                found.senderRate = fastest.rate
                found.setup = fastest.setup
                found.senderBasis = "measured: the fastest set-up, \(fastest.setup.label), \(fastest.pushesPerCall) pushes a call, "
                    + "slowest of \(Format.counted(calls, "call")); \(Format.significant(fastest.cores)) cores busy, "
                    + "\(Format.significant(fastest.cpuNanosecondsPerPush / 1e3)) µs CPU a push "
                    + "(the driver's part \(Format.significant(fastest.driverCPUNanosecondsPerPush / 1e3)) µs)\(shared)"
                found.segmentCPU = Self.quantity(cores: fastest.cores)
                if fastest.cores < 0.9 {
                    // Not its own limit: a sender at full speed keeps a core busy (Benchmarks/README.md, segment-overhead.sh).
                    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init)
                    printNow("note: the sender kept only \(Format.significant(fastest.cores)) cores busy"
                             + (load.map { " (load average \($0) on \(ProcessInfo.processInfo.activeProcessorCount) cores)" } ?? "")
                             + ": it waited for the gateway or for CPU other work took, so its rate is low and the fleet errs large "
                             + "(at \(Format.significant(fastest.cpuNanosecondsPerPush / 1e3)) µs CPU a push, a core of its own would allow up to "
                             + "\(Format.grouped(Int(1e9 / max(1, fastest.cpuNanosecondsPerPush)))) pushes/s); "
                             + "measure on a quiet machine, or give --sender-rate")
                }
            }
            if fleet.gatewayRate == nil, let before, let after, let admin = fleet.admin {
                let (cpu, answered) = (after.cpuSeconds - before.cpuSeconds, after.answered - before.answered)
                guard cpu > 0, answered > 0 else {
                    printError("pushproof plan: the gateway at \(admin.baseURL) answered \(Int(answered)) pushes on \(cpu) s of CPU "
                               + "while plan rang: is --admin the --gateway's control API?")
                    return .failed(ExitCode.failure)
                }
                found.gatewayRate = answered / cpu
                let violations = (after.violations ?? 0) - (before.violations ?? 0)
                var facts = ["\(Format.significant(cpu / answered * 1e6)) µs CPU a push answered, \(Format.grouped(Int(answered))) answered",
                             after.specs ? "specs on (\(violations) violations)" : "NO --specs (a fleet's gateways judge every push: this rate is too high)",
                             after.recording ? "record on" : "NO --record (a fleet's gateways record: this rate is too high)"]
                if let threads = after.threads { facts.append(Format.counted(threads, "thread")) }
                found.gatewayBasis = "measured at \(admin.baseURL): " + facts.joined(separator: ", ")
                    + (sharesMachine ? "; it shared this machine's \(ProcessInfo.processInfo.activeProcessorCount) cores with the sender, "
                        + "so a core of its own does more" : "")
            }
            let verdict = plan.verdict(measurements)
            found.json = plan.json(measurements, verdict: verdict, sender: ScenarioSenderChoice.reference(gatewaySharesMachine: options.gatewayIsLocal),
                                     transport: options.transportDescription, streams: options.streams)
        } catch {
            printError("pushproof plan: \(error)")
            return .failed(ExitCode.failure)
        }
        return .measured(found)
    }

    /// `k8s render`'s arguments for the sized fleet: each segment drives the whole call (its share
    /// of the devices) with the measured set-up, judged on the target as a threshold.
    func renderArguments(_ sizing: FleetSizing, fleet: FleetRequest, setup: CapacityPlan.Setup, segmentCPU: String?) -> [String] {
        var arguments = ["k8s", "render", "ring-fanout", "--segments", String(sizing.segments), "--gateways", String(sizing.gateways),
                         "--image", fleet.image, "--gateway-cpu", "1"]
        if let segmentCPU { arguments += ["--segment-cpu", segmentCPU] }
        arguments += ["--", "--members", String(fleet.members), "--count", String(calls),
                      "--senders", String(setup.senders), "--connections", String(setup.connections),
                      "--max-in-flight", String(max(1, setup.connections * options.streams))]
        if transports.count == 1, let only = transports.first { arguments += ["--transport", only.rawValue] }
        arguments += ["--threshold", "time_to_ring_all_ms<=\(Format.number(Double(fleet.withinNanoseconds) / 1e6))"]
        return arguments
    }

    /// Cores as a Kubernetes CPU quantity, rounded up to a tenth: 1.23 -> "1300m", 2.0 -> "2".
    static func quantity(cores: Double) -> String {
        let tenths = max(1, Int((cores * 10 - 1e-9).rounded(.up)))
        return tenths % 10 == 0 ? String(tenths / 10) : "\(tenths * 100)m"
    }
}
