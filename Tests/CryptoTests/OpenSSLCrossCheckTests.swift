import Testing
@testable import Crypto

/// Signatures made by the `openssl` command line verify here, and ours verify there.
@Suite struct OpenSSLCrossCheckTests {
    let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJURUFNIn0".utf8)

    @Test func opensslECDSASignatureVerifiesAsDERAndAsRS() throws {
        let scratch = try Scratch()
        try scratch.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.p8")
        try scratch.openssl("pkey", "-in", "key.p8", "-pubout", "-out", "key.pub")
        try scratch.write("message", bytes: message)
        try scratch.openssl("dgst", "-sha256", "-sign", "key.p8", "-out", "signature.der", "message")
        let der = try scratch.read("signature.der")
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
        try scratch.openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem")
        try scratch.openssl("pkey", "-in", "key.pem", "-pubout", "-out", "key.pub")
        try scratch.write("message", bytes: message)
        try scratch.openssl("dgst", "-sha256", "-sign", "key.pem", "-out", "signature", "message")
        let theirs = try scratch.read("signature")
        let key = try RSAPrivateKey(pem: scratch.readText("key.pem"))
        #expect(try RS256.verify(signature: theirs, message: message, key: RSAPublicKey(pem: scratch.readText("key.pub"))))
        // PKCS#1 v1.5 is deterministic, so the two implementations must agree byte for byte.
        #expect(try RS256.sign(message, key: key) == theirs)
    }
}
