import JSON

// The small expression language of `derived` rules (documented in Specs/README.md).
// An expression yields a set of candidate values: `oneOf` is a union, `concat` and `object`
// take the cartesian product, an `if` without `else` whose condition is false yields nothing.
// A reference to something the request does not carry makes the expression unevaluable (nil):
// the rule is then skipped, because presence is the body schema's or a header rule's job.

/// A place a rule reads: a request header, a point in the parsed body, or a configuration
/// constant (folded when the spec is compiled).
enum SpecReference: Sendable, Equatable {
    case header(String)          // lowercased name
    case body([String])          // pointer tokens below /body
    case constant(JSONValue)     // /config/... resolved at load time
    case path                    // the request path, /request/path

    /// Parses `/headers/<name>`, `/body/...`, `/config/...`, `/request/path`.
    static func parse(_ text: String, config: JSONValue) throws(SpecIssue) -> SpecReference {
        guard let pointer = JSONPointer(text) else {
            throw SpecIssue("\"\(text)\" is not a JSON pointer (RFC 6901)")
        }
        guard let root = pointer.tokens.first else {
            throw SpecIssue("the empty pointer designates the whole request; point into /headers, /body, /config or /request/path")
        }
        let rest = Array(pointer.tokens.dropFirst())
        switch root {
        case "headers":
            guard rest.count == 1, !rest[0].isEmpty else {
                throw SpecIssue("\"\(text)\": a header pointer is /headers/<name>")
            }
            return .header(asciiLowercased(rest[0]))
        case "body":
            return .body(rest)
        case "config":
            guard let value = JSONPointer(tokens: rest).resolve(in: config) else {
                throw SpecIssue("\"\(text)\": no such configuration value in specset.json")
            }
            return .constant(value)
        case "request":
            guard rest == ["path"] else { throw SpecIssue("\"\(text)\": only /request/path is known") }
            return .path
        default:
            throw SpecIssue("\"\(text)\": a pointer starts with /headers, /body, /config or /request")
        }
    }

    /// The pointer a violation reports (headers and body only; constants have none).
    var reportPointer: JSONPointer {
        switch self {
        case .header(let name): JSONPointer(tokens: ["headers", name])
        case .body(let tokens): JSONPointer(tokens: ["body"] + tokens)
        case .constant: JSONPointer(tokens: ["config"])
        case .path: JSONPointer(tokens: ["request", "path"])
        }
    }
}

/// A problem in a spec file, before the loader knows which file it is in.
struct SpecIssue: Error, Sendable {
    var pointer: JSONPointer
    var message: String
    init(_ message: String, at pointer: JSONPointer = .root) {
        self.pointer = pointer
        self.message = message
    }
    func prefixed(_ prefix: JSONPointer) -> SpecIssue {
        SpecIssue(message, at: JSONPointer(tokens: prefix.tokens + pointer.tokens))
    }
}

func asciiLowercased(_ s: String) -> String {
    var bytes = Array(s.utf8)
    for i in bytes.indices where bytes[i] >= 0x41 && bytes[i] <= 0x5A { bytes[i] += 0x20 }
    return String(decoding: bytes, as: UTF8.self)
}

/// A derived-rule expression. See Specs/README.md, "Expressions".
indirect enum SpecExpression: Sendable {
    case literal(JSONValue)
    case reference(SpecReference)
    case concat([SpecExpression])
    case string(SpecExpression)
    case number(SpecExpression)
    case add([SpecExpression])
    case div(SpecExpression, SpecExpression)
    case conditional(SpecCondition, then: SpecExpression, else: SpecExpression?)
    case oneOf([SpecExpression])
    case elements(SpecExpression)
    case switchOn(SpecExpression, cases: [(key: String, value: SpecExpression)], default: SpecExpression?)
    case object([(key: String, value: SpecExpression)])

    /// Too many alternatives means a spec bug, not a request to judge; cap the product.
    static let maxCandidates = 64

    static let operators: Set<String> = ["ref", "concat", "string", "number", "add", "div", "if", "oneOf", "switch", "object"]

    static func parse(_ json: JSONValue, config: JSONValue) throws(SpecIssue) -> SpecExpression {
        switch json {
        case .string, .number, .bool, .null:
            return .literal(json)
        case .array:
            throw SpecIssue("an array is not an expression; use {\"oneOf\": [...]} for alternatives")
        case .object(let object):
            guard let op = object.keys.first(where: { operators.contains($0) }) else {
                throw SpecIssue("unknown expression kind \(object.keys.map { "\"\($0)\"" }.joined(separator: ", ")); known: \(operators.sorted().joined(separator: ", "))")
            }
            let allowed: Set<String> = switch op {
            case "if": ["if", "then", "else"]
            case "switch": ["switch", "cases", "default"]
            default: [op]
            }
            if let extra = object.keys.first(where: { !allowed.contains($0) }) {
                throw SpecIssue("unknown key \"\(extra)\" in a \"\(op)\" expression")
            }
            let argument = object[op] ?? .null
            let at = JSONPointer(tokens: [op])
            func sub(_ value: JSONValue, _ pointer: JSONPointer) throws(SpecIssue) -> SpecExpression {
                do { return try parse(value, config: config) } catch { throw error.prefixed(pointer) }
            }
            func list(_ value: JSONValue, min: Int) throws(SpecIssue) -> [SpecExpression] {
                guard let items = value.arrayValue, items.count >= min else {
                    throw SpecIssue("\"\(op)\" takes an array of at least \(min) expressions", at: at)
                }
                var result: [SpecExpression] = []
                for (i, item) in items.enumerated() { result.append(try sub(item, at.appending(i))) }
                return result
            }
            switch op {
            case "ref":
                guard let text = argument.stringValue else { throw SpecIssue("\"ref\" takes a JSON pointer string", at: at) }
                do { return .reference(try SpecReference.parse(text, config: config)) } catch { throw error.prefixed(at) }
            case "concat": return .concat(try list(argument, min: 1))
            case "string": return .string(try sub(argument, at))
            case "number": return .number(try sub(argument, at))
            case "add": return .add(try list(argument, min: 2))
            case "div":
                let parts = try list(argument, min: 2)
                guard parts.count == 2 else { throw SpecIssue("\"div\" takes [dividend, divisor]", at: at) }
                return .div(parts[0], parts[1])
            case "if":
                let condition: SpecCondition
                do { condition = try SpecCondition.parse(argument, config: config) } catch { throw error.prefixed(at) }
                guard let thenValue = object["then"] else { throw SpecIssue("\"if\" needs \"then\"") }
                let elseExpression = try object["else"].map { (v) throws(SpecIssue) in try sub(v, JSONPointer(tokens: ["else"])) }
                return .conditional(condition, then: try sub(thenValue, JSONPointer(tokens: ["then"])), else: elseExpression)
            case "oneOf":
                if argument.arrayValue != nil { return .oneOf(try list(argument, min: 1)) }
                return .elements(try sub(argument, at))
            case "switch":
                guard let cases = object["cases"]?.objectValue else { throw SpecIssue("\"switch\" needs \"cases\": {value: expression}") }
                var compiled: [(key: String, value: SpecExpression)] = []
                for (key, value) in cases.entries {
                    compiled.append((key, try sub(value, JSONPointer(tokens: ["cases", key]))))
                }
                let fallback = try object["default"].map { (v) throws(SpecIssue) in try sub(v, JSONPointer(tokens: ["default"])) }
                return .switchOn(try sub(argument, at), cases: compiled, default: fallback)
            case "object":
                guard let members = argument.objectValue else { throw SpecIssue("\"object\" takes {key: expression}", at: at) }
                var compiled: [(key: String, value: SpecExpression)] = []
                for (key, value) in members.entries { compiled.append((key, try sub(value, at.appending(key)))) }
                return .object(compiled)
            default:
                throw SpecIssue("unknown expression kind \"\(op)\"")
            }
        }
    }

    /// Whether the values it allows depend on the request: false for literals and config
    /// values (resolved at load) and what is made of them by `concat`, `oneOf` and `string`.
    var readsRequest: Bool {
        switch self {
        case .literal, .reference(.constant): false
        case .concat(let parts), .oneOf(let parts): parts.contains { $0.readsRequest }
        case .elements(let inner), .string(let inner): inner.readsRequest
        default: true
        }
    }

    /// True when `found` is certainly one of the values `candidates` yields, worked out without
    /// building them (the hot path: most requests pass). False means "not shown here": the
    /// caller then asks `candidates`, which decides and explains.
    func accepts(_ found: JSONValue, _ request: RequestView, tolerance: Double, isHeader: Bool) -> Bool {
        switch self {
        case .literal(let value):
            return valuesAgree(found: found, expected: value, tolerance: tolerance, isHeader: isHeader)
        case .reference(let reference):
            guard let value = request.resolve(reference) else { return false }
            return valuesAgree(found: found, expected: value, tolerance: tolerance, isHeader: isHeader)
        case .oneOf(let alternatives):
            return alternatives.contains { $0.accepts(found, request, tolerance: tolerance, isHeader: isHeader) }
        case .elements(let inner):
            guard case .reference(let reference) = inner, let value = request.resolve(reference) else { return false }
            if let items = value.arrayValue {
                return items.contains { valuesAgree(found: found, expected: $0, tolerance: tolerance, isHeader: isHeader) }
            }
            return valuesAgree(found: found, expected: value, tolerance: tolerance, isHeader: isHeader)
        case .conditional(let condition, let thenExpression, let elseExpression):
            guard let holds = condition.evaluate(request) else { return false }
            if holds { return thenExpression.accepts(found, request, tolerance: tolerance, isHeader: isHeader) }
            return elseExpression?.accepts(found, request, tolerance: tolerance, isHeader: isHeader) ?? false
        case .object(let members):
            guard case .object(let object) = found, object.count == members.count else { return false }
            for (key, expression) in members {
                guard let value = object[key], expression.accepts(value, request, tolerance: 0, isHeader: false) else { return false }
            }
            return true
        case .concat(let parts):
            guard case .string(var text) = found else { return false }
            return text.withUTF8 { Self.concatAccepts(parts[...], $0, from: 0, request) }
        case .string, .number, .add, .div, .switchOn:
            // Small sets of scalars: building them is cheap enough.
            guard let values = candidates(request) else { return false }
            return values.contains { valuesAgree(found: found, expected: $0, tolerance: tolerance, isHeader: isHeader) }
        }
    }

    /// Matches `text[offset...]` against the parts left, part by part, trying each value a part
    /// can take. On UTF-8 bytes: a part's text that matches a prefix ends on a scalar boundary,
    /// so byte offsets are the String positions the rule means (the Substring version of this
    /// was ~20% of the header rules of a ring push, perf `serve --specs`).
    static func concatAccepts(_ parts: ArraySlice<SpecExpression>, _ text: UnsafeBufferPointer<UInt8>,
                                      from offset: Int, _ request: RequestView) -> Bool {
        guard let part = parts.first else { return offset == text.count }
        func tryText(_ candidate: String) -> Bool {
            let length = candidate.utf8.count
            guard text.count - offset >= length else { return false }
            let window = UnsafeBufferPointer(rebasing: text[offset..<(offset + length)])
            let same = candidate.utf8.withContiguousStorageIfAvailable { bytesEqual($0, window) }
                ?? candidate.utf8.elementsEqual(window)
            return same && concatAccepts(parts.dropFirst(), text, from: offset + length, request)
        }
        switch part {
        case .literal(let value):
            return value.templateText.map(tryText) ?? false
        case .reference(let reference):
            return request.resolve(reference)?.templateText.map(tryText) ?? false
        case .elements(.reference(let reference)):
            // `candidates` without the arrays: the elements of the value, or the value itself.
            guard let value = request.resolve(reference) else { return false }
            if case .array(let items) = value {
                return items.contains { $0.templateText.map(tryText) ?? false }
            }
            return value.templateText.map(tryText) ?? false
        default:
            guard let values = part.candidates(request) else { return false }
            return values.contains { $0.templateText.map(tryText) ?? false }
        }
    }

    /// The values the expression allows for this request; nil when it reads something the
    /// request does not carry.
    func candidates(_ request: RequestView) -> [JSONValue]? {
        switch self {
        case .literal(let value):
            return [value]
        case .reference(let reference):
            return request.resolve(reference).map { [$0] }
        case .concat(let parts):
            var texts: [String] = [""]
            for part in parts {
                guard let values = part.candidates(request) else { return nil }
                var next: [String] = []
                for prefix in texts {
                    for value in values {
                        guard let text = value.templateText, next.count < Self.maxCandidates else { continue }
                        next.append(prefix + text)
                    }
                }
                texts = next
            }
            return texts.map { .string($0) }
        case .string(let inner):
            return inner.candidates(request)?.compactMap { $0.templateText.map { .string($0) } }
        case .number(let inner):
            return inner.candidates(request)?.compactMap { value in
                switch value {
                case .number: return value
                case .string(let s): return parseDecimal(s).map { .number($0) }
                default: return nil
                }
            }
        case .add(let terms):
            var sums: [Double] = [0]
            for term in terms {
                guard let values = term.candidates(request) else { return nil }
                var next: [Double] = []
                for sum in sums {
                    for value in values {
                        guard let d = value.doubleValue, next.count < Self.maxCandidates else { continue }
                        next.append(sum + d)
                    }
                }
                sums = next
            }
            return sums.map { .number($0) }
        case .div(let dividend, let divisor):
            guard let a = dividend.candidates(request), let b = divisor.candidates(request) else { return nil }
            var result: [JSONValue] = []
            for x in a {
                for y in b {
                    guard let p = x.doubleValue, let q = y.doubleValue, q != 0 else { continue }
                    // Integer division rounds down: epoch milliseconds to epoch seconds.
                    result.append(.number((p / q).rounded(.down)))
                }
            }
            return result
        case .conditional(let condition, let thenExpression, let elseExpression):
            guard let holds = condition.evaluate(request) else { return nil }
            if holds { return thenExpression.candidates(request) }
            return elseExpression.map { $0.candidates(request) } ?? []
        case .oneOf(let alternatives):
            var union: [JSONValue] = []
            var anyEvaluable = false
            for alternative in alternatives {
                guard let values = alternative.candidates(request) else { continue }
                anyEvaluable = true
                union.append(contentsOf: values)
            }
            return anyEvaluable ? union : nil
        case .elements(let inner):
            guard let values = inner.candidates(request) else { return nil }
            return values.flatMap { $0.arrayValue ?? [$0] }
        case .switchOn(let subject, let cases, let fallback):
            guard let values = subject.candidates(request) else { return nil }
            var result: [JSONValue] = []
            for value in values {
                let text = value.templateText
                if let match = cases.first(where: { $0.key == text }) {
                    guard let chosen = match.value.candidates(request) else { return nil }
                    result.append(contentsOf: chosen)
                } else if let fallback {
                    guard let chosen = fallback.candidates(request) else { return nil }
                    result.append(contentsOf: chosen)
                }
            }
            return result
        case .object(let members):
            var objects: [JSONObject] = [JSONObject()]
            for (key, expression) in members {
                guard let values = expression.candidates(request) else { return nil }
                var next: [JSONObject] = []
                for object in objects {
                    for value in values where next.count < Self.maxCandidates {
                        var copy = object
                        copy[key] = value
                        next.append(copy)
                    }
                }
                objects = next
            }
            return objects.map { .object($0) }
        }
    }
}

/// A condition for `if` and for a rule's `when`.
indirect enum SpecCondition: Sendable {
    case exists(SpecReference)
    case equals(SpecExpression, SpecExpression)
    case nonEmpty(SpecExpression)
    case not(SpecCondition)
    case all([SpecCondition])
    case any([SpecCondition])

    static let kinds: Set<String> = ["exists", "equals", "nonEmpty", "not", "all", "any"]

    static func parse(_ json: JSONValue, config: JSONValue) throws(SpecIssue) -> SpecCondition {
        guard let object = json.objectValue, object.count == 1, let (kind, argument) = object.entries.first else {
            throw SpecIssue("a condition is an object with one key: \(kinds.sorted().joined(separator: ", "))")
        }
        let at = JSONPointer(tokens: [kind])
        func expression(_ value: JSONValue, _ pointer: JSONPointer) throws(SpecIssue) -> SpecExpression {
            do { return try SpecExpression.parse(value, config: config) } catch { throw error.prefixed(pointer) }
        }
        func conditions(_ value: JSONValue) throws(SpecIssue) -> [SpecCondition] {
            guard let items = value.arrayValue, !items.isEmpty else { throw SpecIssue("\"\(kind)\" takes a non-empty array of conditions", at: at) }
            var result: [SpecCondition] = []
            for (i, item) in items.enumerated() {
                do { result.append(try parse(item, config: config)) } catch { throw error.prefixed(at.appending(i)) }
            }
            return result
        }
        switch kind {
        case "exists":
            guard let text = argument.stringValue else { throw SpecIssue("\"exists\" takes a JSON pointer string", at: at) }
            do { return .exists(try SpecReference.parse(text, config: config)) } catch { throw error.prefixed(at) }
        case "equals":
            guard let pair = argument.arrayValue, pair.count == 2 else { throw SpecIssue("\"equals\" takes [expression, expression]", at: at) }
            return .equals(try expression(pair[0], at.appending(0)), try expression(pair[1], at.appending(1)))
        case "nonEmpty":
            return .nonEmpty(try expression(argument, at))
        case "not":
            do { return .not(try parse(argument, config: config)) } catch { throw error.prefixed(at) }
        case "all": return .all(try conditions(argument))
        case "any": return .any(try conditions(argument))
        default:
            throw SpecIssue("unknown condition kind \"\(kind)\"; known: \(kinds.sorted().joined(separator: ", "))")
        }
    }

    /// nil when the condition reads something the request does not carry (`exists` never does).
    func evaluate(_ request: RequestView) -> Bool? {
        switch self {
        case .exists(let reference):
            return request.exists(reference)
        case .equals(let left, let right):
            guard let a = left.candidates(request), let b = right.candidates(request) else { return nil }
            return a.contains { x in b.contains { y in x == y } }
        case .nonEmpty(let inner):
            guard let values = inner.candidates(request) else { return nil }
            return values.contains { value in
                switch value {
                case .string(let s): !s.isEmpty
                case .array(let a): !a.isEmpty
                case .object(let o): !o.isEmpty
                case .null: false
                case .bool, .number: true
                }
            }
        case .not(let inner):
            return inner.evaluate(request).map { !$0 }
        case .all(let items):
            var unknown = false
            for item in items {
                switch item.evaluate(request) {
                case false?: return false
                case nil: unknown = true
                case true?: break
                }
            }
            return unknown ? nil : true
        case .any(let items):
            var unknown = false
            for item in items {
                switch item.evaluate(request) {
                case true?: return true
                case nil: unknown = true
                case false?: break
                }
            }
            return unknown ? nil : false
        }
    }
}

/// A decimal number in a header or an Android data string: optional minus, digits, optional
/// fraction. No exponent, no spaces, no "+": what a sender writes for epoch seconds.
func parseDecimal(_ text: String) -> Double? {
    var sawDigit = false
    var sawDot = false
    for (i, c) in text.utf8.enumerated() {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): sawDigit = true
        case UInt8(ascii: "-") where i == 0: continue
        case UInt8(ascii: ".") where !sawDot && sawDigit: sawDot = true
        default: return nil
        }
    }
    guard sawDigit, text.utf8.last != UInt8(ascii: ".") else { return nil }
    return Double(text)
}
