// `pushproof specs lint`: everything that can be wrong with a spec directory, all at once.
// A cold path: Foundation is fine.
import Foundation
import JSON

/// Checks a spec directory: unreadable or non-JSON files, schema errors (strict: unknown
/// keywords), bad pointers and unknown kinds in rules, missing or unverifiable `source`s (the
/// sentence must occur verbatim in the named seed or reference file), specs whose id does not
/// follow their file name, overlapping match rules, specs without examples, and examples that
/// do not pass their own spec.
public enum SpecLinter {
    /// - Parameters:
    ///   - directory: the spec directory (holds specset.json).
    ///   - sharedDirectory: the folder holding `seeds/` and `reference/`; by default
    ///     `$PUSHPROOF_SHARED`, else the first `shared` folder found beside the package root
    ///     (`<directory>/../../shared`) or one level further up.
    public static func lint(directory: String, sharedDirectory: String? = nil) -> [LintFinding] {
        var findings: [LintFinding] = []
        let specset: [UInt8]
        let files: [(path: String, bytes: [UInt8])]
        do { (specset, files) = try SpecSet.readDirectory(directory) } catch {
            return [LintFinding(file: error.file, pointer: error.pointer, message: error.message)]
        }
        let (compiled, issues) = SpecSet.compile(specset: specset, files: files, configOverrides: [:], strictSchema: true)
        for (file, issue) in issues { findings.append(LintFinding(file: file, pointer: issue.pointer, message: issue.message)) }
        guard let set = compiled else { return findings }

        // Sources must quote their documents.
        let shared = sharedDirectory ?? defaultSharedDirectory(specDirectory: directory)
        var documents = DocumentCache(shared: shared)
        if let listed = (try? JSONParser.parse(specset))?["products"]?.objectValue {
            for (product, entry) in listed {
                if let seed = entry["seed"]?.stringValue, documents.text(seed: seed) == nil {
                    findings.append(LintFinding(file: "specset.json", pointer: JSONPointer(tokens: ["products", product, "seed"]),
                                                message: "seed file \(seed) not found in \(shared ?? "(no shared folder)")/seeds"))
                }
            }
        }
        for (path, bytes) in files {
            guard let json = try? JSONParser.parse(bytes) else { continue }
            let seed = json["seed"]?.stringValue
            if let seed, documents.text(seed: seed) == nil {
                findings.append(LintFinding(file: path, pointer: JSONPointer(tokens: ["seed"]),
                                            message: "seed file \(seed) not found in \(shared ?? "(no shared folder)")/seeds"))
            }
            checkSources(json, at: .root, defaultSeed: seed, file: path, documents: &documents, into: &findings)
            checkPatterns(json, at: .root, file: path, into: &findings)
        }

        // Ids follow file names: poolse/ring.apns.json holds poolse.ring.apns.
        for spec in set.specs {
            let expected = String(spec.file.dropLast(".json".count)).split(separator: "/").joined(separator: ".")
            if spec.id != expected {
                findings.append(LintFinding(file: spec.file, pointer: JSONPointer(tokens: ["id"]),
                                            message: "id \"\(spec.id)\" should be \"\(expected)\" (product folder, kind, transport)"))
            }
            if !spec.file.hasPrefix(spec.product + "/") {
                findings.append(LintFinding(file: spec.file, pointer: JSONPointer(tokens: ["product"]),
                                            message: "product \"\(spec.product)\" does not match the folder"))
            }
            if !spec.file.hasSuffix("." + spec.transport + ".json") {
                findings.append(LintFinding(file: spec.file, pointer: JSONPointer(tokens: ["transport"]),
                                            message: "transport \(spec.transport) does not match the file name"))
            }
        }

        // Overlapping match rules: two specs some request could both satisfy.
        for (i, a) in set.specs.enumerated() {
            for b in set.specs[(i + 1)...] where a.match.route == b.match.route {
                if let ma = a.match.method, let mb = b.match.method, ma != mb { continue }
                let disjoint = a.match.conditions.contains { ca in b.match.conditions.contains { ca.excludes($0) } }
                if !disjoint {
                    let winner = a.specificity == b.specificity ? "neither is more specific: ambiguous"
                        : "\(a.specificity > b.specificity ? a.id : b.id) wins by specificity"
                    findings.append(LintFinding(file: a.file, pointer: JSONPointer(tokens: ["match"]),
                                                message: "match overlaps \(b.id) (\(b.file)): add a condition that tells them apart (\(winner))"))
                }
            }
        }

        // Examples: present, recognised by their own spec, and passing.
        for spec in set.specs {
            if spec.examples.isEmpty {
                findings.append(LintFinding(file: spec.file, pointer: JSONPointer(tokens: ["examples"]),
                                            message: "no example: add one taken from the product document"))
            }
            for (index, example) in spec.examples.enumerated() {
                let pointer = JSONPointer(tokens: ["examples", String(index)])
                let verdict = set.judge(example)
                if verdict.specID != spec.id {
                    findings.append(LintFinding(file: spec.file, pointer: pointer,
                                                message: "example \"\(example.name)\" is recognised by \(verdict.specID ?? "no spec"), not \(spec.id)"))
                    continue
                }
                for violation in verdict.violations {
                    findings.append(LintFinding(file: spec.file, pointer: pointer,
                                                message: "example \"\(example.name)\" fails \(violation.rule) at \(violation.pointer): \(violation.message)"))
                }
            }
        }
        return findings
    }

    /// Every `pattern` string and `patternProperties` key that nests quantifiers (`(a+)+`):
    /// such a pattern backtracks exponentially, so PCRE2 gives up on some strings and the check
    /// fails there (`CompiledPattern.matchLimit`).
    private static func checkPatterns(_ node: JSONValue, at pointer: JSONPointer, file: String, into findings: inout [LintFinding]) {
        func report(_ source: String, _ at: JSONPointer) {
            guard CompiledPattern.nestsQuantifiers(source) else { return }
            findings.append(LintFinding(file: file, pointer: at, message: """
                pattern /\(source)/ nests quantifiers: it backtracks exponentially on some strings, where matching \
                gives up and the check fails; quantify a group only when nothing inside it is quantified
                """))
        }
        switch node {
        case .object(let object):
            for (key, value) in object {
                let here = pointer.appending(key)
                if key == "pattern", let source = value.stringValue { report(source, here) }
                if key == "patternProperties", let patterns = value.objectValue {
                    for (source, _) in patterns { report(source, here.appending(source)) }
                }
                checkPatterns(value, at: here, file: file, into: &findings)
            }
        case .array(let items):
            for (index, item) in items.enumerated() { checkPatterns(item, at: pointer.appending(String(index)), file: file, into: &findings) }
        default:
            break
        }
    }

    /// `$PUSHPROOF_SHARED`, else `shared` beside the package root or one level up (git worktrees).
    public static func defaultSharedDirectory(specDirectory: String) -> String? {
        if let env = ProcessInfo.processInfo.environment["PUSHPROOF_SHARED"], !env.isEmpty { return env }
        var folder = URL(fileURLWithPath: specDirectory).standardizedFileURL.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = folder.deletingLastPathComponent().appendingPathComponent("shared")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("seeds").path, isDirectory: &isDirectory), isDirectory.boolValue {
                return candidate.path
            }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }

    /// Every `source` / `x-source` object (one with a `sentence`) anywhere in a spec file.
    private static func checkSources(_ node: JSONValue, at pointer: JSONPointer, defaultSeed: String?, file: String,
                                     documents: inout DocumentCache, into findings: inout [LintFinding]) {
        switch node {
        case .object(let object):
            for (key, value) in object.entries {
                let here = pointer.appending(key)
                if key == "source" || key == "x-source", let source = value.objectValue, let sentence = source["sentence"]?.stringValue {
                    let reference = source["reference"]?.stringValue
                    let seed = source["seed"]?.stringValue ?? (reference == nil ? defaultSeed : nil)
                    let text: String?
                    let name: String
                    if let reference { text = documents.text(reference: reference); name = "reference/" + reference }
                    else if let seed { text = documents.text(seed: seed); name = "seeds/" + seed }
                    else { continue }  // the compiler already reported the missing seed
                    guard let text else {
                        findings.append(LintFinding(file: file, pointer: here, message: "cannot read \(name) to check the sentence"))
                        continue
                    }
                    if !text.contains(sentence) {
                        findings.append(LintFinding(file: file, pointer: here.appending("sentence"),
                                                    message: "the sentence does not occur verbatim in \(name): \"\(sentence)\""))
                    }
                } else {
                    checkSources(value, at: here, defaultSeed: defaultSeed, file: file, documents: &documents, into: &findings)
                }
            }
        case .array(let items):
            for (i, item) in items.enumerated() {
                checkSources(item, at: pointer.appending(i), defaultSeed: defaultSeed, file: file, documents: &documents, into: &findings)
            }
        default:
            break
        }
    }
}

/// Seed and reference documents, read once per lint run.
private struct DocumentCache {
    let shared: String?
    var texts: [String: String?] = [:]

    mutating func text(seed: String) -> String? { text(at: "seeds/" + seed) }
    mutating func text(reference: String) -> String? { text(at: "reference/" + reference) }

    private mutating func text(at relative: String) -> String? {
        if let cached = texts[relative] { return cached }
        guard let shared, !relative.contains("..") else { return nil }
        let path = URL(fileURLWithPath: shared).appendingPathComponent(relative).path
        let text = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
        texts[relative] = text
        return text
    }
}
