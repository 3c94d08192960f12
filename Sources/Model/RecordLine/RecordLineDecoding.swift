import Encoding
import HTTPCore
import JSON
import PushModel

/// Why a line is not a record line this build can read; `description` is the sentence a tool
/// prints after `line N: `.
public enum RecordLineError: Error, Equatable, CustomStringConvertible {
    /// Not JSON at all (a torn line, another file).
    case notJSON(String)
    /// `v` is a version this build does not read (see `RecordLine`'s version rule).
    case unsupportedVersion(String)
    /// JSON, but a member is missing or of the wrong kind.
    case malformed(String)

    public var description: String {
        switch self {
        case .notJSON(let problem): "not JSON: \(problem)"
        case .unsupportedVersion(let found):
            "unsupported record version \(found) (this pushproof reads \(RecordLine.readableVersionsText))"
        case .malformed(let problem): "malformed record: \(problem)"
        }
    }
}

extension RecordLine {
    /// `versions 1 and 2`, for a refusal.
    static var readableVersionsText: String {
        let versions = readableVersions.map(String.init)
        return versions.count == 1 ? "version \(versions[0])"
            : "versions " + versions.dropLast().joined(separator: ", ") + " and " + versions.last!
    }
}

extension RecordedExchange {
    /// Decodes one record line (without its newline) of any version this build reads. The
    /// version is checked first: a line of another version is reported as such, not as whatever
    /// its fields look like to this reader.
    public init(decoding line: [UInt8]) throws(RecordLineError) {
        let result: Result<RecordedExchange, RecordLineError> = line.withUnsafeBufferPointer { bytes in
            Result { () throws(RecordLineError) -> RecordedExchange in try RecordedExchange(decoding: bytes) }
        }
        self = try result.get()
    }

    /// `init(decoding:)` of bytes held elsewhere (a line inside a `GET /requests` answer:
    /// `JSONParser.elementRanges`).
    public init(decoding line: UnsafeBufferPointer<UInt8>) throws(RecordLineError) {
        // A version-2 `json` is taken as its bytes, never built as a tree: the body is what was received.
        let parsed: JSONParser.PartlyParsed
        do { parsed = try JSONParser.parse(line, leavingRaw: RecordLine.name(RecordLine.Field.json)) } catch { throw .notJSON("\(error)") }
        guard case .object = parsed.value else { throw .malformed("a record line is a JSON object") }
        try self.init(members: parsed.value, json: parsed.raw.map { Array(line[$0]) })
    }

    /// A line parsed but for its `json` member, whose bytes are `json` when it has one.
    private init(members value: JSONValue, json: [UInt8]?) throws(RecordLineError) {
        typealias Field = RecordLine.Field
        func member(_ field: StaticString) -> JSONValue? { value[RecordLine.name(field)] }
        func string(_ field: StaticString) throws(RecordLineError) -> String {
            guard let text = member(field)?.stringValue else {
                throw .malformed("\(field) must be a string" + (member(field) == nil ? " (it is missing)" : ""))
            }
            return text
        }
        func optionalString(_ field: StaticString, in object: JSONValue?) throws(RecordLineError) -> String? {
            switch object?[RecordLine.name(field)] {
            case nil, .null?: return nil
            case .string(let text)?: return text
            default: throw .malformed("\(field) must be a string or null")
            }
        }

        let version: Int
        switch member(Field.version) {
        case nil: throw .malformed("v (the format version) is missing")
        case let found?:
            guard let number = found.intValue, RecordLine.readableVersions.contains(number) else {
                throw .unsupportedVersion(found.serialized())
            }
            version = number
        }

        switch member(Field.sequence) {
        case nil: sequence = nil
        case let seq?:
            guard let number = seq.intValue, number >= 1 else { throw .malformed("seq must be a whole number of 1 or more") }
            sequence = number
        }
        guard let route = GatewayRoute(rawValue: try string(Field.route)) else {
            throw .malformed("route must be one of " + GatewayRoute.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self.route = route
        method = try string(Field.method)
        path = try string(Field.path)
        `protocol` = try optionalString(Field.protocol, in: value)
        headers = try Self.headers(member(Field.headers), field: "headers")

        // Version 1 has no `json`: a member of that name is one this reader does not know, and ignores.
        if version >= 2, let json {
            guard member(Field.body) == nil, member(Field.bodyBase64) == nil else {
                throw .malformed("a line holds one of json, body and body_base64, not two")
            }
            body = json
        } else if let text = member(Field.body)?.stringValue {
            body = Array(text.utf8)
        } else if let encodedValue = member(Field.bodyBase64) {
            guard let encoded = encodedValue.stringValue, let bytes = Base64.standard.decode(encoded) else {
                throw .malformed("body_base64 must be a base64 string (RFC 4648 §4)")
            }
            body = bytes
        } else if member(Field.body) != nil {
            throw .malformed("body must be a string")
        } else {
            body = []
        }

        let response = member(Field.response)
        switch response {
        case nil: status = nil
        case .object?:
            switch response?[RecordLine.name(Field.status)] {
            case nil: status = nil
            case let found?:
                guard let number = found.intValue else { throw .malformed("response.status must be a whole number") }
                status = number
            }
        default: throw .malformed("response must be an object")
        }
        reason = try optionalString(Field.reason, in: response)
        detail = try optionalString(Field.detail, in: response)
        if let answered = status, HTTPResponse.asksToWait(answered),
           let responseHeaders = try? Self.headers(response?[RecordLine.name(Field.headers)], field: "response.headers") {
            retryAfterSeconds = HTTPResponse.retryAfterSeconds(status: answered, value: responseHeaders.first { $0.name == "retry-after" }?.value)
        } else {
            retryAfterSeconds = nil
        }
        arrivalNanos = member(Field.arrivalNanos)?.doubleValue.flatMap { $0 >= 0 ? UInt64($0) : nil }
        answeredNanos = member(Field.answeredNanos)?.doubleValue.flatMap { $0 >= 0 ? UInt64($0) : nil }
        fault = try optionalString(Field.fault, in: value)
        rule = try optionalString(Field.rule, in: value)

        switch member(Field.verdict) {
        case nil, .null?: verdict = nil
        case .object(let object)?: verdict = RecordedVerdict(decoding: object)
        default: throw .malformed("verdict must be an object")
        }
    }

    /// `[[name, value], …]`, both strings; absent is none.
    private static func headers(_ value: JSONValue?, field: String) throws(RecordLineError) -> [(name: String, value: String)] {
        guard let value else { return [] }
        let problem = RecordLineError.malformed("\(field) must be an array of [name, value] pairs")
        guard let pairs = value.arrayValue else { throw problem }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(pairs.count)
        for pair in pairs {
            guard let items = pair.arrayValue, items.count == 2,
                  let name = items[0].stringValue, let headerValue = items[1].stringValue else { throw problem }
            headers.append((name, headerValue))
        }
        return headers
    }
}
