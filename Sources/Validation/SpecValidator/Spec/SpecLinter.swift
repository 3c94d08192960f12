// `pushproof specs lint`: everything that can be wrong with a spec directory, all at once.
// A cold path: Foundation is fine.
import Foundation
import JSON
import PushModel

/// Checks a spec directory: unreadable or non-JSON files, schema errors (strict: unknown
/// keywords), bad pointers and unknown kinds in rules, missing or unverifiable `source`s (the
/// sentence must occur verbatim in the named seed or reference file, when those can be found),
/// specs whose id does not follow their file name, products claiming one app, overlapping match
/// rules, specs without examples, and examples that do not pass their own spec.
public enum SpecLinter {
    /// - Parameters:
    ///   - directory: the spec directory (holds specset.json).
    ///   - sourcesDirectory: where the product documents (seeds) and protocol references are
    ///     (see `SourceDocuments`); nil: `defaultSourcesDirectory(specDirectory:)`.
    ///   - checkQuotes: false skips the quote check (every other check still runs).
    /// The documents are not part of the repository, so a clone may have none: then the quote
    /// check is skipped (`SpecLintReport.quoteCheckSkipped` says why) and the rest still runs.
    public static func lint(directory: String, sourcesDirectory: String? = nil, checkQuotes: Bool = true) -> SpecLintReport {
        var findings: [LintFinding] = []
        let specset: [UInt8]
        let files: [(path: String, bytes: [UInt8])]
        do { (specset, files) = try SpecSet.readDirectory(directory) } catch {
            return SpecLintReport(findings: [error], quoteCheckSkipped: nil)
        }
        let (compiled, issues) = SpecSet.compile(specset: specset, files: files, configOverrides: [:], strictSchema: true)
        for (file, issue) in issues { findings.append(LintFinding(file: file, pointer: issue.pointer, message: issue.message)) }
        guard let set = compiled else { return SpecLintReport(findings: findings, quoteCheckSkipped: nil) }

        // Sources must quote their documents, when there are documents to read.
        var quoteCheckSkipped: String?
        if checkQuotes {
            let sources = sourcesDirectory ?? defaultSourcesDirectory(specDirectory: directory)
            var documents = SourceDocuments(directory: sources)
            if let sources, documents.holdsAny(of: documentNames(specset: specset, files: files)) {
                findings += quoteFindings(specset: specset, files: files, documents: &documents, sources: sources)
            } else {
                quoteCheckSkipped = "no product documents found" + (sources.map { " in \($0)" } ?? "") + " (give --sources DIR)"
            }
        } else {
            quoteCheckSkipped = "not asked for"
        }

        // Two products must not claim one app: its pushes would be judged by whichever is listed first.
        for conflict in set.identities.conflicts {
            findings.append(LintFinding(file: "specset.json", pointer: JSONPointer(tokens: ["config"]),
                                        message: "bundle id \(conflict.identity) is listed by \(conflict.products.joined(separator: " and ")): "
                                            + "an app belongs to one product"))
        }
        // A product's specs can only judge pushes the product claims by its identity.
        for product in set.products {
            for transport in PushTransport.allCases where set.specs.contains(where: { $0.product == product && $0.transport == transport }) {
                let key = transport == .apns ? "bundle_ids" : "fcm_project"
                let listed = set.config[product]?[key]
                if listed?.stringValue?.isEmpty == false || listed?.arrayValue?.isEmpty == false { continue }
                findings.append(LintFinding(file: "specset.json", pointer: JSONPointer(tokens: ["config", product, key]),
                                            message: "\(product) has \(transport) specs but no config.\(product).\(key): no push is ever judged by them"))
            }
        }
        for (path, bytes) in files {
            guard let json = try? JSONParser.parse(bytes) else { continue }
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
            if !spec.file.hasSuffix("." + spec.transport.rawValue + ".json") {
                findings.append(LintFinding(file: spec.file, pointer: JSONPointer(tokens: ["transport"]),
                                            message: "transport \(spec.transport) does not match the file name"))
            }
        }

        // Overlapping match rules: two specs some request could both satisfy. Only specs one
        // request can reach are compared: one product's, or FCM specs of products sharing a project.
        let sharing = set.identities.sharedFCMProjects.map { Set($0.products) }
        func reachable(_ a: PushSpec, _ b: PushSpec) -> Bool {
            a.product == b.product || (a.transport == .fcm && sharing.contains { $0.contains(a.product) && $0.contains(b.product) })
        }
        for (i, a) in set.specs.enumerated() {
            for b in set.specs[(i + 1)...] where a.match.route == b.match.route && reachable(a, b) {
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
        return SpecLintReport(findings: findings, quoteCheckSkipped: quoteCheckSkipped)
    }

    /// Every document the spec directory names: products' and specs' `seed`s, and each
    /// source's `seed` or `reference`.
    private static func documentNames(specset: [UInt8], files: [(path: String, bytes: [UInt8])]) -> [SourceDocuments.Name] {
        var names: [SourceDocuments.Name] = []
        func collect(_ node: JSONValue) {
            switch node {
            case .object(let object):
                for (key, value) in object.entries {
                    if key == "seed", let name = value.stringValue { names.append(.seed(name)) }
                    else if key == "reference", let name = value.stringValue { names.append(.reference(name)) }
                    else { collect(value) }
                }
            case .array(let items): items.forEach(collect)
            default: break
            }
        }
        for bytes in [specset] + files.map(\.bytes) { if let json = try? JSONParser.parse(bytes) { collect(json) } }
        return names
    }

    /// Seeds named that cannot be read, and quoted sentences that do not occur verbatim.
    private static func quoteFindings(specset: [UInt8], files: [(path: String, bytes: [UInt8])], documents: inout SourceDocuments,
                                      sources: String) -> [LintFinding] {
        var findings: [LintFinding] = []
        if let listed = (try? JSONParser.parse(specset))?["products"]?.objectValue {
            for (product, entry) in listed {
                if let seed = entry["seed"]?.stringValue, documents.text(.seed(seed)) == nil {
                    findings.append(LintFinding(file: "specset.json", pointer: JSONPointer(tokens: ["products", product, "seed"]),
                                                message: "seed file \(seed) not found in \(sources)"))
                }
            }
        }
        for (path, bytes) in files {
            guard let json = try? JSONParser.parse(bytes) else { continue }
            let seed = json["seed"]?.stringValue
            if let seed, documents.text(.seed(seed)) == nil {
                findings.append(LintFinding(file: path, pointer: JSONPointer(tokens: ["seed"]),
                                            message: "seed file \(seed) not found in \(sources)"))
            }
            checkSources(json, at: .root, defaultSeed: seed, file: path, documents: &documents, into: &findings)
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

    /// `$PUSHPROOF_SHARED`, else `shared` beside the package root of the spec directory or one
    /// or two levels up (git worktrees); nil when there is none (a user's clone).
    public static func defaultSourcesDirectory(specDirectory: String) -> String? {
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
                                     documents: inout SourceDocuments, into findings: inout [LintFinding]) {
        switch node {
        case .object(let object):
            for (key, value) in object.entries {
                let here = pointer.appending(key)
                if key == "source" || key == "x-source", let source = value.objectValue, let sentence = source["sentence"]?.stringValue {
                    let reference = source["reference"]?.stringValue
                    let seed = source["seed"]?.stringValue ?? (reference == nil ? defaultSeed : nil)
                    let text: String?
                    let name: String
                    if let reference { text = documents.text(.reference(reference)); name = "reference " + reference }
                    else if let seed { text = documents.text(.seed(seed)); name = "seed " + seed }
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

/// What `SpecLinter.lint` found, and whether the quote check ran.
public struct SpecLintReport: Sendable {
    public var findings: [LintFinding]
    /// Why quoted sentences were not checked (no product documents found), or nil when they were.
    public var quoteCheckSkipped: String?
}

/// The product documents (seeds) and protocol references sources quote, read once per lint run.
/// `directory` may be a folder holding `seeds/` and `reference/` (shared/), a seeds folder
/// itself (shared/seeds, whose sibling `reference/` is read for references), or a flat folder
/// holding both kinds: a name is looked up in each of those places.
struct SourceDocuments {
    enum Name: Hashable {
        case seed(String)
        case reference(String)
    }

    private let folders: (seeds: [URL], references: [URL])
    private var texts: [Name: String?] = [:]

    init(directory: String?) {
        guard let directory else { folders = ([], []); return }
        let root = URL(fileURLWithPath: directory)
        folders = ([root.appendingPathComponent("seeds"), root],
                   [root.appendingPathComponent("reference"), root, root.deletingLastPathComponent().appendingPathComponent("reference")])
    }

    mutating func holdsAny(of names: [Name]) -> Bool {
        for name in Set(names) where text(name) != nil { return true }
        return false
    }

    mutating func text(_ name: Name) -> String? {
        if let cached = texts[name] { return cached }
        let (file, candidates): (String, [URL])
        switch name {
        case .seed(let seed): (file, candidates) = (seed, folders.seeds)
        case .reference(let reference): (file, candidates) = (reference, folders.references)
        }
        // A name is a file name, never a path out of the folder.
        guard !file.isEmpty, !file.contains("/") else { return nil }
        let text = candidates.lazy.compactMap { FileManager.default.contents(atPath: $0.appendingPathComponent(file).path) }
            .first.map { String(decoding: $0, as: UTF8.self) }
        texts[name] = text
        return text
    }
}
