import JSON
import Testing

/// The tape must describe exactly the tree `JSONParser.parse` builds, and exist only for
/// documents `parse` accepts.
@Suite("JSONTape")
struct JSONTapeTests {
    /// Same values, same member order (JSONValue == ignores order, the serialization does not).
    func expectSameTree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bytes = Array(text.utf8)
        let tree = try JSONParser.parse(bytes)
        let tape = try #require(JSONParser.tape(bytes), "no tape for \(text)", sourceLocation: sourceLocation)
        let rebuilt = tape.value(at: 0)
        #expect(rebuilt == tree, sourceLocation: sourceLocation)
        #expect(rebuilt.serialized() == tree.serialized(), sourceLocation: sourceLocation)
        #expect(tape.entries[0].next == UInt32(tape.entries.count), sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        #"{"aps":{"alert":{"title":"Alice","body":"ship it"},"badge":4,"mutable-content":1},"cv":"1","type":"message"}"#,
        #"  [1, -2.5e3, 0, true, false, null, "x", [], {}, [[]], {"a":{"b":[1,{"c":null}]}}]  "#,
        #""just a string""#,
        "12345678901234567890",
        "-0.0",
        #"{"text":"caf\u00e9 \ud83d\ude00 \"quoted\" \\ \/ \b\f\n\r\t","plain":"8d0e…","emoji":"😀"}"#,
        #"{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}"#,
        #"{"":"empty key","x":""}"#,
    ])
    func rebuildsTheParsedTree(_ text: String) throws {
        try expectSameTree(text)
    }

    /// A document denser than the first guess of entries per byte fills the first buffer and is
    /// built again with room for one entry per byte.
    @Test func denseDocumentsOutgrowTheFirstGuess() throws {
        try expectSameTree("[" + (0..<500).map { String($0 % 10) }.joined(separator: ",") + "]")
        try expectSameTree(String(repeating: "[", count: 200) + String(repeating: "]", count: 200))
        try expectSameTree("[" + String(repeating: "{},", count: 300) + "{}]")
        try expectSameTree("0")
    }

    /// A small body's tape is written on the stack first (`stackEntries` entries): documents
    /// of just under, at and just over that many entries are built whole, on the stack or again.
    @Test func smallDocumentsAroundTheStackBufferAreBuiltWhole() throws {
        for count in 26...40 {
            // `count` entries: the array, then its elements.
            try expectSameTree("[" + (1..<count).map { String($0 % 10) }.joined(separator: ",") + "]")
            // 1 + 2 × members entries, keys long enough to reach the size bound.
            try expectSameTree("{" + (0..<(count / 2)).map { #""key_\#($0)":"v\#($0)""# }.joined(separator: ",") + "}")
            let tape = try #require(JSONParser.tape(Array(("[" + (1..<count).map { _ in "1" }.joined(separator: ",") + "]").utf8)))
            #expect(tape.entries.count == count)
        }
    }

    @Test func manyMembersWithSimilarKeysAreNotTakenForRepeats() throws {
        // Keys sharing length and end bytes collide in the repeat filter and must still pass.
        let members = (0..<40).map { #""k\#($0 % 10)\#($0 / 10)x":\#($0)"# }
        try expectSameTree("{" + members.joined(separator: ",") + "}")
    }

    /// Strings are scanned eight bytes at a time: an escape, a control character, a closing
    /// quote or a non-ASCII byte at every offset of a long string must be seen as `parse` sees it.
    @Test func specialBytesAtEveryOffsetOfALongString() throws {
        let specials: [[UInt8]] = [Array(#"\n"#.utf8), Array(#"\""#.utf8), [0x01], [0x1F], Array("é".utf8), Array("…".utf8), [0xC3], [0x22]]
        for special in specials {
            for offset in 0..<24 {
                let content = Array(repeating: UInt8(ascii: "a"), count: offset) + special + Array(repeating: UInt8(ascii: "b"), count: 30 - offset)
                let bytes = Array(#"{"k":""#.utf8) + content + Array(#"","z":1}"#.utf8)
                let tree = try? JSONParser.parse(bytes)
                let tape = JSONParser.tape(bytes)
                #expect((tree == nil) == (tape == nil), "\(special) at \(offset)")
                if let tree, let tape { #expect(tape.value(at: 0).serialized() == tree.serialized(), "\(special) at \(offset)") }
            }
        }
    }

    @Test(arguments: [
        #"{"a":1,"a":2}"#,
        #"{"x":{"b":1,"c":2,"b":3}}"#,
        #"{"\u0061":1}"#,
        #"{"a\"b":1}"#,
    ])
    func repeatedOrEscapedKeysHaveNoTape(_ text: String) throws {
        let bytes = Array(text.utf8)
        _ = try JSONParser.parse(bytes)  // valid JSON: the tape just does not cover it
        #expect(JSONParser.tape(bytes) == nil)
    }

    @Test(arguments: [
        "", " ", "{", #"{"a":}"#, "[1,]", #"{"a":1,}"#, "01", "1.", "-", "tru", "nul", #""abc"#, "[1 2]",
        #"{"a" 1}"#, "{1:2}", #""\x""#, #""\u12""#, #""\ud800""#, "\"a\u{01}b\"", "[] []", "NaN", "1e400",
    ])
    func invalidDocumentsHaveNoTape(_ text: String) {
        let bytes = Array(text.utf8)
        #expect((try? JSONParser.parse(bytes)) == nil)
        #expect(JSONParser.tape(bytes) == nil)
    }

    @Test func invalidUTF8HasNoTape() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect((try? JSONParser.parse(bytes)) == nil)
        #expect(JSONParser.tape(bytes) == nil)
    }

    @Test func nestingBeyondTheLimitHasNoTape() {
        let deep = Array((String(repeating: "[", count: 20) + String(repeating: "]", count: 20)).utf8)
        #expect(JSONParser.tape(deep, options: .init(maxDepth: 19)) == nil)
        #expect(JSONParser.tape(deep, options: .init(maxDepth: 20)) != nil)
        #expect((try? JSONParser.parse(deep, options: .init(maxDepth: 19))) == nil)
    }

    @Test func stringsAreFlaggedAndDecoded() throws {
        let tape = try #require(JSONParser.tape(Array(#"["plain","caf\u00e9","é"]"#.utf8)))
        let strings = tape.entries.indices.filter { tape.entries[$0].kind == .string }
        #expect(strings.map { tape.string(at: $0) } == ["plain", "café", "é"])
        #expect(strings.map { tape.entries[$0].flags } == [0, JSONTape.Entry.escapedFlag | JSONTape.Entry.nonASCIIFlag, JSONTape.Entry.nonASCIIFlag])
    }
}
