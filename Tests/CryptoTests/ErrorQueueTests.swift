import COpenSSL
import Testing
@testable import Crypto

/// OpenSSL's error queue is per thread and shared with the TLS code on the same thread
/// (SSL_get_error reads it). Failures here must not leave entries behind.
@Suite struct ErrorQueueTests {
    @Test func failuresLeaveTheQueueEmpty() throws {
        ERR_clear_error()
        let ec = try ECP256PrivateKey.generate()
        let rsa = try RSAPrivateKey.generate()
        let message = Array("m".utf8)

        _ = try? ECP256PrivateKey(pem: "garbage")
        #expect(ERR_peek_error() == 0)
        _ = try? ECP256PrivateKey(pem: rsa.pkcs8PEM)
        #expect(ERR_peek_error() == 0)
        _ = try? RSAPublicKey(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        #expect(ERR_peek_error() == 0)
        _ = try? ECP256PublicKey(spkiDER: [0x30, 0x03, 0x02, 0x01])
        #expect(ERR_peek_error() == 0)

        #expect(!ES256.verify(signature: [UInt8](repeating: 0xFF, count: 64), message: message, key: ec.publicKey))
        #expect(ERR_peek_error() == 0)
        #expect(!ES256.verifyDER(signature: [0x30, 0x01, 0x02], message: message, key: ec.publicKey))
        #expect(ERR_peek_error() == 0)
        #expect(ES256.rawSignature(fromDER: [0x30, 0x01]) == nil)
        #expect(ERR_peek_error() == 0)
        #expect(!RS256.verify(signature: [UInt8](repeating: 1, count: 256), message: message, key: rsa.publicKey))
        #expect(ERR_peek_error() == 0)
        #expect(!RS256.verify(signature: [1, 2, 3], message: message, key: rsa.publicKey))
        #expect(ERR_peek_error() == 0)

        _ = try SelfSignedCertificate.generate()
        #expect(ERR_peek_error() == 0)
        _ = try? SelfSignedCertificate.generate(subjectAltNames: ["not valid"])
        #expect(ERR_peek_error() == 0)
    }
}
