// When to try a push again. Apple: 5xx "may be retried later", 429 after backing off;
// Google: 429/500/503 with exponential backoff and jitter, honouring Retry-After (fcm.md).

/// Exponential backoff with full jitter: attempt n (1-based, the attempt that failed) waits
/// a uniformly random time in [0, min(cap, base * 2^(n-1))). A Retry-After from the gateway
/// replaces the computed delay.
public struct RetryPolicy: Sendable, Equatable {
    /// Seconds; the ceiling of the first retry's random delay.
    public var baseDelay: Double
    /// Seconds; no computed delay exceeds it.
    public var maxDelay: Double
    /// Attempts in all, the first included; 1 disables retries.
    public var maxAttempts: Int

    public init(baseDelay: Double = 0.5, maxDelay: Double = 30, maxAttempts: Int = 5) {
        self.baseDelay = max(0, baseDelay)
        self.maxDelay = max(0, maxDelay)
        self.maxAttempts = max(1, maxAttempts)
    }

    /// Whether a push that has failed `attempts` times may go again.
    public func allowsRetry(afterAttempts attempts: Int) -> Bool { attempts < maxAttempts }

    /// The ceiling of the jittered delay after `attempt` failed attempts.
    public func backoffCeiling(afterAttempt attempt: Int) -> Double {
        let exponent = Double(min(max(attempt - 1, 0), 62))
        return min(maxDelay, baseDelay * pow2(exponent))
    }

    /// Seconds to wait before the next attempt. `unitRandom` is uniform in [0, 1); tests
    /// inject it. `retryAfter` is the gateway's Retry-After in seconds, honoured as given.
    public func delay(afterAttempt attempt: Int, retryAfter: Double?, unitRandom: Double) -> Double {
        if let retryAfter, retryAfter >= 0 { return retryAfter }
        let unit = min(max(unitRandom, 0), 1)
        return backoffCeiling(afterAttempt: attempt) * unit
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(exponent)
        while remaining > 0 { result *= 2; remaining -= 1 }
        return result
    }
}

/// Parses a Retry-After value in delta-seconds ("120"). The HTTP-date form is not used by
/// APNs or FCM and yields nil, so the computed backoff applies.
public func parseRetryAfterSeconds<Bytes: Collection<UInt8>>(_ value: Bytes) -> Double? {
    var seconds = 0
    var sawDigit = false
    for byte in value {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard seconds < 10_000_000 else { return nil }
            seconds = seconds * 10 + Int(byte - UInt8(ascii: "0"))
            sawDigit = true
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
            if sawDigit { return Double(seconds) }
        default:
            return nil
        }
    }
    return sawDigit ? Double(seconds) : nil
}
