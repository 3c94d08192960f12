import JSON

/// A Google service account as downloaded from the Cloud console (the JSON key file FCM
/// senders load), with its RSA key parsed once.
///
/// Senders get an OAuth2 access token by posting a signed assertion to `tokenURI` (the JWT
/// bearer grant, RFC 7523); pointing `token_uri` at the mock is how a sender is redirected to it.
public struct GoogleServiceAccount: Sendable, Decodable {
    /// "service_account".
    public let type: String
    public let projectID: String
    /// The `kid` of assertions signed with `signingKey`.
    public let privateKeyID: String
    /// The key as it appears in the file (PKCS#8 PEM).
    public let privateKeyPEM: String
    /// The assertion issuer (`iss`).
    public let clientEmail: String
    public let clientID: String
    /// Where the assertion is posted for an access token.
    public let tokenURI: String
    /// `privateKeyPEM`, parsed.
    public let signingKey: RSAPrivateKey

    private enum CodingKeys: String, CodingKey {
        case type, projectID = "project_id", privateKeyID = "private_key_id", privateKeyPEM = "private_key"
        case clientEmail = "client_email", clientID = "client_id", tokenURI = "token_uri"
    }

    public init(type: String = "service_account", projectID: String, privateKeyID: String, privateKeyPEM: String,
                clientEmail: String, clientID: String, tokenURI: String) throws(CryptoError) {
        self.type = type
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.clientEmail = clientEmail
        self.clientID = clientID
        self.tokenURI = tokenURI
        self.signingKey = try RSAPrivateKey(pem: privateKeyPEM)
    }

    /// Decodes the fields of the key file; an unreadable `private_key` is a `dataCorrupted` error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let privateKeyPEM = try container.decode(String.self, forKey: .privateKeyPEM)
        do {
            try self.init(
                type: container.decode(String.self, forKey: .type),
                projectID: container.decode(String.self, forKey: .projectID),
                privateKeyID: container.decode(String.self, forKey: .privateKeyID),
                privateKeyPEM: privateKeyPEM,
                clientEmail: container.decode(String.self, forKey: .clientEmail),
                clientID: container.decode(String.self, forKey: .clientID),
                tokenURI: container.decode(String.self, forKey: .tokenURI))
        } catch let error as CryptoError {
            throw DecodingError.dataCorruptedError(forKey: .privateKeyPEM, in: container, debugDescription: error.description)
        }
    }

    /// Reads a service-account key file without Foundation.
    public init(json: String) throws(GoogleServiceAccountError) {
        let value: JSONValue
        do { value = try JSONParser.parse(json) } catch { throw .invalidJSON(error) }
        guard let object = value.objectValue else { throw .invalidJSON(JSONError(offset: 0, message: "expected an object, found \(value.typeName)")) }
        func field(_ key: CodingKeys) throws(GoogleServiceAccountError) -> String {
            guard let string = object[key.rawValue]?.stringValue else { throw .missingField(key.rawValue) }
            return string
        }
        let type = try field(.type), projectID = try field(.projectID), privateKeyID = try field(.privateKeyID)
        let privateKeyPEM = try field(.privateKeyPEM), clientEmail = try field(.clientEmail)
        let clientID = try field(.clientID), tokenURI = try field(.tokenURI)
        do {
            try self.init(type: type, projectID: projectID, privateKeyID: privateKeyID, privateKeyPEM: privateKeyPEM,
                          clientEmail: clientEmail, clientID: clientID, tokenURI: tokenURI)
        } catch {
            throw .invalidPrivateKey(error)
        }
    }

    /// A signed OAuth2 assertion for the JWT bearer grant: header
    /// `{"alg":"RS256","typ":"JWT","kid":private_key_id}`, claims `iss` = client_email, `scope`
    /// (space separated), `aud`, `iat`, `exp` = iat + lifetime. Google refuses an `exp` more than
    /// an hour after `iat`; a longer `lifetime` is still signed, so tests can exercise that refusal.
    public func assertion(scopes: [String], audience: String, issuedAt: Int, lifetime: Int = 3600) throws(CryptoError) -> String {
        try JWT.signRS256(
            header: ["alg": "RS256", "typ": "JWT", "kid": .string(privateKeyID)],
            claims: [
                "iss": .string(clientEmail),
                "scope": .string(scopes.joined(separator: " ")),
                "aud": .string(audience),
                "iat": .number(Double(issuedAt)),
                "exp": .number(Double(issuedAt + lifetime)),
            ],
            key: signingKey)
    }

    /// A new service account with a fresh 2048-bit RSA key, as key-file JSON and parsed, for
    /// tests and demos. Key id and client id are random, in the shapes Google uses (40 hex
    /// digits; 21 decimal digits).
    public static func generate(projectID: String, clientEmail: String, tokenURI: String) throws(CryptoError) -> (json: String, account: GoogleServiceAccount) {
        let key = try RSAPrivateKey.generate(bits: 2048)
        let privateKeyID = SecureRandom.bytes(20).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
        let clientID = "1" + SecureRandom.bytes(20).map { String($0 % 10) }.joined()
        let account = try GoogleServiceAccount(
            projectID: projectID, privateKeyID: privateKeyID, privateKeyPEM: key.pkcs8PEM,
            clientEmail: clientEmail, clientID: clientID, tokenURI: tokenURI)
        let json: JSONValue = [
            "type": .string(account.type),
            "project_id": .string(projectID),
            "private_key_id": .string(privateKeyID),
            "private_key": .string(account.privateKeyPEM),
            "client_email": .string(clientEmail),
            "client_id": .string(clientID),
            "token_uri": .string(tokenURI),
        ]
        return (json.serialized(), account)
    }
}

/// Why a service-account key file could not be read.
public enum GoogleServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidJSON(JSONError)
    case missingField(String)
    case invalidPrivateKey(CryptoError)

    public var description: String {
        switch self {
        case .invalidJSON(let error): return "service-account file is not a JSON object: \(error)"
        case .missingField(let name): return "service-account file lacks the string field \"\(name)\""
        case .invalidPrivateKey(let error): return "service-account private_key: \(error)"
        }
    }
}
