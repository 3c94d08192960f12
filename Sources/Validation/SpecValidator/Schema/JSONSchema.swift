import JSON

/// A compiled JSON Schema (draft 2020-12, https://json-schema.org/draft/2020-12/json-schema-core
/// and json-schema-validation). Compiling resolves every keyword once: regexes are compiled,
/// `$ref`s are linked to their targets (JSON pointers, `$id`s and `$anchor`s within the same
/// document), so validation is a walk over an immutable array of nodes.
///
/// What is not supported, and fails loudly at compile time rather than validating wrongly:
/// `$ref`s to documents not given in `Options.remoteDocuments` (throws "unresolvable": nothing
/// is ever fetched), draft 2019-09 `$recursiveRef`.
/// `format`, `content*`, `title`, `default`... are annotations only, as 2020-12 specifies
/// for the default vocabularies.
public struct JSONSchema: Sendable {
    /// How strictly a schema document is read.
    public struct Options: Sendable {
        /// Reject keywords that are neither 2020-12 keywords nor in `extensionKeywords`
        /// (`pushproof specs lint` uses this to catch typos such as `"requried"`), and a
        /// `$schema` naming another draft.
        public var strict: Bool
        /// Keywords the schema may carry in strict mode that this validator ignores
        /// (the spec engine registers its own, e.g. `x-derived`).
        public var extensionKeywords: Set<String>
        /// Documents a `$ref` to another URI resolves to, by absolute URI without fragment
        /// (`http://localhost:1234/integer.json`, `https://json-schema.org/draft/2020-12/schema`).
        /// Each is compiled the first time a reference reaches it; none is ever fetched.
        public var remoteDocuments: [String: JSONValue]

        public init(strict: Bool = false, extensionKeywords: Set<String> = [], remoteDocuments: [String: JSONValue] = [:]) {
            self.strict = strict
            self.extensionKeywords = extensionKeywords
            self.remoteDocuments = remoteDocuments
        }
    }

    let nodes: [SchemaNode]
    let rootNode: Int
    let nodeLocations: [JSONPointer]
    /// Per node, the URI of the remote document it is in (nil: the schema's own document).
    let nodeDocuments: [String?]
    let dynamicAnchors: [[String: Int]]
    let usesDynamicScope: Bool
    /// The same schema for tapes; nil when it needs what only the tree walk does.
    let tapeProgram: SchemaTapeProgram?

    /// Compiles `schema`; throws the JSON pointer of the first bad keyword and why.
    public init(_ schema: JSONValue, options: JSONSchema.Options = .init()) throws(SchemaError) {
        var compiler = SchemaCompiler(document: schema, options: options)
        rootNode = try compiler.compileDocument()
        nodes = compiler.nodes
        nodeLocations = compiler.nodeLocations
        nodeDocuments = compiler.nodeDocuments
        dynamicAnchors = compiler.dynamicAnchors
        usesDynamicScope = compiler.usesDynamicScope
        tapeProgram = SchemaTapeProgram(nodes: nodes, root: rootNode, usesDynamicScope: usesDynamicScope)
    }

    /// Every violation of `instance`, in schema order; empty when valid.
    public func validate(_ instance: JSONValue) -> [SchemaViolation] {
        var evaluator = SchemaEvaluator(schema: self, collecting: true)
        var scratch = EvaluatedLocations()
        _ = evaluator.evaluate(rootNode, instance, &scratch, tracking: false)
        return evaluator.violations
    }

    /// Whether `instance` is valid; stops at the first failure and builds no violation.
    public func isValid(_ instance: JSONValue) -> Bool {
        var evaluator = SchemaEvaluator(schema: self, collecting: false)
        var scratch = EvaluatedLocations()
        return evaluator.evaluate(rootNode, instance, &scratch, tracking: false)
    }

    /// `isValid` on a tape's document, without building its tree (unless the schema uses
    /// `unevaluated*` or `$dynamicRef`, which only the tree walk evaluates).
    public func isValid(_ document: JSONTape) -> Bool {
        guard let tapeProgram else { return isValid(document.value(at: 0)) }
        return tapeProgram.isValid(document)
    }
}

/// One way an instance fails a schema, located in both documents (the 2020-12 "basic" output
/// unit: instanceLocation, keywordLocation, error).
public struct SchemaViolation: Sendable, Equatable, CustomStringConvertible {
    /// Where in the instance, e.g. `/aps/alert`.
    public var instanceLocation: JSONPointer
    /// The evaluation path to the failing keyword, through `$ref`s, e.g.
    /// `/properties/badge/$ref/type` (2020-12 output "keywordLocation").
    public var keywordLocation: JSONPointer
    /// The failing keyword's place in the schema document, `$ref`s followed, e.g.
    /// `/$defs/count/type`: resolvable in the document, unlike `keywordLocation` once a
    /// `$ref` is on the path (2020-12 output "absoluteKeywordLocation", as a pointer).
    public var schemaLocation: JSONPointer
    /// The remote document `schemaLocation` points into (a `remoteDocuments` URI); nil when
    /// it is the schema's own.
    public var schemaDocument: String?
    /// The failing keyword, e.g. `const`.
    public var keyword: String
    /// Expected versus found, e.g. `expected "1", found 1`.
    public var message: String

    public init(instanceLocation: JSONPointer, keywordLocation: JSONPointer, schemaLocation: JSONPointer? = nil,
                schemaDocument: String? = nil, keyword: String, message: String) {
        self.instanceLocation = instanceLocation
        self.keywordLocation = keywordLocation
        self.schemaLocation = schemaLocation ?? keywordLocation
        self.schemaDocument = schemaDocument
        self.keyword = keyword
        self.message = message
    }

    public var description: String {
        let at = instanceLocation.tokens.isEmpty ? "(root)" : instanceLocation.description
        return "\(at): \(message) [\(keywordLocation)]"
    }
}

/// Why a schema document cannot be compiled, and where in it.
public struct SchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The schema location of the bad keyword.
    public var pointer: JSONPointer
    public var message: String

    public init(pointer: JSONPointer, message: String) {
        self.pointer = pointer
        self.message = message
    }

    public var description: String {
        "schema error at \(pointer.tokens.isEmpty ? "(root)" : pointer.description): \(message)"
    }
}
