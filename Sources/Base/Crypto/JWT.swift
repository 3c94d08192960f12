import Encoding
import JSON

/// Why a compact JWS could not be decoded. Signature problems are not decode errors: they show
/// up as `false` from the `verify` methods.
public enum JWTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Part: String, Sendable {
        case header, claims, signature
    }

    /// Not three base64url parts separated by two dots (RFC 7515 §7.1), or empty.
    case malformedStructure(String)
    /// A part is not base64url (RFC 7515 §2: URL-safe alphabet, no padding required).
    case invalidBase64URL(Part)
    /// The header or claims part is not JSON.
    case invalidJSON(Part, JSONError)
    /// The header or claims part is JSON but not an object (RFC 7515 §4, RFC 7519 §7.2 step 10).
    case notAnObject(Part, found: String)

    public var description: String {
        switch self {
        case .malformedStructure(let detail): return "malformed JWT: \(detail)"
        case .invalidBase64URL(let part): return "malformed JWT: the \(part.rawValue) is not base64url"
        case .invalidJSON(let part, let error): return "malformed JWT: the \(part.rawValue) is not JSON (\(error))"
        case .notAnObject(let part, let found): return "malformed JWT: the \(part.rawValue) is a JSON \(found), not an object"
        }
    }
}

/// A compact JWS split into its parts, not yet verified.
public struct DecodedJWT: Sendable {
    /// The JOSE header (`alg`, `kid`, `typ`, ...).
    public let header: JSONObject
    /// The claims set (`iss`, `iat`, ...).
    public let claims: JSONObject
    /// The bytes the signature covers: ASCII `base64url(header) "." base64url(claims)` (RFC 7515 §5.1).
    public let signingInput: [UInt8]
    /// The decoded signature bytes.
    public let signature: [UInt8]

    /// The header's `alg`, if it is a string.
    public var algorithm: String? { header["alg"]?.stringValue }
    /// The header's `kid`, if it is a string.
    public var keyID: String? { header["kid"]?.stringValue }

    /// True when the header says `"alg": "ES256"` and the signature, in the JWS R||S form
    /// (RFC 7518 §3.4), verifies with `key`. With `acceptDERSignature`, a DER signature is also
    /// accepted: not valid JWS, but what some lenient clients send.
    public func verifyES256(key: ECP256PublicKey, acceptDERSignature: Bool = false) -> Bool {
        guard algorithm == "ES256" else { return false }
        if signature.count == ES256.signatureLength, ES256.verify(signature: signature, message: signingInput, key: key) {
            return true
        }
        // A DER signature can (rarely) be 64 bytes long too, so the fallback does not look at length.
        return acceptDERSignature && ES256.verifyDER(signature: signature, message: signingInput, key: key)
    }

    /// True when the header says `"alg": "RS256"` and the signature verifies with `key`.
    public func verifyRS256(key: RSAPublicKey) -> Bool {
        guard algorithm == "RS256" else { return false }
        return RS256.verify(signature: signature, message: signingInput, key: key)
    }
}

/// Compact JWS serialization of JWTs (RFC 7515 §7.1, RFC 7519).
public enum JWT {
    /// Splits and decodes `compact` without verifying it.
    ///
    /// Header and claims must be base64url-encoded JSON objects. A repeated member name is
    /// rejected by default (RFC 7515 §4 allows a parser to reject it or keep the last one;
    /// rejecting means no two parties can read the same token differently).
    public static func decode(_ compact: String, duplicateKeys: JSONParser.DuplicateKeys = .reject) throws(JWTError) -> DecodedJWT {
        var compact = compact
        compact.makeContiguousUTF8()
        let result: Result<DecodedJWT, JWTError>? = compact.utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(JWTError) -> DecodedJWT in try decode(bytes: bytes, duplicateKeys: duplicateKeys) }
        }
        guard let result else { throw .malformedStructure("not contiguous UTF-8") }
        return try result.get()
    }

    static func decode(bytes: UnsafeBufferPointer<UInt8>, duplicateKeys: JSONParser.DuplicateKeys) throws(JWTError) -> DecodedJWT {
        guard !bytes.isEmpty else { throw .malformedStructure("empty token") }
        let dot = UInt8(ascii: ".")
        guard let firstDot = bytes.firstIndex(of: dot) else { throw .malformedStructure("no '.' separators (expected header.claims.signature)") }
        guard let secondDot = bytes[(firstDot + 1)...].firstIndex(of: dot) else {
            throw .malformedStructure("one '.' separator (expected header.claims.signature)")
        }
        guard bytes[(secondDot + 1)...].firstIndex(of: dot) == nil else {
            throw .malformedStructure("more than two '.' separators (JWE and JSON serializations are not supported)")
        }
        let options = JSONParser.Options(duplicateKeys: duplicateKeys)
        let header = try decodeObject(UnsafeBufferPointer(rebasing: bytes[..<firstDot]), part: .header, options: options)
        let claims = try decodeObject(UnsafeBufferPointer(rebasing: bytes[(firstDot + 1) ..< secondDot]), part: .claims, options: options)
        guard let signature = Base64URL.decode(buffer: UnsafeBufferPointer(rebasing: bytes[(secondDot + 1)...])) else {
            throw .invalidBase64URL(.signature)
        }
        return DecodedJWT(header: header, claims: claims, signingInput: Array(bytes[..<secondDot]), signature: signature)
    }

    private static func decodeObject(_ encoded: UnsafeBufferPointer<UInt8>, part: JWTError.Part, options: JSONParser.Options) throws(JWTError) -> JSONObject {
        guard let json = Base64URL.decode(buffer: encoded) else { throw .invalidBase64URL(part) }
        let value: JSONValue
        do { value = try JSONParser.parse(json, options: options) } catch { throw .invalidJSON(part, error) }
        guard let object = value.objectValue else { throw .notAnObject(part, found: value.typeName) }
        return object
    }

    /// Signs with ES256 and returns `header.claims.signature`, the signature in the JWS R||S form.
    /// A header without `alg` gets `"alg": "ES256"` first; an `alg` already there is kept as is,
    /// so tests can build deliberately mislabelled tokens.
    public static func signES256(header: JSONObject, claims: JSONObject, key: ECP256PrivateKey) throws(CryptoError) -> String {
        try sign(header: header, claims: claims, algorithm: "ES256") { (input) throws(CryptoError) in try ES256.sign(input, key: key) }
    }

    /// Signs with RS256 and returns `header.claims.signature`. A header without `alg` gets
    /// `"alg": "RS256"` first; an `alg` already there is kept.
    public static func signRS256(header: JSONObject, claims: JSONObject, key: RSAPrivateKey) throws(CryptoError) -> String {
        try sign(header: header, claims: claims, algorithm: "RS256") { (input) throws(CryptoError) in try RS256.sign(input, key: key) }
    }

    private static func sign(header: JSONObject, claims: JSONObject, algorithm: String,
                             signer: ([UInt8]) throws(CryptoError) -> [UInt8]) throws(CryptoError) -> String {
        var fullHeader = header
        if fullHeader["alg"] == nil {
            fullHeader = JSONObject([(key: "alg", value: .string(algorithm))] + header.entries)
        }
        let signingInput = Base64URL.encode(JSONValue.object(fullHeader).bytes()) + "." + Base64URL.encode(JSONValue.object(claims).bytes())
        let signature = try signer(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}

/// The provider authentication token APNs expects in `authorization: bearer <token>`
/// ("Establishing a token-based connection to APNs"): header `{"alg":"ES256","kid":<key id>}`,
/// claims `{"iss":<team id>,"iat":<epoch seconds>}`, signed with the .p8 key, signature R||S.
/// Apple asks for a new token no more often than every 20 minutes and no less often than
/// every 60; one older than an hour is answered with 403 ExpiredProviderToken.
public enum APNsProviderToken {
    public static func make(keyID: String, teamID: String, issuedAt: Int, key: ECP256PrivateKey) throws(CryptoError) -> String {
        try JWT.signES256(
            header: ["alg": "ES256", "kid": .string(keyID)],
            claims: ["iss": .string(teamID), "iat": .number(Double(issuedAt))],
            key: key)
    }
}
