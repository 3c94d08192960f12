/// Where code that stamps or ages things reads the wall clock: the gateway's provider-token
/// age, update rate and expiries, the sender's rules (a call's age, a message's time). Passed
/// in, so a test gives a `ManualClock`'s or a fixed time and checks those rules without
/// waiting; production code uses `.system`.
public struct WallClock: Sendable {
    private let read: @Sendable () -> UInt64

    /// `nowNanoseconds` returns nanoseconds since the Unix epoch.
    public init(nowNanoseconds: @escaping @Sendable () -> UInt64) { read = nowNanoseconds }

    /// Nanoseconds since the Unix epoch.
    public var nowNanoseconds: UInt64 { read() }
    /// Whole milliseconds since the Unix epoch.
    public var nowMilliseconds: Int64 { Int64(read() / 1_000_000) }
    /// Whole seconds since the Unix epoch (JWT `iat`, access-token expiry).
    public var nowSeconds: Int64 { Int64(read() / 1_000_000_000) }

    /// CLOCK_REALTIME.
    public static let system = WallClock { SystemClock.wallClockNanoseconds() }

    /// A clock stuck at `milliseconds` since the Unix epoch.
    public static func fixed(milliseconds: Int64) -> WallClock {
        let nanoseconds = UInt64(max(0, milliseconds)) &* 1_000_000
        return WallClock { nanoseconds }
    }
}

extension ManualClock {
    /// This clock as the wall clock code reads: it moves when the test advances it.
    public var wallClock: WallClock { WallClock { [self] in nowNanoseconds } }
}
