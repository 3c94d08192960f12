import HTTPCore
import JSON
import SpecValidator
import Testing

/// The judge reads a body through its tape when it parses the body itself, and through the
/// tree when the caller hands it one: both must give the same verdict, violations included, for
/// every example of every spec and for variants that break, drop or retype each of its values;
/// and `judgement`, the gateway's form, must say the same (a pass as the spec's index).
@Suite struct SpecTapeJudgeTests {
    /// Every place in `value`, as pointer tokens.
    static func places(in value: JSONValue, at prefix: [String] = []) -> [[String]] {
        var result = prefix.isEmpty ? [] : [prefix]
        switch value {
        case .object(let object):
            for (key, member) in object.entries { result += places(in: member, at: prefix + [key]) }
        case .array(let items):
            for (i, item) in items.enumerated() { result += places(in: item, at: prefix + [String(i)]) }
        default: break
        }
        return result
    }

    /// `document` with the value at `tokens` replaced (or removed when `replacement` is nil).
    static func replacing(_ tokens: ArraySlice<String>, in document: JSONValue, with replacement: JSONValue?) -> JSONValue? {
        guard let token = tokens.first else { return replacement }
        switch document {
        case .object(var object):
            guard let member = object[token] else { return document }
            object[token] = replacing(tokens.dropFirst(), in: member, with: replacement)
            return .object(object)
        case .array(var items):
            guard let i = Int(token), items.indices.contains(i) else { return document }
            if let inner = replacing(tokens.dropFirst(), in: items[i], with: replacement) { items[i] = inner } else { items.remove(at: i) }
            return .array(items)
        default:
            return document
        }
    }

    static let replacements: [JSONValue?] = [nil, "x", "", "é\u{301}", 7, 1.5, true, .null, ["k": 1], [1, "two"]]

    @Test func tapeAndTreeJudgeAlike() throws {
        let set = try SpecFixtures.load()
        var judged = 0
        var failing = 0
        for spec in set.specs {
            for example in spec.examples {
                var bodies = [example.body]
                for place in Self.places(in: example.body) {
                    for replacement in Self.replacements {
                        if let body = Self.replacing(place[...], in: example.body, with: replacement) { bodies.append(body) }
                    }
                }
                for body in bodies {
                    let bytes = body.bytes()
                    let tree = try JSONParser.parse(bytes)
                    let onTape = set.judge(route: example.route, method: example.method, path: example.path,
                                           headers: example.headers, body: bytes)
                    let onTree = set.judge(route: example.route, method: example.method, path: example.path,
                                           headers: example.headers, body: bytes, parsedBody: tree)
                    #expect(onTape == onTree, "\(spec.id): \(body.serialized())")
                    // The gateway's form: a pass as the spec's index, anything else the verdict itself.
                    switch set.judgement(route: example.route, method: example.method, path: example.path,
                                         fields: HTTPFields(lowercasingNames: example.headers), body: bytes) {
                    case .passed(let index):
                        #expect(onTape.passed && onTape.specID == set.specs[index].id, "\(spec.id): \(body.serialized())")
                    case .verdict(let verdict):
                        #expect(verdict == onTape, "\(spec.id): \(body.serialized())")
                    }
                    judged += 1
                    if !onTape.passed { failing += 1 }
                }
            }
        }
        // The variants must exercise both outcomes, or the comparison proves little.
        #expect(judged > 1000)
        #expect(failing > judged / 2)
        #expect(failing < judged)
    }
}
