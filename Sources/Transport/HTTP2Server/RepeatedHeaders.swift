import Glibc
import HTTPCore

/// The header Strings of a connection's previous request, by position: a sender repeats
/// nearly every header of a push on the next one (topic, push type, priority, content type,
/// user agent, the provider token for 20 to 60 minutes), and a value over 15 bytes costs a
/// `String` allocation (and its free) each time it is made. A header whose name and value
/// bytes equal the one at the same position before is that one again: a retain, and the
/// gateway's later `==` on it (`RecordedHeaders`) takes the identical-storage fast path.
///
/// HPACK decodes a header block in one piece (RFC 9113 §4.3: nothing else is interleaved on
/// the connection until it ends), so "the same position" is well defined for one stream's
/// headers; the positions are shared by all the connection's streams. Used on the
/// connection's event-loop thread only.
struct RepeatedHeaders {
    private var previous: [HTTPHeader] = []
    private var previousPath = ""
    private var previousAuthority = ""

    /// The header at `position` of a request's regular headers, reused when it repeats.
    mutating func header(at position: Int, name: UnsafeBufferPointer<UInt8>,
                         value: UnsafeBufferPointer<UInt8>) -> HTTPHeader {
        if position < previous.count {
            let candidate = previous[position]
            if Self.equal(candidate.value, value), Self.equal(candidate.name, name) { return candidate }
            let header = HTTPHeader(Self.string(name), Self.string(value))
            previous[position] = header
            return header
        }
        let header = HTTPHeader(Self.string(name), Self.string(value))
        if position == previous.count, position < Self.positionsKept { previous.append(header) }
        return header
    }

    /// `:path`, reused when it repeats (a sender pushing to one device again).
    mutating func path(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        Self.reuse(&previousPath, bytes)
    }

    /// `:authority`, the same on every request of a connection.
    mutating func authority(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        Self.reuse(&previousAuthority, bytes)
    }

    /// More positions than a push has headers (`HTTP2Stream.expectedHeaderCount`) are not
    /// kept: a request with hundreds of headers must not grow the connection's state.
    static let positionsKept = 32

    private static func reuse(_ slot: inout String, _ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if equal(slot, bytes) { return slot }
        slot = string(bytes)
        return slot
    }

    @inline(__always)
    private static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
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
