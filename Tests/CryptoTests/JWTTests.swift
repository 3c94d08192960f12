import Encoding
import JSON
import Testing
@testable import Crypto

@Suite struct JWTDecodeTests {
    static func encode(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }
    static let header = encode(#"{"alg":"ES256","kid":"ABC123DEFG"}"#)
    static let claims = encode(#"{"iss":"TEAM123456","iat":1700000000}"#)
    static let signature = Base64URL.encode([UInt8](repeating: 7, count: 64))

    @Test func decodesTheParts() throws {
        let compact = "\(Self.header).\(Self.claims).\(Self.signature)"
        let decoded = try JWT.decode(compact)
        #expect(decoded.algorithm == "ES256")
        #expect(decoded.keyID == "ABC123DEFG")
        #expect(decoded.header.keys == ["alg", "kid"])
        #expect(decoded.claims["iss"]?.stringValue == "TEAM123456")
        #expect(decoded.claims["iat"]?.intValue == 1_700_000_000)
        #expect(decoded.signingInput == Array("\(Self.header).\(Self.claims)".utf8))
        #expect(decoded.signature == [UInt8](repeating: 7, count: 64))
    }

    @Test func emptySignatureDecodesButNeverVerifies() throws {
        let decoded = try JWT.decode("\(Self.header).\(Self.claims).")
        #expect(decoded.signature.isEmpty)
        #expect(try !decoded.verifyES256(key: ECP256PrivateKey.generate().publicKey, acceptDERSignature: true))
    }

    @Test(arguments: [
        "",
        "abc",
        "\(header).\(claims)",
        "\(header).\(claims).\(signature).extra",
        "\(header).\(claims).\(signature).",
        "....",
    ])
    func structureErrors(compact: String) {
        #expect {
            try JWT.decode(compact)
        } throws: { error in
            guard let error = error as? JWTError, case .malformedStructure = error else { return false }
            return true
        }
    }

    @Test func base64Errors() {
        #expect(throws: JWTError.invalidBase64URL(.header)) { try JWT.decode("a+b.\(Self.claims).\(Self.signature)") }
        #expect(throws: JWTError.invalidBase64URL(.claims)) { try JWT.decode("\(Self.header).\(Self.claims)*.\(Self.signature)") }
        #expect(throws: JWTError.invalidBase64URL(.signature)) { try JWT.decode("\(Self.header).\(Self.claims).abc/def") }
        #expect(throws: JWTError.invalidBase64URL(.header)) { try JWT.decode("A.\(Self.claims).\(Self.signature)") }
    }

    @Test func jsonErrors() {
        let notJSON = Self.encode("{alg: ES256}")
        #expect {
            try JWT.decode("\(notJSON).\(Self.claims).\(Self.signature)")
        } throws: { error in
            guard let error = error as? JWTError, case .invalidJSON(.header, _) = error else { return false }
            return true
        }
        #expect {
            try JWT.decode("\(Self.header)..\(Self.signature)") // empty claims: no JSON at all
        } throws: { error in
            guard let error = error as? JWTError, case .invalidJSON(.claims, _) = error else { return false }
            return true
        }
        let duplicate = Self.encode(#"{"alg":"ES256","alg":"none"}"#)
        #expect {
            try JWT.decode("\(duplicate).\(Self.claims).\(Self.signature)")
        } throws: { error in
            guard let error = error as? JWTError, case .invalidJSON(.header, _) = error else { return false }
            return true
        }
        #expect(throws: Never.self) {
            let lenient = try JWT.decode("\(duplicate).\(Self.claims).\(Self.signature)", duplicateKeys: .lastWins)
            #expect(lenient.algorithm == "none")
        }
    }

    @Test func nonObjectErrors() {
        #expect(throws: JWTError.notAnObject(.header, found: "array")) {
            try JWT.decode("\(Self.encode("[1,2]")).\(Self.claims).\(Self.signature)")
        }
        #expect(throws: JWTError.notAnObject(.claims, found: "string")) {
            try JWT.decode("\(Self.header).\(Self.encode(#""iss""#)).\(Self.signature)")
        }
    }

    @Test func errorsDescribeThemselves() {
        #expect(JWTError.invalidBase64URL(.claims).description.contains("claims"))
        #expect(JWTError.notAnObject(.header, found: "array").description.contains("array"))
    }
}

@Suite struct JWTSignTests {
    @Test func es256RoundTrip() throws {
        let key = try ECP256PrivateKey.generate()
        let token = try JWT.signES256(header: ["kid": "K"], claims: ["sub": "x", "n": 1], key: key)
        let decoded = try JWT.decode(token)
        #expect(decoded.header.keys == ["alg", "kid"])  // alg added first
        #expect(decoded.algorithm == "ES256")
        #expect(decoded.claims == ["sub": "x", "n": 1])
        #expect(decoded.signature.count == 64)
        #expect(decoded.verifyES256(key: key.publicKey))
        #expect(try !decoded.verifyES256(key: ECP256PrivateKey.generate().publicKey))
    }

    @Test func tamperedClaimsFailVerification() throws {
        let key = try ECP256PrivateKey.generate()
        let token = try JWT.signES256(header: [:], claims: ["iss": "TEAM"], key: key)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        let forged = "\(parts[0]).\(Base64URL.encode(Array(#"{"iss":"EVIL"}"#.utf8))).\(parts[2])"
        #expect(try !JWT.decode(forged).verifyES256(key: key.publicKey))
    }

    @Test func algorithmMustMatchTheVerifier() throws {
        let key = try ECP256PrivateKey.generate()
        // Correctly signed with ES256 but labelled otherwise: refused.
        let mislabelled = try JWT.signES256(header: ["alg": "HS256"], claims: [:], key: key)
        #expect(try !JWT.decode(mislabelled).verifyES256(key: key.publicKey))
        let rsa = try RSAPrivateKey.generate()
        let rsToken = try JWT.signRS256(header: ["alg": "ES256"], claims: [:], key: rsa)
        #expect(try !JWT.decode(rsToken).verifyRS256(key: rsa.publicKey))
    }

    @Test func derSignatureAcceptedOnlyWhenAsked() throws {
        let key = try ECP256PrivateKey.generate()
        let token = try JWT.signES256(header: [:], claims: ["iss": "TEAM"], key: key)
        let decoded = try JWT.decode(token)
        let der = try #require(ES256.derSignature(fromRaw: decoded.signature))
        let derToken = String(token[..<token.lastIndex(of: ".")!]) + "." + Base64URL.encode(der)
        #expect(try !JWT.decode(derToken).verifyES256(key: key.publicKey))
        #expect(try JWT.decode(derToken).verifyES256(key: key.publicKey, acceptDERSignature: true))
    }

    @Test func rs256RoundTrip() throws {
        let key = try RSAPrivateKey.generate()
        let token = try JWT.signRS256(header: ["typ": "JWT"], claims: ["aud": "a"], key: key)
        let decoded = try JWT.decode(token)
        #expect(decoded.header == ["alg": "RS256", "typ": "JWT"])
        #expect(decoded.verifyRS256(key: key.publicKey))
        #expect(try !decoded.verifyRS256(key: RSAPrivateKey.generate().publicKey))
    }

    @Test func apnsProviderToken() throws {
        let key = try ECP256PrivateKey.generate()
        let token = try APNsProviderToken.make(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000, key: key)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(Base64URL.decode(parts[0]) == Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))
        #expect(Base64URL.decode(parts[1]) == Array(#"{"iss":"DEF123GHIJ","iat":1700000000}"#.utf8))
        let decoded = try JWT.decode(token)
        #expect(decoded.signature.count == 64)
        #expect(decoded.verifyES256(key: key.publicKey))
    }
}
