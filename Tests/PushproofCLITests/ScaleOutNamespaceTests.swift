// One machine standing in for five: two `pushproof serve` replicas and three drive segments,
// each in a network namespace of its own (NetworkNamespaces: veth pairs on a bridge, the
// addresses only inside the namespaces, all removed afterwards), the segments reaching the
// replicas' control APIs through one name that resolves to both, as a headless Service's does.
// The merged run must equal the same run unsplit, and a killed, a late and a repeated segment
// must each be refused by `merge`.
import Foundation
import JSON
import Metrics
import PushproofTestSupport
import Testing

@Suite(.serialized) struct ScaleOutNamespaceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func threeSegmentsOverTwoGatewaysMergeToTheUnsplitRun() throws {
        if let reason = NetworkNamespaces.unavailableReason {
            print("ScaleOutNamespaceTests skipped: \(reason)")
            return
        }
        let directory = try TemporaryDirectory("scale-out")
        let network = try NetworkNamespaces(nodes: 5, hosts: ["gateways": [0, 1]])
        defer {
            network.remove()
            #expect(network.remaining.isEmpty, "the namespaces are removed: \(network.remaining)")
        }
        let credentials = try writeCredentials(in: directory)
        // A deterministic latency on every push: each answer waits 5 ms at the gateway.
        guard case .object(var configuration) = try readJSON(credentials + "/gateway.json") else {
            Issue.record("the generated gateway configuration is not an object")
            return
        }
        let latency: JSONValue = ["latency": ["fixed_ms": 5]]
        configuration["faults"] = ["apns": latency, "fcm": latency]
        // Beside the generated one: the key files it names are relative to it.
        let configurationPath = credentials + "/gateway-latency.json"
        try JSONValue.object(configuration).serialized().write(toFile: configurationPath, atomically: true, encoding: .utf8)
        let gateways = try (0..<2).map { index in
            try ServeProcess(["--h2c", "--config", configurationPath, "--record", directory.file("gateway-\(index).jsonl"),
                              "--specs", Self.root.appendingPathComponent("Specs").path, "--quiet"],
                             directory: directory.path, namespace: network.exec(index), host: network.addresses[index],
                             ports: (8443, 9090))
        }
        defer { for gateway in gateways { gateway.stop() } }

        let drive = { @Sendable (node: Int, arguments: [String], killAfter: Double?) throws -> ToolResult in
            let command = (killAfter.map { ["/usr/bin/timeout", "-s", "KILL", String($0)] } ?? []) + network.exec(node)
            return try runTool(command[0], Array(command.dropFirst()) + [pushproofExecutable()] + arguments, timeoutSeconds: 120)
        }
        func plannedStart(inSeconds seconds: Double) -> String { String(Int64((Date().timeIntervalSince1970 + seconds) * 1000)) }

        // One call at a time: each call's gone answers are in before the next is decided, so
        // token cleanup does not depend on how the machine's load times the calls.
        let common = ["drive", "ring-fanout", "--members", "300", "--count", "6", "--concurrency", "1", "--h2c", "--gone-tokens", "8",
                      "--admin", "http://gateways:9090"] + gateways.flatMap { ["--gateway", $0.baseURL] }
            + ["--apns-key", credentials + "/apns-key.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456",
               "--service-account", credentials + "/service-account.json"]

        let whole = directory.file("whole.json")
        let unsplit = try drive(2, common + ["--json", whole, "--quiet"], nil)
        try #require(unsplit.status == 0, "\(unsplit.output)\n\(unsplit.error)")
        let wholeReport = try readJSON(whole)
        // 6 calls ring 299 callees on PushKit and Android; the 8 gone tokens only in the first (a
        // call is decided when placed, from the store as it is then).
        let pushes = 6 * 598 - 5 * 8
        #expect(wholeReport["counts"]?["sent"]?.intValue == pushes)
        #expect(wholeReport["token_cleanup"]?["tokens_removed"] == 8, "the 8 gone tokens are found gone, once each")

        // The three segments at once, one a namespace, from one planned start.
        let startAt = plannedStart(inSeconds: 4)
        let results = (0..<3).map { directory.file("seg-\($0).json") }
        let segments = runConcurrently((0..<3).map { index in
            { try drive(2 + index, common + ["--segment", "\(index)/3", "--start-at", startAt, "--result", results[index], "--quiet"], nil) }
        })
        for (index, outcome) in segments.enumerated() {
            let run = try outcome.get()
            #expect(run.status == 0, "segment \(index): \(run.output)\n\(run.error)")
        }
        let merged = directory.file("merged.json")
        let merge = try pushproof(["merge"] + results + ["--json", merged])
        try #require(merge.status == 0, "\(merge.output)\n\(merge.error)")
        let mergedReport = try readJSON(merged)
        for key in ["sent", "completed", "delivered", "failed", "fan_outs", "fan_outs_fully_delivered", "iterations"] {
            #expect(mergedReport["counts"]?[key] == wholeReport["counts"]?[key], "\(key)")
        }
        #expect(mergedReport["token_cleanup"]?["tokens_removed"] == wholeReport["token_cleanup"]?["tokens_removed"])
        #expect(mergedReport["token_cleanup"]?["devices_deleted"] == wholeReport["token_cleanup"]?["devices_deleted"])
        #expect(mergedReport["latency_ns"]?["count"] == wholeReport["latency_ns"]?["count"])
        // Every push went through one replica or the other, and both took a share.
        let pushLines = try (0..<2).map { index in
            try lines(of: directory.file("gateway-\(index).jsonl")).filter { $0["route"] == "apns" || $0["route"] == "fcm" }.count
        }
        #expect(pushLines.allSatisfy { $0 > 0 }, "both replicas took pushes: \(pushLines)")
        #expect(pushLines.reduce(0, +) == 2 * pushes, "the unsplit run's pushes and the segments' together: \(pushLines)")

        // The merged percentiles are the union histogram's, as PyPI's hdrhistogram reads the
        // three segments' logs.
        try checkUnionPercentiles(results: results, merged: mergedReport, in: directory)

        // A second run: segment 1 killed mid-run, segment 2 started 1.5 s late.
        let startAgain = plannedStart(inSeconds: 4)
        let second = (0..<3).map { directory.file("again-\($0).json") }
        let longer = common.filter { !["--count", "6", "--concurrency", "1"].contains($0) } + ["--rate", "2", "--duration", "4"]
        let runs = runConcurrently([
            { try drive(2, longer + ["--segment", "0/3", "--start-at", startAgain, "--result", second[0], "--quiet"], nil) },
            { try drive(3, longer + ["--segment", "1/3", "--start-at", startAgain, "--result", second[1], "--quiet"], 6) },
            {
                Thread.sleep(forTimeInterval: 5.5)
                return try drive(4, longer + ["--segment", "2/3", "--start-at", startAgain, "--result", second[2], "--quiet"], nil)
            },
        ])
        let killedRun = try runs[1].get()
        #expect(killedRun.status != 0, "segment 1 was killed (timeout -s KILL): \(killedRun.status)")
        #expect(!FileManager.default.fileExists(atPath: second[1]), "a killed segment leaves no result")
        let killed = try pushproof(["merge", second[0], second[2]])
        #expect(killed.status == 2)
        #expect(killed.error.contains("segment 1/3 missing"), "\(killed.error)")
        // Segment 1 run again, to completion: the set is whole, but segment 2 started late.
        let rerun = try drive(3, longer + ["--segment", "1/3", "--start-at", startAgain, "--result", second[1], "--quiet"], nil)
        #expect(rerun.status == 0, "\(rerun.error)")
        let late = try pushproof(["merge", second[2], second[0], second[1]])
        #expect(late.status == 2)
        #expect(late.error.contains("\(second[2]): segment 2/3 started"), "\(late.error)")
        #expect(late.error.contains("more than --max-start-skew 100 ms"), "\(late.error)")
        let twice = try pushproof(["merge", results[0], results[1], results[1]])
        #expect(twice.status == 2)
        #expect(twice.error.contains("segment 1/3 is given twice"), "\(twice.error)")
        let mixed = try pushproof(["merge", results[0], results[1], second[2]])
        #expect(mixed.status == 2, "segments of two runs are not one run")
        #expect(mixed.error.contains("are not segments of one run"), "\(mixed.error)")
    }

    /// PyPI's hdrhistogram (test data, as `make test-data` fetches it) adds the segments'
    /// `latency` intervals; its percentiles are the merged report's.
    private func checkUnionPercentiles(results: [String], merged: JSONValue, in directory: TemporaryDirectory) throws {
        let reader = testDataDirectory(repositoryRoot: Self.root).appendingPathComponent("hdrhistogram-py")
        guard let python = python3OnPath(), FileManager.default.fileExists(atPath: reader.path) else {
            Issue.record("PyPI hdrhistogram not found in \(reader.path): `make test-data` fetches it")
            return
        }
        var log = ""
        for path in results {
            let text = try readJSON(path)["histograms"]?.stringValue ?? ""
            log += text.split(separator: "\n").filter { $0.hasPrefix("Tag=latency,") }.map { $0 + "\n" }.joined()
        }
        let logPath = try directory.write("latency.hlog", log)
        let script = Self.root.appendingPathComponent("Scripts/hdr-log-check.py").path
        let read = try runTool("/usr/bin/env", ["PYTHONPATH=\(reader.path)", python.path, script, logPath], timeoutSeconds: 60)
        try #require(read.status == 0, "hdr-log-check.py: \(read.error)")
        let theirs = try JSONParser.parse(read.output)
        #expect(theirs["lines"] == 3, "one latency interval a segment")
        #expect(theirs["count"] == merged["latency_ns"]?["count"])
        for (their, ours) in [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99_9")] {
            let value = UInt64(merged["latency_ns"]?[ours]?.intValue ?? -1)
            #expect(theirs[their]?.intValue.map(UInt64.init) == HDRHistogram.highestEquivalentValue(value), "\(ours)")
        }
    }
}
