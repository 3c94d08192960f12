import Foundation

/// The names every object of one run gets, derived from the run id alone, so `k8s segment` in a
/// pod and `k8s collect` on a laptop find what `k8s render` made.
public struct FleetNames: Sendable, Equatable {
    public var runID: String
    public var namespace: String
    public init(runID: String, namespace: String) { self.runID = runID; self.namespace = namespace }

    public static let runLabel = "pushproof.dev/run"
    public static let componentLabel = "app.kubernetes.io/component"
    public static let gatewayPort = 8443
    public static let adminPort = 8444
    /// Where a gateway pod writes its record (an emptyDir) and a segment pod its result.
    public static let recordPath = "/record/requests.jsonl"
    public static let resultPath = "/work/result.json"
    public static let configDirectory = "/etc/pushproof"

    var prefix: String { "pushproof-" + runID }
    public var configMap: String { prefix + "-config" }
    public var secret: String { prefix + "-credentials" }
    /// The Indexed Job: its pods' hostnames are `<job>-<index>`.
    public var job: String { prefix + "-segment" }
    /// The StatefulSet and its headless Service: gateway j is `<statefulSet>-<j>.<statefulSet>`.
    public var statefulSet: String { prefix + "-gw" }
    /// The Service in front of every gateway: the service account's token_uri.
    public var gatewayService: String { prefix + "-gateway" }

    public var serviceDomain: String { "\(namespace).svc" }
    /// The gateways' stable DNS names, resolvable before they are ready (publishNotReadyAddresses).
    public func gatewayHosts(count: Int) -> [String] {
        (0..<count).map { "\(statefulSet)-\($0).\(statefulSet).\(serviceDomain)" }
    }
    /// In the Secret: the APNs provider token every segment uses (`PUSHPROOF_PROVIDER_TOKEN_FILE`).
    public static let providerTokenFile = "provider-token.jwt"
    public var tokenURL: String { "http://\(gatewayService).\(serviceDomain):\(Self.gatewayPort)/token" }
    public var runSelector: String { "\(Self.runLabel)=\(runID)" }
    public func selector(component: String) -> String { "\(runSelector),\(Self.componentLabel)=\(component)" }
}

/// `pushproof k8s render`: the plain objects of one run, no operator. Segments are one Indexed
/// Job (parallelism = completions = N, each pod's segment from JOB_COMPLETION_INDEX); gateways a
/// StatefulSet behind a headless Service, plus the Service the senders' tokens come from; a
/// ConfigMap (gateway configuration, scenario), a Secret (the generated test credentials).
///
/// A segment lost or failed voids the run instead of running late: `backoffLimitPerIndex: 0`
/// with `maxFailedIndexes: 0` fails the whole Job at the first failed index, whatever the cause
/// (an exit status, an eviction, a lost node: without a podFailurePolicy every pod failure counts),
/// and no index is retried after the planned start. A podFailurePolicy with FailJob could say the
/// same only for the causes it lists. These fields decide the oldest Kubernetes: 1.28 has them in
/// its schema (alpha), 1.29 turns them on by default (beta), 1.33 made them GA.
public enum FleetManifests {
    public static func render(_ plan: FleetPlan, credentials: FleetPlan.Credentials) -> [YAMLNode] {
        let names = FleetNames(runID: plan.runID, namespace: plan.namespace)
        return [configMap(plan, names, credentials), secret(plan, names, credentials), headlessService(plan, names),
                gatewayService(plan, names), statefulSet(plan, names), job(plan, names, credentials)]
    }

    /// Object file names for `render --out DIR`, in apply order.
    public static let fileNames = ["00-configmap.yaml", "01-secret.yaml", "02-gateway-headless-service.yaml",
                                   "03-gateway-service.yaml", "04-gateway-statefulset.yaml", "05-segment-job.yaml"]

    static func labels(_ plan: FleetPlan, component: String) -> YAMLNode {
        .map([("app.kubernetes.io/name", .string("pushproof")), (FleetNames.componentLabel, .string(component)),
              (FleetNames.runLabel, .string(plan.runID))])
    }

    static func metadata(_ name: String, _ plan: FleetPlan, component: String, annotations: [(String, YAMLNode)] = []) -> YAMLNode {
        var entries: [(String, YAMLNode)] = [("name", .string(name)), ("namespace", .string(plan.namespace)),
                                             ("labels", labels(plan, component: component))]
        if !annotations.isEmpty { entries.append(("annotations", .map(annotations))) }
        return .map(entries)
    }

    static func configMap(_ plan: FleetPlan, _ names: FleetNames, _ credentials: FleetPlan.Credentials) -> YAMLNode {
        var data: [(String, YAMLNode)] = [("gateway.json", .string(credentials.gatewayConfigurationJSON))]
        if case .scenario(let contents) = plan.workload { data.append(("scenario.json", .string(contents))) }
        return .map([("apiVersion", .string("v1")), ("kind", .string("ConfigMap")),
                     ("metadata", metadata(names.configMap, plan, component: "config",
                                           annotations: [("pushproof.dev/start-at", .string(plan.startAt))])),
                     ("data", .map(data))])
    }

    static func secret(_ plan: FleetPlan, _ names: FleetNames, _ credentials: FleetPlan.Credentials) -> YAMLNode {
        .map([("apiVersion", .string("v1")), ("kind", .string("Secret")),
              ("metadata", metadata(names.secret, plan, component: "config")), ("type", .string("Opaque")),
              ("stringData", .map(credentials.files.map { ($0.name, .string($0.contents)) }))])
    }

    static func gatewayPorts() -> YAMLNode {
        .list([.map([("name", .string("push")), ("port", .int(FleetNames.gatewayPort)), ("targetPort", .string("push"))]),
               .map([("name", .string("admin")), ("port", .int(FleetNames.adminPort)), ("targetPort", .string("admin"))])])
    }

    static func gatewaySelector(_ plan: FleetPlan) -> YAMLNode {
        .map([(FleetNames.componentLabel, .string("gateway")), (FleetNames.runLabel, .string(plan.runID))])
    }

    static func headlessService(_ plan: FleetPlan, _ names: FleetNames) -> YAMLNode {
        .map([("apiVersion", .string("v1")), ("kind", .string("Service")),
              ("metadata", metadata(names.statefulSet, plan, component: "gateway")),
              ("spec", .map([("clusterIP", .string("None")), ("publishNotReadyAddresses", .bool(true)),
                             ("selector", gatewaySelector(plan)), ("ports", gatewayPorts())]))])
    }

    static func gatewayService(_ plan: FleetPlan, _ names: FleetNames) -> YAMLNode {
        .map([("apiVersion", .string("v1")), ("kind", .string("Service")),
              ("metadata", metadata(names.gatewayService, plan, component: "gateway")),
              ("spec", .map([("selector", gatewaySelector(plan)), ("ports", gatewayPorts())]))])
    }

    static func resources(_ resources: FleetPlan.Resources) -> YAMLNode? {
        var amounts: [(String, YAMLNode)] = []
        if let cpu = resources.cpu { amounts.append(("cpu", .string(cpu))) }
        if let memory = resources.memory { amounts.append(("memory", .string(memory))) }
        return amounts.isEmpty ? nil : .map([("requests", .map(amounts)), ("limits", .map(amounts))])
    }

    /// The gateway configuration (ConfigMap) and the key files it names (Secret) in one folder, as
    /// `pushproof credentials` writes them: the configuration reads its files relative to itself.
    /// That folder, read-only, and an emptyDir of the pod's own (the gateway's record, the segment's result).
    static func storage(_ names: FleetNames, scratch: String) -> (mounts: YAMLNode, volumes: YAMLNode) {
        let mounts: YAMLNode = .list([.map([("name", .string("config")), ("mountPath", .string(FleetNames.configDirectory)),
                                            ("readOnly", .bool(true))]),
                                      .map([("name", .string(scratch)), ("mountPath", .string("/" + scratch))])])
        let config: YAMLNode = .map([("name", .string("config")),
                                     ("projected", .map([("sources", .list([
                                         .map([("configMap", .map([("name", .string(names.configMap))]))]),
                                         .map([("secret", .map([("name", .string(names.secret))]))]),
                                     ]))]))])
        return (mounts, .list([config, .map([("name", .string(scratch)), ("emptyDir", .map([]))])]))
    }

    static let securityContext: YAMLNode = .map([("runAsNonRoot", .bool(true)), ("runAsUser", .int(65534)),
                                                  ("allowPrivilegeEscalation", .bool(false))])

    static func statefulSet(_ plan: FleetPlan, _ names: FleetNames) -> YAMLNode {
        let arguments = ["serve", "--listen", "0.0.0.0:\(FleetNames.gatewayPort)", "--admin", "0.0.0.0:\(FleetNames.adminPort)", "--h2c",
                         "--config", FleetNames.configDirectory + "/gateway.json", "--record", FleetNames.recordPath, "--specs", "shipped"]
        let storage = storage(names, scratch: "record")
        var container: [(String, YAMLNode)] = [
            ("name", .string("gateway")), ("image", .string(plan.image)), ("args", .list(arguments.map { .string($0) })),
            ("ports", .list([.map([("name", .string("push")), ("containerPort", .int(FleetNames.gatewayPort))]),
                             .map([("name", .string("admin")), ("containerPort", .int(FleetNames.adminPort))])])),
            // Ready once the control API answers: the gateway behind it is listening by then.
            ("readinessProbe", .map([("httpGet", .map([("path", .string("/status")), ("port", .string("admin"))])),
                                     ("periodSeconds", .int(2))])),
            ("volumeMounts", storage.mounts),
            ("securityContext", securityContext),
        ]
        if let resources = resources(plan.gatewayResources) { container.append(("resources", resources)) }
        return .map([("apiVersion", .string("apps/v1")), ("kind", .string("StatefulSet")),
                     ("metadata", metadata(names.statefulSet, plan, component: "gateway")),
                     ("spec", .map([
                         ("serviceName", .string(names.statefulSet)), ("replicas", .int(plan.gateways)),
                         ("podManagementPolicy", .string("Parallel")),
                         ("selector", .map([("matchLabels", gatewaySelector(plan))])),
                         ("template", .map([
                             ("metadata", .map([("labels", labels(plan, component: "gateway"))])),
                             ("spec", .map([("containers", .list([.map(container)])),
                                            ("volumes", storage.volumes)])),
                         ])),
                     ]))])
    }

    /// What every segment's `drive` is given at render time; `k8s segment` adds the per-pod part.
    public static func driveArguments(_ plan: FleetPlan, credentials: FleetPlan.Credentials) -> [String] {
        var arguments = ["drive"]
        switch plan.workload {
        case .builtIn(let name): arguments.append(name)
        case .scenario: arguments += ["--scenario", FleetNames.configDirectory + "/scenario.json"]
        }
        if case .command(let command) = plan.sender { arguments += ["--sender-cmd", command] }
        arguments += plan.driveOptions
        let fileNames = Set(credentials.files.map(\.name))
        arguments.append("--h2c")
        if fileNames.contains("apns-key.p8") {
            arguments += ["--apns-key", FleetNames.configDirectory + "/apns-key.p8", "--key-id", credentials.keyID, "--team-id", credentials.teamID]
        }
        if fileNames.contains("service-account.json") {
            arguments += ["--service-account", FleetNames.configDirectory + "/service-account.json"]
        }
        return arguments + ["--result", FleetNames.resultPath]
    }

    /// The segment container's script: drive (through `k8s segment`, which adds this pod's
    /// segment, start and gateway), then the result printed between markers so `kubectl logs`
    /// of the completed pod still has it, and drive's own exit status.
    static func segmentScript(_ plan: FleetPlan, credentials: FleetPlan.Credentials) -> String {
        let command = (["pushproof", "k8s", "segment", "--"] + driveArguments(plan, credentials: credentials)).map(shellQuoted).joined(separator: " ")
        return """
        \(command)
        status=$?
        if [ -s \(FleetNames.resultPath) ]; then
          echo "\(SegmentResults.beginMarker(runID: "$PUSHPROOF_RUN", index: "$JOB_COMPLETION_INDEX"))"
          cat \(FleetNames.resultPath)
          echo
          echo "\(SegmentResults.endMarker(runID: "$PUSHPROOF_RUN", index: "$JOB_COMPLETION_INDEX"))"
        fi
        exit $status

        """
    }

    /// A word as `/bin/sh` reads it back: plain words bare, others in single quotes.
    public static func shellQuoted(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
            || "-_./=:,@%+".unicodeScalars.contains($0) }
        return plain && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func job(_ plan: FleetPlan, _ names: FleetNames, _ credentials: FleetPlan.Credentials) -> YAMLNode {
        var environment: [(String, String)] = [
            (SegmentEnvironment.runKey, plan.runID), (SegmentEnvironment.jobKey, names.job),
            (SegmentEnvironment.segmentsKey, String(plan.segments)), (SegmentEnvironment.startAtKey, plan.startAt),
            (SegmentEnvironment.gatewaysKey, names.gatewayHosts(count: plan.gateways).joined(separator: ",")),
        ]
        if let weights = plan.segmentWeights { environment.append((SegmentEnvironment.weightsKey, weights)) }
        if credentials.files.contains(where: { $0.name == FleetNames.providerTokenFile }) {
            environment.append(("PUSHPROOF_PROVIDER_TOKEN_FILE", FleetNames.configDirectory + "/" + FleetNames.providerTokenFile))
        }
        // A scenario run reads the gateway's request journal through its control API.
        if case .scenario = plan.workload { environment.append((SegmentEnvironment.adminPortKey, String(FleetNames.adminPort))) }
        let storage = storage(names, scratch: "work")
        var container: [(String, YAMLNode)] = [
            ("name", .string("segment")), ("image", .string(plan.image)),
            ("command", .list([.string("/bin/sh"), .string("-c"), .string(segmentScript(plan, credentials: credentials))])),
            ("env", .list(environment.map { .map([("name", .string($0.0)), ("value", .string($0.1))]) })),
            ("volumeMounts", storage.mounts),
            ("securityContext", securityContext),
        ]
        if let resources = resources(plan.segmentResources) { container.append(("resources", resources)) }
        return .map([("apiVersion", .string("batch/v1")), ("kind", .string("Job")),
                     ("metadata", metadata(names.job, plan, component: "segment")),
                     ("spec", .map([
                         ("completionMode", .string("Indexed")), ("completions", .int(plan.segments)),
                         ("parallelism", .int(plan.segments)),
                         ("backoffLimitPerIndex", .int(0)), ("maxFailedIndexes", .int(0)),
                         ("template", .map([
                             ("metadata", .map([("labels", labels(plan, component: "segment"))])),
                             ("spec", .map([("restartPolicy", .string("Never")), ("containers", .list([.map(container)])),
                                            ("volumes", storage.volumes)])),
                         ])),
                     ]))])
    }
}
