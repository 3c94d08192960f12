// HdrHistogram's V2 encoding (AbstractHistogram.encodeIntoByteBuffer and its compressed form),
// so a histogram recorded on one machine can be added, exactly, to those of others, and read by
// HdrHistogram's own tools (Java's HistogramLogProcessor, PyPI's hdrhistogram).
//
// Why the counts array is the payload as it is: HdrHistogram with lowestDiscernibleValue 1,
// highestTrackableValue 3,600,000,000,000 and 3 significant digits has unit magnitude 0,
// sub-bucket count 2^ceil(log2(2 * 10^3)) = 2048, 32 buckets (2048 << 31 > 1 h > 2048 << 30) and
// (32 + 1) * 1024 = 33,792 counters, and indexes a value exactly as `HDRHistogram.index(of:)`
// does; the tests check the bucket count, the array length and the index of values across the range.
import CZlib

/// Why a blob is not a V2 encoding of a pushproof histogram.
public enum HistogramDecodingError: Error, Equatable, CustomStringConvertible {
    /// The first four bytes are not the cookie expected (0x1c849313, or 0x1c849314 compressed).
    case wrongCookie(found: UInt32, expected: UInt32)
    /// The blob ends before its header, its declared payload or a count is complete.
    case truncated(String)
    /// The header's settings are not pushproof's (one histogram shape: 1 ns .. 1 h, 3 digits).
    case differentSettings(setting: String, found: String, expected: String)
    /// The counts run past the 33,792 counters of the histogram.
    case countPastArray(index: Int)
    /// The zlib stream does not inflate (zlib's error code), or inflates to more than a V2 blob can hold.
    case compression(String)
    /// Bytes after the declared payload.
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .wrongCookie(let found, let expected):
            return "not an HdrHistogram V2 blob: cookie 0x\(hex(found)), expected 0x\(hex(expected))"
        case .truncated(let what):
            return "truncated HdrHistogram blob: \(what)"
        case .differentSettings(let setting, let found, let expected):
            return "HdrHistogram blob has \(setting) \(found), pushproof's histograms have \(expected): they cannot be added exactly"
        case .countPastArray(let index):
            return "HdrHistogram blob counts past the histogram's \(HDRHistogram.countsLength) counters (at index \(index))"
        case .compression(let what):
            return "HdrHistogram compressed blob: \(what)"
        case .trailingBytes(let count):
            return "HdrHistogram blob has \(count) bytes after its payload"
        }
    }

    private func hex(_ value: UInt32) -> String { String(value, radix: 16) }
}

extension HDRHistogram {
    /// HdrHistogram's V2 cookie (0x1c849303 with the word-size nibble 0x10 set, as its writers put it).
    public static let v2Cookie: UInt32 = 0x1c84_9313
    /// The compressed V2 cookie.
    public static let compressedV2Cookie: UInt32 = 0x1c84_9314
    /// The header: cookie, payload length, normalizing index offset, significant digits (int32
    /// each), lowest discernible and highest trackable values (int64), integer-to-double ratio (float64).
    static let v2HeaderSize = 40
    static let lowestDiscernibleValue: UInt64 = 1
    static let significantDigits: UInt32 = 3
    /// The most bytes a V2 blob of this histogram can take: every counter at 9 bytes.
    static let largestV2Size = v2HeaderSize + 9 * countsLength

    /// The V2 encoding, uncompressed (big-endian header, then ZigZag LEB128 counts from index 0
    /// to that of the largest value, a run of k > 1 empty counters written as -k, a single one as
    /// 0, as Java's writer does). Exact min, max and ``clampedCount`` are not part of the format.
    public func encodedV2() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        append(Self.v2Cookie, to: &bytes)
        append(UInt32(0), to: &bytes)  // the payload length, set below
        append(UInt32(0), to: &bytes)  // normalizing index offset: pushproof never shifts its counts
        append(Self.significantDigits, to: &bytes)
        append(Self.lowestDiscernibleValue, to: &bytes)
        append(Self.highestTrackableValue, to: &bytes)
        append(Double(1).bitPattern, to: &bytes)
        let limit = Self.index(of: maximum) + 1
        var index = 0
        while index < limit {
            let count = counts[index]
            index += 1
            if count == 0 {
                var zeros: Int64 = 1
                while index < limit, counts[index] == 0 { zeros += 1; index += 1 }
                appendZigZag(zeros > 1 ? -zeros : 0, to: &bytes)
            } else {
                // 2^63 samples would take centuries at any rate pushproof measures.
                precondition(count <= UInt64(Int64.max), "HdrHistogram counts are signed 64-bit: \(count) does not fit")
                appendZigZag(Int64(count), to: &bytes)
            }
        }
        let payloadLength = UInt32(bytes.count - Self.v2HeaderSize)
        withUnsafeBytes(of: payloadLength.bigEndian) { bytes.replaceSubrange(4..<8, with: $0) }
        return bytes
    }

    /// The compressed V2 encoding: cookie 0x1c849314, the compressed length, then a zlib stream
    /// (RFC 1950, best compression as Java's log writer asks) of ``encodedV2()``. Its base64 begins `HISTF`.
    public func encodedCompressedV2() -> [UInt8] {
        let plain = encodedV2()
        var compressedLength = compressBound(uLong(plain.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedLength))
        let status = compress2(&compressed, &compressedLength, plain, uLong(plain.count), Z_BEST_COMPRESSION)
        // Only a too-small buffer or no memory make compress2 fail; compressBound rules out the first.
        precondition(status == Z_OK, "zlib compress2 failed (\(status))")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + Int(compressedLength))
        append(Self.compressedV2Cookie, to: &bytes)
        append(UInt32(compressedLength), to: &bytes)
        bytes.append(contentsOf: compressed[0..<Int(compressedLength)])
        return bytes
    }

    /// Decodes an uncompressed V2 blob, refusing one not of pushproof's settings (lowest 1, highest
    /// 1 h in nanoseconds, 3 digits, no index offset, ratio 1). The decoded minimum and maximum are
    /// the bottom and top of their counters' ranges (the top capped at one hour); ``clampedCount`` is 0.
    public init(decodingV2 bytes: [UInt8]) throws(HistogramDecodingError) {
        var reader = BigEndianReader(bytes: bytes)
        guard bytes.count >= Self.v2HeaderSize else {
            if bytes.count >= 4, let cookie = reader.uint32(), cookie != Self.v2Cookie {
                throw .wrongCookie(found: cookie, expected: Self.v2Cookie)
            }
            throw .truncated("\(bytes.count) bytes, shorter than the \(Self.v2HeaderSize)-byte header")
        }
        let cookie = reader.uint32()!
        guard cookie == Self.v2Cookie else { throw .wrongCookie(found: cookie, expected: Self.v2Cookie) }
        let payloadLength = Int(reader.uint32()!)
        let indexOffset = reader.uint32()!
        let digits = reader.uint32()!
        let lowest = reader.uint64()!
        let highest = reader.uint64()!
        let ratio = Double(bitPattern: reader.uint64()!)
        try Self.require("significant digits", UInt64(digits), Self.significantDigits.description)
        try Self.require("lowest discernible value", lowest, Self.lowestDiscernibleValue.description)
        try Self.require("highest trackable value", highest, Self.highestTrackableValue.description)
        try Self.require("normalizing index offset", UInt64(indexOffset), "0")
        guard ratio == 1 else { throw .differentSettings(setting: "integer-to-double ratio", found: "\(ratio)", expected: "1.0") }
        let end = Self.v2HeaderSize + payloadLength
        guard end <= bytes.count else {
            throw .truncated("payload of \(payloadLength) bytes declared, \(bytes.count - Self.v2HeaderSize) present")
        }
        guard end == bytes.count else { throw .trailingBytes(bytes.count - end) }

        self.init()
        var index = 0
        var lastNonZero = -1
        while reader.position < end {
            guard let value = reader.zigZag(end: end) else {
                throw .truncated("a count at byte \(reader.position) runs past the payload's end")
            }
            if value < 0 {
                guard value.magnitude <= UInt64(Self.countsLength - index) else { throw .countPastArray(index: Self.countsLength) }
                index += Int(value.magnitude)
                continue
            }
            guard index < Self.countsLength else { throw .countPastArray(index: index) }
            if value > 0 {
                counts[index] = UInt64(value)
                totalCount &+= UInt64(value)
                if minimum == .max { minimum = Self.valueFromIndex(index) }
                lastNonZero = index
            }
            index += 1
        }
        if lastNonZero >= 0 {
            let low = Self.valueFromIndex(lastNonZero)
            maximum = Swift.min(low + Self.sizeOfEquivalentRange(low) - 1, Self.highestTrackableValue)
        }
    }

    /// Decodes a compressed V2 blob (``encodedCompressedV2()``, or any HdrHistogram writer's of the same settings).
    public init(decodingCompressedV2 bytes: [UInt8]) throws(HistogramDecodingError) {
        var reader = BigEndianReader(bytes: bytes)
        guard let cookie = reader.uint32() else { throw .truncated("\(bytes.count) bytes, shorter than the cookie") }
        guard cookie == Self.compressedV2Cookie else { throw .wrongCookie(found: cookie, expected: Self.compressedV2Cookie) }
        guard let length = reader.uint32() else { throw .truncated("no compressed length") }
        guard 8 + Int(length) <= bytes.count else {
            throw .truncated("compressed length \(length) declared, \(bytes.count - 8) bytes present")
        }
        guard 8 + Int(length) == bytes.count else { throw .trailingBytes(bytes.count - 8 - Int(length)) }
        var plain = [UInt8](repeating: 0, count: Self.largestV2Size)
        var plainLength = uLong(plain.count)
        let status = bytes.withUnsafeBufferPointer { source in
            uncompress(&plain, &plainLength, source.baseAddress! + 8, uLong(length))
        }
        switch status {
        case Z_OK: break
        case Z_BUF_ERROR where length > 0 && plainLength == uLong(plain.count):
            throw .compression("inflates to more than the \(Self.largestV2Size) bytes a V2 blob can take")
        case Z_BUF_ERROR: throw .truncated("the zlib stream ends early")
        default: throw .compression("zlib error \(status)")
        }
        try self.init(decodingV2: Array(plain[0..<Int(plainLength)]))
    }

    /// The top of the counter's range that `value` falls in (HdrHistogram's `highestEquivalentValue`).
    public static func highestEquivalentValue(_ value: UInt64) -> UInt64 {
        let low = valueFromIndex(index(of: value))
        return low + sizeOfEquivalentRange(low) - 1
    }

    private static func require(_ setting: String, _ found: UInt64, _ expected: String) throws(HistogramDecodingError) {
        guard found.description == expected else {
            throw .differentSettings(setting: setting, found: found.description, expected: expected)
        }
    }
}

private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
}

/// ZigZag, then LEB128 with at most 9 bytes: eight of 7 bits, the ninth carrying the last 8 whole.
private func appendZigZag(_ value: Int64, to bytes: inout [UInt8]) {
    var rest = UInt64(bitPattern: (value << 1) ^ (value >> 63))
    for _ in 0..<8 {
        if rest < 0x80 { bytes.append(UInt8(rest)); return }
        bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
        rest >>= 7
    }
    bytes.append(UInt8(truncatingIfNeeded: rest))
}

private struct BigEndianReader {
    let bytes: [UInt8]
    var position = 0

    mutating func uint32() -> UInt32? { integer(UInt32.self) }
    mutating func uint64() -> UInt64? { integer(UInt64.self) }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard position + size <= bytes.count else { return nil }
        var value: T = 0
        for byte in bytes[position..<position + size] { value = value << 8 | T(byte) }
        position += size
        return value
    }

    /// One ZigZag LEB128 value ending before `end`, or nil if it would run past it.
    mutating func zigZag(end: Int) -> Int64? {
        var raw: UInt64 = 0
        for shift in stride(from: 0, to: 56, by: 7) {
            guard position < end else { return nil }
            let byte = bytes[position]
            position += 1
            raw |= UInt64(byte & 0x7F) << UInt64(shift)
            if byte & 0x80 == 0 { return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1))) }
        }
        guard position < end else { return nil }
        raw |= UInt64(bytes[position]) << 56
        position += 1
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }
}
