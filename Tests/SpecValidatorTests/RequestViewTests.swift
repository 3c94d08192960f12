import JSON
@testable import SpecValidator
import Testing

/// References resolve alike on a tape and on the tree.
@Suite("RequestView")
struct RequestViewTests {
    static let document: JSONValue = {
        var object = JSONObject()
        for i in 0..<30 { object["key\(i % 7)_\(i)"] = .number(Double(i)) }
        object["body"] = ["type": "message", "list": [1, "two", ["three": 3]]]
        object["é"] = "accented"
        object[""] = "empty"
        object["K"] = "ascii K"
        return .object(object)
    }()

    static let paths: [[String]] = [
        ["key0_0"], ["key1_29"], ["key6_6"], ["body"], ["body", "type"], ["body", "list", "0"], ["body", "list", "2", "three"],
        ["body", "list", "3"], ["body", "list", "01"], ["é"], [""], ["K"], ["\u{212A}"], ["missing"], ["key0_0", "x"], [],
    ]

    @Test func tapeAndTreeResolveAlike() throws {
        let document = Self.document
        let tape = try #require(JSONParser.tape(document.bytes()))
        let onTape = RequestView(path: "/", headers: [], tape: tape)
        let onTree = RequestView(path: "/", headers: [], body: document)
        for path in Self.paths {
            let reference = SpecReference.body(path)
            #expect(onTape.resolve(reference) == onTree.resolve(reference), "\(path)")
            #expect(onTape.exists(reference) == (onTree.resolve(reference) != nil), "\(path)")
            if let value = onTree.resolve(reference) {
                #expect(onTape.body(at: path, equals: value), "\(path)")
            }
            #expect(!onTape.body(at: path, equals: "no such value"), "\(path)")
        }
    }

    /// The byte comparison must answer as the String one it fronts for: ASCII case folding of
    /// the candidate only, exact bytes, and canonical equivalence for non-ASCII names.
    @Test func headerNamesCompareAsBefore() {
        func reference(_ candidate: String, _ lowercased: String) -> Bool {
            guard candidate.utf8.count == lowercased.utf8.count else { return false }
            if candidate == lowercased { return true }
            return zip(candidate.utf8, lowercased.utf8).allSatisfy { x, y in (x >= 0x41 && x <= 0x5A ? x + 0x20 : x) == y }
        }
        let names = ["apns-topic", "APNS-Topic", "apns-topiC", "Apns-topic", "apns_topic", "APNS-TOPIC", "content-type",
                     "x", "X", "", "é-header", "É-header", "e\u{301}-header", "k", "K", "\u{212A}", "caf\u{E9}", "cafe\u{301}",
                     "a\u{301}\u{316}", "a\u{316}\u{301}", "x-long-header-name-with-many-bytes", "X-LONG-HEADER-NAME-WITH-MANY-BYTES"]
        for candidate in names {
            for lowercased in names {
                #expect(RequestView.equalsIgnoringASCIICase(candidate, lowercased) == reference(candidate, lowercased),
                        "\(candidate) vs \(lowercased)")
            }
        }
    }
}
