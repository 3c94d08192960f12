import Foundation
import JSON
import SpecValidator
import Testing

/// A throwaway spec directory plus a shared folder with one seed, removed on deinit.
final class TempSpecDirectory {
    let root: URL
    var specs: URL { root.appendingPathComponent("Specs") }
    var shared: URL { root.appendingPathComponent("shared") }
    static let seedName = "900_test.txt"
    static let seedText = """
        Test pushes

        A ping is sent to wake the app. It goes to the APNs token with apns-push-type: alert.
        Every ping has kind "ping". Pong is the answer.
        """

    init(files: [String: JSONValue], specset: JSONValue? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("speclint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: shared.appendingPathComponent("seeds"), withIntermediateDirectories: true)
        try Data(Self.seedText.utf8).write(to: shared.appendingPathComponent("seeds").appendingPathComponent(Self.seedName))
        try FileManager.default.createDirectory(at: specs.appendingPathComponent("test"), withIntermediateDirectories: true)
        let set = specset ?? ["format": 1, "products": ["test": ["seed": .string(Self.seedName)]],
                              "config": ["test": ["bundle_ids": ["com.example.test"]]],
                              "outOfScope": ["routes": ["oauth"]]]
        try Data(set.bytes()).write(to: specs.appendingPathComponent("specset.json"))
        for (path, json) in files {
            try Data(json.bytes()).write(to: specs.appendingPathComponent(path))
        }
    }

    func write(raw: String, to path: String) throws {
        try Data(raw.utf8).write(to: specs.appendingPathComponent(path))
    }

    func lint() -> [LintFinding] { SpecLinter.lint(directory: specs.path, sourcesDirectory: shared.path).findings }

    deinit { try? FileManager.default.removeItem(at: root) }
}

/// A minimal valid spec, `test.ping.apns`, to break one piece at a time.
func pingSpec(id: String = "test.ping.apns", kind: String = "ping") -> JSONObject {
    let source: JSONValue = ["sentence": "It goes to the APNs token with apns-push-type: alert."]
    return [
        "id": .string(id), "product": "test", "transport": "apns", "seed": .string(TempSpecDirectory.seedName),
        "match": ["route": "apns", "all": [["pointer": "/body/kind", "equals": .string(kind)]]],
        "headers": [["name": "apns-push-type", "equals": "alert", "source": source],
                    ["name": "apns-topic", "derived": ["oneOf": ["ref": "/config/test/bundle_ids"]], "source": source]],
        "body": ["x-source": ["sentence": "Every ping has kind \"ping\"."], "type": "object", "required": ["kind", "aps"],
                 "properties": ["kind": ["const": .string(kind)]]],
        "derived": [["id": "echo", "target": "/body/aps/thread-id", "equals": ["concat": ["t-", ["ref": "/body/kind"]]],
                     "source": ["sentence": "Pong is the answer."]]],
        "content": ["free": []],
        "examples": [["headers": ["apns-push-type": "alert", "apns-topic": "com.example.test"],
                      "body": ["aps": ["thread-id": .string("t-" + kind)], "kind": .string(kind)]]],
    ]
}

extension JSONObject {
    func with(_ pointer: String, _ value: JSONValue?) -> JSONValue {
        JSONValue.object(self).setting((JSONPointer(pointer)?.tokens ?? [])[...], to: value)
    }
}

@Suite struct SpecLintTests {
    func findings(_ spec: JSONValue, file: String = "test/ping.apns.json") throws -> [LintFinding] {
        let directory = try TempSpecDirectory(files: [file: spec])
        return directory.lint()
    }

    func expectFinding(_ findings: [LintFinding], file: String = "test/ping.apns.json", pointer: String, containing text: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        let match = findings.contains { $0.file == file && $0.pointer.description == pointer && $0.message.contains(text) }
        #expect(match, "wanted \(file) \(pointer) ~ \"\(text)\", got \(findings.map(\.description))", sourceLocation: sourceLocation)
    }

    @Test func theMinimalSpecIsClean() throws {
        #expect(try findings(.object(pingSpec())) == [])
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec())])
        let set = try SpecSet.load(directory: directory.specs.path)
        #expect(set.specs.map(\.id) == ["test.ping.apns"])
    }

    @Test func anUnknownSchemaKeywordIsCaughtInStrictMode() throws {
        let spec = pingSpec().with("/body/properties/kind/requried", ["kind"])
        let found = try findings(spec)
        expectFinding(found, pointer: "/body/properties/kind/requried", containing: "requried")
        #expect(found.first?.json()["pointer"] == "/body/properties/kind/requried")
        #expect(found.first?.json()["file"] == "test/ping.apns.json")
        // Loading (not strict) accepts it: an unknown keyword is an annotation to a validator.
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": spec])
        #expect(throws: Never.self) { try SpecSet.load(directory: directory.specs.path) }
    }

    @Test func aBadSchemaIsCaught() throws {
        let spec = pingSpec().with("/body/type", "obj")
        expectFinding(try findings(spec), pointer: "/body/type", containing: "body schema")
    }

    @Test func aPointerWithoutALeadingSlashIsCaught() throws {
        let spec = pingSpec().with("/derived/0/equals/concat/1/ref", "body/kind")
        expectFinding(try findings(spec), pointer: "/derived/0/equals/concat/1/ref", containing: "not a JSON pointer")
    }

    @Test func aPointerOutsideTheRequestIsCaught() throws {
        let spec = pingSpec().with("/derived/0/target", "/payload/aps")
        expectFinding(try findings(spec), pointer: "/derived/0/target", containing: "starts with /headers, /body")
    }

    @Test func aMissingConfigValueIsCaught() throws {
        let spec = pingSpec().with("/headers/1/derived/oneOf/ref", "/config/test/bundle_id")
        expectFinding(try findings(spec), pointer: "/headers/1/derived/oneOf/ref", containing: "no such configuration value")
    }

    @Test func aMatchRouteThatCarriesNoPushIsCaught() throws {
        for route: JSONValue in ["oauth", "mqtt", 1] {
            expectFinding(try findings(pingSpec().with("/match/route", route)), pointer: "/match/route", containing: #"must be "apns" or "fcm""#)
        }
    }

    @Test func anUnknownHeaderRuleKindIsCaught() throws {
        let spec = pingSpec().with("/headers/0", ["name": "apns-push-type", "matches": "al*", "source": ["sentence": "Pong is the answer."]])
        expectFinding(try findings(spec), pointer: "/headers/0/matches", containing: "unknown header rule kind")
    }

    @Test func aBadHeaderPatternIsCaught() throws {
        let spec = pingSpec().with("/headers/0", ["name": "apns-push-type", "pattern": "^(al", "source": ["sentence": "Pong is the answer."]])
        expectFinding(try findings(spec), pointer: "/headers/0/pattern", containing: "not a regular expression")
    }

    @Test func aHeaderPatternIsSearchedLikeJSONSchemas() throws {
        let spec = pingSpec().with("/headers/0", ["name": "apns-push-type", "pattern": "^al(ert)?$", "source": ["sentence": "Pong is the answer."]])
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": spec])
        #expect(directory.lint() == [])
        let set = try SpecSet.load(directory: directory.specs.path)
        let example = try #require(set.spec(id: "test.ping.apns")?.examples.first)
        let verdict = set.judge(applying([.header("apns-push-type", "alerts")], to: example))
        #expect(verdict.violations.map(\.rule) == ["header:apns-push-type"])
        #expect(verdict.violations.first?.expected == #"a value matching "^al(ert)?$""#)
    }

    @Test func anUnknownDerivedRuleKindIsCaught() throws {
        let spec = pingSpec().with("/derived/0/startsWith", "t-")
        expectFinding(try findings(spec), pointer: "/derived/0/startsWith", containing: "unknown derived rule kind")
    }

    @Test func anUnknownExpressionIsCaught() throws {
        let spec = pingSpec().with("/derived/0/equals", ["upper": ["ref": "/body/kind"]])
        expectFinding(try findings(spec), pointer: "/derived/0/equals", containing: "unknown expression kind")
    }

    @Test func anUnknownConditionIsCaught() throws {
        let spec = pingSpec().with("/derived/0/when", ["truthy": "/body/kind"])
        expectFinding(try findings(spec), pointer: "/derived/0/when", containing: "unknown condition kind")
    }

    @Test func aHeaderRuleWithoutSourceIsCaught() throws {
        let spec = pingSpec().with("/headers/0/source", nil)
        expectFinding(try findings(spec), pointer: "/headers/0", containing: "missing \"source\"")
    }

    @Test func aDerivedRuleWithoutSourceIsCaught() throws {
        let spec = pingSpec().with("/derived/0/source", nil)
        expectFinding(try findings(spec), pointer: "/derived/0", containing: "missing \"source\"")
    }

    @Test func aSchemaWithoutXSourceIsCaught() throws {
        let spec = pingSpec().with("/body/x-source", nil)
        expectFinding(try findings(spec), pointer: "/body", containing: "missing \"x-source\"")
    }

    @Test func aMalformedSourceIsCaughtWhereItIs() throws {
        expectFinding(try findings(pingSpec().with("/body/x-source", ["sentense": "Pong is the answer."])),
                      pointer: "/body/x-source/sentense", containing: "unknown key")
        expectFinding(try findings(pingSpec().with("/headers/0/source", "It goes to the APNs token")),
                      pointer: "/headers/0/source", containing: "a source is")
        expectFinding(try findings(pingSpec().with("/body/properties/kind/x-source", ["seed": "900_test.txt"])),
                      pointer: "/body/properties/kind/x-source/sentence", containing: "non-empty \"sentence\"")
    }

    @Test func aSentenceNotInTheSeedIsCaught() throws {
        let spec = pingSpec().with("/headers/0/source/sentence", "It goes to the APNs token with priority 10.")
        expectFinding(try findings(spec), pointer: "/headers/0/source/sentence", containing: "does not occur verbatim")
    }

    @Test func aParaphrasedXSourceIsCaught() throws {
        let spec = pingSpec().with("/body/x-source/sentence", "Every ping has the kind ping.")
        expectFinding(try findings(spec), pointer: "/body/x-source/sentence", containing: "does not occur verbatim")
    }

    @Test func anUnknownSeedFileIsCaught() throws {
        let spec = pingSpec().with("/seed", "999_missing.txt")
        expectFinding(try findings(spec), pointer: "/seed", containing: "not found")
    }

    @Test func aProductSeedThatDoesNotExistIsCaught() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec())],
                                              specset: ["products": ["test": ["seed": "901_gone.txt"]], "config": ["test": ["bundle_ids": ["com.example.test"]]]])
        expectFinding(directory.lint(), file: "specset.json", pointer: "/products/test/seed", containing: "not found")
    }

    @Test func overlappingMatchRulesAreCaught() throws {
        // Same match on both: ambiguous.
        let pong = pingSpec(id: "test.pong.apns").with("/id", "test.pong.apns")
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec()), "test/pong.apns.json": pong])
        let findings = directory.lint()
        expectFinding(findings, pointer: "/match", containing: "overlaps test.pong.apns")
        expectFinding(findings, pointer: "/match", containing: "ambiguous")
    }

    @Test func disjointMatchRulesAreNotOverlaps() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec()),
                                                      "test/pong.apns.json": .object(pingSpec(id: "test.pong.apns", kind: "pong"))])
        // pong's sentences differ from the seed's "ping" wording only in the const; the seed check is per sentence.
        #expect(!directory.lint().contains { $0.message.contains("overlaps") })
    }

    @Test func aMoreSpecificOverlapIsReportedWithItsWinner() throws {
        var wider = pingSpec(id: "test.wide.apns")
        wider["match"] = ["route": "apns", "all": []]  // recognises every APNs request
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec()), "test/wide.apns.json": .object(wider)])
        let findings = directory.lint()
        #expect(findings.contains { $0.message.contains("overlaps") && $0.message.contains("wins by specificity") })
        // At judge time the more specific spec wins.
        let set = try SpecSet.load(directory: directory.specs.path)
        let ping = try #require(set.spec(id: "test.ping.apns")?.examples.first)
        #expect(set.judge(ping).specID == "test.ping.apns")
    }

    // MARK: Without the product documents

    /// A user's clone has no product documents: the quote check is skipped, saying why, and
    /// every other check still runs and still finds what is wrong.
    @Test func withoutDocumentsTheQuoteCheckIsSkippedAndTheRestStillRuns() throws {
        let paraphrased = pingSpec().with("/body/x-source/sentence", "Every ping has the kind ping.")
        let broken = paraphrased.setting(["examples", "0", "headers", "apns-push-type"][...], to: "background")
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": broken])
        let missing = directory.root.appendingPathComponent("no-such-folder").path
        let report = SpecLinter.lint(directory: directory.specs.path, sourcesDirectory: missing)
        #expect(report.quoteCheckSkipped == "no product documents found in \(missing) (give --sources DIR)")
        #expect(!report.findings.contains { $0.message.contains("verbatim") || $0.message.contains("not found") })
        #expect(report.findings.contains { $0.pointer.description == "/examples/0" && $0.message.contains("fails header:apns-push-type") })
        // The same directory with its documents: the paraphrase is caught too.
        let full = SpecLinter.lint(directory: directory.specs.path, sourcesDirectory: directory.shared.path)
        #expect(full.quoteCheckSkipped == nil)
        #expect(full.findings.contains { $0.message.contains("does not occur verbatim") })
    }

    @Test func anEmptySourcesFolderSkipsTheQuoteCheckToo() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec())])
        let empty = directory.root.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let report = SpecLinter.lint(directory: directory.specs.path, sourcesDirectory: empty.path)
        #expect(report.findings.isEmpty)
        #expect(report.quoteCheckSkipped?.hasPrefix("no product documents found") == true)
    }

    /// `--sources` may name the seeds folder itself, or a flat folder of documents.
    @Test(arguments: ["seeds", "flat"])
    func sourcesMayBeTheSeedsFolderOrAFlatOne(layout: String) throws {
        let spec = pingSpec().with("/headers/0/source", ["reference": "proto.md", "sentence": "Topics name the app."])
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": spec])
        let seeds = directory.shared.appendingPathComponent("seeds")
        let folder: URL
        if layout == "seeds" {
            folder = seeds
            try FileManager.default.createDirectory(at: directory.shared.appendingPathComponent("reference"), withIntermediateDirectories: true)
            try Data("Topics name the app.".utf8).write(to: directory.shared.appendingPathComponent("reference/proto.md"))
        } else {
            folder = directory.root.appendingPathComponent("flat")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: seeds.appendingPathComponent(TempSpecDirectory.seedName),
                                             to: folder.appendingPathComponent(TempSpecDirectory.seedName))
            try Data("Topics name the app.".utf8).write(to: folder.appendingPathComponent("proto.md"))
        }
        let report = SpecLinter.lint(directory: directory.specs.path, sourcesDirectory: folder.path)
        #expect(report.quoteCheckSkipped == nil)
        #expect(report.findings.isEmpty, "\(report.findings.map(\.description))")
    }

    // MARK: Product identities

    static func twoProducts(secondBundleID: String) -> JSONValue {
        ["format": 1, "products": ["test": ["seed": .string(TempSpecDirectory.seedName)], "other": ["seed": .string(TempSpecDirectory.seedName)]],
         "config": ["test": ["bundle_ids": ["com.example.test"]], "other": ["bundle_ids": [.string(secondBundleID)]]]]
    }

    func otherProductSpec() -> JSONValue {
        var other = pingSpec(id: "other.ping.apns")
        other["product"] = "other"
        other["headers"] = [["name": "apns-push-type", "equals": "alert", "source": ["sentence": "It goes to the APNs token with apns-push-type: alert."]]]
        return JSONValue.object(other).setting(["examples", "0", "headers", "apns-topic"][...], to: "com.example.other")
    }

    /// Identical matches in two products are no overlap: each product's pushes carry its own app.
    @Test func identicalMatchesOfTwoProductsAreNoOverlap() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec())],
                                              specset: Self.twoProducts(secondBundleID: "com.example.other"))
        try FileManager.default.createDirectory(at: directory.specs.appendingPathComponent("other"), withIntermediateDirectories: true)
        try Data(otherProductSpec().bytes()).write(to: directory.specs.appendingPathComponent("other/ping.apns.json"))
        let findings = directory.lint()
        #expect(findings.isEmpty, "\(findings.map(\.description))")
    }

    @Test func twoProductsClaimingOneAppAreCaught() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec())],
                                              specset: Self.twoProducts(secondBundleID: "com.example.test"))
        try FileManager.default.createDirectory(at: directory.specs.appendingPathComponent("other"), withIntermediateDirectories: true)
        try Data(otherProductSpec().bytes()).write(to: directory.specs.appendingPathComponent("other/ping.apns.json"))
        expectFinding(directory.lint(), file: "specset.json", pointer: "/config",
                      containing: "bundle id com.example.test is listed by test and other")
    }

    /// Two products listing one Firebase project: their FCM specs are reached by the same
    /// requests, so an identical match is an overlap again.
    @Test func productsSharingAnFCMProjectAreCheckedForOverlaps() throws {
        func fcmSpec(_ product: String) -> JSONValue {
            ["id": .string(product + ".ping.fcm"), "product": .string(product), "transport": "fcm", "seed": .string(TempSpecDirectory.seedName),
             "match": ["route": "fcm", "all": [["pointer": "/body/message/data/kind", "equals": "ping"]]],
             "body": ["x-source": ["sentence": "Every ping has kind \"ping\"."], "type": "object"],
             "examples": [["body": ["message": ["token": "t", "data": ["kind": "ping"]]]]]]
        }
        let specset: JSONValue = ["format": 1,
                                  "products": ["test": ["seed": .string(TempSpecDirectory.seedName)], "other": ["seed": .string(TempSpecDirectory.seedName)]],
                                  "config": ["test": ["fcm_project": "shared-project"], "other": ["fcm_project": ["shared-project"]]]]
        let directory = try TempSpecDirectory(files: ["test/ping.fcm.json": fcmSpec("test")], specset: specset)
        try FileManager.default.createDirectory(at: directory.specs.appendingPathComponent("other"), withIntermediateDirectories: true)
        try Data(fcmSpec("other").bytes()).write(to: directory.specs.appendingPathComponent("other/ping.fcm.json"))
        let findings = directory.lint()
        #expect(findings.contains { $0.message.contains("match overlaps test.ping.fcm") || $0.message.contains("match overlaps other.ping.fcm") },
                "\(findings.map(\.description))")
        #expect(!findings.contains { $0.message.contains("listed by") }, "a shared project is no conflict")
    }

    @Test func aProductWithSpecsButNoIdentityIsCaught() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(pingSpec())],
                                              specset: ["products": ["test": ["seed": .string(TempSpecDirectory.seedName)]],
                                                        "config": ["test": ["bundle_ids": []]]])
        expectFinding(directory.lint(), file: "specset.json", pointer: "/config/test/bundle_ids",
                      containing: "no push is ever judged by them")
    }

    @Test func aSpecWithoutExamplesIsCaught() throws {
        let spec = pingSpec().with("/examples", nil)
        expectFinding(try findings(spec), pointer: "/examples", containing: "no example")
    }

    @Test func anExampleThatFailsItsSpecIsCaught() throws {
        let spec = pingSpec().with("/examples/0/headers/apns-push-type", "background")
        expectFinding(try findings(spec), pointer: "/examples/0", containing: "fails header:apns-push-type")
    }

    @Test func anExampleRecognisedByNoSpecIsCaught() throws {
        let spec = pingSpec().with("/examples/0/body/kind", "pong")
        expectFinding(try findings(spec), pointer: "/examples/0", containing: "recognised by no spec")
    }

    @Test func anIDThatDoesNotFollowTheFileNameIsCaught() throws {
        let spec = pingSpec().with("/id", "test.ping")
        expectFinding(try findings(spec), pointer: "/id", containing: "should be \"test.ping.apns\"")
    }

    @Test func anUnknownTopLevelKeyIsCaught() throws {
        let spec = pingSpec().with("/exmaples", [])
        expectFinding(try findings(spec), pointer: "/exmaples", containing: "unknown key")
    }

    @Test func aFileThatIsNotJSONIsCaught() throws {
        let directory = try TempSpecDirectory(files: [:])
        try directory.write(raw: "{\"id\": ", to: "test/ping.apns.json")
        let findings = directory.lint()
        #expect(findings.contains { $0.file == "test/ping.apns.json" && $0.message.contains("not JSON") })
    }

    @Test func loadThrowsTheFirstProblemWithFileAndPointer() throws {
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": pingSpec().with("/derived/0/target", "/payload")])
        do {
            _ = try SpecSet.load(directory: directory.specs.path)
            Issue.record("load accepted a bad pointer")
        } catch {
            #expect(error.file == "test/ping.apns.json")
            #expect(error.pointer.description == "/derived/0/target")
            #expect(error.description.contains("test/ping.apns.json at /derived/0/target"))
        }
    }

    @Test func aSchemaViolationBehindARefTakesTheSourceOfItsTarget() throws {
        var spec = pingSpec()
        spec["body"] = pingSpec().with("/body/properties/aps", ["$ref": "#/$defs/aps"])["body"]?
            .objectValue.map { body -> JSONValue in
                var body = body
                body["$defs"] = ["aps": ["type": "object", "required": ["thread-id"], "x-source": ["sentence": "Pong is the answer."]]]
                return .object(body)
            }
        let directory = try TempSpecDirectory(files: ["test/ping.apns.json": .object(spec)])
        #expect(directory.lint() == [])
        let set = try SpecSet.load(directory: directory.specs.path)
        let example = try #require(set.spec(id: "test.ping.apns")?.examples.first)
        let verdict = set.judge(applying([.body("/aps/thread-id", nil)], to: example))
        let violation = try #require(verdict.violations.first { $0.rule.hasPrefix("schema:") })
        #expect(violation.pointer.description == "/body/aps/thread-id")
        #expect(violation.rule == "schema:/properties/aps/$ref/required")
        #expect(violation.source?.sentence == "Pong is the answer.")
    }

    @Test func loadNamesAMissingSpecset() {
        do {
            _ = try SpecSet.load(directory: "/nonexistent/specs")
            Issue.record("load accepted a missing directory")
        } catch {
            #expect(error.file == "specset.json")
        }
    }
}
