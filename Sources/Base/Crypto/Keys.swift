import COpenSSL

/// One owned `EVP_PKEY`, checked on the way in and freed exactly once in `deinit`: the key
/// classes below each hold one, so adopting a pointer (free it when the check fails) and freeing
/// it are written once.
///
/// Thread safety: the pointer is set in `init` and never changed until `deinit` frees it.
/// OpenSSL 3 documents EVP_PKEY as safe for concurrent read-only use (openssl-threads(7));
/// signing and verification only read it, each call with its own EVP_MD_CTX. That is what makes
/// the `@unchecked Sendable` true without a lock.
final class OwnedEVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `key`, also when `check` throws (then `key` is freed here).
    init(owning key: OpaquePointer, requiring check: (OpaquePointer) throws(CryptoError) -> Void) throws(CryptoError) {
        do { try check(key) } catch {
            EVP_PKEY_free(key)
            throw error
        }
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }
}

/// A P-256 (prime256v1) private key for ES256, such as the key in an APNs `.p8` file.
public final class ECP256PrivateKey: Sendable {
    private let owned: OwnedEVPKey
    var key: OpaquePointer { owned.pointer }
    /// The public half, derived once so verifying with `publicKey` never re-derives it.
    public let publicKey: ECP256PublicKey

    private init(owning key: OpaquePointer) throws(CryptoError) {
        let owned = try OwnedEVPKey(owning: key, requiring: EVPKey.requireP256)
        publicKey = try ECP256PublicKey(owning: EVPKey.publicOnlyCopy(of: owned.pointer))
        self.owned = owned
    }

    /// Reads PKCS#8 ("BEGIN PRIVATE KEY", the form of Apple's .p8 files) or SEC1
    /// ("BEGIN EC PRIVATE KEY"). Throws for anything else, including keys on other curves.
    public convenience init(pem: String) throws(CryptoError) {
        try self.init(owning: PEM.readPrivateKey(pem, expected: "P-256 private key (PKCS#8 or SEC1)"))
    }

    /// A fresh random P-256 key.
    public static func generate() throws(CryptoError) -> ECP256PrivateKey {
        let key = try EVPKey.generate("EC") { EVP_PKEY_CTX_set_group_name($0, "P-256") }
        return try ECP256PrivateKey(owning: key)
    }

    /// PKCS#8 PEM ("BEGIN PRIVATE KEY"), unencrypted, as Apple's .p8 files are.
    public var pkcs8PEM: String {
        get throws(CryptoError) { try PEM.writePKCS8(key) }
    }
}

/// A P-256 public key for verifying ES256 signatures.
public typealias ECP256PublicKey = PublicKey<P256Key>

/// An RSA private key (2048 bits or more) for RS256, such as a Google service-account key.
public final class RSAPrivateKey: Sendable {
    private let owned: OwnedEVPKey
    var key: OpaquePointer { owned.pointer }
    /// The public half, derived once.
    public let publicKey: RSAPublicKey

    private init(owning key: OpaquePointer) throws(CryptoError) {
        let owned = try OwnedEVPKey(owning: key, requiring: EVPKey.requireRSA)
        publicKey = try RSAPublicKey(owning: EVPKey.publicOnlyCopy(of: owned.pointer))
        self.owned = owned
    }

    /// Reads PKCS#8 ("BEGIN PRIVATE KEY", the form in service-account JSON) or PKCS#1
    /// ("BEGIN RSA PRIVATE KEY").
    public convenience init(pem: String) throws(CryptoError) {
        try self.init(owning: PEM.readPrivateKey(pem, expected: "RSA private key (PKCS#8 or PKCS#1)"))
    }

    /// A fresh random key; `bits` below 2048 are refused (RFC 7518 §3.3).
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        guard bits >= 2048 else { throw .rsaKeyTooSmall(bits: bits) }
        guard bits <= 16384 else { throw .keyGenerationFailed("RSA key of \(bits) bits is larger than 16384") }
        let key = try EVPKey.generate("RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) }
        return try RSAPrivateKey(owning: key)
    }

    /// PKCS#8 PEM ("BEGIN PRIVATE KEY"), unencrypted.
    public var pkcs8PEM: String {
        get throws(CryptoError) { try PEM.writePKCS8(key) }
    }

    /// Modulus size in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(key)) }
}

/// An RSA public key (2048 bits or more) for verifying RS256 signatures.
public typealias RSAPublicKey = PublicKey<RSAKey>

extension PublicKey where Kind == RSAKey {
    /// Modulus size in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(key)) }
}

/// What a public key must be: checked when it is read, named when it is not.
public protocol PublicKeyKind: Sendable {
    /// Throws unless `key` is of this kind (and size).
    static func require(_ key: OpaquePointer) throws(CryptoError)
    /// For the error when a PEM holds no such key.
    static var expectedPEM: String { get }
}

public enum P256Key: PublicKeyKind {
    public static func require(_ key: OpaquePointer) throws(CryptoError) { try EVPKey.requireP256(key) }
    public static let expectedPEM = "P-256 public key (SPKI or certificate)"
}

public enum RSAKey: PublicKeyKind {
    public static func require(_ key: OpaquePointer) throws(CryptoError) { try EVPKey.requireRSA(key) }
    public static let expectedPEM = "RSA public key (SPKI or certificate)"
}

/// A public key of one kind (`ECP256PublicKey`, `RSAPublicKey`): read from SPKI or a
/// certificate (as Google publishes its signing keys), written as SPKI.
public final class PublicKey<Kind: PublicKeyKind>: Sendable {
    private let owned: OwnedEVPKey
    var key: OpaquePointer { owned.pointer }

    init(owning key: OpaquePointer) throws(CryptoError) {
        owned = try OwnedEVPKey(owning: key, requiring: Kind.require)
    }

    /// Reads SPKI ("BEGIN PUBLIC KEY"), or the key of an X.509 certificate ("BEGIN CERTIFICATE").
    public convenience init(pem: String) throws(CryptoError) {
        try self.init(owning: PEM.readPublicKey(pem, expected: Kind.expectedPEM))
    }

    /// Reads DER SubjectPublicKeyInfo.
    public convenience init(spkiDER: [UInt8]) throws(CryptoError) {
        try self.init(owning: EVPKey.publicKey(fromSPKIDER: spkiDER))
    }

    /// SPKI PEM ("BEGIN PUBLIC KEY").
    public var spkiPEM: String {
        get throws(CryptoError) { try PEM.writeSPKI(key) }
    }

    /// DER SubjectPublicKeyInfo.
    public var spkiDER: [UInt8] {
        get throws(CryptoError) { try EVPKey.spkiDER(key) }
    }
}
