import Testing
@testable import Crypto

@Suite struct ES256Tests {
    let message = Array("header.claims".utf8)

    @Test func signsInTheJWSFormAndVerifies() throws {
        let key = try ECP256PrivateKey.generate()
        for _ in 0 ..< 20 {
            // R or S with leading zero bytes must still be padded to 32 bytes each.
            let signature = try ES256.sign(message, key: key)
            #expect(signature.count == 64)
            #expect(ES256.verify(signature: signature, message: message, key: key.publicKey))
        }
    }

    @Test func tamperedMessageOrSignatureFails() throws {
        let key = try ECP256PrivateKey.generate()
        let signature = try ES256.sign(message, key: key)
        var tamperedMessage = message
        tamperedMessage[0] ^= 1
        #expect(!ES256.verify(signature: signature, message: tamperedMessage, key: key.publicKey))
        for index in [0, 31, 32, 63] {
            var tampered = signature
            tampered[index] ^= 0x80
            #expect(!ES256.verify(signature: tampered, message: message, key: key.publicKey))
        }
        #expect(!ES256.verify(signature: [UInt8](repeating: 0, count: 64), message: message, key: key.publicKey))
        #expect(!ES256.verify(signature: [UInt8](repeating: 0xFF, count: 64), message: message, key: key.publicKey))
    }

    @Test func wrongKeyFails() throws {
        let signature = try ES256.sign(message, key: ECP256PrivateKey.generate())
        #expect(try !ES256.verify(signature: signature, message: message, key: ECP256PrivateKey.generate().publicKey))
    }

    @Test func onlyExactly64BytesAreRS() throws {
        let key = try ECP256PrivateKey.generate()
        let signature = try ES256.sign(message, key: key)
        #expect(!ES256.verify(signature: signature + [0], message: message, key: key.publicKey))
        #expect(!ES256.verify(signature: signature.dropLast(), message: message, key: key.publicKey))
        #expect(!ES256.verify(signature: [], message: message, key: key.publicKey))
        // The DER form of a valid signature is not accepted by the R||S verifier...
        let der = try #require(ES256.derSignature(fromRaw: signature))
        #expect(!ES256.verify(signature: der, message: message, key: key.publicKey))
        // ...but is by the DER verifier, which in turn refuses R||S.
        #expect(ES256.verifyDER(signature: der, message: message, key: key.publicKey))
        #expect(!ES256.verifyDER(signature: signature, message: message, key: key.publicKey))
    }

    @Test func derConversionRoundTrips() throws {
        let key = try ECP256PrivateKey.generate()
        for _ in 0 ..< 20 {
            let raw = try ES256.sign(message, key: key)
            let der = try #require(ES256.derSignature(fromRaw: raw))
            #expect(der[0] == 0x30 && Int(der[1]) == der.count - 2)
            #expect(ES256.rawSignature(fromDER: der) == raw)
        }
        // Small integers: leading zeros dropped, a 0x00 added before a high bit.
        var raw = [UInt8](repeating: 0, count: 64)
        raw[31] = 0x01
        raw[63] = 0x80
        #expect(ES256.derSignature(fromRaw: raw) == [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x00, 0x80])
        #expect(ES256.rawSignature(fromDER: [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x00, 0x80]) == raw)
    }

    @Test func malformedDERIsRejected() {
        #expect(ES256.rawSignature(fromDER: []) == nil)
        #expect(ES256.rawSignature(fromDER: [0x30, 0x00]) == nil)
        #expect(ES256.rawSignature(fromDER: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00]) == nil) // trailing byte
        // R of 33 significant bytes does not fit the JWS form.
        let big = [0x30, 0x29, 0x02, 0x21, 0x01] + [UInt8](repeating: 0x11, count: 32) + [0x02, 0x01, 0x01]
        #expect(ES256.rawSignature(fromDER: [UInt8](big)) == nil)
        #expect(ES256.derSignature(fromRaw: [UInt8](repeating: 1, count: 63)) == nil)
    }
}

@Suite struct RS256Tests {
    let message = Array("header.claims".utf8)

    @Test func roundTripTamperAndWrongKey() throws {
        let key = try RSAPrivateKey.generate()
        let signature = try RS256.sign(message, key: key)
        #expect(signature.count == 256)
        #expect(RS256.verify(signature: signature, message: message, key: key.publicKey))
        var tampered = signature
        tampered[100] ^= 1
        #expect(!RS256.verify(signature: tampered, message: message, key: key.publicKey))
        #expect(!RS256.verify(signature: signature, message: message + [0], key: key.publicKey))
        #expect(!RS256.verify(signature: signature.dropLast(), message: message, key: key.publicKey))
        #expect(try !RS256.verify(signature: signature, message: message, key: RSAPrivateKey.generate().publicKey))
    }

    @Test func isDeterministicPKCS1v15() throws {
        // PKCS#1 v1.5 signatures are deterministic (PSS would differ each time).
        let key = try RSAPrivateKey.generate()
        #expect(try RS256.sign(message, key: key) == RS256.sign(message, key: key))
    }
}
