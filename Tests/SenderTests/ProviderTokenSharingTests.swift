import Foundation
import Synchronization
import Testing
@testable import Sender

/// One provider token for every process of a machine that signs with the same key: Apple
/// refuses a team's tokens that change more often than every 20 minutes, and the mock gateway
/// counts them across connections as Apple does.
@Suite struct ProviderTokenSharingTests {
    /// Signs numbered tokens and counts them.
    private final class CountingSource: ProviderTokenSource {
        let signed = Atomic<Int>(0)
        func makeProviderToken(issuedAt: Int) throws -> String {
            "token-\(signed.add(1, ordering: .relaxed).newValue)-\(issuedAt)"
        }
        var sharingIdentity: String? { "counting" }
    }

    private static func temporaryFile() -> String {
        NSTemporaryDirectory() + "/provider-token-\(UUID().uuidString).jwt"
    }

    @Test func aSecondProcessUsesTheTokenTheFirstLeftInsteadOfSigning() throws {
        let path = Self.temporaryFile()
        defer { unlink(path) }
        let source = CountingSource()
        let first = SharedProviderTokens(source: source, refreshSeconds: 3000, file: ProviderTokenFile(path: path))
        let now = 1_800_000_000
        let signed = try first.token(now: now)
        #expect(signed.signed && source.signed.load(ordering: .relaxed) == 1)
        // Another process (another SharedProviderTokens, the same file) a minute later.
        let second = SharedProviderTokens(source: source, refreshSeconds: 3000, file: ProviderTokenFile(path: path))
        let adopted = try second.token(now: now + 60)
        #expect(adopted.token == signed.token && !adopted.signed)
        #expect(source.signed.load(ordering: .relaxed) == 1, "nothing signed for the second process")
        // Once the shared token is as old as the refresh interval, the next process signs anew.
        let third = SharedProviderTokens(source: source, refreshSeconds: 3000, file: ProviderTokenFile(path: path))
        let fresh = try third.token(now: now + 3000)
        #expect(fresh.signed && fresh.token != signed.token)
        // An expired refusal of the adopted token makes the second sign its own next.
        second.invalidate(generation: adopted.generation)
        let resigned = try second.token(now: now + 3001)
        #expect(resigned.token == fresh.token, "the newer shared token, not a third signing")
    }

    @Test func anUnreadableOrForeignFileOnlyMeansSigning() throws {
        let path = Self.temporaryFile()
        defer { unlink(path) }
        try "not a token file".write(toFile: path, atomically: true, encoding: .utf8)
        let source = CountingSource()
        let tokens = SharedProviderTokens(source: source, refreshSeconds: 3000, file: ProviderTokenFile(path: path))
        #expect(try tokens.token(now: 1_800_000_000).signed)
        let missing = SharedProviderTokens(source: source, refreshSeconds: 3000, file: ProviderTokenFile(path: "/nonexistent/dir/x.jwt"))
        #expect(try missing.token(now: 1_800_000_000).signed, "a file that cannot be written is no error")
    }
}
