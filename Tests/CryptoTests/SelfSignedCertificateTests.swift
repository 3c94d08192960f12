import Foundation
import Testing
@testable import Crypto

@Suite struct SelfSignedCertificateTests {
    @Test func opensslReadsTheExtensions() throws {
        let scratch = try Scratch()
        let (certificatePEM, privateKeyPEM) = try SelfSignedCertificate.generate(commonName: "pushproof-test", validDays: 30)
        try scratch.write("cert.pem", certificatePEM)
        let text = try scratch.openssl("x509", "-in", "cert.pem", "-noout", "-text")
        #expect(text.contains("Version: 3"))
        #expect(text.contains("Subject: CN = pushproof-test"))
        #expect(text.contains("Issuer: CN = pushproof-test"))
        #expect(text.contains("DNS:localhost"))
        #expect(text.contains("IP Address:127.0.0.1"))
        #expect(text.contains("IP Address:0:0:0:0:0:0:0:1"))
        #expect(text.contains("CA:FALSE"))
        #expect(text.contains("ecdsa-with-SHA256"))
        #expect(text.contains("prime256v1") || text.contains("P-256"))

        // The returned key is the certificate's key.
        let keyFromCertificate = try ECP256PublicKey(pem: certificatePEM)
        #expect(try keyFromCertificate.spkiDER == ECP256PrivateKey(pem: privateKeyPEM).publicKey.spkiDER)
        #expect(privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
    }

    @Test func opensslTrustsItForItsNamesOnly() throws {
        let scratch = try Scratch()
        let (certificatePEM, _) = try SelfSignedCertificate.generate()
        try scratch.write("cert.pem", certificatePEM)
        #expect(try scratch.openssl("verify", "-CAfile", "cert.pem", "cert.pem").contains("OK"))
        // openssl x509 honours only the last -checkhost, so one name per run.
        func check(_ option: String, _ name: String) throws -> String {
            try scratch.openssl("x509", "-in", "cert.pem", "-noout", option, name)
        }
        #expect(try check("-checkhost", "localhost").contains("Hostname localhost does match certificate"))
        #expect(try check("-checkip", "127.0.0.1").contains("IP 127.0.0.1 does match certificate"))
        #expect(try check("-checkhost", "example.com").contains("Hostname example.com does NOT match certificate"))
        #expect(try check("-checkip", "10.0.0.1").contains("does NOT match"))
        let ipv6 = try scratch.openssl("x509", "-in", "cert.pem", "-noout", "-checkip", "::1")
        #expect(ipv6.contains("does match certificate") && !ipv6.contains("NOT"))
    }

    @Test func serialsAreRandomAndPositive() throws {
        let scratch = try Scratch()
        try scratch.write("a.pem", SelfSignedCertificate.generate().certificatePEM)
        try scratch.write("b.pem", SelfSignedCertificate.generate().certificatePEM)
        let a = try scratch.openssl("x509", "-in", "a.pem", "-noout", "-serial")
        let b = try scratch.openssl("x509", "-in", "b.pem", "-noout", "-serial")
        #expect(a != b)
        #expect(a.hasPrefix("serial=") && a.trimmingCharacters(in: .whitespacesAndNewlines).count == "serial=".count + 32)
    }

    @Test func customNamesAndAGivenKey() throws {
        let scratch = try Scratch()
        let key = try ECP256PrivateKey.generate()
        let (certificatePEM, privateKeyPEM) = try SelfSignedCertificate.generate(
            subjectAltNames: ["api.sandbox.push.apple.com", "*.example.test", "10.1.2.3"], key: key)
        #expect(try ECP256PrivateKey(pem: privateKeyPEM).publicKey.spkiDER == key.publicKey.spkiDER)
        try scratch.write("cert.pem", certificatePEM)
        let text = try scratch.openssl("x509", "-in", "cert.pem", "-noout", "-ext", "subjectAltName")
        #expect(text.contains("DNS:api.sandbox.push.apple.com, DNS:*.example.test, IP Address:10.1.2.3"))
    }

    @Test(arguments: ["", "bad name", "a,IP:1.2.3.4", "x/y", "-leading.example", "a..b", "*"])
    func invalidSubjectAltNamesThrow(name: String) {
        #expect(throws: CryptoError.invalidSubjectAltName(name)) {
            try SelfSignedCertificate.generate(subjectAltNames: [name])
        }
    }

    @Test func invalidParametersThrow() {
        #expect(throws: CryptoError.self) { try SelfSignedCertificate.generate(commonName: "") }
        #expect(throws: CryptoError.self) { try SelfSignedCertificate.generate(validDays: 0) }
    }

    /// A TLS server (openssl s_server, on a port the kernel picks on loopback) presents the
    /// certificate; curl must accept it with `--cacert` for the IP and for localhost, and
    /// refuse it when trusting another certificate.
    @Test func curlAcceptsItWithCACert() throws {
        let scratch = try Scratch()
        let (certificatePEM, privateKeyPEM) = try SelfSignedCertificate.generate()
        try scratch.write("cert.pem", certificatePEM)
        try scratch.write("key.pem", privateKeyPEM)
        try scratch.write("other.pem", SelfSignedCertificate.generate().certificatePEM)

        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", "cert.pem", "-key", "key.pem", "-www", "-naccept", "3"]
        server.currentDirectoryURL = scratch.directory
        let output = Pipe()
        server.standardOutput = output
        server.standardError = output
        try server.run()
        defer {
            if server.isRunning { server.terminate() }
            server.waitUntilExit()
        }

        // s_server prints "ACCEPT 127.0.0.1:<port>" once it listens.
        var printed = ""
        var port: String?
        while port == nil {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break } // exited
            printed += String(decoding: chunk, as: UTF8.self)
            if let line = printed.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
               let colon = line.lastIndex(of: ":") {
                port = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            }
        }
        let listening = try #require(port, "s_server did not start: \(printed)")

        let viaIP = try scratch.run("curl", ["-sS", "-o", "/dev/null", "--max-time", "10", "--cacert", "cert.pem", "https://127.0.0.1:\(listening)/"])
        #expect(viaIP.status == 0, "\(viaIP.output)")
        let viaName = try scratch.run("curl", ["-sS", "-o", "/dev/null", "--max-time", "10", "--cacert", "cert.pem",
                                               "--resolve", "localhost:\(listening):127.0.0.1", "https://localhost:\(listening)/"])
        #expect(viaName.status == 0, "\(viaName.output)")
        let untrusted = try scratch.run("curl", ["-sS", "-o", "/dev/null", "--max-time", "10", "--cacert", "other.pem", "https://127.0.0.1:\(listening)/"])
        #expect(untrusted.status != 0)
    }
}
