import JSON
#if canImport(Glibc)
import Glibc
#endif

/// One compiled (sub)schema. Nodes live in one array and refer to each other by index, so
/// recursive `$ref`s are plain integers and the whole graph is an immutable, Sendable value.
struct SchemaNode: Sendable {
    /// Keywords in evaluation order; `unevaluated*` always last, since they read what the
    /// others evaluated.
    var keywords: [CompiledKeyword] = []
    /// The node has `unevaluatedProperties`/`unevaluatedItems`, so its in-place applicators
    /// must report which properties and items they evaluated.
    var needsEvaluatedLocations = false
    /// The schema resource (document root or nearest `$id`) the node belongs to.
    var resource = 0
}

/// JSON Schema primitive types as a bit set; `integer` is a refinement of `number`.
struct TypeSet: OptionSet, Sendable {
    let rawValue: UInt8
    static let null = TypeSet(rawValue: 1)
    static let boolean = TypeSet(rawValue: 2)
    static let object = TypeSet(rawValue: 4)
    static let array = TypeSet(rawValue: 8)
    static let number = TypeSet(rawValue: 16)
    static let string = TypeSet(rawValue: 32)
    static let integer = TypeSet(rawValue: 64)

    init(rawValue: UInt8) { self.rawValue = rawValue }

    init?(name: String) {
        switch name {
        case "null": self = .null
        case "boolean": self = .boolean
        case "object": self = .object
        case "array": self = .array
        case "number": self = .number
        case "string": self = .string
        case "integer": self = .integer
        default: return nil
        }
    }

    @inline(__always)
    func admits(_ value: JSONValue) -> Bool {
        switch value {
        case .null: contains(.null)
        case .bool: contains(.boolean)
        case .object: contains(.object)
        case .array: contains(.array)
        case .string: contains(.string)
        case .number(let d): admits(number: d)
        }
    }

    /// 2020-12 validation §6.1.1: a number with a zero fractional part is an integer.
    @inline(__always)
    func admits(number d: Double) -> Bool {
        contains(.number) || (contains(.integer) && Self.isIntegral(d))
    }

    /// Whether `d` is finite with no fractional part. Below 2^52 a conversion to Int64 and back
    /// says it (one instruction each way); `rounded(.towardZero)` is a call to libm's `trunc`
    /// on this target, which the optimizer hoisted into every node the tape run visits (perf,
    /// `serve --specs`: ~0.5% of a judged push). Every finite double from 2^52 up is integral.
    @inline(__always)
    static func isIntegral(_ d: Double) -> Bool {
        if abs(d) < 4_503_599_627_370_496 { return Double(Int64(d)) == d }
        return d.isFinite
    }

    var names: String {
        let all: [(TypeSet, String)] = [(.null, "null"), (.boolean, "boolean"), (.object, "object"), (.array, "array"),
                                       (.number, "number"), (.string, "string"), (.integer, "integer")]
        let present = all.filter { contains($0.0) }.map(\.1)
        return present.count == 1 ? present[0] : "one of " + present.joined(separator: ", ")
    }
}

/// A keyword ready to evaluate. Subschemas are node indices.
enum CompiledKeyword: Sendable {
    case falseSchema
    case type(TypeSet)
    case const(JSONValue)
    case enumeration([JSONValue])
    case required([String])
    /// `properties`, `patternProperties` and `additionalProperties` of one schema, applied in
    /// one pass over the instance's members.
    case objectMembers(MemberRules)
    case propertyNames(Int)
    case pattern(CompiledPattern)
    case minLength(Int)
    case maxLength(Int)
    case minimum(Double)
    case maximum(Double)
    case exclusiveMinimum(Double)
    case exclusiveMaximum(Double)
    case multipleOf(Double)
    case prefixItems([Int])
    /// Applies to items from `start` on (after the sibling `prefixItems`).
    case items(node: Int, start: Int)
    /// `contains` with its sibling `minContains` (default 1) and `maxContains`.
    case contains(node: Int, min: Int, max: Int?)
    case minItems(Int)
    case maxItems(Int)
    case uniqueItems
    case minProperties(Int)
    case maxProperties(Int)
    case dependentRequired([(name: String, required: [String])])
    case dependentSchemas([(name: String, node: Int)])
    case allOf([Int])
    case anyOf([Int])
    case oneOf([Int])
    case not(Int)
    case conditional(if: Int, then: Int?, else: Int?)
    /// Target node, linked after the whole document is compiled (-1 until then).
    case ref(Int)
    /// `$dynamicRef`: `initial` as for `$ref`; with `anchor`, the outermost resource in the
    /// dynamic scope declaring that `$dynamicAnchor` wins (2020-12 core §8.2.3.2).
    case dynamicRef(initial: Int, anchor: String?)
    case unevaluatedProperties(Int)
    case unevaluatedItems(Int)
}

/// The member keywords of one object schema. A class so the keyword enum stays small.
final class MemberRules: Sendable {
    let named: [(name: String, node: Int)]
    /// `named[i]`'s length and first bytes, so most non-matching names are rejected by one
    /// integer comparison (this lookup runs for every member of every object validated).
    private let namedKeys: [NameKey]
    let patterns: [(pattern: CompiledPattern, node: Int)]
    /// `additionalProperties`: members matched by neither `named` nor `patterns`.
    let additional: Int?

    init(named: [(name: String, node: Int)], patterns: [(pattern: CompiledPattern, node: Int)], additional: Int?) {
        self.named = named
        namedKeys = named.map { NameKey($0.name) }
        self.patterns = patterns
        self.additional = additional
    }

    @inline(__always)
    func namedNode(for key: String) -> Int? {
        let probe = NameKey(key)
        for i in namedKeys.indices where namedKeys[i] == probe {
            if probe.length <= 8 || sameCodePoints(named[i].name, key) { return named[i].node }
        }
        return nil
    }
}

/// A string's UTF-8 length and first eight bytes: equal keys for strings of up to eight
/// bytes mean equal strings, and most different names differ here.
struct NameKey: Equatable, Sendable {
    let length: Int
    let prefix: UInt64

    @inline(__always)
    init(_ string: String) {
        let utf8 = string.utf8
        length = utf8.count
        let packed = utf8.withContiguousStorageIfAvailable { bytes -> UInt64 in
            var value: UInt64 = 0
            for i in 0..<min(8, bytes.count) { value |= UInt64(bytes[i]) << (8 * UInt64(i)) }
            return value
        }
        if let packed {
            prefix = packed
        } else {
            var value: UInt64 = 0
            for (i, byte) in utf8.prefix(8).enumerated() { value |= UInt64(byte) << (8 * UInt64(i)) }
            prefix = value
        }
    }
}

/// Code-point equality of two strings. JSON Schema compares property names and string values
/// by code points; Swift's `==` uses canonical equivalence ("é" == "e\u{301}").
@inline(__always)
func sameCodePoints(_ a: String, _ b: String) -> Bool {
    let count = a.utf8.count
    guard count == b.utf8.count else { return false }
    guard count > 0 else { return true }
    let fast = a.utf8.withContiguousStorageIfAvailable { left in
        b.utf8.withContiguousStorageIfAvailable { right in
            guard let l = left.baseAddress, let r = right.baseAddress else { return false }
            return memcmp(l, r, count) == 0
        }
    }
    if let fast, let result = fast { return result }
    return a.utf8.elementsEqual(b.utf8)
}

extension JSONObject {
    /// The member named `key` by code points (see `sameCodePoints`).
    @inline(__always)
    func member(_ key: String) -> JSONValue? {
        // Through the buffer: iterating `entries` copied (retained) every key and value passed.
        entries.withUnsafeBufferPointer { buffer -> JSONValue? in
            for i in buffer.indices where sameCodePoints(buffer[i].key, key) { return buffer[i].value }
            return nil
        }
    }

    /// Whether a member is named `key` (by code points), searching from `hint` round to it;
    /// `hint` moves past the member found.
    @inline(__always)
    func hasMember(_ key: String, searchingFrom hint: inout Int) -> Bool {
        entries.withUnsafeBufferPointer { buffer -> Bool in
            let count = buffer.count
            guard count > 0 else { return false }
            var i = hint < count ? hint : 0
            for _ in 0..<count {
                if sameCodePoints(buffer[i].key, key) {
                    hint = i + 1
                    return true
                }
                i = i + 1 == count ? 0 : i + 1
            }
            return false
        }
    }
}
