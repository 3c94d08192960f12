import HTTPCore
import JSON

/// The pseudo-headers of a connection's requests as Strings, made only when they change: a
/// sender's `:method` and `:scheme` are one of a few words (static Strings: no decoding), its
/// `:authority` is the same on every request of a connection, and its `:path` repeats when it
/// pushes to one device again. Every other field stays bytes (`HTTPFields`). Used on the
/// connection's event-loop thread only.
struct PseudoHeaderStrings {
    private var previousPath = RepeatedText()
    private var previousAuthority = RepeatedText()

    /// `:method`: the methods RFC 9110 defines (and PATCH) without decoding, others decoded.
    func method(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        switch bytes.count {
        case 3 where bytesEqual(bytes, "GET"): "GET"
        case 3 where bytesEqual(bytes, "PUT"): "PUT"
        case 4 where bytesEqual(bytes, "POST"): "POST"
        case 4 where bytesEqual(bytes, "HEAD"): "HEAD"
        case 5 where bytesEqual(bytes, "PATCH"): "PATCH"
        case 6 where bytesEqual(bytes, "DELETE"): "DELETE"
        case 7 where bytesEqual(bytes, "OPTIONS"): "OPTIONS"
        default: Self.string(bytes)
        }
    }

    /// `:scheme`.
    func scheme(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        switch bytes.count {
        case 5 where bytesEqual(bytes, "https"): "https"
        case 4 where bytesEqual(bytes, "http"): "http"
        default: Self.string(bytes)
        }
    }

    /// `:path`, reused when it repeats (a sender pushing to one device again).
    mutating func path(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        previousPath.string(bytes)
    }

    /// `:authority`, the same on every request of a connection.
    mutating func authority(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        previousAuthority.string(bytes)
    }

    @inline(__always)
    private static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
