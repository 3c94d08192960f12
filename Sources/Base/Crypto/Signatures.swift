import COpenSSL

/// One-shot EVP_DigestSign / EVP_DigestVerify with SHA-256, each call on its own EVP_MD_CTX so
/// a key can be used from many threads at once.
enum DigestSignature {
    /// Signs `message` with SHA-256; `maximumLength` bounds the signature (the key's
    /// `EVP_PKEY_get_size`). `rsaPadding` selects the RSA padding mode.
    static func sign(_ message: UnsafeRawBufferPointer, key: OpaquePointer, rsaPadding: Int32? = nil) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("EVP_MD_CTX_new: \(OpenSSLErrorQueue.drain())") }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer? = nil
        guard EVP_DigestSignInit(context, &keyContext, FetchedAlgorithms.sha256, nil, key) == 1 else {
            throw .signingFailed("EVP_DigestSignInit: \(OpenSSLErrorQueue.drain())")
        }
        if let rsaPadding, EVP_PKEY_CTX_set_rsa_padding(keyContext, rsaPadding) != 1 {
            throw .signingFailed("EVP_PKEY_CTX_set_rsa_padding: \(OpenSSLErrorQueue.drain())")
        }
        let maximumLength = Int(EVP_PKEY_get_size(key))
        guard maximumLength > 0 else { throw .signingFailed("EVP_PKEY_get_size: \(OpenSSLErrorQueue.drain())") }
        var failure: String? = nil
        let signature = [UInt8](unsafeUninitializedCapacity: maximumLength) { buffer, initialized in
            var length = maximumLength
            if EVP_DigestSign(context, buffer.baseAddress, &length, message.baseAddress, message.count) == 1 {
                initialized = length
            } else {
                initialized = 0
                failure = "EVP_DigestSign: \(OpenSSLErrorQueue.drain())"
            }
        }
        if let failure { throw .signingFailed(failure) }
        return signature
    }

    /// True only for a valid signature; any failure leaves the OpenSSL error queue empty.
    static func verify(_ signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, key: OpaquePointer, rsaPadding: Int32? = nil) -> Bool {
        guard let context = EVP_MD_CTX_new() else { OpenSSLErrorQueue.clear(); return false }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer? = nil
        var valid = EVP_DigestVerifyInit(context, &keyContext, FetchedAlgorithms.sha256, nil, key) == 1
        if valid, let rsaPadding { valid = EVP_PKEY_CTX_set_rsa_padding(keyContext, rsaPadding) == 1 }
        if valid {
            valid = EVP_DigestVerify(context, signature.baseAddress, signature.count, message.baseAddress, message.count) == 1
        }
        if !valid { OpenSSLErrorQueue.clear() }
        return valid
    }
}

/// Contiguous bytes of any collection, copying only when it has no contiguous storage (arrays,
/// slices and `String.UTF8View`s of native strings have it).
@inline(__always)
func withContiguousBytes<R, E: Error>(_ bytes: some Collection<UInt8>, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
    let direct: Result<R, E>? = bytes.withContiguousStorageIfAvailable { buffer in
        do throws(E) { return .success(try body(UnsafeRawBufferPointer(buffer))) } catch { return .failure(error) }
    }
    if let direct { return try direct.get() }
    let copied: Result<R, E> = Array(bytes).withUnsafeBytes { buffer in
        do throws(E) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try copied.get()
}

/// ES256: ECDSA with P-256 and SHA-256 (RFC 7518 §3.4).
public enum ES256 {
    /// Length of the JWS signature: R and S, each a 32-byte big-endian unsigned integer.
    public static let signatureLength = 64

    /// Signs `message` and returns the JWS form R||S (64 bytes), not DER (RFC 7518 §3.4).
    public static func sign(_ message: some Collection<UInt8>, key: ECP256PrivateKey) throws(CryptoError) -> [UInt8] {
        let der = try withContiguousBytes(message) { (buffer) throws(CryptoError) in try DigestSignature.sign(buffer, key: key.key) }
        guard let raw = rawSignature(fromDER: der) else { throw .signingFailed("OpenSSL produced an ECDSA signature that is not valid DER") }
        return raw
    }

    /// Verifies a JWS signature in the R||S form. Anything but exactly 64 bytes is `false`.
    public static func verify(signature: some Collection<UInt8>, message: some Collection<UInt8>, key: ECP256PublicKey) -> Bool {
        guard signature.count == signatureLength else { return false }
        // DER is at most 2 + 2 * (2 + 33) = 72 bytes: build it on the stack.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 72) { der in
            let derLength = withContiguousBytes(signature) { encodeDER(raw: $0.assumingMemoryBound(to: UInt8.self), into: der) }
            let derBytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(der)[0 ..< derLength])
            return withContiguousBytes(message) { DigestSignature.verify(derBytes, message: $0, key: key.key) }
        }
    }

    /// Verifies a DER ECDSA-Sig-Value (RFC 3279 §2.2.3), the form OpenSSL and some lenient JWT
    /// clients produce. Not valid JWS; a mock accepts it only when told to be lenient.
    public static func verifyDER(signature: some Collection<UInt8>, message: some Collection<UInt8>, key: ECP256PublicKey) -> Bool {
        withContiguousBytes(signature) { signatureBuffer in
            withContiguousBytes(message) { DigestSignature.verify(signatureBuffer, message: $0, key: key.key) }
        }
    }

    /// Converts a DER ECDSA-Sig-Value into R||S (64 bytes); `nil` if it is not one, or if R or
    /// S does not fit in 32 bytes.
    public static func rawSignature(fromDER der: some Collection<UInt8>) -> [UInt8]? {
        let derBytes = Array(der)
        return derBytes.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { OpenSSLErrorQueue.clear(); return nil }
            defer { ECDSA_SIG_free(signature) }
            // Trailing bytes after the SEQUENCE make it something other than a signature.
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else { return nil }
            var r: OpaquePointer? = nil, s: OpaquePointer? = nil
            ECDSA_SIG_get0(signature, &r, &s)
            var raw = [UInt8](repeating: 0, count: signatureLength)
            let fitted = raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
            if !fitted { OpenSSLErrorQueue.clear(); return nil }
            return raw
        }
    }

    /// Converts R||S (exactly 64 bytes) into a DER ECDSA-Sig-Value; `nil` for any other length.
    public static func derSignature(fromRaw raw: some Collection<UInt8>) -> [UInt8]? {
        guard raw.count == signatureLength else { return nil }
        let rawBytes = Array(raw)
        var der = [UInt8](repeating: 0, count: 72)
        let length = der.withUnsafeMutableBufferPointer { out in rawBytes.withUnsafeBufferPointer { encodeDER(raw: $0, into: out) } }
        return Array(der[0 ..< length])
    }

    /// DER of SEQUENCE { r INTEGER, s INTEGER } from 64 bytes R||S into `out` (72 bytes or more).
    /// DER INTEGERs are minimal two's complement: leading zero bytes are dropped and one 0x00 is
    /// put back when the first remaining byte has its top bit set (X.690 §8.3).
    static func encodeDER(raw: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        func integerExtent(_ start: Int) -> (first: Int, needsZero: Bool) {
            var first = start
            while first < start + 31 && raw[first] == 0 { first += 1 }
            return (first, raw[first] & 0x80 != 0)
        }
        let r = integerExtent(0), s = integerExtent(32)
        let rLength = 32 - r.first + (r.needsZero ? 1 : 0)
        let sLength = 64 - s.first + (s.needsZero ? 1 : 0)
        var write = 0
        out[write] = 0x30; out[write + 1] = UInt8(2 + rLength + 2 + sLength); write += 2
        for (integer, length, end) in [(r, rLength, 32), (s, sLength, 64)] {
            out[write] = 0x02; out[write + 1] = UInt8(length); write += 2
            if integer.needsZero { out[write] = 0; write += 1 }
            for index in integer.first ..< end { out[write] = raw[index]; write += 1 }
        }
        return write
    }
}

/// RS256: RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
public enum RS256 {
    /// Signs `message`; the signature is as long as the key's modulus.
    public static func sign(_ message: some Collection<UInt8>, key: RSAPrivateKey) throws(CryptoError) -> [UInt8] {
        try withContiguousBytes(message) { (buffer) throws(CryptoError) in
            try DigestSignature.sign(buffer, key: key.key, rsaPadding: RSA_PKCS1_PADDING)
        }
    }

    /// Verifies a PKCS#1 v1.5 SHA-256 signature.
    public static func verify(signature: some Collection<UInt8>, message: some Collection<UInt8>, key: RSAPublicKey) -> Bool {
        withContiguousBytes(signature) { signatureBuffer in
            withContiguousBytes(message) { DigestSignature.verify(signatureBuffer, message: $0, key: key.key, rsaPadding: RSA_PKCS1_PADDING) }
        }
    }
}
