import Testing
@testable import Crypto

@Suite struct KeyTests {
    @Test func p256KeyRoundTripsThroughPKCS8AndSPKI() throws {
        let key = try ECP256PrivateKey.generate()
        let pem = try key.pkcs8PEM
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try ECP256PrivateKey(pem: pem)
        #expect(try reloaded.publicKey.spkiDER == key.publicKey.spkiDER)

        let spki = try key.publicKey.spkiPEM
        #expect(spki.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(!spki.contains("PRIVATE"))
        let publicKey = try ECP256PublicKey(pem: spki)
        #expect(try publicKey.spkiDER == key.publicKey.spkiDER)
    }

    @Test func generatedKeysDiffer() throws {
        #expect(try ECP256PrivateKey.generate().publicKey.spkiDER != ECP256PrivateKey.generate().publicKey.spkiDER)
    }

    @Test func rsaKeyRoundTripsThroughPKCS8AndSPKI() throws {
        let key = try RSAPrivateKey.generate()
        #expect(key.bits == 2048)
        let pem = try key.pkcs8PEM
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try RSAPrivateKey(pem: pem)
        #expect(try reloaded.publicKey.spkiDER == key.publicKey.spkiDER)
        let publicKey = try RSAPublicKey(pem: key.publicKey.spkiPEM)
        #expect(publicKey.bits == 2048)
        #expect(try publicKey.spkiDER == key.publicKey.spkiDER)
        #expect(try RSAPublicKey(spkiDER: publicKey.spkiDER).spkiDER == publicKey.spkiDER)
    }

    @Test func smallRSAKeysAreRefused() {
        #expect(throws: CryptoError.rsaKeyTooSmall(bits: 1024)) { try RSAPrivateKey.generate(bits: 1024) }
    }

    @Test(arguments: [
        "",
        "garbage",
        "-----BEGIN PRIVATE KEY-----\nnot base64 !!\n-----END PRIVATE KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
    ])
    func garbageAndTruncatedPEMThrow(pem: String) {
        #expect(throws: CryptoError.self) { try ECP256PrivateKey(pem: pem) }
        #expect(throws: CryptoError.self) { try ECP256PublicKey(pem: pem) }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: pem) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: pem) }
    }

    @Test func truncatedRealKeyThrowsWithOpenSSLDetail() throws {
        let pem = try ECP256PrivateKey.generate().pkcs8PEM
        let lines = pem.split(separator: "\n")
        let truncated = ([lines[0], lines[1]] + [lines[lines.count - 1]]).joined(separator: "\n") + "\n"
        do {
            _ = try ECP256PrivateKey(pem: truncated)
            Issue.record("a truncated key loaded")
        } catch {
            guard case .invalidPEM(_, let detail) = error else { Issue.record("unexpected error \(error)"); return }
            #expect(!detail.isEmpty)
            #expect(error.description.contains("invalid PEM"))
        }
    }

    @Test func wrongKeyTypesAreNamed() throws {
        let rsa = try RSAPrivateKey.generate()
        let ec = try ECP256PrivateKey.generate()
        #expect(throws: CryptoError.wrongKeyType(expected: "EC P-256", found: "RSA")) { try ECP256PrivateKey(pem: rsa.pkcs8PEM) }
        #expect(throws: CryptoError.wrongKeyType(expected: "EC P-256", found: "RSA")) { try ECP256PublicKey(pem: rsa.publicKey.spkiPEM) }
        #expect(throws: CryptoError.wrongKeyType(expected: "RSA", found: "EC")) { try RSAPrivateKey(pem: ec.pkcs8PEM) }
        #expect(throws: CryptoError.wrongKeyType(expected: "RSA", found: "EC")) { try RSAPublicKey(pem: ec.publicKey.spkiPEM) }
    }

    @Test func aPrivateKeyIsNotAPublicKey() throws {
        // A public-key reader given a private key PEM must refuse it, not silently use it.
        let ec = try ECP256PrivateKey.generate()
        #expect(throws: CryptoError.self) { try ECP256PublicKey(pem: ec.pkcs8PEM) }
    }

    @Test func encryptedKeysAreRefusedWithoutPrompting() throws {
        let scratch = try Scratch()
        try scratch.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-aes-128-cbc", "-pass", "pass:secret", "-out", "encrypted.pem")
        let pem = try scratch.readText("encrypted.pem")
        #expect(pem.contains("ENCRYPTED"))
        #expect(throws: CryptoError.encryptedKeyNotSupported) { try ECP256PrivateKey(pem: pem) }
    }

    @Test func otherCurvesAreRefused() throws {
        let scratch = try Scratch()
        try scratch.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "p384.pem")
        try scratch.openssl("pkey", "-in", "p384.pem", "-pubout", "-out", "p384.pub")
        #expect(throws: CryptoError.unsupportedCurve("secp384r1")) { try ECP256PrivateKey(pem: scratch.readText("p384.pem")) }
        #expect(throws: CryptoError.unsupportedCurve("secp384r1")) { try ECP256PublicKey(pem: scratch.readText("p384.pub")) }
        try scratch.openssl("genpkey", "-algorithm", "ED25519", "-out", "ed.pem")
        #expect(throws: CryptoError.wrongKeyType(expected: "EC P-256", found: "ED25519")) { try ECP256PrivateKey(pem: scratch.readText("ed.pem")) }
    }

    @Test func readsSEC1AndPKCS1FromOpenSSL() throws {
        let scratch = try Scratch()
        try scratch.openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sec1.pem")
        let sec1 = try scratch.readText("sec1.pem")
        #expect(sec1.contains("BEGIN EC PRIVATE KEY"))
        let ec = try ECP256PrivateKey(pem: sec1)
        try scratch.openssl("ec", "-in", "sec1.pem", "-pubout", "-out", "ec.pub")
        #expect(try ECP256PublicKey(pem: scratch.readText("ec.pub")).spkiDER == ec.publicKey.spkiDER)

        try scratch.openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa8.pem")
        try scratch.openssl("rsa", "-in", "rsa8.pem", "-traditional", "-out", "rsa1.pem")
        let pkcs1 = try scratch.readText("rsa1.pem")
        #expect(pkcs1.contains("BEGIN RSA PRIVATE KEY"))
        let rsa = try RSAPrivateKey(pem: pkcs1)
        #expect(try RSAPrivateKey(pem: scratch.readText("rsa8.pem")).publicKey.spkiDER == rsa.publicKey.spkiDER)
    }

    @Test func rsaPublicKeyFromCertificate() throws {
        let scratch = try Scratch()
        try scratch.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
                            "-subj", "/CN=test", "-days", "1")
        let certificateKey = try RSAPublicKey(pem: scratch.readText("cert.pem"))
        let privateKey = try RSAPrivateKey(pem: scratch.readText("key.pem"))
        #expect(try certificateKey.spkiDER == privateKey.publicKey.spkiDER)
    }

    @Test func keysAreUsableFromManyTasksAtOnce() async throws {
        let key = try ECP256PrivateKey.generate()
        let message = Array("concurrent".utf8)
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0 ..< 16 {
                group.addTask {
                    let signature = try ES256.sign(message, key: key)
                    return ES256.verify(signature: signature, message: message, key: key.publicKey)
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 16 && results.allSatisfy { $0 })
    }
}
