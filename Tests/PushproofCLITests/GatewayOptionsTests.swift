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

    /// `--gateway` repeated: delivery thread t is pinned to replica t mod M, its access tokens
    /// from that replica's /token unless --token-url names one endpoint.
    @Test func repeatedGatewaysPinEachDeliveryThreadToAReplica() throws {
        let two = ["--h2c", "--gateway", "http://10.0.0.1:8443/", "--gateway", "http://10.0.0.2:8443"]
        let options = try SenderOptions(Self.parse(DriveCommand.spec, ["ring-fanout"] + two))
        #expect(options.gatewayReplicas == ["http://10.0.0.1:8443", "http://10.0.0.2:8443"])
        #expect(options.senders == 2, "one delivery thread a gateway by default")
        let pinned = options.deliveryConfiguration(projectID: "p", replica: options.gatewayReplicas[1])
        #expect(pinned.apnsBaseURL == "http://10.0.0.2:8443" && pinned.fcmBaseURL == "http://10.0.0.2:8443")
        #expect(pinned.oauthTokenURL == "http://10.0.0.2:8443/token")
        let shared = try SenderOptions(Self.parse(DriveCommand.spec, ["ring-fanout"] + two + ["--token-url", "http://10.0.0.9/token"]))
        #expect(shared.deliveryConfiguration(projectID: "p", replica: "http://10.0.0.2:8443").oauthTokenURL == "http://10.0.0.9/token")
        #expect(try SenderOptions(Self.parse(DriveCommand.spec, ["ring-fanout"] + two + ["--senders", "4"])).senders == 4)

        for (extra, message) in [
            (["--senders", "1"], "--senders 1 is fewer than the 2 gateways"),
            (["--apns", "http://10.0.0.3:8443"], "--apns names one origin, but --gateway is given 2 times"),
            (["--gateway", "http://10.0.0.1:8443"], "--gateway http://10.0.0.1:8443 is given twice"),
            (["--gateway", "https://10.0.0.3:8443"], "--h2c sends cleartext HTTP/2, but --gateway is https://"),
        ] {
            #expect { try SenderOptions(Self.parse(DriveCommand.spec, ["ring-fanout"] + two + extra)) } throws: { error in
                (error as? UsageError)?.message.contains(message) == true
            }
        }
    }

    /// `--admin` repeated gives the replicas; an address given twice is refused.
    @Test func repeatedAdminsAreReplicas() throws {
        let replicas = try GatewayOptions.replicas(Self.parse(DriveCommand.spec, ["ring-fanout", "--admin", "http://127.0.0.1:9090",
                                                                                  "--admin", "http://[::1]:9090"]))
        #expect(replicas?.admins.map(\.baseURL) == ["http://127.0.0.1:9090", "http://[::1]:9090"])
        #expect(replicas?.description == "2 replicas (http://127.0.0.1:9090, http://[::1]:9090)")
        #expect(try GatewayOptions.replicas(Self.parse(DriveCommand.spec, ["ring-fanout"])) == nil)
        #expect { try GatewayOptions.replicas(Self.parse(DriveCommand.spec, ["ring-fanout", "--admin", "http://127.0.0.1:9090",
                                                                             "--admin", "http://127.0.0.1:9090/"])) } throws: { error in
            (error as? UsageError)?.message.contains("is given twice") == true
        }
        #expect { try GatewayOptions.replicas(Self.parse(DriveCommand.spec, ["ring-fanout", "--admin", "http://no-such-host.invalid:9090"])) }
            throws: { error in (error as? UsageError)?.message.contains("cannot resolve no-such-host.invalid") == true }
    }
}
