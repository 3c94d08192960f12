import Foundation
import JSON
import SpecValidator
import Testing

/// Runs the official JSON-Schema-Test-Suite (draft 2020-12, optional cases included) against
/// `JSONSchema`: every case of every file not in `skippedFiles`, every group not in
/// `skippedGroups`. Each case checks both `isValid` and `validate`, and the tape program where
/// the tape covers the document, so the fast path and the reporting path cannot drift apart.
///
/// The suite comes from a package registry, not from this repository: `make test` runs
/// `Scripts/fetch-json-schema-suite.sh`, which takes it (pinned, sha256-checked) from the
/// `jsonschema` source distribution on PyPI, with the 2020-12 metaschemas from
/// `jsonschema-specifications`, into `.build/test-data`. Remote references resolve as the
/// suite's README asks: `http://localhost:1234/…` to its `remotes/` folder, the metaschemas by
/// their `$id`; nothing is fetched at run time.
enum JSONSchemaSuite {
    /// Whole files (paths below `tests/draft2020-12/`) left out, with why.
    static let skippedFiles: [String: String] = [
        "vocabulary.json": "custom metaschemas switching vocabularies off with $vocabulary: pushproof always applies every 2020-12 vocabulary",
        "optional/format-assertion.json": "the format-assertion vocabulary: pushproof treats format as an annotation, as the 2020-12 default vocabulary does",
        "optional/cross-draft.json": "references into draft 2019-09 and draft 7 schemas: pushproof validates draft 2020-12 only",
        "optional/dependencies-compatibility.json": "draft 7's `dependencies`, which 2020-12 replaced by dependentRequired and dependentSchemas: pushproof validates draft 2020-12 only",
    ]

    /// Folders (below `tests/draft2020-12/`) left out, with why.
    static let skippedFolders: [String: String] = [
        "optional/format/": "format assertions (date-time, email, ipv6, …): format is an annotation in 2020-12's default vocabulary, and the push specs use pattern instead",
    ]

    /// Single groups left out (file, group description), with why.
    static let skippedGroups: [String: [String: String]] = [
        "optional/ecmascript-regex.json": [
            "\\a is not an ECMA 262 control escape": "validates a schema's pattern against the metaschema's `format: regex`, an assertion only under the format-assertion vocabulary",
        ],
    ]

    /// The unpacked data: `$PUSHPROOF_TEST_DATA`, else `.build/test-data` in the package root.
    static let dataDirectory: URL = {
        if let explicit = ProcessInfo.processInfo.environment["PUSHPROOF_TEST_DATA"] {
            return URL(fileURLWithPath: explicit)
        }
        // #filePath = <root>/Tests/SpecValidatorTests/JSONSchemaSuiteTests.swift
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/test-data")
    }()

    static var testsDirectory: URL { dataDirectory.appendingPathComponent("json-schema-test-suite/tests/draft2020-12") }
    static var remotesDirectory: URL { dataDirectory.appendingPathComponent("json-schema-test-suite/remotes") }
    static var metaschemaDirectory: URL { dataDirectory.appendingPathComponent("json-schema-metaschemas/draft202012") }

    static let missingMessage = "JSON-Schema-Test-Suite not found in \(dataDirectory.path): `make test` fetches it (Scripts/fetch-json-schema-suite.sh)"

    /// Every `.json` file below `directory`, as paths relative to it, sorted.
    static func files(below directory: URL, suffix: String? = ".json") -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        var found: [String] = []
        while let path = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory.appendingPathComponent(path).path, isDirectory: &isDirectory),
                  !isDirectory.boolValue else { continue }
            if let suffix, !path.hasSuffix(suffix) { continue }
            found.append(path)
        }
        return found.sorted()
    }

    static let allFiles: [String] = files(below: testsDirectory)

    static func skipReason(_ file: String) -> String? {
        skippedFiles[file] ?? skippedFolders.first { file.hasPrefix($0.key) }?.value
    }

    static var coveredFiles: [String] { allFiles.filter { skipReason($0) == nil } }

    /// The documents remote references resolve to: the suite's remotes by their localhost URI,
    /// the metaschemas by their `$id`.
    static let remoteDocuments: [String: JSONValue] = {
        var documents: [String: JSONValue] = [:]
        for path in files(below: remotesDirectory) {
            if let document = try? parse(remotesDirectory.appendingPathComponent(path)) {
                documents["http://localhost:1234/" + path] = document
            }
        }
        for path in files(below: metaschemaDirectory, suffix: nil) {
            if let document = try? parse(metaschemaDirectory.appendingPathComponent(path)),
               let id = document["$id"]?.stringValue {
                documents[id] = document
            }
        }
        return documents
    }()

    static func parse(_ url: URL) throws -> JSONValue {
        try JSONParser.parse([UInt8](Data(contentsOf: url)))
    }

    struct Case {
        var description: String
        var data: JSONValue
        var valid: Bool
    }

    struct Group {
        var description: String
        var schema: JSONValue
        var cases: [Case]
    }

    static func load(_ file: String) throws -> [Group] {
        let document = try parse(testsDirectory.appendingPathComponent(file))
        let groups = try #require(document.arrayValue, "\(file): not an array of groups")
        return try groups.map { group in
            let description = try #require(group["description"]?.stringValue)
            let schema = try #require(group["schema"])
            let tests = try #require(group["tests"]?.arrayValue)
            let cases = try tests.map { test in
                Case(description: try #require(test["description"]?.stringValue),
                     data: try #require(test["data"]),
                     valid: try #require(test["valid"]?.boolValue as Bool?))
            }
            return Group(description: description, schema: schema, cases: cases)
        }
    }
}

@Suite("JSON-Schema-Test-Suite draft2020-12")
struct JSONSchemaSuiteTests {
    @Test func suiteIsPresentAndCovered() throws {
        try #require(!JSONSchemaSuite.allFiles.isEmpty, Comment(rawValue: JSONSchemaSuite.missingMessage))
        #expect(JSONSchemaSuite.coveredFiles.count >= 55)
        #expect(JSONSchemaSuite.remoteDocuments["http://localhost:1234/draft2020-12/integer.json"] != nil)
        #expect(JSONSchemaSuite.remoteDocuments["https://json-schema.org/draft/2020-12/schema"] != nil)
        // Every skip names something that exists, so the lists cannot rot silently.
        for file in JSONSchemaSuite.skippedFiles.keys {
            #expect(JSONSchemaSuite.allFiles.contains(file), "skipped file \(file) is not in the suite")
        }
        for folder in JSONSchemaSuite.skippedFolders.keys {
            #expect(JSONSchemaSuite.allFiles.contains { $0.hasPrefix(folder) }, "skipped folder \(folder) is not in the suite")
        }
        var lines = ["JSON-Schema-Test-Suite: \(JSONSchemaSuite.coveredFiles.count) of \(JSONSchemaSuite.allFiles.count) files run; skipped:"]
        for (folder, reason) in JSONSchemaSuite.skippedFolders.sorted(by: { $0.key < $1.key }) {
            let count = JSONSchemaSuite.allFiles.filter { $0.hasPrefix(folder) }.count
            lines.append("  \(folder) (\(count) files): \(reason)")
        }
        for (file, reason) in JSONSchemaSuite.skippedFiles.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(file): \(reason)")
        }
        for (file, groups) in JSONSchemaSuite.skippedGroups.sorted(by: { $0.key < $1.key }) {
            for (group, reason) in groups.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(file) › \(group): \(reason)")
            }
        }
        print(lines.joined(separator: "\n"))
    }

    @Test(arguments: JSONSchemaSuite.coveredFiles)
    func suiteFile(_ file: String) throws {
        let groups = try JSONSchemaSuite.load(file)
        let skipped = JSONSchemaSuite.skippedGroups[file] ?? [:]
        let options = JSONSchema.Options(remoteDocuments: JSONSchemaSuite.remoteDocuments)
        var ran = 0
        for group in groups where skipped[group.description] == nil {
            let schema: JSONSchema
            do {
                schema = try JSONSchema(group.schema, options: options)
            } catch {
                Issue.record("\(file) › \(group.description): schema does not compile: \(error)")
                continue
            }
            for test in group.cases {
                ran += 1
                let fast = schema.isValid(test.data)
                let violations = schema.validate(test.data)
                if fast != test.valid || violations.isEmpty != test.valid {
                    Issue.record("""
                        \(file) › \(group.description) › \(test.description): expected \(test.valid ? "valid" : "invalid"), \
                        isValid=\(fast), violations=\(violations.map(\.description))
                        """)
                }
                // The tape program (what the judge runs) must give the same answer wherever
                // the tape covers the document (only repeated or escaped keys are not).
                if let tape = JSONParser.tape(test.data.bytes()), schema.isValid(tape) != test.valid {
                    Issue.record("\(file) › \(group.description) › \(test.description): on the tape, isValid=\(!test.valid)")
                }
                // Every violation must point at a real keyword of the document it names.
                for violation in violations {
                    let document = violation.schemaDocument.map { JSONSchemaSuite.remoteDocuments[$0] } ?? group.schema
                    if let document, violation.schemaLocation.resolve(in: document) == nil {
                        Issue.record("\(file) › \(group.description) › \(test.description): schemaLocation \(violation.schemaLocation) does not resolve")
                    }
                }
            }
        }
        #expect(ran > 0, "\(file): no case ran")
        for name in skipped.keys {
            #expect(groups.contains { $0.description == name }, "\(file): skipped group \"\(name)\" not in the file")
        }
    }
}
