import Foundation
import JSON
import Testing
@testable import Crypto

@Suite struct GoogleServiceAccountTests {
    @Test func generatedAccountSignsVerifiableAssertions() throws {
        let (json, account) = try GoogleServiceAccount.generate(
            projectID: "demo-project", clientEmail: "sender@demo-project.iam.gserviceaccount.com",
            tokenURI: "https://127.0.0.1:8443/token")
        #expect(account.privateKeyID.count == 40)
        #expect(account.clientID.count == 21)

        let scopes = ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/firebase.messaging"]
        let assertion = try account.assertion(scopes: scopes, audience: account.tokenURI, issuedAt: 1_700_000_000)
        let decoded = try JWT.decode(assertion)
        #expect(decoded.header == ["alg": "RS256", "typ": "JWT", "kid": .string(account.privateKeyID)])
        #expect(decoded.claims["iss"]?.stringValue == "sender@demo-project.iam.gserviceaccount.com")
        #expect(decoded.claims["scope"]?.stringValue == scopes.joined(separator: " "))
        #expect(decoded.claims["aud"]?.stringValue == "https://127.0.0.1:8443/token")
        #expect(decoded.claims["iat"]?.intValue == 1_700_000_000)
        #expect(decoded.claims["exp"]?.intValue == 1_700_003_600)

        // The verifier only has the JSON file, as the mock gateway would.
        let reloaded = try GoogleServiceAccount(json: json)
        #expect(decoded.verifyRS256(key: reloaded.signingKey.publicKey))
        #expect(try !decoded.verifyRS256(key: RSAPrivateKey.generate().publicKey))
    }

    @Test func decodableMatchesTheJSONReader() throws {
        let (json, account) = try GoogleServiceAccount.generate(projectID: "p", clientEmail: "e@p", tokenURI: "https://localhost/token")
        let decoded = try JSONDecoder().decode(GoogleServiceAccount.self, from: Data(json.utf8))
        #expect(decoded.projectID == "p" && decoded.clientEmail == "e@p" && decoded.tokenURI == "https://localhost/token")
        #expect(decoded.type == "service_account")
        #expect(decoded.privateKeyID == account.privateKeyID && decoded.clientID == account.clientID)
        #expect(try decoded.signingKey.publicKey.spkiDER == account.signingKey.publicKey.spkiDER)
        #expect(json.contains(#""private_key":"-----BEGIN PRIVATE KEY-----\n"#))
    }

    @Test func badFilesGiveClearErrors() throws {
        #expect(throws: GoogleServiceAccountError.self) { try GoogleServiceAccount(json: "not json") }
        #expect(throws: GoogleServiceAccountError.missingField("private_key_id")) {
            try GoogleServiceAccount(json: #"{"type":"service_account","project_id":"p"}"#)
        }
        let badKey = #"{"type":"service_account","project_id":"p","private_key_id":"k","private_key":"nope","client_email":"e","client_id":"1","token_uri":"t"}"#
        #expect {
            try GoogleServiceAccount(json: badKey)
        } throws: { error in
            guard let error = error as? GoogleServiceAccountError, case .invalidPrivateKey = error else { return false }
            return true
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(GoogleServiceAccount.self, from: Data(badKey.utf8)) }
    }
}
