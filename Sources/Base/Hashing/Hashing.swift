// The two non-cryptographic mixers pushproof uses, once each: SplitMix64 for seeded random
// streams (scenario generation, fault injection, tests) and FNV-1a for stable hashes of
// tokens and ids (sharding, derived device tokens). Both give the same values on every run
// and machine, unlike Swift's `Hasher`, which is seeded per process.

/// SplitMix64 (Steele, Lea and Flood 2014): a full-period generator, and its output step as a
/// bijective mixer (`mix`), so a counter fed through it is a random stream too.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The golden-ratio increment of each step.
    public static let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15

    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= Self.gamma
        return Self.finalize(state)
    }

    /// A value in 0..<bound (0 when bound is 0).
    public mutating func next(below bound: Int) -> Int {
        bound <= 0 ? 0 : Int(next() % UInt64(bound))
    }

    /// A draw in [0, 1), 53 bits.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// What a generator whose state is `value` gives next: a mixer that spreads every input
    /// bit over the word.
    @inlinable @inline(__always)
    public static func mix(_ value: UInt64) -> UInt64 { finalize(value &+ gamma) }

    @inlinable @inline(__always)
    static func finalize(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a, 64 bits (Fowler, Noll, Vo): a stable hash of bytes.
public enum FNV1a {
    public static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    public static let prime: UInt64 = 0x100_0000_01B3

    public static func hash64(_ bytes: some Sequence<UInt8>, basis: UInt64 = offsetBasis) -> UInt64 {
        var hash = basis
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* prime }
        return hash
    }
}
