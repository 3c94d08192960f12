/// The members of one large object by key hash, so finding a repeated key costs a constant
/// expected number of comparisons instead of one per earlier member. A hostile body of 95,000
/// distinct keys (950 KB) held an event loop for 24 s when each key was compared with every
/// earlier one (a hostile body); objects in push payloads have 4-30 members and keep the
/// plain scan (`threshold`), so this is built only for the rare large object.
///
/// Open addressing with linear probing over a power-of-two table kept at most half full. A slot
/// packs the key's 32-bit hash (high half, compared before any key comparison) and the member's
/// ordinal plus one (low half; 0 is an empty slot). Hashes come from the caller: `Hasher`
/// (SipHash, seeded per process), so a client cannot choose keys that collide.
struct ObjectKeyIndex {
    /// Objects with more members than this are indexed; smaller ones are scanned.
    static let threshold = 16

    private var slots: [UInt64]
    private var mask: Int
    private var count = 0

    init(expectedCount: Int) {
        var size = 64
        while size < expectedCount * 2 { size <<= 1 }
        slots = [UInt64](repeating: 0, count: size)
        mask = size - 1
    }

    /// Adds member `ordinal` under `hash`, unless a member already there has the same key
    /// (`sameKey(ordinal)` says, asked only for members whose hash matches): then that member's
    /// ordinal, and nothing is added.
    mutating func insert(_ ordinal: Int, hash: Int, sameKey: (Int) -> Bool) -> Int? {
        let tag = UInt64(UInt32(truncatingIfNeeded: hash))
        var slot = Int(truncatingIfNeeded: tag) & mask
        while true {
            let packed = slots[slot]
            if packed == 0 { break }
            if packed >> 32 == tag {
                let existing = Int(truncatingIfNeeded: packed & 0xFFFF_FFFF) - 1
                if sameKey(existing) { return existing }
            }
            slot = (slot + 1) & mask
        }
        slots[slot] = tag << 32 | UInt64(ordinal + 1)
        count += 1
        if count * 2 > slots.count { grow() }
        return nil
    }

    /// Doubles the table; the stored hashes place every member again without its key.
    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        mask = slots.count - 1
        for packed in old where packed != 0 {
            var slot = Int(truncatingIfNeeded: packed >> 32) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = packed
        }
    }
}

/// How many key comparisons parsing did: a test hook for the bound that parsing stays linear in
/// the number of keys (`JSONParser.parse(_:options:counting:)`, `JSONParser.tape(_:options:counting:)`).
struct KeyComparisonCounter {
    var count = 0
}
