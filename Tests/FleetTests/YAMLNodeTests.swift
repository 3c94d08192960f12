import Foundation
import JSON
import PushproofTestSupport
import Testing
@testable import Fleet

@Suite struct YAMLNodeTests {
    @Test func hostileStringsAreQuotedWithEscapes() {
        #expect(YAMLNode.quoted("a: b # c") == #""a: b # c""#)
        #expect(YAMLNode.quoted("say \"hi\"\nand \\ go") == #""say \"hi\"\nand \\ go""#)
        #expect(YAMLNode.quoted("tab\there\u{7}\u{2028}") == #""tab\there\u0007\u2028""#)
        #expect(YAMLNode.quoted("---\n...") == #""---\n...""#)
    }

    @Test func keysArePlainOnlyWhenSafe() {
        #expect(YAMLNode.key("app.kubernetes.io/name") == "app.kubernetes.io/name")
        #expect(YAMLNode.key("gateway.json") == "gateway.json")
        #expect(YAMLNode.key("on") == #""on""#)
        #expect(YAMLNode.key("No") == #""No""#)
        #expect(YAMLNode.key("8443") == #""8443""#)
        #expect(YAMLNode.key("a: b") == #""a: b""#)
        #expect(YAMLNode.key("") == #""""#)
    }

    @Test func blockLayout() {
        let node: YAMLNode = .map([("a", .int(1)), ("b", .list([.string("x"), .map([("c", .bool(true)), ("d", .map([]))])])),
                                   ("e", .map([("f", .list([]))]))])
        #expect(node.document == """
        a: 1
        b:
          - "x"
          - c: true
            d: {}
        e:
          f: []

        """)
    }

    /// A YAML reader that is not ours (PyYAML, fetched with kubernetes-validate) reads every hostile
    /// value back as the same string, as JSON has it.
    @Test func pyYAMLReadsHostileValuesBack() throws {
        guard let python = FleetFixtures.python3() else {
            print("YAMLNodeTests skipped: python3 is not on PATH (make deps installs it)")
            return
        }
        try #require(FileManager.default.fileExists(atPath: FleetFixtures.validatorDirectory.appendingPathComponent("yaml").path),
                     "PyYAML not found in \(FleetFixtures.validatorDirectory.path): `make test-data` fetches it (Scripts/fetch-kubernetes-validate.sh)")
        let hostile = ["a: b", "# not a comment", "'single'", "\"double\"", "line\nbreak", "trailing space ", " leading", "yes", "on",
                       "null", "~", "0x1F", "1e3", "- item", "{flow: map}", "[1, 2]", "&anchor", "*alias", "!tag", "%directive",
                       "---", "...", "back\\slash", "tab\there", "bell\u{7}", "unicode é ✓", "sep\u{2028}arator", "", "@at", "`tick`", "|", ">"]
        let node: YAMLNode = .map(hostile.enumerated().map { ("k\($0.offset)", .string($0.element)) }
                                  + hostile.map { ($0, .int(1)) }.filter { !$0.0.isEmpty })
        let script = "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]).read())))"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-yaml-\(UUID().uuidString).yaml")
        try Data(node.document.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try runTool("/usr/bin/env", ["PYTHONPATH=\(FleetFixtures.validatorDirectory.path)", python.path, "-c", script, file.path])
        #expect(result.status == 0, "\(result.error)")
        guard case .object(let read) = try JSONParser.parse(result.output) else { Issue.record("not an object"); return }
        for (offset, text) in hostile.enumerated() {
            #expect(read["k\(offset)"] == .string(text), "value \(offset): \(text.debugDescription)")
            if !text.isEmpty { #expect(read[text] == .number(1), "key \(text.debugDescription)") }
        }
    }
}
