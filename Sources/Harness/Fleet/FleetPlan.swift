/// One load run on Kubernetes, as `pushproof k8s render` is told it: what the segments drive, how
/// many segments and gateways, the image, the credentials, the start time. Checked when made, so
/// every name and value the manifests carry is one Kubernetes accepts (a namespace is a DNS label,
/// an image has no spaces or quotes, a quantity is a quantity), and refused with the option named.
public struct FleetPlan: Sendable {
    public enum Workload: Sendable, Equatable {
        /// `drive ring-fanout` or `drive message-storm` (the reference sender).
        case builtIn(String)
        /// `drive --scenario`: the scenario file's text travels in the ConfigMap.
        case scenario(contents: String)
    }

    public enum SenderChoice: Sendable, Equatable {
        case reference
        /// `--sender-cmd CMD` (a scenario's sender behind an adapter, run in the segment pod).
        case command(String)
    }

    /// CPU and memory for one container, as requests equal to limits (a load generator whose
    /// CPU is taken away mid-run measures its own starvation).
    public struct Resources: Sendable, Equatable {
        public var cpu: String?
        public var memory: String?
        public init(cpu: String? = nil, memory: String? = nil) { self.cpu = cpu; self.memory = memory }
    }

    /// The files of `pushproof credentials`, by name (`apns-key.p8`, `service-account.json`, …).
    public struct Credentials: Sendable, Equatable {
        public var files: [(name: String, contents: String)]
        public var gatewayConfigurationJSON: String
        public var keyID: String
        public var teamID: String
        public init(files: [(name: String, contents: String)], gatewayConfigurationJSON: String, keyID: String, teamID: String) {
            self.files = files
            self.gatewayConfigurationJSON = gatewayConfigurationJSON
            self.keyID = keyID
            self.teamID = teamID
        }
        public static func == (a: Credentials, b: Credentials) -> Bool {
            a.files.map(\.name) == b.files.map(\.name) && a.files.map(\.contents) == b.files.map(\.contents)
                && a.gatewayConfigurationJSON == b.gatewayConfigurationJSON && a.keyID == b.keyID && a.teamID == b.teamID
        }
    }

    public var runID: String
    public var namespace: String
    public var segments: Int
    public var segmentWeights: String?
    public var gateways: Int
    public var image: String
    public var workload: Workload
    public var sender: SenderChoice
    /// Passed to every segment's `drive` as given (`--rate 1000 --duration 60`, thresholds, …).
    public var driveOptions: [String]
    public var segmentResources: Resources
    public var gatewayResources: Resources
    /// Every segment's `--start-at`: RFC 3339 or Unix milliseconds, as `drive` reads it.
    public var startAt: String

    public init(runID: String, namespace: String = "default", segments: Int, segmentWeights: String? = nil, gateways: Int,
                image: String, workload: Workload, sender: SenderChoice = .reference, driveOptions: [String] = [],
                segmentResources: Resources = .init(), gatewayResources: Resources = .init(), startAt: String) throws(FleetPlanError) {
        self.runID = runID
        self.namespace = namespace
        self.segments = segments
        self.segmentWeights = segmentWeights
        self.gateways = gateways
        self.image = image
        self.workload = workload
        self.sender = sender
        self.driveOptions = driveOptions
        self.segmentResources = segmentResources
        self.gatewayResources = gatewayResources
        self.startAt = startAt
        try check()
    }

    /// The options the rendered pods set themselves; a user's drive options may not repeat them.
    public static let optionsTheRenderSets: Set<String> = [
        "--segment", "--segment-weights", "--start-at", "--result", "--gateway", "--admin", "--apns", "--fcm", "--token-url",
        "--apns-key", "--key-id", "--team-id", "--service-account", "--h2c", "--ca", "--insecure", "--scenario", "--sender",
        "--sender-cmd",
    ]

    private func check() throws(FleetPlanError) {
        // Job pods are named <job>-<index>: "pushproof-" + run + "-segment-" + up to 4 digits stays within a 63-byte label.
        guard Self.isDNSLabel(runID), runID.utf8.count <= 30 else {
            throw FleetPlanError(option: "run-id", message: "'\(runID)' is not 1 to 30 lowercase letters, digits or '-' (starting with a letter or digit, not ending with '-')")
        }
        guard Self.isDNSLabel(namespace), namespace.utf8.count <= 63 else {
            throw FleetPlanError(option: "namespace", message: "'\(namespace)' is not a Kubernetes namespace name (a DNS label: lowercase letters, digits, '-')")
        }
        guard (1...1000).contains(segments) else {
            throw FleetPlanError(option: "segments", message: "takes 1 to 1000 segments, not \(segments)")
        }
        if let segmentWeights, segmentWeights.split(separator: ",", omittingEmptySubsequences: false).count != segments {
            throw FleetPlanError(option: "segment-weights", message: "gives one weight a segment: \(segments), not '\(segmentWeights)'")
        }
        guard (1...100).contains(gateways) else {
            throw FleetPlanError(option: "gateways", message: "takes 1 to 100 gateways, not \(gateways)")
        }
        guard !image.isEmpty, image.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "'" && $0 != "\\" }) else {
            throw FleetPlanError(option: "image", message: "'\(image)' is not an image reference (printable ASCII, no spaces or quotes)")
        }
        guard !startAt.isEmpty, !startAt.contains(where: { $0.isWhitespace }) else {
            throw FleetPlanError(option: "start-at", message: "is empty or has spaces")
        }
        if case .builtIn(let name) = workload, name != "ring-fanout", name != "message-storm" {
            throw FleetPlanError(option: "workload", message: "is ring-fanout, message-storm or --scenario FILE, not '\(name)'")
        }
        if case .command = sender, case .builtIn = workload {
            throw FleetPlanError(option: "sender-cmd", message: "drives a --scenario; the built-in workloads use the reference sender")
        }
        for option in driveOptions {
            let name = String(option.split(separator: "=", maxSplits: 1).first ?? "")
            if Self.optionsTheRenderSets.contains(name) {
                throw FleetPlanError(option: String(name.dropFirst(2)), message: "(a drive option) is set by the rendered pods themselves")
            }
        }
        for (option, resources) in [("segment", segmentResources), ("gateway", gatewayResources)] {
            for (kind, quantity) in [("cpu", resources.cpu), ("memory", resources.memory)] {
                if let quantity, !Self.isQuantity(quantity) {
                    throw FleetPlanError(option: "\(option)-\(kind)", message: "'\(quantity)' is not a Kubernetes quantity (500m, 2, 512Mi, 1Gi)")
                }
            }
        }
    }

    static func isDNSLabel(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard let first = scalars.first, let last = scalars.last, scalars.count <= 63 else { return false }
        func alphanumeric(_ s: Unicode.Scalar) -> Bool { ("a"..."z").contains(s) || ("0"..."9").contains(s) }
        return alphanumeric(first) && alphanumeric(last) && scalars.allSatisfy { alphanumeric($0) || $0 == "-" }
    }

    /// A decimal number with at most one binary or decimal suffix (`m` for milli).
    static func isQuantity(_ text: String) -> Bool {
        let suffixes = ["Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "T", ""]
        guard let suffix = suffixes.first(where: { text.hasSuffix($0) }) else { return false }
        let number = text.dropLast(suffix.count)
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        return !number.isEmpty && parts.count <= 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }
}

public struct FleetPlanError: Error, Equatable, CustomStringConvertible {
    public var option: String
    public var message: String
    public var description: String { "--\(option) \(message)" }
}
