import COpenSSL

/// Operations on an `EVP_PKEY` shared by the key classes (which own the pointer).
enum EVPKey {
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
        OpenSSLErrorQueue.clear()
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
