import JSON

/// One request as the rules see it. Built once per judge call; resolves references without
/// copying the body.
struct RequestView {
    let path: String
    let headers: [(name: String, value: String)]
    let body: JSONValue?

    /// The first header of that name, compared ASCII case-insensitively (HTTP/2 names are
    /// lowercase on the wire, HTTP/1.1 ones need not be).
    func header(_ lowercasedName: String) -> String? {
        for header in headers where Self.equalsIgnoringASCIICase(header.name, lowercasedName) {
            return header.value
        }
        return nil
    }

    static func equalsIgnoringASCIICase(_ candidate: String, _ lowercased: String) -> Bool {
        guard candidate.utf8.count == lowercased.utf8.count else { return false }
        if candidate == lowercased { return true }
        var a = candidate.utf8.makeIterator()
        var b = lowercased.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case (var x?, let y?):
                if x >= 0x41 && x <= 0x5A { x += 0x20 }
                if x != y { return false }
            default: return false
            }
        }
    }

    func resolve(_ reference: SpecReference) -> JSONValue? {
        switch reference {
        case .header(let name): return header(name).map { .string($0) }
        case .constant(let value): return value
        case .path: return .string(path)
        case .body(let tokens):
            guard var current = body else { return nil }
            for token in tokens {
                switch current {
                case .object(let object):
                    guard let next = Self.member(of: object, token) else { return nil }
                    current = next
                case .array(let array):
                    guard let index = Int(token), String(index) == token, array.indices.contains(index) else { return nil }
                    current = array[index]
                default:
                    return nil
                }
            }
            return current
        }
    }

    /// `object[key]` without copying every entry the scan passes (a keyed subscript over the
    /// entry array retains and releases each key and value it compares).
    static func member(of object: JSONObject, _ key: String) -> JSONValue? {
        let count = key.utf8.count
        return object.entries.withUnsafeBufferPointer { entries -> JSONValue? in
            for i in entries.indices where entries[i].key.utf8.count == count && entries[i].key == key {
                return entries[i].value
            }
            return nil
        }
    }
}
