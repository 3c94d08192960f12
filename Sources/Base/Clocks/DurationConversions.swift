// The one place a `Duration` becomes a number: the loops, the histogram and the reports count
// in nanoseconds or seconds, and a conversion written per caller drifted (Double against exact,
// negative durations wrapped or clamped).

extension Duration {
    /// Whole nanoseconds: 0 for a negative duration, `UInt64.max` for one too long to count
    /// (about 584 years): a deadline or a latency never wraps.
    @inlinable
    public var clampedNanoseconds: UInt64 {
        // `components` truncates toward zero, so both parts carry the duration's sign.
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || carry ? .max : sum
    }

    /// Seconds as a `Double`, for rates and reports (not for deadlines: use
    /// `clampedNanoseconds`).
    @inlinable
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
