import Crypto
import Foundation
import JSON
import PushproofTestSupport
import Testing
@testable import Sender

@Suite struct DeliverySigningTests {
    @Test func apnsProviderTokenIsAnES256JWTFromTheP8File() throws {
        let directory = try TemporaryDirectory()
        let key = try ECP256PrivateKey.generate()
        let path = directory.file("AuthKey_ABC123DEFG.p8")
        try key.pkcs8PEM.write(toFile: path, atomically: true, encoding: .utf8)
        let signingKey = try APNsSigningKey(p8Path: path, keyID: "ABC123DEFG", teamID: "TEAM123456")

        let token = try signingKey.makeProviderToken(issuedAt: 1_700_000_000)
        let decoded = try JWT.decode(token)
        #expect(decoded.algorithm == "ES256")
        #expect(decoded.keyID == "ABC123DEFG")
        #expect(decoded.claims["iss"]?.stringValue == "TEAM123456")
        #expect(decoded.claims["iat"]?.intValue == 1_700_000_000)
        #expect(decoded.verifyES256(key: key.publicKey))
    }

    @Test func serviceAccountAssertionAsksForTheFCMScopes() throws {
        let (_, account) = try GoogleServiceAccount.generate(
            projectID: "demo-project", clientEmail: "sender@demo-project.iam.gserviceaccount.com",
            tokenURI: "https://oauth2.googleapis.com/token")
        let source: any OAuthAssertionSource = account
        #expect(source.projectID == "demo-project")
        #expect(source.tokenURI == "https://oauth2.googleapis.com/token")

        let assertion = try source.makeAssertion(audience: "https://127.0.0.1:8443/token", issuedAt: 1_000, lifetime: 3600)
        let decoded = try JWT.decode(assertion)
        #expect(decoded.algorithm == "RS256")
        #expect(decoded.claims["iss"]?.stringValue == "sender@demo-project.iam.gserviceaccount.com")
        #expect(decoded.claims["aud"]?.stringValue == "https://127.0.0.1:8443/token")
        #expect(decoded.claims["exp"]?.intValue == 4_600)
        let scopes = decoded.claims["scope"]?.stringValue?.split(separator: " ").map(String.init) ?? []
        #expect(scopes.contains("https://www.googleapis.com/auth/firebase.messaging"))
    }

    @Test func credentialsFromFilesNeedKeyAndTeamIDs() throws {
        #expect(throws: CredentialsError.incompleteAPNsKey) {
            _ = try DeliveryCredentials.load(apnsKeyPath: "/nonexistent.p8", apnsKeyID: nil, apnsTeamID: "TEAM123456", serviceAccountPath: nil)
        }
        #expect(throws: (any Error).self) {
            _ = try DeliveryCredentials.load(apnsKeyPath: nil, apnsKeyID: nil, apnsTeamID: nil, serviceAccountPath: "/nonexistent/sa.json")
        }
        let none = try DeliveryCredentials.load(apnsKeyPath: nil, apnsKeyID: nil, apnsTeamID: nil, serviceAccountPath: nil)
        #expect(none.apns == nil && none.fcm == nil)
    }

    @Test func connectionsAreSharedPerOrigin() {
        #expect(CurlLoop.origin(of: "http://127.0.0.1:8080/3/device/abc") == "http://127.0.0.1:8080")
        #expect(CurlLoop.origin(of: "http://[::1]:8080/token") == "http://[::1]:8080")
        #expect(CurlLoop.origin(of: "http://gateway") == "http://gateway")
    }

    @Test func formEncodingLeavesNoReservedCharacter() {
        #expect(formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer") == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
        #expect(percentEncodedPathSegment("a/b c") == "a%2Fb%20c")
        #expect(percentEncodedPathSegment("0af3") == "0af3")
        #expect(percentEncodedPathSegment("é~%") == "%C3%A9~%25", "UTF-8 bytes one by one; tilde is unreserved")
        #expect(percentEncodedPathSegment("") == "")
    }
}
