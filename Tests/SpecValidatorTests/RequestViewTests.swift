import HTTPCore
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

    /// Headers from a record line or an example may come in any ASCII case: their names are
    /// lowered as a transport lowers them, so a rule's lowercase name finds them; nothing else
    /// about a name changes (non-ASCII bytes are kept as they are).
    @Test func headerNamesAreFoundInAnyASCIICase() {
        let sent = ["apns-topic", "APNS-Topic", "apns-topiC", "Apns-topic", "APNS-TOPIC"]
        for name in sent {
            let view = RequestView(path: "/", headers: HTTPFields(lowercasingNames: [(name, "com.a")]), body: nil)
            #expect(view.header("apns-topic") == "com.a", "\(name)")
        }
        let others = ["apns_topic", "apns-topics", "x-apns-topic", "\u{212A}"]
        for name in others {
            let view = RequestView(path: "/", headers: HTTPFields(lowercasingNames: [(name, "v")]), body: nil)
            #expect(view.header("apns-topic") == nil, "\(name)")
        }
        let nonASCII = RequestView(path: "/", headers: HTTPFields(lowercasingNames: [("É-Header", "v")]), body: nil)
        #expect(nonASCII.header("É-header") == "v")
        #expect(nonASCII.header("é-header") == nil)
    }
}
