// What a push says against the reference rules' push (`PushSpec.compareContent`), and the
// linter's hold on `content.free`: every field is compared unless a spec file says why the
// sender may choose it.
import Foundation
import JSON
import PushModel
import SpecValidator
import Testing

@Suite struct SpecContentTests {
    /// The ping spec with `sent_at` (a number) in its body, declared free.
    func spec(free: JSONValue = [["pointer": "/body/sent_at", "why": "the sender's clock"]]) throws -> PushSpec {
        var object = pingSpec()
        object["body"] = pingSpec().with("/body/properties/sent_at", ["type": "integer"])["body"]
        object["content"] = ["free": free]
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(object)])
        return try #require(try SpecSet.load(directory: directory.specs.path).spec(id: "test.ping.apns"))
    }

    let referenceHeaders = [(name: "apns-push-type", value: "alert"), (name: "apns-topic", value: "com.example.test")]
    let referenceBody: JSONValue = ["aps": ["thread-id": "t-ping", "badge": 2], "kind": "ping", "sent_at": 1000]

    func differences(_ body: JSONValue, headers: [(name: String, value: String)]? = nil, referenceHeaders extra: [(name: String, value: String)] = [],
                     spec given: PushSpec? = nil) throws -> [ContentDifference] {
        let reference = ContentReference(headers: referenceHeaders + extra, body: referenceBody.bytes(), decidedAtMs: 1_000_000_000)
        return try (given ?? spec()).compareContent(headers: headers ?? referenceHeaders, body: body.bytes(), with: reference,
                                                    wallClockMs: 1_700_000_000_000)
    }

    @Test func theSamePushHasNoDifferenceAndAFreeFieldMayDiffer() throws {
        #expect(try differences(["aps": ["thread-id": "t-ping", "badge": 2], "kind": "ping", "sent_at": 99]) == [])
    }

    @Test func eachDecidedFieldIsNamedWithWhatWasSentAndWhatTheRulesSay() throws {
        let found = try differences(["aps": ["thread-id": "t-other", "sound": "default"], "kind": "ping", "sent_at": 1000])
        #expect(found.map(\.description) == [
            "/body/aps/thread-id is \"t-other\", expected \"t-ping\"",
            "/body/aps/badge is absent, expected 2",
            "/body/aps/sound is \"default\", expected nothing",
        ])
        // The nearest sentence behind the field: the body schema's own here.
        #expect(found.first?.source?.sentence == "Every ping has kind \"ping\".")
    }

    @Test func withoutAFreeDeclarationEveryFieldIsCompared() throws {
        let found = try differences(["aps": ["thread-id": "t-ping", "badge": 2], "kind": "ping", "sent_at": 99], spec: try spec(free: []))
        #expect(found.map(\.pointer.description) == ["/body/sent_at"])
    }

    /// An FCM fan-out's reference is one body with the device's token cut out; the push is
    /// compared with it as if it were whole, and a reference's header names in any case count.
    @Test func aReferenceWithItsTokenCutOutComparesAsTheWholeOne() throws {
        let whole: JSONValue = ["aps": ["thread-id": "t-ping", "badge": 2], "kind": "ping", "sent_at": 1000, "token": "tok-1"]
        let cut = try #require(ContentReference(headers: [(name: "APNS-Push-Type", value: "alert"), referenceHeaders[1]],
                                                body: whole.bytes(), decidedAtMs: 1_000_000_000).cuttingToken("tok-1"))
        let compare = { (body: JSONValue, token: String) throws -> [String] in
            try self.spec().compareContent(headers: self.referenceHeaders, body: body.bytes(), with: cut, token: token,
                                           wallClockMs: 1_700_000_000_000).map(\.description)
        }
        #expect(try compare(whole, "tok-1") == [])
        #expect(try compare(whole, "tok-2") == [#"/body/token is "tok-1", expected "tok-2""#])
        let other: JSONValue = ["aps": ["thread-id": "t-ping", "badge": 2], "kind": "pong", "sent_at": 1000, "token": "tok-1"]
        #expect(try compare(other, "tok-1") == [#"/body/kind is "pong", expected "ping""#])
    }

    @Test func theHeadersTheRulesSetAreCompared() throws {
        let sent = referenceHeaders + [(name: "apns-collapse-id", value: "c1"), (name: "apns-priority", value: "10")]
        let found = try differences(referenceBody, headers: sent)
        // apns-priority 10 is Apple's default: sent or not, the same push.
        #expect(found.map(\.description) == ["/headers/apns-collapse-id is \"c1\", expected nothing"])
        // No header rule speaks of apns-collapse-id here: the spec's own sentence stands behind it.
        #expect(found.first?.source?.sentence == "Every ping has kind \"ping\".")
        let type = try differences(referenceBody, headers: [(name: "apns-push-type", value: "background"), referenceHeaders[1]])
        #expect(type.first?.source?.sentence == "It goes to the APNs token with apns-push-type: alert.")
    }

    /// An expiration is a time after the send: a day after the scenario's clock or after the
    /// wall clock both agree with the rules' day after theirs; an hour does not, nor 0.
    @Test func anExpirationIsComparedAsATimeAfterTheSend() throws {
        let day: Int64 = 86_400
        let expected = [(name: "apns-expiration", value: String(1_000_000 + day))]
        for (sent, agrees) in [(1_000_000 + day + 30, true), (1_700_000_000 + day, true), (1_000_000 + 3600, false), (0, false)] {
            let found = try differences(referenceBody, headers: referenceHeaders + [(name: "apns-expiration", value: String(sent))],
                                        referenceHeaders: expected)
            #expect(found.isEmpty == agrees, "\(sent): \(found)")
        }
    }

    @Test func aFreeFieldTheSchemaDoesNotDeclareIsALintFinding() throws {
        var object = pingSpec()
        object["content"] = ["free": [["pointer": "/body/sent_at_typo", "why": "the sender's clock"]]]
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(object)])
        let found = directory.lint()
        #expect(found.contains { $0.pointer.description == "/content/free/0/pointer" && $0.message.contains("not a field the body schema declares") },
                "\(found)")
    }

    @Test func aFreeFieldWithoutWhyAndASpecWithoutContentAreLintFindings() throws {
        var object = pingSpec()
        object["content"] = ["free": [["pointer": "/body/kind"]]]
        let noWhy = try TempSpecDirectory(files: ["test/ping.apns.json": .object(object)]).lint()
        #expect(noWhy.contains { $0.pointer.description == "/content/free/0/why" }, "\(noWhy)")
        object["content"] = nil
        let none = try TempSpecDirectory(files: ["test/ping.apns.json": .object(object)]).lint()
        #expect(none.contains { $0.pointer.description == "/content" && $0.message.contains("required") }, "\(none)")
    }
}
