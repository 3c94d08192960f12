import COpenSSL

/// Reading and writing PEM through OpenSSL memory BIOs. Cold paths only: keys are parsed once
/// and the resulting `EVP_PKEY` is what signing and verification use.
enum PEM {
    /// Refuses every passphrase prompt: without a callback OpenSSL would ask on the terminal.
    private static let refusePassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in 0 }

    /// Runs `body` with a read-only memory BIO over the UTF-8 bytes of `text`.
    static func withReadBIO<T>(_ text: String, _ body: (OpaquePointer) -> T?) -> T? {
        var text = text
        text.makeContiguousUTF8()
        return text.utf8.withContiguousStorageIfAvailable { bytes -> T? in
            guard bytes.count <= Int(Int32.max), let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        } ?? nil
    }

    /// Any unencrypted private key PEM OpenSSL understands: PKCS#8 ("PRIVATE KEY"), SEC1
    /// ("EC PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY"). Returns an owned `EVP_PKEY`.
    static func readPrivateKey(_ text: String, expected: String) throws(CryptoError) -> OpaquePointer {
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw .encryptedKeyNotSupported
        }
        OpenSSLErrorQueue.clear()
        guard let key = withReadBIO(text, { PEM_read_bio_PrivateKey($0, nil, refusePassphrase, nil) }) else {
            throw .invalidPEM(expected: expected, openSSL: OpenSSLErrorQueue.drain())
        }
        OpenSSLErrorQueue.clear() // decoders may leave notes from the formats they tried first
        return key
    }

    /// A public key PEM: SPKI ("PUBLIC KEY"), or the key of an X.509 certificate ("CERTIFICATE").
    /// Returns an owned `EVP_PKEY`.
    static func readPublicKey(_ text: String, expected: String) throws(CryptoError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        let key: OpaquePointer?
        if text.contains("-----BEGIN CERTIFICATE-----") {
            key = withReadBIO(text) { bio -> OpaquePointer? in
                guard let certificate = PEM_read_bio_X509(bio, nil, refusePassphrase, nil) else { return nil }
                defer { X509_free(certificate) }
                return X509_get_pubkey(certificate) // a new reference, owned by the caller
            }
        } else {
            key = withReadBIO(text) { PEM_read_bio_PUBKEY($0, nil, refusePassphrase, nil) }
        }
        guard let key else { throw .invalidPEM(expected: expected, openSSL: OpenSSLErrorQueue.drain()) }
        OpenSSLErrorQueue.clear() // decoders may leave notes from the formats they tried first
        return key
    }

    /// Collects what `write` puts into a memory BIO as a string.
    static func write(_ what: String, _ write: (OpaquePointer) -> Int32) throws(CryptoError) -> String {
        OpenSSLErrorQueue.clear()
        guard let bio = BIO_new(BIO_s_mem()) else { throw .encodingFailed("\(what): BIO_new: \(OpenSSLErrorQueue.drain())") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw .encodingFailed("\(what): \(OpenSSLErrorQueue.drain())") }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = cshim_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw .encodingFailed("\(what): empty output") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// PKCS#8 "BEGIN PRIVATE KEY", unencrypted (the form of Apple's .p8 files).
    static func writePKCS8(_ key: OpaquePointer) throws(CryptoError) -> String {
        try write("PKCS#8 private key") { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    /// SPKI "BEGIN PUBLIC KEY".
    static func writeSPKI(_ key: OpaquePointer) throws(CryptoError) -> String {
        try write("SPKI public key") { PEM_write_bio_PUBKEY($0, key) }
    }
}
