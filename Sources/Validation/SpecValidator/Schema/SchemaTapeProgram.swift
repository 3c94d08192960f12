import JSON
#if canImport(Glibc)
import Glibc
#endif

/// The compiled schema once more, as plain numbers in flat tables, to decide whether a
/// `JSONTape` is valid: pass or fail, nothing else. A failure is explained by `SchemaEvaluator`
/// on the tree, so this program only has to agree with `JSONSchema.isValid` on the tree.
///
/// Why a second form: walking `CompiledKeyword`s over a `JSONValue` tree retains and releases
/// every keyword payload and instance value it touches, and compares member names as Strings;
/// that was most of the schema's share of judging a push (perf, `pushproof check` on poolse
/// traffic). Here every step reads integers and bytes through buffer pointers.
///
/// Schemas that need annotations (`unevaluated*`) or the dynamic scope (`$dynamicRef`) have
/// no program: `JSONSchema.isValid(_: JSONTape)` then validates the tree.
struct SchemaTapeProgram: Sendable {
    enum Code: UInt8, Sendable {
        /// A node: its keyword ops are `ops[a..<b]`.
        case node
        case falseSchema
        case type               // a: TypeSet raw value
        case anyLiteral         // const / enum: literals in lists[a..<b]
        case required           // names in lists[a..<b]
        case members            // named lists[a..<b] (c: node), patterns lists[c..<d] (a: pattern, c: node), int: additional or -1
        /// `members` and the node's `required`, in one walk: `mask` holds the named entries
        /// (bit i: lists[a + i]) that must be present (every required name is a named one).
        case membersRequired
        case propertyNames      // a: node
        case pattern            // a: pattern
        case minLength, maxLength, minItems, maxItems, minProperties, maxProperties  // int
        case minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf        // number
        case prefixItems        // nodes in lists[a..<b] (c)
        case items              // a: node, int: first item
        case contains           // a: node, int: minimum, b: 1 when number holds the maximum
        case uniqueItems
        case dependentRequired  // lists[a..<b]: a name (a, b) requiring names lists[c..<d]
        case dependentSchemas   // lists[a..<b]: a name (a, b) and a node (c)
        case allOf, anyOf, oneOf  // nodes in lists[a..<b] (c)
        case not                // a: node
        case conditional        // a: if, b: then or -1, c: else or -1
        case ref                // a: node

        // List items.
        case literalNull, literalTrue, literalFalse
        case literalNumber      // number
        case literalString      // pool[a..<a+b]
        case literalOther       // values[a] (an array or object)
        case name               // pool[a..<a+b]; c, d as the list owner says
        case nodeReference      // c: node
        case patternMember      // a: pattern, c: node
    }

    struct Op: Sendable {
        var code: Code
        var a: Int32 = 0
        var b: Int32 = 0
        var c: Int32 = -1
        var d: Int32 = 0
        var int: Int = 0
        var number: Double = 0
        var mask: UInt64 = 0
    }

    /// `ops[n]` is node n's header; keyword ops follow the headers.
    let ops: [Op]
    /// Items of keyword lists (names, literals, subschemas).
    let lists: [Op]
    /// The UTF-8 bytes of every name and string literal.
    let pool: [UInt8]
    let values: [JSONValue]
    let patterns: [CompiledPattern]
    let root: Int32

    /// nil when a node needs what the program does not do (annotations, dynamic scope).
    init?(nodes: [SchemaNode], root: Int, usesDynamicScope: Bool) {
        guard !usesDynamicScope, nodes.count < Int(Int32.max) else { return nil }
        var ops: [Op] = []
        var lists: [Op] = []
        var pool: [UInt8] = []
        var values: [JSONValue] = []
        var patterns: [CompiledPattern] = []
        var keywordOps: [[Op]] = []
        keywordOps.reserveCapacity(nodes.count)

        func addName(_ name: String) -> (offset: Int32, length: Int32) {
            let offset = Int32(pool.count)
            pool.append(contentsOf: name.utf8)
            return (offset, Int32(pool.count) - offset)
        }
        func addPattern(_ pattern: CompiledPattern) -> Int32 {
            patterns.append(pattern)
            return Int32(patterns.count - 1)
        }
        func addList(_ items: [Op]) -> (Int32, Int32) {
            let start = Int32(lists.count)
            lists.append(contentsOf: items)
            return (start, Int32(lists.count))
        }
        func nodeList(_ nodes: [Int]) -> (Int32, Int32) {
            addList(nodes.map { Op(code: .nodeReference, c: Int32($0)) })
        }
        func literal(_ value: JSONValue) -> Op {
            switch value {
            case .null: return Op(code: .literalNull)
            case .bool(let b): return Op(code: b ? .literalTrue : .literalFalse)
            case .number(let d): return Op(code: .literalNumber, number: d)
            case .string(let s):
                let (offset, length) = addName(s)
                return Op(code: .literalString, a: offset, b: length)
            case .array, .object:
                values.append(value)
                return Op(code: .literalOther, a: Int32(values.count - 1))
            }
        }
        func nameOp(_ name: String) -> Op {
            let (offset, length) = addName(name)
            return Op(code: .name, a: offset, b: length)
        }

        for node in nodes {
            guard !node.needsEvaluatedLocations else { return nil }
            var compiled: [Op] = []
            // `required` names that are all `properties` names are checked during the members'
            // walk: a second walk over the keys for `required` was ~1/5 of a ring's schema time.
            var fusedRequired: UInt64?
            for case .required(let names) in node.keywords {
                for case .objectMembers(let rules) in node.keywords where rules.named.count <= 64 {
                    var mask: UInt64 = 0
                    for name in names {
                        guard let i = rules.named.firstIndex(where: { $0.name.utf8.elementsEqual(name.utf8) }) else {
                            mask = 0
                            break
                        }
                        mask |= 1 << UInt64(i)
                    }
                    if mask != 0 || names.isEmpty { fusedRequired = mask }
                }
            }
            for keyword in node.keywords {
                switch keyword {
                case .falseSchema: compiled.append(Op(code: .falseSchema))
                case .type(let types): compiled.append(Op(code: .type, a: Int32(types.rawValue)))
                case .const(let value):
                    let (start, end) = addList([literal(value)])
                    compiled.append(Op(code: .anyLiteral, a: start, b: end))
                case .enumeration(let options):
                    let items = options.map(literal)
                    let (start, end) = addList(items)
                    compiled.append(Op(code: .anyLiteral, a: start, b: end))
                case .required where fusedRequired != nil:
                    break
                case .required(let names):
                    let (start, end) = addList(names.map(nameOp))
                    compiled.append(Op(code: .required, a: start, b: end))
                case .objectMembers(let rules):
                    let named = addList(rules.named.map { entry in
                        var op = nameOp(entry.name)
                        op.c = Int32(entry.node)
                        return op
                    })
                    let patterned = addList(rules.patterns.map { Op(code: .patternMember, a: addPattern($0.pattern), c: Int32($0.node)) })
                    compiled.append(Op(code: fusedRequired == nil ? .members : .membersRequired, a: named.0, b: named.1,
                                       c: patterned.0, d: patterned.1, int: rules.additional ?? -1, mask: fusedRequired ?? 0))
                case .propertyNames(let child): compiled.append(Op(code: .propertyNames, a: Int32(child)))
                case .pattern(let pattern): compiled.append(Op(code: .pattern, a: addPattern(pattern)))
                case .minLength(let n): compiled.append(Op(code: .minLength, int: n))
                case .maxLength(let n): compiled.append(Op(code: .maxLength, int: n))
                case .minItems(let n): compiled.append(Op(code: .minItems, int: n))
                case .maxItems(let n): compiled.append(Op(code: .maxItems, int: n))
                case .minProperties(let n): compiled.append(Op(code: .minProperties, int: n))
                case .maxProperties(let n): compiled.append(Op(code: .maxProperties, int: n))
                case .minimum(let d): compiled.append(Op(code: .minimum, number: d))
                case .maximum(let d): compiled.append(Op(code: .maximum, number: d))
                case .exclusiveMinimum(let d): compiled.append(Op(code: .exclusiveMinimum, number: d))
                case .exclusiveMaximum(let d): compiled.append(Op(code: .exclusiveMaximum, number: d))
                case .multipleOf(let d): compiled.append(Op(code: .multipleOf, number: d))
                case .prefixItems(let prefix):
                    let (start, end) = nodeList(prefix)
                    compiled.append(Op(code: .prefixItems, a: start, b: end))
                case .items(let child, let start): compiled.append(Op(code: .items, a: Int32(child), int: start))
                case .contains(let child, let minimum, let maximum):
                    compiled.append(Op(code: .contains, a: Int32(child), b: maximum == nil ? 0 : 1, int: minimum,
                                       number: Double(maximum ?? 0)))
                case .uniqueItems: compiled.append(Op(code: .uniqueItems))
                case .dependentRequired(let dependencies):
                    var items: [Op] = []
                    for (name, required) in dependencies {
                        var op = nameOp(name)
                        let (start, end) = addList(required.map(nameOp))
                        op.c = start
                        op.d = end
                        items.append(op)
                    }
                    let (start, end) = addList(items)
                    compiled.append(Op(code: .dependentRequired, a: start, b: end))
                case .dependentSchemas(let dependencies):
                    let (start, end) = addList(dependencies.map { entry in
                        var op = nameOp(entry.name)
                        op.c = Int32(entry.node)
                        return op
                    })
                    compiled.append(Op(code: .dependentSchemas, a: start, b: end))
                case .allOf(let branches):
                    let (start, end) = nodeList(branches)
                    compiled.append(Op(code: .allOf, a: start, b: end))
                case .anyOf(let branches):
                    let (start, end) = nodeList(branches)
                    compiled.append(Op(code: .anyOf, a: start, b: end))
                case .oneOf(let branches):
                    let (start, end) = nodeList(branches)
                    compiled.append(Op(code: .oneOf, a: start, b: end))
                case .not(let child): compiled.append(Op(code: .not, a: Int32(child)))
                case .conditional(let condition, let then, let otherwise):
                    compiled.append(Op(code: .conditional, a: Int32(condition), b: Int32(then ?? -1), c: Int32(otherwise ?? -1)))
                case .ref(let target):
                    guard target >= 0 else { return nil }
                    compiled.append(Op(code: .ref, a: Int32(target)))
                case .dynamicRef, .unevaluatedProperties, .unevaluatedItems:
                    return nil
                }
            }
            keywordOps.append(compiled)
        }
        var next = Int32(nodes.count)
        for compiled in keywordOps {
            ops.append(Op(code: .node, a: next, b: next + Int32(compiled.count)))
            next += Int32(compiled.count)
        }
        for compiled in keywordOps { ops.append(contentsOf: compiled) }
        self.ops = ops
        self.lists = lists
        self.pool = pool
        self.values = values
        self.patterns = patterns
        self.root = Int32(root)
    }

    /// Whether the document is valid; the same answer as `JSONSchema.isValid` on its tree.
    func isValid(_ document: JSONTape) -> Bool {
        document.entries.withUnsafeBufferPointer { tape in
            document.bytes.withUnsafeBufferPointer { bytes in
                ops.withUnsafeBufferPointer { ops in
                    lists.withUnsafeBufferPointer { lists in
                        pool.withUnsafeBufferPointer { pool in
                            let run = TapeRun(program: self, document: document, tape: tape, bytes: bytes, ops: ops, lists: lists, pool: pool)
                            return run.valid(root, 0)
                        }
                    }
                }
            }
        }
    }
}

/// One validation: the program's tables and the document, as buffers for the call's duration.
private struct TapeRun {
    let program: SchemaTapeProgram
    let document: JSONTape
    let tape: UnsafeBufferPointer<JSONTape.Entry>
    let bytes: UnsafeBufferPointer<UInt8>
    let ops: UnsafeBufferPointer<SchemaTapeProgram.Op>
    let lists: UnsafeBufferPointer<SchemaTapeProgram.Op>
    let pool: UnsafeBufferPointer<UInt8>

    /// The keywords of a member's schema are mostly leaves (`type`, `const`/`enum`,
    /// `minLength`, `minimum`): those are decided here, in the loop, and only the others call
    /// `keyword`. A call of `keyword` for each (its frame is sized for the object and array
    /// keywords) was most of the time a ring's fourteen members took (perf, `serve --specs`).
    @inline(never)
    func valid(_ node: Int32, _ at: Int) -> Bool { holds(node, at) }

    /// `valid`, inlined where an object's members are walked: a call a member was ~1/10 of a
    /// ring's schema time (perf).
    @inline(__always)
    func holds(_ node: Int32, _ at: Int) -> Bool {
        let header = ops[Int(node)]
        var i = Int(header.a)
        let end = Int(header.b)
        let entry = tape[at]
        while i < end {
            let op = ops[i]
            let holds: Bool
            switch op.code {
            case .type: holds = Self.type(op, holdsFor: entry)
            case .anyLiteral: holds = anyLiteral(op, at)
            case .minLength: holds = entry.kind != .string || length(at, atLeast: op.int)
            case .maxLength: holds = entry.kind != .string || length(at, atMost: op.int)
            case .minimum, .maximum, .exclusiveMinimum, .exclusiveMaximum: holds = Self.bound(op, holdsFor: entry)
            default: holds = keyword(op, at)
            }
            guard holds else { return false }
            i += 1
        }
        return true
    }

    // MARK: - Reading the document

    /// The raw bytes of a string entry (its content when it has no escape).
    @inline(__always)
    func raw(_ entry: JSONTape.Entry) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(entry.start)..<Int(entry.end)])
    }

    @inline(__always)
    func poolBytes(_ offset: Int32, _ length: Int32) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: pool[Int(offset)..<Int(offset + length)])
    }

    @inline(__always)
    func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool { bytesEqual(a, b) }

    /// Whether the string at `at` is `expected` by code points (`schemaEqual` on strings).
    @inline(__always)
    func stringIs(_ at: Int, _ expected: UnsafeBufferPointer<UInt8>) -> Bool {
        let entry = tape[at]
        if entry.flags & JSONTape.Entry.escapedFlag == 0 { return same(raw(entry), expected) }
        return document.string(at: at).utf8.elementsEqual(expected)
    }

    /// Keys never have escapes on a tape, so their bytes are their code points.
    @inline(__always)
    func keyIs(_ key: Int, _ name: SchemaTapeProgram.Op) -> Bool {
        same(raw(tape[key]), poolBytes(name.a, name.b))
    }

    /// The key entry of the member named `name`, or nil.
    func member(of object: Int, named name: SchemaTapeProgram.Op) -> Int? {
        var key = object + 1
        for _ in 0..<tape[object].count {
            if keyIs(key, name) { return key }
            key = Int(tape[key + 1].next)
        }
        return nil
    }

    func equals(_ at: Int, _ literal: SchemaTapeProgram.Op) -> Bool {
        let entry = tape[at]
        switch literal.code {
        case .literalNull: return entry.kind == .null
        case .literalTrue: return entry.kind == .true
        case .literalFalse: return entry.kind == .false
        case .literalNumber: return entry.kind == .number && entry.number == literal.number
        case .literalString: return entry.kind == .string && stringIs(at, poolBytes(literal.a, literal.b))
        default:
            guard entry.kind == .array || entry.kind == .object else { return false }
            return schemaEqual(document.value(at: at), program.values[Int(literal.a)])
        }
    }

    /// `minLength`/`maxLength` on the string at `at`: its length in code points compared with
    /// `limit`, the UTF-8 length (an upper bound) first. A string with neither an escape nor a
    /// non-ASCII byte has one code point a byte, so its length is its byte count: counting the
    /// code points of every id and grant of a ring was ~1/7 of its schema's time (perf,
    /// `serve --specs`).
    @inline(__always)
    func length(_ at: Int, atLeast limit: Int) -> Bool {
        let entry = tape[at]
        if entry.flags == 0 { return Int(entry.end - entry.start) >= limit }
        return codePointLength(at, atLeast: limit)
    }

    @inline(__always)
    func length(_ at: Int, atMost limit: Int) -> Bool {
        let entry = tape[at]
        if entry.flags == 0 { return Int(entry.end - entry.start) <= limit }
        return codePointLength(at, atMost: limit)
    }

    /// `length` of a string with an escape or a non-ASCII byte.
    @inline(never)
    func codePointLength(_ at: Int, atLeast limit: Int) -> Bool {
        let entry = tape[at]
        guard entry.flags & JSONTape.Entry.escapedFlag == 0 else {
            let string = document.string(at: at)
            return string.utf8.count >= limit && codePointCount(string) >= limit
        }
        return Int(entry.end - entry.start) >= limit && Self.codePoints(raw(entry)) >= limit
    }

    @inline(never)
    func codePointLength(_ at: Int, atMost limit: Int) -> Bool {
        let entry = tape[at]
        guard entry.flags & JSONTape.Entry.escapedFlag == 0 else {
            let string = document.string(at: at)
            return string.utf8.count <= limit || codePointCount(string) <= limit
        }
        return Int(entry.end - entry.start) <= limit || Self.codePoints(raw(entry)) <= limit
    }

    /// Every scalar has one byte that is not a continuation byte (as `codePointCount`).
    static func codePoints(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var count = 0
        for byte in bytes where byte & 0xC0 != 0x80 { count += 1 }
        return count
    }

    /// Abandoned (a match limit) is not a match, and fails `patternProperties` too, as in the tree evaluator.
    func search(_ pattern: CompiledPattern, _ at: Int) -> PatternMatch {
        let entry = tape[at]
        if entry.flags & JSONTape.Entry.escapedFlag == 0 { return pattern.search(utf8: raw(entry)) }
        return pattern.search(document.string(at: at))
    }

    // MARK: - Keywords (each mirrors its case in SchemaEvaluator.evaluateKeyword)

    @inline(__always)
    static func type(_ op: SchemaTapeProgram.Op, holdsFor entry: JSONTape.Entry) -> Bool {
        let types = TypeSet(rawValue: UInt8(op.a))
        switch entry.kind {
        case .null: return types.contains(.null)
        case .true, .false: return types.contains(.boolean)
        case .object: return types.contains(.object)
        case .array: return types.contains(.array)
        case .string: return types.contains(.string)
        case .number: return types.admits(number: entry.number)
        }
    }

    /// `const` and `enum`.
    @inline(__always)
    func anyLiteral(_ op: SchemaTapeProgram.Op, _ at: Int) -> Bool {
        for i in Int(op.a)..<Int(op.b) where equals(at, lists[i]) { return true }
        return false
    }

    /// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`.
    @inline(__always)
    static func bound(_ op: SchemaTapeProgram.Op, holdsFor entry: JSONTape.Entry) -> Bool {
        guard entry.kind == .number else { return true }
        switch op.code {
        case .minimum: return !(entry.number < op.number)
        case .maximum: return !(entry.number > op.number)
        case .exclusiveMinimum: return !(entry.number <= op.number)
        default: return !(entry.number >= op.number)
        }
    }

    func keyword(_ op: SchemaTapeProgram.Op, _ at: Int) -> Bool {
        let entry = tape[at]
        switch op.code {
        case .falseSchema:
            return false

        case .type:
            return Self.type(op, holdsFor: entry)

        case .anyLiteral:
            return anyLiteral(op, at)

        case .required:
            guard entry.kind == .object else { return true }
            // Members usually come in the spec's order: each search starts after the previous find.
            let count = Int(entry.count)
            var key = at + 1
            var ordinal = 0
            for i in Int(op.a)..<Int(op.b) {
                let name = lists[i]
                var found = false
                for _ in 0..<count {
                    let isName = keyIs(key, name)
                    if ordinal + 1 == count {
                        ordinal = 0
                        key = at + 1
                    } else {
                        ordinal += 1
                        key = Int(tape[key + 1].next)
                    }
                    if isName {
                        found = true
                        break
                    }
                }
                guard found else { return false }
            }
            return true

        case .members, .membersRequired:
            guard entry.kind == .object else { return true }
            let namedStart = Int(op.a), namedEnd = Int(op.b)
            let namedCount = namedEnd - namedStart
            var hint = namedStart
            var present: UInt64 = 0
            var key = at + 1
            for _ in 0..<entry.count {
                let value = key + 1
                var matched = false
                // The named schema for this key, searched from after the previous one found.
                if namedCount > 0 {
                    var i = hint
                    for _ in 0..<namedCount {
                        let name = lists[i]
                        let found = i
                        i = i + 1 == namedEnd ? namedStart : i + 1
                        if keyIs(key, name) {
                            present |= 1 << UInt64(found - namedStart)
                            hint = i
                            matched = true
                            guard holds(name.c, value) else { return false }
                            break
                        }
                    }
                }
                for p in Int(op.c)..<Int(op.d) {
                    let patternMember = lists[p]
                    switch search(program.patterns[Int(patternMember.a)], key) {
                    case .notMatched: continue
                    case .abandoned: return false
                    case .matched:
                        matched = true
                        guard valid(patternMember.c, value) else { return false }
                    }
                }
                if !matched, op.int >= 0 {
                    guard valid(Int32(op.int), value) else { return false }
                }
                key = Int(tape[value].next)
            }
            return op.code == .members || present & op.mask == op.mask

        case .propertyNames:
            guard entry.kind == .object else { return true }
            var key = at + 1
            for _ in 0..<entry.count {
                guard valid(op.a, key) else { return false }
                key = Int(tape[key + 1].next)
            }
            return true

        case .pattern:
            guard entry.kind == .string else { return true }
            return search(program.patterns[Int(op.a)], at) == .matched

        case .minLength:
            guard entry.kind == .string else { return true }
            return length(at, atLeast: op.int)

        case .maxLength:
            guard entry.kind == .string else { return true }
            return length(at, atMost: op.int)

        case .minimum, .maximum, .exclusiveMinimum, .exclusiveMaximum: return Self.bound(op, holdsFor: entry)
        case .multipleOf: return entry.kind != .number || SchemaEvaluator.isMultiple(entry.number, of: op.number)

        case .prefixItems:
            guard entry.kind == .array else { return true }
            var item = at + 1
            let count = min(Int(entry.count), Int(op.b - op.a))
            for i in 0..<count {
                guard valid(lists[Int(op.a) + i].c, item) else { return false }
                item = Int(tape[item].next)
            }
            return true

        case .items:
            guard entry.kind == .array else { return true }
            var item = at + 1
            for i in 0..<Int(entry.count) {
                if i >= op.int, !valid(op.a, item) { return false }
                item = Int(tape[item].next)
            }
            return true

        case .contains:
            guard entry.kind == .array else { return true }
            let hasMaximum = op.b == 1
            var matches = 0
            var item = at + 1
            for _ in 0..<entry.count {
                if valid(op.a, item) {
                    matches += 1
                    if !hasMaximum && matches >= op.int { break }
                }
                item = Int(tape[item].next)
            }
            if matches < op.int { return false }
            if hasMaximum && Double(matches) > op.number { return false }
            return true

        case .minItems: return entry.kind != .array || Int(entry.count) >= op.int
        case .maxItems: return entry.kind != .array || Int(entry.count) <= op.int

        case .uniqueItems:
            guard entry.kind == .array, entry.count > 1, case .array(let items) = document.value(at: at) else { return true }
            for i in 1..<items.count {
                for j in 0..<i where schemaEqual(items[i], items[j]) { return false }
            }
            return true

        case .minProperties: return entry.kind != .object || Int(entry.count) >= op.int
        case .maxProperties: return entry.kind != .object || Int(entry.count) <= op.int

        case .dependentRequired:
            guard entry.kind == .object else { return true }
            for i in Int(op.a)..<Int(op.b) where member(of: at, named: lists[i]) != nil {
                let dependency = lists[i]
                for j in Int(dependency.c)..<Int(dependency.d) where member(of: at, named: lists[j]) == nil { return false }
            }
            return true

        case .dependentSchemas:
            guard entry.kind == .object else { return true }
            for i in Int(op.a)..<Int(op.b) where member(of: at, named: lists[i]) != nil {
                guard valid(lists[i].c, at) else { return false }
            }
            return true

        case .allOf:
            for i in Int(op.a)..<Int(op.b) where !valid(lists[i].c, at) { return false }
            return true

        case .anyOf:
            for i in Int(op.a)..<Int(op.b) where valid(lists[i].c, at) { return true }
            return false

        case .oneOf:
            var matches = 0
            for i in Int(op.a)..<Int(op.b) where valid(lists[i].c, at) {
                matches += 1
                if matches > 1 { return false }
            }
            return matches == 1

        case .not:
            return !valid(op.a, at)

        case .conditional:
            if valid(op.a, at) { return op.b < 0 || valid(op.b, at) }
            return op.c < 0 || valid(op.c, at)

        case .ref:
            return valid(op.a, at)

        case .node, .literalNull, .literalTrue, .literalFalse, .literalNumber, .literalString, .literalOther,
             .name, .nodeReference, .patternMember:
            // List items and headers are never keywords.
            return false
        }
    }
}
