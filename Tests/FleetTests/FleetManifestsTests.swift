import Foundation
import PushproofTestSupport
import Testing
@testable import Fleet

@Suite struct FleetManifestsTests {
    static let golden = FleetFixtures.root.appendingPathComponent("Tests/FleetTests/Golden/message-storm-3-segments-2-gateways.yaml")

    /// The whole render of one shape, byte for byte. After an intended change:
    /// PUSHPROOF_UPDATE_GOLDEN=1 swift test --filter FleetManifestsTests, then read the diff.
    @Test func goldenRender() throws {
        let rendered = YAMLNode.stream(FleetManifests.render(try FleetFixtures.messageStorm(), credentials: FleetFixtures.credentials))
        if ProcessInfo.processInfo.environment["PUSHPROOF_UPDATE_GOLDEN"] == "1" {
            try Data(rendered.utf8).write(to: Self.golden)
        }
        let expected = try String(contentsOf: Self.golden, encoding: .utf8)
        #expect(rendered == expected)
    }

    @Test func theJobRunsEverySegmentAtOnceAndFailsOnTheFirstLoss() throws {
        let job = FleetManifests.render(try FleetFixtures.messageStorm(segments: 7), credentials: FleetFixtures.credentials)[5].document
        for line in ["completionMode: \"Indexed\"", "completions: 7", "parallelism: 7", "backoffLimitPerIndex: 0", "maxFailedIndexes: 0",
                     "restartPolicy: \"Never\"", "value: \"pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc,pushproof-storm-1-gw-1.pushproof-storm-1-gw.load.svc\""] {
            #expect(job.contains(line), "\(line)")
        }
        #expect(!job.contains("backoffLimit:"))
    }

    @Test func gatewaysResolveBeforeTheyAreReady() throws {
        let objects = FleetManifests.render(try FleetFixtures.messageStorm(), credentials: FleetFixtures.credentials)
        #expect(objects[2].document.contains("  clusterIP: \"None\"\n  publishNotReadyAddresses: true"))
        #expect(objects[4].document.contains("  serviceName: \"pushproof-storm-1-gw\"\n  replicas: 2"))
        #expect(objects[4].document.contains("path: \"/status\"\n              port: \"admin\""))
    }

    @Test func driveArgumentsOfABuiltInAndOfAScenario() throws {
        #expect(FleetManifests.driveArguments(try FleetFixtures.messageStorm(), credentials: FleetFixtures.credentials) == [
            "drive", "message-storm", "--rate", "2000", "--duration", "60", "--threshold", "p99_ms<250", "--h2c",
            "--apns-key", "/etc/pushproof/apns-key.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456",
            "--service-account", "/etc/pushproof/service-account.json", "--result", "/work/result.json"])
        #expect(FleetManifests.driveArguments(try FleetFixtures.scenario(), credentials: FleetFixtures.credentials).prefix(5) == [
            "drive", "--scenario", "/etc/pushproof/scenario.json", "--sender-cmd", "python3 adapter.py --mode 'fast' # and a comment"])
    }

    @Test func refusals() throws {
        func refusal(_ make: () throws(FleetPlanError) -> FleetPlan) -> String? {
            do { _ = try make(); return nil } catch { return error.option }
        }
        func plan(namespace: String = "load", image: String = "pushproof", runID: String = "r1", workload: FleetPlan.Workload = .builtIn("ring-fanout"),
                  sender: FleetPlan.SenderChoice = .reference, options: [String] = [], cpu: String? = nil, weights: String? = nil)
            throws(FleetPlanError) -> FleetPlan {
            try FleetPlan(runID: runID, namespace: namespace, segments: 2, segmentWeights: weights, gateways: 1, image: image, workload: workload,
                          sender: sender, driveOptions: options, segmentResources: .init(cpu: cpu), startAt: "1796313600000")
        }
        for namespace in ["a:b", "a#b", "a\"b", "a\nb", "Load", "-load", "load-", "", String(repeating: "n", count: 64)] {
            #expect(refusal { () throws(FleetPlanError) in try plan(namespace: namespace) } == "namespace", "\(namespace.debugDescription)")
        }
        for image in ["a b", "pushproof\n", "\"pushproof\"", "it's", ""] {
            #expect(refusal { () throws(FleetPlanError) in try plan(image: image) } == "image", "\(image.debugDescription)")
        }
        #expect(refusal { () throws(FleetPlanError) in try plan(image: "reg:5000/team/pushproof:1#x@sha256:ab") } == nil)
        #expect(refusal { () throws(FleetPlanError) in try plan(runID: String(repeating: "r", count: 31)) } == "run-id")
        #expect(refusal { () throws(FleetPlanError) in try plan(runID: "Run_1") } == "run-id")
        #expect(refusal { () throws(FleetPlanError) in try plan(workload: .builtIn("storm")) } == "workload")
        #expect(refusal { () throws(FleetPlanError) in try plan(sender: .command("x")) } == "sender-cmd")
        #expect(refusal { () throws(FleetPlanError) in try plan(options: ["--rate", "5", "--segment", "0/2"]) } == "segment")
        #expect(refusal { () throws(FleetPlanError) in try plan(options: ["--gateway=http://elsewhere"]) } == "gateway")
        #expect(refusal { () throws(FleetPlanError) in try plan(cpu: "2 cores") } == "segment-cpu")
        #expect(refusal { () throws(FleetPlanError) in try plan(cpu: "500m") } == nil)
        #expect(refusal { () throws(FleetPlanError) in try plan(weights: "1/2,1/4,1/4") } == "segment-weights")
    }

    /// The segment pod's script, run by /bin/sh as the pod runs it, with a stand-in pushproof that
    /// writes a result and exits 3: the log has the result between markers, and the status is drive's.
    @Test func theSegmentScriptPrintsTheResultAndKeepsDrivesStatus() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-script-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let resultPath = directory.appendingPathComponent("result.json").path
        let fake = directory.appendingPathComponent("pushproof")
        try Data("""
        #!/bin/sh
        echo "drive says hello: $*"
        while [ $# -gt 0 ]; do [ "$1" = --result ] && printf '{"segment": "%s"}' "$JOB_COMPLETION_INDEX" > "$2"; shift; done
        exit 3

        """.utf8).write(to: fake)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        let script = FleetManifests.segmentScript(try FleetFixtures.messageStorm(), credentials: FleetFixtures.credentials)
            .replacingOccurrences(of: FleetNames.resultPath, with: resultPath)
        let result = try runTool("/usr/bin/env", ["PATH=\(directory.path):/usr/bin:/bin", "PUSHPROOF_RUN=storm-1", "JOB_COMPLETION_INDEX=2",
                                                  "/bin/sh", "-c", script])
        #expect(result.status == 3)
        #expect(result.output.contains("drive says hello: k8s segment -- drive message-storm --rate 2000"))
        let extracted = try SegmentResults.extract(log: result.output, runID: "storm-1", pod: "pod/x")
        #expect(extracted.index == 2)
        #expect(extracted.json == "{\"segment\": \"2\"}\n")
    }

    @Test func shellQuoting() {
        #expect(FleetManifests.shellQuoted("p99_ms<250") == "'p99_ms<250'")
        #expect(FleetManifests.shellQuoted("it's") == #"'it'\''s'"#)
        #expect(FleetManifests.shellQuoted("--rate") == "--rate")
        #expect(FleetManifests.shellQuoted("") == "''")
        #expect(FleetManifests.shellQuoted("$HOME") == "'$HOME'")
    }
}
