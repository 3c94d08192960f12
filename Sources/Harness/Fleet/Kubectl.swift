/// The `kubectl` command lines `pushproof k8s collect` runs, built here so they are tested
/// without a cluster (none is reachable where pushproof is tested).
public struct KubectlCalls: Sendable {
    public var names: FleetNames
    public init(runID: String, namespace: String) { names = FleetNames(runID: runID, namespace: namespace) }

    public var segmentPods: [String] {
        ["get", "pods", "--namespace", names.namespace, "--selector", names.selector(component: "segment"), "--output", "name"]
    }
    public var gatewayPods: [String] {
        ["get", "pods", "--namespace", names.namespace, "--selector", names.selector(component: "gateway"), "--output", "name"]
    }
    /// The Job's completions: how many segment results a whole run has.
    public var segmentCount: [String] {
        ["get", "job", names.job, "--namespace", names.namespace, "--output", "jsonpath={.spec.completions}"]
    }
    /// A completed segment pod's log (the result between its markers).
    public func logs(pod: String) -> [String] {
        ["logs", "--namespace", names.namespace, pod, "--container", "segment"]
    }
    /// A running gateway's record (`kubectl cp` needs the container running, and tar in it: the image has both).
    public func copyRecord(pod: String, to localPath: String) -> [String] {
        let podName = pod.hasPrefix("pod/") ? String(pod.dropFirst(4)) : pod
        return ["cp", "--container", "gateway", "\(names.namespace)/\(podName):\(FleetNames.recordPath)", localPath]
    }
    /// Every object of the run, by its label.
    public var deleteRun: [String] {
        ["delete", "configmap,secret,service,statefulset,job", "--namespace", names.namespace, "--selector", names.runSelector]
    }

    /// `pod/<statefulSet>-<j>` → j, for the record's file name.
    public func gatewayOrdinal(pod: String) -> Int? {
        let podName = pod.hasPrefix("pod/") ? pod.dropFirst(4) : Substring(pod)
        guard podName.hasPrefix(names.statefulSet + "-") else { return nil }
        return Int(podName.dropFirst(names.statefulSet.count + 1))
    }
}
