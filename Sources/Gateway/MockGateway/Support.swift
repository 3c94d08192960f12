// Small building blocks the gateway's request path shares: the clock, a lock-free seedable
// random source, message ids, hex and base64url helpers. No Foundation here: everything runs
// once per request.
#if canImport(Glibc)
import Hashing
import Clocks
import Glibc
#endif
import JSON
import Synchronization

/// A seedable random source shared by all event loops without a lock.
final class CounterRandomSource: Sendable {
    private let seed: UInt64
    private let counter = Atomic<UInt64>(0)

    init(seed: UInt64) { self.seed = seed }

    func next() -> UInt64 {
        // A counter through SplitMix64's mixer: a random stream any number of threads draw from
        // with one atomic increment; the same seed replays the same draws.
        SplitMix64.mix(seed ^ SplitMix64.mix(counter.add(1, ordering: .relaxed).newValue))
    }

    /// Uniform in [0, 1).
    func nextUnit() -> Double {
        Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
    }
}

/// Process-unique identifiers: APNs ids (UUID form), FCM message ids, OAuth access tokens.
/// A random 64-bit process prefix plus a mixed counter: unique without a lock.
final class IdentifierSource: Sendable {
    private let random: CounterRandomSource

    init() {
        var system = SystemRandomNumberGenerator()
        random = CounterRandomSource(seed: system.next())
    }

    /// A canonical lowercase version-4 UUID ("8-4-4-4-12"), the form APNs uses for `apns-id`.
    func uuid() -> String {
        // Version 4 and the RFC 4122 variant, set in the random bits.
        let high = random.next() & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let low = random.next() & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { out in
            // A byte (two digits) a step, high word first; hyphens before bytes 4, 6, 8 and 10.
            var w = 0
            for byteIndex in 0..<16 {
                if byteIndex == 4 || byteIndex == 6 || byteIndex == 8 || byteIndex == 10 {
                    out[w] = UInt8(ascii: "-")
                    w += 1
                }
                let word = byteIndex < 8 ? high : low
                let byte = UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * (byteIndex % 8)))
                out[w] = hexDigit(byte >> 4)
                out[w + 1] = hexDigit(byte & 0xF)
                w += 2
            }
            return w
        }
    }

    /// `count` lowercase hex digits.
    func hex(_ count: Int) -> String {
        String(unsafeUninitializedCapacity: count) { out in
            var word = random.next()
            for i in 0..<count {
                if i % 16 == 0 && i > 0 { word = random.next() }
                out[i] = hexDigit(UInt8(truncatingIfNeeded: word & 0xF))
                word >>= 4
            }
            return count
        }
    }

    /// A decimal message id like the ones FCM returns ("0:1700000000000000%31bd1c9631bd1c96" is
    /// the legacy form; v1 names end in a plain id).
    func messageID() -> String { "0:" + String(random.next() >> 1) }
}

@inline(__always)
func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}

@inline(__always)
func isHexDigit(_ byte: UInt8) -> Bool {
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
}

/// True for a canonical UUID: 36 characters, hyphens at 8, 13, 18, 23, hex elsewhere
/// (APNs: "a canonical UUID", else BadMessageId). Either case is accepted.
func isCanonicalUUID(_ text: String) -> Bool {
    guard text.utf8.count == 36 else { return false }
    func check(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for i in 0..<36 {
            let b = bytes[i]
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if b != UInt8(ascii: "-") { return false }
            } else if !isHexDigit(b) {
                return false
            }
        }
        return true
    }
    if let result = text.utf8.withContiguousStorageIfAvailable(check) { return result }
    return Array(text.utf8).withUnsafeBufferPointer(check)
}

/// Byte equality of a slice and a string, by `memcmp` when both are contiguous.
func utf8Equal(_ bytes: Substring.UTF8View, _ text: String) -> Bool {
    guard bytes.count == text.utf8.count else { return false }
    let fast: Bool? = bytes.withContiguousStorageIfAvailable { a in
        text.utf8.withContiguousStorageIfAvailable { b in
            guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == b.count }
            return memcmp(pa, pb, a.count) == 0
        }
    } ?? nil
    return fast ?? bytes.elementsEqual(text.utf8)
}

/// Byte suffix test (String.hasSuffix compares Characters, which costs grapheme breaking).
func utf8HasSuffix(_ text: Substring.UTF8View, _ suffix: String) -> Bool {
    let count = suffix.utf8.count
    guard text.count >= count else { return false }
    return utf8Equal(text.suffix(count), suffix)
}

/// Case-insensitive ASCII prefix test without allocating.
func hasPrefixIgnoringASCIICase(_ text: Substring.UTF8View, _ prefix: StaticString) -> Bool {
    let p = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
    // On the bytes when they are contiguous (a native String's): walking the view's indices
    // was ~0.6% of a push (perf, the bearer check of every APNs request).
    if let contiguous = text.withContiguousStorageIfAvailable({ bytes -> Bool in
        guard bytes.count >= p.count else { return false }
        for i in 0..<p.count {
            var b = bytes[i]
            if b >= 0x41 && b <= 0x5A { b += 0x20 }
            if b != p[i] { return false }
        }
        return true
    }) {
        return contiguous
    }
    guard text.count >= p.count else { return false }
    var i = text.startIndex
    for expected in p {
        var b = text[i]
        if b >= 0x41 && b <= 0x5A { b += 0x20 }
        if b != expected { return false }
        i = text.index(after: i)
    }
    return true
}


/// Decimal digits with an optional leading '-' (Apple's `apns-expiration`: "a UNIX epoch date
/// expressed in seconds"), at most 19 digits.
func isInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var digits = bytes[...]
    if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
    return !digits.isEmpty && digits.count <= 19 && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}

/// The integer the bytes spell as Swift's `Int(_: String)` reads it (an optional sign, then
/// decimal digits, within `Int`'s range); nil otherwise. On bytes: a header value need not be
/// made a String to be read as a number.
func decimalInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    var digits = bytes[...]
    let negative = digits.first == UInt8(ascii: "-")
    if negative || digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
    guard !digits.isEmpty else { return nil }
    var value = 0
    for byte in digits {
        guard byte >= 0x30 && byte <= 0x39 else { return nil }
        let digit = Int(byte - 0x30)
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
        guard !overflow1, !overflow2 else { return nil }
        value = next
    }
    return value
}
