// Real credentials for the two gateways, on the Crypto module's signing.
import Crypto
import Foundation

/// An APNs token-based authentication key: the .p8 file's P-256 key, its 10-character key ID
/// and the team ID. Signs `{"alg":"ES256","kid":keyID}` / `{"iss":teamID,"iat":...}`
/// (apns.md, "Token-based authentication"); the deliverer caches the result.
public struct APNsSigningKey: ProviderTokenSource {
    public let keyID: String
    public let teamID: String
    private let key: ECP256PrivateKey

    public init(key: ECP256PrivateKey, keyID: String, teamID: String) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Reads the .p8 (PKCS#8 PEM) file Apple hands out.
    public init(p8Path: String, keyID: String, teamID: String) throws {
        let pem = try String(contentsOfFile: p8Path, encoding: .utf8)
        self.init(key: try ECP256PrivateKey(pem: pem), keyID: keyID, teamID: teamID)
    }

    public func makeProviderToken(issuedAt: Int) throws -> String {
        try APNsProviderToken.make(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: key)
    }

    /// SHA-256 of the team, the key id and the public key: the same .p8 in any process.
    public var sharingIdentity: String? {
        guard let publicKey = try? key.publicKey.spkiDER else { return nil }
        return String(SHA256.hexDigest(Array("\(teamID)\n\(keyID)\n".utf8) + publicKey).prefix(32))
    }
}

/// A Firebase service account signs the JWT-bearer assertion for the FCM scopes.
extension GoogleServiceAccount: OAuthAssertionSource {
    public func makeAssertion(audience: String, issuedAt: Int, lifetime: Int) throws -> String {
        try assertion(scopes: fcmOAuthScopes, audience: audience, issuedAt: issuedAt, lifetime: lifetime)
    }
}

extension DeliveryCredentials {
    /// Credentials from files, each gateway optional: an APNs .p8 key with its key and team
    /// IDs, and a service-account JSON file. A gateway left out runs dry.
    public static func load(apnsKeyPath: String?, apnsKeyID: String?, apnsTeamID: String?, serviceAccountPath: String?) throws -> DeliveryCredentials {
        var credentials = DeliveryCredentials()
        if let apnsKeyPath {
            guard let apnsKeyID, let apnsTeamID else { throw CredentialsError.incompleteAPNsKey }
            credentials.apns = try APNsSigningKey(p8Path: apnsKeyPath, keyID: apnsKeyID, teamID: apnsTeamID)
        }
        if let serviceAccountPath {
            let json = try String(contentsOfFile: serviceAccountPath, encoding: .utf8)
            credentials.fcm = try GoogleServiceAccount(json: json)
        }
        return credentials
    }
}

public enum CredentialsError: Error, Sendable, Equatable, CustomStringConvertible {
    case incompleteAPNsKey

    public var description: String {
        switch self {
        case .incompleteAPNsKey: "an APNs .p8 key needs its key ID and team ID"
        }
    }
}
