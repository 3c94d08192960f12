import Descriptors
import Testing

@Suite struct HostAddressesTests {
    @Test func anIPLiteralResolvesToItselfAndAMissingNameIsAnError() throws {
        #expect(try HostAddresses.resolve("127.0.0.1") == ["127.0.0.1"])
        #expect(try HostAddresses.resolve("::1") == ["::1"])
        #expect(throws: HostAddresses.ResolutionError.self) { try HostAddresses.resolve("no-such-host.invalid") }
    }

    /// Every address once, whatever the resolver repeats (one a socket type and protocol).
    @Test func localhostResolvesToLoopbackEachOnce() throws {
        let addresses = try HostAddresses.resolve("localhost")
        #expect(addresses.contains("127.0.0.1"))
        #expect(Set(addresses).count == addresses.count)
    }
}
