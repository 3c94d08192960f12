#if canImport(Glibc)
import Glibc
#endif
import JSON

/// A request's header fields as they arrived: every name and value back to back in one byte
/// buffer, in arrival order, repeats kept (so `DuplicateHeaders` can be judged). Names are
/// lowercase (HTTP/2 requires it; HTTP/1.1 names are lowered on receipt).
///
/// Why bytes and not `[HTTPHeader]`: the transport copies each field once, from nghttp2's
/// decoder into `storage`, and the gateway's checks (`APNSService`), the spec judge and the
/// record line read the same bytes. A field became text only where a rule must read it as
/// text. As Strings, a push's ~8 fields were made (or compared against the previous request's
/// and retained), then retained and released again at every stage that held the request
/// (measured: Benchmarks/README.md, "Figures behind code comments").
///
/// Two ways in: as a collection of `HTTPHeader` (each made when read: tests, cold paths,
/// anything that wants text), and `withUnsafeFields`, a view over the bytes for hot paths.
public struct HTTPFields: Sendable, Equatable {
    /// Names and values, back to back.
    @usableFromInline var storage: [UInt8] = []
    /// Per field, where its name and its value end in `storage`; each name starts where the
    /// previous field's value ends.
    @usableFromInline var ends: [FieldEnds] = []

    @usableFromInline
    struct FieldEnds: Sendable, Equatable {
        @usableFromInline var name: Int32
        @usableFromInline var value: Int32
        @inlinable init(name: Int32, value: Int32) {
            self.name = name
            self.value = value
        }
    }

    public init() {}

    public init(_ headers: [HTTPHeader]) {
        // `[]` (an empty literal) comes here too: the transport empties a stream's fields so.
        guard !headers.isEmpty else { return }
        storage.reserveCapacity(headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        ends.reserveCapacity(headers.count)
        for header in headers { append(header.name, header.value) }
    }

    /// Fields from elsewhere than a transport (a record line, a spec's example), their names
    /// lowered (ASCII) as a transport lowers them.
    public init(lowercasingNames headers: [(name: String, value: String)]) {
        for header in headers {
            storage.append(contentsOf: header.name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 })
            let nameEnd = Int32(truncatingIfNeeded: storage.count)
            storage.append(contentsOf: header.value.utf8)
            ends.append(FieldEnds(name: nameEnd, value: Int32(truncatingIfNeeded: storage.count)))
        }
    }

    /// Room for `fields` fields of `bytes` bytes in all, so a push's fields arrive without the
    /// buffers growing (the transport keeps them from one request of a stream to the next).
    public mutating func reserveCapacity(fields: Int, bytes: Int) {
        ends.reserveCapacity(fields)
        storage.reserveCapacity(bytes)
    }

    /// Appends one field. `name` must be lowercase.
    public mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        storage.append(contentsOf: name)
        let nameEnd = Int32(truncatingIfNeeded: storage.count)
        storage.append(contentsOf: value)
        ends.append(FieldEnds(name: nameEnd, value: Int32(truncatingIfNeeded: storage.count)))
    }

    /// Appends one field. `name` must be lowercase.
    public mutating func append(_ name: String, _ value: String) {
        storage.append(contentsOf: name.utf8)
        let nameEnd = Int32(truncatingIfNeeded: storage.count)
        storage.append(contentsOf: value.utf8)
        ends.append(FieldEnds(name: nameEnd, value: Int32(truncatingIfNeeded: storage.count)))
    }

    /// Empties the fields; with `keepingCapacity`, a buffer that is this value's alone is kept
    /// for the next request (one another holder still shares is left to it).
    public mutating func removeAll(keepingCapacity: Bool = false) {
        // Already empty (a reused stream's, emptied after its last request): Array's
        // `removeAll(keepingCapacity:)` takes its general `replaceSubrange` path even then.
        guard !(keepingCapacity && ends.isEmpty && storage.isEmpty) else { return }
        storage.removeAll(keepingCapacity: keepingCapacity)
        ends.removeAll(keepingCapacity: keepingCapacity)
    }

    /// Bytes of names and values together.
    public var byteCount: Int { storage.count }

    /// The first value of a field, as text. `name` must be lowercase.
    public func value(of name: String) -> String? {
        withUnsafeFields { fields in
            fields.firstIndex(of: name).map { String(decoding: fields.value(at: $0), as: UTF8.self) }
        }
    }

    /// Every value of a field, as text, in arrival order. `name` must be lowercase.
    public func values(of name: String) -> [String] {
        withUnsafeFields { fields in
            var found: [String] = []
            var index = fields.firstIndex(of: name)
            while let at = index {
                found.append(String(decoding: fields.value(at: at), as: UTF8.self))
                index = fields.firstIndex(of: name, after: at)
            }
            return found
        }
    }

    /// The fields' bytes, for reading without making text. The view is valid only inside `body`.
    @inlinable
    public func withUnsafeFields<Result>(_ body: (UnsafeFields) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBufferPointer { bytes in
            try ends.withUnsafeBufferPointer { ends in
                try body(UnsafeFields(bytes: bytes, ends: ends))
            }
        }
    }

    /// Whether both hold the same fields, byte for byte: two `memcmp`s (the record's check of
    /// a request against the previous one on its connection).
    public func sameBytes(as other: HTTPFields) -> Bool {
        withUnsafeFields { mine in other.withUnsafeFields { theirs in mine.sameBytes(as: theirs) } }
    }

    /// A view of the fields' bytes (`withUnsafeFields`).
    public struct UnsafeFields {
        @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
        @usableFromInline let ends: UnsafeBufferPointer<FieldEnds>

        @inlinable
        init(bytes: UnsafeBufferPointer<UInt8>, ends: UnsafeBufferPointer<FieldEnds>) {
            self.bytes = bytes
            self.ends = ends
        }

        @inlinable public var count: Int { ends.count }

        @inlinable
        func start(of index: Int) -> Int { index == 0 ? 0 : Int(ends[index - 1].value) }

        /// The name of field `index`: lowercase bytes.
        @inlinable
        public func name(at index: Int) -> UnsafeBufferPointer<UInt8> {
            let start = start(of: index)
            return UnsafeBufferPointer(rebasing: bytes[start..<Int(ends[index].name)])
        }

        /// The value of field `index`, as received (nghttp2 has checked it holds no NUL, CR or LF).
        @inlinable
        public func value(at index: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: bytes[Int(ends[index].name)..<Int(ends[index].value)])
        }

        /// The name and value of field `index` together, as stored (for comparing whole fields).
        @inlinable
        public func field(at index: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: bytes[start(of: index)..<Int(ends[index].value)])
        }

        /// Where the name of field `index` ends within `field(at:)`.
        @inlinable
        public func nameLength(at index: Int) -> Int { Int(ends[index].name) - start(of: index) }

        /// Whether field `index` is named `name` (lowercase).
        @inlinable
        public func name(at index: Int, is name: StaticString) -> Bool { bytesEqual(self.name(at: index), name) }

        /// Whether the name of field `index` begins with `prefix` (lowercase).
        @inlinable
        public func name(at index: Int, hasPrefix prefix: StaticString) -> Bool {
            let field = self.name(at: index)
            return field.count >= prefix.utf8CodeUnitCount
                && (prefix.utf8CodeUnitCount == 0 || bytesEqual(field.baseAddress!, prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        }

        /// Whether a field before `index` has the same name as field `index`.
        public func nameRepeatsEarlier(_ index: Int) -> Bool {
            let name = self.name(at: index)
            return (0..<index).contains { earlier in
                let other = self.name(at: earlier)
                return other.count == name.count && (name.isEmpty || bytesEqual(other.baseAddress!, name.baseAddress!, count: name.count))
            }
        }

        /// The first field named `name` (lowercase) after `index` (from the start when nil).
        public func firstIndex(of name: String, after index: Int? = nil) -> Int? {
            var name = name
            return name.withUTF8 { firstIndex(ofName: $0, after: index) }
        }

        /// `firstIndex(of:after:)` of a name's bytes (lowercase), for a caller that keeps them:
        /// no String to copy or reach into each time.
        public func firstIndex(ofName wanted: UnsafeBufferPointer<UInt8>, after index: Int? = nil) -> Int? {
            var i = (index ?? -1) + 1
            while i < ends.count {
                let candidate = self.name(at: i)
                if candidate.count == wanted.count,
                   candidate.isEmpty || bytesEqual(candidate.baseAddress!, wanted.baseAddress!, count: wanted.count) {
                    return i
                }
                i += 1
            }
            return nil
        }

        /// Whether `self` and `other` hold the same fields, byte for byte.
        public func sameBytes(as other: UnsafeFields) -> Bool {
            guard bytes.count == other.bytes.count, ends.count == other.ends.count else { return false }
            if bytes.count > 0, memcmp(bytes.baseAddress!, other.bytes.baseAddress!, bytes.count) != 0 { return false }
            guard ends.count > 0 else { return true }
            return memcmp(ends.baseAddress!, other.ends.baseAddress!, ends.count * MemoryLayout<FieldEnds>.stride) == 0
        }
    }
}

/// Each field as an `HTTPHeader`, its Strings made when it is read.
extension HTTPFields: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { ends.count }

    public subscript(position: Int) -> HTTPHeader {
        withUnsafeFields { fields in
            HTTPHeader(String(decoding: fields.name(at: position), as: UTF8.self),
                       String(decoding: fields.value(at: position), as: UTF8.self))
        }
    }
}

extension HTTPFields: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: HTTPHeader...) { self.init(elements) }
}

extension HTTPFields: CustomStringConvertible {
    public var description: String { "[" + map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]" }
}
