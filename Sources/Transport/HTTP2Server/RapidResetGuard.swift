// The server's own defence against HTTP/2 "rapid reset" (CVE-2023-44487): a client opens a
// stream and resets it before the answer, over and over. Each round costs the server a
// request's work and the client two small frames, and no stream limit stops it because a
// reset stream stops counting at once. nghttp2's built-in guard counts every RST_STREAM,
// also those libcurl 7.88 sends after each finished stream, so it is off (makeHTTP2Options)
// and this one counts only resets of streams the server had not finished answering.

/// A token bucket: `capacity` tokens to start, refilled at `refillPerSecond`, never above
/// `capacity`. Plain stored values, so a connection holds one inline (no allocation), and
/// time comes in as an argument, so it is tested without a clock.
struct TokenBucket {
    let capacity: UInt64
    let refillPerSecond: UInt64
    private(set) var tokens: UInt64
    /// When the tokens were last topped up; the part of a token's interval not yet earned
    /// carries over to the next take.
    private var refilledAtNanos: UInt64

    init(capacity: UInt64, refillPerSecond: UInt64, nowNanos: UInt64) {
        self.capacity = capacity
        self.refillPerSecond = refillPerSecond
        tokens = capacity
        refilledAtNanos = nowNanos
    }

    /// Takes one token; false (and nothing taken) when the bucket is empty.
    mutating func take(nowNanos: UInt64) -> Bool {
        if refillPerSecond > 0, nowNanos > refilledAtNanos {
            let nanosPerToken = max(1, 1_000_000_000 / refillPerSecond)
            let earned = (nowNanos - refilledAtNanos) / nanosPerToken
            if earned >= capacity - tokens {
                tokens = capacity
                refilledAtNanos = nowNanos
            } else if earned > 0 {
                tokens += earned
                refilledAtNanos += earned * nanosPerToken
            }
        }
        guard tokens > 0 else { return false }
        tokens -= 1
        return true
    }
}

/// What a connection allows of client resets of streams it had not finished answering.
enum RapidResetGuard {
    /// Resets of unanswered streams a connection may send at once. nghttp2's default for its
    /// own guard (1000): real clients cancel a handful of requests at a time (a timeout, a
    /// call answered elsewhere), while an attack needs thousands a second to hurt.
    static let burst: UInt64 = 1000
    /// The sustained rate after the burst, per second. nghttp2's default (33, its burst over
    /// 30 s): a sender whose requests keep timing out may cancel that many a second on one
    /// connection for as long as it likes; an attacker gets 33 requests' work a second.
    static let refillPerSecond: UInt64 = 33
    /// GOAWAY debug data when the budget runs out (RFC 9113 §6.8: diagnostic, opaque).
    static let goAwayDebugData: [UInt8] = Array("too many streams reset before their answer".utf8)

    static func budget(nowNanos: UInt64) -> TokenBucket {
        TokenBucket(capacity: burst, refillPerSecond: refillPerSecond, nowNanos: nowNanos)
    }
}
