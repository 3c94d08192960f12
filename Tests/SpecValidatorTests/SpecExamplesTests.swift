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

    /// The product documents, when this machine has them (a user's clone has none).
    static var sourcesDirectory: String? {
        SpecLinter.defaultSourcesDirectory(specDirectory: specsDirectory)
    }

    /// Whether the documents the specs quote are there to read (the linter's own test of it).
    static var productDocumentsFound: Bool {
        SpecLinter.lint(directory: specsDirectory, sourcesDirectory: sourcesDirectory).quoteCheckSkipped == nil
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

    /// Everything but the quotes: schema, pointers, identities, overlaps, examples. Always runs.
    @Test func theShippedSpecsLintClean() throws {
        let report = SpecLinter.lint(directory: SpecFixtures.specsDirectory, checkQuotes: false)
        #expect(report.findings.isEmpty, "\(report.findings.map(\.description))")
        #expect(report.quoteCheckSkipped != nil)
    }

    /// The quoted sentences occur verbatim in the product documents. Those are not part of the
    /// repository (a user's clone has none), so this runs only where they are found
    /// ($PUSHPROOF_SHARED, or ../shared beside the package), and shows as skipped elsewhere.
    @Test(.enabled(if: SpecFixtures.productDocumentsFound, "no product documents: set PUSHPROOF_SHARED to a folder with seeds/ and reference/"))
    func theShippedSpecsQuoteTheirDocuments() throws {
        let report = SpecLinter.lint(directory: SpecFixtures.specsDirectory, sourcesDirectory: SpecFixtures.sourcesDirectory)
        #expect(report.quoteCheckSkipped == nil)
        #expect(report.findings.isEmpty, "\(report.findings.map(\.description))")
    }
}
