import HTTPCore
import JSON

/// One request as the rules see it. Built once per judge call; resolves references without
/// copying the body. The body is a tree (given by the caller, or a document the tape does not
/// cover) or a tape; references into a tape build only the values they reach.
struct RequestView {
    let path: String
    /// Lowercase names (`HTTPFields.lowercasingNames` for headers from elsewhere than the gateway).
    let headers: HTTPFields
    private let tree: JSONValue?
    let tape: JSONTape?

    init(path: String, headers: HTTPFields, body: JSONValue?) {
        self.path = path
        self.headers = headers
        self.tree = body
        self.tape = nil
    }

    init(path: String, headers: HTTPFields, tape: JSONTape) {
        self.path = path
        self.headers = headers
        self.tree = nil
        self.tape = tape
    }

    var hasBody: Bool { tree != nil || tape != nil }

    /// The whole body as a tree: built from the tape when there is one (failures only).
    var body: JSONValue? { tree ?? tape?.value(at: 0) }

    /// The first header of that name, as text (only a header a rule reads becomes text).
    func header(_ lowercasedName: String) -> String? { headers.value(of: lowercasedName) }

    func resolve(_ reference: SpecReference) -> JSONValue? {
        switch reference {
        case .header(let name): return header(name).map { .string($0) }
        case .constant(let value): return value
        case .path: return .string(path)
        case .body(let tokens):
            if let tape { return Self.entry(in: tape, tokens).map { tape.value(at: $0) } }
            guard let tree else { return nil }
            return JSONPointer(tokens: tokens).resolve(in: tree)
        }
    }

    /// Whether the body value at `tokens` equals `wanted` (`JSONValue ==`), building nothing
    /// for an ASCII string, a number, a boolean or null on a tape.
    func body(at tokens: [String], equals wanted: JSONValue) -> Bool {
        guard let tape else {
            return resolve(.body(tokens)) == wanted
        }
        guard let index = Self.entry(in: tape, tokens) else { return false }
        let entry = tape.entries[index]
        switch (entry.kind, wanted) {
        case (.null, .null): return true
        case (.true, .bool(let b)): return b
        case (.false, .bool(let b)): return !b
        case (.number, .number(let d)): return entry.number == d
        case (.string, .string(let text)) where entry.flags == 0:
            // Raw ASCII on both sides: String == is byte equality.
            let fast = text.utf8.withContiguousStorageIfAvailable { wantedBytes -> Bool? in
                guard UTF8Check.isASCII(wantedBytes) else { return nil }
                return tape.bytes.withUnsafeBufferPointer { bytes in
                    bytesEqual(UnsafeBufferPointer(rebasing: bytes[Int(entry.start)..<Int(entry.end)]), wantedBytes)
                }
            }
            if let fast, let answer = fast { return answer }
            return tape.string(at: index) == text
        case (.string, _), (.array, _), (.object, _): return tape.value(at: index) == wanted
        default: return false
        }
    }

    /// The tape entry at `tokens` below the body's root, found as `resolve` finds it on a tree.
    static func entry(in tape: JSONTape, _ tokens: [String]) -> Int? {
        tape.entries.withUnsafeBufferPointer { entries -> Int? in
            tape.bytes.withUnsafeBufferPointer { bytes -> Int? in
                var current = 0
                for token in tokens {
                    let entry = entries[current]
                    switch entry.kind {
                    case .object:
                        guard let found = member(of: current, token, entries, bytes, tape) else { return nil }
                        current = found
                    case .array:
                        guard let index = Int(token), String(index) == token, index >= 0, index < entry.count else { return nil }
                        var item = current + 1
                        for _ in 0..<index { item = Int(entries[item].next) }
                        current = item
                    default:
                        return nil
                    }
                }
                return current
            }
        }
    }

    /// The value entry of member `token` of the object at `object`, by `JSONObject.index(forKey:)`'s
    /// test (equal UTF-8 lengths, then String ==). Tape keys have no escapes, and for an ASCII token
    /// that test is byte equality: no other string of the same length is canonically equivalent
    /// to it. A non-ASCII token compares the key's String.
    private static func member(of object: Int, _ token: String, _ entries: UnsafeBufferPointer<JSONTape.Entry>,
                               _ bytes: UnsafeBufferPointer<UInt8>, _ tape: JSONTape) -> Int? {
        let length = token.utf8.count
        let count = Int(entries[object].count)
        // (true, key) when decided on bytes; (false, nil) sends a non-ASCII token the slow way.
        let fast = token.utf8.withContiguousStorageIfAvailable { wanted -> (decided: Bool, found: Int?) in
            guard UTF8Check.isASCII(wanted) else { return (false, nil) }
            var key = object + 1
            for _ in 0..<count {
                let entry = entries[key]
                if Int(entry.end - entry.start) == length,
                   bytesEqual(UnsafeBufferPointer(rebasing: bytes[Int(entry.start)..<Int(entry.end)]), wanted) {
                    return (true, key + 1)
                }
                key = Int(entries[key + 1].next)
            }
            return (true, nil)
        }
        if let fast, fast.decided { return fast.found }
        var key = object + 1
        for _ in 0..<count {
            let entry = entries[key]
            if Int(entry.end - entry.start) == length, tape.string(at: key) == token { return key + 1 }
            key = Int(entries[key + 1].next)
        }
        return nil
    }

    /// Whether `reference` designates something in this request (`resolve(reference) != nil`).
    func exists(_ reference: SpecReference) -> Bool {
        if let tape, case .body(let tokens) = reference { return Self.entry(in: tape, tokens) != nil }
        return resolve(reference) != nil
    }
}
