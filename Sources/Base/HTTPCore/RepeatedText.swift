#if canImport(Glibc)
import Glibc
#endif

/// A String made from bytes that usually repeat from one request to the next on a connection
/// (its `:authority`, a sender's `apns-topic`, its provider token for 20 to 60 minutes): made
/// again only when the bytes change, else the same String (a retain, and a later `==` on it
/// takes the identical-storage fast path). A value over 15 bytes costs a `String` allocation
/// and a UTF-8 check each time it is made. Kept per connection, used on its thread only.
public struct RepeatedText: Sendable {
    private var last = ""

    public init() {}

    /// `bytes` as a String (invalid UTF-8 replaced, as `String(decoding:as:)` does).
    public mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if Self.equal(last, bytes) { return last }
        last = String(decoding: bytes, as: UTF8.self)
        return last
    }

    /// The String's UTF-8 is exactly `bytes` (a String made from invalid UTF-8 holds
    /// replacement characters instead, so it never equals its bytes and is made again).
    @inline(__always)
    private static func equal(_ string: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard string.utf8.count == bytes.count else { return false }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        return string.utf8.withContiguousStorageIfAvailable { utf8 in
            guard let stored = utf8.baseAddress else { return false }
            return memcmp(stored, base, bytes.count) == 0
        } ?? string.utf8.elementsEqual(bytes)
    }
}
