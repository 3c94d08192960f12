import HTTPCore
import JSON
import PushModel

/// The members of a record line from `protocol` to the request's `headers`
/// (`"protocol":"h2","tls":false,"route":"apns","method":"POST","path":…,"authority":…,"headers":[…]`),
/// kept from one request to the next on a connection: while the path, the authority and the
/// header fields repeat (a sender pushing to one device again), the line's head is one copy of
/// the previous one. The header fields alone repeat on nearly every push (`RecordedHeaders`).
/// The bytes are those `RecordLine.encodeTail` writes without it.
///
/// A value kept by the gateway's per-connection state and used on its event-loop thread only.
public struct RecordedRequestHead {
    private var headers = RecordedHeaders()
    private var key: Key?
    private var encoded: [UInt8] = []

    /// What, besides the header fields, the head is made of. Strings compare by storage first:
    /// a repeated path or authority is the same String (`RepeatedText`), a method a static one.
    private struct Key {
        var version: HTTPVersion
        var isTLS: Bool
        var route: GatewayRoute
        var method: String
        var path: String
        var authority: String?
        var clientCertificateSubject: String?

        /// Compared in place: building a key to compare copied (retained) five Strings a request.
        func matches(_ request: HTTPRequest, route: GatewayRoute, clientCertificateSubject: String?) -> Bool {
            version == request.version && isTLS == request.isTLS && path == request.path && method == request.method
                && route == self.route && authority == request.authority
                && clientCertificateSubject == self.clientCertificateSubject
        }
    }

    public init() {}

    /// The head of `request`'s line, as `RecordLine.encodeTail` writes it.
    public mutating func encode(_ request: HTTPRequest, route: GatewayRoute, clientCertificateSubject: String?) -> [UInt8] {
        let fields = headers.encode(request.headers)
        if headers.reusedLast, let key, key.matches(request, route: route, clientCertificateSubject: clientCertificateSubject) {
            return encoded
        }
        var w = JSONWriter(capacity: encoded.count + fields.count + 128)
        RecordLine.writeRequestHead(request, route: route, clientCertificateSubject: clientCertificateSubject,
                                    headers: fields, to: &w)
        key = Key(version: request.version, isTLS: request.isTLS, route: route, method: request.method,
                  path: request.path, authority: request.authority, clientCertificateSubject: clientCertificateSubject)
        encoded = w.bytes
        return encoded
    }
}

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
    /// The last `encode` returned the encoding before it.
    private(set) var reusedLast = false

    public init() {}

    /// The encoding of `fields`, as `RecordLine.encodeTail` writes the request's `headers`.
    public mutating func encode(_ fields: HTTPFields) -> [UInt8] {
        reusedLast = !encoded.isEmpty && fields.sameBytes(as: self.fields)
        if reusedLast { return encoded }
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
