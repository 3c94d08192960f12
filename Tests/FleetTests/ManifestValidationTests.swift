import Foundation
import PushproofTestSupport
import Testing
@testable import Fleet

/// The rendered manifests checked by kubernetes-validate --strict (its bundled OpenAPI schemas,
/// no cluster, no network), at 1.28, the oldest whose Job schema has backoffLimitPerIndex and
/// maxFailedIndexes (on by default from 1.29), and at 1.37, the newest it ships. 1.27 must refuse
/// the Job: the check is strict enough to see a field it does not know.
@Suite struct ManifestValidationTests {
    static let oldest = "1.28.0", newest = "1.37.0"

    func validate(_ plan: FleetPlan, version: String) throws -> ToolResult? {
        guard let python = FleetFixtures.python3() else {
            print("ManifestValidationTests skipped: python3 is not on PATH (make deps installs it)")
            return nil
        }
        try #require(FileManager.default.fileExists(atPath: FleetFixtures.validatorDirectory.appendingPathComponent("kubernetes_validate").path),
                     "kubernetes-validate not found in \(FleetFixtures.validatorDirectory.path): `make test-data` fetches it (Scripts/fetch-kubernetes-validate.sh)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(plan.runID)-\(UUID().uuidString).yaml")
        try Data(YAMLNode.stream(FleetManifests.render(plan, credentials: FleetFixtures.credentials)).utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try runTool("/usr/bin/env", ["PYTHONPATH=\(FleetFixtures.validatorDirectory.path)", python.path, "-m", "kubernetes_validate",
                                            "--strict", "--kubernetes-version", version, file.path])
    }

    static let shapes: [@Sendable () throws -> FleetPlan] = [
        { try FleetFixtures.messageStorm() },
        { try FleetFixtures.scenario() },
        { try FleetPlan(runID: "one", segments: 1, gateways: 1, image: "pushproof", workload: .builtIn("ring-fanout"), startAt: "0") },
    ]

    @Test(arguments: [oldest, newest], 0..<3) func validatesStrictly(version: String, shape: Int) throws {
        guard let result = try validate(try Self.shapes[shape](), version: version) else { return }
        #expect(result.status == 0, "\(result.output)\(result.error)")
        // Six objects, each passed (a silently skipped document would not say "passed").
        #expect(result.output.components(separatedBy: "passed for resource").count - 1 == 6, "\(result.output)")
    }

    @Test func theOlderSchemaRefusesTheJob() throws {
        guard let result = try validate(try FleetFixtures.messageStorm(), version: "1.27.0") else { return }
        #expect(result.status != 0)
        #expect(result.output.contains("backoffLimitPerIndex"), "\(result.output)\(result.error)")
    }
}
