import Synchronization

/// A wall clock that only moves when told to, for tests and for replaying recordings: the
/// rules that depend on time (token age, update rates, expiry) are checked without waiting.
public final class ManualClock: Sendable {
    private let nanos: Atomic<UInt64>

    public init(epochSeconds: UInt64 = 1_800_000_000) {
        nanos = Atomic(epochSeconds * 1_000_000_000)
    }

    /// Nanoseconds since the Unix epoch, as ``SystemClock/wallClockNanoseconds()`` reads them.
    public var nowNanoseconds: UInt64 { nanos.load(ordering: .relaxed) }

    public var nowSeconds: UInt64 { nowNanoseconds / 1_000_000_000 }

    public func advance(seconds: UInt64) {
        nanos.add(seconds * 1_000_000_000, ordering: .relaxed)
    }
}
