import COpenSSL

/// A self-signed X.509 v3 server certificate for the mock gateway's TLS listener, so clients
/// can trust it with `--cacert` (curl) or the equivalent.
public enum SelfSignedCertificate {
    /// Makes a certificate for a fresh P-256 key (or `key`), signed with ECDSA-SHA256.
    ///
    /// Clients match the host they dialled against the subjectAltName extension, not the common
    /// name (RFC 6125 §6.4.4; RFC 2818 §3.1), so every name goes there: IP literals as iPAddress
    /// entries (an IP in a dNSName entry never matches), everything else as dNSName. The
    /// certificate is a leaf (basicConstraints CA:FALSE) with a random positive 127-bit serial
    /// (RFC 5280 §4.1.2.2), valid from five minutes ago (clock skew) for `validDays` days. It
    /// carries no keyUsage: OpenSSL checks keyCertSign on a self-issued trust anchor, and a leaf
    /// must not assert it.
    public static func generate(commonName: String = "pushproof",
                                subjectAltNames: [String] = ["localhost", "127.0.0.1", "::1"],
                                validDays: Int = 365,
                                key: ECP256PrivateKey? = nil) throws(CryptoError) -> (certificatePEM: String, privateKeyPEM: String) {
        guard !commonName.isEmpty, commonName.utf8.count <= 64 else {
            throw .certificateGenerationFailed("common name must be 1 to 64 bytes (RFC 5280 ub-common-name)")
        }
        guard (1 ... 36_500).contains(validDays) else {
            throw .certificateGenerationFailed("validDays must be between 1 and 36500, not \(validDays)")
        }
        let altNames = try subjectAltNameValue(subjectAltNames)
        let signingKey: ECP256PrivateKey
        if let key { signingKey = key } else { signingKey = try ECP256PrivateKey.generate() }

        OpenSSLErrorQueue.clear()
        func failure(_ step: String) -> CryptoError { .certificateGenerationFailed("\(step): \(OpenSSLErrorQueue.drain())") }
        guard let certificate = X509_new() else { throw failure("X509_new") }
        defer { X509_free(certificate) }

        guard X509_set_version(certificate, 2) == 1 else { throw failure("X509_set_version") } // 2 means v3
        var serialBytes = SecureRandom.bytes(16)
        serialBytes[0] = serialBytes[0] & 0x7F | 0x40 // positive, and never shorter than 16 bytes
        guard let serial = BN_bin2bn(serialBytes, Int32(serialBytes.count), nil) else { throw failure("BN_bin2bn") }
        defer { BN_free(serial) }
        guard BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate)) != nil else { throw failure("serial number") }

        guard X509_gmtime_adj(X509_getm_notBefore(certificate), -300) != nil,
              X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(validDays), 0, nil) != nil else {
            throw failure("validity")
        }

        guard let name = X509_NAME_new() else { throw failure("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
              X509_set_subject_name(certificate, name) == 1,
              X509_set_issuer_name(certificate, name) == 1 else {
            throw failure("subject name")
        }
        guard X509_set_pubkey(certificate, signingKey.key) == 1 else { throw failure("X509_set_pubkey") }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        var extensions: [(nid: Int32, value: String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
        ]
        if let altNames { extensions.append((NID_subject_alt_name, altNames)) }
        for (nid, value) in extensions {
            guard let extensionValue = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw failure("extension \(String(cString: OBJ_nid2sn(nid))) = \(value)")
            }
            defer { X509_EXTENSION_free(extensionValue) }
            guard X509_add_ext(certificate, extensionValue, -1) == 1 else { throw failure("X509_add_ext") }
        }

        guard X509_sign(certificate, signingKey.key, FetchedAlgorithms.sha256) > 0 else { throw failure("X509_sign") }
        let certificatePEM = try PEM.write("certificate") { PEM_write_bio_X509($0, certificate) }
        OpenSSLErrorQueue.clear()
        return (certificatePEM, try signingKey.pkcs8PEM)
    }

    /// The subjectAltName in OpenSSL's configuration syntax ("DNS:localhost,IP:127.0.0.1"),
    /// after checking each entry so nothing can inject another entry or option; `nil` if empty.
    static func subjectAltNameValue(_ names: [String]) throws(CryptoError) -> String? {
        guard !names.isEmpty else { return nil }
        var entries: [String] = []
        for name in names {
            if isIPAddress(name) {
                entries.append("IP:" + name)
            } else if isDNSName(name) {
                entries.append("DNS:" + name)
            } else {
                throw .invalidSubjectAltName(name)
            }
        }
        return entries.joined(separator: ",")
    }

    static func isIPAddress(_ text: String) -> Bool {
        guard let address = a2i_IPADDRESS(text) else {
            OpenSSLErrorQueue.clear()
            return false
        }
        ASN1_OCTET_STRING_free(address)
        return true
    }

    /// Letters, digits, '-', '.' and a leading "*." wildcard label (RFC 1123 host names; RFC
    /// 6125 §6.4.3 wildcards). Nothing OpenSSL's configuration parser would read as syntax.
    static func isDNSName(_ text: String) -> Bool {
        var name = Substring(text)
        if name.hasPrefix("*.") { name = name.dropFirst(2) }
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a") ... UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A") ... UInt8(ascii: "Z")).contains(byte)
                        || (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                }
        }
    }
}
