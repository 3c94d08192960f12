import JSON
import Reports
import SpecValidator

/// `pushproof specs lint [DIR]`: checks the spec files themselves.
struct SpecsLintCommand: Subcommand {
    static let spec = CommandSpec(
        name: "specs lint",
        abstract: "Check spec files: schema errors, bad pointers, unknown keywords, sources, overlapping matches.",
        positionals: ["DIR?"],
        options: [
            .value("sources", "DIR", "Where the product documents (seeds) and protocol references are, to check every quoted "
                   + "sentence: a folder holding seeds/ and reference/, a seeds folder, or one holding the files themselves.",
                   default: "$PUSHPROOF_SHARED, else ../shared beside the spec directory's repository"),
            .flag("json", "Print the findings as JSON."),
        ],
        discussion: """
        DIR defaults to Specs. Prints one line per finding: file, JSON pointer into it, what is wrong.
        The product documents are not part of the repository: when none are found, the quote
        check is skipped (one line says so) and every other check still runs.
        Exit status: 0 when the specs are clean, 1 when anything was found, 64 on a usage error.
        """)

    let directory: String
    let sources: String?
    let json: Bool

    init(_ arguments: ParsedArguments) throws {
        directory = arguments.positionals.first ?? "Specs"
        sources = arguments.value("sources")
        json = arguments.has("json")
    }

    func run() async -> Int32 {
        let report = SpecLinter.lint(directory: directory, sourcesDirectory: sources)
        let findings = report.findings
        // On standard error with --json, so the JSON on standard output stays one document.
        if let skipped = report.quoteCheckSkipped {
            let line = "specs lint: quote check skipped: \(skipped)"
            if json { printError(line) } else { print(line) }
        }
        if json {
            print(JSONValue.array(findings.map { $0.json() }).serialized())
        } else {
            for finding in findings { print(finding.description) }
            print(findings.isEmpty ? "\(directory): no findings" : "\(directory): \(Format.counted(findings.count, "finding"))")
        }
        return findings.isEmpty ? ExitCode.success : ExitCode.failure
    }
}
