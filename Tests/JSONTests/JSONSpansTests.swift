import JSON
import Testing

/// `parse(_:leavingRaw:)`, `elementRanges(ofArrayIn:)` and `isValid`: the bytes of a value as
/// written, and the same acceptance as `parse`.
@Suite("JSONSpans")
struct JSONSpansTests {
    func text(_ bytes: [UInt8], _ range: Range<Int>?) -> String? {
        range.map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    @Test func theRawMemberIsItsBytesAndTheRestIsTheTree() throws {
        let payload = #"{"b":1.50,"a":{"k":1,"k":2},"z":[1E2, -0]}"#
        let bytes = Array((#"{"v":2, "json" :  "# + payload + #" ,"body":"x","n":[{"json":3}]}"#).utf8)
        let parsed = try JSONParser.parse(bytes, leavingRaw: "json")
        #expect(text(bytes, parsed.raw) == payload)
        // The rest is what `parse` builds, less the raw member (a nested "json" is not the top level's).
        var expected = try #require(try JSONParser.parse(bytes).objectValue)
        expected["json"] = nil
        #expect(parsed.value == .object(expected))
        #expect(parsed.value["json"] == nil)
        #expect(parsed.value["n"]?.arrayValue?.first?["json"] == .number(3))
    }

    @Test(arguments: ["1", "\"s\\n\"", "null", "[]", "{}", "-1.0e-3", "true"])
    func anyValueIsLeftRaw(_ value: String) throws {
        let bytes = Array(("{\"json\":" + value + "}").utf8)
        #expect(text(bytes, try JSONParser.parse(bytes, leavingRaw: "json").raw) == value)
    }

    @Test func aRepeatedRawKeyKeepsTheLastAsParseDoesOrIsRefused() throws {
        let bytes = Array(#"{"json":1,"json":[2]}"#.utf8)
        #expect(text(bytes, try JSONParser.parse(bytes, leavingRaw: "json").raw) == "[2]")
        #expect(throws: JSONError.self) {
            try JSONParser.parse(bytes, leavingRaw: "json", options: .init(duplicateKeys: .reject))
        }
    }

    @Test func withoutTheKeyOrAnObjectThereIsNoRawRange() throws {
        #expect(try JSONParser.parse(Array(#"{"body":"x"}"#.utf8), leavingRaw: "json").raw == nil)
        let array = try JSONParser.parse(Array(#"[{"json":1}]"#.utf8), leavingRaw: "json")
        #expect(array.raw == nil)
        #expect(array.value == [["json": 1]])
    }

    /// Whatever `parse` refuses, the raw member included, is refused with the same error.
    @Test(arguments: [
        #"{"json":{"a":}}"#, #"{"json":[1,]}"#, #"{"json":"\x"}"#, #"{"json":01}"#, #"{"json":1"#, #"{"json":1} x"#,
        #"{"json":[[[[1]]]]}"#,
    ])
    func whatParseRefusesIsRefusedAlike(_ text: String) {
        let bytes = Array(text.utf8)
        let options = JSONParser.Options(maxDepth: 4)
        var expected: JSONError?
        do { _ = try JSONParser.parse(bytes, options: options) } catch { expected = error }
        #expect(expected != nil, "parse accepted \(text)")
        #expect(throws: expected!) { try JSONParser.parse(bytes, leavingRaw: "json", options: options) }
        #expect(!JSONParser.isValid(bytes, options: options))
    }

    @Test func elementRangesAreEachElementsBytes() throws {
        let elements = [#"{"v":2,"json":{"a":1,"a":2}}"#, "1.0", #""x""#, "[ ]"]
        let bytes = Array((" [ " + elements.joined(separator: " ,\t") + " ] ").utf8)
        let ranges = try #require(try JSONParser.elementRanges(ofArrayIn: bytes))
        #expect(ranges.map { text(bytes, $0) } == elements)
        #expect(try JSONParser.elementRanges(ofArrayIn: Array("[]".utf8)) == [])
        #expect(try JSONParser.elementRanges(ofArrayIn: Array(#"{"a":[1]}"#.utf8)) == nil)
        #expect(throws: JSONError.self) { try JSONParser.elementRanges(ofArrayIn: Array("[1,]".utf8)) }
        #expect(throws: JSONError.self) { try JSONParser.elementRanges(ofArrayIn: Array("[1] [2]".utf8)) }
    }

    @Test func isValidAgreesWithParse() {
        for text in ["{}", " [1, {\"a\":null}] ", "\"é\"", "{", "[1,]", "nul", "", "1 2", "{\"a\":\"\u{1}\"}"] {
            let bytes = Array(text.utf8)
            #expect(JSONParser.isValid(bytes) == ((try? JSONParser.parse(bytes)) != nil), "\(text)")
        }
        #expect(!JSONParser.isValid([0x22, 0xFF, 0x22]))
    }
}
