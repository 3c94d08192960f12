import HTTPCore
import JSON
import Testing
@testable import SpecValidator

@Suite struct SpecExpressionTests {
    let config: JSONValue = ["poolse": ["bundle_ids": ["com.a", "com.b"]]]
    let request = RequestView(
        path: "/3/device/ab",
        headers: HTTPFields(lowercasingNames: [("apns-topic", "com.a"), ("APNS-Expiration", "1794038445")]),
        body: ["call_id": "4a69…", "media": "audio", "caller_name": "Alice", "conversation_name": "",
               "sent_at": 1_793_952_045_999, "unread": "12", "n": 1.5])

    func expression(_ json: JSONValue) throws -> SpecExpression { try SpecExpression.parse(json, config: config) }
    func values(_ json: JSONValue) throws -> [JSONValue]? { try expression(json).candidates(request) }

    @Test func concatenationUsesTheStringFormsOfNumbers() throws {
        #expect(try values(["concat": ["missed-", ["ref": "/body/call_id"]]]) == ["missed-4a69…"])
        #expect(try values(["concat": [["ref": "/body/sent_at"], "/", ["ref": "/body/n"]]]) == ["1793952045999/1.5"])
    }

    @Test func arithmeticRoundsMillisecondsDownToSeconds() throws {
        #expect(try values(["add": [["div": [["ref": "/body/sent_at"], 1000]], 86400]]) == [1_794_038_445])
        #expect(try values(["number": ["ref": "/body/unread"]]) == [12])
        #expect(try values(["string": ["ref": "/body/sent_at"]]) == ["1793952045999"])
    }

    @Test func switchIfAndOneOf() throws {
        let media: JSONValue = ["switch": ["ref": "/body/media"], "cases": ["audio": "voice", "video": "video"]]
        #expect(try values(media) == ["voice"])
        let title: JSONValue = ["if": ["nonEmpty": ["ref": "/body/conversation_name"]],
                                "then": ["ref": "/body/conversation_name"], "else": ["ref": "/body/caller_name"]]
        #expect(try values(title) == ["Alice"])
        #expect(try values(["if": ["exists": "/body/missing"], "then": "x"]) == [])
        #expect(try values(["oneOf": ["ref": "/config/poolse/bundle_ids"]]) == ["com.a", "com.b"])
        #expect(try values(["concat": [["oneOf": ["ref": "/config/poolse/bundle_ids"]], ".voip"]]) == ["com.a.voip", "com.b.voip"])
    }

    @Test func aMissingReferenceMakesTheExpressionUnevaluable() throws {
        #expect(try values(["concat": ["missed-", ["ref": "/body/missing"]]]) == nil)
        #expect(try values(["oneOf": [["ref": "/body/missing"], "x"]]) == ["x"])
        #expect(try SpecCondition.parse(["equals": [["ref": "/body/missing"], "x"]], config: config).evaluate(request) == nil)
        #expect(try SpecCondition.parse(["exists": "/body/missing"], config: config).evaluate(request) == false)
        #expect(try SpecCondition.parse(["not": ["exists": "/headers/apns-expiration"]], config: config).evaluate(request) == false)
    }

    @Test func objectsTakeEveryCombination() throws {
        let objects = try values(["object": ["title": ["oneOf": ["a", "b"]], "body": "x"]])
        #expect(objects == [["title": "a", "body": "x"], ["title": "b", "body": "x"]])
    }

    @Test func headersAreReadCaseInsensitivelyAndAsNumbersWhenComparedWithOne() throws {
        #expect(request.resolve(.header("apns-expiration")) == "1794038445")
        let expiry = try expression(["add": [["div": [["ref": "/body/sent_at"], 1000]], 86400]])
        #expect(expiry.accepts("1794038445", request, tolerance: 0, isHeader: true))
        #expect(expiry.accepts("1794038500", request, tolerance: 60, isHeader: true))
        #expect(!expiry.accepts("1794038500", request, tolerance: 0, isHeader: true))
        #expect(!expiry.accepts("1794038445", request, tolerance: 0, isHeader: false), "a JSON string is not a number")
    }

    /// The fast path may only say yes when the candidates agree.
    @Test(arguments: [
        ("Missed voice call", true), ("Missed voice call from Alice", false), ("Missed video call", false), ("Missed voice cal", false),
    ])
    func acceptsAgreesWithCandidates(text: String, accepted: Bool) throws {
        let body = try expression(["if": ["nonEmpty": ["ref": "/body/conversation_name"]],
                                   "then": ["concat": ["Missed ", ["switch": ["ref": "/body/media"], "cases": ["audio": "voice", "video": "video"]], " call from ", ["ref": "/body/caller_name"]]],
                                   "else": ["concat": ["Missed ", ["switch": ["ref": "/body/media"], "cases": ["audio": "voice", "video": "video"]], " call"]]])
        let found = JSONValue.string(text)
        #expect(body.accepts(found, request, tolerance: 0, isHeader: false) == accepted)
        #expect((body.candidates(request) ?? []).contains(found) == accepted)
    }

    @Test(arguments: [("0", 0.0), ("-5", -5.0), ("1.25", 1.25), ("1793952045000", 1_793_952_045_000.0)])
    func decimalsParse(text: String, value: Double) {
        #expect(parseDecimal(text) == value)
    }

    @Test(arguments: ["", "-", "1.", ".5", "1e5", "+1", " 1", "1 ", "0x10", "1.2.3"])
    func nonDecimalsDoNotParse(text: String) {
        #expect(parseDecimal(text) == nil)
    }
}
