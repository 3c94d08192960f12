import COpenSSL

/// Why a key could not be loaded or generated, or a signature or certificate could not be made.
///
/// Verification never throws: a signature that does not verify is `false`, whatever the reason.
public enum CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The PEM text could not be read as the expected kind of key or certificate.
    case invalidPEM(expected: String, openSSL: String)
    /// The PEM is encrypted; keys here are read without a passphrase (as Apple's .p8 and
    /// Google's service-account keys are).
    case encryptedKeyNotSupported
    /// The key parsed but is of another algorithm (for example an RSA key given as P-256).
    case wrongKeyType(expected: String, found: String)
    /// An EC key on a curve other than P-256 (ES256 is ECDSA with P-256 only, RFC 7518 §3.4).
    case unsupportedCurve(String)
    /// An RSA key under 2048 bits (RFC 7518 §3.3 requires 2048 or larger for RS256).
    case rsaKeyTooSmall(bits: Int)
    case keyGenerationFailed(String)
    case signingFailed(String)
    case encodingFailed(String)
    /// A subject alternative name that is neither an IP address nor a DNS name.
    case invalidSubjectAltName(String)
    case certificateGenerationFailed(String)

    public var description: String {
        switch self {
        case .invalidPEM(let expected, let openSSL):
            return "invalid PEM: expected \(expected)" + (openSSL.isEmpty ? "" : " (OpenSSL: \(openSSL))")
        case .encryptedKeyNotSupported:
            return "encrypted private keys are not supported; export the key without a passphrase"
        case .wrongKeyType(let expected, let found):
            return "wrong key type: expected \(expected), found \(found)"
        case .unsupportedCurve(let curve):
            return "unsupported EC curve \(curve): ES256 needs P-256 (prime256v1)"
        case .rsaKeyTooSmall(let bits):
            return "RSA key of \(bits) bits is too small: RS256 needs at least 2048 (RFC 7518 §3.3)"
        case .keyGenerationFailed(let detail):
            return "key generation failed: \(detail)"
        case .signingFailed(let detail):
            return "signing failed: \(detail)"
        case .encodingFailed(let detail):
            return "encoding failed: \(detail)"
        case .invalidSubjectAltName(let name):
            return "invalid subject alternative name \"\(name)\": expected a DNS name or an IP address"
        case .certificateGenerationFailed(let detail):
            return "certificate generation failed: \(detail)"
        }
    }
}

/// OpenSSL keeps a per-thread error queue. Every failure path drains it (so the message reaches
/// the caller) and every operation starts from an empty queue: a stale entry would otherwise be
/// misread later by unrelated code on the same thread (SSL_get_error consults this queue).
enum OpenSSLErrorQueue {
    /// Drains the queue into one readable line ("error:...; error:...").
    static func drain() -> String {
        var messages: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            let text = buffer.withUnsafeMutableBufferPointer { pointer -> String in
                ERR_error_string_n(code, pointer.baseAddress, pointer.count)
                return String(cString: pointer.baseAddress!)
            }
            messages.append(text)
        }
        return messages.joined(separator: "; ")
    }

    static func clear() { ERR_clear_error() }
}
