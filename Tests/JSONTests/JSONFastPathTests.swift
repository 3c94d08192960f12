import Testing
import JSON

/// The hot-path shortcuts (word-at-a-time escaping, ASCII checks, top-level member scan) must
/// give exactly what the plain implementations give.
@Suite struct JSONFastPathTests {
    /// The escaping rule written out byte by byte, as the reference.
    private static func referenceEscaped(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x22]
        let hex = Array("0123456789abcdef".utf8)
        for c in bytes {
            switch c {
            case 0x22, 0x5C: out += [0x5C, c]
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case 0..<0x20, 0x7F: out += Array(#"\u00"#.utf8) + [hex[Int(c >> 4)], hex[Int(c & 0xF)]]
            default: out.append(c)
            }
        }
        return out + [0x22]
    }

    @Test(arguments: Array(UInt8(0)...UInt8(0x7F)))
    func everyASCIIByteIsEscapedAsTheRuleSaysAtEveryOffset(byte: UInt8) {
        // Lengths and offsets across 8-byte word boundaries, with clean text around the byte.
        for length in [1, 7, 8, 9, 16, 17, 23] {
            for offset in 0..<length {
                var input = Array(repeating: UInt8(ascii: "a"), count: length)
                input[offset] = byte
                var writer = JSONWriter()
                writer.string(utf8: input)
                #expect(writer.bytes == Self.referenceEscaped(input), "byte \(byte) at \(offset) of \(length)")
            }
        }
    }

    /// A word holding several bytes to escape (the escaper keeps the word up to its first one,
    /// then starts the next word after it), next to multibyte text.
    @Test func twoEscapesInAnyPositionsMatchTheReference() {
        let escapes: [UInt8] = [0x22, 0x5C, 0x0A, 0x01, 0x1F, 0x7F, 0x09]
        // ASCII with 3-byte characters between: escapes go only where the filler is ASCII, so
        // the input stays valid UTF-8.
        let filler = Array("ab€cd€efgh€ijk€lmnop".utf8)
        let asciiPositions = filler.indices.filter { filler[$0] < 0x80 }
        for first in escapes {
            for second in escapes {
                for i in asciiPositions {
                    for j in asciiPositions where j >= i {
                        var input = filler
                        input[i] = first
                        input[j] = second
                        var writer = JSONWriter()
                        writer.string(utf8: input)
                        #expect(writer.bytes == Self.referenceEscaped(input), "\(first) at \(i), \(second) at \(j)")
                        // Already checked as UTF-8: the same bytes.
                        var checked = JSONWriter()
                        checked.string(validUTF8: input)
                        #expect(checked.bytes == writer.bytes)
                    }
                }
            }
        }
    }

    @Test(arguments: [0, 1, -1, 9, 10, -10, 1_764_432_000_123_456_789, Int.max, Int.min, Int.min + 1])
    func integersAreWrittenAsTheirDecimalText(_ value: Int) {
        var writer = JSONWriter()
        writer.int(value)
        #expect(writer.bytes == Array(String(value).utf8))
        var unsigned = JSONWriter()
        unsigned.uint(UInt64(value.magnitude))
        #expect(unsigned.bytes == Array(String(value.magnitude).utf8))
    }

    @Test func mixedEscapesAndMultibyteTextMatchTheReference() {
        let text = "{\"cv\":\"1\",\"name\":\"Zoë \\ \u{7F}\t\u{1F600}\"}\n" + String(repeating: "x\"", count: 40)
        var writer = JSONWriter()
        writer.string(text)
        #expect(writer.bytes == Self.referenceEscaped(Array(text.utf8)))
        var empty = JSONWriter()
        empty.string("")
        #expect(empty.bytes == Array(#""""#.utf8))
    }

    @Test func utf8ChecksAgreeWithStringValidation() {
        let samples: [[UInt8]] = [[], Array("plain ascii text, longer than a word".utf8), Array("é".utf8),
                                  Array("abcdefgh\u{1F600}".utf8), [0x61, 0xFF], [0xC3], Array(repeating: 0x7F, count: 17),
                                  Array("abcdefghijklmno".utf8) + [0x80]]
        for bytes in samples {
            let valid = String(validating: bytes, as: UTF8.self) != nil
            #expect(UTF8Check.isValid(bytes) == valid, "\(bytes)")
            #expect(bytes.withUnsafeBufferPointer { UTF8Check.isASCII($0) } == bytes.allSatisfy { $0 < 0x80 }, "\(bytes)")
        }
    }

    /// Every boundary of table 3-7 (lead bytes, second-byte ranges after E0, ED, F0, F4, truncation),
    /// then random byte strings biased towards multi-byte forms: the same answer as the standard library.
    @Test func wellFormedUTF8AgreesWithStringValidation() {
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                    0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        var samples: [[UInt8]] = []
        for a in interesting {
            samples.append([a])
            for b in interesting {
                samples.append([a, b])
                for c in [UInt8(0x80), 0xBF, 0x41] {
                    samples.append([a, b, c])
                    samples.append([a, b, c, 0x80])
                    samples.append([0x61, a, b, c, 0xBF, 0x62])
                }
            }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20000 {
            let length = Int.random(in: 0...9, using: &generator)
            samples.append((0..<length).map { _ in interesting.randomElement(using: &generator) ?? 0 })
        }
        for bytes in samples {
            let expected = String(validating: bytes, as: UTF8.self) != nil
            let found = bytes.withUnsafeBufferPointer { UTF8Check.isWellFormed($0) }
            if found != expected { Issue.record("\(bytes.map { String($0, radix: 16) }): \(found), String says \(expected)") }
        }
    }

    /// The scan must accept and reject exactly what `parse` does, with the same error.
    @Test(arguments: [
        #"{"aps":{"alert":"hi"},"x":[1,2,{"y":"z"}]}"#, #"{"x":1}"#, "{}", " { \"aps\" : 3 } ",
        #"{"aps":1,"aps":{"sound":"a"}}"#, #"{"\u0061ps":"escaped key"}"#, #"{"a\"ps":1,"aps":true}"#,
        #"{"conversation_name":"Engineering","aps":null}"#, #"{"é":"ü","aps":"\ud83d\ude00"}"#,
        "[1,2]", "\"aps\"", "12", "null",
        "", "{", #"{"a":1,}"#, "[1,]", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":-}"#, #"{"a":tru}"#, #"{"a":"abc}"#,
        "{\"a\":\"x\u{01}\"}", #"{"a":"\x"}"#, #"{"a":"\ud800"}"#, #"{"a":"\u12zz"}"#, "{} {}", #"{"a":1e999}"#,
        #"{"a" 1}"#, #"{"a":1 "b":2}"#, #"{1:2}"#, #"{"aps":[1 2]}"#, #"{"x":[[[[1]]]]}"#,
        // Numbers are skipped without their value, except those that could be out of range.
        #"{"a":-0,"aps":1793952045000}"#, #"{"a":12345678901234567,"aps":-9999999999999999}"#,
        #"{"a":1234567890123456789012345678901234567890,"aps":-1.5e+3}"#, #"{"a":1E5,"b":0.0000,"aps":[-0.5,2e-3]}"#,
        #"{"a":-01}"#, #"{"a":1e}"#, #"{"a":1e+}"#, #"{"a":-1e999}"#, #"{"a":2.5E308}"#, #"{"aps":1,"b":-}"#,
        "{\"\u{e9}\":1,\"aps\":2}", "{\"ap\u{e9}\":1}",
    ])
    func memberScanAgreesWithTheParser(text: String) {
        let bytes = Array(text.utf8)
        let options = JSONParser.Options(maxDepth: 3)
        let parsed = Result { () throws(JSONError) -> JSONValue in try JSONParser.parse(bytes, options: options) }
        let scanned = Result { () throws(JSONError) -> JSONParser.TopLevelMember in
            try JSONParser.member("aps", ofTopLevelObjectIn: bytes, options: options)
        }
        switch (parsed, scanned) {
        case (.success(.object(let object)), .success(let member)):
            #expect(member == (object["aps"].map { .found($0) } ?? .absent))
        case (.success, .success(let member)):
            #expect(member == .notAnObject)
        case (.failure(let parseError), .failure(let scanError)):
            #expect(parseError == scanError)
        default:
            Issue.record("parse gave \(parsed), the scan \(scanned)")
        }
    }

    /// A wanted key that is not ASCII is compared as a String (canonical equivalence), as parse does.
    @Test func nonASCIIWantedKeyIsComparedAsText() throws {
        let decomposed = Array("{\"e\u{301}\":1}".utf8)
        #expect(try JSONParser.member("\u{e9}", ofTopLevelObjectIn: decomposed) == .found(.number(1)))
        #expect(try JSONParser.member("\u{e9}", ofTopLevelObjectIn: Array(#"{"e":1}"#.utf8)) == .absent)
    }

    @Test func memberScanWithDuplicateRejectionRejects() {
        #expect(throws: JSONError.self) {
            _ = try JSONParser.member("aps", ofTopLevelObjectIn: Array(#"{"a":1,"a":2}"#.utf8), options: .init(duplicateKeys: .reject))
        }
    }

    @Test func invalidUTF8InASkippedValueIsStillAnError() {
        let bytes: [UInt8] = Array(#"{"x":""#.utf8) + [0xFF] + Array(#"","aps":1}"#.utf8)
        #expect(throws: JSONError.self) { _ = try JSONParser.member("aps", ofTopLevelObjectIn: bytes) }
    }
}
