import Foundation
import Testing
@testable import Crypto

/// APNs provider certificates: issued by a test authority, read and verified as the gateway
/// does, and cross-checked with the `openssl` command line.
@Suite struct ProviderCertificateTests {
    static let now = Int64(Date().timeIntervalSince1970)

    /// The DER of the first certificate in `pem`.
    static func der(_ pem: String) throws -> [UInt8] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return try #require(Data(base64Encoded: body).map { [UInt8]($0) })
    }

    @Test func anIssuedCertificateSaysItsBundleTopicsAndEnvironments() throws {
        let authority = try ProviderCertificateIssuer.makeAuthority()
        let issued = try ProviderCertificateIssuer.issue(
            bundleID: "com.example.loop", topics: ["com.example.loop", "com.example.loop.voip"], environments: [.development],
            authorityCertificatePEM: authority.certificatePEM, authorityKeyPEM: authority.privateKeyPEM)
        let trusted = try ProviderCertificateAuthorities(pems: [authority.certificatePEM])
        let verdict = trusted.verify(der: try Self.der(issued.certificatePEM), nowSeconds: Self.now)
        #expect(verdict == .success(APNsProviderCertificate(
            bundleID: "com.example.loop", topics: ["com.example.loop", "com.example.loop.voip"], environments: [.development])))
    }

    @Test func withoutATopicsListOnlyTheBundleIsAllowed() throws {
        let authority = try ProviderCertificateIssuer.makeAuthority()
        let issued = try ProviderCertificateIssuer.issue(bundleID: "com.example.shop", authorityCertificatePEM: authority.certificatePEM,
                                                         authorityKeyPEM: authority.privateKeyPEM)
        let certificate = try ProviderCertificateAuthorities(pems: [authority.certificatePEM])
            .verify(der: try Self.der(issued.certificatePEM), nowSeconds: Self.now).get()
        #expect(certificate.topics.isEmpty)
        #expect(certificate.environments == [.development, .production])
        #expect(certificate.allows(topic: "com.example.shop", bundle: "com.example.shop"))
        #expect(certificate.allows(topic: "com.example.shop.voip", bundle: "com.example.shop"))
        #expect(!certificate.allows(topic: "com.example.other", bundle: "com.example.other"))
    }

    @Test func anotherAuthoritysCertificateIsUntrusted() throws {
        let ours = try ProviderCertificateIssuer.makeAuthority()
        let theirs = try ProviderCertificateIssuer.makeAuthority(commonName: "someone else")
        let issued = try ProviderCertificateIssuer.issue(bundleID: "com.example.loop", authorityCertificatePEM: theirs.certificatePEM,
                                                         authorityKeyPEM: theirs.privateKeyPEM)
        let verdict = try ProviderCertificateAuthorities(pems: [ours.certificatePEM]).verify(der: try Self.der(issued.certificatePEM), nowSeconds: Self.now)
        guard case .failure(.untrusted) = verdict else {
            Issue.record("expected untrusted, got \(verdict)")
            return
        }
        // A self-signed server certificate is no provider certificate either.
        let selfSigned = try SelfSignedCertificate.generate()
        let other = try ProviderCertificateAuthorities(pems: [ours.certificatePEM]).verify(der: try Self.der(selfSigned.certificatePEM), nowSeconds: Self.now)
        guard case .failure(.untrusted) = other else {
            Issue.record("expected untrusted, got \(other)")
            return
        }
    }

    @Test func expiredAndFutureCertificatesAreTold() throws {
        let authority = try ProviderCertificateIssuer.makeAuthority()
        let trusted = try ProviderCertificateAuthorities(pems: [authority.certificatePEM])
        let expired = try ProviderCertificateIssuer.issue(bundleID: "com.example.loop", authorityCertificatePEM: authority.certificatePEM,
                                                          authorityKeyPEM: authority.privateKeyPEM, validFromSeconds: -3 * 86_400, validDays: 1)
        #expect(trusted.verify(der: try Self.der(expired.certificatePEM), nowSeconds: Self.now) == .failure(.expired))
        let current = try ProviderCertificateIssuer.issue(bundleID: "com.example.loop", authorityCertificatePEM: authority.certificatePEM,
                                                          authorityKeyPEM: authority.privateKeyPEM)
        #expect(trusted.verify(der: try Self.der(current.certificatePEM), nowSeconds: Self.now - 86_400) == .failure(.notYetValid))
    }

    @Test func garbageIsUnreadableAndTruncatedExtensionsReadNothing() throws {
        let authority = try ProviderCertificateIssuer.makeAuthority()
        let trusted = try ProviderCertificateAuthorities(pems: [authority.certificatePEM])
        #expect(trusted.verify(der: [0x30, 0x82, 0xFF], nowSeconds: Self.now) == .failure(.unreadable))
        #expect(trusted.verify(der: [], nowSeconds: Self.now) == .failure(.unreadable))
        let topics = DER.topics(["com.example.loop", "com.example.loop.voip"])
        #expect(DER.topUTF8Strings(topics) == ["com.example.loop", "com.example.loop.voip"])
        for cut in 0..<topics.count {
            #expect(DER.topUTF8Strings(Array(topics[..<cut])).count <= 2)
        }
        #expect(DER.topUTF8Strings([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]) == [])
        // Random bytes behind a SEQUENCE tag never overread (a crash would end the test run).
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<5000 {
            var bytes: [UInt8] = [0x30]
            for _ in 0..<(Int(seed % 40)) {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(UInt8(truncatingIfNeeded: seed >> 33))
            }
            _ = DER.topUTF8Strings(bytes)
        }
        #expect(throws: CryptoError.self) { try ProviderCertificateAuthorities(pems: ["not a certificate"]) }
        #expect(throws: CryptoError.self) { try ProviderCertificateAuthorities(pems: []) }
    }

    @Test func opensslAgreesOnTheChainAndReadsTheExtensions() throws {
        let scratch = try Scratch()
        let authority = try ProviderCertificateIssuer.makeAuthority()
        let issued = try ProviderCertificateIssuer.issue(
            bundleID: "com.example.loop", topics: ["com.example.loop.voip"], environments: [.production],
            authorityCertificatePEM: authority.certificatePEM, authorityKeyPEM: authority.privateKeyPEM)
        try scratch.write("ca.pem", authority.certificatePEM)
        try scratch.write("cert.pem", issued.certificatePEM)
        try scratch.write("key.pem", issued.privateKeyPEM)
        let verified = try scratch.openssl("verify", "-CAfile", "ca.pem", "-purpose", "sslclient", "cert.pem")
        #expect(verified.contains("cert.pem: OK"))
        let text = try scratch.openssl("x509", "-in", "cert.pem", "-noout", "-text", "-nameopt", "RFC2253")
        #expect(text.contains("UID=com.example.loop"))
        #expect(text.contains("1.2.840.113635.100.6.3.2"))
        #expect(!text.contains("1.2.840.113635.100.6.3.1:"))
        #expect(text.contains("TLS Web Client Authentication"))
        // The key belongs to the certificate.
        let fromKey = try scratch.openssl("pkey", "-in", "key.pem", "-pubout")
        let fromCertificate = try scratch.openssl("x509", "-in", "cert.pem", "-noout", "-pubkey")
        #expect(fromKey == fromCertificate)
    }
}
