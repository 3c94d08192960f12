/// The URL- and filename-safe base64 alphabet of RFC 4648 §5, as JWS uses it (RFC 7515 §2:
/// "Base64url Encoding ... with all trailing '=' characters omitted").
public enum Base64URL {
    private static let alphabet = Base64Alphabet(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8))

    /// Encodes without padding (RFC 7515 §2).
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        alphabet.encode(bytes, padded: false)
    }

    /// Decodes base64url text; `nil` when it is not valid.
    ///
    /// Accepts text with or without the trailing '=' padding (JWS omits it; other producers keep
    /// it). Rejects characters outside the base64url alphabet (including the '+' and '/' of plain
    /// base64 and whitespace), misplaced padding, an impossible length (one character left over),
    /// and non-zero unused bits in the last character, so that each byte string has exactly one
    /// accepted encoding (RFC 4648 §3.5 allows a decoder to reject such text).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        alphabet.decode(text)
    }

    /// Decodes base64url given as ASCII bytes; same rules as `decode(_:)` for text.
    public static func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        alphabet.decode(bytes: bytes)
    }

    static func decode(buffer: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        alphabet.decode(buffer: buffer)
    }
}

/// The base64 alphabet of RFC 4648 §4 ('+' and '/'), padded with '=': what the record line's
/// `body_base64` holds. Same codec as `Base64URL`, the other alphabet; the same strict decoding.
public enum Base64 {
    private static let alphabet = Base64Alphabet(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8))

    /// Encodes with '=' padding to a multiple of four characters (RFC 4648 §4).
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        alphabet.encode(bytes, padded: true)
    }

    /// Decodes base64 text, padded or not; `nil` when it is not valid (the rules of
    /// `Base64URL.decode(_:)`, with '+' and '/' in place of '-' and '_').
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        alphabet.decode(text)
    }
}

/// One base64 codec over a 64-character alphabet: both RFC 4648 alphabets share it.
struct Base64Alphabet: Sendable {
    private let alphabet: [UInt8]
    /// 0...63 for alphabet bytes, 0xFF for anything else (including '=').
    private let decodeTable: [UInt8]

    init(_ alphabet: [UInt8]) {
        precondition(alphabet.count == 64)
        self.alphabet = alphabet
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        decodeTable = table
    }

    func encode(_ bytes: some Collection<UInt8>, padded: Bool) -> String {
        if let encoded = bytes.withContiguousStorageIfAvailable({ encode(buffer: $0, padded: padded) }) { return encoded }
        return Array(bytes).withUnsafeBufferPointer { encode(buffer: $0, padded: padded) }
    }

    private func encode(buffer input: UnsafeBufferPointer<UInt8>, padded: Bool) -> String {
        let tail = input.count % 3
        let outputCount = (input.count / 3) * 4 + (padded ? (tail == 0 ? 0 : 4) : [0, 2, 3][tail])
        return alphabet.withUnsafeBufferPointer { table in
            String(unsafeUninitializedCapacity: outputCount) { output in
                var read = 0, write = 0
                while read + 3 <= input.count {
                    let chunk = UInt32(input[read]) << 16 | UInt32(input[read + 1]) << 8 | UInt32(input[read + 2])
                    output[write] = table[Int(chunk >> 18 & 63)]
                    output[write + 1] = table[Int(chunk >> 12 & 63)]
                    output[write + 2] = table[Int(chunk >> 6 & 63)]
                    output[write + 3] = table[Int(chunk & 63)]
                    read += 3; write += 4
                }
                switch input.count - read {
                case 1:
                    let chunk = UInt32(input[read]) << 16
                    output[write] = table[Int(chunk >> 18 & 63)]
                    output[write + 1] = table[Int(chunk >> 12 & 63)]
                    write += 2
                case 2:
                    let chunk = UInt32(input[read]) << 16 | UInt32(input[read + 1]) << 8
                    output[write] = table[Int(chunk >> 18 & 63)]
                    output[write + 1] = table[Int(chunk >> 12 & 63)]
                    output[write + 2] = table[Int(chunk >> 6 & 63)]
                    write += 3
                default:
                    break
                }
                if padded {
                    while write % 4 != 0 { output[write] = UInt8(ascii: "="); write += 1 }
                }
                return write
            }
        }
    }

    func decode(_ text: some StringProtocol) -> [UInt8]? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return decoded }
        return Array(text.utf8).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        if let decoded = bytes.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return decoded }
        return Array(bytes).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    func decode(buffer rawInput: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var input = rawInput
        // Strip padding only when it brings the length to a multiple of four.
        if input.count % 4 == 0, input.count > 0, input[input.count - 1] == UInt8(ascii: "=") {
            let padding = input[input.count - 2] == UInt8(ascii: "=") ? 2 : 1
            input = UnsafeBufferPointer(rebasing: input[0 ..< input.count - padding])
        }
        let remainder = input.count % 4
        if remainder == 1 { return nil }
        let outputCount = (input.count / 4) * 3 + [0, 0, 1, 2][remainder]
        return decodeTable.withUnsafeBufferPointer { table -> [UInt8]? in
            var failed = false
            let output = [UInt8](unsafeUninitializedCapacity: outputCount) { output, initialized in
                var read = 0, write = 0
                while read + 4 <= input.count {
                    let a = table[Int(input[read])], b = table[Int(input[read + 1])]
                    let c = table[Int(input[read + 2])], d = table[Int(input[read + 3])]
                    if (a | b | c | d) & 0xC0 != 0 { failed = true; break }
                    let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[write] = UInt8(truncatingIfNeeded: chunk >> 16)
                    output[write + 1] = UInt8(truncatingIfNeeded: chunk >> 8)
                    output[write + 2] = UInt8(truncatingIfNeeded: chunk)
                    read += 4; write += 3
                }
                if !failed && remainder == 2 {
                    let a = table[Int(input[read])], b = table[Int(input[read + 1])]
                    if (a | b) & 0xC0 != 0 || b & 0x0F != 0 {
                        failed = true
                    } else {
                        output[write] = a << 2 | b >> 4
                        write += 1
                    }
                } else if !failed && remainder == 3 {
                    let a = table[Int(input[read])], b = table[Int(input[read + 1])], c = table[Int(input[read + 2])]
                    if (a | b | c) & 0xC0 != 0 || c & 0x03 != 0 {
                        failed = true
                    } else {
                        output[write] = a << 2 | b >> 4
                        output[write + 1] = b << 4 | c >> 2
                        write += 2
                    }
                }
                initialized = failed ? 0 : write
            }
            return failed ? nil : output
        }
    }
}
