import HTTPCore
import JSON

/// The request's `headers` member of a record line (`[["name","value"],…]`, `authorization`
/// redacted), kept from one request to the next on a connection: a sender repeats nearly all
/// of its headers on every push (topic, push type, priority, the provider token for 20 to 60
/// minutes). A field list byte-equal to the previous one is the previous encoding itself (two
/// `memcmp`s); otherwise a field byte-equal to the one at the same place before is copied from
/// its encoding instead of escaped (and redacted) again. The bytes are those
/// `RecordLine.encodeTail` writes without it.
///
/// A value: the owner (the gateway's per-connection state) keeps it and hands the encoding to
/// the recorder; it is used on the connection's event-loop thread only.
public struct RecordedHeaders {
    private var fields = HTTPFields()
    /// Where each pair of `fields` is in `encoded` (its `[...]`, without the comma before it).
    private var pairRanges: [Range<Int>] = []
    private var encoded: [UInt8] = []

    public init() {}

    /// The encoding of `fields`, as `RecordLine.encodeTail` writes the request's `headers`.
    public mutating func encode(_ fields: HTTPFields) -> [UInt8] {
        if !encoded.isEmpty, fields.sameBytes(as: self.fields) { return encoded }
        var out: [UInt8] = []
        out.reserveCapacity(encoded.count + 64)
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(fields.count)
        out.append(UInt8(ascii: "["))
        encoded.withUnsafeBufferPointer { previousEncoding in
            self.fields.withUnsafeFields { previous in
                fields.withUnsafeFields { current in
                    var pair = JSONWriter(capacity: 64)
                    for index in 0..<current.count {
                        if index > 0 { out.append(UInt8(ascii: ",")) }
                        let start = out.count
                        if index < previous.count, Self.sameField(current, previous, at: index) {
                            out.append(contentsOf: UnsafeBufferPointer(rebasing: previousEncoding[pairRanges[index]]))
                        } else {
                            pair.removeAll()
                            RecordLine.writeHeader(name: current.name(at: index), value: current.value(at: index), to: &pair)
                            out.append(contentsOf: pair.bytes)
                        }
                        ranges.append(start..<out.count)
                    }
                }
            }
        }
        out.append(UInt8(ascii: "]"))
        self.fields = fields
        pairRanges = ranges
        encoded = out
        return encoded
    }

    /// Field `index` has the same name and value in both (the name's length settles where one ends).
    private static func sameField(_ a: HTTPFields.UnsafeFields, _ b: HTTPFields.UnsafeFields, at index: Int) -> Bool {
        let mine = a.field(at: index)
        let theirs = b.field(at: index)
        return mine.count == theirs.count && a.nameLength(at: index) == b.nameLength(at: index)
            && mine.elementsEqual(theirs)
    }
}
