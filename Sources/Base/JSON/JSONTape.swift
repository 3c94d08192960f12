#if canImport(Glibc)
import Glibc
#endif

/// A validated JSON document as one flat array of entries over its bytes: what a reader that
/// only looks (the spec judge) needs, without a `String` per key and value or an array per
/// object. Building the `JSONValue` tree of a poolse message push (~25 members) was ~30% of
/// judging it, and destroying the tree another ~5% (perf, `pushproof check`).
///
/// Values are laid out in document order. An object's entry is followed by its members, each a
/// key entry (kind `.string`) then the value's entries; an array's entry by its elements.
/// `next` skips a whole value, so siblings are found without reading their contents.
///
/// A tape is built only for documents `JSONParser.parse` accepts and whose tree it describes
/// exactly: `JSONParser.tape` returns nil for anything else, including valid documents it does
/// not cover (a repeated key, a key with an escape), and the caller then parses the tree.
public struct JSONTape: Sendable {
    public enum Kind: UInt8, Sendable {
        case null, `true`, `false`, number, string, array, object
    }

    public struct Entry: Sendable {
        public var kind: Kind
        /// For strings: `escapedFlag`, `nonASCIIFlag`.
        public var flags: UInt8
        /// Strings: the first content byte (after the quote). Other values: their first byte.
        public var start: UInt32
        /// Strings: the closing quote. Other values: one past their last byte.
        public var end: UInt32
        /// The index of the entry after this value and everything inside it.
        public var next: UInt32
        /// Objects: members; arrays: elements.
        public var count: UInt32
        /// Numbers: the value, as `JSONParser` reads it.
        public var number: Double

        /// The string has a backslash escape: its bytes are not its content (decode with `string(at:)`).
        public static let escapedFlag: UInt8 = 1
        /// The string's content is not all ASCII (raw bytes checked as UTF-8, or escapes decoded).
        public static let nonASCIIFlag: UInt8 = 2
    }

    /// The document.
    public let bytes: [UInt8]
    public let entries: [Entry]

    init(bytes: [UInt8], entries: [Entry]) {
        self.bytes = bytes
        self.entries = entries
    }

    /// The string at `index` (a `.string` entry, key or value), escapes decoded.
    public func string(at index: Int) -> String {
        let entry = entries[index]
        let start = Int(entry.start), end = Int(entry.end)
        if entry.flags & Entry.escapedFlag == 0 {
            return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
        }
        // The tape was built from a valid document: decoding again cannot fail.
        let decoded: String? = bytes.withUnsafeBufferPointer { buffer in
            var reader = Reader(bytes: buffer, options: .init())
            reader.position = start - 1
            return try? reader.parseString()
        }
        return decoded ?? ""
    }

    /// The value at `index` as the tree `JSONParser.parse` builds for it.
    public func value(at index: Int) -> JSONValue {
        let entry = entries[index]
        switch entry.kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .number: return .number(entry.number)
        case .string: return .string(string(at: index))
        case .array:
            var elements: [JSONValue] = []
            elements.reserveCapacity(Int(entry.count))
            var child = index + 1
            for _ in 0..<entry.count {
                elements.append(value(at: child))
                child = Int(entries[child].next)
            }
            return .array(elements)
        case .object:
            var members: [(key: String, value: JSONValue)] = []
            members.reserveCapacity(Int(entry.count))
            var key = index + 1
            for _ in 0..<entry.count {
                members.append((string(at: key), value(at: key + 1)))
                key = Int(entries[key + 1].next)
            }
            return .object(JSONObject(uncheckedEntries: members))
        }
    }
}

extension JSONParser {
    /// The tape of `bytes`, or nil when `parse(bytes, options:)` would throw, or when the document
    /// repeats a key in an object or has a key with an escape (valid, but not covered: parse it).
    public static func tape(_ bytes: [UInt8], options: Options = .init()) -> JSONTape? {
        var ignored = 0
        return tape(bytes, options: options, keyComparisons: &ignored)
    }

    /// `tape`, adding the number of key comparisons it made to `keyComparisons` (a test hook,
    /// as for `parse`).
    static func tape(_ bytes: [UInt8], options: Options = .init(), keyComparisons: inout Int) -> JSONTape? {
        guard !bytes.isEmpty, bytes.count < Int(UInt32.max) else { return nil }
        if bytes.count <= stackEntries * 15 {
            // A push's tape (a ring: 29 entries) is written on the stack, then copied into an
            // array of its own size. The array of a sixth of the body's size it was written
            // into before was 2.8 KB for a ring, past glibc's per-thread cache of blocks up to
            // ~1 KB, and its malloc and free were ~1% of a judged push (perf, `serve --specs`).
            // A body this small usually fits (push payloads run 12-15 bytes an entry); one that
            // does not is written again below.
            let written = withUnsafeTemporaryAllocation(of: JSONTape.Entry.self, capacity: stackEntries) { buffer in
                var writer = TapeWriter(base: buffer.baseAddress!, capacity: buffer.count)
                let outcome = write(bytes, options: options, to: &writer, keyComparisons: &keyComparisons)
                return (outcome, outcome == .complete ? Array(UnsafeBufferPointer(start: buffer.baseAddress, count: writer.count)) : [])
            }
            switch written.0 {
            case .complete: return JSONTape(bytes: bytes, entries: written.1)
            case .invalid: return nil
            case .full: break
            }
        }
        // Push payloads run 12-15 bytes per entry, so a sixth of the size is one allocation
        // with room to spare. Every entry starts at its own byte (a quote, a bracket, a digit or
        // a letter), so the size itself always suffices: a denser document starts again with that.
        var capacity = min(bytes.count, bytes.count / 6 + 16)
        while true {
            var outcome = TapeWriter.Outcome.invalid
            let entries = [JSONTape.Entry](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                initialized = 0
                guard let base = buffer.baseAddress else { return }
                var writer = TapeWriter(base: base, capacity: buffer.count)
                outcome = write(bytes, options: options, to: &writer, keyComparisons: &keyComparisons)
                if outcome == .complete { initialized = writer.count }
            }
            switch outcome {
            case .complete: return JSONTape(bytes: bytes, entries: entries)
            case .invalid: return nil
            case .full:
                guard capacity < bytes.count else { return nil }
                capacity = bytes.count
            }
        }
    }

    /// Entries of the stack buffer a small body's tape is written into first: 1 KB, the most
    /// `withUnsafeTemporaryAllocation` takes from the stack on Linux (beyond, it mallocs).
    static var stackEntries: Int { 1024 / MemoryLayout<JSONTape.Entry>.stride }

    /// Writes the tape of `bytes` into `writer`.
    private static func write(_ bytes: [UInt8], options: Options, to writer: inout TapeWriter,
                              keyComparisons: inout Int) -> TapeWriter.Outcome {
        bytes.withUnsafeBufferPointer { bytes in
            var reader = Reader(bytes: bytes, options: options)
            do throws(JSONError) {
                reader.skipWhitespace()
                try reader.appendTapeValue(depth: 0, to: &writer)
                reader.skipWhitespace()
                keyComparisons += reader.keyComparisons
                return reader.atEnd ? .complete : .invalid
            } catch {
                keyComparisons += reader.keyComparisons
                return writer.isFull ? .full : .invalid
            }
        }
    }
}

/// Where a tape is written: straight into the array's storage, without the uniqueness and
/// capacity checks of `Array.append` on every entry (~15% of building a tape, perf).
struct TapeWriter {
    enum Outcome { case complete, invalid, full }

    let base: UnsafeMutablePointer<JSONTape.Entry>
    let capacity: Int
    private(set) var count = 0
    private(set) var isFull = false

    init(base: UnsafeMutablePointer<JSONTape.Entry>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    @inline(__always)
    mutating func append(_ entry: JSONTape.Entry) throws(JSONError) {
        guard count < capacity else {
            isFull = true
            throw JSONError(offset: 0, message: "tape full")
        }
        (base + count).initialize(to: entry)
        count += 1
    }

    @inline(__always)
    subscript(index: Int) -> JSONTape.Entry {
        get { base[index] }
        nonmutating set { base[index] = newValue }
    }
}

extension Reader {
    /// `parseValue`, recording entries instead of building values; same checks in the same
    /// order (it calls the same functions), so it accepts nothing `parse` rejects.
    mutating func appendTapeValue(depth: Int, to entries: inout TapeWriter) throws(JSONError) {
        guard position < bytes.count else { throw error("unexpected end of input, expected a value") }
        let start = position
        let kind: JSONTape.Kind
        var number = 0.0
        switch bytes[position] {
        case UInt8(ascii: "{"): try appendTapeObject(depth: depth + 1, to: &entries); return
        case UInt8(ascii: "["): try appendTapeArray(depth: depth + 1, to: &entries); return
        case UInt8(ascii: "\""): try appendTapeString(to: &entries); return
        case UInt8(ascii: "t"): try expectLiteral("true"); kind = .true
        case UInt8(ascii: "f"): try expectLiteral("false"); kind = .false
        case UInt8(ascii: "n"): try expectLiteral("null"); kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): number = try parseNumber(); kind = .number
        default: throw error("unexpected character, expected a value")
        }
        try entries.append(JSONTape.Entry(kind: kind, flags: 0, start: UInt32(start), end: UInt32(position),
                                      next: UInt32(entries.count + 1), count: 0, number: number))
    }

    /// `skipString`'s checks (the same as `parseString`'s), noting escapes and non-ASCII bytes.
    @discardableResult
    mutating func appendTapeString(to entries: inout TapeWriter) throws(JSONError) -> UInt8 {
        let start = position
        position += 1  // opening quote
        var highBits = skipPlainStringWords()
        while position < bytes.count {
            let c = bytes[position]
            if c == UInt8(ascii: "\"") {
                if highBits & 0x80 != 0, !UTF8Check.isWellFormed(UnsafeBufferPointer(rebasing: bytes[(start + 1)..<position])) {
                    throw error("invalid UTF-8 in string", at: start)
                }
                let flags = highBits & 0x80 != 0 ? JSONTape.Entry.nonASCIIFlag : 0
                try entries.append(JSONTape.Entry(kind: .string, flags: flags, start: UInt32(start + 1), end: UInt32(position),
                                              next: UInt32(entries.count + 1), count: 0, number: 0))
                position += 1
                return flags
            }
            if c == UInt8(ascii: "\\") {
                // Escapes go through the decoder, which holds every escape rule.
                position = start
                let decoded = try parseString()
                var flags = JSONTape.Entry.escapedFlag
                if !decoded.utf8.allSatisfy({ $0 < 0x80 }) { flags |= JSONTape.Entry.nonASCIIFlag }
                try entries.append(JSONTape.Entry(kind: .string, flags: flags, start: UInt32(start + 1), end: UInt32(position - 1),
                                              next: UInt32(entries.count + 1), count: 0, number: 0))
                return flags
            }
            if c < 0x20 { throw error("control character in string") }
            highBits |= c
            position += 1
        }
        throw error("unterminated string", at: start)
    }

    mutating func appendTapeObject(depth: Int, to entries: inout TapeWriter) throws(JSONError) {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        let index = entries.count
        try entries.append(JSONTape.Entry(kind: .object, flags: 0, start: UInt32(position), end: 0, next: 0, count: 0, number: 0))
        position += 1  // {
        var count: UInt32 = 0
        var seenLow: UInt64 = 0, seenHigh: UInt64 = 0
        // Past `ObjectKeyIndex.threshold` keys the filter is full and each key would be compared
        // with every earlier one: a hash of the key bytes instead (a hostile body).
        var keyHashes: ObjectKeyIndex?
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    throw error("expected a string key in object")
                }
                let keyIndex = entries.count
                let keyStart = position + 1
                if try appendTapeString(to: &entries) & JSONTape.Entry.escapedFlag != 0 {
                    throw error("a key with an escape: not covered by the tape")
                }
                // Most keys differ in length or end bytes: a 128-bit filter of those spares
                // the comparison with every earlier key (25 keys: 300 comparisons). The key's
                // bounds come from the position, not from the entry just written (reading it
                // back stalled on the store: ~1/3 of this function, perf).
                let keyEnd = position - 1
                let length = keyEnd - keyStart
                var signature = length &* 31
                if length > 0 { signature = signature &+ Int(bytes[keyStart]) &* 7 &+ Int(bytes[keyEnd - 1]) &* 131 }
                let bit = UInt64(1) << UInt64(signature & 63)
                if Int(count) >= ObjectKeyIndex.threshold {
                    if keyHashes == nil { keyHashes = indexKeys(before: keyIndex, inObjectAt: index, entries) }
                    let repeated = keyHashes!.insert(keyIndex, hash: hashKey(from: keyStart, to: keyEnd)) { other in
                        keyComparisons += 1
                        let candidate = entries[other]
                        return Int(candidate.end - candidate.start) == length
                            && memcmp(bytes.baseAddress! + Int(candidate.start), bytes.baseAddress! + keyStart, length) == 0
                    }
                    if repeated != nil { throw error("a repeated key: not covered by the tape") }
                } else if signature & 64 == 0 {
                    if seenLow & bit != 0, hasEarlierKey(keyIndex, inObjectAt: index, entries) { throw error("a repeated key: not covered by the tape") }
                    seenLow |= bit
                } else {
                    if seenHigh & bit != 0, hasEarlierKey(keyIndex, inObjectAt: index, entries) { throw error("a repeated key: not covered by the tape") }
                    seenHigh |= bit
                }
                // Compact JSON (what senders write) has no whitespace around ':' and ',': look first.
                if position < bytes.count, bytes[position] == UInt8(ascii: ":") {
                    position += 1
                } else {
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                        throw error("expected ':' after object key")
                    }
                    position += 1
                }
                skipWhitespace()
                try appendTapeValue(depth: depth, to: &entries)
                count += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                if try separatorEnds(closing: UInt8(ascii: "}"), in: "object") { break }
            }
        }
        entries[index].end = UInt32(position)
        entries[index].count = count
        entries[index].next = UInt32(entries.count)
    }

    /// Whether the key at `keyIndex` repeats an earlier key of the object at `objectIndex`
    /// (keys have no escapes here, so equal bytes are equal keys). Lengths first. For objects
    /// up to `ObjectKeyIndex.threshold` keys; larger ones are hashed.
    mutating func hasEarlierKey(_ keyIndex: Int, inObjectAt objectIndex: Int, _ tape: TapeWriter) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let key = tape[keyIndex]
        let length = key.end - key.start
        var other = objectIndex + 1
        while other < keyIndex {
            let candidate = tape[other]
            if candidate.end - candidate.start == length {
                keyComparisons += 1
                if memcmp(base + Int(candidate.start), base + Int(key.start), Int(length)) == 0 { return true }
            }
            other = Int(tape[other + 1].next)
        }
        return false
    }

    /// The keys of the object at `objectIndex` before the entry `keyIndex`, all distinct (the
    /// filter checked them), hashed into a new index.
    func indexKeys(before keyIndex: Int, inObjectAt objectIndex: Int, _ tape: TapeWriter) -> ObjectKeyIndex {
        var index = ObjectKeyIndex(expectedCount: ObjectKeyIndex.threshold * 4)
        var other = objectIndex + 1
        while other < keyIndex {
            let key = tape[other]
            _ = index.insert(other, hash: hashKey(from: Int(key.start), to: Int(key.end))) { _ in false }
            other = Int(tape[other + 1].next)
        }
        return index
    }

    /// The per-process seeded hash of the key bytes `start..<end`.
    func hashKey(from start: Int, to end: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<end])))
        return hasher.finalize()
    }

    mutating func appendTapeArray(depth: Int, to entries: inout TapeWriter) throws(JSONError) {
        guard depth <= options.maxDepth else { throw error("nesting deeper than \(options.maxDepth)") }
        let index = entries.count
        try entries.append(JSONTape.Entry(kind: .array, flags: 0, start: UInt32(position), end: 0, next: 0, count: 0, number: 0))
        position += 1  // [
        var count: UInt32 = 0
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
        } else {
            while true {
                skipWhitespace()
                try appendTapeValue(depth: depth, to: &entries)
                count += 1
                if try separatorEnds(closing: UInt8(ascii: "]"), in: "array") { break }
            }
        }
        entries[index].end = UInt32(position)
        entries[index].count = count
        entries[index].next = UInt32(entries.count)
    }
}
