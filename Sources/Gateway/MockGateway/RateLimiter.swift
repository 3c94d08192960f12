import Synchronization

/// A rate as configured: at most `maximum` events per `perSeconds`, bursts up to `maximum`.
public struct RateLimit: Sendable, Equatable {
    public var maximum: Int
    public var perSeconds: Double

    public init(maximum: Int, perSeconds: Double) {
        self.maximum = maximum
        self.perSeconds = perSeconds
    }
}

/// Token buckets by key (a device token, a project), for the gateways' own throttles: APNs
/// 429 TooManyRequests ("too many requests to the same device token"), FCM 429 QUOTA_EXCEEDED
/// (600,000 messages a minute per project; a per-device message rate). Off unless configured;
/// when on, one short lock per request.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updatedNanos: UInt64
    }

    private let capacity: Double
    private let refillPerNano: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Bounded memory: past this many keys, buckets that have refilled completely are dropped.
    private static let maxKeys = 1_000_000

    init(_ limit: RateLimit) {
        capacity = Double(max(1, limit.maximum))
        refillPerNano = Double(max(1, limit.maximum)) / (max(limit.perSeconds, 0.001) * 1e9)
    }

    /// Takes one token for `key`; nil when allowed, else the seconds until one is available.
    func take(_ key: String, nowNanos: UInt64) -> Int? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: capacity, updatedNanos: nowNanos)
            let elapsed = nowNanos >= bucket.updatedNanos ? Double(nowNanos - bucket.updatedNanos) : 0
            bucket.tokens = min(capacity, bucket.tokens + elapsed * refillPerNano)
            bucket.updatedNanos = nowNanos
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                if buckets.count >= Self.maxKeys { prune(&buckets, nowNanos: nowNanos) }
                buckets[key] = bucket
                return nil
            }
            buckets[key] = bucket
            let wait = (1 - bucket.tokens) / refillPerNano / 1e9
            return max(1, Int(wait.rounded(.up)))
        }
    }

    private func prune(_ buckets: inout [String: Bucket], nowNanos: UInt64) {
        buckets = buckets.filter { _, bucket in
            let elapsed = nowNanos >= bucket.updatedNanos ? Double(nowNanos - bucket.updatedNanos) : 0
            return bucket.tokens + elapsed * refillPerNano < capacity
        }
    }
}
