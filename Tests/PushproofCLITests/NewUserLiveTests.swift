// What a new user meets first (issue 8): the README's quick start passes `check`; a push of an
// app no product ships is not covered by any spec rather than failing as some product's; the
// shipped specs are found from any folder; two gateways in one folder keep their own
// certificates; a token URL that points elsewhere is named; `specs lint` runs without the
// product documents.
import Foundation
import JSON
import PushproofTestSupport
import Testing
@testable import PushproofCLI

/// Runs `pushproof` with the environment changed: `unset` removed, `set` added.
func pushproof(_ arguments: [String], directory: String, unset: [String] = ["PUSHPROOF_SPECS"],
               set: [String: String] = [:], executable: String = pushproofExecutable()) throws -> ToolResult {
    let environment = unset.flatMap { ["-u", $0] } + set.map { "\($0.key)=\($0.value)" }.sorted()
    return try runTool("/usr/bin/env", environment + [executable] + arguments, currentDirectory: directory)
}

let quickStartBody = #"{"aps":{"alert":"hi"}}"#
let quickStartToken = String(repeating: "ab", count: 32)

/// The README's quick-start push: an alert to `topic`, over cleartext HTTP/2.
func quickStartPush(to serve: ServeProcess, topic: String) throws -> String {
    try curl(["--http2-prior-knowledge", "-sS", "-w", "\n%{http_code}", "-H", "apns-push-type: alert", "-H", "apns-topic: \(topic)",
              "-H", "authorization: bearer any", "-d", quickStartBody, "\(serve.baseURL)/3/device/\(quickStartToken)"]).output
}

@Suite(.serialized) struct NewUserLiveTests {
    /// The first word of two-word commands alone names the commands it begins, rather than
    /// calling itself unknown; `--help` lists them and succeeds.
    @Test func aCommandFamilyAloneNamesItsCommands() throws {
        let directory = try TemporaryDirectory("families")
        let bare = try pushproof(["k8s"], directory: directory.path)
        #expect(bare.status == ExitCode.usage)
        #expect(bare.error.contains("pushproof k8s: give one of:"), "\(bare.error)")
        for name in ["k8s render", "k8s segment", "k8s collect"] { #expect(bare.error.contains(name), "\(bare.error)") }
        #expect(!bare.error.contains("unknown command 'k8s'"))
        let help = try pushproof(["specs", "--help"], directory: directory.path)
        #expect(help.status == 0)
        #expect(help.output.contains("specs lint"), "\(help.output)")
        let wrong = try pushproof(["k8s", "deploy"], directory: directory.path)
        #expect(wrong.status == ExitCode.usage)
        #expect(wrong.error.contains("unknown command 'k8s deploy'"), "\(wrong.error)")
    }

    /// From a folder with no Specs/ and without --specs: the shipped specs are found, the
    /// quick start's push is not covered by any spec, and check passes (fails with --require-spec).
    @Test func theQuickStartPassesCheckFromAnyFolder() throws {
        let directory = try TemporaryDirectory("quickstart")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        for _ in 0..<2 { #expect(try quickStartPush(to: serve, topic: "com.example.myapp").hasSuffix("\n200")) }
        serve.stop()

        let result = try pushproof(["check", record], directory: directory.path)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(result.output.contains("specs: \(ShippedSpecs.buildTreeSpecs) (the package pushproof was built from)"), "\(result.output)")
        #expect(result.output.contains("not covered by any spec: 2 pushes to com.example.myapp"), "\(result.output)")
        #expect(result.output.contains("0 requests checked: 0 passed, 0 failed, 2 not covered by any spec"), "\(result.output)")

        let strict = try pushproof(["check", record, "--require-spec"], directory: directory.path)
        #expect(strict.status == 1, "\(strict.output)")
        #expect(strict.output.contains("2 requests checked: 0 passed, 2 failed"), "\(strict.output)")
        #expect(strict.output.contains("[not-covered]"), "\(strict.output)")
    }

    /// `run` from a folder holding only a scenario file of the team's own app, no --specs: the
    /// shipped specs are found (named on the first line) and claim the app for its product.
    @Test func runFromAnEmptyFolderWithOnlyAScenarioFileWorks() throws {
        let directory = try TemporaryDirectory("run-anywhere")
        guard case .object(var root) = try JSONParser.parse(String(contentsOfFile: specsDirectory + "/scenarios/yama-01-room-message.json",
                                                                   encoding: .utf8)) else { return }
        root["app"] = ["bundle_id": "com.acme.chat", "fcm_project": "acme-chat"]
        root["expect"] = nil
        try directory.write("mine.json", JSONValue.object(root).serialized())
        let result = try pushproof(["run", "mine.json"], directory: directory.path)
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(result.output.hasPrefix("specs: \(ShippedSpecs.buildTreeSpecs) (the package pushproof was built from)"), "\(result.output)")
        #expect(result.output.contains("mine.json: PASS"), "\(result.output)")
        #expect(!result.output.contains("no spec"), "\(result.output)")
    }

    /// poolse's own topic with a payload no poolse spec describes: a failure that says so,
    /// never another product's.
    @Test func aClaimedPushNoSpecMatchesFailsCheckSayingWhose() throws {
        let directory = try TemporaryDirectory("claimed")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        #expect(try quickStartPush(to: serve, topic: "com.example.loop").hasSuffix("\n200"))
        serve.stop()
        let result = try pushproof(["check", record], directory: directory.path)
        #expect(result.status == 1)
        #expect(result.output.contains("no poolse spec matches this push"), "\(result.output)")
        #expect(!result.output.contains("yama.message.apns            1"), "\(result.output)")
    }

    /// The gateway's own findings fail a push whether or not a spec covers it.
    @Test func gatewayWarningsFailEvenAnUncoveredPush() throws {
        let directory = try TemporaryDirectory("warnings")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        // A background push without apns-priority: Apple requires 5, the gateway notes it.
        let answer = try curl(["--http2-prior-knowledge", "-sS", "-w", "\n%{http_code}", "-H", "apns-push-type: background",
                               "-H", "apns-topic: com.example.myapp", "-H", "authorization: bearer any", "-d", #"{"aps":{"content-available":1}}"#,
                               "\(serve.baseURL)/3/device/\(quickStartToken)"]).output
        #expect(answer.hasSuffix("\n200"))
        serve.stop()
        let result = try pushproof(["check", record], directory: directory.path)
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("[gateway-warning]"), "\(result.output)")
        #expect(result.output.contains("(not covered)"), "\(result.output)")
    }

    /// `serve --specs shipped` from a folder without Specs/: an unclaimed push gets spec null,
    /// counts as uncovered (not unmatched) and is never rejected; a claimed one that matches no
    /// spec is rejected.
    @Test func serveJudgesWithTheShippedSpecsAndNeverRejectsAnUnclaimedPush() throws {
        let directory = try TemporaryDirectory("serve-shipped")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--specs", "shipped", "--reject-violations", "--record", record], directory: directory.path)
        #expect(serve.readyLine.contains("specs \(ShippedSpecs.buildTreeSpecs)"), "\(serve.readyLine)")
        #expect(try quickStartPush(to: serve, topic: "com.example.myapp").hasSuffix("\n200"))
        let claimed = try quickStartPush(to: serve, topic: "com.example.loop")
        #expect(claimed.hasSuffix("\n400"), "\(claimed)")
        #expect(claimed.contains("SpecViolation"))
        let metrics = try curl(["\(serve.adminURL)/metrics"]).output
        #expect(metrics.contains("pushproof_spec_uncovered_total 1"), "\(metrics)")
        #expect(metrics.contains("pushproof_spec_unmatched_total 1"), "\(metrics)")
        let (_, stderr) = serve.stop()
        #expect(stderr.contains("specs: \(ShippedSpecs.buildTreeSpecs)"), "\(stderr)")
        let recorded = try lines(of: record)
        #expect(recorded.first?["verdict"] == ["spec": .null, "ok": true, "covered": false, "violations": []])
        #expect(recorded.last?["verdict"]?["violations"]?[0]?["rule"] == "unmatched")
    }

    /// The layout `make install` writes: PREFIX/bin/pushproof and PREFIX/share/pushproof/Specs.
    /// Run from another folder, the installed copy finds its own specs before the build tree's.
    @Test func anInstalledBinaryFindsTheSpecsInstalledBesideIt() throws {
        let prefix = try TemporaryDirectory("prefix")
        let elsewhere = try TemporaryDirectory("elsewhere")
        try FileManager.default.createDirectory(atPath: prefix.file("bin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: prefix.file("share/pushproof"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: pushproofExecutable(), toPath: prefix.file("bin/pushproof"))
        try FileManager.default.copyItem(atPath: ShippedSpecs.buildTreeSpecs, toPath: prefix.file("share/pushproof/Specs"))
        let empty = try elsewhere.write("empty.jsonl", "")
        let result = try pushproof(["check", empty], directory: elsewhere.path, executable: prefix.file("bin/pushproof"))
        #expect(result.status == 0, "\(result.error)")
        let installed = URL(fileURLWithPath: prefix.file("share/pushproof/Specs")).standardizedFileURL.path
        #expect(result.output.contains("specs: \(installed) (installed beside"), "\(result.output)")

        // $PUSHPROOF_SPECS names the set outright, and a wrong one is an error that says so.
        let wrong = try pushproof(["check", empty], directory: elsewhere.path, set: ["PUSHPROOF_SPECS": elsewhere.file("none")])
        #expect(wrong.status == 2)
        #expect(wrong.error.contains("($PUSHPROOF_SPECS)"), "\(wrong.error)")
        #expect(wrong.error.contains("specset.json"), "\(wrong.error)")
    }

    /// Two gateways started in one folder each write and name their own certificate.
    @Test func twoGatewaysInOneFolderKeepTheirOwnCertificates() throws {
        let directory = try TemporaryDirectory("two-certs")
        let first = try ServeProcess([], directory: directory.path, admin: false)
        let second = try ServeProcess([], directory: directory.path, admin: false)
        let firstCert = try #require(first.certificatePath)
        let secondCert = try #require(second.certificatePath)
        #expect(firstCert == directory.path + "/pushproof-cert-\(first.port).pem")
        #expect(firstCert != secondCert)
        for (serve, cert) in [(first, firstCert), (second, secondCert)] {
            let result = try curl(["-sS", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_code}", "-H", "apns-push-type: alert",
                                   "-H", "apns-topic: com.example.myapp", "-H", "authorization: bearer any", "-d", quickStartBody,
                                   "\(serve.baseURL)/3/device/\(quickStartToken)"])
            #expect(result.output == "200", "\(cert): \(result.error)")
        }
        first.stop()
        second.stop()
    }

    /// A service account's token_uri that is not where the gateway listens is named at start.
    @Test func serveWarnsWhenTheTokenURLIsNotWhereItListens() throws {
        let directory = try TemporaryDirectory("token-url")
        let config = try directory.write("gateway.json", #"{"fcm": {"token_url": "https://127.0.0.1:1/token"}}"#)
        let serve = try ServeProcess(["--h2c", "--config", config], directory: directory.path)
        let (_, stderr) = serve.stop()
        #expect(stderr.contains("warning: fcm.token_url https://127.0.0.1:1/token is not where this gateway listens (127.0.0.1:\(serve.port))"),
                "\(stderr)")
        let quiet = try ServeProcess(["--h2c", "--config", config, "--quiet"], directory: directory.path)
        #expect(!quiet.stop().stderr.contains("token_url"))
    }

    @Test func showSaysWhyItsVerdictColumnIsEmpty() throws {
        let directory = try TemporaryDirectory("show")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        _ = try quickStartPush(to: serve, topic: "com.example.myapp")
        serve.stop()
        let shown = try pushproof(["show", record], directory: directory.path)
        #expect(shown.status == 0)
        #expect(shown.output.contains("no spec verdicts: the gateway ran without --specs"), "\(shown.output)")
    }

    @Test func serveHelpListsEveryOptionTheReadmeNames() throws {
        let help = try pushproof(["serve", "--help"], directory: NSTemporaryDirectory())
        for option in ["--stop-on-stdin-eof", "--specs DIR|shipped", "pushproof-cert-<port>.pem"] {
            #expect(help.output.contains(option), "\(option) missing from serve --help")
        }
    }

    /// Without the product documents, `specs lint` prints one line saying the quote check was
    /// skipped, and still passes clean specs.
    @Test func specsLintWithoutTheProductDocumentsSaysSoInOneLine() throws {
        let empty = try TemporaryDirectory("no-shared")
        let result = try pushproof(["specs", "lint", ShippedSpecs.buildTreeSpecs], directory: empty.path,
                                   set: ["PUSHPROOF_SHARED": empty.path])
        #expect(result.status == 0, "\(result.output)")
        let skipped = result.output.split(separator: "\n").filter { $0.contains("quote check skipped") }
        #expect(skipped == ["specs lint: quote check skipped: no product documents found in \(empty.path) (give --sources DIR)"])
    }
}

@Suite struct TokenURLCheckTests {
    @Test(arguments: [
        ("https://127.0.0.1:8443/token", "127.0.0.1", 8443, false),
        ("https://localhost:8443/token", "127.0.0.1", 8443, false),
        ("https://127.0.0.1:8443/token", "0.0.0.0", 8443, false),
        ("https://oauth2.googleapis.com/token", "127.0.0.1", 8443, false),
        ("https://127.0.0.1:8443/token", "127.0.0.1", 9443, true),
        ("https://gateway.test/token", "127.0.0.1", 443, true),
    ])
    func aTokenURLMustReachTheGateway(url: String, host: String, port: Int, warns: Bool) {
        #expect((tokenURLMismatch(url, listening: HostPort(host: host, port: port)) != nil) == warns)
    }
}
