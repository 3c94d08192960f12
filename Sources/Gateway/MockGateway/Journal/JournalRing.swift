import PushModel

/// The request journal's storage, used under its lock: every kept record line back to back in
/// one byte ring, and beside each a fixed-size slot with the fields the filters read.
///
/// Why this shape (perf, `Benchmarks/serve-vs-nghttpd.sh`, 100000 requests a round): the first
/// journal kept each line as its own heap block (~1.1 KB, ~2 KB with the path and array
/// slack; 250 MB of RSS at 100000). Once full, every request freed an old cold block and
/// allocated a new one, and glibc's bins filled with cold chunks: `_int_malloc` and
/// `_int_free` took ~2 µs a request more than without the journal, `swift_retain` on the
/// freshly (cold) allocated header strings ~0.8 µs more, and the kernel's copy into the
/// record file's page cache ~0.9 µs more (cache pressure); the first fill's page faults
/// were only ~0.7 µs. Here a line is copied into the ring and the encoder's buffer is freed
/// at once (malloc reuses the same hot block for the next request), the slots are plain
/// values (nothing to retain or release), and memory is two allocations made at start whose
/// pages count only once written.
///
/// Bounds: at most `maxRequests` slots and `maxBytes` of lines, whichever is reached first;
/// the oldest go first and are counted in `dropped`. A line longer than `maxBytes` is not
/// kept (counted as dropped too).
struct JournalRing: ~Copyable {
    /// One request's place in the ring and what the filters read without the line.
    struct Slot {
        var sequence: UInt64
        var offset: UInt32
        var length: UInt32
        /// 0…999 (0: reset or dropped by an injected fault).
        var status: UInt16
        var route: GatewayRoute
        var reason: JournalStrings.ID
        var spec: JournalStrings.ID
        /// The device token the request addressed (`JournalToken`).
        var token: UInt64
    }

    let maxRequests: Int
    let maxBytes: Int
    /// Uninitialized until written: bytes are read only inside slots.
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    /// A circular buffer of `maxRequests`; slots are read only below `count` from `first`.
    private let slots: UnsafeMutableBufferPointer<Slot>
    private var first = 0
    private(set) var count = 0
    /// Where the next line goes. Lines occupy [oldest's offset, writeOffset), wrapping at the
    /// end of `bytes` (a line never straddles it: it starts again at 0).
    private var writeOffset = 0
    /// Bytes of the lines held.
    private(set) var bytesHeld = 0
    /// Requests dropped, oldest first, to stay within the bounds (and lines too long to keep).
    private(set) var dropped: UInt64 = 0

    init(maxRequests: Int, maxBytes: Int) {
        precondition(maxRequests >= 1 && maxBytes >= 1 && maxBytes <= Int(UInt32.max))
        self.maxRequests = maxRequests
        self.maxBytes = maxBytes
        // malloc hands blocks this large out as fresh mappings: the pages cost RSS only once
        // a line is written there, so a journal that is never filled costs what it holds.
        bytes = .allocate(capacity: maxBytes)
        slots = .allocate(capacity: maxRequests)
    }

    deinit {
        bytes.deallocate()
        slots.deallocate()
    }

    /// The slot `logical` places after the oldest (0: the oldest).
    func slot(_ logical: Int) -> Slot { slots[physical(logical)] }

    private func physical(_ logical: Int) -> Int {
        let index = first + logical
        return index < maxRequests ? index : index - maxRequests
    }

    /// The bytes of a slot's line.
    func line(of slot: Slot) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(slot.offset)..<Int(slot.offset) + Int(slot.length)])
    }

    /// Keeps `line` (dropping the oldest to make room) with the fields of `slot` (its offset
    /// and length are set here). Returns false, counting it dropped, if it alone exceeds `maxBytes`.
    @discardableResult
    mutating func append(_ line: [UInt8], _ slot: Slot) -> Bool {
        let length = line.count
        guard length <= maxBytes else {
            dropped += 1
            return false
        }
        if writeOffset + length > maxBytes {
            // No room before the end: start again at 0. The lines still between here and the
            // end are older than those at the start, so they go first.
            while count > 0, Int(slots[first].offset) >= writeOffset { dropOldest() }
            writeOffset = 0
        }
        // Drop what the new line would overwrite (the oldest, from writeOffset on), or the
        // oldest slot when every slot is taken.
        while count > 0, count == maxRequests
                || (Int(slots[first].offset) >= writeOffset && Int(slots[first].offset) < writeOffset + length) {
            dropOldest()
        }
        var kept = slot
        kept.offset = UInt32(writeOffset)
        kept.length = UInt32(length)
        line.withUnsafeBufferPointer { line in
            guard let base = line.baseAddress else { return }
            (bytes.baseAddress! + writeOffset).update(from: base, count: length)
        }
        slots[physical(count)] = kept
        count += 1
        writeOffset += length
        bytesHeld += length
        return true
    }

    private mutating func dropOldest() {
        bytesHeld -= Int(slots[first].length)
        first = physical(1)
        count -= 1
        dropped += 1
        if count == 0 {
            first = 0
            writeOffset = 0
        }
    }

    /// Forgets every line (not counted as dropped).
    mutating func removeAll() {
        first = 0
        count = 0
        writeOffset = 0
        bytesHeld = 0
    }

    /// The logical index of the first slot with a sequence number above `sequence`.
    func firstIndex(after sequence: UInt64) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if slot(middle).sequence <= sequence { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// The reasons and spec ids the journal has seen, each kept once and named in a slot by a
/// small number, so a slot holds no string. Both come from bounded sets (the gateway's
/// reasons, the configured faults' reasons, the loaded specs' ids); past `limit` distinct
/// strings a slot says `unlisted` and a filter reads the line instead.
struct JournalStrings {
    typealias ID = UInt16
    /// No reason, no spec.
    static let none: ID = 0
    /// One string too many to list: the filters read the line.
    static let unlisted: ID = .max

    /// Every id but `none` and `unlisted`.
    static let defaultLimit = Int(ID.max) - 1

    private var ids: [String: ID] = [:]
    private(set) var names: [String] = [""]
    private let limit: Int

    /// True once some slot says `unlisted`.
    private(set) var overflowed = false

    init(limit: Int = defaultLimit) {
        self.limit = min(max(0, limit), Self.defaultLimit)
    }

    mutating func id(_ string: String?) -> ID {
        guard let string else { return Self.none }
        if let id = ids[string] { return id }
        guard names.count <= limit else {
            overflowed = true
            return Self.unlisted
        }
        let id = ID(names.count)
        names.append(string)
        ids[string] = id
        return id
    }

    /// The id of a string already seen, else nil (no slot names it, unless one is `unlisted`).
    func existingID(_ string: String) -> ID? { ids[string] }
}

/// A device token as a slot keeps it: a hash of its comparable form (what
/// `AddressedDevice.comparable` makes of it: an all-hex APNs token lowercased), so `token=`
/// finds its candidates among the slots without reading a line. A hash can collide, so each
/// candidate's line confirms it (`JournalQuery.matchesLine`). Swift's `Hasher` is seeded per
/// process: a client cannot craft tokens that collide with another's.
enum JournalToken {
    /// The request named no device token (OAuth, an unknown path, an FCM body without one).
    static let none: UInt64 = 0

    static func hash(_ token: some Collection<UInt8>) -> UInt64 {
        guard !token.isEmpty else { return none }
        // One pass copies the bytes out (on the stack) and tells whether they are all hex; an
        // all-hex token is then lowercased in place and hashed in one call.
        let value = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: token.count) { buffer -> Int in
            var isHex = true
            var count = 0
            for byte in token {
                buffer[count] = byte
                count += 1
                isHex = isHex && ((0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte))
            }
            if isHex {
                for index in 0..<count where buffer[index] >= 0x41 && buffer[index] <= 0x46 { buffer[index] |= 0x20 }
            }
            var hasher = Hasher()
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[0..<count])))
            return hasher.finalize()
        }
        let hashed = UInt64(bitPattern: Int64(value))
        return hashed == none ? 1 : hashed
    }

    /// The token of a recorded exchange: an APNs path's, or the FCM message's (read by the
    /// service; the body is parsed here only when the service answered before reading it).
    static func hash(of exchange: GatewayExchange) -> UInt64 {
        switch exchange.route {
        case .apns:
            let path = exchange.request.path.utf8
            let prefix = "/3/device/".utf8
            guard path.starts(with: prefix) else { return none }
            return hash(path.dropFirst(prefix.count).prefix { $0 != UInt8(ascii: "?") })
        case .fcm:
            if let token = exchange.deviceToken { return hash(token.utf8) }
            let body = exchange.request.body
            guard !body.isEmpty, body.count <= GatewayRoute.fcm.maxBodyBytes ?? 0 else { return none }
            return AddressedDevice.token(route: .fcm, path: "", body: body).map { hash($0.utf8) } ?? none
        case .oauth, .unknown:
            return none
        }
    }
}
