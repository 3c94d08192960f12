/// Byte equality for the short names and values of a push (2-40 bytes: header names, push
/// types, JSON keys): a word at a time, inline. A `memcmp` call per comparison cost more than
/// the comparison (perf: a fifth of the schema's time on a tape; 1.7% of the server's time to
/// tell a push's eight header names apart).
@inlinable
public func bytesEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) -> Bool {
    var i = 0
    while i + 8 <= count {
        if UnsafeRawPointer(a + i).loadUnaligned(as: UInt64.self) != UnsafeRawPointer(b + i).loadUnaligned(as: UInt64.self) {
            return false
        }
        i += 8
    }
    while i < count {
        if a[i] != b[i] { return false }
        i += 1
    }
    return true
}

/// Whether both hold the same bytes.
@inlinable
public func bytesEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0, let left = a.baseAddress, let right = b.baseAddress else { return true }
    return bytesEqual(left, right, count: a.count)
}

/// Whether `bytes` are the bytes of `text`.
@inlinable
public func bytesEqual(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
    bytes.count == text.utf8CodeUnitCount && (bytes.isEmpty || bytesEqual(bytes.baseAddress!, text.utf8Start, count: bytes.count))
}
