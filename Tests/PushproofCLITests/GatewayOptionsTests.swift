// The one h2c rule of send, drive, plan and run (`GatewayOptions.cleartext`), in-process.
@testable import PushproofCLI
import Testing

@Suite struct GatewayOptionsTests {
    static func parse(_ command: CommandSpec, _ arguments: [String]) throws -> ParsedArguments {
        try ParsedArguments.parse(arguments, for: command)
    }

    @Test func anHTTPURLIsCleartextAndHTTPSIsTLS() throws {
        #expect(try GatewayOptions.cleartext([("gateway", "http://127.0.0.1:8080")], h2c: false, ca: nil))
        #expect(try !GatewayOptions.cleartext([("gateway", "https://127.0.0.1:8443")], h2c: false, ca: "cert.pem"))
        #expect(try !GatewayOptions.cleartext([("apns", "http://a"), ("fcm", "https://b")], h2c: false, ca: "cert.pem"))
        #expect(throws: UsageError.self) { try GatewayOptions.cleartext([("gateway", "ftp://x")], h2c: false, ca: nil) }
        #expect(throws: UsageError.self) { try GatewayOptions.cleartext([("apns", "https://x")], h2c: true, ca: nil) }
        #expect(throws: UsageError.self) { try GatewayOptions.cleartext([("gateway", "http://x")], h2c: false, ca: "cert.pem") }
    }

    /// send and run read the same rule: an http:// gateway with --ca is refused by both.
    @Test func sendAndRunAgreeOnCleartextGateways() throws {
        let gateway = ["--gateway", "http://127.0.0.1:8080", "--ca", "cert.pem"]
        #expect(throws: UsageError.self) { try SenderOptions(Self.parse(SendCommand.spec, ["ring"] + gateway)) }
        let run = gateway + ["--admin", "http://127.0.0.1:9090", "--apns-key", "k.p8", "--key-id", "K", "--team-id", "T",
                             "--service-account", "sa.json"]
        #expect(throws: UsageError.self) { try GatewayOptions.external(Self.parse(RunCommand.spec, ["s.json"] + run)) }
        let h2c = try GatewayOptions.external(Self.parse(RunCommand.spec, ["s.json"] + run.filter { $0 != "--ca" && $0 != "cert.pem" }))
        #expect(h2c?.access.h2c == true)
        let options = try SenderOptions(Self.parse(SendCommand.spec, ["ring", "--h2c"]))
        #expect(options.apnsURL == "http://127.0.0.1:8443" && options.anyCleartext)
    }
}
