/// Base64 (RFC 4648), the one codec: `Base64.standard` (§4, `+/`, padded; record lines'
/// `body_base64`) and `Base64.url` (§5, `-_`, unpadded as JWS wants, RFC 7515 §2).
///
/// Kept in Swift rather than on OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock: those know only the
/// standard alphabet (base64url would cost a translating pass), always pad, and EVP_DecodeBlock
/// accepts surrounding whitespace and non-zero unused bits that JWS decoding must refuse. On the
/// record path they are no faster: encoding a 200-byte body, ~200 ns either way; a 4 KiB body,
/// 2.6-3.6 µs here against 3.2-3.5 µs for EVP_EncodeBlock plus the String (`swiftc -O`, 2 cores,
/// 200,000 rounds, 2026-12-01).
public struct Base64: Sendable {
    private let alphabet: [UInt8]
    /// 0...63 for alphabet bytes, 0xFF for anything else (including the other alphabet's two and '=').
    private let decodeTable: [UInt8]
    private let pads: Bool

    private init(_ alphabet: String, pads: Bool) {
        self.alphabet = Array(alphabet.utf8)
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in self.alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        decodeTable = table
        self.pads = pads
    }

    /// RFC 4648 §4: `+` and `/`, padded with `=` to a multiple of four.
    public static let standard = Base64("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", pads: true)
    /// RFC 4648 §5, the URL- and filename-safe alphabet, without padding (RFC 7515 §2:
    /// "Base64url Encoding ... with all trailing '=' characters omitted").
    public static let url = Base64("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", pads: false)

    /// Encodes, padded or not as the alphabet's RFC says.
    public func encode(_ bytes: some Collection<UInt8>) -> String {
        if let encoded = bytes.withContiguousStorageIfAvailable({ encode(buffer: $0) }) { return encoded }
        return Array(bytes).withUnsafeBufferPointer { encode(buffer: $0) }
    }

    private func encode(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        let outputCount = (input.count / 3) * 4 + (pads ? [0, 4, 4] : [0, 2, 3])[input.count % 3]
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
                while write < outputCount {
                    output[write] = UInt8(ascii: "=")
                    write += 1
                }
                return write
            }
        }
    }

    /// Decodes text in this alphabet; `nil` when it is not valid.
    ///
    /// Accepts text with or without the trailing '=' padding (JWS omits it; other producers keep
    /// it). Rejects characters outside the alphabet (for base64url the '+' and '/' of plain
    /// base64; whitespace always), misplaced padding, an impossible length (one character left over),
    /// and non-zero unused bits in the last character, so that each byte string has exactly one
    /// accepted encoding (RFC 4648 §3.5 allows a decoder to reject such text).
    public func decode(_ text: some StringProtocol) -> [UInt8]? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return decoded }
        return Array(text.utf8).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    /// Decodes ASCII bytes; same rules as `decode(_:)` for text.
    public func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        if let decoded = bytes.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return decoded }
        return Array(bytes).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    /// Decodes bytes in place (no copy into an array first), as `decode(bytes:)` does.
    public func decode(buffer rawInput: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
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

/// Base64url for JWS (RFC 7515 §2): ``Base64/url``.
public enum Base64URL {
    public static func encode(_ bytes: some Collection<UInt8>) -> String { Base64.url.encode(bytes) }
    public static func decode(_ text: some StringProtocol) -> [UInt8]? { Base64.url.decode(text) }
    public static func decode(bytes: some Collection<UInt8>) -> [UInt8]? { Base64.url.decode(bytes: bytes) }
    public static func decode(buffer: UnsafeBufferPointer<UInt8>) -> [UInt8]? { Base64.url.decode(buffer: buffer) }
}
