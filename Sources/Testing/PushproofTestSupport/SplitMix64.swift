import Hashing

/// The seeded generator tests feed random input from, so a failure reproduces from its seed
/// (the one SplitMix64, in the Hashing module).
public typealias SplitMix64 = Hashing.SplitMix64
