// TEMPORARY: stands in for the JSON Schema validator landing on the `schema` branch, so this
// branch builds on its own. Deleted when `schema` is merged.
import JSON

public struct SchemaViolation: Sendable {
    public var instanceLocation: JSONPointer
    public var keywordLocation: JSONPointer
    public var keyword: String
    public var message: String
}

public struct SchemaError: Error, Sendable {
    public var pointer: JSONPointer
    public var message: String
}

public struct JSONSchema: Sendable {
    public struct Options: Sendable {
        public var strict: Bool
        public var extensionKeywords: [String]
        public init(strict: Bool = false, extensionKeywords: [String] = []) {
            self.strict = strict
            self.extensionKeywords = extensionKeywords
        }
    }
    public init(_ schema: JSONValue, options: JSONSchema.Options = .init()) throws(SchemaError) {}
    public func validate(_ instance: JSONValue) -> [SchemaViolation] { [] }
    public func isValid(_ instance: JSONValue) -> Bool { true }
}
