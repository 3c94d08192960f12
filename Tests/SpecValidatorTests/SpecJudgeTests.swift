import JSON
import PushModel
import SpecValidator
import Testing

@Suite struct SpecJudgeTests {
    let set: SpecSet
    init() throws { set = try SpecFixtures.load() }

    func example(_ id: String, _ index: Int = 0) throws -> SpecExample {
        let spec = try #require(set.spec(id: id))
        return spec.examples[index]
    }

    @Test func aViolationCarriesPointerRuleSourceExpectedAndFound() throws {
        let broken = applying([.header("apns-collapse-id", "4a69…")], to: try example("poolse.missed.apns"))
        let verdict = set.judge(broken)
        let violation = try #require(verdict.violations.first)
        #expect(verdict.violations.count == 1)
        #expect(violation.pointer.description == "/headers/apns-collapse-id")
        #expect(violation.rule == "header:apns-collapse-id")
        #expect(violation.expected == #""missed-4a69…""#)
        #expect(violation.found == #""4a69…""#)
        #expect(violation.source?.seed == "000_011794c6e3cb5dae.txt")
        #expect(violation.source?.sentence.contains("apns-collapse-id: missed-<call_id>") == true)
    }

    @Test func verdictsReadAsOneLinePerViolation() throws {
        #expect(set.judge(try example("poolse.ring.apns")).description == "poolse.ring.apns: ok")
        let bad = set.judge(applying([.header("apns-priority", "5")], to: try example("poolse.ring.apns")))
        #expect(bad.description.hasPrefix("poolse.ring.apns: 1 violation\n  /headers/apns-priority [header:apns-priority]"))
        #expect(bad.description.contains(#"expected "10", found "5""#))
        #expect(bad.description.contains("000_011794c6e3cb5dae.txt"))
    }

    @Test func schemaViolationsTakeTheNearestXSource() throws {
        let broken = applying([.body("/message/android/priority", "NORMAL")], to: try example("poolse.ring.fcm"))
        let violation = try #require(set.judge(broken).violations.first)
        #expect(violation.source?.sentence == #"Android pushes are FCM data messages with android.priority: "HIGH"."#)
        #expect(violation.found == #""NORMAL""#)
        #expect(violation.expected.hasPrefix("enum"))
    }

    @Test func theVerdictJSONIsWhatTheRecordingStores() throws {
        let good = set.judge(try example("poolse.ring.apns"))
        #expect(good.json() == ["spec": "poolse.ring.apns", "ok": true, "violations": []])
        let bad = set.judge(applying([.header("apns-priority", "5")], to: try example("poolse.ring.apns")))
        let json = bad.json()
        #expect(json["ok"] == false)
        #expect(json["violations"]?[0]?["pointer"] == "/headers/apns-priority")
        #expect(json["violations"]?[0]?["rule"] == "header:apns-priority")
        #expect(json["violations"]?[0]?["expected"] == #""10""#)
        #expect(json["violations"]?[0]?["found"] == #""5""#)
        #expect(json["violations"]?[0]?["source"]?["seed"] == "000_011794c6e3cb5dae.txt")
    }

    @Test func headerNamesMatchWhateverTheirCase() throws {
        var request = try example("poolse.ring.apns")
        request.headers = request.headers.map { (name: $0.name.uppercased(), value: $0.value) }
        #expect(set.judge(request).violations.isEmpty)
    }

    @Test func expirationWithinToleranceOfADayPasses() throws {
        let shifted = applying([.header("apns-expiration", "1794038545")], to: try example("poolse.missed.apns"))  // +100 s
        #expect(set.judge(shifted).violations.isEmpty)
        let notANumber = applying([.header("apns-expiration", "tomorrow")], to: try example("poolse.missed.apns"))
        #expect(set.judge(notANumber).violations.map(\.rule) == ["header:apns-expiration"])
    }

    @Test func lowercaseHighPriorityIsAccepted() throws {
        let lower = applying([.body("/message/android/priority", "high")], to: try example("poolse.ring.fcm"))
        #expect(set.judge(lower).violations.isEmpty)
    }

    @Test func aPayloadNumberIsNotAHeaderString() throws {
        // badge 4 against unread_total "4": JSON equality, not text equality.
        let broken = applying([.body("/unread_total", "4")], to: try example("poolse.message.apns"))
        #expect(set.judge(broken).violations.map(\.rule).contains("derived:badge"))
    }

    // MARK: Unmatched and out of scope

    @Test func anIOSMissedCallTypedAsAnAndroidCallEventIsUnmatched() throws {
        let broken = applying([.body("/type", "call_event")], to: try example("poolse.missed.apns"))
        let verdict = set.judge(broken)
        #expect(verdict.specID == nil)
        #expect(verdict.violations.map(\.rule) == ["unmatched"])
        #expect(verdict.violations.first?.pointer == .root)
        #expect(verdict.violations.first?.found == #"{"type":"call_event","event":"missed"}"#)
    }

    @Test func aRingEndedPushOnAPNsIsUnmatched() throws {
        var request = try example("poolse.ring_ended.fcm")
        request.route = .apns
        request.path = "/3/device/" + String(repeating: "ab", count: 32)
        request.headers = [("apns-push-type", "alert"), ("apns-topic", "com.example.loop")]
        request.body = request.body["message"]?["data"] ?? .null
        let verdict = set.judge(request)
        #expect(verdict.specID == nil)
        #expect(verdict.violations.map(\.rule) == ["unmatched"])
    }

    @Test func anUnknownEventIsUnmatched() throws {
        let broken = applying([.body("/message/data/event", "ringing")], to: try example("poolse.ring.fcm"))
        #expect(set.judge(broken).violations.map(\.rule) == ["unmatched"])
    }

    @Test func aBodyThatIsNotJSONIsReportedAndUnmatched() {
        let verdict = set.judge(route: .apns, method: "POST", path: "/3/device/abcd", headers: [("apns-topic", "com.example.loop")],
                                body: Array("{\"aps\":".utf8))
        #expect(verdict.specID == nil)
        #expect(verdict.violations.map(\.rule) == ["body-json", "unmatched"])
    }

    @Test func anEmptyBodyIsUnmatched() {
        let verdict = set.judge(route: .fcm, method: "POST", path: "/v1/projects/poolse-example/messages:send", headers: [], body: [])
        #expect(verdict.violations.map(\.rule) == ["unmatched"])
    }

    @Test func aGETIsNotAPush() throws {
        var request = try example("poolse.ring.apns")
        request.method = "GET"
        #expect(set.judge(request).violations.map(\.rule) == ["unmatched"])
    }

    @Test(arguments: [(GatewayRoute.oauth, "/token"), (.unknown, "/token"), (.oauth, "/o/oauth2/token")])
    func theTokenEndpointIsOutOfScope(route: GatewayRoute, path: String) {
        let verdict = set.judge(route: route, method: "POST", path: path,
                                headers: [("content-type", "application/x-www-form-urlencoded")], body: Array("grant_type=x".utf8))
        #expect(verdict.outOfScope)
        #expect(verdict.violations.isEmpty)
        #expect(verdict.json()["outOfScope"] == true)
    }

    @Test(arguments: [("/token", true), ("/token?x=1", true), ("/token/refresh", true), ("/tokens", false), ("/v1/token", false)])
    func outOfScopePathsArePrefixesOnSegmentBoundaries(path: String, outOfScope: Bool) {
        #expect(set.isOutOfScope(route: .unknown, path: path) == outOfScope)
    }

    @Test func anUnknownRouteIsNotCoveredNotOutOfScope() {
        let verdict = set.judge(route: .unknown, method: "POST", path: "/v2/send", headers: [], body: Array("{}".utf8))
        #expect(!verdict.outOfScope)
        #expect(verdict.violations.isEmpty)
        #expect(verdict.uncovered == UncoveredRequest(route: .unknown, identity: nil))
    }

    // MARK: Products told apart by identity

    @Test func theThreeProductsAreToldApartByTheirIdentity() throws {
        #expect(set.judge(try example("yama.message.apns")).specID == "yama.message.apns")
        #expect(set.judge(try example("concierge.reply.apns")).specID == "concierge.reply.apns")
        #expect(set.judge(try example("poolse.missed.apns")).specID == "poolse.missed.apns")
        #expect(set.judge(try example("concierge.reply.fcm")).specID == "concierge.reply.fcm")
        #expect(set.claimants(route: .apns, path: "/3/device/ab", topic: "com.example.loop.voip") == .success(["poolse"]))
        #expect(set.claimants(route: .apns, path: "/3/device/ab", topic: "com.example.shop") == .success(["concierge"]))
        #expect(set.claimants(route: .fcm, path: "/v1/projects/concierge-example/messages:send", topic: nil) == .success(["concierge"]))
    }

    /// The README's quick start before issue 8: a plain alert to an app no product ships was
    /// judged as a Yama push (Yama's match caught every alert). Now nobody claims it.
    @Test func anotherAppsAlertIsNotCoveredByAnySpec() {
        let verdict = set.judge(route: .apns, method: "POST", path: "/3/device/" + String(repeating: "ab", count: 32),
                                headers: [("apns-push-type", "alert"), ("apns-topic", "com.example.myapp")],
                                body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        #expect(verdict.specID == nil)
        #expect(verdict.violations.isEmpty)
        #expect(verdict.passed)
        #expect(verdict.uncovered?.label == "com.example.myapp")
        #expect(verdict.json() == ["spec": .null, "ok": true, "covered": false, "violations": []])
    }

    @Test func anotherAppsVoIPTopicAndAnotherFCMProjectAreNotCovered() throws {
        let ring = applying([.header("apns-topic", "com.other.app.voip")], to: try example("poolse.ring.apns"))
        #expect(set.judge(ring).uncovered == UncoveredRequest(route: .apns, identity: "com.other.app.voip"))
        var fcm = try example("poolse.ring.fcm")
        fcm.path = "/v1/projects/someone-else/messages:send"
        #expect(set.judge(fcm).uncovered?.label == "FCM project someone-else")
        var noTopic = try example("poolse.ring.apns")
        noTopic.headers.removeAll { $0.name == "apns-topic" }
        #expect(set.judge(noTopic).uncovered == UncoveredRequest(route: .apns, identity: nil))
    }

    /// A push its product claims but none of the product's specs recognises is a failure,
    /// never handed to another product's spec.
    @Test func aClaimedPushNoSpecOfItsProductMatchesFails() throws {
        let verdict = set.judge(route: .apns, method: "POST", path: "/3/device/" + String(repeating: "ab", count: 32),
                                headers: [("apns-push-type", "alert"), ("apns-topic", "com.example.loop")],
                                body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        #expect(verdict.specID == nil)
        #expect(verdict.uncovered == nil)
        #expect(verdict.violations.map(\.rule) == ["unmatched"])
        #expect(verdict.violations.first?.message.hasPrefix("no poolse spec matches this push") == true)
        // Yama's payload to poolse's topic is poolse's push, and fails as one.
        let yamaShaped = applying([.header("apns-topic", "com.example.loop")], to: try example("yama.message.apns"))
        #expect(set.judge(yamaShaped).violations.map(\.rule) == ["unmatched"])
    }

    /// A Firebase project may hold several products' apps: a push to it is tried against all of
    /// their specs, and the payload tells them apart.
    @Test func productsSharingAnFCMProjectAreToldApartByPayload() throws {
        let custom = try SpecSet.load(directory: SpecFixtures.specsDirectory,
                                      configOverrides: ["concierge": ["fcm_project": ["concierge-example", "poolse-example"]]])
        #expect(custom.claimants(route: .fcm, path: "/v1/projects/poolse-example/messages:send", topic: nil) == .success(["poolse", "concierge"]))
        var reply = try example("concierge.reply.fcm")
        reply.path = "/v1/projects/poolse-example/messages:send"
        #expect(custom.judge(reply).specID == "concierge.reply.fcm")
        #expect(custom.judge(reply).passed)
        #expect(custom.judge(try example("poolse.ring.fcm")).specID == "poolse.ring.fcm")
        // Without the override, poolse's project is poolse's alone.
        #expect(set.judge(reply).violations.first?.message.hasPrefix("no poolse spec matches this push") == true)
    }

    @Test func aProductWithoutAnFCMProjectClaimsNoFCMPush() throws {
        let custom = try SpecSet.load(directory: SpecFixtures.specsDirectory, configOverrides: ["concierge": ["fcm_project": .null]])
        let verdict = custom.judge(try example("concierge.reply.fcm"))
        #expect(verdict.uncovered?.label == "FCM project concierge-example")
        #expect(verdict.violations.isEmpty)
    }

    @Test func configOverridesReplaceTheBundleIDs() throws {
        let custom = try SpecSet.load(directory: SpecFixtures.specsDirectory,
                                      configOverrides: ["poolse": ["bundle_ids": ["org.acme.chat"]]])
        let request = try example("poolse.ring.apns")
        #expect(custom.judge(request).uncovered?.identity == "com.example.loop.voip", "the shipped bundle id is no longer poolse's")
        #expect(custom.judge(applying([.header("apns-topic", "org.acme.chat")], to: request)).violations.map(\.rule) == ["header:apns-topic"])
        let fixed = applying([.header("apns-topic", "org.acme.chat.voip")], to: request)
        #expect(custom.judge(fixed).violations.isEmpty)
        #expect(custom.config["poolse"]?["fcm_project"] == "poolse-example", "overrides merge, they do not replace siblings")
    }
}

/// Bad input never crashes the judge: every member of every example, at every depth, replaced
/// by each JSON type in turn, is judged and found wanting (or, for a value the spec does not
/// constrain, passed).
@Suite struct SpecHostileInputTests {
    static let replacements: [JSONValue] = [.null, 7, -1.5, "", "x", true, [], [1, "a"], [:], ["k": ["k": 1]]]

    func members(of value: JSONValue, at pointer: String = "") -> [String] {
        guard let object = value.objectValue else { return [] }
        return object.keys.flatMap { key -> [String] in
            let here = pointer + "/" + key
            return [here] + members(of: object[key] ?? .null, at: here)
        }
    }

    @Test(arguments: SpecFixtures.specFiles)
    func everyMemberReplacedByEveryTypeIsJudgedWithoutCrashing(file: String) throws {
        let set = try SpecFixtures.load()
        let spec = try #require(set.specs.first { $0.file == file })
        let example = try #require(spec.examples.first)
        var judged = 0
        var failed = 0
        for pointer in members(of: example.body) {
            for replacement in Self.replacements {
                let verdict = set.judge(applying([.body(pointer, replacement)], to: example))
                judged += 1
                if !verdict.violations.isEmpty { failed += 1 }
                for violation in verdict.violations {
                    #expect(!violation.rule.isEmpty && !violation.message.isEmpty)
                }
            }
        }
        #expect(judged > 0)
        #expect(failed > judged / 2, "most replacements break a rule (\(failed) of \(judged))")
    }

    @Test(arguments: [Array("[]".utf8), Array("\"ring\"".utf8), Array("null".utf8), Array("{\"message\":[]}".utf8),
                      Array("{\"message\":{\"data\":\"x\"}}".utf8), [0xFF, 0xFE], Array(repeating: UInt8(ascii: "["), count: 10_000)])
    func bodiesOfTheWrongShapeAreUnmatched(body: [UInt8]) throws {
        let set = try SpecFixtures.load()
        for (route, path) in [(GatewayRoute.apns, "/3/device/abcd"), (.fcm, "/v1/projects/poolse-example/messages:send")] {
            let verdict = set.judge(route: route, method: "POST", path: path, headers: [("apns-topic", "com.example.loop")], body: body)
            #expect(verdict.specID == nil)
            #expect(verdict.violations.last?.rule == "unmatched")
        }
    }
}
