import JSON

/// Turns a schema document into `SchemaNode`s: checks every keyword's shape, compiles
/// regexes, registers `$id` resources and `$anchor`s, then links `$ref`s once the whole
/// document is known (a `$ref` may point forward, backward, or at itself).
///
/// A `$ref` to another document resolves only to one of `Options.remoteDocuments` (never
/// fetched): that document is compiled into the same node array when first referred to, so
/// evaluation never knows where a node came from. Document 0 is the schema itself.
struct SchemaCompiler {
    /// Base URI of a document without `$id`; refs that resolve elsewhere are unresolvable.
    static let defaultBaseURI = "urn:pushproof:schema"

    let options: JSONSchema.Options
    /// The schema document first, then each remote document as it is referred to.
    private var documents: [JSONValue]
    /// The URI of each document after the first, by document index (nil for the schema's own).
    private var documentURIs: [String?] = [nil]
    /// The document being compiled: every pointer compiled meanwhile is in it.
    private var currentDocument = 0
    private(set) var nodes: [SchemaNode] = []
    /// Where each node sits in its document, for `SchemaViolation.schemaLocation`.
    private(set) var nodeLocations: [JSONPointer] = []
    /// For each node, its document's URI when that is a remote document, else nil.
    private(set) var nodeDocuments: [String?] = []
    /// Document index and pointer (RFC 6901 text) of each compiled subschema → node.
    private var nodeAtPointer: [String: Int] = [:]
    /// Absolute URI (no fragment) of each schema resource → its document and pointer.
    private var resources: [String: (document: Int, tokens: [String])] = [:]
    /// `uri#anchor` → node.
    private var anchors: [String: Int] = [:]
    private var pendingRefs: [PendingRef] = []
    /// Schema resources (document root and each `$id`) numbered for the dynamic scope.
    private var resourceNumbers: [String: Int] = [:]
    /// Per resource number: its `$dynamicAnchor`s, name → node.
    private(set) var dynamicAnchors: [[String: Int]] = []
    /// The `$dynamicAnchor` a node declares, for the "bookending" check of `$dynamicRef`.
    private var dynamicAnchorOfNode: [Int: String] = [:]
    /// Whether any `$dynamicRef` exists: only then does evaluation track the dynamic scope.
    private(set) var usesDynamicScope = false

    private struct PendingRef {
        var node: Int
        var keywordIndex: Int
        var target: SchemaURI
        var location: JSONPointer
        var dynamic: Bool
    }

    init(document: JSONValue, options: JSONSchema.Options) {
        documents = [document]
        self.options = options
    }

    mutating func compileDocument() throws(SchemaError) -> Int {
        let base = SchemaURI(parsing: Self.defaultBaseURI)
        resources[base.text] = (0, [])
        let root = try compile(documents[0], at: JSONPointer(), base: base)
        // Linking may compile more nodes (refs into non-schema locations), which may add refs.
        var next = 0
        while next < pendingRefs.count {
            try link(pendingRefs[next])
            next += 1
        }
        try rejectInPlaceCycles()
        return root
    }

    /// A loop of `$ref`s (through allOf, anyOf, not, if...) that never moves into the instance,
    /// such as `{"$ref": "#"}`, would recurse forever on every instance: reject it here.
    private func rejectInPlaceCycles() throws(SchemaError) {
        enum Mark { case unvisited, inProgress, done }
        var marks = [Mark](repeating: .unvisited, count: nodes.count)
        func inPlaceChildren(_ node: Int) -> [Int] {
            var children: [Int] = []
            for keyword in nodes[node].keywords {
                switch keyword {
                case .ref(let target): children.append(target)
                case .dynamicRef(let initial, let anchor):
                    children.append(initial)
                    // Any same-named dynamic anchor may be chosen at run time.
                    if let anchor { children += dynamicAnchors.compactMap { $0[anchor] } }
                case .allOf(let branches), .anyOf(let branches), .oneOf(let branches): children += branches
                case .not(let child): children.append(child)
                case .conditional(let condition, let then, let otherwise):
                    children.append(condition)
                    if let then { children.append(then) }
                    if let otherwise { children.append(otherwise) }
                case .dependentSchemas(let dependencies): children += dependencies.map(\.node)
                default: break
                }
            }
            return children
        }
        // Iterative depth-first search: (node, next child to visit).
        for start in nodes.indices where marks[start] == .unvisited {
            var stack: [(node: Int, children: [Int], next: Int)] = [(start, inPlaceChildren(start), 0)]
            marks[start] = .inProgress
            while let top = stack.last {
                if top.next == top.children.count {
                    marks[top.node] = .done
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                let child = top.children[top.next]
                switch marks[child] {
                case .inProgress:
                    let location = nodeLocations[child]
                    throw SchemaError(pointer: location, message: "this schema refers back to itself through $ref without descending into the instance, which would never terminate")
                case .unvisited:
                    marks[child] = .inProgress
                    stack.append((child, inPlaceChildren(child), 0))
                case .done:
                    break
                }
            }
        }
    }

    // MARK: - Linking

    private mutating func link(_ ref: PendingRef) throws(SchemaError) {
        let resourceKey = ref.target.withoutFragment.text
        let fragment = ref.target.fragment ?? ""
        let keywordName = ref.dynamic ? "$dynamicRef" : "$ref"
        let target: Int
        if resources[resourceKey] == nil {
            try loadRemoteDocument(resourceKey, for: ref)
        }
        if fragment.isEmpty || fragment.hasPrefix("/") {
            guard let resource = resources[resourceKey] else {
                throw SchemaError(pointer: ref.location, message: "unresolvable \(keywordName) \"\(ref.target.text)\": no schema with that URI in this document (remote references are not fetched)")
            }
            guard let decoded = percentDecoded(fragment), let fragmentPointer = JSONPointer(decoded) else {
                throw SchemaError(pointer: ref.location, message: "\(keywordName) fragment \"\(fragment)\" is not a JSON pointer")
            }
            let full = JSONPointer(tokens: resource.tokens + fragmentPointer.tokens)
            if let existing = nodeAtPointer[Self.nodeKey(resource.document, full)] {
                target = existing
            } else if let value = full.resolve(in: documents[resource.document]) {
                let outer = currentDocument
                currentDocument = resource.document
                defer { currentDocument = outer }
                target = try compile(value, at: full, base: SchemaURI(parsing: resourceKey))
            } else {
                throw SchemaError(pointer: ref.location, message: "unresolvable \(keywordName) \"\(ref.target.text)\": nothing at \(full)")
            }
        } else {
            let anchor = percentDecoded(fragment) ?? fragment
            guard let node = anchors[resourceKey + "#" + anchor] else {
                throw SchemaError(pointer: ref.location, message: "unresolvable \(keywordName) \"\(ref.target.text)\": no $anchor \"\(anchor)\" in that resource")
            }
            target = node
        }
        guard ref.dynamic else {
            nodes[ref.node].keywords[ref.keywordIndex] = .ref(target)
            return
        }
        // 2020-12 core §8.2.3.2: dynamic resolution applies only when the initial target is
        // a $dynamicAnchor of the same name; otherwise $dynamicRef behaves like $ref.
        let anchor = percentDecoded(fragment) ?? fragment
        let dynamicName = dynamicAnchorOfNode[target] == anchor && !anchor.isEmpty ? anchor : nil
        nodes[ref.node].keywords[ref.keywordIndex] = .dynamicRef(initial: target, anchor: dynamicName)
    }

    /// Compiles the remote document `uri` (from `Options.remoteDocuments`) as a new document,
    /// so its resources and anchors can be linked to; nothing happens when none is given.
    private mutating func loadRemoteDocument(_ uri: String, for ref: PendingRef) throws(SchemaError) {
        guard let remote = options.remoteDocuments[uri] else { return }
        documents.append(remote)
        documentURIs.append(uri)
        let outer = currentDocument
        currentDocument = documents.count - 1
        defer { currentDocument = outer }
        resources[uri] = (currentDocument, [])
        do {
            _ = try compile(remote, at: JSONPointer(), base: SchemaURI(parsing: uri))
        } catch {
            throw SchemaError(pointer: ref.location, message: "remote schema \"\(uri)\" does not compile: \(error)")
        }
    }

    private static func nodeKey(_ document: Int, _ pointer: JSONPointer) -> String {
        document == 0 ? pointer.description : "\(document) \(pointer.description)"
    }

    private mutating func resourceNumber(_ base: SchemaURI) -> Int {
        let key = base.text
        if let number = resourceNumbers[key] { return number }
        resourceNumbers[key] = dynamicAnchors.count
        dynamicAnchors.append([:])
        return dynamicAnchors.count - 1
    }

    // MARK: - Compiling

    private mutating func compile(_ value: JSONValue, at pointer: JSONPointer, base: SchemaURI) throws(SchemaError) -> Int {
        let key = Self.nodeKey(currentDocument, pointer)
        if let existing = nodeAtPointer[key] { return existing }
        switch value {
        case .bool(let accepts):
            nodes.append(SchemaNode(keywords: accepts ? [] : [.falseSchema], resource: resourceNumber(base)))
            nodeLocations.append(pointer)
            nodeDocuments.append(documentURIs[currentDocument])
            nodeAtPointer[key] = nodes.count - 1
            return nodes.count - 1
        case .object(let object):
            let index = nodes.count
            nodes.append(SchemaNode())
            nodeLocations.append(pointer)
            nodeDocuments.append(documentURIs[currentDocument])
            nodeAtPointer[key] = index
            nodes[index] = try compileObject(object, index: index, at: pointer, base: base)
            return index
        default:
            throw SchemaError(pointer: pointer, message: "a schema must be an object or a boolean, found \(value.typeName)")
        }
    }

    /// Keywords that carry no assertion in 2020-12's default vocabularies (annotations, core
    /// identifiers handled before the loop).
    private static let annotationKeywords: Set<String> = [
        "$id", "$anchor", "$dynamicAnchor", "$schema", "$comment", "$vocabulary",
        "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
        "format", "contentEncoding", "contentMediaType", "contentSchema",
        // Read by their sibling `contains`; checked for shape here.
        "minContains", "maxContains",
    ]

    private mutating func compileObject(_ object: JSONObject, index: Int, at pointer: JSONPointer, base inheritedBase: SchemaURI) throws(SchemaError) -> SchemaNode {
        var base = inheritedBase
        if let id = object["$id"] {
            guard let text = id.stringValue else { throw wrongType(pointer, "$id", "a string", id) }
            let resolved = base.resolving(text)
            if let fragment = resolved.fragment, !fragment.isEmpty {
                throw SchemaError(pointer: pointer.appending("$id"), message: "$id must not carry a fragment (use $anchor), found \"\(text)\"")
            }
            base = resolved.withoutFragment
            resources[base.text] = (currentDocument, pointer.tokens)
        }
        let resource = resourceNumber(base)
        for anchorKeyword in ["$anchor", "$dynamicAnchor"] {
            guard let anchor = object[anchorKeyword] else { continue }
            guard let name = anchor.stringValue, Self.isValidAnchor(name) else {
                throw SchemaError(pointer: pointer.appending(anchorKeyword), message: "must be a string matching ^[A-Za-z_][-A-Za-z0-9._]*$, found \(describe(anchor))")
            }
            anchors[base.text + "#" + name] = index
            if anchorKeyword == "$dynamicAnchor" {
                dynamicAnchors[resource][name] = index
                dynamicAnchorOfNode[index] = name
            }
        }

        var keywords: [CompiledKeyword] = []
        var late: [CompiledKeyword] = []
        var ifNode: Int?
        var thenNode: Int?
        var elseNode: Int?
        var compiledMembers = false

        for (name, value) in object.entries {
            let at = pointer.appending(name)
            switch name {
            case _ where Self.annotationKeywords.contains(name):
                if name == "minContains" || name == "maxContains" { _ = try nonNegativeInteger(value, at) }
                if name == "$schema" && options.strict && !Self.isDraft202012(value) {
                    // Another draft's keywords mean other things (`items` as an array, `dependencies`...).
                    throw SchemaError(pointer: at, message: "only draft 2020-12 is supported (\"https://json-schema.org/draft/2020-12/schema\"), found \(describe(value))")
                }
            case "$defs":
                guard case .object(let definitions) = value else { throw wrongType(pointer, name, "an object", value) }
                for (defName, definition) in definitions.entries {
                    _ = try compile(definition, at: at.appending(defName), base: base)
                }
            case "$ref":
                guard let reference = value.stringValue else { throw wrongType(pointer, name, "a string", value) }
                pendingRefs.append(PendingRef(node: index, keywordIndex: keywords.count, target: base.resolving(reference), location: at, dynamic: false))
                keywords.append(.ref(-1))
            case "$dynamicRef":
                guard let reference = value.stringValue else { throw wrongType(pointer, name, "a string", value) }
                pendingRefs.append(PendingRef(node: index, keywordIndex: keywords.count, target: base.resolving(reference), location: at, dynamic: true))
                keywords.append(.dynamicRef(initial: -1, anchor: nil))
                usesDynamicScope = true
            case "$recursiveRef":
                throw SchemaError(pointer: at, message: "\(name) is not supported by this validator")
            case "type":
                keywords.append(.type(try typeSet(value, at)))
            case "const":
                keywords.append(.const(value))
            case "enum":
                guard case .array(let options) = value else { throw wrongType(pointer, name, "an array", value) }
                keywords.append(.enumeration(options))
            case "required":
                keywords.append(.required(try stringArray(value, at)))
            case "properties", "patternProperties", "additionalProperties":
                // Compiled together, at the first of the three.
                guard !compiledMembers else { continue }
                compiledMembers = true
                var named: [(name: String, node: Int)] = []
                if let properties = object["properties"] {
                    guard case .object(let members) = properties else { throw wrongType(pointer, "properties", "an object", properties) }
                    for (property, schema) in members.entries {
                        named.append((property, try compile(schema, at: pointer.appending("properties").appending(property), base: base)))
                    }
                }
                let patterns = try object["patternProperties"].map { value throws(SchemaError) in
                    try patternSchemas(value, pointer.appending("patternProperties"), base: base)
                } ?? []
                let additional = try object["additionalProperties"].map { value throws(SchemaError) in
                    try compile(value, at: pointer.appending("additionalProperties"), base: base)
                }
                keywords.append(.objectMembers(MemberRules(named: named, patterns: patterns, additional: additional)))
            case "propertyNames":
                keywords.append(.propertyNames(try compile(value, at: at, base: base)))
            case "pattern":
                guard let source = value.stringValue else { throw wrongType(pointer, name, "a string", value) }
                keywords.append(.pattern(try compilePattern(source, at)))
            case "minLength": keywords.append(.minLength(try nonNegativeInteger(value, at)))
            case "maxLength": keywords.append(.maxLength(try nonNegativeInteger(value, at)))
            case "minItems": keywords.append(.minItems(try nonNegativeInteger(value, at)))
            case "maxItems": keywords.append(.maxItems(try nonNegativeInteger(value, at)))
            case "minProperties": keywords.append(.minProperties(try nonNegativeInteger(value, at)))
            case "maxProperties": keywords.append(.maxProperties(try nonNegativeInteger(value, at)))
            case "minimum": keywords.append(.minimum(try number(value, at)))
            case "maximum": keywords.append(.maximum(try number(value, at)))
            case "exclusiveMinimum": keywords.append(.exclusiveMinimum(try number(value, at)))
            case "exclusiveMaximum": keywords.append(.exclusiveMaximum(try number(value, at)))
            case "multipleOf":
                let divisor = try number(value, at)
                guard divisor > 0 else { throw SchemaError(pointer: at, message: "must be a number greater than 0, found \(describe(value))") }
                keywords.append(.multipleOf(divisor))
            case "prefixItems":
                keywords.append(.prefixItems(try schemaArray(value, at, base: base)))
            case "items":
                let start = object["prefixItems"]?.arrayValue?.count ?? 0
                keywords.append(.items(node: try compile(value, at: at, base: base), start: start))
            case "contains":
                let node = try compile(value, at: at, base: base)
                let minimum = try object["minContains"].map { v throws(SchemaError) in try nonNegativeInteger(v, pointer.appending("minContains")) } ?? 1
                let maximum = try object["maxContains"].map { v throws(SchemaError) in try nonNegativeInteger(v, pointer.appending("maxContains")) }
                keywords.append(.contains(node: node, min: minimum, max: maximum))
            case "uniqueItems":
                guard case .bool(let unique) = value else { throw wrongType(pointer, name, "a boolean", value) }
                if unique { keywords.append(.uniqueItems) }
            case "dependentRequired":
                guard case .object(let dependencies) = value else { throw wrongType(pointer, name, "an object", value) }
                var compiled: [(name: String, required: [String])] = []
                for (property, names) in dependencies.entries {
                    compiled.append((property, try stringArray(names, at.appending(property))))
                }
                keywords.append(.dependentRequired(compiled))
            case "dependentSchemas":
                guard case .object(let dependencies) = value else { throw wrongType(pointer, name, "an object", value) }
                var compiled: [(name: String, node: Int)] = []
                for (property, schema) in dependencies.entries {
                    compiled.append((property, try compile(schema, at: at.appending(property), base: base)))
                }
                keywords.append(.dependentSchemas(compiled))
            case "allOf": keywords.append(.allOf(try schemaArray(value, at, base: base)))
            case "anyOf": keywords.append(.anyOf(try schemaArray(value, at, base: base)))
            case "oneOf": keywords.append(.oneOf(try schemaArray(value, at, base: base)))
            case "not": keywords.append(.not(try compile(value, at: at, base: base)))
            // then/else are compiled even without `if` so $id/$anchor inside them stay reachable.
            case "if": ifNode = try compile(value, at: at, base: base)
            case "then": thenNode = try compile(value, at: at, base: base)
            case "else": elseNode = try compile(value, at: at, base: base)
            case "unevaluatedProperties": late.append(.unevaluatedProperties(try compile(value, at: at, base: base)))
            case "unevaluatedItems": late.append(.unevaluatedItems(try compile(value, at: at, base: base)))
            default:
                if options.strict && !options.extensionKeywords.contains(name) {
                    throw SchemaError(pointer: at, message: "unknown keyword \"\(name)\"")
                }
            }
        }
        if let ifNode {
            keywords.append(.conditional(if: ifNode, then: thenNode, else: elseNode))
        }
        return SchemaNode(keywords: keywords + late, needsEvaluatedLocations: !late.isEmpty, resource: resource)
    }

    // MARK: - Keyword shapes

    private static func isDraft202012(_ value: JSONValue) -> Bool {
        value == "https://json-schema.org/draft/2020-12/schema" || value == "https://json-schema.org/draft/2020-12/schema#"
    }

    private static func isValidAnchor(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII,
              first.properties.isAlphabetic || first == "_" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }
    }

    private func wrongType(_ pointer: JSONPointer, _ keyword: String, _ expected: String, _ found: JSONValue) -> SchemaError {
        SchemaError(pointer: pointer.appending(keyword), message: "\(keyword) must be \(expected), found \(describe(found))")
    }

    private func nonNegativeInteger(_ value: JSONValue, _ at: JSONPointer) throws(SchemaError) -> Int {
        guard case .number(let d) = value, d >= 0, d.rounded(.towardZero) == d, d < 9_007_199_254_740_992 else {
            throw SchemaError(pointer: at, message: "must be a non-negative integer, found \(describe(value))")
        }
        return Int(d)
    }

    private func number(_ value: JSONValue, _ at: JSONPointer) throws(SchemaError) -> Double {
        guard case .number(let d) = value else {
            throw SchemaError(pointer: at, message: "must be a number, found \(describe(value))")
        }
        return d
    }

    private func stringArray(_ value: JSONValue, _ at: JSONPointer) throws(SchemaError) -> [String] {
        guard case .array(let elements) = value else {
            throw SchemaError(pointer: at, message: "must be an array of strings, found \(describe(value))")
        }
        var strings: [String] = []
        for (i, element) in elements.enumerated() {
            guard let string = element.stringValue else {
                throw SchemaError(pointer: at.appending(i), message: "must be a string, found \(describe(element))")
            }
            guard !strings.contains(string) else {
                throw SchemaError(pointer: at.appending(i), message: "duplicate \"\(string)\" (items must be unique)")
            }
            strings.append(string)
        }
        return strings
    }

    private func typeSet(_ value: JSONValue, _ at: JSONPointer) throws(SchemaError) -> TypeSet {
        switch value {
        case .string(let name):
            guard let type = TypeSet(name: name) else {
                throw SchemaError(pointer: at, message: "unknown type \"\(name)\" (expected null, boolean, object, array, number, string or integer)")
            }
            return type
        case .array(let names):
            var set: TypeSet = []
            for (i, name) in names.enumerated() {
                guard let text = name.stringValue, let type = TypeSet(name: text) else {
                    throw SchemaError(pointer: at.appending(i), message: "unknown type \(describe(name))")
                }
                set.insert(type)
            }
            return set
        default:
            throw SchemaError(pointer: at, message: "must be a type name or an array of them, found \(describe(value))")
        }
    }

    private mutating func schemaArray(_ value: JSONValue, _ at: JSONPointer, base: SchemaURI) throws(SchemaError) -> [Int] {
        guard case .array(let elements) = value, !elements.isEmpty else {
            throw SchemaError(pointer: at, message: "must be a non-empty array of schemas, found \(describe(value))")
        }
        var nodes: [Int] = []
        for (i, element) in elements.enumerated() {
            nodes.append(try compile(element, at: at.appending(i), base: base))
        }
        return nodes
    }

    private mutating func patternSchemas(_ value: JSONValue, _ at: JSONPointer, base: SchemaURI) throws(SchemaError) -> [(pattern: CompiledPattern, node: Int)] {
        guard case .object(let object) = value else {
            throw SchemaError(pointer: at, message: "must be an object, found \(describe(value))")
        }
        var compiled: [(pattern: CompiledPattern, node: Int)] = []
        for (source, schema) in object.entries {
            let pattern = try compilePattern(source, at.appending(source))
            compiled.append((pattern, try compile(schema, at: at.appending(source), base: base)))
        }
        return compiled
    }

    private func compilePattern(_ source: String, _ at: JSONPointer) throws(SchemaError) -> CompiledPattern {
        do {
            return try CompiledPattern(source)
        } catch {
            throw SchemaError(pointer: at, message: "invalid regular expression \"\(source)\": \(error)")
        }
    }
}

/// A short rendering of a value for messages: compact JSON, cut at 60 bytes.
func describe(_ value: JSONValue) -> String {
    let bytes = value.bytes()
    guard bytes.count > 60 else { return String(decoding: bytes, as: UTF8.self) }
    return String(decoding: bytes.prefix(57), as: UTF8.self) + "..."
}
