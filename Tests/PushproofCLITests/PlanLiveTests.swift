// `pushproof plan` end to end: capacity plans for a group call, made by ringing a live
// `pushproof serve` with each set-up, with their JSON, JUnit and exit codes.
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import JSON
import PushproofTestSupport
import Testing

@Suite(.serialized) struct PlanLiveTests {
    /// `pushproof plan ARGUMENTS --json --junit` against a fresh `serve --h2c` with test credentials.
    func plan(_ arguments: [String], in directory: TemporaryDirectory, record: String? = nil) throws -> ToolResult {
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"] + (record.map { ["--record", $0] } ?? []),
                                     directory: directory.path)
        defer { serve.stop() }
        return try pushproof(["plan"] + arguments + ["--h2c", "--gateway", serve.baseURL,
                                                     "--json", directory.file("plan.json"), "--junit", directory.file("plan.xml")]
                             + credentialArguments(credentials, gateway: serve.baseURL))
    }

    @Test func aTargetThatIsMetNamesTheSetupAndExits0() throws {
        let directory = try TemporaryDirectory("plan-met")
        let record = directory.file("record.jsonl")
        let json = directory.file("plan.json"), junit = directory.file("plan.xml")
        let result = try plan(["--members", "20", "--within-ms", "600000", "--calls", "2", "--try-connections", "1",
                               "--try-senders", "1,2"], in: directory, record: record)
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        #expect(result.output.contains("plan: 1 thread x 1 connection per machine rings all 38 phones within 600000 ms"))

        let plan = try readJSON(json)
        #expect(plan["plan"]?["meets_target"] == true)
        #expect(plan["plan"]?["setup"]?["delivery_threads"] == 1, "the fewest connections win")
        let setups = try #require(plan["setups"]?.arrayValue)
        #expect(setups.count == 2)
        for setup in setups {
            // 19 callees, each rung on a PushKit and an Android token.
            #expect(setup["pushes_per_call"] == 38)
            #expect(setup["undelivered"] == 0)
            #expect(setup["ring_all_ms"]?.arrayValue?.count == 2)
            #expect(setup["meets_target"] == true)
        }
        // Per set-up: one warm-up call and two measured ones, every push on the wire once.
        let pushes = try lines(of: record).filter { $0["route"] == "apns" || $0["route"] == "fcm" }
        #expect(pushes.count == 2 * 3 * 38)

        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(XMLParser(data: Data(xml.utf8)).parse(), "well-formed JUnit")
        #expect(xml.contains(#"tests="3" failures="0""#))
    }

    @Test func aTargetNoSetupCanMeetExits3AndSaysHowManyMachines() throws {
        let directory = try TemporaryDirectory("plan-missed")
        let json = directory.file("plan.json"), junit = directory.file("plan.xml")
        // 1,999 pushes cannot all be answered within a millisecond over one connection.
        let result = try plan(["--members", "2000", "--within-ms", "1", "--calls", "1", "--try-connections", "1",
                               "--transport", "apns"], in: directory)
        #expect(result.status == 3, "\(result.output)\n\(result.error)")
        #expect(result.output.contains("plan: no set-up rings all 1999 phones within 1 ms on this machine"))

        let plan = try readJSON(json)
        #expect(plan["plan"]?["meets_target"] == false)
        let machines = try #require(plan["plan"]?["machines"]?.intValue)
        let rate = try #require(plan["setups"]?[0]?["pushes_per_second"]?.doubleValue)
        #expect(machines >= 2)
        let expected = Int((1999 / (rate / 1000)).rounded(.up))
        #expect(abs(machines - expected) <= 1, "machines = pushes / (rate x target): \(machines), \(expected)")

        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(XMLParser(data: Data(xml.utf8)).parse(), "well-formed JUnit")
        #expect(xml.contains(#"<failure type="capacity""#), "the plan's testcase fails")
        #expect(xml.contains(#"tests="2" failures="1""#), "the set-up itself delivered everything")
    }

    @Test(arguments: [
        (["--try-connections", "1,x"], "--try-connections takes numbers from 1 to 256"),
        (["--try-senders", "0"], "--try-senders takes numbers from 1 to 64"),
        (["--within-ms", "0"], "--within-ms"),
        (["--connections", "2"], "--connections"),
    ])
    func badArgumentsAreUsageErrors(extra: [String], message: String) throws {
        let directory = try TemporaryDirectory("plan-usage")
        let credentials = try writeCredentials(in: directory)
        let result = try pushproof(["plan", "--h2c", "--gateway", "http://127.0.0.1:9"] + extra
                                   + credentialArguments(credentials, gateway: "http://127.0.0.1:9"))
        #expect(result.status == 64, "\(result.output)\n\(result.error)")
        #expect(result.error.contains(message), "\(result.error)")
    }

    @Test func withoutCredentialsNothingIsPlanned() throws {
        let result = try pushproof(["plan", "--h2c", "--gateway", "http://127.0.0.1:9"])
        #expect(result.status == 64)
        #expect(result.error.contains("plan sends for real"))
    }
}
