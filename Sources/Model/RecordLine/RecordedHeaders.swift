import HTTPCore
import JSON

/// The request's `headers` member of a record line (`[["name","value"],…]`, `authorization`
/// redacted), kept from one request to the next on a connection: a sender repeats nearly all
/// of its headers on every push (topic, push type, priority, the provider token for 20 to 60
/// minutes), so a pair equal to the one at the same place in the previous request is copied
/// from its encoding instead of escaped (and redacted) again, and a header list equal to the
/// previous one is the previous encoding itself. The bytes are those `RecordLine.encodeTail`
/// writes without it.
///
/// A value: the owner (the gateway's per-connection state) keeps it and hands the encoding to
/// the recorder; it is used on the connection's event-loop thread only.
public struct RecordedHeaders {
    private var headers: [HTTPHeader] = []
    /// Where each pair of `headers` is in `encoded` (its `[...]`, without the comma before it).
    private var pairRanges: [Range<Int>] = []
    private var encoded: [UInt8] = []

    public init() {}

    /// The encoding of `headers`, as `RecordLine.encodeTail` writes the request's `headers`.
    public mutating func encode(_ headers: [HTTPHeader]) -> [UInt8] {
        if headers == self.headers, !encoded.isEmpty { return encoded }
        var out: [UInt8] = []
        out.reserveCapacity(encoded.count + 64)
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(headers.count)
        out.append(UInt8(ascii: "["))
        encoded.withUnsafeBufferPointer { previous in
            for (index, header) in headers.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                let start = out.count
                if index < self.headers.count, self.headers[index] == header {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: previous[pairRanges[index]]))
                } else {
                    var pair = JSONWriter(capacity: header.name.utf8.count + header.value.utf8.count + 8)
                    RecordLine.writeHeader(header, to: &pair)
                    out.append(contentsOf: pair.bytes)
                }
                ranges.append(start..<out.count)
            }
        }
        out.append(UInt8(ascii: "]"))
        self.headers = headers
        pairRanges = ranges
        encoded = out
        return encoded
    }
}
