import Encoding
import Foundation
import Crypto
import HTTPCore
import JSON
import PushModel
import RecordLine
import Testing
@testable import MockGateway
import SpecValidator

@Suite struct APNSTests {
    @Test func successIsEmpty200WithApnsID() throws {
        let h = try Harness()
        let response = h.push()
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        let id = try #require(header(response, "apns-id"))
        #expect(isCanonicalUUID(id))
        #expect(header(response, "content-type") == nil)
        #expect(header(response, "apns-unique-id") == nil)
        #expect(h.observer.last?.route == .apns)
        #expect(h.observer.last?.reason == nil)
    }

    @Test func apnsIDIsEchoedOnSuccessAndErrors() throws {
        let h = try Harness()
        #expect(header(h.push(headers: ["apns-id": validAPNSID]), "apns-id") == validAPNSID)
        let error = h.push(headers: ["apns-id": validAPNSID, "apns-priority": "7"])
        #expect(error.status == 400)
        #expect(header(error, "apns-id") == validAPNSID)
    }

    @Test func generatedApnsIDsDiffer() throws {
        let h = try Harness()
        let a = header(h.push(), "apns-id"), b = header(h.push(), "apns-id")
        #expect(a != nil && a != b)
    }

    @Test func developmentEnvironmentAddsUniqueID() throws {
        var configuration = GatewayConfiguration()
        configuration.apns.environment = .development
        let h = try Harness(configuration)
        #expect(header(h.push(), "apns-unique-id").map(isCanonicalUUID) == true)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var expected: APNSReason
        var method = "POST"
        var path: String? = nil
        var headers: [String: String?] = [:]
        var extra: [HTTPHeader] = []
        var payload = #"{"aps":{"alert":"hi"}}"#
        var testDescription: String { name }
    }

    static let validationCases: [Case] = [
        Case(name: "duplicate apns-topic", expected: .duplicateHeaders, extra: [HTTPHeader("apns-topic", "com.example.app")]),
        Case(name: "duplicate authorization", expected: .duplicateHeaders,
             extra: [HTTPHeader("authorization", "bearer a"), HTTPHeader("authorization", "bearer b")]),
        Case(name: "duplicate unknown apns header", expected: .duplicateHeaders,
             extra: [HTTPHeader("apns-foo", "1"), HTTPHeader("apns-foo", "2")]),
        Case(name: "GET", expected: .methodNotAllowed, method: "GET"),
        Case(name: "wrong path", expected: .badPath, path: "/3/devices/abc"),
        Case(name: "wrong version", expected: .badPath, path: "/2/device/\(deviceToken)"),
        Case(name: "no token", expected: .missingDeviceToken, path: "/3/device/"),
        Case(name: "no token, no slash", expected: .missingDeviceToken, path: "/3/device"),
        Case(name: "short token", expected: .badDeviceToken, path: "/3/device/abcd"),
        Case(name: "non-hex token", expected: .badDeviceToken, path: "/3/device/" + String(repeating: "zz", count: 32)),
        Case(name: "long token", expected: .badDeviceToken, path: "/3/device/" + String(repeating: "ab", count: 50)),
        Case(name: "bad apns-id", expected: .badMessageId, headers: ["apns-id": "not-a-uuid"]),
        Case(name: "apns-id without hyphens", expected: .badMessageId, headers: ["apns-id": "123e4567e89b42d3a456426614174000"]),
        Case(name: "unknown push type", expected: .invalidPushType, headers: ["apns-push-type": "banner"]),
        Case(name: "no topic", expected: .missingTopic, headers: ["apns-topic": nil]),
        Case(name: "empty topic", expected: .missingTopic, headers: ["apns-topic": ""]),
        Case(name: "topic with space", expected: .badTopic, headers: ["apns-topic": "com.example app"]),
        Case(name: "topic only a suffix", expected: .badTopic, headers: ["apns-push-type": "voip", "apns-topic": ".voip"]),
        Case(name: "voip without .voip", expected: .deviceTokenNotForTopic, headers: ["apns-push-type": "voip"]),
        Case(name: "liveactivity without suffix", expected: .deviceTokenNotForTopic, headers: ["apns-push-type": "liveactivity"]),
        Case(name: "priority 7", expected: .badPriority, headers: ["apns-priority": "7"]),
        Case(name: "priority text", expected: .badPriority, headers: ["apns-priority": "high"]),
        Case(name: "background at 10", expected: .badPriority,
             headers: ["apns-push-type": "background", "apns-priority": "10"], payload: #"{"aps":{"content-available":1}}"#),
        Case(name: "expiration not integer", expected: .badExpirationDate, headers: ["apns-expiration": "tomorrow"]),
        Case(name: "expiration fractional", expected: .badExpirationDate, headers: ["apns-expiration": "1.5"]),
        Case(name: "collapse id 65 bytes", expected: .badCollapseId, headers: ["apns-collapse-id": String(repeating: "c", count: 65)]),
        Case(name: "empty payload", expected: .payloadEmpty, payload: ""),
        Case(name: "payload not JSON", expected: .payloadEmpty, payload: "hello"),
        Case(name: "payload an array", expected: .payloadEmpty, payload: "[1]"),
        Case(name: "payload a string", expected: .payloadEmpty, payload: #""x""#),
        Case(name: "4097 bytes", expected: .payloadTooLarge, payload: Self.payload(bytes: 4097)),
        Case(name: "voip 5121 bytes", expected: .payloadTooLarge,
             headers: ["apns-push-type": "voip", "apns-topic": "com.example.app.voip"], payload: Self.payload(bytes: 5121)),
        Case(name: "bearer header not bearer (auth off)", expected: .invalidProviderToken, headers: ["authorization": "Basic abc"]),
        Case(name: "empty bearer (auth off)", expected: .missingProviderToken, headers: ["authorization": "bearer "]),
        Case(name: "bearer and spaces only (auth off)", expected: .missingProviderToken, headers: ["authorization": "Bearer    "]),
        // One Character, a space with a combining mark: nothing after "bearer " (Characters decide).
        Case(name: "bearer, a space joined to an accent (auth off)", expected: .missingProviderToken,
             headers: ["authorization": "bearer \u{301}"]),
        Case(name: "payload number out of range", expected: .payloadEmpty, payload: #"{"a":1e999}"#),
        Case(name: "payload number with a leading zero", expected: .payloadEmpty, payload: #"{"a":01}"#),
        Case(name: "voip topic ending in another push type's suffix", expected: .deviceTokenNotForTopic,
             headers: ["apns-push-type": "voip", "apns-topic": "com.example.app.voip.complication"]),
    ]

    @Test(arguments: validationCases)
    func validationReasons(_ c: Case) throws {
        let h = try Harness()
        let response = h.push(method: c.method, path: c.path, headers: c.headers, extra: c.extra, payload: c.payload)
        #expect(response.status == c.expected.status)
        #expect(reason(response) == c.expected.rawValue)
        #expect(header(response, "content-type") == "application/json")
        #expect(header(response, "apns-id") != nil)
        #expect(h.observer.last?.reason == c.expected.rawValue)
        #expect(h.observer.last?.response.status == c.expected.status)
    }

    /// With `--specs`, the gateway scans a payload once, into a tape for its own check and the
    /// judge: the answer and the warnings must be those of the gateway without specs.
    @Test(arguments: [
        #"{"aps":{"alert":"hi"}}"#, "hello", "[1]", #""x""#, "{}", #"{"aps":5}"#, #"{"aps":{"alert":"a"},"aps":7}"#,
        #"{"ap":1,"apsx":2,"aps":{"alert":"hi","badge":1}}"#, #"{"a\u0070s":{"alert":"hi"}}"#, #"{"x":{"aps":1}}"#, "null",
        #"{"aps":{"alert":"hi"}} x"#, String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
        #"{"aps":{"alert":"hi"},"deep":"# + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}",
        #"{"aps":{"alert":"hi"},"deep":"# + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "}",
    ])
    func judgedPayloadsAreAnsweredAsUnjudgedOnes(_ payload: String) throws {
        let specs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Specs").path
        let judge = try SpecJudge(directory: specs)
        let plain = try Harness()
        let judged = try Harness(judge: judge)
        let expected = plain.push(payload: payload)
        let answer = judged.push(payload: payload)
        #expect(answer.status == expected.status)
        #expect(reason(answer) == reason(expected))
        #expect((judged.observer.last?.verdict?.gatewayWarnings ?? []) == (plain.observer.last?.verdict?.gatewayWarnings ?? []))
        // And the verdict is the judge's own, from its own parse.
        let exchange = try #require(judged.observer.last)
        let own = judge.specs.judge(route: .apns, method: "POST", path: exchange.request.path,
                                    headers: exchange.request.headers.map { (name: $0.name, value: $0.value) },
                                    body: exchange.request.body)
        #expect(exchange.verdict?.judgement == RecordedVerdict.Judgement(own))
    }

    /// A passing verdict is recorded from bytes kept at load: they must be the verdict's own
    /// encoding, for every spec; any other verdict has none and is encoded per request.
    @Test func keptPassingVerdictsAreTheVerdictsOwnBytes() throws {
        let specs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Specs").path
        let judge = try SpecJudge(directory: specs)
        #expect(!judge.specs.specs.isEmpty)
        for spec in judge.specs.specs {
            // A verdict the set gave (it knows where its spec is), on the spec's own example.
            let example = try #require(spec.examples.first, "\(spec.id)")
            let verdict = judge.specs.judge(example)
            #expect(verdict.specID == spec.id && verdict.passed, "\(spec.id): \(verdict)")
            let recorded = judge.recordedForm(of: verdict)
            #expect(recorded.verdict == RecordedVerdict(judgement: RecordedVerdict.Judgement(verdict)))
            #expect(recorded.encoded == verdict.json().bytes(), "\(spec.id)")
        }
        let failing = SpecVerdict(specID: judge.specs.specs[0].id, violations: [
            SpecViolation(pointer: .root, rule: "r", source: nil, expected: "x", found: nil, message: "m")])
        #expect(judge.recordedForm(of: failing).encoded == nil)
        #expect(judge.recordedForm(of: failing).verdict.judgement == RecordedVerdict.Judgement(failing))
        #expect(judge.recordedForm(of: SpecVerdict(specID: "no.such.spec", violations: [])).encoded == nil)
        #expect(judge.recordedForm(of: SpecVerdict(specID: nil, violations: [], outOfScope: true)).encoded == nil)
    }

    /// A payload of exactly `bytes` bytes: `{"aps":{"alert":"xxx…"}}`.
    static func payload(bytes: Int) -> String {
        let frame = #"{"aps":{"alert":""}}"#
        return #"{"aps":{"alert":""# + String(repeating: "x", count: bytes - frame.utf8.count) + #""}}"#
    }

    @Test func payloadLimitsAre4096And5120ForVoIP() throws {
        let h = try Harness()
        #expect(Self.payload(bytes: 4096).utf8.count == 4096)
        #expect(h.push(payload: Self.payload(bytes: 4096)).status == 200)
        #expect(h.push(payload: Self.payload(bytes: 4097)).status == 413)
        let voip: [String: String?] = ["apns-push-type": "voip", "apns-topic": "com.example.app.voip"]
        #expect(h.push(headers: voip, payload: Self.payload(bytes: 5120)).status == 200)
        #expect(h.push(headers: voip, payload: Self.payload(bytes: 5121)).status == 413)
    }

    @Test func everyPushTypeSuffixIsAccepted() throws {
        let h = try Harness()
        for type in APNSPushType.allCases {
            let topic = type == .mdm ? "com.apple.mgmt.External.abc" : "com.example.app" + (type.requiredTopicSuffix ?? "")
            var headers: [String: String?] = ["apns-push-type": type.rawValue, "apns-topic": topic]
            var payload = #"{"aps":{"alert":"hi"}}"#
            if type == .background {
                headers["apns-priority"] = "5"
                payload = #"{"aps":{"content-available":1}}"#
            }
            let response = h.push(headers: headers, payload: payload)
            #expect(response.status == 200, "\(type)")
        }
    }

    @Test func pushTypeDefaultsToAlertWhenAbsent() throws {
        let h = try Harness()
        #expect(h.push(headers: ["apns-push-type": nil]).status == 200)
        // alert allows 4096 only
        #expect(h.push(headers: ["apns-push-type": nil], payload: Self.payload(bytes: 4097)).status == 413)
    }

    @Test func topicsOutsideConfiguredBundlesAreDisallowed() throws {
        var configuration = GatewayConfiguration()
        configuration.apns.bundleIDs = ["com.example.app"]
        let h = try Harness(configuration)
        #expect(h.push().status == 200)
        #expect(reason(h.push(headers: ["apns-topic": "com.other.app"])) == "TopicDisallowed")
        #expect(reason(h.push(headers: ["apns-push-type": "voip", "apns-topic": "com.other.app.voip"])) == "TopicDisallowed")
        #expect(h.push(headers: ["apns-push-type": "voip", "apns-topic": "com.example.app.voip"]).status == 200)
        // an alert to the app's VoIP topic: the device registered for the bare bundle
        #expect(reason(h.push(headers: ["apns-topic": "com.example.app.voip"])) == "DeviceTokenNotForTopic")
        #expect(reason(h.push(headers: ["apns-topic": "com.example.app.push-type.liveactivity"])) == "DeviceTokenNotForTopic")
        #expect(reason(h.push(headers: ["apns-topic": "com.other.app.voip"])) == "TopicDisallowed")
        #expect(h.push(headers: ["apns-push-type": "liveactivity", "apns-topic": "com.example.app.push-type.liveactivity"],
                       payload: #"{"aps":{"event":"update"}}"#).status == 200)
        #expect(reason(h.push(headers: ["apns-push-type": "liveactivity", "apns-topic": "com.example.ap.push-type.liveactivity"],
                              payload: #"{"aps":{"event":"update"}}"#)) == "TopicDisallowed")
    }

    @Test func backgroundPushWithAlertIsAcceptedButFlagged() throws {
        let h = try Harness()
        let response = h.push(headers: ["apns-push-type": "background", "apns-priority": "5"],
                              payload: #"{"aps":{"content-available":1,"alert":"x"}}"#)
        #expect(response.status == 200)
        let warnings = h.observer.last?.verdict?.gatewayWarnings ?? []
        #expect(warnings.contains { $0.contains("alert") })
        // a clean background push carries no warning
        h.push(headers: ["apns-push-type": "background", "apns-priority": "5"], payload: #"{"aps":{"content-available":1}}"#)
        #expect(h.observer.last?.verdict == nil)
    }

    @Test func payloadsWithoutApsAreDeliveredWithAWarningWhereApsMatters() throws {
        let h = try Harness()
        let voip: [String: String?] = ["apns-push-type": "voip", "apns-topic": "com.example.app.voip"]
        #expect(h.push(headers: voip, payload: #"{"cv":"1","type":"call","event":"ring"}"#).status == 200)
        #expect(h.observer.last?.verdict == nil)
        #expect(h.push(payload: #"{"alert":"x"}"#).status == 200)
        #expect(h.observer.last?.verdict?.gatewayWarnings.count == 1)
        #expect(h.push(payload: #"{"aps":"x"}"#).status == 200)
        #expect(h.observer.last?.verdict?.gatewayWarnings.count == 1)
    }

    @Test func tokenStates() throws {
        var configuration = GatewayConfiguration()
        let gone = String(repeating: "cd", count: 32), bad = String(repeating: "ef", count: 32)
        configuration.tokens = TokenConfiguration(gone: [(gone, 1_700_000_000_123)], bad: [bad])
        let h = try Harness(configuration)
        let unregistered = h.push(token: gone)
        #expect(unregistered.status == 410)
        #expect(reason(unregistered) == "Unregistered")
        #expect(json(unregistered)?["timestamp"] == 1_700_000_000_123)
        #expect(reason(h.push(token: bad)) == "BadDeviceToken")
        #expect(h.push(token: bad.uppercased()).status == 400) // hex is case-insensitive
        // runtime changes (admin API)
        h.gateway.tokens.set(bad, to: .valid)
        #expect(h.push(token: bad).status == 200)
        h.gateway.tokens.set(deviceToken, to: .gone(sinceMillis: 42))
        #expect(json(h.push())?["timestamp"] == 42)
        h.gateway.tokens.clear(deviceToken)
        #expect(h.push().status == 200)
        h.gateway.tokens.reset(unknownTokens: .refuse)
        #expect(reason(h.push()) == "BadDeviceToken")
    }

    @Test func longerTokensWhenConfigured() throws {
        var configuration = GatewayConfiguration()
        configuration.apns = APNSConfiguration(tokenHexLength: 64, maxTokenHexLength: 160)
        let h = try Harness(configuration)
        #expect(h.push(token: String(repeating: "a", count: 160)).status == 200)
        #expect(h.push(token: String(repeating: "a", count: 162)).status == 400)
        #expect(h.push(token: String(repeating: "a", count: 62)).status == 400)
    }

    @Test func garbageNeverCrashes() throws {
        let h = try Harness(try authConfiguration())
        var seed: UInt64 = 1
        func next() -> UInt64 { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return seed >> 33 }
        for _ in 0..<300 {
            let length = Int(next() % 200)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            let text = String(decoding: bytes, as: UTF8.self)
            let response = h.send(method: ["POST", "GET", "", "P\u{0}"][Int(next() % 4)],
                                  path: ["/3/device/" + text, text, "/v1/projects/\(text)/messages:send", "/token"][Int(next() % 4)],
                                  headers: [HTTPHeader("authorization", "bearer " + text), HTTPHeader("apns-topic", text),
                                            HTTPHeader("apns-id", text), HTTPHeader("apns-expiration", text)],
                                  body: bytes)
            #expect(response.status >= 200 && response.status < 600)
        }
        #expect(h.observer.exchanges.count == 300)
    }
}

@Suite struct APNSAuthTests {
    func auth(_ token: String) -> [String: String?] { ["authorization": "bearer \(token)"] }

    @Test func validTokenSucceeds() throws {
        let h = try Harness(try authConfiguration())
        #expect(h.push(headers: auth(h.providerToken())).status == 200)
    }

    @Test func missingTokenIsMissingProviderToken() throws {
        let h = try Harness(try authConfiguration())
        #expect(reason(h.push(headers: ["authorization": nil])) == "MissingProviderToken")
        #expect(reason(h.push(headers: ["authorization": ""])) == "MissingProviderToken")
        #expect(reason(h.push(headers: ["authorization": "bearer"])) == "MissingProviderToken")
        #expect(h.push(headers: ["authorization": nil]).status == 403)
    }

    @Test func invalidTokens() throws {
        let h = try Harness(try authConfiguration())
        let cases = [
            "not.a.jwt",
            "garbage",
            h.providerToken(key: TestKeys.forgedKey),                 // bad signature
            h.providerToken(keyID: "UNKNOWNKID"),                      // unknown kid
            h.providerToken(team: otherTeamID),                        // iss is not the key's team
        ]
        for token in cases {
            let response = h.push(headers: auth(token))
            #expect(response.status == 403)
            #expect(reason(response) == "InvalidProviderToken", "\(token)")
        }
        #expect(reason(h.push(headers: ["authorization": "Basic abc"])) == "InvalidProviderToken")
        // RS256-labelled tokens are not APNs tokens
        let rs = try JWT.signRS256(header: ["kid": .string(keyID)], claims: ["iss": .string(teamID), "iat": .number(Double(h.clock.nowSeconds))],
                                   key: TestKeys.serviceAccountKey)
        #expect(reason(h.push(headers: auth(rs))) == "InvalidProviderToken")
    }

    @Test func tokenOlderThanAnHourIsExpired() throws {
        let h = try Harness(try authConfiguration())
        let token = h.providerToken()
        #expect(h.push(headers: auth(token)).status == 200)
        h.clock.advance(seconds: 3601)
        let response = h.push(headers: auth(token))
        #expect(response.status == 403)
        #expect(reason(response) == "ExpiredProviderToken")
        // a fresh connection with the same token is refused too (the cache does not hide age)
        h.newConnection()
        #expect(reason(h.push(headers: auth(token))) == "ExpiredProviderToken")
    }

    @Test func changingTheTokenWithinTwentyMinutesIsTooManyUpdates() throws {
        let h = try Harness(try authConfiguration())
        let first = h.providerToken()
        #expect(h.push(headers: auth(first)).status == 200)
        h.clock.advance(seconds: 300)
        let second = h.providerToken()
        let response = h.push(headers: auth(second))
        #expect(response.status == 429)
        #expect(reason(response) == "TooManyProviderTokenUpdates")
        // the old token keeps working
        #expect(h.push(headers: auth(first)).status == 200)
        h.clock.advance(seconds: 20 * 60)
        let third = h.providerToken()
        #expect(h.push(headers: auth(third)).status == 200)
        // another connection switching to the team's current token is fine (a rotation)
        h.newConnection()
        #expect(h.push(headers: auth(first)).status == 200)
        #expect(h.push(headers: auth(third)).status == 200)
    }

    /// Issue 19: Apple counts a team's token updates across connections, so a sender whose
    /// connections (or processes) each sign their own token trips the limit on the second.
    @Test func aNewConnectionsNewTokenCountsAsAnUpdateOfItsTeam() throws {
        let h = try Harness(try authConfiguration())
        let first = h.providerToken()
        #expect(h.push(headers: auth(first)).status == 200)
        h.clock.advance(seconds: 4)
        h.newConnection()
        let second = h.providerToken()
        let refused = h.push(headers: auth(second))
        #expect(refused.status == 429)
        #expect(reason(refused) == "TooManyProviderTokenUpdates")
        // The team's token on a new connection is fine; another team's first token too.
        h.newConnection()
        #expect(h.push(headers: auth(first)).status == 200)
        h.newConnection()
        #expect(h.push(headers: auth(h.providerToken(key: TestKeys.otherTeamKey, keyID: otherKeyID, team: otherTeamID))).status == 200)
        h.clock.advance(seconds: 20 * 60)
        h.newConnection()
        #expect(h.push(headers: auth(second)).status == 200, "20 minutes on, a new token is an update Apple takes")
    }

    @Test func connectionIsBoundToOneTeam() throws {
        let h = try Harness(try authConfiguration())
        #expect(h.push(headers: auth(h.providerToken())).status == 200)
        let other = h.providerToken(key: TestKeys.otherTeamKey, keyID: otherKeyID, team: otherTeamID)
        #expect(reason(h.push(headers: auth(other))) == "UnrelatedKeyIdInToken")
        h.newConnection()
        #expect(h.push(headers: auth(other)).status == 200)
    }

    @Test func keyOfTheOtherEnvironment() throws {
        var configuration = try authConfiguration()
        configuration.apns.keys[0].environment = .development
        let h = try Harness(configuration)
        #expect(reason(h.push(headers: auth(h.providerToken()))) == "BadEnvironmentKeyIdInToken")
    }

    @Test func streamLimitIsOneUntilTheFirstAuthenticatedRequest() throws {
        let h = try Harness(try authConfiguration(streams: 750))
        #expect(h.gateway.initialMaxConcurrentStreams() == 1)
        let unauthenticated = h.push()
        #expect(!unauthenticated.actions.contains(.setMaxConcurrentStreams(750)))
        let token = h.providerToken()
        let first = h.push(headers: auth(token))
        #expect(first.actions == [.setMaxConcurrentStreams(750)])
        let second = h.push(headers: auth(token))
        #expect(second.actions.isEmpty)
        // a valid token raises the limit even when the push itself is refused
        h.newConnection()
        let refused = h.push(headers: auth(token), payload: "")
        #expect(refused.status == 400)
        #expect(refused.actions == [.setMaxConcurrentStreams(750)])
    }

    @Test func withoutKeysConnectionsStartAtTheConfiguredLimit() throws {
        var configuration = GatewayConfiguration()
        configuration.apns.maxConcurrentStreams = 321
        let h = try Harness(configuration)
        #expect(h.gateway.initialMaxConcurrentStreams() == 321)
        #expect(h.push(headers: ["authorization": "bearer anything"]).status == 200)
        #expect(h.push().actions.isEmpty)
    }

    @Test func derSignaturesOnlyWhenConfigured() throws {
        let h = try Harness(try authConfiguration())
        let parts = h.providerToken().split(separator: ".")
        let raw = try #require(Base64URL.decode(parts[2]))
        let der = try #require(ES256.derSignature(fromRaw: raw))
        let derToken = parts[0] + "." + parts[1] + "." + Base64URL.encode(der)
        #expect(reason(h.push(headers: auth(String(derToken)))) == "InvalidProviderToken")
        var configuration = try authConfiguration()
        configuration.apns.acceptDERSignatures = true
        let lenient = try Harness(configuration, clock: h.clock)
        #expect(lenient.push(headers: auth(String(derToken))).status == 200)
    }

    @Test func repeatedTokenIsVerifiedOnce() throws {
        let h = try Harness(try authConfiguration())
        let token = h.providerToken()
        for _ in 0..<50 { #expect(h.push(headers: auth(token)).status == 200) }
        h.newConnection()
        #expect(h.push(headers: auth(token)).status == 200)
    }
}
