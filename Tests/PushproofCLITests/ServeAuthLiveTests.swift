// Live tests of `pushproof serve` answering real clients' credentials as Apple would (issue 8):
// zero config over TLS refuses a push with no credential, accepts any bearer token and any
// client certificate (asked for, optional, at the handshake) and records which certificate it
// was; a strict gateway accepts a float or string `iat` with a warning and says in the record
// why it refused a token.
import Crypto
import Foundation
import JSON
import PushproofTestSupport
import Testing

@Suite(.serialized) struct ServeAuthLiveTests {
    @Test func zeroConfigTLSNeedsABearerTokenOrAnyClientCertificate() throws {
        let directory = try TemporaryDirectory("zero-auth")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--record", record], directory: directory.path)
        defer { serve.stop() }
        // A client certificate from an authority the gateway has never heard of.
        let authority = try ProviderCertificateIssuer.makeAuthority(commonName: "unconfigured CA")
        let issued = try ProviderCertificateIssuer.issue(bundleID: "com.example.loop", authorityCertificatePEM: authority.certificatePEM,
                                                         authorityKeyPEM: authority.privateKeyPEM)
        let certificate = try directory.write("client.pem", issued.certificatePEM)
        let key = try directory.write("client-key.pem", issued.privateKeyPEM)

        let common = ["--cacert", try #require(serve.certificatePath), "-sS", "-o", "/dev/stdout", "-w", " %{http_code}"] + voipHeaders
            + ["-d", ringBody]
        let url = "\(serve.baseURL)/3/device/\(deviceToken)"
        let bare = try curl(common + [url])
        #expect(bare.output == #"{"reason":"MissingProviderToken"} 403"#, "\(bare.output) \(bare.error)")
        let bearer = try curl(common + zeroConfigAuth + [url])
        #expect(bearer.output == " 200", "\(bearer.output) \(bearer.error)")
        let withCertificate = try curl(common + ["--cert", certificate, "--key", key, url])
        #expect(withCertificate.output == " 200", "\(withCertificate.output) \(withCertificate.error)")
        let metrics = try curl([serve.adminURL + "/metrics"]).output
        #expect(metrics.contains(#"pushproof_auth_failures_total{route="apns",reason="MissingProviderToken",detail="missing"} 1"#))

        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
        let recorded = try lines(of: record)
        #expect(recorded.count == 3)
        guard recorded.count == 3 else { return }
        #expect(recorded[0]["response"]?["detail"] == "no authorization header and no client certificate on the connection")
        #expect(recorded[0]["client_certificate"] == nil)
        #expect(recorded[1]["response"]?["detail"] == nil)
        #expect(recorded[2]["client_certificate"]?["subject"] == "UID=com.example.loop, CN=Apple Push Services: com.example.loop, O=pushproof test")
        #expect(recorded[2]["response"]?["status"] == 200)
    }

    /// apns2 signs `iat: time.time()`, kalyke-apns `iat: "1793952000"`: both pass a gateway
    /// with keys configured, each with its warning in the record.
    @Test func strictGatewayAcceptsFloatAndStringIatWithWarnings() throws {
        let setup = try StrictSetup()
        let record = setup.directory.file("record.jsonl")
        let serve = try ServeProcess(["--config", setup.configPath, "--record", record], directory: setup.directory.path)
        defer { serve.stop() }
        let now = Date().timeIntervalSince1970.rounded(.down) + 0.25
        func token(iat: JSONValue, key: ECP256PrivateKey? = nil) throws -> String {
            try JWT.signES256(header: ["alg": "ES256", "kid": .string(StrictSetup.keyID)],
                              claims: ["iss": .string(StrictSetup.teamID), "iat": iat], key: key ?? setup.apnsKey)
        }
        let common = ["--cacert", try #require(serve.certificatePath), "-sS", "-o", "/dev/stdout", "-w", " %{http_code}"]
            + voipHeaders + ["-d", ringBody]
        let url = "\(serve.baseURL)/3/device/\(deviceToken)"
        // Apple counts a team's new tokens across connections (TooManyProviderTokenUpdates within
        // 20 minutes): a reset before each makes it the team's first.
        for iat in [JSONValue.number(now), .string(String(Int(now)))] {
            _ = try curl(["-s", "-o", "/dev/null", "-X", "POST", "\(serve.adminURL)/reset"])
            let pushed = try curl(common + ["-H", "authorization: bearer \(try token(iat: iat))", url])
            #expect(pushed.output == " 200", "\(iat): \(pushed.output) \(pushed.error)")
        }
        let forged = try curl(common + ["-H", "authorization: bearer \(try token(iat: .number(now - 0.25), key: try ECP256PrivateKey.generate()))", url])
        #expect(forged.output == #"{"reason":"InvalidProviderToken"} 403"#)

        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
        let recorded = try lines(of: record)
        #expect(recorded.count == 3)
        guard recorded.count == 3 else { return }
        let warnings = recorded.map { $0["verdict"]?["gateway_warnings"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        let notes = recorded.map { $0["verdict"]?["gateway_notes"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        // A float iat is what RFC 7519 allows: informational. A digit string breaks it: a warning.
        #expect(notes[0].contains { $0.contains("not an integer") }, "\(notes[0])")
        #expect(warnings[0].isEmpty, "\(warnings[0])")
        #expect(warnings[1].contains { $0.contains("RFC 7519 §2") }, "\(warnings[1])")

        // check: the note is listed and counted, and passes; the warning fails its push.
        let checked = try pushproof(["check", record, "--specs", specsDirectory, "--json", record + ".check.json"])
        #expect(checked.output.contains("gateway notes (informational"), "\(checked.output)")
        let report = try JSONParser.parse(String(contentsOfFile: record + ".check.json", encoding: .utf8))
        #expect(report["gateway_notes"]?[0]?["requests"] == 1, "\(report["gateway_notes"] ?? .null)")
        // Among the failures, the gateway's own findings: the digit-string iat's push alone.
        let failures = ((report["specs"]?.arrayValue ?? []) + [report["unmatched"], report["not_covered"]?["failures"]].compactMap { $0 })
            .flatMap { $0["failures"]?.arrayValue ?? [] }
        let noted = failures.filter { failure in
            (failure["violations"]?.arrayValue ?? []).contains { $0["rule"] == "gateway-warning" }
        }
        #expect(noted.map { $0["seq"] } == [2], "\(checked.output)")
        #expect(recorded[2]["response"]?["detail"] == .string("the signature does not verify with key \(StrictSetup.keyID)"))
    }
}
