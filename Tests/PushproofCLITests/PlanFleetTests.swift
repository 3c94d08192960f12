// `pushproof plan --target-members`: a fleet sized from given rates (no measurement), the
// k8s render command it prints run and its YAML validated; then sized from a short live
// measurement of a sender and a `serve --threads 1 --specs --record` through its control API.
import Foundation
import JSON
import PushproofTestSupport
import Testing

@Suite(.serialized) struct PlanFleetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let validator = testDataDirectory(repositoryRoot: root).appendingPathComponent("kubernetes-validate")

    /// The words of a printed command line: spaces split, single quotes group (as FleetManifests quotes).
    static func words(_ line: String) -> [String] {
        var words: [String] = [], word = "", quoted = false, inWord = false
        var characters = Array(line)[...]
        while let c = characters.popFirst() {
            if quoted {
                if c == "'" { quoted = false } else { word.append(c) }
            } else if c == "'" {
                quoted = true; inWord = true
            } else if c == "\\", let next = characters.popFirst() {
                word.append(next); inWord = true
            } else if c == " " {
                if inWord { words.append(word); word = ""; inWord = false }
            } else {
                word.append(c); inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    @Test func givenRatesSizeA200000MemberCallAndItsRenderValidates() throws {
        let directory = try TemporaryDirectory("plan-fleet")
        let json = directory.file("plan.json")
        let result = try pushproof(["plan", "--target-members", "200000", "--within", "2s", "--sender-rate", "18400",
                                    "--gateway-rate", "76900", "--image", "registry.example/pushproof:test", "--json", json])
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        // 199,999 callees, each rung on a PushKit and an Android token: 399,998 pushes in 2 s.
        #expect(result.output.contains("N = ceil(399,998 pushes / 2 s / (18,400 pushes/s a segment x 0.7 headroom)) = 16: "
                                       + "16 segments deliver 294,400 pushes/s against 199,999 needed: 1.47x margin"), "\(result.output)")
        #expect(result.output.contains("M = ceil(399,998 pushes / 2 s / (76,900 pushes/s a gateway core x 0.7 headroom)) = 4"))
        #expect(result.output.contains("sender: 18,400 pushes/s a segment, given (--sender-rate)"))
        let fleet = try #require(try readJSON(json)["fleet"])
        #expect(fleet["segments"]?.intValue == 16 && fleet["gateways"]?.intValue == 4)
        #expect(fleet["reaches_target"] == true)

        let line = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("run it") }.map(String.init))
        let start = try #require(line.range(of: "pushproof k8s render"))
        let command = Self.words(String(line[start.lowerBound...]).components(separatedBy: "  (")[0])
        let rendered = try #require(fleet["render_command"]?.arrayValue?.compactMap { $0.stringValue })
        #expect(command == rendered, "the printed line is the JSON's command")
        #expect(Array(command.prefix(9)) == ["pushproof", "k8s", "render", "ring-fanout", "--segments", "16", "--gateways", "4", "--image"])
        #expect(command.contains("--members") && command[command.firstIndex(of: "--members")! + 1] == "200000")
        #expect(command.last == "time_to_ring_all_ms<=2000")

        // The printed command, run: its YAML passes kubernetes-validate --strict.
        let yaml: ToolResult = try pushproof(Array(command.dropFirst()))
        #expect(yaml.status == 0, "\(yaml.error)")
        #expect(yaml.output.contains("parallelism: 16") && yaml.output.contains("replicas: 4"), "\(yaml.output.prefix(2000))")
        guard let python = python3OnPath() else {
            print("PlanFleetTests: python3 is not on PATH; the rendered YAML is not validated")
            return
        }
        try #require(FileManager.default.fileExists(atPath: Self.validator.appendingPathComponent("kubernetes_validate").path),
                     "kubernetes-validate not found: `make test-data` fetches it")
        let file = try directory.write("fleet.yaml", yaml.output)
        let validated = try runTool("/usr/bin/env", ["PYTHONPATH=\(Self.validator.path)", python.path, "-m", "kubernetes_validate",
                                                     "--strict", "--kubernetes-version", "1.37.0", file])
        #expect(validated.status == 0, "\(validated.output)\(validated.error)")
        #expect(validated.output.components(separatedBy: "passed for resource").count - 1 == 6, "\(validated.output)")
    }

    @Test func aTargetNoFleetReachesExits3WithoutACommand() throws {
        // 10 pushes within 1 ms at 500 pushes/s a segment: each segment would have half a push.
        let result = try pushproof(["plan", "--target-members", "11", "--within", "1ms", "--transport", "apns", "--sender-rate", "500",
                                    "--gateway-rate", "80000", "--headroom", "1"])
        #expect(result.status == 3, "\(result.output)\n\(result.error)")
        #expect(result.output.contains("plan: no fleet rings all 10 phones within 1 ms: 20 segments would each have less than one push"))
        #expect(!result.output.contains("k8s render"))
    }

    @Test(arguments: [
        (["--sender-rate", "0", "--gateway-rate", "1000"], "--sender-rate takes pushes per second above 0, not '0'"),
        (["--sender-rate", "-3", "--gateway-rate", "1000"], "--sender-rate takes pushes per second above 0"),
        (["--sender-rate", "1000", "--gateway-rate", "lots"], "--gateway-rate takes pushes per second above 0"),
        (["--within", "0s", "--sender-rate", "1000", "--gateway-rate", "1000"], "--within takes a duration above 0"),
        (["--sender-rate", "1000", "--gateway-rate", "1000", "--headroom", "1.2"], "--headroom is the share"),
        (["--sender-rate", "1000"], "give --admin URL"),
        (["--sender-rate", "1000", "--gateway-rate", "1000", "--members", "50"], "--members is for measuring; with --sender-rate and --gateway-rate nothing is measured"),
        (["--sender-rate", "1000", "--gateway-rate", "1000", "--junit", "x.xml"], "--junit is for a one-machine plan"),
        (["--sender-rate", "1000", "--gateway-rate", "1000", "--scenario", "x.json"], "--target-members sizes a fleet for the built-in group call"),
    ])
    func badFleetInputIsAUsageError(arguments: [String], message: String) throws {
        let result = try pushproof(["plan", "--target-members", "1000"] + arguments)
        #expect(result.status == 64)
        #expect(result.error.contains(message), "\(result.error)")
    }

    @Test func fleetOptionsNeedATarget() throws {
        let result = try pushproof(["plan", "--sender-rate", "1000"])
        #expect(result.status == 64)
        #expect(result.error.contains("--sender-rate goes with --target-members"), "\(result.error)")
    }

    @Test func aMeasuredSenderAndGatewayCoreSizeTheFleet() throws {
        let directory = try TemporaryDirectory("plan-fleet-live")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--threads", "1", "--config", credentials + "/gateway.json", "--record", directory.file("record.jsonl"),
                                      "--specs", HostileInputLiveTests.specsDirectory], directory: directory.path)
        defer { serve.stop() }
        let json = directory.file("plan.json")
        let result = try pushproof(["plan", "--target-members", "20000", "--within", "2s", "--members", "300", "--calls", "2",
                                    "--try-connections", "1", "--h2c", "--gateway", serve.baseURL, "--admin", serve.adminURL, "--json", json]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        #expect(result.output.contains("measured: the fastest set-up, 1 thread x 1 connection, 598 pushes a call"), "\(result.output)")
        #expect(result.output.contains("measured at \(serve.adminURL): "))
        #expect(result.output.contains("specs on (0 violations), record on, 1 thread; it shared this machine's"), "the plan's pushes pass the specs: the judged path")
        let plan = try readJSON(json)
        let fleet = try #require(plan["fleet"])
        let setups = try #require(plan["setups"]?.arrayValue)
        #expect(setups.count == 1, "the measurement's set-ups are in the JSON too")
        let senderRate = try #require(fleet["sender_pushes_per_second"]?.doubleValue)
        #expect(senderRate == setups[0]["pushes_per_second"]?.doubleValue)
        let gatewayRate = try #require(fleet["gateway_pushes_per_second_per_core"]?.doubleValue)
        // A core of this gateway answers thousands of pushes a second, not millions (CPU, not wall time).
        #expect(gatewayRate > 1_000 && gatewayRate < 2_000_000, "\(gatewayRate)")
        let needed = 2.0 * 19_999 / 2
        #expect(fleet["segments"]?.intValue == max(1, Int((needed / (senderRate * 0.7)).rounded(.up))))
        #expect(fleet["gateways"]?.intValue == max(1, Int((needed / (gatewayRate * 0.7)).rounded(.up))))
        let render = try #require(fleet["render_command"]?.arrayValue?.compactMap { $0.stringValue })
        #expect(render.contains("--segment-cpu"), "a measured segment's CPU becomes its pod's")
    }
}
