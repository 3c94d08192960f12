import Testing
@testable import Crypto

@Suite struct DigestAndRandomTests {
    @Test func sha256KnownAnswers() {
        // FIPS 180-2 appendix B.1 and the empty string.
        #expect(hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hash("abc".utf8) == SHA256.hash(Array("abc".utf8)))
    }

    @Test func randomBytesHaveTheLengthAskedAndDiffer() {
        #expect(SecureRandom.bytes(0).isEmpty)
        let a = SecureRandom.bytes(32), b = SecureRandom.bytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

/// The standard alphabet (record lines' `body_base64`) from the same codec: padded, `+/`.
