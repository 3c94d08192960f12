/// Where parts of a document are in its bytes, for a reader that wants a value exactly as it
/// was written (a record line's `json`: the payload as received, duplicate keys, number
/// spellings and key order included), which a tree cannot give back. Every function validates
/// the whole document exactly as `parse` does (same errors, same offsets); ranges are offsets
/// into the bytes given.
extension JSONParser {
    /// A document parsed except for one top-level member (`parse(_:leavingRaw:options:)`).
    public struct PartlyParsed: Sendable {
        /// The document's tree, without the member left raw.
        public var value: JSONValue
        /// The bytes of that member's value (no whitespace around it); nil when the document is
        /// not an object or has no such member. When the key repeats, the last one, as
        /// `.lastWins` parsing keeps (`.reject` throws, as `parse` does).
        public var raw: Range<Int>?
    }

    /// `parse`, except that the value of the top-level member `key` is validated but not built:
    /// only its place in `bytes` is kept.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, leavingRaw key: String,
                             options: Options = .init()) throws(JSONError) -> PartlyParsed {
        var reader = Reader(bytes: bytes, options: options)
        reader.rawKey = key
        reader.skipWhitespace()
        let value = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
        return PartlyParsed(value: value, raw: reader.rawRange)
    }

    public static func parse(_ bytes: [UInt8], leavingRaw key: String, options: Options = .init()) throws(JSONError) -> PartlyParsed {
        let result: Result<PartlyParsed, JSONError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> PartlyParsed in try parse(buffer, leavingRaw: key, options: options) }
        }
        return try result.get()
    }

    /// The bytes of each element of the array the document is (no whitespace around them), or
    /// nil when it is valid JSON but not an array. Nothing is built.
    public static func elementRanges(ofArrayIn bytes: UnsafeBufferPointer<UInt8>,
                                     options: Options = .init()) throws(JSONError) -> [Range<Int>]? {
        var reader = Reader(bytes: bytes, options: options)
        reader.skipWhitespace()
        guard reader.position < bytes.count, bytes[reader.position] == UInt8(ascii: "[") else {
            try reader.skipValue(depth: 0)
            reader.skipWhitespace()
            guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
            return nil
        }
        let ranges = try reader.elementRanges(depth: 1)
        reader.skipWhitespace()
        guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
        return ranges
    }

    public static func elementRanges(ofArrayIn bytes: [UInt8], options: Options = .init()) throws(JSONError) -> [Range<Int>]? {
        let result: Result<[Range<Int>]?, JSONError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> [Range<Int>]? in try elementRanges(ofArrayIn: buffer, options: options) }
        }
        return try result.get()
    }

    /// Whether `parse(bytes, options:)` would accept the document; nothing is built.
    public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>, options: Options = .init()) -> Bool {
        var reader = Reader(bytes: bytes, options: options)
        do throws(JSONError) {
            reader.skipWhitespace()
            try reader.skipValue(depth: 0)
            reader.skipWhitespace()
            return reader.atEnd
        } catch {
            return false
        }
    }

    public static func isValid(_ bytes: [UInt8], options: Options = .init()) -> Bool {
        bytes.withUnsafeBufferPointer { isValid($0, options: options) }
    }
}

extension Reader {
    /// `skipArray`, noting where each element is.
    mutating func elementRanges(depth: Int) throws(JSONError) -> [Range<Int>] {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        position += 1  // [
        var ranges: [Range<Int>] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return ranges
        }
        while true {
            skipWhitespace()
            let start = position
            try skipValue(depth: depth)
            ranges.append(start..<position)
            if try separatorEnds(closing: UInt8(ascii: "]"), in: "array") { return ranges }
        }
    }
}
