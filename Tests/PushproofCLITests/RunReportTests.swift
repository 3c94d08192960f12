// `pushproof run`'s reports, end to end through the binary: a golden scenario with one wrong
// expectation fails that event, exits 1, and every event's verdict is in the HTML report and
// the text names devices the same way for what was expected and what was delivered.
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import JSON
import PushproofTestSupport
import Testing

@Suite(.serialized) struct RunReportTests {
    /// poolse-02 with Bob's ring_ended expected on his iPhone's alert token instead of his
    /// Android phone: event 1 fails, events 0 and 2 pass.
    func wrongExpectation(in directory: TemporaryDirectory) throws -> String {
        let golden = specsDirectory + "/scenarios/poolse-02-answered-elsewhere.json"
        let text = try String(contentsOfFile: golden, encoding: .utf8)
        var root = try #require(try JSONParser.parse(Array(text.utf8)).objectValue)
        var expect = try #require(root["expect"]?.arrayValue)
        var entry = try #require(expect[1].objectValue)
        var deliveries = try #require(entry["deliveries"]?.arrayValue)
        var delivery = try #require(deliveries[0].objectValue)
        #expect(delivery["device"]?.stringValue == "b-android")
        delivery["device"] = .string("b-ios")
        deliveries[0] = .object(delivery)
        entry["deliveries"] = .array(deliveries)
        expect[1] = .object(entry)
        root["expect"] = .array(expect)
        return try directory.write("wrong.json", JSONValue.object(root).serialized())
    }

    @Test func theHTMLReportHoldsEveryEventsVerdict() throws {
        let directory = try TemporaryDirectory("run-html")
        let scenario = try wrongExpectation(in: directory)
        let html = directory.file("report.html"), json = directory.file("report.json")
        let result = try pushproof(["run", scenario, "--specs", specsDirectory, "--html", html, "--json", json, "--timing"],
                                   directory: directory.path)
        #expect(result.status == 1, "\(result.output)")
        // Expected and delivered devices are named alike: person/device.
        #expect(result.output.contains("expected poolse.ring_ended.fcm to bob/b-ios"), "\(result.output)")
        #expect(result.output.contains("delivered poolse.ring_ended.fcm to bob/b-android"), "\(result.output)")
        #expect(result.output.contains("judging"), "--timing prints the phases")

        let report = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: json))))
        let events = try #require(report["scenarios"]?[0]?["events"]?.arrayValue)
        #expect(events.map { $0["passed"]?.boolValue } == [true, false, true])
        #expect(report["scenarios"]?[0]?["timing"]?["judging_s"]?.doubleValue != nil)
        #expect(report["scenarios"]?[0]?["timing"]?["judging_reads_wall_s"]?.doubleValue != nil)

        // Well-formed XHTML, self-contained, one verdict cell per event in order.
        let document = try XMLDocument(contentsOf: URL(fileURLWithPath: html))
        let rows = try document.nodes(forXPath: "//*[local-name()='table'][1]/*[local-name()='tr'][*[local-name()='td']]")
        #expect(rows.count == events.count)
        let verdicts = rows.map { row in (row as? XMLElement)?.children?[3].stringValue }
        #expect(verdicts == ["pass", "FAIL", "pass"])
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains("<style>") && !page.contains("<script") && !page.contains("href="))
        #expect(page.contains("wrong token: poolse.ring_ended.fcm went to bob/b-android"))
    }
}

/// `run --gateway URL --admin URL`: a golden scenario against a real `pushproof serve`, its
/// token states set through the control API and each event read back from the journal.
@Suite(.serialized) struct RunExternalGatewayLiveTests {
    @Test func aGoldenScenarioPassesAgainstServe() throws {
        let directory = try TemporaryDirectory("run-external")
        let (serve, credentials) = try serveTrustingCredentials(in: directory, ["--specs", specsDirectory])
        defer { _ = serve.stop() }
        let certificate = try #require(serve.certificatePath)
        // A gone token set through PUT /tokens, a 410 judged from the journal, and the cleanup rules.
        let golden = specsDirectory + "/scenarios/poolse-25-gone-token.json"
        let json = directory.file("report.json")
        let result = try pushproof(["run", golden, "--specs", specsDirectory, "--json", json, "--gateway", serve.baseURL,
                                    "--admin", serve.adminURL, "--ca", certificate]
                                   + credentialArguments(credentials, gateway: serve.baseURL), directory: directory.path)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        let report = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: json))))
        let events = try #require(report["scenarios"]?[0]?["events"]?.arrayValue)
        #expect(!events.isEmpty && events.allSatisfy { $0["passed"]?.boolValue == true })
        #expect(events.contains { !($0["delivered"]?.arrayValue ?? []).isEmpty }, "pushes were read back from the journal")

        // The pushes reached serve (not an embedded gateway), the gone token's FCM 404 among them.
        let gone = try JSONParser.parse(try curl(["-sS", serve.adminURL + "/requests/count?status=404"]).output)
        #expect((gone["count"]?.intValue ?? 0) > 0)
    }

    /// Files named relative to where `run` starts reach an adapter running elsewhere (the
    /// scenario's folder) as absolute paths; report files create their folders.
    @Test func relativeCredentialPathsReachTheAdapterAndReportFoldersAreMade() throws {
        let directory = try TemporaryDirectory("run-external-relative")
        let (serve, credentials) = try serveTrustingCredentials(in: directory, ["--specs", specsDirectory])
        defer { _ = serve.stop() }
        let certificate = try #require(serve.certificatePath)
        let relative = { (path: String) in String(path.dropFirst(directory.path.count + 1)) }
        #expect(!relative(credentials).hasPrefix("/"))
        let golden = specsDirectory + "/scenarios/poolse-25-gone-token.json"
        let result = try pushproof(["run", golden, "--specs", specsDirectory, "--gateway", serve.baseURL, "--admin", serve.adminURL,
                                    "--ca", relative(certificate), "--apns-key", relative(credentials) + "/apns-key.p8",
                                    "--key-id", "ABC123DEFG", "--team-id", "TEAM123456",
                                    "--service-account", relative(credentials) + "/service-account.json",
                                    "--html", "out/reports/run.html", "--json", "out/reports/run.json",
                                    "--sender-cmd", "'\(pushproofExecutable())' adapter"], directory: directory.path)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(FileManager.default.fileExists(atPath: directory.file("out/reports/run.html")))
        #expect(FileManager.default.fileExists(atPath: directory.file("out/reports/run.json")))
    }

    /// A scenario of the team's own app against `serve`: refused up front, naming the bundle id
    /// and the --spec-config to pass, while serve's specs do not claim it; passing once they do.
    @Test func aScenarioOfTheTeamsOwnAppNeedsServeToClaimIt() throws {
        let directory = try TemporaryDirectory("run-external-app")
        guard case .object(var root) = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath:
            specsDirectory + "/scenarios/yama-01-room-message.json")))) else { return }
        root["app"] = ["bundle_id": "com.acme.chat", "fcm_project": "acme-chat"]
        let scenario = try directory.write("acme.json", JSONValue.object(root).serialized())
        let credentials = try writeCredentials(in: directory, bundleIDs: ["com.acme.chat"])
        func play(_ serveArguments: [String]) throws -> (status: Int32, output: String) {
            let serve = try ServeProcess(["--config", credentials + "/gateway.json", "--specs", specsDirectory] + serveArguments,
                                         directory: directory.path)
            defer { _ = serve.stop() }
            let result = try pushproof(["run", scenario, "--specs", specsDirectory, "--gateway", serve.baseURL, "--admin", serve.adminURL,
                                        "--ca", try #require(serve.certificatePath)] + credentialArguments(credentials, gateway: serve.baseURL),
                                       directory: directory.path)
            return (result.status, result.output + result.error)
        }
        let unclaimed = try play([])
        #expect(unclaimed.status == 2, "\(unclaimed.output)")
        #expect(unclaimed.output.contains("do not claim the scenario's bundle id com.acme.chat for yama"), "\(unclaimed.output)")
        #expect(unclaimed.output.contains(#"--spec-config FILE, FILE holding {"yama":{"bundle_ids":["com.example.yama.tenant","com.acme.chat"]}}"#),
                "\(unclaimed.output)")
        #expect(!unclaimed.output.contains("no spec"), "no flood of unjudged pushes: \(unclaimed.output)")

        let config = try directory.write("spec-config.json", #"{"yama":{"bundle_ids":["com.acme.chat"]}}"#)
        let claimed = try play(["--spec-config", config])
        #expect(claimed.status == 0, "\(claimed.output)")
        #expect(claimed.output.contains("PASS"), "\(claimed.output)")
    }

    /// `--gateway http://`: a pushproof serve --h2c, played through `pushproof adapter`, whose
    /// reference sender then speaks cleartext HTTP/2 with prior knowledge.
    @Test func aGoldenScenarioPassesThroughTheAdapterOverH2C() throws {
        let directory = try TemporaryDirectory("run-external-h2c")
        let (serve, credentials) = try serveTrustingCredentials(in: directory, ["--h2c", "--specs", specsDirectory])
        defer { _ = serve.stop() }
        #expect(serve.baseURL.hasPrefix("http://"))
        let golden = specsDirectory + "/scenarios/poolse-25-gone-token.json"
        let json = directory.file("report.json")
        let result = try pushproof(["run", golden, "--specs", specsDirectory, "--json", json, "--gateway", serve.baseURL,
                                    "--admin", serve.adminURL, "--sender-cmd", "'\(pushproofExecutable())' adapter"]
                                   + credentialArguments(credentials, gateway: serve.baseURL), directory: directory.path)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        let report = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: json))))
        let events = try #require(report["scenarios"]?[0]?["events"]?.arrayValue)
        #expect(!events.isEmpty && events.allSatisfy { $0["passed"]?.boolValue == true })
        // The pushes went over h2c: the journal's record lines say so.
        let lines = try JSONParser.parse(try curl(["-sS", serve.adminURL + "/requests?route=apns"]).output)
        let first = try #require(lines.arrayValue?.first)
        #expect(first["tls"] == false, "\(first)")
        #expect(first["protocol"] == "h2")
    }
}
