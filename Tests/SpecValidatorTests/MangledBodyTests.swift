import JSON
import PushproofTestSupport
import SpecValidator
import Testing

/// Bad input never crashes the judge, and its tape never accepts what the parser refuses:
/// every spec example's bytes, mangled at random (bytes dropped, fragments of JSON syntax and
/// escapes inserted, the rest cut off) with a fixed seed so a failure can be replayed.
@Suite struct MangledBodyTests {
    static let fragments: [[UInt8]] = ["{", "}", "[", "]", "\"", ",", ":", "\\", "\\u", "\\ud800", "\\udc00", "1e999", "-0",
                                       "true", "nul", "é", "\u{1}", "\u{7f}", "\"aps\"", "\"type\"", " ", "0000", "1.5e-3",
                                       "{\"a\":{\"b\":[1,2,{\"c\":\"d\"}]}}"].map { Array($0.utf8) } + [[0xC3], [0xFF], [0xED, 0xA0, 0x80]]

    @Test func mangledBodiesNeverCrashAndTheTapeAgreesWithTheParser() throws {
        let set = try SpecFixtures.load()
        var random = SplitMix64(seed: 0x5EED)
        var judged = 0, parsed = 0
        for spec in set.specs {
            for example in spec.examples {
                let original = example.bodyBytes
                for _ in 0..<400 {
                    var bytes = original
                    for _ in 0...random.next(below: 5) {
                        let position = random.next(below: bytes.count + 1)
                        switch random.next(below: 10) {
                        case 0...3 where !bytes.isEmpty: bytes.remove(at: min(position, bytes.count - 1))
                        case 9: bytes.removeSubrange(position...)
                        default: bytes.insert(contentsOf: Self.fragments[random.next(below: Self.fragments.count)], at: position)
                        }
                    }
                    let tree = try? JSONParser.parse(bytes)
                    if JSONParser.tape(bytes) != nil {
                        #expect(tree != nil, "the tape accepted what the parser refuses: \(String(decoding: bytes, as: UTF8.self))")
                    }
                    let verdict = set.judge(route: example.route, method: example.method, path: example.path,
                                            headers: example.headers, body: bytes)
                    if let tree {
                        parsed += 1
                        let onTree = set.judge(route: example.route, method: example.method, path: example.path,
                                               headers: example.headers, body: bytes, parsedBody: tree)
                        #expect(verdict == onTree, "\(spec.id): \(String(decoding: bytes, as: UTF8.self))")
                    } else {
                        #expect(!verdict.passed, "a body that is not JSON passed \(spec.id)")
                    }
                    judged += 1
                }
            }
        }
        #expect(judged >= 5000)
        #expect(parsed > judged / 20, "some mangled bodies must still be JSON, or the comparison proves little")
    }
}
