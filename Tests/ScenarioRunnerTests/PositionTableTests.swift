@testable import ScenarioRunner
import Testing

/// The device index's table: every key found at its position, a key not in it not found, a
/// repeated key at its last position, and tags that collide confirmed by the caller.
struct PositionTableTests {
    private static func table(_ keys: [String]) -> PositionTable {
        PositionTable(count: keys.count, hashAt: { keys[$0].hashed(seed: $1) }, sameKey: { keys[$0] == keys[$1] })
    }

    private static func find(_ key: String, in table: PositionTable, keys: [String]) -> Int? {
        table.position(hash: key.hashed(seed: table.seed)) { keys[$0] == key }
    }

    @Test(arguments: [0, 1, 2, 7, 8, 100, 1_000, 65_535, 65_536, 100_000])
    func everyKeyIsFoundAtItsPosition(count: Int) {
        let keys = (0..<count).map { "device-\($0)" }
        let table = Self.table(keys)
        for (position, key) in keys.enumerated() {
            #expect(Self.find(key, in: table, keys: keys) == position, "\(key)")
        }
        for absent in ["", "device-\(count)", "device--1", "p0-voip"] {
            #expect(Self.find(absent, in: table, keys: keys) == nil, "\(absent)")
        }
    }

    @Test func aRepeatedKeyIsFoundAtItsLastPosition() {
        let keys = ["a", "b", "a", "c", "b"]
        let table = Self.table(keys)
        #expect(Self.find("a", in: table, keys: keys) == 2)
        #expect(Self.find("b", in: table, keys: keys) == 4)
        #expect(Self.find("c", in: table, keys: keys) == 3)
    }

    /// Every key hashing alike (one slot, one tag): the caller's confirmation tells them apart.
    @Test func keysWhoseHashesCollideAreToldApartByTheCaller() {
        let keys = (0..<50).map { "k\($0)" }
        let table = PositionTable(count: keys.count, hashAt: { _, _ in 0xDEAD_BEEF_0000_0003 }, sameKey: { keys[$0] == keys[$1] })
        for (position, key) in keys.enumerated() {
            #expect(table.position(hash: 0xDEAD_BEEF_0000_0003) { keys[$0] == key } == position)
        }
        #expect(table.position(hash: 0xDEAD_BEEF_0000_0003) { _ in false } == nil)
    }

    /// Four bytes a slot, at most 4/5 full: 100,000 keys in 131,072 slots (512 KiB).
    @Test func aSlotIsFourBytes() {
        let table = PositionTable(count: 100_000, hashAt: { position, seed in UInt64(position) &* 0x9E37_79B9_7F4A_7C15 ^ seed },
                                  sameKey: { $0 == $1 })
        #expect(table.slotBytes == 131_072 * 4)
    }
}
