// Typed reading of JSON documents written by people (configuration, scenarios), with errors
// that name the key path of the culprit in the configuration file's style:
// `apns.keys[0].team_id: required`.

/// A value that does not have the shape a document needs, at `keyPath`
/// (`events[3].caller`; empty for the document itself).
public struct JSONFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public var keyPath: String
    public var problem: String

    public init(keyPath: String, problem: String) {
        self.keyPath = keyPath
        self.problem = problem
    }

    public var description: String { keyPath.isEmpty ? problem : "\(keyPath): \(problem)" }
}

/// An object member by member. Every accessor takes the member's key and throws a
/// `JSONFieldError` naming `path.key`; `null` reads as absent, so optional members may be
/// written `null`. Construct with `allowed` to reject unknown keys (a typo must not be ignored).
public struct JSONFields: Sendable {
    public let object: JSONObject
    /// This object's key path (`events[3]`), "" for the document.
    public let path: String

    public init(_ value: JSONValue, path: String = "", allowed: [String]? = nil) throws(JSONFieldError) {
        guard case .object(let object) = value else {
            throw JSONFieldError(keyPath: path, problem: "expected an object, found \(value.typeName)")
        }
        if let allowed {
            for key in object.keys where !allowed.contains(key) {
                throw JSONFieldError(keyPath: Self.join(path, key), problem: "unknown key (allowed: \(allowed.joined(separator: ", ")))")
            }
        }
        self.object = object
        self.path = path
    }

    /// `path.key`, or `key` at the top.
    public static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    public func path(_ key: String) -> String { Self.join(path, key) }

    /// `path.key[index]`: an element of the array member `key`.
    public func path(_ key: String, _ index: Int) -> String { "\(path(key))[\(index)]" }

    public func fail(_ key: String, _ problem: String) -> JSONFieldError {
        JSONFieldError(keyPath: path(key), problem: problem)
    }

    /// Whether `key` is present and not null.
    public func has(_ key: String) -> Bool { value(key) != nil }

    /// The member, nil when absent or null.
    public func value(_ key: String) -> JSONValue? {
        guard let value = object[key], !value.isNull else { return nil }
        return value
    }

    // MARK: Strings

    public func string(_ key: String) throws(JSONFieldError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw fail(key, "expected a string, found \(value.typeName)") }
        return text
    }

    /// A non-empty string that must be there; `allowEmpty` where "" is a value (a report's
    /// empty outcome reason).
    public func requiredString(_ key: String, allowEmpty: Bool = false) throws(JSONFieldError) -> String {
        guard let text = try string(key) else { throw fail(key, allowEmpty ? "required (a string)" : "required (a non-empty string)") }
        guard allowEmpty || !text.isEmpty else { throw fail(key, "required (a non-empty string)") }
        return text
    }

    /// One of `choices`, e.g. `"platform": "ios" | "android"`.
    public func choice(_ key: String, _ choices: [String]) throws(JSONFieldError) -> String? {
        guard let text = try string(key) else { return nil }
        guard choices.contains(text) else {
            throw fail(key, "expected one of \(choices.map { "\"\($0)\"" }.joined(separator: ", ")), found \"\(text)\"")
        }
        return text
    }

    public func requiredChoice(_ key: String, _ choices: [String]) throws(JSONFieldError) -> String {
        guard let text = try choice(key, choices) else {
            throw fail(key, "required (one of \(choices.joined(separator: ", ")))")
        }
        return text
    }

    /// An array of non-empty strings; nil when absent.
    public func strings(_ key: String) throws(JSONFieldError) -> [String]? {
        guard let elements = try array(key) else { return nil }
        var result: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element, !text.isEmpty else {
                throw JSONFieldError(keyPath: path(key, index), problem: "expected a non-empty string, found \(element.typeName)")
            }
            result.append(text)
        }
        return result
    }

    // MARK: Numbers and flags

    public func int(_ key: String, range: ClosedRange<Int>) throws(JSONFieldError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.intValue else { throw fail(key, "expected a whole number, found \(value.serialized())") }
        guard range.contains(number) else {
            throw fail(key, "must be between \(range.lowerBound) and \(range.upperBound), found \(number)")
        }
        return number
    }

    public func requiredInt(_ key: String, range: ClosedRange<Int>) throws(JSONFieldError) -> Int {
        guard let number = try int(key, range: range) else { throw fail(key, "required (a whole number)") }
        return number
    }

    public func number(_ key: String, range: ClosedRange<Double>) throws(JSONFieldError) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.doubleValue else { throw fail(key, "expected a number, found \(value.typeName)") }
        guard range.contains(number) else {
            throw fail(key, "must be between \(range.lowerBound) and \(range.upperBound), found \(number)")
        }
        return number
    }

    public func requiredNumber(_ key: String, range: ClosedRange<Double> = -.infinity ... .infinity) throws(JSONFieldError) -> Double {
        guard let number = try number(key, range: range) else { throw fail(key, "required (a number)") }
        return number
    }

    /// An array of whole numbers in `range`; nil when absent.
    public func ints(_ key: String, range: ClosedRange<Int>) throws(JSONFieldError) -> [Int]? {
        guard let elements = try array(key) else { return nil }
        var result: [Int] = []
        for (index, element) in elements.enumerated() {
            guard let number = element.intValue, range.contains(number) else {
                throw JSONFieldError(keyPath: path(key, index), problem: "expected a whole number between \(range.lowerBound) and \(range.upperBound), found \(element.serialized())")
            }
            result.append(number)
        }
        return result
    }

    public func bool(_ key: String) throws(JSONFieldError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw fail(key, "expected true or false, found \(value.typeName)") }
        return flag
    }

    public func requiredBool(_ key: String) throws(JSONFieldError) -> Bool {
        guard let flag = try bool(key) else { throw fail(key, "required (true or false)") }
        return flag
    }

    // MARK: Structure

    public func array(_ key: String) throws(JSONFieldError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else { throw fail(key, "expected an array, found \(value.typeName)") }
        return elements
    }

    public func requiredArray(_ key: String) throws(JSONFieldError) -> [JSONValue] {
        guard let elements = try array(key) else { throw fail(key, "required (an array)") }
        return elements
    }

    /// A nested object; nil when absent.
    public func object(_ key: String, allowed: [String]? = nil) throws(JSONFieldError) -> JSONFields? {
        guard let value = value(key) else { return nil }
        return try JSONFields(value, path: path(key), allowed: allowed)
    }

    public func requiredObject(_ key: String, allowed: [String]? = nil) throws(JSONFieldError) -> JSONFields {
        guard let fields = try object(key, allowed: allowed) else { throw fail(key, "required (an object)") }
        return fields
    }

    /// An array of objects, each read with `allowed` keys at `path.key[i]`; empty when absent.
    public func objects(_ key: String, allowed: [String]? = nil) throws(JSONFieldError) -> [JSONFields] {
        var result: [JSONFields] = []
        for (index, element) in (try array(key) ?? []).enumerated() {
            result.append(try JSONFields(element, path: path(key, index), allowed: allowed))
        }
        return result
    }
}
