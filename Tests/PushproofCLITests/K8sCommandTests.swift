// `pushproof k8s render` and `k8s segment`, in-process: their options, and the credentials the
// render generates (the gateway trusts them, their token_uri is the run's Service).
import Fleet
import Foundation
@testable import PushproofCLI
import Testing

@Suite struct K8sCommandTests {
    static func render(_ arguments: [String]) throws -> K8sRenderCommand {
        try K8sRenderCommand(ParsedArguments.parse(arguments, for: K8sRenderCommand.spec))
    }

    @Test func optionsAfterTheDashesGoToDrive() throws {
        let command = try Self.render(["message-storm", "--segments", "4", "--gateways", "2", "--image", "pushproof:1", "--run-id", "s1",
                                       "--start-at", "2026-12-03T15:00:00Z", "--", "--rate", "100", "--duration", "30"])
        #expect(command.plan.workload == .builtIn("message-storm"))
        #expect(command.plan.driveOptions == ["--rate", "100", "--duration", "30"])
        #expect(command.plan.segments == 4 && command.plan.gateways == 2 && command.plan.startAt == "2026-12-03T15:00:00Z")
        #expect(throws: UsageError.self) { try Self.render(["message-storm", "--image", "x", "--namespace", "a\nb"]) }
        #expect(throws: UsageError.self) { try Self.render(["--image", "x", "--", "--rate", "1"]) }
        #expect(throws: UsageError.self) { try Self.render(["ring-fanout"]) }
    }

    @Test func theLeadTimeIsFromNow() throws {
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let command = try Self.render(["ring-fanout", "--image", "x", "--lead", "300"])
        let startAt = try #require(Int64(command.plan.startAt))
        #expect(startAt >= before + 300_000 && startAt < before + 310_000)
        #expect(command.plan.runID.hasPrefix("run-"))
    }

    @Test func theCredentialsPointAtTheRunsService() throws {
        let plan = try Self.render(["ring-fanout", "--image", "x", "--run-id", "s1", "--namespace", "load"]).plan
        let credentials = try K8sRenderCommand.credentials(for: plan)
        #expect(credentials.files.map(\.name) == ["apns-key.p8", "apns-key.pub.pem", "service-account.json", "apns-ca.pem",
                                                  "apns-cert.pem", "apns-cert-key.pem", "provider-token.jwt"])
        // One provider token signed at render time for every segment: "<iat> <jwt>".
        let shared = try #require(credentials.files.first { $0.name == "provider-token.jwt" }?.contents).split(separator: " ")
        let issuedAt = try #require(Int(shared[0]))
        #expect(abs(issuedAt - Int(Date().timeIntervalSince1970)) < 60)
        #expect(shared.count == 2 && shared[1].split(separator: ".").count == 3, "a JWT")
        let job = FleetManifests.render(plan, credentials: credentials).map(\.document).joined()
        #expect(job.contains("PUSHPROOF_PROVIDER_TOKEN_FILE") && job.contains("/etc/pushproof/provider-token.jwt"))
        let serviceAccount = try #require(credentials.files.first { $0.name == "service-account.json" }?.contents)
        #expect(serviceAccount.contains("http://pushproof-s1-gateway.load.svc:8443/token"))
        #expect(credentials.gatewayConfigurationJSON.contains("\"public_key_file\":\"apns-key.pub.pem\""))
        #expect(credentials.gatewayConfigurationJSON.contains("pushproof-s1-gateway.load.svc:8443/token"))
    }

    @Test func aSegmentNeedsDriveAndTheJobsEnvironment() {
        #expect(throws: UsageError.self) { try K8sSegmentCommand(ParsedArguments.parse(["--", "serve"], for: K8sSegmentCommand.spec)) }
        // The test process is no pod of a rendered Job.
        #expect(throws: UsageError.self) { try K8sSegmentCommand(ParsedArguments.parse(["--", "drive", "ring-fanout"], for: K8sSegmentCommand.spec)) }
    }
}
