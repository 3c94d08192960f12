#if canImport(Glibc)
import Glibc
#endif

/// Why a document is not JSON, and where (byte offset from the start).
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser over bytes: no comments, no trailing commas, no NaN, UTF-8
/// validated, a nesting limit so hostile input cannot exhaust the stack.
public enum JSONParser {
    public enum DuplicateKeys: Sendable {
        case lastWins
        case reject
    }

    public struct Options: Sendable {
        public var maxDepth: Int
        public var duplicateKeys: DuplicateKeys
        public init(maxDepth: Int = 256, duplicateKeys: DuplicateKeys = .lastWins) {
            self.maxDepth = maxDepth
            self.duplicateKeys = duplicateKeys
        }
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer, options: Options = .init()) throws(JSONError) -> JSONValue {
        var reader = Reader(bytes: bytes.bindMemory(to: UInt8.self), options: options)
        reader.skipWhitespace()
        let value = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
        return value
    }

    public static func parse(_ bytes: [UInt8], options: Options = .init()) throws(JSONError) -> JSONValue {
        let result: Result<JSONValue, JSONError> = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) -> JSONValue in try parse(raw, options: options) }
        }
        return try result.get()
    }

    /// `parse`, adding the number of key comparisons it made to `keyComparisons` (a test hook:
    /// the bound that a many-key object costs linear time, without a timing threshold).
    static func parse(_ bytes: [UInt8], options: Options = .init(), keyComparisons: inout Int) throws(JSONError) -> JSONValue {
        let result: Result<(JSONValue, Int), JSONError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> (JSONValue, Int) in
                var reader = Reader(bytes: buffer, options: options)
                reader.skipWhitespace()
                let value = try reader.parseValue(depth: 0)
                reader.skipWhitespace()
                guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
                return (value, reader.keyComparisons)
            }
        }
        let (value, comparisons) = try result.get()
        keyComparisons += comparisons
        return value
    }

    public static func parse(_ text: String, options: Options = .init()) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8), options: options)
    }

    /// What `member(_:ofTopLevelObjectIn:)` found.
    public enum TopLevelMember: Sendable, Equatable {
        /// The document is valid JSON but not an object (parse it to see what it is).
        case notAnObject
        /// An object without that key.
        case absent
        /// The key's value (the last one when the key repeats, as `.lastWins` parsing keeps).
        case found(JSONValue)
    }

    /// Validates the whole document exactly as `parse` does (same errors, same offsets) but
    /// builds only the value of one top-level key: the APNs gateway needs just `aps`, and
    /// building the whole tree was ~10% of the server's time per request (perf, poolse ring
    /// payload: every string value allocated). `key` is compared byte for byte when ASCII.
    public static func member(_ key: String, ofTopLevelObjectIn bytes: [UInt8], options: Options = .init()) throws(JSONError) -> TopLevelMember {
        if options.duplicateKeys == .reject {
            // Rejection needs every key: no shortcut.
            guard case .object(let object) = try parse(bytes, options: options) else { return .notAnObject }
            return object[key].map { .found($0) } ?? .absent
        }
        // The key's bytes once for the whole scan, not a String-to-bytes step for every key.
        var keyText = key
        let result: Result<TopLevelMember, JSONError> = keyText.withUTF8 { keyBytes in
            let asciiKey = UTF8Check.isASCII(keyBytes) ? keyBytes : nil
            return bytes.withUnsafeBufferPointer { buffer in
                Result { () throws(JSONError) -> TopLevelMember in
                    var reader = Reader(bytes: buffer, options: options)
                    reader.skipWhitespace()
                    guard reader.position < buffer.count, buffer[reader.position] == UInt8(ascii: "{") else {
                        _ = try reader.skipValue(depth: 0)
                        reader.skipWhitespace()
                        guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
                        return .notAnObject
                    }
                    let found = try reader.scanObject(for: key, asciiBytes: asciiKey, depth: 1)
                    reader.skipWhitespace()
                    guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
                    return found.map { .found($0) } ?? .absent
                }
            }
        }
        return try result.get()
    }
}

struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    let options: JSONParser.Options
    var position = 0
    /// Key comparisons made finding repeated keys (read by the tests' hooks only).
    var keyComparisons = 0
    /// `parse(_:leavingRaw:)`: the top-level member whose value is only validated, and where
    /// that value was found (the last one when the key repeats).
    var rawKey: String?
    var rawRange: Range<Int>?

    init(bytes: UnsafeBufferPointer<UInt8>, options: JSONParser.Options) {
        self.bytes = bytes
        self.options = options
    }

    var atEnd: Bool { position >= bytes.count }

    func error(_ message: String, at offset: Int? = nil) -> JSONError {
        JSONError(offset: offset ?? position, message: message)
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard position < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character '\(printable(bytes[position]))', expected a value")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let start = position
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { throw error("invalid literal", at: start) }
        let base = literal.utf8Start
        for i in 0..<count where bytes[position + i] != base[i] {
            throw error("invalid literal", at: start)
        }
        position += count
    }

    /// After a member or element: `,` continues (false), the closing bracket ends (true).
    /// Shared by the tree-building parse and the validating skip so both report alike.
    mutating func separatorEnds(closing: UInt8, in container: String) throws(JSONError) -> Bool {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input in \(container)") }
        let c = bytes[position]
        position += 1
        if c == UInt8(ascii: ",") { return false }
        if c == closing { return true }
        throw error("expected ',' or '\(Character(Unicode.Scalar(closing)))' in \(container)", at: position - 1)
    }

    mutating func parseObject(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        position += 1  // {
        var entries: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(JSONObject(uncheckedEntries: entries))
        }
        // Push payloads have objects of ~4-16 members: one allocation instead of four or five
        // regrowths (each a malloc and a move of every entry).
        entries.reserveCapacity(8)
        // Built once the object outgrows a scan (a hostile body).
        var keyIndex: ObjectKeyIndex?
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a string key in object")
            }
            let keyOffset = position
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after object key")
            }
            position += 1
            skipWhitespace()
            if depth == 1, let rawKey, key == rawKey {
                if rawRange != nil, options.duplicateKeys == .reject { throw error("duplicate key \"\(key)\"", at: keyOffset) }
                let start = position
                try skipValue(depth: depth)
                rawRange = start..<position
                if try separatorEnds(closing: UInt8(ascii: "}"), in: "object") { return .object(JSONObject(uncheckedEntries: entries)) }
                continue
            }
            let value = try parseValue(depth: depth)
            let existing: Int?
            if keyIndex != nil {
                // String's hash agrees with its `==` (canonical equivalence), as the scan compares.
                existing = keyIndex!.insert(entries.count, hash: key.hashValue) { other in
                    keyComparisons += 1
                    return entries[other].key == key
                }
            } else {
                existing = index(of: key, in: entries)
            }
            if let existing {
                if options.duplicateKeys == .reject {
                    throw error("duplicate key \"\(key)\"", at: keyOffset)
                }
                entries[existing].value = value
            } else {
                entries.append((key, value))
                if keyIndex == nil, entries.count > ObjectKeyIndex.threshold {
                    var index = ObjectKeyIndex(expectedCount: entries.count * 2)
                    // The entries are distinct keys: nothing to compare.
                    for i in entries.indices { _ = index.insert(i, hash: entries[i].key.hashValue) { _ in false } }
                    keyIndex = index
                }
            }
            if try separatorEnds(closing: UInt8(ascii: "}"), in: "object") { return .object(JSONObject(uncheckedEntries: entries)) }
        }
    }

    // MARK: - Validating without building (mirrors the parse functions: same checks, same errors)

    /// Checks one value and moves past it. Literals go through their parse functions, which
    /// allocate nothing; numbers through `skipNumber` (the same checks, no value built).
    mutating func skipValue(depth: Int) throws(JSONError) {
        guard position < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): try skipObject(depth: depth + 1)
        case UInt8(ascii: "["): try skipArray(depth: depth + 1)
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try skipNumber()
        default: _ = try parseValue(depth: depth)
        }
    }

    /// `parseObject` for the top level, building only the value of `wanted`.
    /// `asciiBytes`: `wanted`'s bytes when it is ASCII (compared byte for byte), else nil.
    mutating func scanObject(for wanted: String, asciiBytes: UnsafeBufferPointer<UInt8>?, depth: Int) throws(JSONError) -> JSONValue? {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        position += 1  // {
        var found: JSONValue?
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return nil
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a string key in object")
            }
            let isWanted = try keyEquals(wanted, asciiBytes: asciiBytes)
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after object key")
            }
            position += 1
            skipWhitespace()
            if isWanted { found = try parseValue(depth: depth) } else { try skipValue(depth: depth) }
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input in object") }
            let c = bytes[position]
            position += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { return found }
            throw error("expected ',' or '}' in object", at: position - 1)
        }
    }

    /// Reads a key (validated as `parseString` would) and says whether it is `wanted`.
    /// The key is read once (`skipString`'s scan, which also says it holds no escape); a second
    /// pass looking for a backslash was ~1% of the server's time (perf, ~14 keys a push).
    mutating func keyEquals(_ wanted: String, asciiBytes: UnsafeBufferPointer<UInt8>?) throws(JSONError) -> Bool {
        let start = position
        if let plain = try scanUnescapedString() {
            if !plain.isASCII, String(validating: plain.content, as: UTF8.self) == nil {
                throw error("invalid UTF-8 in string", at: start)
            }
            if let asciiBytes { return bytesEqual(plain.content, asciiBytes) }
        }
        // Escapes or a non-ASCII wanted key: decode and compare as strings.
        position = start
        let key = try parseString()
        return key == wanted
    }

    mutating func skipObject(depth: Int) throws(JSONError) {
        if options.duplicateKeys == .reject {
            _ = try parseObject(depth: depth)
            return
        }
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        position += 1  // {
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a string key in object")
            }
            try skipString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after object key")
            }
            position += 1
            skipWhitespace()
            try skipValue(depth: depth)
            if try separatorEnds(closing: UInt8(ascii: "}"), in: "object") { return }
        }
    }

    mutating func skipArray(depth: Int) throws(JSONError) {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        position += 1  // [
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            try skipValue(depth: depth)
            if try separatorEnds(closing: UInt8(ascii: "]"), in: "array") { return }
        }
    }

    /// `parseString`'s fast path without the String; anything with an escape goes through
    /// `parseString` itself so every escape rule stays in one place.
    mutating func skipString() throws(JSONError) {
        let start = position
        if let plain = try scanUnescapedString() {
            if !plain.isASCII, String(validating: plain.content, as: UTF8.self) == nil {
                throw error("invalid UTF-8 in string", at: start)
            }
            return
        }
        position = start
        _ = try parseString()
    }

    /// The fast path of `parseString` and `skipString`: from the opening quote, the content up
    /// to the closing quote when it holds no escape (position then past the quote), or nil at
    /// the first backslash (position left on it). The content is not yet checked as UTF-8:
    /// all-ASCII strings (nearly every key and most values) need no check, and a check was
    /// measured at ~40% of an APNs request's parse time when every string went through
    /// String(validating:).
    @inline(__always)
    mutating func scanUnescapedString() throws(JSONError) -> (content: UnsafeBufferPointer<UInt8>, isASCII: Bool)? {
        let start = position
        position += 1  // opening quote
        let contentStart = position
        var highBits = skipPlainStringWords()
        while position < bytes.count {
            let c = bytes[position]
            if c == UInt8(ascii: "\"") {
                let content = UnsafeBufferPointer(rebasing: bytes[contentStart..<position])
                position += 1
                return (content, highBits & 0x80 == 0)
            }
            if c == UInt8(ascii: "\\") { return nil }
            if c < 0x20 { throw error("control character in string") }
            highBits |= c
            position += 1
        }
        throw error("unterminated string", at: start)
    }

    /// Inside a string, skips eight bytes at a time while none is a quote, a backslash or a
    /// control character, and stops on the word holding the first one (at that byte); the
    /// caller's byte loop takes it from there and finishes the last word. Returns 0x80 when a
    /// skipped byte was non-ASCII. The byte loop alone was most of building a tape and ~5% of
    /// the server's time validating payloads (perf).
    @inline(__always)
    mutating func skipPlainStringWords() -> UInt8 {
        guard let base = bytes.baseAddress else { return 0 }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var high: UInt64 = 0
        while position + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self)
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
            let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            if special & highs != 0 {
                // The lowest flagged byte is the first special one (a borrow only flags bytes
                // above a true one): keep the bytes before it, and let the caller take it.
                let before = (special & highs).trailingZeroBitCount / 8
                high |= word & ((1 << (UInt64(before) * 8)) &- 1)
                position += before
                break
            }
            high |= word
            position += 8
        }
        return high & highs != 0 ? 0x80 : 0
    }

    /// The entry holding `key`. Lengths first (O(1) for native strings), and no copy of each
    /// entry: `firstIndex(where: ==)` compared every pair of keys as Strings and was the parser's
    /// largest cost after string building on a 14-key APNs payload (perf).
    /// Objects up to `ObjectKeyIndex.threshold` members only; larger ones are hashed.
    mutating func index(of key: String, in entries: [(key: String, value: JSONValue)]) -> Int? {
        let length = key.utf8.count
        let found = entries.withUnsafeBufferPointer { buffer -> (index: Int?, compared: Int) in
            var compared = 0
            for i in buffer.indices where buffer[i].key.utf8.count == length {
                compared += 1
                if buffer[i].key == key { return (i, compared) }
            }
            return (nil, compared)
        }
        keyComparisons += found.compared
        return found.index
    }

    mutating func parseArray(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        position += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            if try separatorEnds(closing: UInt8(ascii: "]"), in: "array") { return .array(elements) }
        }
    }

    mutating func parseString() throws(JSONError) -> String {
        let start = position
        // Fast path: no escapes, so the bytes are the string.
        if let plain = try scanUnescapedString() {
            if plain.isASCII { return String(decoding: plain.content, as: UTF8.self) }
            guard let s = String(validating: plain.content, as: UTF8.self) else {
                throw error("invalid UTF-8 in string", at: start)
            }
            return s
        }
        // Slow path: unescape into a buffer, starting with the content before the backslash.
        var buffer = Array(bytes[(start + 1)..<position])
        while position < bytes.count {
            let c = bytes[position]
            if c == UInt8(ascii: "\"") {
                position += 1
                guard let s = String(validating: buffer, as: UTF8.self) else {
                    throw error("invalid UTF-8 in string", at: start)
                }
                return s
            }
            if c < 0x20 { throw error("control character in string") }
            if c != UInt8(ascii: "\\") {
                buffer.append(c)
                position += 1
                continue
            }
            position += 1
            guard position < bytes.count else { break }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""): buffer.append(0x22)
            case UInt8(ascii: "\\"): buffer.append(0x5C)
            case UInt8(ascii: "/"): buffer.append(0x2F)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    // A high surrogate must be followed by \u and a low surrogate.
                    guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                          bytes[position + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired surrogate in string")
                    }
                    position += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in string") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("unpaired surrogate in string")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                buffer.append(contentsOf: UTF8.encode(unicode)!)
            default:
                throw error("invalid escape '\\\(printable(escape))'", at: position - 2)
            }
        }
        throw error("unterminated string", at: start)
    }

    mutating func parseHex4() throws(JSONError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[position]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    mutating func parseNumber() throws(JSONError) -> Double {
        let start = position
        let isSimpleInteger = try scanNumber()
        let length = position - start
        // Integers of up to 15 digits are exact in a Double: accumulate them directly.
        if isSimpleInteger && length <= 16 {
            var negative = false
            var i = start
            if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 }
            var value: Int64 = 0
            while i < position { value = value * 10 + Int64(bytes[i] - UInt8(ascii: "0")); i += 1 }
            return Double(negative ? -value : value)
        }
        // strtod needs a NUL-terminated copy; the grammar above has already been checked.
        var text = [CChar](repeating: 0, count: length + 1)
        for i in 0..<length { text[i] = CChar(bitPattern: bytes[start + i]) }
        let value = strtod(text, nil)
        guard value.isFinite else { throw error("number out of range", at: start) }
        return value
    }

    /// `parseNumber`'s checks without its value, for the validating skip: only a number whose
    /// value could be out of range (a fraction, an exponent, over 16 characters) is parsed.
    mutating func skipNumber() throws(JSONError) {
        let start = position
        if try scanNumber(), position - start <= 16 { return }
        position = start
        _ = try parseNumber()
    }

    /// Moves past a number as RFC 8259 spells it, with `parseNumber`'s errors; whether it is
    /// an integer (no fraction, no exponent).
    @inline(__always)
    mutating func scanNumber() throws(JSONError) -> Bool {
        let start = position
        var isSimpleInteger = true
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid number", at: start) }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) { throw error("leading zero in number", at: start) }
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isSimpleInteger = false
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid fraction in number", at: start) }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isSimpleInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid exponent in number", at: start) }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        return isSimpleInteger
    }

    func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    func printable(_ c: UInt8) -> String {
        (0x20..<0x7F).contains(c) ? String(UnicodeScalar(c)) : "\\x" + String(c, radix: 16)
    }
}
