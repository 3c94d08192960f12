import Crypto
import HTTPCore
import JSON
import PushModel
import Testing
@testable import MockGateway

let fcmToken = "dGVzdA:APA91bH-valid_token_123"

extension Harness {
    @discardableResult
    func fcm(_ body: String, project: String = "demo-project", authorization: String? = "Bearer ya29.anything",
             method: String = "POST", version: HTTPVersion = .http2) -> HTTPResponse {
        var headers = [HTTPHeader("content-type", "application/json")]
        if let authorization { headers.append(HTTPHeader("authorization", authorization)) }
        return send(method: method, path: "/v1/projects/\(project)/messages:send", headers: headers, body: Array(body.utf8),
                    version: version)
    }

    @discardableResult
    func fcmMessage(_ message: String) -> HTTPResponse { fcm(#"{"message":"# + message + "}") }
}

/// The parts of Google's error body.
struct GoogleErrorBody {
    var code: Int?
    var status: String?
    var message: String?
    var fcmErrorCode: String?
    var fieldViolations: [(field: String, description: String)] = []

    init(_ response: HTTPResponse) {
        let error = json(response)?["error"]
        code = error?["code"]?.intValue
        status = error?["status"]?.stringValue
        message = error?["message"]?.stringValue
        for detail in error?["details"]?.arrayValue ?? [] {
            switch detail["@type"]?.stringValue {
            case "type.googleapis.com/google.firebase.fcm.v1.FcmError": fcmErrorCode = detail["errorCode"]?.stringValue
            case "type.googleapis.com/google.rpc.BadRequest":
                for v in detail["fieldViolations"]?.arrayValue ?? [] {
                    fieldViolations.append((v["field"]?.stringValue ?? "", v["description"]?.stringValue ?? ""))
                }
            default: break
            }
        }
    }
}

@Suite struct FCMTests {
    @Test func successNamesTheMessage() throws {
        let h = try Harness()
        let response = h.fcmMessage(#"{"token":"\#(fcmToken)","data":{"k":"v"},"notification":{"title":"t","body":"b"}}"#)
        #expect(response.status == 200)
        let name = try #require(json(response)?["name"]?.stringValue)
        #expect(name.hasPrefix("projects/demo-project/messages/"))
        #expect(name.count > "projects/demo-project/messages/".count)
        #expect(h.observer.last?.route == .fcm)
        #expect(h.observer.last?.reason == nil)
    }

    @Test func http1IsServedToo() throws {
        let h = try Harness()
        h.newConnection(version: .http1_1)
        #expect(h.fcm(#"{"message":{"topic":"news"}}"#, version: .http1_1).status == 200)
    }

    @Test func validateOnlyAnswersFakeMessageID() throws {
        let h = try Harness()
        for key in ["validate_only", "validateOnly"] {
            let response = h.fcm(#"{"\#(key)":true,"message":{"topic":"news"}}"#)
            #expect(json(response)?["name"] == "projects/demo-project/messages/fake_message_id")
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var message: String
        var status = 400
        var canonical = "INVALID_ARGUMENT"
        var fcmErrorCode: String?
        var messageText: String?
        var field: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "unknown field in message", message: #"{"token":"\#(fcmToken)","priority":"high"}"#,
             messageText: #"Invalid JSON payload received. Unknown name "priority" at 'message': Cannot find field."#, field: "message"),
        Case(name: "unknown field in android", message: #"{"token":"\#(fcmToken)","android":{"prio":"HIGH"}}"#,
             messageText: #"Invalid JSON payload received. Unknown name "prio" at 'message.android': Cannot find field."#,
             field: "message.android"),
        Case(name: "unknown field in android.notification", message: #"{"topic":"a","android":{"notification":{"titel":"x"}}}"#,
             messageText: #"Invalid JSON payload received. Unknown name "titel" at 'message.android.notification': Cannot find field."#),
        Case(name: "number in data", message: #"{"token":"\#(fcmToken)","data":{"a":"x","n":12}}"#,
             messageText: "Invalid value at 'message.data[1].value' (TYPE_STRING), 12", field: "message.data[1].value"),
        Case(name: "bool in data", message: #"{"token":"\#(fcmToken)","data":{"b":true}}"#,
             messageText: "Invalid value at 'message.data[0].value' (TYPE_STRING), true", field: "message.data[0].value"),
        Case(name: "number as title", message: #"{"topic":"a","notification":{"title":5}}"#,
             messageText: "Invalid value at 'message.notification.title' (TYPE_STRING), 5"),
        Case(name: "bad android priority", message: #"{"topic":"a","android":{"priority":"URGENT"}}"#,
             messageText: #"Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), "URGENT""#),
        Case(name: "ttl without s", message: #"{"topic":"a","android":{"ttl":"60"}}"#,
             messageText: #"Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), "60""#),
        Case(name: "ttl with 10 fraction digits", message: #"{"topic":"a","android":{"ttl":"1.0123456789s"}}"#),
        Case(name: "ttl as number", message: #"{"topic":"a","android":{"ttl":60}}"#),
        Case(name: "ttl over 4 weeks", message: #"{"topic":"a","android":{"ttl":"2419201s"}}"#, fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "no target", message: #"{"data":{"a":"b"}}"#, fcmErrorCode: "INVALID_ARGUMENT",
             messageText: "Recipient of the message is not set."),
        Case(name: "token and fid", message: #"{"token":"\#(fcmToken)","fid":"f1"}"#, field: "message"),
        Case(name: "two targets", message: #"{"token":"\#(fcmToken)","topic":"news"}"#, field: "message"),
        Case(name: "reserved key from", message: #"{"topic":"a","data":{"from":"x"}}"#, fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "reserved key message_type", message: #"{"topic":"a","data":{"message_type":"x"}}"#, fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "reserved key google.", message: #"{"topic":"a","data":{"google.sent_time":"x"}}"#, fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "reserved key gcm. in android.data", message: #"{"topic":"a","android":{"data":{"gcm.n.e":"1"}}}"#,
             fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "bad topic name", message: #"{"topic":"news and weather"}"#, fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "token with spaces", message: #"{"token":"not a token"}"#, fcmErrorCode: "INVALID_ARGUMENT",
             messageText: fcmInvalidTokenMessage, field: "message.token"),
        Case(name: "over 4096 bytes", message: #"{"token":"\#(fcmToken)","data":{"k":"\#(String(repeating: "x", count: 4096))"}}"#,
             fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "topic over 2048 bytes", message: #"{"topic":"a","data":{"k":"\#(String(repeating: "x", count: 2048))"}}"#,
             fcmErrorCode: "INVALID_ARGUMENT"),
        Case(name: "message not an object", message: #""hello""#),
    ]

    @Test(arguments: cases)
    func errors(_ c: Case) throws {
        let h = try Harness()
        let response = h.fcmMessage(c.message)
        #expect(response.status == c.status)
        let error = GoogleErrorBody(response)
        #expect(error.code == c.status)
        #expect(error.status == c.canonical)
        #expect(error.fcmErrorCode == c.fcmErrorCode)
        if let text = c.messageText { #expect(error.message == text) }
        if c.fcmErrorCode == nil {
            // a payload error points at the field with a BadRequest detail
            #expect(!error.fieldViolations.isEmpty)
            #expect(error.fieldViolations.first?.description == error.message)
        }
        if let field = c.field { #expect(error.fieldViolations.first?.field == field) }
        #expect(header(response, "content-type")?.hasPrefix("application/json") == true)
        #expect(h.observer.last?.reason == (c.fcmErrorCode ?? c.canonical))
    }

    @Test func sizeLimitBoundaries() throws {
        let h = try Harness()
        // key "k" (1 byte) + value: 4096 total is accepted, 4097 is not
        #expect(h.fcmMessage(#"{"token":"\#(fcmToken)","data":{"k":"\#(String(repeating: "x", count: 4095))"}}"#).status == 200)
        #expect(h.fcmMessage(#"{"token":"\#(fcmToken)","data":{"k":"\#(String(repeating: "x", count: 4096))"}}"#).status == 400)
        #expect(h.fcmMessage(#"{"topic":"a","data":{"k":"\#(String(repeating: "x", count: 2047))"}}"#).status == 200)
    }

    @Test func acceptedShapes() throws {
        let h = try Harness()
        let messages = [
            #"{"topic":"a","android":{"priority":"high","ttl":"3.5s","collapse_key":"c","direct_boot_ok":true}}"#,
            #"{"topic":"a","android":{"priority":"NORMAL","ttl":"2419200s"}}"#,
            #"{"topic":"/topics/news","android":{"ttl":"0s"}}"#,
            #"{"condition":"'a' in topics && 'b' in topics"}"#,
            #"{"fid":"cKq0-installation-id"}"#,
            #"{"token":"\#(fcmToken)","apns":{"headers":{"apns-priority":"10"},"payload":{"aps":{"alert":"x"}}}}"#,
            #"{"token":"\#(fcmToken)","webpush":{"notification":{"title":"x"},"fcm_options":{"link":"https://x"}}}"#,
            #"{"token":"\#(fcmToken)","fcmOptions":{"analyticsLabel":"x"},"android":{"notification":{"channelId":"c","notificationCount":3}}}"#,
            #"{"token":"\#(fcmToken)","android":{"notification":{"light_settings":{"color":{"red":1},"light_on_duration":"1s"}}}}"#,
        ]
        for message in messages {
            let response = h.fcmMessage(message)
            #expect(response.status == 200, "\(message): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    @Test func tokenStates() throws {
        var configuration = GatewayConfiguration()
        configuration.tokens = TokenConfiguration(gone: [("gone_token", nil)], bad: ["bad_token"])
        let h = try Harness(configuration)
        let gone = h.fcmMessage(#"{"token":"gone_token"}"#)
        #expect(gone.status == 404)
        let goneError = GoogleErrorBody(gone)
        #expect(goneError.status == "NOT_FOUND")
        #expect(goneError.message == "Requested entity was not found.")
        #expect(goneError.fcmErrorCode == "UNREGISTERED")
        let bad = h.fcmMessage(#"{"token":"bad_token"}"#)
        let badError = GoogleErrorBody(bad)
        #expect(bad.status == 400)
        #expect(badError.message == fcmInvalidTokenMessage)
        #expect(badError.fcmErrorCode == "INVALID_ARGUMENT")
        #expect(h.observer.last?.reason == "INVALID_ARGUMENT")
        // a dry run reports the token's state too
        let dryRun = h.fcm(#"{"validate_only":true,"message":{"token":"gone_token"}}"#)
        #expect(GoogleErrorBody(dryRun).fcmErrorCode == "UNREGISTERED")
    }

    @Test func projectMustMatchConfiguration() throws {
        var configuration = GatewayConfiguration()
        configuration.fcm.projectID = "demo-project"
        configuration.fcm.projectNumber = "123456"
        let h = try Harness(configuration)
        #expect(h.fcm(#"{"message":{"topic":"a"}}"#).status == 200)
        #expect(h.fcm(#"{"message":{"topic":"a"}}"#, project: "123456").status == 200)
        let other = h.fcm(#"{"message":{"topic":"a"}}"#, project: "someone-else")
        #expect(other.status == 403)
        #expect(GoogleErrorBody(other).status == "PERMISSION_DENIED")
    }

    @Test func bodyErrors() throws {
        let h = try Harness()
        let notJSON = h.fcm("{not json")
        #expect(notJSON.status == 400)
        #expect(GoogleErrorBody(notJSON).message?.hasPrefix("Invalid JSON payload received.") == true)
        let unknownTop = h.fcm(#"{"msg":{}}"#)
        #expect(GoogleErrorBody(unknownTop).message == #"Invalid JSON payload received. Unknown name "msg": Cannot find field."#)
        #expect(h.fcm(#"{"validate_only":"yes","message":{"topic":"a"}}"#).status == 400)
        #expect(h.fcm("{}").status == 400)
    }

    @Test func wrongPathAndMethod() throws {
        let h = try Harness()
        #expect(h.send(path: "/v1/projects/p/messages:sendAll", headers: [], body: []).status == 404)
        #expect(h.fcm(#"{"message":{"topic":"a"}}"#, method: "GET").status == 405)
    }

    @Test func authOffStillNeedsABearerToken() throws {
        let h = try Harness()
        let missing = h.fcm(#"{"message":{"topic":"a"}}"#, authorization: nil)
        #expect(missing.status == 401)
        #expect(GoogleErrorBody(missing).status == "UNAUTHENTICATED")
        #expect(GoogleErrorBody(missing).message == FCMService.missingCredentialMessage)
        #expect(header(missing, "www-authenticate") != nil)
        #expect(h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Basic abc").status == 401)
    }
}

@Suite struct OAuthTests {
    static func configuration(publicOnly: Bool = true) throws -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        let pem = publicOnly ? try TestKeys.serviceAccountKey.publicKey.spkiPEM : try TestKeys.serviceAccountKey.pkcs8PEM
        configuration.fcm = FCMConfiguration(projectID: "demo-project",
                                             serviceAccounts: [.init(clientEmail: serviceAccountEmail, privateKeyID: serviceAccountKeyID, keyPEM: pem)])
        return configuration
    }

    static func assertion(key: RSAPrivateKey = TestKeys.serviceAccountKey, kid: String = serviceAccountKeyID,
                          iss: String = serviceAccountEmail, aud: String = "https://oauth2.googleapis.com/token",
                          scope: String = "https://www.googleapis.com/auth/firebase.messaging https://www.googleapis.com/auth/cloud-platform",
                          iat: Int, lifetime: Int = 3600) throws -> String {
        try JWT.signRS256(header: ["alg": "RS256", "typ": "JWT", "kid": .string(kid)],
                          claims: ["iss": .string(iss), "scope": .string(scope), "aud": .string(aud),
                                   "iat": .number(Double(iat)), "exp": .number(Double(iat + lifetime))],
                          key: key)
    }

    static func form(_ assertion: String, grant: String = "urn:ietf:params:oauth:grant-type:jwt-bearer") -> [UInt8] {
        let encodedGrant = grant.replacingOccurrences(of: ":", with: "%3A")
        return Array("grant_type=\(encodedGrant)&assertion=\(assertion)".utf8)
    }

    @discardableResult
    static func token(_ h: Harness, body: [UInt8]) -> HTTPResponse {
        h.send(path: "/token", headers: [HTTPHeader("content-type", "application/x-www-form-urlencoded")], body: body)
    }

    @Test(arguments: [true, false])
    func goodAssertionGetsATokenThatFCMAccepts(publicOnly: Bool) throws {
        let h = try Harness(try Self.configuration(publicOnly: publicOnly))
        let response = Self.token(h, body: Self.form(try Self.assertion(iat: Int(h.clock.nowSeconds))))
        #expect(response.status == 200)
        let body = try #require(json(response))
        #expect(body["token_type"] == "Bearer")
        #expect(body["expires_in"] == 3600)
        let accessToken = try #require(body["access_token"]?.stringValue)
        #expect(h.observer.last?.route == .oauth)
        #expect(h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Bearer \(accessToken)").status == 200)
        // an access token the gateway never issued
        let forged = h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Bearer ya29.forged")
        #expect(forged.status == 401)
        #expect(GoogleErrorBody(forged).message == FCMService.invalidCredentialMessage)
        #expect(h.observer.last?.reason == "UNAUTHENTICATED")
        // and it expires
        h.clock.advance(seconds: 3600)
        #expect(h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Bearer \(accessToken)").status == 401)
    }

    @Test func audienceOfTheMockItselfIsAccepted() throws {
        let h = try Harness(try Self.configuration())
        let assertion = try Self.assertion(aud: "https://127.0.0.1:8443/token", iat: Int(h.clock.nowSeconds))
        #expect(Self.token(h, body: Self.form(assertion)).status == 200)
    }

    @Test func forgedAndMalformedAssertions() throws {
        let h = try Harness(try Self.configuration())
        let now = Int(h.clock.nowSeconds)
        let cases: [(String, [UInt8], String)] = [
            ("forged signature", Self.form(try Self.assertion(key: TestKeys.forgedRSAKey, iat: now)), "invalid_grant"),
            ("wrong kid", Self.form(try Self.assertion(kid: "other", iat: now)), "invalid_grant"),
            ("unknown account", Self.form(try Self.assertion(iss: "nobody@x.iam.gserviceaccount.com", iat: now)), "invalid_grant"),
            ("wrong audience", Self.form(try Self.assertion(aud: "https://evil.example/token", iat: now)), "invalid_grant"),
            ("lifetime over an hour", Self.form(try Self.assertion(iat: now, lifetime: 7200)), "invalid_grant"),
            ("expired", Self.form(try Self.assertion(iat: now - 7200)), "invalid_grant"),
            ("issued in the future", Self.form(try Self.assertion(iat: now + 3000)), "invalid_grant"),
            ("no scope", Self.form(try Self.assertion(scope: "", iat: now)), "invalid_scope"),
            ("garbage", Self.form("abc"), "invalid_grant"),
            ("wrong grant", Self.form(try Self.assertion(iat: now), grant: "client_credentials"), "unsupported_grant_type"),
            ("no grant", Array("assertion=x".utf8), "invalid_request"),
            ("no assertion", Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer".utf8), "invalid_request"),
        ]
        for (name, body, error) in cases {
            let response = Self.token(h, body: body)
            #expect(response.status == 400, "\(name)")
            #expect(json(response)?["error"]?.stringValue == error, "\(name)")
            #expect(json(response)?["error_description"]?.stringValue?.isEmpty == false)
            #expect(h.observer.last?.reason == error)
        }
    }

    /// Google: an access token sends for its service account's project (from its email), or for
    /// one that granted the account the role (`send_to_projects`); another project is 403
    /// PERMISSION_DENIED, even where the gateway serves every project.
    @Test func anAccessTokenSendsOnlyForItsAccountsProjectOrAGrantedOne() throws {
        for granted in [false, true] {
            var configuration = try Self.configuration()
            configuration.fcm.projectID = nil
            configuration.fcm.serviceAccounts[0].grantedProjects = granted ? ["other-project"] : []
            let h = try Harness(configuration)
            let response = Self.token(h, body: Self.form(try Self.assertion(iat: Int(h.clock.nowSeconds))))
            let accessToken = try #require(json(response)?["access_token"]?.stringValue)
            #expect(h.fcm(#"{"message":{"topic":"a"}}"#, project: "demo-project", authorization: "Bearer \(accessToken)").status == 200)
            let other = h.fcm(#"{"message":{"topic":"a"}}"#, project: "other-project", authorization: "Bearer \(accessToken)")
            if granted {
                #expect(other.status == 200)
            } else {
                #expect(other.status == 403)
                #expect(GoogleErrorBody(other).status == "PERMISSION_DENIED")
                #expect(GoogleErrorBody(other).message?.contains("'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/other-project'") == true)
                #expect(h.observer.last?.detail?.contains("a service account of project demo-project") == true, "\(h.observer.last?.detail ?? "")")
            }
        }
    }

    /// Tokens past their lifetime leave the store as new ones are issued, from the oldest on,
    /// and at most `capacity` live ones are kept: a sender fetching a token per push costs the
    /// gateway a bounded map, not a growing one.
    @Test func theAccessTokenStoreDropsExpiredTokensFirstAndKeepsAtMostItsCapacity() {
        let store = AccessTokenStore(capacity: 1000)
        func issued(expiring at: Int64) -> IssuedAccessToken { IssuedAccessToken(clientEmail: "a", expiresAtSeconds: at, hasMessagingScope: true) }
        for i in 0..<500 { store.insert("old-\(i)", issued(expiring: 100), now: 0) }
        // At 200 the first 500 have expired: each insert drops them from the front.
        for i in 0..<600 { store.insert("new-\(i)", issued(expiring: 10_000), now: 200) }
        #expect(store.count == 600)
        #expect(store.lookup("old-0") == nil && store.lookup("new-0") != nil)
        for i in 600..<5000 { store.insert("new-\(i)", issued(expiring: 10_000), now: 300) }
        #expect(store.count == 1000, "capped")
        #expect(store.lookup("new-3999") == nil && store.lookup("new-4000") != nil && store.lookup("new-4999") != nil, "the oldest go first")
    }

    @Test func tokenWithoutMessagingScopeIsRefusedByFCM() throws {
        let h = try Harness(try Self.configuration())
        let assertion = try Self.assertion(scope: "https://www.googleapis.com/auth/userinfo.email", iat: Int(h.clock.nowSeconds))
        let response = Self.token(h, body: Self.form(assertion))
        let accessToken = try #require(json(response)?["access_token"]?.stringValue)
        let refused = h.fcm(#"{"message":{"topic":"a"}}"#, authorization: "Bearer \(accessToken)")
        #expect(refused.status == 403)
        #expect(GoogleErrorBody(refused).status == "PERMISSION_DENIED")
    }

    @Test func authOffAnyWellFormedAssertionGetsAToken() throws {
        let h = try Harness()
        let assertion = try Self.assertion(key: TestKeys.forgedRSAKey, iat: 0)
        #expect(Self.token(h, body: Self.form(assertion)).status == 200)
        #expect(Self.token(h, body: Self.form("abc")).status == 400)
    }

    @Test func formDecoding() {
        let form = OAuthService.parseForm(Array("a=1+2&b=%41%2f&a=ignored&c&d=%zz".utf8))
        #expect(form["a"] == "1 2")
        #expect(form["b"] == "A/")
        #expect(form["c"] == "")
        #expect(form["d"] == "%zz")
    }

    @Test func fcmStreamLimitIsRaisedAtOnce() throws {
        let h = try Harness(try authConfiguration())
        #expect(h.gateway.initialMaxConcurrentStreams() == 1)
        let response = h.fcm(#"{"message":{"topic":"a"}}"#)
        #expect(response.actions == [.setMaxConcurrentStreams(1000)])
    }
}
