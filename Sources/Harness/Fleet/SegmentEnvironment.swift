/// A segment pod's environment, as the Indexed Job and the rendered manifest give it, turned into
/// the part of `drive`'s command line that differs from pod to pod (`pushproof k8s segment`).
///
/// The index is `JOB_COMPLETION_INDEX`; the hostname `<job>-<index>` must agree with it (a pod of
/// another Job, or a copy run by hand with a stale variable, is refused rather than run as the
/// wrong segment), and alone stands in for a missing variable. Segment i drives gateway
/// `i mod M` by its stable headless name, so the load spreads evenly over the gateways however
/// the cluster balances connections, and fetches its FCM access tokens there too.
public enum SegmentEnvironment {
    public static let indexKey = "JOB_COMPLETION_INDEX"
    public static let hostnameKey = "HOSTNAME"
    public static let runKey = "PUSHPROOF_RUN"
    public static let jobKey = "PUSHPROOF_JOB"
    public static let segmentsKey = "PUSHPROOF_SEGMENTS"
    public static let weightsKey = "PUSHPROOF_SEGMENT_WEIGHTS"
    public static let startAtKey = "PUSHPROOF_START_AT"
    public static let gatewaysKey = "PUSHPROOF_GATEWAYS"
    /// Set for scenario runs: their drive reads each gateway's request journal at this port.
    public static let adminPortKey = "PUSHPROOF_ADMIN_PORT"

    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// This pod's segment, its gateway and the shared start, as drive options.
    public static func driveArguments(environment: [String: String]) throws(Refusal) -> [String] {
        func required(_ key: String) throws(Refusal) -> String {
            guard let value = environment[key], !value.isEmpty else { throw Refusal(message: "\(key) is not set: not a pod of a rendered pushproof Job") }
            return value
        }
        guard let segments = Int(try required(segmentsKey)), segments > 0 else {
            throw Refusal(message: "\(segmentsKey) is not a positive number: '\(environment[segmentsKey] ?? "")'")
        }
        let job = try required(jobKey)
        var hostnameIndex: Int?
        if let hostname = environment[hostnameKey], hostname.hasPrefix(job + "-") {
            hostnameIndex = Int(hostname.dropFirst(job.count + 1))
        }
        let index: Int
        if let text = environment[indexKey] {
            guard let parsed = Int(text) else { throw Refusal(message: "\(indexKey) is not a number: '\(text)'") }
            if let hostnameIndex, hostnameIndex != parsed {
                throw Refusal(message: "\(indexKey) \(parsed) and the hostname \(environment[hostnameKey] ?? "") disagree")
            }
            if hostnameIndex == nil, let hostname = environment[hostnameKey] {
                throw Refusal(message: "the hostname \(hostname) is not \(job)-<index>: not a pod of this run's Job")
            }
            index = parsed
        } else if let hostnameIndex {
            index = hostnameIndex
        } else {
            throw Refusal(message: "neither \(indexKey) nor a hostname \(job)-<index> says which segment this pod is")
        }
        guard (0..<segments).contains(index) else {
            throw Refusal(message: "segment index \(index) is outside 0..<\(segments)")
        }
        let gateways = try required(gatewaysKey).split(separator: ",").map(String.init)
        let gateway = gateways[index % gateways.count]
        var arguments = ["--segment", "\(index)/\(segments)"]
        if let weights = environment[weightsKey], !weights.isEmpty { arguments += ["--segment-weights", weights] }
        // Access tokens from the same replica: a gateway honours only the tokens it issued.
        arguments += ["--start-at", try required(startAtKey), "--gateway", "http://\(gateway):\(FleetNames.gatewayPort)",
                      "--token-url", "http://\(gateway):\(FleetNames.gatewayPort)/token"]
        if let port = environment[adminPortKey], !port.isEmpty {
            guard Int(port) != nil else { throw Refusal(message: "\(adminPortKey) is not a port: '\(port)'") }
            arguments += ["--admin", "http://\(gateway):\(port)"]
        }
        return arguments
    }
}
