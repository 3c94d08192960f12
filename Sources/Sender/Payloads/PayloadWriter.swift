// An append-only JSON object writer for push payloads: keys are compile-time constants
// (never escaped), values are escaped once straight into the output buffer. One buffer per
// payload, reserved up front, so building a push allocates little more than its own body.

/// How numbers and flags travel. APNs keeps JSON types ("On iOS, numbers stay numbers");
/// FCM data maps carry strings only ("numbers arrive as "1793952000000", flags as "0" / "1"").
public enum PayloadEncoding: Sendable {
    case apns
    case fcmData
}

struct PayloadWriter {
    private(set) var bytes: [UInt8]
    /// Whether the next member needs a comma before it. One flag is enough: `{` clears it
    /// and `}` (a finished value) sets it.
    private var needsComma = false

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func beginObject(_ key: StaticString) {
        writeKey(key)
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    // MARK: Members

    mutating func string(_ key: StaticString, _ value: String) {
        writeKey(key)
        writeString(value)
        needsComma = true
    }

    /// A string key only known at run time (escaped like a value).
    mutating func string(dynamicKey key: String, _ value: String) {
        separate()
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
        writeString(value)
        needsComma = true
    }

    mutating func integer(_ key: StaticString, _ value: Int64, _ encoding: PayloadEncoding = .apns) {
        writeKey(key)
        switch encoding {
        case .apns:
            writeInteger(value)
        case .fcmData:
            bytes.append(UInt8(ascii: "\""))
            writeInteger(value)
            bytes.append(UInt8(ascii: "\""))
        }
        needsComma = true
    }

    mutating func integer(_ key: StaticString, _ value: Int, _ encoding: PayloadEncoding = .apns) {
        integer(key, Int64(value), encoding)
    }

    /// A flag: `true`/`false` for APNs, `"1"`/`"0"` in an FCM data map.
    mutating func flag(_ key: StaticString, _ value: Bool, _ encoding: PayloadEncoding) {
        writeKey(key)
        switch encoding {
        case .apns: appendStatic(value ? "true" : "false")
        case .fcmData: appendStatic(value ? "\"1\"" : "\"0\"")
        }
        needsComma = true
    }

    /// Already-serialized JSON, e.g. a data map shared by several devices.
    mutating func raw(_ key: StaticString, _ json: [UInt8]) {
        writeKey(key)
        bytes.append(contentsOf: json)
        needsComma = true
    }

    // MARK: Primitives

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func writeKey(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        appendStatic(key)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func appendStatic(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Copy clean runs in one go; escape only the bytes JSON requires (RFC 8259 §7).
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                appendEscape(byte)
                runStart = index + 1
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            hex.withUTF8Buffer { digits in
                bytes.append(digits[Int(byte >> 4)])
                bytes.append(digits[Int(byte & 0x0F)])
            }
        }
    }

    private mutating func writeInteger(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Magnitude as UInt64 so Int64.min does not overflow.
        var magnitude = value.magnitude
        // 20 digits hold UInt64.max; stack scratch, written backwards then copied forwards.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { scratch in
            var start = 20
            repeat {
                start -= 1
                scratch[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[start...]))
        }
    }
}
