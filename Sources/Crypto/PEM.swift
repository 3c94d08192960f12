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

/// Shared key plumbing for the key classes.
enum KeyHandle {
    /// DER SubjectPublicKeyInfo of a key (public or private).
    static func spkiDER(_ key: OpaquePointer) throws(CryptoError) -> [UInt8] {
        OpenSSLErrorQueue.clear()
        let length = i2d_PUBKEY(key, nil)
        guard length > 0 else { throw .encodingFailed("SPKI DER: \(OpenSSLErrorQueue.drain())") }
        var failed = false
        let der = [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, initialized in
            var cursor = buffer.baseAddress
            failed = i2d_PUBKEY(key, &cursor) != length
            initialized = failed ? 0 : Int(length)
        }
        if failed { throw .encodingFailed("SPKI DER: \(OpenSSLErrorQueue.drain())") }
        return der
    }

    /// A new `EVP_PKEY` holding only the public half of `key`, by a DER round trip, so that a
    /// public key object never carries private material.
    static func publicOnlyCopy(of key: OpaquePointer) throws(CryptoError) -> OpaquePointer {
        let der = try spkiDER(key)
        return try publicKey(fromSPKIDER: der)
    }

    static func publicKey(fromSPKIDER der: [UInt8]) throws(CryptoError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { throw .invalidPEM(expected: "DER SubjectPublicKeyInfo", openSSL: OpenSSLErrorQueue.drain()) }
        return key
    }

    static func typeName(_ key: OpaquePointer) -> String {
        guard let name = EVP_PKEY_get0_type_name(key) else { return "unknown (id \(EVP_PKEY_get_base_id(key)))" }
        return String(cString: name)
    }

    /// ES256 is ECDSA over P-256 only (RFC 7518 §3.4).
    static func requireP256(_ key: OpaquePointer) throws(CryptoError) {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            throw .wrongKeyType(expected: "EC P-256", found: typeName(key))
        }
        var name = [CChar](repeating: 0, count: 80)
        var nameLength = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &nameLength) == 1 else {
            OpenSSLErrorQueue.clear()
            throw .unsupportedCurve("with explicit parameters")
        }
        let curve = String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let nid = OBJ_sn2nid(curve)
        guard nid == NID_X9_62_prime256v1 || EC_curve_nist2nid(curve) == NID_X9_62_prime256v1 else {
            throw .unsupportedCurve(curve)
        }
    }

    /// RS256 needs an RSA key of at least 2048 bits (RFC 7518 §3.3).
    static func requireRSA(_ key: OpaquePointer) throws(CryptoError) {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            throw .wrongKeyType(expected: "RSA", found: typeName(key))
        }
        let bits = Int(EVP_PKEY_get_bits(key))
        guard bits >= 2048 else { throw .rsaKeyTooSmall(bits: bits) }
    }

    /// Generates a key with an `EVP_PKEY_CTX` for `algorithm`, configured by `configure`.
    static func generate(_ algorithm: String, configure: (OpaquePointer) -> Int32) throws(CryptoError) -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
            throw .keyGenerationFailed("\(algorithm): \(OpenSSLErrorQueue.drain())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) == 1, EVP_PKEY_generate(context, &key) == 1, let key else {
            throw .keyGenerationFailed("\(algorithm): \(OpenSSLErrorQueue.drain())")
        }
        return key
    }
}
