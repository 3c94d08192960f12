import Testing
@testable import Sender

@Suite struct DeliveryRetryTests {
    let policy = RetryPolicy(baseDelay: 0.5, maxDelay: 8, maxAttempts: 6)

    @Test func ceilingDoublesUpToTheCap() {
        #expect((1...7).map { policy.backoffCeiling(afterAttempt: $0) } == [0.5, 1, 2, 4, 8, 8, 8])
    }

    @Test func fullJitterScalesTheCeiling() {
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, unitRandom: 0) == 0)
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, unitRandom: 0.25) == 0.5)
        #expect(policy.delay(afterAttempt: 10, retryAfter: nil, unitRandom: 0.5) == 4)
        // Out-of-range randomness is clamped, never beyond the ceiling.
        #expect(policy.delay(afterAttempt: 1, retryAfter: nil, unitRandom: 7) == 0.5)
    }

    @Test func retryAfterReplacesTheComputedDelay() {
        #expect(policy.delay(afterAttempt: 1, retryAfter: 30, unitRandom: 0.9) == 30)
        #expect(policy.delay(afterAttempt: 5, retryAfter: 0, unitRandom: 0.9) == 0)
    }

    @Test func attemptsAreBounded() {
        #expect(policy.allowsRetry(afterAttempts: 5))
        #expect(!policy.allowsRetry(afterAttempts: 6))
        #expect(!RetryPolicy(maxAttempts: 1).allowsRetry(afterAttempts: 1))
    }

    @Test func hugeAttemptCountsDoNotOverflow() {
        #expect(policy.backoffCeiling(afterAttempt: Int.max) == 8)
    }

    @Test func retryAfterParsesDeltaSecondsOnly() {
        #expect(parseRetryAfterSeconds(Array("120".utf8)) == 120)
        #expect(parseRetryAfterSeconds(Array(" 5\r\n".utf8)) == 5)
        #expect(parseRetryAfterSeconds(Array("Wed, 21 Oct 2015 07:28:00 GMT".utf8)) == nil)
        #expect(parseRetryAfterSeconds(Array("-3".utf8)) == nil)
        #expect(parseRetryAfterSeconds(Array("".utf8)) == nil)
        #expect(parseRetryAfterSeconds(Array("99999999999999999999".utf8)) == nil)
    }
}
