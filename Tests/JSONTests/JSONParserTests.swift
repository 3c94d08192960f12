import Testing
import JSON
#if canImport(Glibc)
import Glibc
#endif

@Suite struct JSONParserTests {
    @Test func parsesTheRingPayloadWithNumbersAndBooleansDistinct() throws {
        let value = try JSONParser.parse(#"{"cv":"1","has_video":true,"ring_deadline":1793952045000,"x":null,"a":[1,2.5,-3e2]}"#)
        #expect(value["cv"] == "1")
        #expect(value["has_video"] == .bool(true))
        #expect(value["ring_deadline"]?.intValue == 1_793_952_045_000)
        #expect(value["x"]?.isNull == true)
        #expect(value["a"] == [1, 2.5, -300])
        #expect(value["has_video"] != .number(1))
    }

    @Test func keepsKeyOrder() throws {
        let value = try JSONParser.parse(#"{"b":1,"a":2,"c":3}"#)
        #expect(value.objectValue?.keys == ["b", "a", "c"])
        #expect(value.serialized() == #"{"b":1,"a":2,"c":3}"#)
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONParser.parse(#""a\"b\\c\/d\n\u00e9\ud83d\ude00""#)
        #expect(value == .string("a\"b\\c/d\né😀"))
    }

    @Test(arguments: [
        ("", "unexpected end of input"),
        ("{", "expected a string key"),
        (#"{"a":1,}"#, "expected a string key"),
        ("[1,]", "unexpected character"),
        ("01", "leading zero"),
        ("1.", "invalid fraction"),
        ("-", "invalid number"),
        ("1e", "invalid exponent"),
        ("tru", "invalid literal"),
        ("NaN", "unexpected character"),
        (#""abc"#, "unterminated string"),
        ("\"a\u{01}\"", "control character"),
        (#""\x""#, "invalid escape"),
        (#""\ud800""#, "unpaired surrogate"),
        (#""\u12zz""#, "invalid hex digit"),
        (#""\u12""#, "truncated"),
        ("{} {}", "unexpected data after"),
        ("1e999", "out of range"),
    ])
    func rejectsMalformedInputWithAMessage(input: String, expected: String) {
        #expect {
            _ = try JSONParser.parse(input)
        } throws: { error in
            (error as? JSONError)?.message.contains(expected) == true
        }
    }

    /// Integers of up to 16 characters are read digit by digit; every other number goes
    /// through strtod. Both must give strtod's value, at every length, around the 16-character
    /// line, beside what can follow a number, and on the tape as in the tree.
    @Test func integersAgreeWithStrtodAtEveryLength() throws {
        var texts = ["0", "-0", "7", "-7", "10", "1793952045000", "9007199254740993", "-900719925474099",
                     "9999999999999999", "-999999999999999", "99999999999999999", "12345678901234567890",
                     "1.5", "-1.5e3", "1E2", "2e-2", "10.0"]
        for length in 1...18 {
            texts.append(String(repeating: "9", count: length))
            texts.append("-" + String(repeating: "8", count: length))
            texts.append("1" + String(repeating: "0", count: length - 1))
        }
        for text in texts {
            let expected = strtod(text, nil)
            for document in [text, "[\(text)]", "[\(text),1]", "{\"n\":\(text)}", " \(text) ", "[\(text)\n]"] {
                let value = try JSONParser.parse(document)
                let number = value.arrayValue?.first ?? value["n"] ?? value
                #expect(number == .number(expected), "\(document)")
                let tape = try #require(JSONParser.tape(Array(document.utf8)), "\(document)")
                #expect(tape.value(at: 0) == value, "\(document)")
            }
        }
        for (text, message) in [("-", "invalid number"), ("-a", "invalid number"), ("01", "leading zero"), ("-01", "leading zero"),
                                 ("1.", "invalid fraction"), ("12e", "invalid exponent"), ("123x", "unexpected data after")] {
            #expect { _ = try JSONParser.parse(text) } throws: { error in (error as? JSONError)?.message.contains(message) == true }
            #expect(JSONParser.tape(Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONError.self) { _ = try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    @Test func limitsNestingInsteadOfExhaustingTheStack() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONError.self) { _ = try JSONParser.parse(deep) }
        #expect(throws: Never.self) { _ = try JSONParser.parse(String(repeating: "[", count: 200) + String(repeating: "]", count: 200)) }
    }

    @Test func duplicateKeysLastWinsOrRejected() throws {
        let text = #"{"a":1,"a":2}"#
        #expect(try JSONParser.parse(text)["a"] == 2)
        #expect(throws: JSONError.self) { _ = try JSONParser.parse(text, options: .init(duplicateKeys: .reject)) }
    }

    @Test func equalityFollowsJSONSchema() {
        #expect(JSONValue.number(1) == JSONValue.number(1.0))
        #expect(JSONValue(dictionaryLiteral: ("a", 1), ("b", 2)) == JSONValue(dictionaryLiteral: ("b", 2), ("a", 1)))
        #expect(JSONValue.array([1, 2]) != JSONValue.array([2, 1]))
        #expect(JSONValue.number(1.5).intValue == nil)
    }
}

@Suite struct JSONWriterTests {
    @Test func escapesAndRoundTrips() throws {
        let original: JSONValue = ["text": "line\n\"quoted\" \u{01} é", "n": -12, "f": 0.25, "big": 1793952045000, "t": true, "z": nil, "a": []]
        let parsed = try JSONParser.parse(original.bytes())
        #expect(parsed == original)
    }

    @Test func writerInsertsCommas() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a"); writer.int(1)
        writer.key("b"); writer.beginArray(); writer.string("x"); writer.bool(false); writer.endArray()
        writer.key("c"); writer.raw(Array(#"{"d":null}"#.utf8))
        writer.endObject()
        writer.newline()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "{\"a\":1,\"b\":[\"x\",false],\"c\":{\"d\":null}}\n")
    }

    @Test func invalidUTF8BytesBecomeReplacementCharacters() throws {
        var writer = JSONWriter()
        writer.string(utf8: [0x61, 0xFF, 0x62])
        #expect(try JSONParser.parse(writer.bytes) == .string("a\u{FFFD}b"))
    }

    @Test func nonFiniteNumbersAreWrittenAsNull() {
        #expect(JSONValue.number(.infinity).serialized() == "null")
    }
}

@Suite struct JSONPointerTests {
    @Test func escapesAndResolves() throws {
        let pointer = JSONPointer(tokens: ["a/b", "m~n", "0"])
        #expect(pointer.description == "/a~1b/m~0n/0")
        #expect(JSONPointer(pointer.description) == pointer)
        let document: JSONValue = ["a/b": ["m~n": ["first"]]]
        #expect(pointer.resolve(in: document) == "first")
        #expect(JSONPointer("/a~1b/missing")?.resolve(in: document) == nil)
        #expect(JSONPointer("no-slash") == nil)
        #expect(JSONPointer("/a~2") == nil)
        #expect(JSONPointer("/a~1b/m~0n/01")?.resolve(in: document) == nil)
    }
}
