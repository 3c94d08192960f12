import Foundation
import JSON
import SpecValidator
import Testing

/// Where the spec directory and the shared documents are: `$PUSHPROOF_SPECS` /
/// `$PUSHPROOF_SHARED`, else found from this file's path (the package root is three levels up).
enum SpecFixtures {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var specsDirectory: String {
        if let env = ProcessInfo.processInfo.environment["PUSHPROOF_SPECS"], !env.isEmpty { return env }
        return packageRoot.appendingPathComponent("Specs").path
    }

    static var sharedDirectory: String? {
        SpecLinter.defaultSharedDirectory(specDirectory: specsDirectory)
    }

    /// Spec files relative to the spec directory, for parameterised tests.
    static var specFiles: [String] {
        let root = URL(fileURLWithPath: specsDirectory)
        var files: [String] = []
        for product in ["poolse", "yama", "concierge"] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(product).path)) ?? []
            files += names.filter { $0.hasSuffix(".json") }.sorted().map { product + "/" + $0 }
        }
        return files
    }

    static func load() throws -> SpecSet { try SpecSet.load(directory: specsDirectory) }
}

@Suite struct SpecExamplesTests {
    @Test func theSpecDirectoryLoadsWithEveryProduct() throws {
        let set = try SpecFixtures.load()
        #expect(set.products == ["poolse", "yama", "concierge"])
        #expect(set.specs.count == SpecFixtures.specFiles.count)
        #expect(set.specs.count >= 13)
    }

    @Test(arguments: SpecFixtures.specFiles)
    func everyExamplePassesItsOwnSpec(file: String) throws {
        let set = try SpecFixtures.load()
        let spec = try #require(set.specs.first { $0.file == file })
        #expect(!spec.examples.isEmpty, "\(file) has no example")
        for example in spec.examples {
            let verdict = set.judge(example)
            #expect(verdict.specID == spec.id, "\(file): \(example.name) recognised as \(verdict.specID ?? "nothing")")
            #expect(verdict.violations.isEmpty, "\(file): \(example.name): \(verdict.violations.map { "\($0.rule) \($0.pointer) \($0.message)" })")
        }
    }

    @Test(arguments: SpecFixtures.specFiles)
    func everySpecFileFollowsTheNamingAndCitesItsSeed(file: String) throws {
        let json = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: SpecFixtures.specsDirectory).appendingPathComponent(file))))
        let id = try #require(json["id"]?.stringValue)
        #expect(id == String(file.dropLast(5)).replacingOccurrences(of: "/", with: "."))
        #expect(json["seed"]?.stringValue?.hasSuffix(".txt") == true)
        #expect(json["body"]?["x-source"]?["sentence"]?.stringValue?.isEmpty == false)
    }

    @Test func theShippedSpecsLintClean() throws {
        let shared = try #require(SpecFixtures.sharedDirectory, "shared/seeds not found; set PUSHPROOF_SHARED")
        let findings = SpecLinter.lint(directory: SpecFixtures.specsDirectory, sharedDirectory: shared)
        #expect(findings.isEmpty, "\(findings.map(\.description))")
    }
}
