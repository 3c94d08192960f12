/// `%XX` escapes (RFC 3986 §2.1), the one decoder: query strings and forms (where `+` is a
/// space too, `application/x-www-form-urlencoded`) and URI fragments.
public enum PercentEncoding {
    /// The bytes `text` stands for. A `%` not followed by two hex digits is kept as it is when
    /// `lenient` (as browsers and form parsers do), else the text cannot be decoded (nil).
    public static func decode(_ text: some Collection<UInt8>, plusIsSpace: Bool = false, lenient: Bool = false) -> [UInt8]? {
        let bytes = Array(text)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                if index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                    out.append(high << 4 | low)
                    index += 3
                    continue
                }
                guard lenient else { return nil }
                out.append(byte)
            } else {
                out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
            index += 1
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
