import Synchronization
import Testing
@testable import Sender

/// Signs "jwt-<issuedAt>" and counts how often it was asked.
final class CountingTokenSource: ProviderTokenSource {
    let signings = Atomic<Int>(0)
    func makeProviderToken(issuedAt: Int) throws -> String {
        signings.add(1, ordering: .relaxed)
        return "jwt-\(issuedAt)"
    }
}

struct FixedAssertionSource: OAuthAssertionSource {
    var projectID = "demo-project"
    var tokenURI: String
    func makeAssertion(audience: String, issuedAt: Int, lifetime: Int) throws -> String { "assertion.for.\(issuedAt)" }
}

@Suite struct DeliveryCredentialTests {
    @Test func providerTokenIsReusedUntilTheRefreshAge() throws {
        let source = CountingTokenSource()
        var cache = ProviderTokenCache(source: source, refreshSeconds: 50 * 60)
        let first = try cache.token(now: 1_000)
        #expect(try cache.token(now: 1_001) == first)
        #expect(try cache.token(now: 1_000 + 50 * 60 - 1) == first)
        #expect(source.signings.load(ordering: .relaxed) == 1)
        #expect(try cache.token(now: 1_000 + 50 * 60) == "jwt-\(1_000 + 50 * 60)")
        #expect(source.signings.load(ordering: .relaxed) == 2)
    }

    @Test func invalidatedProviderTokenIsResigned() throws {
        let source = CountingTokenSource()
        var cache = ProviderTokenCache(source: source, refreshSeconds: 50 * 60)
        _ = try cache.token(now: 10)
        cache.invalidate(generation: cache.signings)
        _ = try cache.token(now: 11)
        #expect(source.signings.load(ordering: .relaxed) == 2)
        // A late refusal of the first token does not discard the second.
        cache.invalidate(generation: 1)
        #expect(try cache.token(now: 12) == "jwt-11")
        #expect(source.signings.load(ordering: .relaxed) == 2)
    }

    @Test func clockGoingBackwardsResigns() throws {
        let source = CountingTokenSource()
        var cache = ProviderTokenCache(source: source, refreshSeconds: 50 * 60)
        _ = try cache.token(now: 5_000)
        #expect(try cache.token(now: 4_000) == "jwt-4000")
    }

    @Test func refreshIntervalIsClampedToApplesWindow() {
        #expect(DeliveryConfiguration(apnsTokenRefreshSeconds: 60).apnsTokenRefreshSeconds == 20 * 60)
        #expect(DeliveryConfiguration(apnsTokenRefreshSeconds: 10 * 3600).apnsTokenRefreshSeconds == 60 * 60)
        #expect(DeliveryConfiguration().apnsTokenRefreshSeconds == 50 * 60)
    }

    @Test func accessTokenIsFreshThenDueThenGone() {
        var cache = AccessTokenCache(refreshMarginSeconds: 300)
        #expect(cache.state(now: 0) == .missing)
        cache.store("ya29.token", expiresIn: 3600, now: 1_000)
        #expect(cache.state(now: 1_000) == .fresh("ya29.token"))
        #expect(cache.state(now: 1_000 + 3590 - 301) == .fresh("ya29.token"))
        #expect(cache.state(now: 1_000 + 3590 - 300) == .refreshSoon("ya29.token"))
        #expect(cache.state(now: 1_000 + 3590) == .missing)
        cache.store("ya29.next", expiresIn: 3600, now: 2_000)
        cache.invalidate(generation: 1)  // a refusal of the first token
        #expect(cache.state(now: 2_000) == .fresh("ya29.next"))
        cache.invalidate(generation: cache.generation)
        #expect(cache.state(now: 2_000) == .missing)
    }

    @Test func shortLivedAccessTokenRefreshesAtHalfLife() {
        var cache = AccessTokenCache(refreshMarginSeconds: 300)
        cache.store("short", expiresIn: 110, now: 0)  // 100 s of use after the slack
        #expect(cache.state(now: 49) == .fresh("short"))
        #expect(cache.state(now: 50) == .refreshSoon("short"))
    }
}
