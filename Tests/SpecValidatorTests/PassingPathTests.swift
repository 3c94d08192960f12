import JSON
import PushModel
@testable import SpecValidator
import Testing

/// The judge's passing path (`SpecSet.passingVerdict`) decides on bytes only what the full judge
/// would decide the same way, and leaves the rest to it.
@Suite struct PassingPathTests {
    /// A topic found on its bytes is claimed by the product `claimants` names; a topic spelled
    /// with other bytes (a decomposed "é") is not found on bytes, though `claimants` finds it.
    @Test func topicsFoundOnTheirBytesAreTheOnesClaimantsFinds() {
        let config: JSONValue = ["a": ["bundle_ids": ["com.a.app", "x", "caf\u{E9}"]], "b": ["bundle_ids": ["com.b.app"]]]
        let identities = ProductIdentities(products: ["a", "b"], config: config)
        let topics = ["com.a.app", "com.a.app.voip", "com.b.app", "com.b.app.voip", "com.b.app.complication", "x", "x.voip",
                      "caf\u{E9}", "cafe\u{301}", "cafe\u{301}.voip", "com.c.app", "com.a.ap", "com.a.app.", "", "X"]
        var foundOnBytes = 0
        for topic in topics {
            let onBytes = Array(topic.utf8).withUnsafeBufferPointer { identities.product(ofTopic: $0) }
            let claimed = try? identities.claimants(route: .apns, path: "/3/device/x", topic: topic).get()
            if let onBytes {
                foundOnBytes += 1
                #expect(claimed == [onBytes], "\(topic)")
            } else if topic.unicodeScalars.contains(where: { $0 == "\u{301}" }) {
                #expect(claimed == [0], "\(topic): claimed as a String, not on its bytes")
            } else {
                #expect(claimed == nil, "\(topic)")
            }
        }
        #expect(foundOnBytes == 8)
    }

    /// `value` as JSON with the first character of every string value written as a `\u`
    /// escape: the tape then holds it escaped, and the passing path must leave the strings a
    /// match compares to `MatchCondition.holds`.
    static func escapingFirstCharacters(_ value: JSONValue) -> String {
        switch value {
        case .string(let text):
            guard let first = text.unicodeScalars.first, first.value < 0x80 else { return JSONValue.string(text).serialized() }
            let hex = String(first.value, radix: 16)
            let rest = JSONValue.string(String(text.unicodeScalars.dropFirst())).serialized().dropFirst()
            return "\"\\u" + String(repeating: "0", count: 4 - hex.count) + hex + rest
        case .array(let items):
            return "[" + items.map(escapingFirstCharacters).joined(separator: ",") + "]"
        case .object(let object):
            return "{" + object.entries.map { JSONValue.string($0.key).serialized() + ":" + escapingFirstCharacters($0.value) }
                .joined(separator: ",") + "}"
        default:
            return value.serialized()
        }
    }

    @Test func escapedStringsAreJudgedAsTheirText() throws {
        let set = try SpecFixtures.load()
        var judged = 0
        for spec in set.specs {
            for example in spec.examples {
                let plain = set.judge(example)
                let bytes = Array(Self.escapingFirstCharacters(example.body).utf8)
                #expect(JSONParser.tape(bytes) != nil)
                let onTape = set.judge(route: example.route, method: example.method, path: example.path,
                                       headers: example.headers, body: bytes)
                let onTree = set.judge(route: example.route, method: example.method, path: example.path,
                                       headers: example.headers, body: bytes, parsedBody: try JSONParser.parse(bytes))
                #expect(onTape == onTree, "\(spec.id): \(example.name)")
                #expect(onTape == plain, "\(spec.id): \(example.name)")
                judged += 1
            }
        }
        #expect(judged > 10)
    }
}
