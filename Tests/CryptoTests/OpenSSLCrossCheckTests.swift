import Testing
@testable import Crypto

/// Signatures made by the `openssl` command line verify here, and ours verify there.
@Suite struct OpenSSLCrossCheckTests {
    let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJURUFNIn0".utf8)

    @Test func opensslECDSASignatureVerifiesAsDERAndAsRS() throws {
        let scratch = try Scratch()
        let der = try opensslSignature(in: scratch, keyFile: "key.p8", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
        let publicKey = try ECP256PublicKey(pem: scratch.readText("key.pub"))

        #expect(ES256.verifyDER(signature: der, message: message, key: publicKey))
        let raw = try #require(ES256.rawSignature(fromDER: der))
        #expect(ES256.verify(signature: raw, message: message, key: publicKey))
        #expect(!ES256.verifyDER(signature: der, message: message + [0], key: publicKey))
        // The private key file (PKCS#8, as Apple's .p8) loads and derives the same public key.
        #expect(try ECP256PrivateKey(pem: scratch.readText("key.p8")).publicKey.spkiDER == publicKey.spkiDER)
    }

    @Test func ourES256SignatureVerifiesInOpenSSL() throws {
        let scratch = try Scratch()
        let key = try ECP256PrivateKey.generate()
        try scratch.write("key.pub", key.publicKey.spkiPEM)
        try scratch.write("message", bytes: message)
        let raw = try ES256.sign(message, key: key)
        try scratch.write("signature.der", bytes: try #require(ES256.derSignature(fromRaw: raw)))
        let output = try scratch.openssl("dgst", "-sha256", "-verify", "key.pub", "-signature", "signature.der", "message")
        #expect(output.contains("Verified OK"))
    }

    @Test func rsaSignaturesMatchOpenSSLExactly() throws {
        let scratch = try Scratch()
        let theirs = try opensslSignature(in: scratch, keyFile: "key.pem", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048")
        let key = try RSAPrivateKey(pem: scratch.readText("key.pem"))
        #expect(try RS256.verify(signature: theirs, message: message, key: RSAPublicKey(pem: scratch.readText("key.pub"))))
        // PKCS#1 v1.5 is deterministic, so the two implementations must agree byte for byte.
        #expect(try RS256.sign(message, key: key) == theirs)
    }

    /// Has `openssl genpkey` make a key (`keyOptions`) in `keyFile`, its public half in key.pub,
    /// and its SHA-256 signature of `message`, which it returns.
    func opensslSignature(in scratch: Scratch, keyFile: String, _ keyOptions: String...) throws -> [UInt8] {
        try scratch.openssl(["genpkey"] + keyOptions + ["-out", keyFile])
        try scratch.openssl("pkey", "-in", keyFile, "-pubout", "-out", "key.pub")
        try scratch.write("message", bytes: message)
        try scratch.openssl("dgst", "-sha256", "-sign", keyFile, "-out", "signature", "message")
        return try scratch.read("signature")
    }
}
