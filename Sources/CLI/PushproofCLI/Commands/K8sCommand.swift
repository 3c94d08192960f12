import Fleet
import Crypto
import Foundation
import Reports
import Sender

/// `pushproof k8s render`: one load run as plain Kubernetes objects (Fleet's FleetManifests),
/// with fresh test credentials whose token_uri is the run's gateway Service.
struct K8sRenderCommand: Subcommand {
    static let spec = CommandSpec(
        name: "k8s render",
        abstract: "Write a load run as plain Kubernetes YAML: an Indexed Job of segments, a gateway StatefulSet, Services, ConfigMap, Secret.",
        positionals: ["ring-fanout|message-storm?", "DRIVE-OPTION…?"],
        options: [
            .value("scenario", "FILE", "Drive this scenario (it travels in the ConfigMap) instead of a built-in workload."),
            .value("sender-cmd", "CMD", "With --scenario: the sender under test behind an adapter, run in each segment pod (drive --sender-cmd).",
                   default: "the reference sender"),
            .value("segments", "N", "Segment pods (the Job's parallelism and completions).", default: "2"),
            .value("segment-weights", "W,…", "drive --segment-weights for every pod.", default: "equal"),
            .value("gateways", "M", "Gateway pods (a StatefulSet); segment i drives gateway i mod M.", default: "1"),
            .value("image", "IMAGE", "The pushproof image (Containerfile) for the segments and the gateways."),
            .value("namespace", "NS", "The namespace every object is in.", default: "default"),
            .value("run-id", "ID", "The run's id: every object's pushproof.dev/run label and its names' middle.", default: "generated"),
            .value("start-at", "TIME", "The planned start of every segment (RFC 3339 or Unix ms).", default: "now + --lead"),
            .value("lead", "SECONDS", "Without --start-at: start this long after rendering (time to apply and schedule).", default: "120"),
            .value("segment-cpu", "QUANTITY", "CPU of each segment pod (requests = limits)."),
            .value("segment-memory", "QUANTITY", "Memory of each segment pod."),
            .value("gateway-cpu", "QUANTITY", "CPU of each gateway pod."),
            .value("gateway-memory", "QUANTITY", "Memory of each gateway pod."),
            .value("out", "DIR", "Write one file an object into DIR instead of one stream to stdout."),
        ],
        discussion: """
        Options after '--' go to every segment's drive as they are (--rate, --duration, --count,
        --threshold, ...); the pods set --segment, --start-at, --gateway, --result and the credentials
        themselves. A lost or failed segment fails the Job (backoffLimitPerIndex 0, maxFailedIndexes 0):
        the run is void, never late. Gateways serve h2c inside the cluster. 'pushproof plan
        --target-members N --within 2s' prints this command for a fleet sized to a target.
        docs/scale-out.md, "On Kubernetes", goes from sizing and render to report.

        EXAMPLE:
          pushproof k8s render message-storm --segments 4 --gateways 2 --image registry.example/pushproof:0.1 \\
              --run-id storm-1 -- --rate 2000 --duration 60 | kubectl apply -f -
        """)

    let plan: FleetPlan
    let outDirectory: String?

    init(_ arguments: ParsedArguments) throws {
        var positionals = arguments.positionals
        let workload: FleetPlan.Workload
        if let scenarioPath = arguments.value("scenario") {
            guard let contents = try? String(contentsOfFile: scenarioPath, encoding: .utf8) else {
                throw UsageError(message: "--scenario: cannot read \(scenarioPath)")
            }
            workload = .scenario(contents: contents)
        } else {
            guard let name = positionals.first, !name.hasPrefix("-") else {
                throw UsageError(message: "give a workload (ring-fanout or message-storm) or --scenario FILE")
            }
            workload = .builtIn(name)
            positionals.removeFirst()
        }
        guard let image = arguments.value("image") else { throw UsageError(message: "--image is required (build it from Containerfile)") }
        let startAt: String
        if let given = arguments.value("start-at") {
            startAt = given
        } else {
            let lead = try arguments.int("lead", default: 120, range: 0...86_400)
            startAt = String(Int64((Date().timeIntervalSince1970 + Double(lead)) * 1000))
        }
        let runID = arguments.value("run-id") ?? "run-" + String(UInt64.random(in: 0..<(1 << 40)), radix: 36)
        let segments = try arguments.int("segments", default: 2, range: 1...1000)
        let gateways = try arguments.int("gateways", default: 1, range: 1...100)
        do {
            plan = try FleetPlan(
                runID: runID, namespace: arguments.value("namespace") ?? "default",
                segments: segments, segmentWeights: arguments.value("segment-weights"),
                gateways: gateways, image: image, workload: workload,
                sender: arguments.value("sender-cmd").map { .command($0) } ?? .reference, driveOptions: positionals,
                segmentResources: .init(cpu: arguments.value("segment-cpu"), memory: arguments.value("segment-memory")),
                gatewayResources: .init(cpu: arguments.value("gateway-cpu"), memory: arguments.value("gateway-memory")),
                startAt: startAt)
        } catch {
            throw UsageError(message: error.description)
        }
        outDirectory = arguments.value("out")
    }

    /// Fresh test credentials trusted by the gateways, whose token_uri is the run's gateway Service.
    static func credentials(for plan: FleetPlan) throws -> FleetPlan.Credentials {
        let names = FleetNames(runID: plan.runID, namespace: plan.namespace)
        let (keyID, teamID) = ("ABC123DEFG", "TEAM123456")
        let generated = try TestCredentialFiles.make(gateway: String(names.tokenURL.dropLast("/token".count)), keyID: keyID, teamID: teamID,
                                                     project: "poolse-example", bundleIDs: ["com.example.loop"])
        let configuration = generated.files.first { $0.name == "gateway.json" }?.contents ?? "{}"
        var files = generated.files.filter { $0.name != "gateway.json" }.map { ($0.name, $0.contents) }
        // One provider token for every segment, signed now: pods that each signed their own
        // would trip the gateways' TooManyProviderTokenUpdates, as Apple's would (a team's token
        // may change once in 20 minutes, across all its connections). Used while under 50
        // minutes old; after that each pod signs its own.
        if let key = files.first(where: { $0.0 == "apns-key.p8" })?.1 {
            let issuedAt = Int(Date().timeIntervalSince1970)
            let token = try APNsSigningKey(key: ECP256PrivateKey(pem: key), keyID: keyID, teamID: teamID).makeProviderToken(issuedAt: issuedAt)
            files.append((FleetNames.providerTokenFile, "\(issuedAt) \(token)\n"))
        }
        return FleetPlan.Credentials(files: files,
                                     gatewayConfigurationJSON: configuration, keyID: keyID, teamID: teamID)
    }

    func run() async -> Int32 {
        do {
            let documents = FleetManifests.render(plan, credentials: try Self.credentials(for: plan))
            if let outDirectory {
                try FileManager.default.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)
                for (document, name) in zip(documents, FleetManifests.fileNames) {
                    let path = outDirectory + "/" + name
                    // The Secret holds private keys: not readable by others.
                    guard FileManager.default.createFile(atPath: path, contents: Data(("---\n" + document.document).utf8),
                                                         attributes: [.posixPermissions: 0o600]) else {
                        throw FileError(path: path, reason: "cannot write")
                    }
                }
            } else {
                print(YAMLNode.stream(documents), terminator: "")
            }
            let names = FleetNames(runID: plan.runID, namespace: plan.namespace)
            printError("""
            pushproof k8s render: run \(plan.runID), \(Format.counted(plan.segments, "segment")) starting at \(plan.startAt), \
            \(Format.counted(plan.gateways, "gateway")) in namespace \(plan.namespace)
            next: kubectl apply -f \(outDirectory ?? "-"); kubectl wait --namespace \(plan.namespace) --for=condition=Complete job/\(names.job); \
            pushproof k8s collect \(plan.runID) --namespace \(plan.namespace)
            """)
            return ExitCode.success
        } catch {
            printError("pushproof k8s render: \(error)")
            return ExitCode.ioError
        }
    }
}

/// `pushproof k8s segment -- drive …`: what a rendered segment pod runs. Its environment (the
/// Indexed Job's index, the rendered run's variables) becomes this pod's --segment, --start-at and
/// --gateway (Fleet's SegmentEnvironment); drive then runs in this process.
struct K8sSegmentCommand: Subcommand {
    static let spec = CommandSpec(
        name: "k8s segment",
        abstract: "In a rendered segment pod: run drive as this pod's segment (index, start, gateway from the environment).",
        positionals: ["drive DRIVE-OPTION…"],
        options: [],
        discussion: """
        Reads JOB_COMPLETION_INDEX (cross-checked against the hostname <job>-<index>), PUSHPROOF_JOB,
        PUSHPROOF_SEGMENTS, PUSHPROOF_SEGMENT_WEIGHTS, PUSHPROOF_START_AT, PUSHPROOF_GATEWAYS and
        PUSHPROOF_ADMIN_PORT, as 'pushproof k8s render' sets them. Exits with drive's status.
        """)

    let driveArguments: [String]

    init(_ arguments: ParsedArguments) throws {
        guard arguments.positionals.first == "drive" else { throw UsageError(message: "runs drive: pushproof k8s segment -- drive …") }
        do {
            driveArguments = arguments.positionals + (try SegmentEnvironment.driveArguments(environment: ProcessInfo.processInfo.environment))
        } catch {
            throw UsageError(message: error.description)
        }
    }

    func run() async -> Int32 {
        printError("pushproof k8s segment: " + driveArguments.joined(separator: " "))
        return await PushproofCommand.main(driveArguments)
    }
}

/// `pushproof k8s collect RUN_ID`: the segment results out of the completed pods' logs and each
/// gateway's record out of its (still running) pod, through kubectl.
struct K8sCollectCommand: Subcommand {
    static let spec = CommandSpec(
        name: "k8s collect",
        abstract: "Collect a Kubernetes run's segment results (from pod logs) and gateway records (kubectl cp) into a folder.",
        positionals: ["RUN_ID"],
        options: [
            .value("namespace", "NS", "The run's namespace.", default: "default"),
            .value("out", "DIR", "Where segment-<i>.json and gateway-<j>.jsonl go (created if missing).", default: "pushproof-RUN_ID"),
            .value("kubectl", "PATH", "The kubectl to run.", default: "kubectl on PATH"),
        ],
        discussion: """
        Run it after the Job completed and before the run is deleted: results come from 'kubectl logs'
        of completed segment pods (between the result markers; a pod without them is refused, named),
        records by 'kubectl cp' from the gateway pods, which must still be running. Every segment must
        be there once; then: pushproof merge DIR/segment-*.json, pushproof check DIR/gateway-<j>.jsonl.
        """)

    let calls: KubectlCalls
    let outDirectory: String
    let kubectl: String

    init(_ arguments: ParsedArguments) throws {
        let runID = arguments.positionals[0]
        calls = KubectlCalls(runID: runID, namespace: arguments.value("namespace") ?? "default")
        outDirectory = arguments.value("out") ?? "pushproof-" + runID
        kubectl = arguments.value("kubectl") ?? "kubectl"
    }

    struct KubectlFailure: Error, CustomStringConvertible {
        var arguments: [String]
        var status: Int32
        var stderr: String
        var description: String { "kubectl \(arguments.joined(separator: " ")) exited \(status): \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))" }
    }

    func kubectl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: kubectl.contains("/") ? kubectl : "/usr/bin/env")
        process.arguments = kubectl.contains("/") ? arguments : [kubectl] + arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw KubectlFailure(arguments: arguments, status: process.terminationStatus, stderr: String(decoding: errData, as: UTF8.self))
        }
        return String(decoding: outData, as: UTF8.self)
    }

    func run() async -> Int32 {
        do {
            try FileManager.default.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)
            guard let segments = Int(try kubectl(calls.segmentCount).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw FileError(path: "job/" + calls.names.job, reason: "has no spec.completions")
            }
            let pods = try kubectl(calls.segmentPods).split(separator: "\n").map(String.init)
            var results: [(pod: String, index: Int, json: String)] = []
            for pod in pods {
                let result = try SegmentResults.extract(log: try kubectl(calls.logs(pod: pod)), runID: calls.names.runID, pod: pod)
                results.append((pod, result.index, result.json))
            }
            for (index, json) in try SegmentResults.complete(results, segments: segments).enumerated() {
                try Data(json.utf8).write(to: URL(fileURLWithPath: "\(outDirectory)/segment-\(index).json"))
            }
            var records: [String] = []
            for pod in try kubectl(calls.gatewayPods).split(separator: "\n").map(String.init) {
                guard let ordinal = calls.gatewayOrdinal(pod: pod) else { continue }
                let path = "\(outDirectory)/gateway-\(ordinal).jsonl"
                _ = try kubectl(calls.copyRecord(pod: pod, to: path))
                records.append(path)
            }
            print("""
            collected \(Format.counted(segments, "segment result")) and \(Format.counted(records.count, "gateway record")) in \(outDirectory)
            next: pushproof merge \(outDirectory)/segment-*.json; \(records.map { "pushproof check \($0)" }.joined(separator: "; "))
            then: kubectl \(calls.deleteRun.joined(separator: " "))
            """)
            return ExitCode.success
        } catch let refusal as SegmentResults.Refusal {
            printError("pushproof k8s collect: \(refusal)")
            return ExitCode.failure
        } catch {
            printError("pushproof k8s collect: \(error)")
            return ExitCode.ioError
        }
    }
}
