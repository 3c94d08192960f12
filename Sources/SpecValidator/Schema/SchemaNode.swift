import JSON

/// One compiled (sub)schema. Nodes live in one array and refer to each other by index, so
/// recursive `$ref`s are plain integers and the whole graph is an immutable, Sendable value.
struct SchemaNode: Sendable {
    /// Keywords in evaluation order; `unevaluated*` always last, since they read what the
    /// others evaluated.
    var keywords: [CompiledKeyword] = []
    /// The node has `unevaluatedProperties`/`unevaluatedItems`, so its in-place applicators
    /// must report which properties and items they evaluated.
    var needsEvaluatedLocations = false
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
        case .number(let d):
            // 2020-12 validation §6.1.1: a number with a zero fractional part is an integer.
            contains(.number) || (contains(.integer) && d.isFinite && d.rounded(.towardZero) == d)
        }
    }

    var names: String {
        let all: [(TypeSet, String)] = [(.null, "null"), (.boolean, "boolean"), (.object, "object"), (.array, "array"),
                                       (.number, "number"), (.string, "string"), (.integer, "integer")]
        let present = all.filter { contains($0.0) }.map(\.1)
        return present.count == 1 ? present[0] : "one of " + present.joined(separator: ", ")
    }
}

/// An ECMA-262 `pattern`, compiled once. Matching is an unanchored search over Unicode scalars
/// (ECMA-262 with the `u` flag), with `\d` and `\w` ASCII-only as in ECMA-262.
///
/// Engine choice: Swift `Regex` rather than POSIX `regcomp`. POSIX ERE lacks `\d`, `\p{Letter}`,
/// lazy quantifiers and lookahead, all of which ECMA-262 patterns use; the suite's own
/// `\p{Letter}` cases would fail. Swift `Regex` costs roughly a microsecond per short match
/// (measured in release, see the lead's benchmark), so schemas on hot paths should keep
/// patterns to the few fields that need them.
struct CompiledPattern: @unchecked Sendable {
    // @unchecked: `Regex<AnyRegexOutput>` is an immutable value (copy-on-write program
    // storage, never mutated after compilation) but is not declared Sendable because its
    // output type is existential. We only ever read it.
    let source: String
    let regex: Regex<AnyRegexOutput>

    init(_ source: String) throws {
        self.source = source
        regex = try Regex(source)
            .matchingSemantics(.unicodeScalar)
            .asciiOnlyDigits()
            .asciiOnlyWordCharacters()
    }

    @inline(__always)
    func matches(_ string: String) -> Bool {
        (try? regex.firstMatch(in: string)) != nil
    }
}

/// A keyword ready to evaluate. Subschemas are node indices.
enum CompiledKeyword: Sendable {
    case falseSchema
    case type(TypeSet)
    case const(JSONValue)
    case enumeration([JSONValue])
    case required([String])
    case properties([(name: String, node: Int)])
    case patternProperties([(pattern: CompiledPattern, node: Int)])
    /// Applies to properties matched by neither sibling `properties` nor `patternProperties`.
    case additionalProperties(node: Int, known: [String], patterns: [CompiledPattern])
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
    case unevaluatedProperties(Int)
    case unevaluatedItems(Int)
}
