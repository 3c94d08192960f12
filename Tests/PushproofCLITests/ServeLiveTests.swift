// Live tests of `pushproof serve`: the real executable on loopback, driven by curl, nghttp and
// h2load, as a user would drive it.
import Crypto
import Foundation
import JSON
import PushproofTestSupport
import Testing

let deviceToken = String(repeating: "ab", count: 32)
let voipHeaders = ["-H", "apns-push-type: voip", "-H", "apns-topic: com.example.loop.voip", "-H", "apns-priority: 10",
                   "-H", "apns-expiration: 0"]
/// Zero config accepts any bearer token (and refuses a push with no credential: MissingProviderToken).
let zeroConfigAuth = ["-H", "authorization: bearer any"]
let ringBody = #"{"cv":"1","type":"call","event":"ring","call_id":"4a69","conversation_id":"6f1c","caller_name":"Alice"}"#

func lines(of path: String) throws -> [JSONValue] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
}

/// Credentials as a user's would be: an APNs .p8 key and a Google service account whose
/// token_uri is the mock, plus the gateway configuration that trusts both.
struct StrictSetup {
    let directory: TemporaryDirectory
    let apnsKey: ECP256PrivateKey
    let account: GoogleServiceAccount
    let configPath: String
    static let keyID = "ABC123DEFG"
    static let teamID = "TEAM123456"

    init() throws {
        directory = try TemporaryDirectory("strict")
        apnsKey = try ECP256PrivateKey.generate()
        let generated = try GoogleServiceAccount.generate(projectID: "poolse-test", clientEmail: "push@poolse-test.iam.gserviceaccount.com",
                                                          tokenURI: "https://127.0.0.1:1/token")
        account = generated.account
        try directory.write("service-account.json", generated.json)
        let config: JSONValue = [
            "apns": ["keys": [["key_id": .string(Self.keyID), "team_id": .string(Self.teamID), "public_key_pem": .string(try apnsKey.publicKey.spkiPEM)]]],
            "fcm": ["project_id": "poolse-test", "service_accounts": [["service_account_file": "service-account.json"]]],
        ]
        configPath = try directory.write("gateway.json", config.serialized())
    }

    func providerToken(issuedAt: Int = Int(Date().timeIntervalSince1970), key: ECP256PrivateKey? = nil) throws -> String {
        try APNsProviderToken.make(keyID: Self.keyID, teamID: Self.teamID, issuedAt: issuedAt, key: key ?? apnsKey)
    }
}

@Suite(.serialized) struct ServeLiveTests {
    /// A SIGTERM sent the moment the ready line is out stops the gateway cleanly, every time:
    /// its handler is in place before the line (a Dispatch signal source, set up asynchronously
    /// behind SIG_IGN, lost such a signal about once in 40 starts and left the gateway running).
    @Test func aSIGTERMRightAfterTheReadyLineAlwaysStopsTheGateway() throws {
        let directory = try TemporaryDirectory("sigterm")
        for attempt in 1...60 {
            let serve = try ServeProcess(["--h2c"], directory: directory.path)
            let (status, stderr) = serve.stop(patience: 10)
            #expect(status == 0, "start \(attempt): \(stderr)")
            #expect(stderr.contains("SIGTERM, stopping"), "start \(attempt): \(stderr)")
            if status != 0 { break }
        }
    }

    @Test func zeroConfigTLSAcceptsAPushAndAnswersWithHeadersOnly() throws {
        let directory = try TemporaryDirectory()
        // A record path in a folder that does not exist yet: serve creates it.
        let record = directory.file("out/record.jsonl")
        let serve = try ServeProcess(["--record", record], directory: directory.path)
        let cert = try #require(serve.certificatePath)
        #expect(FileManager.default.fileExists(atPath: cert), "the self-signed certificate is written where clients can trust it")
        let result = try curl(["--cacert", cert, "-i", "-H", "authorization: bearer anything"] + voipHeaders
                              + ["-d", ringBody, "\(serve.baseURL)/3/device/\(deviceToken)"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.hasPrefix("HTTP/2 200"))
        #expect(result.output.contains("apns-id: "))
        #expect(result.output.hasSuffix("\r\n\r\n"), "a 200 carries no body")
        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
        let recorded = try lines(of: record)
        #expect(recorded.count == 1)
        #expect(recorded.first?["response"]?["status"] == 200)
        // A JSON body is its own bytes in the line (`json`), not a string to parse again.
        #expect(recorded.first?["body"] == nil)
        #expect(try String(contentsOfFile: record, encoding: .utf8).contains(#","json":"# + ringBody + #","response":"#))
    }

    @Test func successIsOneHeadersFrameWithEndStreamAndNoData() throws {
        let directory = try TemporaryDirectory()
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        let body = directory.file("ring.json")
        try ringBody.write(toFile: body, atomically: true, encoding: .utf8)
        let result = try runTool("/usr/bin/nghttp", ["-v", "-d", body, "-H", "authorization: bearer any", "-H", "apns-push-type: voip", "-H", "apns-topic: com.example.loop.voip",
                                                     "\(serve.baseURL)/3/device/\(deviceToken)"])
        #expect(result.status == 0, "\(result.error)")
        // The response HEADERS carry END_STREAM, and the server sends no DATA frame at all.
        #expect(result.output.contains("recv HEADERS frame <length=") && result.output.contains("flags=0x05"))
        #expect(!result.output.contains("recv DATA frame"))
        serve.stop()
    }

    @Test func fcmOverHTTP1AndHTTP2WithTheGoogleErrorShape() throws {
        let directory = try TemporaryDirectory()
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        let url = "\(serve.baseURL)/v1/projects/poolse-test/messages:send"
        let good = #"{"message":{"token":"fcm-token-1","data":{"cv":"1","type":"call"},"android":{"priority":"HIGH","ttl":"60s"}}}"#
        for version in ["--http1.1", "--http2-prior-knowledge"] {
            let result = try curl([version, "-H", "authorization: Bearer t", "-H", "content-type: application/json", "-d", good, "-w", "\n%{http_code}", url])
            #expect(result.output.hasSuffix("\n200"), "\(version): \(result.output)")
            let name = try JSONParser.parse(String(result.output.split(separator: "\n").first ?? ""))["name"]?.stringValue
            #expect(name?.hasPrefix("projects/poolse-test/messages/") == true)
        }
        let bad = #"{"message":{"token":"fcm-token-1","data":{"unread_total":4}}}"#
        let result = try curl(["--http1.1", "-H", "authorization: Bearer t", "-d", bad, url])
        let error = try JSONParser.parse(result.output)["error"]
        #expect(error?["code"] == 400)
        #expect(error?["status"] == "INVALID_ARGUMENT")
        #expect(error?["message"]?.stringValue?.contains("message.data[0].value") == true)
        serve.stop()
    }

    @Test func strictAuthVerifiesProviderTokensAndRunsTheOAuthExchange() throws {
        let setup = try StrictSetup()
        let serve = try ServeProcess(["--config", setup.configPath], directory: setup.directory.path)
        let cert = try #require(serve.certificatePath)
        let url = "\(serve.baseURL)/3/device/\(deviceToken)"
        func push(_ token: String?) throws -> String {
            var arguments = ["--cacert", cert, "-i"] + voipHeaders + ["-d", ringBody]
            if let token { arguments += ["-H", "authorization: bearer \(token)"] }
            return try curl(arguments + [url]).output
        }
        #expect(try push(setup.providerToken()).hasPrefix("HTTP/2 200"))
        #expect(try push(nil).contains(#"{"reason":"MissingProviderToken"}"#))
        let forged = try setup.providerToken(key: try ECP256PrivateKey.generate())
        #expect(try push(forged).contains(#"{"reason":"InvalidProviderToken"}"#))
        let old = try setup.providerToken(issuedAt: Int(Date().timeIntervalSince1970) - 3700)
        #expect(try push(old).contains(#"{"reason":"ExpiredProviderToken"}"#))

        // OAuth: the assertion is exchanged for an access token, which FCM then accepts.
        let assertion = try setup.account.assertion(scopes: ["https://www.googleapis.com/auth/firebase.messaging"],
                                                    audience: "https://oauth2.googleapis.com/token",
                                                    issuedAt: Int(Date().timeIntervalSince1970))
        let grant = "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=\(assertion)"
        let tokenResult = try curl(["--cacert", cert, "--http1.1", "-d", grant, "\(serve.baseURL)/token"])
        let tokenAnswer = try JSONParser.parse(tokenResult.output)
        let accessToken = try #require(tokenAnswer["access_token"]?.stringValue, "\(tokenResult.output)")
        #expect(tokenAnswer["token_type"] == "Bearer")
        #expect(tokenAnswer["expires_in"] == 3600)
        let message = #"{"message":{"token":"fcm-token-1","data":{"cv":"1"}}}"#
        let send = try curl(["--cacert", cert, "-w", "\n%{http_code}", "-H", "authorization: Bearer \(accessToken)", "-d", message,
                             "\(serve.baseURL)/v1/projects/poolse-test/messages:send"])
        #expect(send.output.hasSuffix("\n200"), "\(send.output)")
        let refused = try curl(["--cacert", cert, "-w", "\n%{http_code}", "-H", "authorization: Bearer not-issued-here", "-d", message,
                                "\(serve.baseURL)/v1/projects/poolse-test/messages:send"])
        #expect(refused.output.hasSuffix("\n401"), "\(refused.output)")

        let forgedAssertion = try GoogleServiceAccount.generate(projectID: "x", clientEmail: setup.account.clientEmail, tokenURI: "x")
            .account.assertion(scopes: ["https://www.googleapis.com/auth/firebase.messaging"],
                               audience: "https://oauth2.googleapis.com/token", issuedAt: Int(Date().timeIntervalSince1970))
        let rejected = try curl(["--cacert", cert, "-w", "\n%{http_code}", "-d",
                                 "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=\(forgedAssertion)", "\(serve.baseURL)/token"])
        #expect(rejected.output.hasSuffix("\n400"))
        #expect(rejected.output.contains(#""error":"invalid_grant""#))
        let (_, stderr) = serve.stop()
        #expect(stderr.contains("APNs token auth on"))
    }

    @Test func theControlAPIChangesTokenStatesAndFaultsAtRuntime() throws {
        let directory = try TemporaryDirectory()
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        let url = "\(serve.baseURL)/3/device/\(deviceToken)"
        let put = try curl(["-X", "PUT", "-d", #"{"state":"gone","since_ms":1793952000000}"#, "\(serve.adminURL)/tokens/\(deviceToken)"])
        #expect(try JSONParser.parse(put.output)["state"] == "gone")
        let gone = try curl(["--http2-prior-knowledge", "-w", "\n%{http_code}"] + zeroConfigAuth + voipHeaders + ["-d", ringBody, url])
        #expect(gone.output == "{\"reason\":\"Unregistered\",\"timestamp\":1793952000000}\n410")

        let fcmGone = try curl(["--http2-prior-knowledge", "-w", "\n%{http_code}", "-H", "authorization: Bearer any", "-d", #"{"message":{"token":"\#(deviceToken)","data":{}}}"#,
                                "\(serve.baseURL)/v1/projects/p/messages:send"])
        #expect(fcmGone.output.hasSuffix("\n404"))
        #expect(fcmGone.output.contains("UNREGISTERED"))

        _ = try curl(["-X", "DELETE", "\(serve.adminURL)/tokens/\(deviceToken)"])
        let faults = try curl(["-X", "PUT", "-d", #"{"error_rates":{"503":1.0},"retry_after_seconds":7}"#, "\(serve.adminURL)/faults/apns"])
        #expect(try JSONParser.parse(faults.output)["error_rates"]?["503"] == 1)
        let unavailable = try curl(["--http2-prior-knowledge", "-i"] + zeroConfigAuth + voipHeaders + ["-d", ringBody, url])
        #expect(unavailable.output.hasPrefix("HTTP/2 503"))
        #expect(unavailable.output.contains("retry-after: 7"))
        #expect(unavailable.output.contains(#"{"reason":"ServiceUnavailable"}"#))

        let badFaults = try curl(["-w", "\n%{http_code}", "-X", "PUT", "-d", #"{"error_rates":{"418":0.5}}"#, "\(serve.adminURL)/faults/apns"])
        #expect(badFaults.output.hasSuffix("\n400"))
        #expect(badFaults.output.contains("429, 500, 503"))

        _ = try curl(["-X", "POST", "\(serve.adminURL)/reset"])
        let healthy = try curl(["--http2-prior-knowledge", "-w", "%{http_code}"] + zeroConfigAuth + voipHeaders + ["-d", ringBody, url])
        #expect(healthy.output == "200")
        let metrics = try curl(["\(serve.adminURL)/metrics"])
        #expect(metrics.output.contains(#"pushproof_requests_total{route="apns",status="200",reason=""} 1"#))
        #expect(metrics.output.contains("pushproof_open_connections"))
        #expect(metrics.output.contains("pushproof_rapid_reset_closes_total 0"), "the transport's count reaches /metrics")
        serve.stop()
    }

    @Test func everyAcknowledgedRequestIsInTheRecordAfterSIGTERM() throws {
        let directory = try TemporaryDirectory()
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        try pushRings(3000, connections: 4, streams: 50, to: serve, in: directory)
        // Stopped at once: the lines still in memory must be written on the way out.
        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
        let recorded = try lines(of: record)
        #expect(recorded.count == 3000)
        #expect(recorded.compactMap { $0["seq"]?.intValue } == Array(1...3000))
    }

    /// `count` poolse rings pushed with h2load; every one must succeed.
    func pushRings(_ count: Int, connections: Int, streams: Int, to serve: ServeProcess, in directory: TemporaryDirectory) throws {
        let body = try directory.write("ring.json", ringBody)
        let load = try runTool("/usr/bin/h2load", ["-n", "\(count)", "-c", "\(connections)", "-m", "\(streams)", "-d", body,
                                                   "-H", "authorization: bearer any", "-H", "apns-push-type: voip", "-H", "apns-topic: com.example.loop.voip",
                                                   "\(serve.baseURL)/3/device/\(deviceToken)"])
        #expect(load.output.contains("\(count) succeeded"), "\(load.output)")
    }

    /// What keeps a killed test run from leaving gateways behind: the gateway's standard input
    /// closes with its parent, and it stops as on SIGTERM, record flushed.
    @Test func theGatewayStopsCleanlyWhenItsStandardInputCloses() throws {
        let directory = try TemporaryDirectory()
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        try pushRings(500, connections: 2, streams: 20, to: serve, in: directory)
        #expect(serve.process.isRunning)
        serve.closeStandardInput()
        #expect(serve.waitForExit(seconds: 20), "the gateway outlived its standard input")
        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
        #expect(stderr.contains("standard input closed, stopping"), "\(stderr)")
        #expect(try lines(of: record).count == 500)
    }

    @Test func badCommandLinesAndConfigsGetAClearErrorAndTheRightExitCode() throws {
        let directory = try TemporaryDirectory()
        let unknown = try pushproof(["serve", "--lissten", "127.0.0.1:0"])
        #expect(unknown.status == 64)
        #expect(unknown.error.contains("did you mean '--listen'"))
        let badPort = try pushproof(["serve", "--listen", "127.0.0.1:99999"])
        #expect(badPort.status == 64)
        let config = try directory.write("bad.json", #"{"apns": {"keys": [{"key_id": "A"}]}}"#)
        let badConfig = try pushproof(["serve", "--config", config, "--listen", "127.0.0.1:0", "--admin", "off"], directory: directory.path)
        #expect(badConfig.status == 2)
        #expect(badConfig.error.contains("apns.keys[0]"), "\(badConfig.error)")
        let notJSON = try directory.write("notjson.json", "{apns:")
        let notJSONResult = try pushproof(["serve", "--config", notJSON, "--listen", "127.0.0.1:0", "--admin", "off"], directory: directory.path)
        #expect(notJSONResult.status == 2)
        #expect(notJSONResult.error.contains("not valid JSON"))
        // A record path whose folder cannot exist (its parent is a file): a clear error, nothing started.
        let blocker = try directory.write("a-file", "")
        let unwritable = try pushproof(["serve", "--h2c", "--record", blocker + "/record.jsonl", "--listen", "127.0.0.1:0", "--admin", "off"])
        #expect(unwritable.status == 2)
        #expect(unwritable.error.contains(blocker + "/record.jsonl"), "\(unwritable.error)")
        let help = try pushproof(["serve", "--help"])
        #expect(help.status == 0)
        for option in ["--listen", "--admin", "--h2c", "--cert", "--key", "--config", "--record", "--threads", "--specs"] {
            #expect(help.output.contains(option), "help documents \(option)")
        }
    }

    @Test func aPortInUseIsAnErrorNotASilentShare() throws {
        let directory = try TemporaryDirectory()
        let first = try ServeProcess(["--h2c"], directory: directory.path, admin: false)
        let second = try pushproof(["serve", "--h2c", "--listen", "127.0.0.1:\(first.port)", "--admin", "off"], directory: directory.path)
        #expect(second.status == 2)
        #expect(second.error.contains("Address already in use"), "\(second.error)")
        first.stop()
    }

    @Test func malformedHTTP2FromOneClientDoesNotDisturbAnother() throws {
        let directory = try TemporaryDirectory()
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        let hostile = try RawClient(port: serve.port)
        hostile.send(clientPreface + emptySettingsFrame + [0, 0, 4, 0xFF, 0, 0, 0, 0, 1] + Array("junk".utf8) + [1, 2, 3])
        let healthy = try curl(["--http2-prior-knowledge", "-w", "%{http_code}"] + zeroConfigAuth + voipHeaders + ["-d", ringBody,
                                "\(serve.baseURL)/3/device/\(deviceToken)"])
        #expect(healthy.output == "200")
        let broken = try RawClient(port: serve.port)
        broken.send(clientPreface + [0, 0, 20, 1, 4, 0, 0, 0, 1])  // a HEADERS frame cut short, then gone
        _ = broken
        let again = try curl(["--http2-prior-knowledge", "-w", "%{http_code}"] + zeroConfigAuth + voipHeaders + ["-d", ringBody,
                              "\(serve.baseURL)/3/device/\(deviceToken)"])
        #expect(again.output == "200")
        let (status, _) = serve.stop()
        #expect(status == 0)
    }
}
