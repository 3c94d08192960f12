import Foundation
import PushproofTestSupport
@testable import Fleet

enum FleetFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// Scripts/fetch-kubernetes-validate.sh's folder (PyYAML comes with it).
    static let validatorDirectory = testDataDirectory(repositoryRoot: root).appendingPathComponent("kubernetes-validate")

    static func python3() -> URL? { python3OnPath() }

    /// Stand-ins for `pushproof credentials`' files: the manifests carry them, whatever they hold.
    static let credentials = FleetPlan.Credentials(
        files: [("apns-key.p8", "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\n-----END PRIVATE KEY-----\n"),
                ("apns-key.pub.pem", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcD\n-----END PUBLIC KEY-----\n"),
                ("service-account.json", #"{"type": "service_account", "token_uri": "http://pushproof-storm-1-gateway.load.svc:8443/token"}"#)],
        gatewayConfigurationJSON: #"{"apns":{"keys":[{"key_id":"ABC123DEFG","public_key_file":"apns-key.pub.pem"}]}}"# + "\n",
        keyID: "ABC123DEFG", teamID: "TEAM123456")

    static func messageStorm(segments: Int = 3, gateways: Int = 2) throws -> FleetPlan {
        try FleetPlan(runID: "storm-1", namespace: "load", segments: segments, gateways: gateways,
                      image: "registry.example:5000/pushproof:0.1@sha256:0123abcd", workload: .builtIn("message-storm"),
                      driveOptions: ["--rate", "2000", "--duration", "60", "--threshold", "p99_ms<250"],
                      segmentResources: .init(cpu: "2", memory: "1Gi"), gatewayResources: .init(cpu: "1500m", memory: "512Mi"),
                      startAt: "1796313600000")
    }

    static func scenario() throws -> FleetPlan {
        try FleetPlan(runID: "calls-7", namespace: "default", segments: 5, segmentWeights: "1/2,1/8,1/8,1/8,1/8", gateways: 3,
                      image: "pushproof:latest", workload: .scenario(contents: #"{"people": [], "note": "a: b # c\n'quoted'"}"#),
                      sender: .command("python3 adapter.py --mode 'fast' # and a comment"), startAt: "2026-12-03T15:00:00Z")
    }
}
