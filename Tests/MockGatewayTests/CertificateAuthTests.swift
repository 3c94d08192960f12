// APNs certificate-based provider trust: a connection that presents a provider certificate
// issued by a configured authority is authenticated by it (apns.md: `authorization` is absent
// for certificate auth; 403 BadCertificate, BadCertificateEnvironment). In process with the
// certificate set on the connection, and over the wire with curl's --cert.
import Clocks
import Crypto
import Foundation
import HTTPCore
import JSON
import PushproofTestSupport
import Testing
@testable import MockGateway

@Suite struct CertificateAuthTests {
    static let authority = try! ProviderCertificateIssuer.makeAuthority()
    static let otherAuthority = try! ProviderCertificateIssuer.makeAuthority(commonName: "not trusted")

    static func certificate(bundle: String = "com.example.app", topics: [String] = [],
                            environments: Set<APNsProviderCertificate.Environment> = [.development, .production],
                            by issuer: (certificatePEM: String, privateKeyPEM: String) = authority,
                            validFromSeconds: Int = -300, validDays: Int = 365) throws -> (certificatePEM: String, privateKeyPEM: String) {
        try ProviderCertificateIssuer.issue(bundleID: bundle, topics: topics, environments: environments,
                                            authorityCertificatePEM: issuer.certificatePEM, authorityKeyPEM: issuer.privateKeyPEM,
                                            validFromSeconds: validFromSeconds, validDays: validDays)
    }

    static func der(_ pem: String) throws -> [UInt8] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return try #require(Data(base64Encoded: body).map { [UInt8]($0) })
    }

    /// Token auth on (as `pushproof credentials` writes it) and certificate auth on.
    static func harness(environment: APNSEnvironment = .production, bundles: Set<String>? = ["com.example.app", "com.example.other"],
                        presenting pem: String?) throws -> Harness {
        var configuration = try authConfiguration(bundles: bundles)
        configuration.apns.environment = environment
        configuration.apns.certificateAuthorities = try ProviderCertificateAuthorities(pems: [authority.certificatePEM])
        // A real clock: certificate validity is checked against the wall clock's now.
        let h = try Harness(configuration, clock: ManualClock(epochSeconds: UInt64(Date().timeIntervalSince1970)))
        h.connection.clientCertificateDER = try pem.map(der)
        return h
    }

    @Test func aTrustedCertificateAuthenticatesWithoutAToken() throws {
        let h = try Self.harness(presenting: try Self.certificate(topics: ["com.example.app", "com.example.app.voip"]).certificatePEM)
        #expect(h.push().status == 200)
        #expect(h.push(headers: ["apns-topic": "com.example.app.voip", "apns-push-type": "voip"]).status == 200)
        // The certificate is judged once per connection: later requests reuse the verdict.
        #expect(h.push().status == 200)
    }

    @Test func aTopicTheCertificateDoesNotCoverIsDisallowed() throws {
        let h = try Self.harness(presenting: try Self.certificate(topics: ["com.example.app"]).certificatePEM)
        let response = h.push(headers: ["apns-topic": "com.example.other"])
        #expect(response.status == 400)
        #expect(reason(response) == "TopicDisallowed")
        #expect(h.observer.last?.detail == "the client certificate (com.example.app) does not cover topic com.example.other")
        #expect(h.observer.last?.authFailure == .certificateTopic)
        // Without a topics list, the bundle and its suffixed topics are covered, nothing else.
        let bare = try Self.harness(presenting: try Self.certificate().certificatePEM)
        #expect(bare.push(headers: ["apns-topic": "com.example.app.voip", "apns-push-type": "voip"]).status == 200)
        #expect(reason(bare.push(headers: ["apns-topic": "com.example.other"])) == "TopicDisallowed")
    }

    @Test func withoutATopicACertificateForOneTopicPushesToItsSubject() throws {
        let single = try Self.harness(presenting: try Self.certificate().certificatePEM)
        #expect(single.push(headers: ["apns-topic": nil]).status == 200)
        // Several topics: the header is required.
        let universal = try Self.harness(presenting: try Self.certificate(topics: ["com.example.app", "com.example.app.voip"]).certificatePEM)
        #expect(reason(universal.push(headers: ["apns-topic": nil])) == "MissingTopic")
    }

    @Test(arguments: [
        ("another authority's", "BadCertificate"),
        ("expired", "BadCertificate"),
        ("not yet valid", "BadCertificate"),
        ("a development-only certificate on production", "BadCertificateEnvironment"),
    ])
    func refusedCertificatesAre403(kind: String, expected: String) throws {
        let pem: String = switch kind {
        case "another authority's": try Self.certificate(by: Self.otherAuthority).certificatePEM
        case "expired": try Self.certificate(validFromSeconds: -3 * 86_400, validDays: 1).certificatePEM
        case "not yet valid": try Self.certificate(validFromSeconds: 86_400).certificatePEM
        default: try Self.certificate(environments: [.development]).certificatePEM
        }
        let h = try Self.harness(presenting: pem)
        // A valid token does not rescue a connection whose certificate is refused.
        let response = h.push(headers: ["authorization": "bearer \(h.providerToken())"])
        #expect(response.status == 403)
        #expect(reason(response) == expected)
        // The record says why; the answer stays Apple's.
        let kinds: [String: AuthFailureKind] = ["another authority's": .untrustedCertificate, "expired": .expiredCertificate,
                                                "not yet valid": .expiredCertificate]
        #expect(h.observer.last?.authFailure == kinds[kind] ?? .wrongEnvironment)
        #expect(h.observer.last?.detail?.isEmpty == false)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason":"\#(expected)"}"#)
    }

    @Test func theEnvironmentMustMatch() throws {
        let development = try Self.harness(environment: .development, presenting: try Self.certificate(environments: [.development]).certificatePEM)
        #expect(development.push().status == 200)
        let production = try Self.harness(environment: .development, presenting: try Self.certificate(environments: [.production]).certificatePEM)
        #expect(reason(production.push()) == "BadCertificateEnvironment")
    }

    @Test func withoutACertificateTokensStillWorkAndNothingIsMissingProviderToken() throws {
        let h = try Self.harness(presenting: nil)
        #expect(h.push(headers: ["authorization": "bearer \(h.providerToken())"]).status == 200)
        h.newConnection()
        #expect(reason(h.push(headers: ["authorization": nil])) == "MissingProviderToken")
        // Certificate auth alone (no token keys): still nothing passes without a certificate.
        var configuration = GatewayConfiguration()
        configuration.apns.certificateAuthorities = try ProviderCertificateAuthorities(pems: [Self.authority.certificatePEM])
        let certificatesOnly = try Harness(configuration)
        #expect(reason(certificatesOnly.push(headers: ["authorization": nil])) == "MissingProviderToken")
    }

    @Test func theConfigurationFileNamesItsAuthorities() throws {
        let directory = try TemporaryDirectory("cert-config")
        let caPath = try directory.write("ca.pem", Self.authority.certificatePEM)
        let loaded = try GatewayConfiguration.parse(json: Array(#"{"apns": {"certificate_authorities": [{"file": "\#(caPath)"}]}}"#.utf8), baseDirectory: directory.path)
        #expect(loaded.apns.certificateAuthEnabled)
        #expect(throws: GatewayConfigurationError.self) {
            try GatewayConfiguration.parse(json: Array(#"{"apns": {"certificate_authorities": [{"pem": "not a certificate"}]}}"#.utf8), baseDirectory: directory.path)
        }
        do {
            _ = try GatewayConfiguration.parse(json: Array(#"{"apns": {"certificate_authorities": []}}"#.utf8), baseDirectory: directory.path)
            Issue.record("an empty list should be refused")
        } catch {
            #expect(error.keyPath == "apns.certificate_authorities")
        }
    }

    /// End to end: `pushproof credentials` writes a certificate, `pushproof serve` asks for it
    /// over TLS, curl presents it.
    @Test func curlWithTheCredentialsCertificateIsAnswered200AndWithoutIt403() throws {
        let directory = try TemporaryDirectory("cert-live")
        let out = directory.file("cred")
        let written = try pushproof(["credentials", "--out", out, "--bundle-id", "com.example.loop"])
        #expect(written.status == 0, "\(written.error)")
        let serve = try ServeProcess(["--config", out + "/gateway.json"], directory: directory.path)
        defer { serve.stop() }
        let url = serve.baseURL + "/3/device/" + String(repeating: "ab", count: 32)
        let common = ["-sS", "--http2", "--cacert", serve.certificatePath ?? "", "-o", "/dev/stdout", "-w", " %{http_code}",
                      "-H", "apns-push-type: voip", "-H", "apns-topic: com.example.loop.voip", "-d", #"{"aps":{}}"#]
        let withCertificate = try curl(common + ["--cert", out + "/apns-cert.pem", "--key", out + "/apns-cert-key.pem", url])
        #expect(withCertificate.output == " 200", "\(withCertificate.output) \(withCertificate.error)")
        let without = try curl(common + [url])
        #expect(without.output == #"{"reason":"MissingProviderToken"} 403"#, "\(without.output) \(without.error)")
    }
}
