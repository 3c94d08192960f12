// `pushproof send` end to end: the reference sender against a live `pushproof serve`, judged
// by what the gateway recorded and what the device store holds afterwards.
import Foundation
import JSON
import PushproofTestSupport
import Testing

/// Test credentials and a strict-auth gateway configuration trusting them, in `directory/cred`.
func writeCredentials(in directory: TemporaryDirectory, bundleIDs: [String] = ["com.example.loop"]) throws -> String {
    let out = directory.file("cred")
    let result = try pushproof(["credentials", "--out", out, "--gateway", "https://127.0.0.1:0"]
                               + bundleIDs.flatMap { ["--bundle-id", $0] })
    #expect(result.status == 0, "\(result.error)")
    return out
}

/// A strict-auth `pushproof serve` (with `arguments`) trusting fresh test credentials, and their folder.
func serveTrustingCredentials(in directory: TemporaryDirectory, _ arguments: [String]) throws -> (serve: ServeProcess, credentials: String) {
    let credentials = try writeCredentials(in: directory)
    return (try ServeProcess(["--config", credentials + "/gateway.json"] + arguments, directory: directory.path), credentials)
}

func credentialArguments(_ credentials: String, gateway: String) -> [String] {
    ["--apns-key", credentials + "/apns-key.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456",
     "--service-account", credentials + "/service-account.json", "--token-url", gateway + "/token"]
}

func readJSON(_ path: String) throws -> JSONValue {
    try JSONParser.parse(String(contentsOfFile: path, encoding: .utf8))
}

/// Recorded requests whose path or body names `token`.
func requests(to token: String, in record: [JSONValue]) -> [JSONValue] {
    record.filter { line in
        (line["path"]?.stringValue ?? "").contains(token) || (line["body"]?.stringValue ?? line["json"]?.serialized() ?? "").contains(token)
    }
}

@Suite(.serialized) struct SendLiveTests {
    @Test func demoOverTLSDeletesExactlyTheTokensMarkedGoneAndTheSecondRingSkipsThem() throws {
        let directory = try TemporaryDirectory("send-demo")
        // Each product's app has its own bundle id, as the specs' config names them: a push
        // belongs to the product whose bundle id its topic carries.
        let credentials = try writeCredentials(in: directory, bundleIDs: ["com.example.loop", "com.example.yama.tenant", "com.example.shop"])
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--config", credentials + "/gateway.json", "--record", record], directory: directory.path)
        #expect(serve.isTLS)
        let database = directory.file("devices.sqlite")
        let result = try pushproof(["send", "demo", "--apns", serve.baseURL, "--fcm", serve.baseURL,
                                    "--ca", serve.certificatePath ?? "", "--admin", serve.adminURL,
                                    "--devices", database, "--json", directory.file("demo.json"),
                                    "--expect-out", directory.file("expected.json"),
                                    "--yama-bundle-id", "com.example.yama.tenant", "--concierge-bundle-id", "com.example.shop"]
                                   + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")

        let report = try readJSON(directory.file("demo.json"))
        let markedValues = try #require(report["marked_gone"]?.arrayValue)
        let marked = markedValues.compactMap(\.stringValue)
        #expect(marked.count == 2)
        let deleted = try #require(report["deleted"]?.arrayValue)
        #expect(Set(deleted.compactMap { $0["token"]?.stringValue }) == Set(marked), "exactly the tokens marked gone")
        #expect(deleted.allSatisfy { $0["still_in_store"] == false })
        #expect(Set(deleted.compactMap { $0["reason"]?.stringValue }) == ["Unregistered", "UNREGISTERED"])
        #expect(report["failed"] == 0)
        #expect(report["dry_run"] == false)
        #expect(report["second_ring"]?["first_ring_pushes"] == 8)
        #expect(report["second_ring"]?["pushes"] == 6)
        #expect(report["second_ring"]?["sent_to_deleted"] == 0)
        #expect(Set(report["second_ring"]?["skipped"]?.arrayValue?.compactMap(\.stringValue) ?? []) == Set(marked))
        #expect(report["delivery"]?["devices_deleted"] == 2)
        for kind in ["poolse.ring", "poolse.ring_ended", "poolse.finished", "poolse.missed", "poolse.message",
                     "poolse.read", "yama.message", "concierge.reply"] {
            #expect(report["by_kind"]?[kind] != nil, "\(kind) was sent")
        }
        #expect(result.output.contains("skipped Dave's iPhone (PushKit token), Erin's Android phone"))

        // The gateway saw each gone token once (the first ring) and never again.
        let recorded = try lines(of: record)
        #expect(recorded.filter { $0["route"] == "apns" || $0["route"] == "fcm" }.count == 35, "35 pushes, each sent once")
        for token in marked {
            let hits = requests(to: token, in: recorded)
            #expect(hits.count == 1, "\(token) was pushed \(hits.count) times")
            #expect([410, 404].contains(hits.first?["response"]?["status"]?.intValue ?? 0))
        }
        #expect(recorded.filter { $0["route"] == "apns" }.allSatisfy { $0["tls"] == true && $0["protocol"] == "h2" })

        // The sender's deliveries as a `check --expect` oracle: the 33 pushes the gateway
        // accepted (not the two to gone tokens), and the recording matches it.
        let expected = try #require(try readJSON(directory.file("expected.json"))["deliveries"]?.arrayValue)
        #expect(expected.reduce(0) { $0 + ($1["count"]?.intValue ?? 1) } == 33)
        #expect(expected.allSatisfy { entry in !marked.contains(entry["token"]?.stringValue ?? "") })
        #expect(expected.contains { $0["spec"] == "poolse.ring.apns" } && expected.contains { $0["spec"] == "concierge.reply.fcm" })
        // The reference sender has one Firebase project (its service account's) for every
        // product's FCM pushes: Concierge lists it too, as a project holding both apps.
        let shared = try directory.write("spec-config.json", #"{"concierge": {"fcm_project": ["concierge-example", "poolse-example"]}}"#)
        let checked = try pushproof(["check", record, "--specs", specsDirectory, "--spec-config", shared,
                                     "--expect", directory.file("expected.json"), "--json", directory.file("check.json")])
        #expect(checked.output.contains("; deliveries as expected"), "\(checked.output)")
        #expect(try readJSON(directory.file("check.json"))["deliveries"]?["as_expected"] == 33)

        // The store itself: the two rows are gone, the other 13 demo devices of poolse remain.
        let rows = try runTool("/usr/bin/sqlite3", [database, "SELECT token FROM devices"]).output
            .split(separator: "\n").map(String.init)
        #expect(!rows.isEmpty)
        for token in marked { #expect(!rows.contains(token)) }
        #expect(rows.filter { $0.hasPrefix("d0") || $0.hasPrefix("fcm-d0-") }.count == 13)
    }

    @Test func withoutCredentialsNothingIsSentAndEachPushIsLogged() throws {
        let directory = try TemporaryDirectory("send-dry")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        let result = try pushproof(["send", "ring", "--members", "4", "--h2c", "--gateway", serve.baseURL,
                                    "--json", directory.file("ring.json")])
        let status = try curl(["\(serve.adminURL)/status"]).output
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        #expect(try lines(of: record).isEmpty, "the gateway recorded nothing")
        #expect(status.contains("\"requests\":0"), "the gateway's own counter: \(status)")

        let logged = result.output.split(separator: "\n").filter { $0.hasPrefix("dry-run ") }
        #expect(logged.count == 6, "one line per push: 3 callees x (PushKit + Android)")
        #expect(logged.filter { $0.hasPrefix("dry-run apns POST /3/device/") }.count == 3)
        #expect(logged.filter { $0.hasPrefix("dry-run fcm POST /v1/projects/poolse-example/messages:send") }.count == 3)
        #expect(logged.allSatisfy { $0.contains("\"event\":\"ring\"") })
        #expect(logged.filter { $0.contains("apns-push-type: voip") }.count == 3)
        let report = try readJSON(directory.file("ring.json"))
        #expect(report["dry_run"] == true)
        #expect(report["delivery"]?["dry_runs"] == 6)
        #expect(report["delivery"]?["requests"] == 0)
    }

    @Test func ringOverH2CReportsThroughputAndTimeToRingAll() throws {
        let directory = try TemporaryDirectory("send-ring")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"], directory: directory.path)
        let result = try pushproof(["send", "ring", "--members", "50", "--repeat", "2", "--h2c", "--gateway", serve.baseURL,
                                    "--json", directory.file("ring.json")] + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        let report = try readJSON(directory.file("ring.json"))
        let rounds = try #require(report["rounds"]?.arrayValue)
        #expect(rounds.count == 2)
        for round in rounds {
            #expect(round["pushes"] == 98)
            #expect(round["outcomes"]?["delivered"] == 98)
            #expect((round["time_to_ring_all_ms"]?.doubleValue ?? 0) > 0)
            #expect((round["throughput_per_s"]?.doubleValue ?? 0) > 0)
        }
        #expect(result.output.contains("time to ring all"))
        #expect(report["delivery"]?["connections_opened"] == 1, "h2c multiplexes on one connection")
    }

    @Test func severalDeliveryThreadsShareTheWorkOverTheirOwnConnections() throws {
        let directory = try TemporaryDirectory("send-senders")
        let credentials = try writeCredentials(in: directory)
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json", "--record", record], directory: directory.path)
        let result = try pushproof(["send", "message", "--members", "41", "--senders", "2", "--h2c", "--gateway", serve.baseURL,
                                    "--json", directory.file("message.json")] + credentialArguments(credentials, gateway: serve.baseURL))
        serve.stop()
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        let report = try readJSON(directory.file("message.json"))
        #expect(report["rounds"]?[0]?["outcomes"]?["delivered"] == 80)
        #expect(report["delivery"]?["delivered"] == 80)
        #expect(report["delivery"]?["access_tokens_fetched"] == 2, "each delivery thread holds its own access token")
        // Each thread multiplexes on a connection of its own (FCM and APNs share the origin).
        let pushes = try lines(of: record).filter { $0["route"] == "apns" || $0["route"] == "fcm" }
        #expect(pushes.count == 80)
        #expect(Set(pushes.compactMap { $0["connection"]?.intValue }).count == 2)
    }

    @Test func buildOnlyTimesTheRulesAndSendsNothing() throws {
        let result = try pushproof(["send", "ring", "--members", "200", "--build-only", "--repeat", "3"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("= 398 pushes"))
        #expect(!result.output.contains("dry-run"))
    }

    @Test(arguments: [
        ["send"],
        ["send", "bogus"],
        ["send", "ring", "--members", "1"],
        ["send", "demo", "--members", "3"],
        ["send", "ring", "--admin", "http://127.0.0.1:1"],
        ["send", "ring", "--h2c", "--gateway", "https://127.0.0.1:1"],
        ["send", "ring", "--apns-key", "k.p8"],
        ["send", "ring", "--ca", "a.pem", "--insecure"],
        ["send", "demo", "--admin", "ftp://127.0.0.1:1"],
        ["send", "ring", "--connections", "0"],
    ])
    func usageErrorsExit64(_ arguments: [String]) throws {
        let result = try pushproof(arguments)
        #expect(result.status == 64, "\(arguments): \(result.output)\(result.error)")
        #expect(!result.error.isEmpty)
    }

    @Test func unreadableFilesExit2() throws {
        let directory = try TemporaryDirectory("send-files")
        let missingCA = try pushproof(["send", "ring", "--members", "2", "--ca", directory.file("no-cert.pem")])
        #expect(missingCA.status == 2)
        #expect(missingCA.error.contains("no-cert.pem"))
        let badStore = try pushproof(["send", "ring", "--members", "2", "--devices", directory.file("no/such/dir/devices.sqlite")])
        #expect(badStore.status == 2)
        #expect(badStore.error.contains("devices.sqlite"))
        let garbage = try directory.write("baseline.json", "not a report")
        let badBaseline = try pushproof(["drive", "ring-fanout", "--baseline", garbage, "--apns-key", "k.p8",
                                         "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"])
        #expect(badBaseline.status == 2)
        #expect(badBaseline.error.contains("not JSON"))
    }

    @Test func unreadableCredentialsExit2() throws {
        let result = try pushproof(["send", "ring", "--members", "2", "--apns-key", "/nonexistent/apns.p8",
                                    "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"])
        #expect(result.status == 2)
        #expect(result.error.contains("/nonexistent/apns.p8"))
    }
}
