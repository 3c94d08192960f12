// APNs certificate-based provider authentication (apns.md, "Error reasons": BadCertificate,
// BadCertificateEnvironment): what a provider certificate says, whether a trusted authority
// issued it, and test certificates shaped like Apple's.
import COpenSSL

/// What an APNs provider (client) certificate says about its holder. Apple puts the app's
/// bundle id in the subject's UID, marks the environments with extensions
/// 1.2.840.113635.100.6.3.1 (development, "sandbox") and 1.2.840.113635.100.6.3.2
/// (production), and lists the topics a universal certificate may push to in
/// 1.2.840.113635.100.6.3.6.
public struct APNsProviderCertificate: Sendable, Equatable {
    public enum Environment: String, Sendable, CaseIterable {
        case development, production

        var extensionOID: String {
            switch self {
            case .development: "1.2.840.113635.100.6.3.1"
            case .production: "1.2.840.113635.100.6.3.2"
            }
        }
    }

    static let topicsExtensionOID = "1.2.840.113635.100.6.3.6"

    /// The subject's UID.
    public var bundleID: String
    /// The topics extension's topics; empty when the certificate has none (then it pushes to
    /// its bundle id only).
    public var topics: [String]
    public var environments: Set<Environment>

    public init(bundleID: String, topics: [String], environments: Set<Environment>) {
        self.bundleID = bundleID
        self.topics = topics
        self.environments = environments
    }

    /// Whether the certificate may push to `topic`: one of its listed topics, or, without a
    /// list, its bundle id (with the suffix a push type adds).
    public func allows(topic: String, bundle: Substring) -> Bool {
        topics.isEmpty ? bundle == bundleID : topics.contains(topic)
    }
}

/// Why a provider certificate is refused.
public enum ProviderCertificateProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadable
    /// No chain to a configured authority (or a bad signature on the way).
    case untrusted(String)
    case expired
    case notYetValid
    /// No UID in the subject: not a push certificate.
    case noBundleID

    public var description: String {
        switch self {
        case .unreadable: "the client certificate is not valid DER"
        case .untrusted(let detail): "the client certificate is not issued by a trusted authority (\(detail))"
        case .expired: "the client certificate has expired"
        case .notYetValid: "the client certificate is not valid yet"
        case .noBundleID: "the client certificate's subject has no UID (bundle id)"
        }
    }
}

/// Who a client certificate names, read without verifying it: for the record (which
/// certificate a connection presented) and for zero config, where any certificate
/// authenticates a connection.
public struct ClientCertificateIdentity: Sendable, Equatable {
    /// The subject's attributes in certificate order, `UID=com.example.app, CN=…, O=…`
    /// (short names as OpenSSL spells them, values as UTF-8).
    public var subject: String
    public var issuer: String
    /// What the certificate says as an APNs provider certificate, when its subject has a UID
    /// (the bundle id); nil for any other certificate.
    public var providerCertificate: APNsProviderCertificate?

    /// nil when `der` is not a certificate.
    public init?(der: [UInt8]) {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let certificate = parsed else { return nil }
        defer { X509_free(certificate) }
        subject = Self.describe(X509_get_subject_name(certificate))
        issuer = Self.describe(X509_get_issuer_name(certificate))
        providerCertificate = ProviderCertificateAuthorities.subjectUID(of: certificate).map { bundleID in
            let environments = Set(APNsProviderCertificate.Environment.allCases.filter {
                ProviderCertificateAuthorities.extensionData(certificate, $0.extensionOID) != nil
            })
            let topics = ProviderCertificateAuthorities.extensionData(certificate, APNsProviderCertificate.topicsExtensionOID)
                .map(DER.topUTF8Strings) ?? []
            return APNsProviderCertificate(bundleID: bundleID, topics: topics, environments: environments)
        }
    }

    /// `SN=value, SN=value` for an X509_NAME. Hand-built rather than X509_NAME_print_ex: its
    /// XN_FLAG_* combinations are C macros Swift does not import.
    static func describe(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        var parts: [String] = []
        for index in 0..<X509_NAME_entry_count(name) {
            guard let entry = X509_NAME_get_entry(name, index) else { continue }
            let nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry))
            let field = OBJ_nid2sn(nid).map { String(cString: $0) } ?? "?"
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry))
            guard length >= 0, let utf8 else { continue }
            defer { CRYPTO_free(utf8, nil, 0) }  // OPENSSL_free, a macro
            parts.append(field + "=" + String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self))
        }
        return parts.joined(separator: ", ")
    }
}

/// The authorities whose provider certificates the gateway trusts (Apple's WWDR CA plays this
/// part for the real APNs), in an OpenSSL certificate store.
public final class ProviderCertificateAuthorities: @unchecked Sendable {
    // Sendable: the store is filled in `init` and only read afterwards; OpenSSL locks an
    // X509_STORE internally, and each verification has its own X509_STORE_CTX.
    private let store: OpaquePointer

    /// `pems`: one or more PEM certificates each (self-signed roots or intermediates).
    public init(pems: [String]) throws(CryptoError) {
        guard let store = X509_STORE_new() else { throw .invalidPEM(expected: "certificate", openSSL: "X509_STORE_new") }
        self.store = store
        var added = 0
        for pem in pems {
            OpenSSLErrorQueue.clear()
            let certificates: [OpaquePointer] = PEM.withReadBIO(pem) { bio in
                var found: [OpaquePointer] = []
                while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { found.append(certificate) }
                return found
            } ?? []
            OpenSSLErrorQueue.clear()  // the loop ends on "no start line"
            guard !certificates.isEmpty else { throw .invalidPEM(expected: "certificate", openSSL: "no certificate in the PEM") }
            for certificate in certificates {
                defer { X509_free(certificate) }
                guard X509_STORE_add_cert(store, certificate) == 1 else {
                    throw .invalidPEM(expected: "certificate", openSSL: OpenSSLErrorQueue.drain())
                }
                added += 1
            }
        }
        guard added > 0 else { throw .invalidPEM(expected: "certificate", openSSL: "no certificate given") }
    }

    deinit { X509_STORE_free(store) }

    /// Verifies `der` (the client's leaf certificate) against the authorities at time
    /// `nowSeconds`, and reads what it says.
    public func verify(der: [UInt8], nowSeconds: Int64) -> Result<APNsProviderCertificate, ProviderCertificateProblem> {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let certificate = parsed else { return .failure(.unreadable) }
        defer { X509_free(certificate) }
        guard let context = X509_STORE_CTX_new() else { return .failure(.untrusted("X509_STORE_CTX_new")) }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, certificate, nil) == 1 else { return .failure(.untrusted("X509_STORE_CTX_init")) }
        X509_STORE_CTX_set_time(context, 0, time_t(nowSeconds))
        _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_CLIENT)
        if X509_verify_cert(context) != 1 {
            let error = X509_STORE_CTX_get_error(context)
            switch error {
            case X509_V_ERR_CERT_HAS_EXPIRED: return .failure(.expired)
            case X509_V_ERR_CERT_NOT_YET_VALID: return .failure(.notYetValid)
            default: return .failure(.untrusted(String(cString: X509_verify_cert_error_string(Int(error)))))
            }
        }
        guard let bundleID = Self.subjectUID(of: certificate) else { return .failure(.noBundleID) }
        var environments: Set<APNsProviderCertificate.Environment> = []
        for environment in APNsProviderCertificate.Environment.allCases where Self.extensionData(certificate, environment.extensionOID) != nil {
            environments.insert(environment)
        }
        let topics = Self.extensionData(certificate, APNsProviderCertificate.topicsExtensionOID).map(DER.topUTF8Strings) ?? []
        return .success(APNsProviderCertificate(bundleID: bundleID, topics: topics, environments: environments))
    }

    static func subjectUID(of certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_userId, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let value = X509_NAME_ENTRY_get_data(entry),
              let bytes = ASN1_STRING_get0_data(value) else { return nil }
        let text = String(decoding: UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(value))), as: UTF8.self)
        return text.isEmpty ? nil : text
    }

    static func extensionData(_ certificate: OpaquePointer, _ oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(certificate, object, -1)
        guard index >= 0, let found = X509_get_ext(certificate, index), let data = X509_EXTENSION_get_data(found) else { return nil }
        guard let bytes = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
    }
}

/// Test provider certificates shaped like Apple's, issued by a test authority, for
/// `pushproof credentials` and tests.
public enum ProviderCertificateIssuer {
    /// A self-signed authority that can issue provider certificates (CA:TRUE, keyCertSign).
    public static func makeAuthority(commonName: String = "pushproof test push CA",
                                     validDays: Int = 3650) throws(CryptoError) -> (certificatePEM: String, privateKeyPEM: String) {
        let key = try ECP256PrivateKey.generate()
        let certificate = try build(subject: [("CN", commonName)], key: key, issuer: nil, validDays: validDays, notBeforeSeconds: -300,
                                    extensions: [(NID_basic_constraints, "critical,CA:TRUE"),
                                                 (NID_key_usage, "critical,keyCertSign,cRLSign"),
                                                 (NID_subject_key_identifier, "hash")],
                                    customExtensions: [])
        defer { X509_free(certificate) }
        return (try PEM.write("certificate") { PEM_write_bio_X509($0, certificate) }, try key.pkcs8PEM)
    }

    /// A provider certificate for `bundleID` (subject UID; CN "Apple Push Services: <id>" as
    /// Apple's universal certificates read), for `environments`, listing `topics` when given,
    /// signed by the authority. `validFromSeconds`/`validDays` allow expired or future ones.
    public static func issue(bundleID: String, topics: [String] = [],
                             environments: Set<APNsProviderCertificate.Environment> = [.development, .production],
                             authorityCertificatePEM: String, authorityKeyPEM: String,
                             validFromSeconds: Int = -300, validDays: Int = 365) throws(CryptoError) -> (certificatePEM: String, privateKeyPEM: String) {
        guard !bundleID.isEmpty, bundleID.utf8.count <= 200 else {
            throw .certificateGenerationFailed("a bundle id is 1 to 200 bytes")
        }
        let authorityKey = try ECP256PrivateKey(pem: authorityKeyPEM)
        OpenSSLErrorQueue.clear()
        guard let authority = PEM.withReadBIO(authorityCertificatePEM, { PEM_read_bio_X509($0, nil, nil, nil) }) else {
            throw .invalidPEM(expected: "certificate", openSSL: OpenSSLErrorQueue.drain())
        }
        defer { X509_free(authority) }
        var custom: [(oid: String, der: [UInt8])] = environments.sorted { $0.rawValue < $1.rawValue }.map { ($0.extensionOID, DER.null) }
        if !topics.isEmpty { custom.append((APNsProviderCertificate.topicsExtensionOID, DER.topics(topics))) }
        let key = try ECP256PrivateKey.generate()
        let certificate = try build(subject: [("UID", bundleID), ("CN", "Apple Push Services: " + bundleID), ("O", "pushproof test")],
                                    key: key, issuer: (authority, authorityKey), validDays: validDays,
                                    notBeforeSeconds: validFromSeconds,
                                    extensions: [(NID_basic_constraints, "critical,CA:FALSE"),
                                                 (NID_key_usage, "critical,digitalSignature"),
                                                 (NID_ext_key_usage, "clientAuth"),
                                                 (NID_authority_key_identifier, "keyid")],
                                    customExtensions: custom)
        defer { X509_free(certificate) }
        return (try PEM.write("certificate") { PEM_write_bio_X509($0, certificate) }, try key.pkcs8PEM)
    }

    /// An owned X509, signed by `issuer` (or self-signed).
    private static func build(subject: [(field: String, value: String)], key: ECP256PrivateKey,
                              issuer: (certificate: OpaquePointer, key: ECP256PrivateKey)?, validDays: Int, notBeforeSeconds: Int,
                              extensions: [(nid: Int32, value: String)],
                              customExtensions: [(oid: String, der: [UInt8])]) throws(CryptoError) -> OpaquePointer {
        guard (1 ... 36_500).contains(validDays) else {
            throw .certificateGenerationFailed("validDays must be between 1 and 36500, not \(validDays)")
        }
        OpenSSLErrorQueue.clear()
        func failure(_ step: String) -> CryptoError { .certificateGenerationFailed("\(step): \(OpenSSLErrorQueue.drain())") }
        guard let certificate = X509_new() else { throw failure("X509_new") }
        var handedOver = false
        defer { if !handedOver { X509_free(certificate) } }
        guard X509_set_version(certificate, 2) == 1 else { throw failure("X509_set_version") }
        var serialBytes = SecureRandom.bytes(16)
        serialBytes[0] = serialBytes[0] & 0x7F | 0x40
        guard let serial = BN_bin2bn(serialBytes, Int32(serialBytes.count), nil) else { throw failure("BN_bin2bn") }
        defer { BN_free(serial) }
        guard BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate)) != nil else { throw failure("serial number") }
        guard X509_gmtime_adj(X509_getm_notBefore(certificate), notBeforeSeconds) != nil,
              X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(validDays), notBeforeSeconds, nil) != nil else {
            throw failure("validity")
        }
        guard let name = X509_NAME_new() else { throw failure("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        for (field, value) in subject {
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) == 1 else { throw failure("subject \(field)") }
        }
        guard X509_set_subject_name(certificate, name) == 1,
              X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.certificate) } ?? name) == 1,
              X509_set_pubkey(certificate, key.key) == 1 else {
            throw failure("names and key")
        }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let made = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw failure("extension \(String(cString: OBJ_nid2sn(nid))) = \(value)")
            }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else { throw failure("X509_add_ext") }
        }
        for (oid, der) in customExtensions {
            guard let object = OBJ_txt2obj(oid, 1) else { throw failure("OID \(oid)") }
            defer { ASN1_OBJECT_free(object) }
            guard let data = ASN1_OCTET_STRING_new() else { throw failure("ASN1_OCTET_STRING_new") }
            defer { ASN1_OCTET_STRING_free(data) }
            guard ASN1_OCTET_STRING_set(data, der, Int32(der.count)) == 1,
                  let made = X509_EXTENSION_create_by_OBJ(nil, object, 0, data) else { throw failure("extension \(oid)") }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else { throw failure("X509_add_ext \(oid)") }
        }
        guard X509_sign(certificate, (issuer?.key ?? key).key, FetchedAlgorithms.sha256) > 0 else { throw failure("X509_sign") }
        handedOver = true
        return certificate
    }
}

/// The little DER the provider-certificate extensions need. Hand-written because OpenSSL has
/// no API for an arbitrary SEQUENCE of UTF8Strings short of its ASN.1 template machinery.
enum DER {
    static let null: [UInt8] = [0x05, 0x00]

    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        let count = content.count
        if count < 0x80 {
            out.append(UInt8(count))
        } else {
            var lengthBytes: [UInt8] = []
            var rest = count
            while rest > 0 { lengthBytes.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 }
            out.append(0x80 | UInt8(lengthBytes.count))
            out += lengthBytes
        }
        return out + content
    }

    /// Apple's topics list: SEQUENCE { UTF8String topic, SEQUENCE { UTF8String kind } ... }.
    static func topics(_ topics: [String]) -> [UInt8] {
        var content: [UInt8] = []
        for topic in topics {
            content += element(0x0C, Array(topic.utf8))
            let kind = topic.split(separator: ".").last.map(String.init) ?? topic
            content += element(0x30, element(0x0C, Array(kind.utf8)))
        }
        return element(0x30, content)
    }

    /// The UTF8Strings directly inside a top-level SEQUENCE (nested ones are skipped); empty
    /// for anything else. Lengths are checked against the bytes left, so no input overreads.
    static func topUTF8Strings(_ bytes: [UInt8]) -> [String] {
        guard let (tag, start, end) = header(bytes, at: 0), tag == 0x30 else { return [] }
        var strings: [String] = []
        var index = start
        while index < end, let (innerTag, contentStart, contentEnd) = header(bytes, at: index), contentEnd <= end {
            if innerTag == 0x0C { strings.append(String(decoding: bytes[contentStart..<contentEnd], as: UTF8.self)) }
            index = contentEnd
        }
        return strings
    }

    /// Tag, content start and content end of the element at `index`.
    static func header(_ bytes: [UInt8], at index: Int) -> (tag: UInt8, start: Int, end: Int)? {
        guard index + 1 < bytes.count else { return nil }
        let tag = bytes[index]
        let first = Int(bytes[index + 1])
        var start = index + 2
        var length = first
        if first & 0x80 != 0 {
            let count = first & 0x7F
            guard count >= 1, count <= 4, start + count <= bytes.count else { return nil }
            length = 0
            for byte in bytes[start..<(start + count)] { length = length << 8 | Int(byte) }
            start += count
        }
        guard length <= bytes.count - start else { return nil }
        return (tag, start, start + length)
    }
}
