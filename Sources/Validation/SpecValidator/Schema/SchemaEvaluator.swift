import JSON

/// Which properties and items of the current instance location the keywords evaluated so far
/// have covered: the annotations `unevaluatedProperties`/`unevaluatedItems` read (2020-12
/// core §11). Only filled while a node that needs them is being evaluated; empty otherwise,
/// so the common path never allocates.
struct EvaluatedLocations {
    var allProperties = false
    var properties: [String] = []
    var allItems = false
    /// Items `0..<itemPrefix` were evaluated (by prefixItems).
    var itemPrefix = 0
    /// Items matched by `contains`.
    var itemIndices: [Int] = []

    mutating func merge(_ other: EvaluatedLocations) {
        allProperties = allProperties || other.allProperties
        if !allProperties { properties += other.properties }
        allItems = allItems || other.allItems
        itemPrefix = max(itemPrefix, other.itemPrefix)
        if !allItems { itemIndices += other.itemIndices }
    }

    func covers(property name: String) -> Bool { allProperties || properties.contains(where: { sameCodePoints($0, name) }) }
    func covers(item index: Int) -> Bool { allItems || index < itemPrefix || itemIndices.contains(index) }
}

/// One walk of an instance through the compiled nodes. In `collecting` mode every failure
/// becomes a `SchemaViolation` and evaluation goes on; otherwise it stops at the first
/// failure, and locations are never built.
struct SchemaEvaluator {
    let nodes: [SchemaNode]
    let nodeLocations: [JSONPointer]
    let nodeDocuments: [String?]
    let dynamicAnchors: [[String: Int]]
    let tracksDynamicScope: Bool
    /// The node being evaluated (maintained while collecting), for `schemaLocation`.
    private var currentNode = 0
    /// Resources entered on the way to the current node, outermost first (only when the
    /// schema has a `$dynamicRef`).
    private var dynamicScope: [Int] = []
    var collecting: Bool
    var violations: [SchemaViolation] = []
    private var instancePath: [String] = []
    private var keywordPath: [String] = []
    /// The applicator that led to the current subschema, naming violations of `false` schemas.
    private var applicator = "false"

    init(schema: JSONSchema, collecting: Bool) {
        nodes = schema.nodes
        nodeLocations = schema.nodeLocations
        nodeDocuments = schema.nodeDocuments
        dynamicAnchors = schema.dynamicAnchors
        tracksDynamicScope = schema.usesDynamicScope
        self.collecting = collecting
    }

    /// A step into the instance while descending.
    enum InstanceStep {
        case same
        case key(String)
        case index(Int)
    }

    mutating func evaluate(_ index: Int, _ instance: JSONValue, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        guard collecting else { return evaluateInScope(index, instance, &evaluated, tracking: tracking) }
        let outerNode = currentNode
        currentNode = index
        defer { currentNode = outerNode }
        return evaluateInScope(index, instance, &evaluated, tracking: tracking)
    }

    @inline(__always)
    private mutating func evaluateInScope(_ index: Int, _ instance: JSONValue, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        let node = nodes[index]
        if tracksDynamicScope && dynamicScope.last != node.resource {
            dynamicScope.append(node.resource)
            defer { dynamicScope.removeLast() }
            return evaluateNode(node, instance, &evaluated, tracking: tracking)
        }
        return evaluateNode(node, instance, &evaluated, tracking: tracking)
    }

    @inline(__always)
    private mutating func evaluateNode(_ node: SchemaNode, _ instance: JSONValue, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        if node.needsEvaluatedLocations && !tracking {
            // This node reads annotations; start its own record so siblings' don't leak in.
            var own = EvaluatedLocations()
            return evaluateKeywords(node.keywords, instance, &own, tracking: true)
        }
        return evaluateKeywords(node.keywords, instance, &evaluated, tracking: tracking)
    }

    private mutating func evaluateKeywords(_ keywords: [CompiledKeyword], _ instance: JSONValue, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        var valid = true
        // Through the buffer: the array iterator retained and released the array per keyword.
        return keywords.withUnsafeBufferPointer { keywords in
            for i in keywords.indices where !evaluateKeyword(keywords[i], instance, &evaluated, tracking: tracking) {
                valid = false
                if !collecting { return false }
            }
            return valid
        }
    }

    // MARK: - Descending and reporting

    /// Evaluates subschema `node` against `value` (reached through `step`), with the
    /// keyword location extended by `keyword` (and `member`, e.g. a property name or index).
    @inline(__always)
    private mutating func descend(_ node: Int, _ value: JSONValue, keyword: String, member: InstanceStep = .same,
                                  at step: InstanceStep = .same, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        guard collecting else { return evaluate(node, value, &evaluated, tracking: tracking) }
        keywordPath.append(keyword)
        let outerApplicator = applicator
        applicator = keyword
        defer { applicator = outerApplicator }
        switch member {
        case .same: break
        case .key(let k): keywordPath.append(k)
        case .index(let i): keywordPath.append(String(i))
        }
        switch step {
        case .same: break
        case .key(let k): instancePath.append(k)
        case .index(let i): instancePath.append(String(i))
        }
        let valid = evaluate(node, value, &evaluated, tracking: tracking)
        if case .same = step {} else { instancePath.removeLast() }
        if case .same = member {} else { keywordPath.removeLast() }
        keywordPath.removeLast()
        return valid
    }

    /// Evaluates a subschema at another instance location: its annotations are its own.
    @inline(__always)
    private mutating func descendInto(_ node: Int, _ value: JSONValue, keyword: String, member: InstanceStep = .same, at step: InstanceStep) -> Bool {
        var scratch = EvaluatedLocations()
        return descend(node, value, keyword: keyword, member: member, at: step, &scratch, tracking: false)
    }

    /// Evaluates an in-place subschema; its annotations count only if it passes.
    @inline(__always)
    private mutating func descendInPlace(_ node: Int, _ value: JSONValue, keyword: String, member: InstanceStep = .same,
                                         _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        guard tracking else { return descend(node, value, keyword: keyword, member: member, &evaluated, tracking: false) }
        var own = EvaluatedLocations()
        let valid = descend(node, value, keyword: keyword, member: member, &own, tracking: true)
        if valid { evaluated.merge(own) }
        return valid
    }

    /// Evaluates without reporting (anyOf branches, `not`, `if`, `contains`): their failures
    /// are not the instance's failures. Annotations are merged only when it passes.
    private mutating func silentInPlace(_ node: Int, _ value: JSONValue, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        let wasCollecting = collecting
        collecting = false
        defer { collecting = wasCollecting }
        guard tracking else {
            var scratch = EvaluatedLocations()
            return evaluate(node, value, &scratch, tracking: false)
        }
        var own = EvaluatedLocations()
        let valid = evaluate(node, value, &own, tracking: true)
        if valid { evaluated.merge(own) }
        return valid
    }

    /// A silent pass/fail check whose annotations are discarded (`not`, `contains` items).
    private mutating func silentCheck(_ node: Int, _ value: JSONValue) -> Bool {
        var scratch = EvaluatedLocations()
        return silentInPlace(node, value, &scratch, tracking: false)
    }

    /// Records a violation of `keyword` at the current locations (collecting mode only).
    @inline(__always)
    private mutating func fail(_ keyword: String, at step: InstanceStep = .same, _ message: @autoclosure () -> String) {
        guard collecting else { return }
        record(keyword, keywordLocation: JSONPointer(tokens: keywordPath + [keyword]),
               schemaLocation: nodeLocations[currentNode].appending(keyword), at: step, message())
    }

    private mutating func record(_ keyword: String, keywordLocation: JSONPointer, schemaLocation: JSONPointer,
                                 at step: InstanceStep, _ message: String) {
        var instance = instancePath
        switch step {
        case .same: break
        case .key(let k): instance.append(k)
        case .index(let i): instance.append(String(i))
        }
        violations.append(SchemaViolation(
            instanceLocation: JSONPointer(tokens: instance),
            keywordLocation: keywordLocation,
            schemaLocation: schemaLocation,
            schemaDocument: nodeDocuments[currentNode],
            keyword: keyword,
            message: message))
    }

    // MARK: - Keywords

    private mutating func evaluateKeyword(_ keyword: CompiledKeyword, _ instance: JSONValue, _ evaluated: inout EvaluatedLocations, tracking: Bool) -> Bool {
        switch keyword {
        case .falseSchema:
            if collecting {
                // The `false` schema is the keyword's value: locate it at the keyword itself.
                record(applicator, keywordLocation: JSONPointer(tokens: keywordPath), schemaLocation: nodeLocations[currentNode],
                       at: .same, falseSchemaMessage(instance))
            }
            return false

        case .type(let types):
            guard types.admits(instance) else {
                fail("type", "expected \(types.names), found \(instance.typeName) \(describe(instance))")
                return false
            }
            return true

        case .const(let expected):
            guard schemaEqual(instance, expected) else {
                fail("const", "expected \(describe(expected)), found \(describe(instance))")
                return false
            }
            return true

        case .enumeration(let options):
            guard options.contains(where: { schemaEqual($0, instance) }) else {
                fail("enum", "expected one of \(describe(.array(options))), found \(describe(instance))")
                return false
            }
            return true

        case .required(let names):
            guard case .object(let object) = instance else { return true }
            var valid = true
            // Senders tend to write members in the spec's order: each search starts after the
            // previous find, so an in-order object costs one comparison per name instead of a
            // scan (perf: `required` of 14 names was the schema's largest keyword on a ring).
            var hint = 0
            for name in names where !object.hasMember(name, searchingFrom: &hint) {
                valid = false
                guard collecting else { return false }
                fail("required", "missing required property \"\(name)\"")
            }
            return valid

        case .objectMembers(let rules):
            guard case .object(let object) = instance else { return true }
            var valid = true
            for (name, value) in object.entries {
                var matched = false
                if let node = rules.namedNode(for: name) {
                    matched = true
                    if !descendInto(node, value, keyword: "properties", member: .key(name), at: .key(name)) {
                        valid = false
                        if !collecting { return false }
                    }
                }
                for (pattern, node) in rules.patterns {
                    switch pattern.search(name) {
                    case .notMatched: continue
                    case .matched: break
                    case .abandoned(let why):
                        // Undecided is not a pass: the member fails here.
                        fail("patternProperties", at: .key(name), "property name: \(why)")
                        valid = false
                        if !collecting { return false }
                        continue
                    }
                    matched = true
                    if !descendInto(node, value, keyword: "patternProperties", member: .key(pattern.source), at: .key(name)) {
                        valid = false
                        if !collecting { return false }
                    }
                }
                if matched {
                    if tracking { evaluated.properties.append(name) }
                } else if let node = rules.additional {
                    if !descendInto(node, value, keyword: "additionalProperties", at: .key(name)) {
                        valid = false
                        if !collecting { return false }
                    }
                }
            }
            if tracking && rules.additional != nil { evaluated.allProperties = true }
            return valid

        case .propertyNames(let node):
            guard case .object(let object) = instance else { return true }
            var valid = true
            for (name, _) in object.entries where !descendInto(node, .string(name), keyword: "propertyNames", at: .key(name)) {
                valid = false
                if !collecting { return false }
            }
            return valid

        case .pattern(let pattern):
            guard case .string(let string) = instance else { return true }
            switch pattern.search(string) {
            case .matched: return true
            case .notMatched:
                fail("pattern", "expected a string matching /\(pattern.source)/, found \(describe(instance))")
            case .abandoned(let why):
                fail("pattern", why)
            }
            return false

        case .minLength(let minimum):
            guard case .string(let string) = instance else { return true }
            // 2020-12 validation §6.3: length in Unicode code points. UTF-8 bytes bound it from above.
            guard string.utf8.count >= minimum, codePointCount(string) >= minimum else {
                fail("minLength", "expected at least \(minimum) characters, found \(string.unicodeScalars.count)")
                return false
            }
            return true

        case .maxLength(let maximum):
            guard case .string(let string) = instance else { return true }
            guard string.utf8.count <= maximum || codePointCount(string) <= maximum else {
                fail("maxLength", "expected at most \(maximum) characters, found \(string.unicodeScalars.count)")
                return false
            }
            return true

        case .minimum(let limit):
            guard case .number(let d) = instance, d < limit else { return true }
            fail("minimum", "expected a number >= \(describe(.number(limit))), found \(describe(instance))")
            return false

        case .maximum(let limit):
            guard case .number(let d) = instance, d > limit else { return true }
            fail("maximum", "expected a number <= \(describe(.number(limit))), found \(describe(instance))")
            return false

        case .exclusiveMinimum(let limit):
            guard case .number(let d) = instance, d <= limit else { return true }
            fail("exclusiveMinimum", "expected a number > \(describe(.number(limit))), found \(describe(instance))")
            return false

        case .exclusiveMaximum(let limit):
            guard case .number(let d) = instance, d >= limit else { return true }
            fail("exclusiveMaximum", "expected a number < \(describe(.number(limit))), found \(describe(instance))")
            return false

        case .multipleOf(let divisor):
            guard case .number(let d) = instance, !Self.isMultiple(d, of: divisor) else { return true }
            fail("multipleOf", "expected a multiple of \(describe(.number(divisor))), found \(describe(instance))")
            return false

        case .prefixItems(let prefix):
            guard case .array(let items) = instance else { return true }
            let count = min(items.count, prefix.count)
            if tracking { evaluated.itemPrefix = max(evaluated.itemPrefix, count) }
            var valid = true
            for i in 0..<count where !descendInto(prefix[i], items[i], keyword: "prefixItems", member: .index(i), at: .index(i)) {
                valid = false
                if !collecting { return false }
            }
            return valid

        case .items(let node, let start):
            guard case .array(let items) = instance else { return true }
            if tracking { evaluated.allItems = true }
            var valid = true
            var i = start
            while i < items.count {
                if !descendInto(node, items[i], keyword: "items", at: .index(i)) {
                    valid = false
                    if !collecting { return false }
                }
                i += 1
            }
            return valid

        case .contains(let node, let minimum, let maximum):
            guard case .array(let items) = instance else { return true }
            var matches = 0
            for (i, item) in items.enumerated() {
                guard silentCheck(node, item) else { continue }
                matches += 1
                if tracking {
                    evaluated.itemIndices.append(i)
                } else if maximum == nil && matches >= minimum {
                    break
                }
            }
            if matches < minimum {
                fail(minimum == 1 ? "contains" : "minContains", "expected at least \(minimum) item(s) matching contains, found \(matches)")
                return false
            }
            if let maximum, matches > maximum {
                fail("maxContains", "expected at most \(maximum) item(s) matching contains, found \(matches)")
                return false
            }
            return true

        case .minItems(let minimum):
            guard case .array(let items) = instance, items.count < minimum else { return true }
            fail("minItems", "expected at least \(minimum) items, found \(items.count)")
            return false

        case .maxItems(let maximum):
            guard case .array(let items) = instance, items.count > maximum else { return true }
            fail("maxItems", "expected at most \(maximum) items, found \(items.count)")
            return false

        case .uniqueItems:
            guard case .array(let items) = instance, items.count > 1 else { return true }
            for i in 1..<items.count {
                for j in 0..<i where schemaEqual(items[i], items[j]) {
                    fail("uniqueItems", "expected unique items, found items \(j) and \(i) equal")
                    return false
                }
            }
            return true

        case .minProperties(let minimum):
            guard case .object(let object) = instance, object.count < minimum else { return true }
            fail("minProperties", "expected at least \(minimum) properties, found \(object.count)")
            return false

        case .maxProperties(let maximum):
            guard case .object(let object) = instance, object.count > maximum else { return true }
            fail("maxProperties", "expected at most \(maximum) properties, found \(object.count)")
            return false

        case .dependentRequired(let dependencies):
            guard case .object(let object) = instance else { return true }
            var valid = true
            for (name, required) in dependencies where object.member(name) != nil {
                for other in required where object.member(other) == nil {
                    valid = false
                    guard collecting else { return false }
                    fail("dependentRequired", "property \"\(name)\" requires property \"\(other)\"")
                }
            }
            return valid

        case .dependentSchemas(let dependencies):
            guard case .object(let object) = instance else { return true }
            var valid = true
            for (name, node) in dependencies where object.member(name) != nil {
                if !descendInPlace(node, instance, keyword: "dependentSchemas", member: .key(name), &evaluated, tracking: tracking) {
                    valid = false
                    if !collecting { return false }
                }
            }
            return valid

        case .allOf(let branches):
            var valid = true
            for (i, node) in branches.enumerated() where !descendInPlace(node, instance, keyword: "allOf", member: .index(i), &evaluated, tracking: tracking) {
                valid = false
                if !collecting { return false }
            }
            return valid

        case .anyOf(let branches):
            var matched = false
            for node in branches where silentInPlace(node, instance, &evaluated, tracking: tracking) {
                matched = true
                // Annotations from every passing branch count, so keep going only when tracking.
                if !tracking { break }
            }
            if !matched && collecting {
                let closest = closestBranch(branches, keyword: "anyOf", instance)
                fail("anyOf", "expected a value matching at least one of \(branches.count) schemas, found \(describe(instance))\(closest)")
            }
            return matched

        case .oneOf(let branches):
            var matches = 0
            for node in branches where silentInPlace(node, instance, &evaluated, tracking: tracking) {
                matches += 1
                if matches > 1 { break }   // already invalid; annotations of a failing oneOf are dropped
            }
            guard matches == 1 else {
                if collecting {
                    // Which branches matched, recomputed only to explain the failure.
                    let matching = branches.indices.filter { silentCheck(branches[$0], instance) }
                    let closest = matching.isEmpty ? closestBranch(branches, keyword: "oneOf", instance) : ""
                    fail("oneOf", matching.isEmpty
                         ? "expected a value matching exactly one of \(branches.count) schemas, found none matching: \(describe(instance))\(closest)"
                         : "expected a value matching exactly one of \(branches.count) schemas, found it matching schemas \(matching)")
                }
                return false
            }
            return true

        case .not(let node):
            if silentCheck(node, instance) {
                fail("not", "expected a value not matching the schema in not, found \(describe(instance))")
                return false
            }
            return true

        case .conditional(let condition, let then, let otherwise):
            if silentInPlace(condition, instance, &evaluated, tracking: tracking) {
                guard let then else { return true }
                return descendInPlace(then, instance, keyword: "then", &evaluated, tracking: tracking)
            } else {
                guard let otherwise else { return true }
                return descendInPlace(otherwise, instance, keyword: "else", &evaluated, tracking: tracking)
            }

        case .ref(let target):
            return descendInPlace(target, instance, keyword: "$ref", &evaluated, tracking: tracking)

        case .dynamicRef(let initial, let anchor):
            var target = initial
            if let anchor {
                for resource in dynamicScope {
                    if let node = dynamicAnchors[resource][anchor] {
                        target = node
                        break
                    }
                }
            }
            return descendInPlace(target, instance, keyword: "$dynamicRef", &evaluated, tracking: tracking)

        case .unevaluatedProperties(let node):
            guard case .object(let object) = instance else { return true }
            var valid = true
            for (name, value) in object.entries where !evaluated.covers(property: name) {
                if !descendInto(node, value, keyword: "unevaluatedProperties", at: .key(name)) {
                    valid = false
                    if !collecting { return false }
                }
            }
            evaluated.allProperties = true
            return valid

        case .unevaluatedItems(let node):
            guard case .array(let items) = instance else { return true }
            var valid = true
            for (i, item) in items.enumerated() where !evaluated.covers(item: i) {
                if !descendInto(node, item, keyword: "unevaluatedItems", at: .index(i)) {
                    valid = false
                    if !collecting { return false }
                }
            }
            evaluated.allItems = true
            return valid
        }
    }

    /// When no branch of anyOf/oneOf matches, the failures of the branch that got furthest
    /// (deepest instance location, then fewest failures) explain more than "matched none":
    /// an APNs `alert` object with a numeric `title` fails the string branch at the root and
    /// the object branch at `/title`; the second is what the sender got wrong.
    private mutating func closestBranch(_ branches: [Int], keyword: String, _ instance: JSONValue) -> String {
        var best: [SchemaViolation] = []
        var bestDepth = -1
        for (i, node) in branches.enumerated() {
            let before = violations.count
            var scratch = EvaluatedLocations()
            _ = descend(node, instance, keyword: keyword, member: .index(i), &scratch, tracking: false)
            let found = Array(violations[before...])
            violations.removeSubrange(before...)
            let depth = found.map(\.instanceLocation.tokens.count).max() ?? 0
            if depth > bestDepth || (depth == bestDepth && found.count < best.count) {
                best = found
                bestDepth = depth
            }
        }
        guard !best.isEmpty else { return "" }
        let shown = best.prefix(3).map(\.description).joined(separator: "; ")
        return "; closest: \(shown)\(best.count > 3 ? "; ..." : "")"
    }

    private func falseSchemaMessage(_ instance: JSONValue) -> String {
        switch keywordPath.last {
        case "additionalProperties", "unevaluatedProperties":
            "property \"\(instancePath.last ?? "")\" is not allowed"
        case "items", "unevaluatedItems":
            "item \(instancePath.last ?? "") is not allowed"
        default:
            "no value is allowed here, found \(describe(instance))"
        }
    }

    /// 2020-12 validation §6.2.1 asks for a mathematical multiple; with doubles, a quotient
    /// within a few ulps of an integer counts (0.0075 / 0.0001 = 75.00000000000001, since
    /// 0.0001 has no exact binary form), and an overflowing quotient does not (1e308 / 0.123456789).
    static func isMultiple(_ value: Double, of divisor: Double) -> Bool {
        if divisor.rounded(.towardZero) == divisor {
            // Integral divisor: the remainder of two doubles is exact, at any magnitude.
            return value.truncatingRemainder(dividingBy: divisor) == 0
        }
        let quotient = value / divisor
        // Past 2^53 every double is an integer; when the quotient overflows, the exact
        // remainder still answers (1e308 is a multiple of 0.5).
        guard quotient.isFinite else { return value.truncatingRemainder(dividingBy: divisor) == 0 }
        let nearest = quotient.rounded()
        return abs(quotient - nearest) <= 8 * quotient.magnitude.ulp
    }
}

/// JSON Schema equality (2020-12 core §4.2.2) for `const`, `enum` and `uniqueItems`.
/// Strings compare by code points: Swift's `String ==` uses canonical equivalence, under
/// which "é" (U+00E9) equals "e\u{301}", but JSON Schema (and the test suite) says they differ.
func schemaEqual(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): return true
    case (.bool(let a), .bool(let b)): return a == b
    case (.number(let a), .number(let b)): return a == b
    case (.string(let a), .string(let b)): return sameCodePoints(a, b)
    case (.array(let a), .array(let b)):
        guard a.count == b.count else { return false }
        for i in a.indices where !schemaEqual(a[i], b[i]) { return false }
        return true
    case (.object(let a), .object(let b)):
        guard a.count == b.count else { return false }
        for (key, value) in a.entries {
            guard let other = b.member(key), schemaEqual(value, other) else { return false }
        }
        return true
    default: return false
    }
}

/// `string.unicodeScalars.count` from the UTF-8 bytes: every scalar has exactly one byte that
/// is not a continuation byte (0b10xxxxxx). Walking the scalar view was ~6% of judging a
/// poolse push (perf: minLength on every passing string).
func codePointCount(_ string: String) -> Int {
    let counted = string.utf8.withContiguousStorageIfAvailable { bytes -> Int in
        var count = 0
        for byte in bytes where byte & 0xC0 != 0x80 { count += 1 }
        return count
    }
    return counted ?? string.unicodeScalars.count
}
