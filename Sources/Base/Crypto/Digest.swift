import COpenSSL

/// Algorithms fetched once: OpenSSL 3 otherwise looks the implementation up by name on every
/// operation that is given `EVP_sha256()` ("Performance" in OpenSSL's crypto(7)). A fetched
/// `EVP_MD` is immutable and may be shared between threads.
enum FetchedAlgorithms {
    nonisolated(unsafe) static let sha256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()
}

/// SHA-256 (FIPS 180-4), the digest of ES256 and RS256 (RFC 7518 §3.1).
public enum SHA256 {
    public static let byteCount = 32

    /// The digest as lowercase hex (64 digits): what identities and file digests print.
    public static func hexDigest(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: hash(bytes).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
    }

    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(buffer: UnsafeRawBufferPointer($0)) }) { return digest }
        return Array(bytes).withUnsafeBytes { hash(buffer: $0) }
    }

    static func hash(buffer: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: byteCount) { output, initialized in
            var length: UInt32 = 0
            // EVP_Digest fails only on allocation failure; an unwritten digest would be all
            // zeros, which no caller could mistake for a real one, but we trap instead as the
            // process cannot continue without memory anyway.
            let ok = EVP_Digest(buffer.baseAddress, buffer.count, output.baseAddress, &length, FetchedAlgorithms.sha256, nil)
            precondition(ok == 1 && Int(length) == byteCount, "EVP_Digest(SHA-256) failed: \(OpenSSLErrorQueue.drain())")
            initialized = byteCount
        }
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG (seeded by the OS).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
            // RAND_bytes fails only when the DRBG cannot be seeded; handing out predictable
            // bytes for serials and key ids is worse than stopping.
            precondition(RAND_bytes(output.baseAddress, Int32(count)) == 1, "RAND_bytes failed: \(OpenSSLErrorQueue.drain())")
            initialized = count
        }
    }
}
