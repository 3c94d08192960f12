// What real clients hit in the gateway's auth (issue 8): `iat` written as a float (apns2) or a
// string of digits (kalyke-apns, older APNSwift); the gateway's own explanation of a refused
// credential (`detail`, recorded, never sent) and its fixed kind (a metric label); zero config
// answering a push with no credential 403 MissingProviderToken while any client certificate
// authenticates. In process: `handle` called directly, no socket.
import Clocks
import Crypto
import Foundation
import HTTPCore
import JSON
import Testing
@testable import MockGateway

@Suite struct NumericDateTests {
    @Test func integersFractionsAndDigitStringsAreRead() {
        #expect(NumericDate(.number(1_793_952_000), acceptingStrings: false) == .integer(1_793_952_000))
        #expect(NumericDate(.number(1_793_952_000.75), acceptingStrings: false) == .fraction(1_793_952_000, 1_793_952_000.75))
        #expect(NumericDate(.number(-1.5), acceptingStrings: false)?.seconds == -2, "rounded down, not toward zero")
        #expect(NumericDate(.string("1793952000"), acceptingStrings: true) == .digitString(1_793_952_000, "1793952000"))
        #expect(NumericDate(.string("1793952000.25"), acceptingStrings: true)?.seconds == 1_793_952_000)
    }

    @Test(arguments: [JSONValue.string("1793952000"), .string(""), .string("17939a"), .string("-5"), .string("1."), .string(".5"),
                      .string(String(repeating: "9", count: 30)), .bool(true), .null, .array([]), .number(1e300)])
    func anythingElseIsNotANumericDate(value: JSONValue) {
        // Strings only where they are accepted, and then only digits.
        if case .string("1793952000") = value {
            #expect(NumericDate(value, acceptingStrings: false) == nil)
        } else {
            #expect(NumericDate(value, acceptingStrings: true) == nil)
        }
    }

    @Test func onlyNonIntegersAreNoted() {
        #expect(NumericDate.integer(5).warning(claim: "iat", acceptedBy: "Apple") == nil)
        let fraction = NumericDate.fraction(5, 5.5).warning(claim: "iat", acceptedBy: "Apple")
        #expect(fraction?.text.contains("not an integer") == true)
        // What RFC 7519 allows is informational; what it does not, a warning: kept apart by type.
        #expect(fraction?.kind == .informational)
        let string = NumericDate.digitString(5, "5").warning(claim: "iat", acceptedBy: "Apple")
        #expect(string?.text.contains("RFC 7519 §2") == true)
        #expect(string?.kind == .warning)
    }
}

@Suite struct ProviderTokenIssuedAtTests {
    /// An ES256 provider token whose `iat` is exactly `issuedAt`, as a client library writes it.
    static func token(issuedAt: JSONValue, key: ECP256PrivateKey = TestKeys.apnsKey) throws -> String {
        try JWT.signES256(header: ["alg": "ES256", "kid": .string(keyID)], claims: ["iss": .string(teamID), "iat": issuedAt], key: key)
    }

    static func warnings(_ h: Harness) -> [String] {
        h.observer.last?.verdict?.gatewayWarnings ?? []
    }

    /// The informational notes: what the RFCs allow.
    static func notes(_ h: Harness) -> [String] {
        h.observer.last?.verdict?.gatewayNotes ?? []
    }

    @Test func aFloatIatIsAcceptedWithANote() throws {
        let h = try Harness(try authConfiguration())
        let now = Double(h.clock.nowSeconds)
        let token = try Self.token(issuedAt: .number(now + 0.123456))
        let response = h.push(headers: ["authorization": "bearer \(token)"])
        #expect(response.status == 200)
        // RFC 7519 allows it: an informational note, no warning.
        #expect(Self.notes(h).contains { $0.hasPrefix("iat is \(now + 0.123456), not an integer") })
        #expect(Self.warnings(h).isEmpty)
        // The note comes with every push that carries the token, the connection's cached one too.
        #expect(h.push(headers: ["authorization": "bearer \(token)"]).status == 200)
        #expect(Self.notes(h).count == 1)
    }

    @Test func aStringIatIsAcceptedWithANoteThatItBreaksRFC7519() throws {
        let h = try Harness(try authConfiguration())
        let response = h.push(headers: ["authorization": "bearer \(try Self.token(issuedAt: .string(String(h.clock.nowSeconds))))"])
        #expect(response.status == 200)
        #expect(Self.warnings(h).contains { $0.contains("not a JSON number") && $0.contains("RFC 7519 §2") })
    }

    @Test func aStringIatIsStillJudgedForAge() throws {
        let h = try Harness(try authConfiguration())
        let old = String(h.clock.nowSeconds - 4000)
        let response = h.push(headers: ["authorization": "bearer \(try Self.token(issuedAt: .string(old)))"])
        #expect(reason(response) == "ExpiredProviderToken")
        #expect(h.observer.last?.detail == "iat is 4000 s old (a provider token is valid for 3600 s)")
    }

    /// Apple takes a token issued within the last hour: one issued a day ahead is refused (it
    /// would be good for 25 hours), a few seconds of clock skew are not.
    @Test func anIatInTheFutureIsRefusedBeyondAMinuteOfSkew() throws {
        let h = try Harness(try authConfiguration())
        let ahead = try Self.token(issuedAt: .number(Double(h.clock.nowSeconds + 86_400)))
        let response = h.push(headers: ["authorization": "bearer \(ahead)"])
        #expect(response.status == 403)
        #expect(reason(response) == "InvalidProviderToken")
        #expect(h.observer.last?.detail?.hasPrefix("iat is 86400 s in the future") == true, "\(h.observer.last?.detail ?? "")")
        let skewed = try Self.token(issuedAt: .number(Double(h.clock.nowSeconds + 30)))
        let fresh = try Harness(try authConfiguration())
        #expect(fresh.push(headers: ["authorization": "bearer \(skewed)"]).status == 200)
    }

    @Test func anIntegerIatHasNoNote() throws {
        let h = try Harness(try authConfiguration())
        #expect(h.push(headers: ["authorization": "bearer \(h.providerToken())"]).status == 200)
        #expect(Self.warnings(h).isEmpty)
    }
}

@Suite struct AuthDetailTests {
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var authorization: String?
        var reason: String
        var kind: AuthFailureKind
        var detail: String
        var description: String { name }
    }

    static let now: Int64 = 1_793_952_000

    static func signed(_ header: JSONObject, _ claims: JSONObject, key: ECP256PrivateKey = TestKeys.apnsKey) -> String {
        "bearer " + (try! JWT.signES256(header: header, claims: claims, key: key))
    }

    static let cases: [Case] = [
        Case(name: "no header", authorization: nil, reason: "MissingProviderToken", kind: .missing,
             detail: "no authorization header and no client certificate on the connection"),
        Case(name: "bearer alone", authorization: "bearer", reason: "MissingProviderToken", kind: .missing,
             detail: "the authorization header holds no token after bearer"),
        Case(name: "basic", authorization: "Basic abc", reason: "InvalidProviderToken", kind: .malformed,
             detail: #"the authorization header is not "bearer <token>""#),
        Case(name: "not a JWT", authorization: "bearer abc", reason: "InvalidProviderToken", kind: .malformed,
             detail: "the token is not a JWT (malformed JWT: no '.' separators (expected header.claims.signature))"),
        Case(name: "HS256", authorization: signed(["alg": "HS256", "kid": .string(keyID)], ["iss": .string(teamID), "iat": .number(Double(now))]),
             reason: "InvalidProviderToken", kind: .wrongAlgorithm, detail: "alg is HS256, not ES256"),
        Case(name: "unknown kid", authorization: signed(["kid": "XYZ"], ["iss": .string(teamID), "iat": .number(Double(now))]),
             reason: "InvalidProviderToken", kind: .unknownKey, detail: "kid XYZ is not configured (apns.keys)"),
        Case(name: "forged", authorization: signed(["kid": .string(keyID)], ["iss": .string(teamID), "iat": .number(Double(now))], key: TestKeys.forgedKey),
             reason: "InvalidProviderToken", kind: .badSignature, detail: "the signature does not verify with key \(keyID)"),
        Case(name: "another team's iss", authorization: signed(["kid": .string(keyID)], ["iss": "TEAMX", "iat": .number(Double(now))]),
             reason: "InvalidProviderToken", kind: .wrongTeam, detail: "iss TEAMX is not the team of key \(keyID) (\(teamID))"),
        Case(name: "no iat", authorization: signed(["kid": .string(keyID)], ["iss": .string(teamID)]),
             reason: "InvalidProviderToken", kind: .malformed, detail: "the token has no iat claim"),
        Case(name: "boolean iat", authorization: signed(["kid": .string(keyID)], ["iss": .string(teamID), "iat": true]),
             reason: "InvalidProviderToken", kind: .malformed, detail: "iat is a JSON boolean that is not a NumericDate (seconds since the epoch)"),
        Case(name: "old", authorization: signed(["kid": .string(keyID)], ["iss": .string(teamID), "iat": .number(Double(now - 4000))]),
             reason: "ExpiredProviderToken", kind: .expired, detail: "iat is 4000 s old (a provider token is valid for 3600 s)"),
    ]

    @Test(arguments: cases)
    func eachRefusalSaysWhy(c: Case) throws {
        let h = try Harness(try authConfiguration(), clock: ManualClock(epochSeconds: UInt64(Self.now)))
        let response = h.push(headers: ["authorization": c.authorization])
        #expect(reason(response) == c.reason)
        let exchange = try #require(h.observer.last)
        #expect(exchange.reason == c.reason)
        #expect(exchange.authFailure == c.kind)
        #expect(exchange.detail == c.detail)
        // Apple's answer stays Apple's: the detail is not on the wire.
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason":"\#(c.reason)"}"#)
    }

    @Test func aBoundConnectionAndAFastRotationSayWhy() throws {
        let h = try Harness(try authConfiguration())
        #expect(h.push(headers: ["authorization": "bearer \(h.providerToken())"]).status == 200)
        // Another team's valid token on a connection bound to the first team.
        let other = h.providerToken(key: TestKeys.otherTeamKey, keyID: otherKeyID, team: otherTeamID)
        #expect(reason(h.push(headers: ["authorization": "bearer \(other)"])) == "UnrelatedKeyIdInToken")
        #expect(h.observer.last?.authFailure == .wrongTeam)
        #expect(h.observer.last?.detail == "the connection is bound to team \(teamID); this token is team \(otherTeamID)'s (key \(otherKeyID))")
        // A new token 60 s after the first one.
        h.clock.advance(seconds: 60)
        #expect(reason(h.push(headers: ["authorization": "bearer \(h.providerToken())"])) == "TooManyProviderTokenUpdates")
        #expect(h.observer.last?.authFailure == .tooManyUpdates)
        #expect(h.observer.last?.detail?.hasPrefix("team \(teamID) switched to a new token 60 s after its previous new one") == true)
    }

    @Test func anotherEnvironmentsKeySaysWhich() throws {
        var configuration = try authConfiguration()
        configuration.apns.keys[0].environment = .development
        let h = try Harness(configuration)
        #expect(reason(h.push(headers: ["authorization": "bearer \(h.providerToken())"])) == "BadEnvironmentKeyIdInToken")
        #expect(h.observer.last?.authFailure == .wrongEnvironment)
        #expect(h.observer.last?.detail == "key \(keyID) is for development; the gateway is production")
    }

    @Test func fcmAccessTokensSayWhy() throws {
        let h = try Harness(try OAuthTests.configuration())
        h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Bearer ya29.from-google")
        #expect(h.observer.last?.reason == "UNAUTHENTICATED")
        #expect(h.observer.last?.authFailure == .notIssued)
        #expect(h.observer.last?.detail?.hasPrefix("the access token was not issued by this gateway") == true)

        let granted = OAuthTests.token(h, body: OAuthTests.form(try OAuthTests.assertion(iat: Int(h.clock.nowSeconds))))
        let accessToken = try #require(json(granted)?["access_token"]?.stringValue)
        h.clock.advance(seconds: 3700)
        h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Bearer \(accessToken)")
        #expect(h.observer.last?.authFailure == .expired)
        #expect(h.observer.last?.detail == "the access token expired 100 s ago (this gateway issues them for 3600 s)")
    }

    @Test func oauthGrantsSayWhatWasWrongWithTheAssertion() throws {
        let h = try Harness(try OAuthTests.configuration())
        let now = Int(h.clock.nowSeconds)
        let cases: [(String, AuthFailureKind, String)] = [
            (try OAuthTests.assertion(key: TestKeys.forgedRSAKey, iat: now), .badSignature, "the signature does not verify with the key of \(serviceAccountEmail)"),
            (try OAuthTests.assertion(iss: "nobody@x.iam.gserviceaccount.com", iat: now), .unknownKey,
             "iss nobody@x.iam.gserviceaccount.com is not a configured service account (fcm.service_accounts)"),
            (try OAuthTests.assertion(iat: now - 7200), .expired, "exp was 3600 s ago"),
            (try OAuthTests.assertion(iat: now + 3000), .issuedInFuture, "iat is 3000 s in the future (300 s of clock skew are allowed)"),
            (try OAuthTests.assertion(iat: now, lifetime: 7200), .tooLongLived, "exp is 7200 s after iat (at most 3600 s)"),
        ]
        for (assertion, kind, detail) in cases {
            let response = OAuthTests.token(h, body: OAuthTests.form(assertion))
            #expect(json(response)?["error"] == "invalid_grant")
            #expect(h.observer.last?.authFailure == kind)
            #expect(h.observer.last?.detail == detail)
        }
    }

    /// google-auth writes integers; RFC 7519 allows a float, which passes with a note. Google's
    /// token endpoint refuses a string, and so does the gateway.
    @Test func oauthAcceptsAFloatIatAndRefusesAString() throws {
        let h = try Harness(try OAuthTests.configuration())
        let now = Double(h.clock.nowSeconds)
        func assertion(iat: JSONValue, exp: JSONValue) throws -> String {
            try JWT.signRS256(header: ["alg": "RS256", "kid": .string(serviceAccountKeyID)],
                              claims: ["iss": .string(serviceAccountEmail), "scope": "https://www.googleapis.com/auth/firebase.messaging",
                                       "aud": "https://oauth2.googleapis.com/token", "iat": iat, "exp": exp],
                              key: TestKeys.serviceAccountKey)
        }
        let float = OAuthTests.token(h, body: OAuthTests.form(try assertion(iat: .number(now + 0.5), exp: .number(now + 3600.5))))
        #expect(float.status == 200)
        let notes = h.observer.last?.verdict?.gatewayNotes ?? []
        #expect(notes.filter { $0.contains("not an integer") }.count == 2, "\(notes)")
        #expect(h.observer.last?.verdict?.gatewayWarnings.isEmpty == true)

        let string = OAuthTests.token(h, body: OAuthTests.form(try assertion(iat: .string(String(Int(now))), exp: .number(now + 3600))))
        #expect(json(string)?["error"] == "invalid_grant")
        #expect(json(string)?["error_description"]?.stringValue == OAuthService.shortLivedMessage, "Google's text on the wire")
        #expect(h.observer.last?.authFailure == .malformed)
        #expect(h.observer.last?.detail == "iat is a JSON string, not a NumericDate (a JSON number of seconds since the epoch)")
    }

    @Test func metricsCountRefusalsByRouteReasonAndKind() throws {
        let metrics = GatewayMetrics()
        let clock = ManualClock()
        let gateway = try MockGateway(configuration: try authConfiguration(), observers: [metrics], clock: clock.wallClock)
        let connection = ConnectionContext(id: 1, version: .http2, isTLS: true, peer: "127.0.0.1:1")
        gateway.connectionOpened(connection)
        let forged = Self.signed(["kid": .string(keyID)], ["iss": .string(teamID), "iat": .number(Double(clock.nowSeconds))], key: TestKeys.forgedKey)
        for authorization in [forged, forged, nil] {
            var headers = [HTTPHeader("apns-topic", "com.example.app")]
            if let authorization { headers.append(HTTPHeader("authorization", authorization)) }
            _ = gateway.handle(HTTPRequest(method: "POST", path: "/3/device/\(deviceToken)", headers: HTTPFields(headers), body: Array(#"{"aps":{}}"#.utf8)),
                               on: connection)
        }
        let text = metrics.render()
        #expect(text.contains(#"pushproof_auth_failures_total{route="apns",reason="InvalidProviderToken",detail="bad_signature"} 2"#))
        #expect(text.contains(#"pushproof_auth_failures_total{route="apns",reason="MissingProviderToken",detail="missing"} 1"#))
        #expect(text.contains("# TYPE pushproof_auth_failures_total counter"))
        // Every label value is a fixed identifier, never free text.
        for kind in AuthFailureKind.allCases {
            #expect(kind.rawValue.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "_") }, "\(kind)")
        }
    }
}

@Suite struct ZeroConfigAuthTests {
    static let authority = try! ProviderCertificateIssuer.makeAuthority(commonName: "some CA nobody configured")

    @Test func aPushWithNoCredentialIsMissingProviderToken() throws {
        let h = try Harness()
        let response = h.push(headers: ["authorization": nil])
        #expect(response.status == 403)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason":"MissingProviderToken"}"#)
        #expect(h.observer.last?.detail == "no authorization header and no client certificate on the connection")
        #expect(h.observer.last?.authFailure == .missing)
        // Any bearer token passes, as before.
        #expect(h.push(headers: ["authorization": "bearer anything"]).status == 200)
        #expect(h.observer.last?.detail == nil)
        #expect(h.gateway.initialMaxConcurrentStreams() == 1000, "zero config starts connections at the configured limit")
    }

    @Test func anyClientCertificateAuthenticatesAndIsNamed() throws {
        let issued = try ProviderCertificateIssuer.issue(bundleID: "com.example.app", authorityCertificatePEM: Self.authority.certificatePEM,
                                                         authorityKeyPEM: Self.authority.privateKeyPEM)
        let h = try Harness()
        h.connection.clientCertificateDER = try CertificateAuthTests.der(issued.certificatePEM)
        #expect(h.push(headers: ["authorization": nil]).status == 200)
        let subject = "UID=com.example.app, CN=Apple Push Services: com.example.app, O=pushproof test"
        #expect(h.observer.last?.clientCertificateSubject == subject)
        // Without apns-topic it pushes to its subject; its bundle still bounds its topics.
        #expect(h.push(headers: ["authorization": nil, "apns-topic": nil]).status == 200)
        let other = h.push(headers: ["authorization": nil, "apns-topic": "com.example.other"])
        #expect(reason(other) == "TopicDisallowed")
        #expect(h.observer.last?.authFailure == .certificateTopic)
        #expect(h.observer.last?.clientCertificateSubject == subject)
    }

    @Test func aCertificateThatIsNotAPushCertificateAuthenticatesToo() throws {
        let plain = try SelfSignedCertificate.generate(commonName: "some client", subjectAltNames: ["localhost"])
        let h = try Harness()
        h.connection.clientCertificateDER = try CertificateAuthTests.der(plain.certificatePEM)
        #expect(h.push(headers: ["authorization": nil, "apns-topic": "com.anything"]).status == 200)
        #expect(h.observer.last?.clientCertificateSubject == "CN=some client")
    }

    @Test func theRecordLineCarriesDetailAndCertificateSubject() throws {
        var exchange = RecorderTests.exchange()
        exchange.detail = "kid XYZ is not configured (apns.keys)"
        exchange.clientCertificateSubject = "UID=com.example.app, CN=x"
        let path = RecorderTests.temporaryPath("detail.jsonl")
        defer { unlink(path) }
        let recorder = Recorder(file: try RecordFile(path: path))
        recorder.observe(exchange)
        recorder.file?.close()
        let line = try #require(try RecorderTests.lines(of: path).first)
        #expect(line["response"]?["detail"] == "kid XYZ is not configured (apns.keys)")
        #expect(line["client_certificate"] == ["subject": "UID=com.example.app, CN=x"])
        // Without them, neither key is written.
        let plainPath = RecorderTests.temporaryPath("plain.jsonl")
        defer { unlink(plainPath) }
        let plainRecorder = Recorder(file: try RecordFile(path: plainPath))
        plainRecorder.observe(RecorderTests.exchange())
        plainRecorder.file?.close()
        let plain = try #require(try RecorderTests.lines(of: plainPath).first)
        #expect(plain["response"]?["detail"] == nil)
        #expect(plain["client_certificate"] == nil)
    }
}
