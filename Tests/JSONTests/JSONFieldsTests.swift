import JSON
import Testing

/// The one typed reader of hand-written and tool-written JSON: every error names the key path.
@Suite struct JSONFieldsTests {
    func fields(_ text: String, allowed: [String]? = nil) throws -> JSONFields {
        try JSONFields(JSONParser.parse(text), allowed: allowed)
    }

    @Test func errorsNameTheDottedKeyPath() throws {
        let root = try fields(#"{"a": {"b": [1, "x"]}, "n": "7"}"#)
        let a = try root.requiredObject("a")
        #expect(throws: JSONFieldError(keyPath: "a.b[1]", problem: #"expected a whole number between 0 and 9, found "x""#)) {
            try a.ints("b", range: 0...9)
        }
        #expect(throws: JSONFieldError(keyPath: "n", problem: #"expected a whole number, found "7""#)) {
            try root.int("n", range: 0...9)
        }
        #expect(throws: JSONFieldError(keyPath: "a.c", problem: "required (an array)")) { try a.requiredArray("c") }
        #expect(throws: JSONFieldError(keyPath: "z", problem: "unknown key (allowed: a)")) { try fields(#"{"z": 1}"#, allowed: ["a"]) }
    }

    @Test func requiredStringsMayBeEmptyOnlyWhenAllowed() throws {
        let root = try fields(#"{"reason": "", "flag": null}"#)
        #expect(try root.requiredString("reason", allowEmpty: true) == "")
        #expect(throws: JSONFieldError(keyPath: "reason", problem: "required (a non-empty string)")) {
            try root.requiredString("reason")
        }
        // null reads as absent.
        #expect(throws: JSONFieldError(keyPath: "flag", problem: "required (true or false)")) { try root.requiredBool("flag") }
        #expect(try root.bool("flag") == nil)
    }

    @Test func numbersKeepTheirRange() throws {
        let root = try fields(#"{"rate": 1.5, "list": [3, 4]}"#)
        #expect(try root.requiredNumber("rate") == 1.5)
        #expect(throws: JSONFieldError(keyPath: "rate", problem: "must be between 2.0 and 3.0, found 1.5")) {
            try root.requiredNumber("rate", range: 2...3)
        }
        #expect(try root.ints("list", range: 0...9) == [3, 4])
        #expect(try root.ints("absent", range: 0...9) == nil)
    }
}
