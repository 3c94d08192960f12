/// An append-only JSON byte builder for hot paths (record lines, push payloads): no
/// intermediate `JSONValue`, no Foundation. The caller is responsible for structure
/// (`beginObject`/`key`/`endObject`); commas are inserted automatically.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]
    /// Whether the next value at the current level needs a comma before it.
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func removeAll(keepingCapacity: Bool = true) {
        bytes.removeAll(keepingCapacity: keepingCapacity)
        needsComma = false
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":`; the next call writes the value.
    public mutating func key(_ key: String) {
        separate()
        appendEscaped(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) {
        separate()
        appendEscaped(value)
    }

    /// Bytes that are a string's UTF-8 content (escaped as needed; invalid UTF-8 is replaced).
    public mutating func string(utf8 value: [UInt8]) {
        value.withUnsafeBufferPointer { string(utf8: $0) }
    }

    /// Bytes that are a string's UTF-8 content (escaped as needed; invalid UTF-8 is replaced).
    /// Concrete, not generic: a generic byte loop called from another module is not
    /// specialised and walks the bytes through witness tables (measured: 10x slower records).
    public mutating func string(utf8 value: UnsafeBufferPointer<UInt8>) {
        separate()
        var ascii = true
        for c in value where c >= 0x80 { ascii = false; break }
        if !ascii, String(validating: value, as: UTF8.self) == nil {
            appendEscaped(String(decoding: value, as: UTF8.self))
        } else {
            appendEscaped(value)
        }
    }

    public mutating func int(_ value: Int) {
        separate()
        appendDecimal(value)
    }

    public mutating func uint(_ value: UInt64) {
        separate()
        if value <= UInt64(Int.max) { appendDecimal(Int(value)) } else { bytes.append(contentsOf: String(value).utf8) }
    }

    public mutating func double(_ value: Double) {
        separate()
        appendNumber(value)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    /// Already-serialized JSON, written as one value.
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
    }

    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let d): double(d)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for (k, v) in object.entries {
                key(k)
                self.value(v)
            }
            endObject()
        }
    }

    /// Continue an object or array whose opening and first value were written elsewhere
    /// (e.g. a record line whose sequence number is added later): the next key or value
    /// gets a leading comma.
    public mutating func continueAfterValue() {
        needsComma = true
    }

    /// A newline, for JSON Lines output; resets the comma state.
    public mutating func newline() {
        bytes.append(0x0A)
        needsComma = false
    }

    // MARK: - Encoding

    private mutating func appendDecimal(_ value: Int) {
        if value == 0 { bytes.append(UInt8(ascii: "0")); return }
        var v = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while v > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[i]) }
        }
    }

    private mutating func appendNumber(_ value: Double) {
        guard value.isFinite else {
            // JSON has no NaN or infinity.
            bytes.append(contentsOf: "null".utf8)
            return
        }
        if value.rounded(.towardZero) == value, abs(value) < 1e15 {
            appendDecimal(Int(value))
        } else {
            bytes.append(contentsOf: value.description.utf8)
        }
    }

    private mutating func appendEscaped(_ string: String) {
        var s = string
        s.withUTF8 { appendEscaped($0) }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `utf8` must be valid UTF-8 (callers check raw bytes first). Runs of bytes that need no
    /// escape are copied in one append.
    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        var i = 0
        let count = utf8.count
        while i < count {
            let c = utf8[i]
            if c >= 0x20 && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") && c != 0x7F {
                i += 1
                continue
            }
            if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(c)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            default:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          Self.hexDigits[Int(c >> 4)], Self.hexDigits[Int(c & 0xF)]])
            }
            i += 1
            runStart = i
        }
        if runStart < count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count])) }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// Compact serialization, keys in stored order.
    public func bytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }

    public func serialized() -> String {
        String(decoding: bytes(), as: UTF8.self)
    }
}
