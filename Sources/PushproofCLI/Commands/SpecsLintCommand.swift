import JSON
import SpecValidator

/// `pushproof specs lint [DIR]`: checks the spec files themselves.
struct SpecsLintCommand: Subcommand {
    static let spec = CommandSpec(
        name: "specs lint",
        abstract: "Check spec files: schema errors, bad pointers, unknown keywords, sources, overlapping matches.",
        positionals: ["DIR?"],
        options: [
            .value("shared", "DIR", "Where the seeds and references are, to check every quoted sentence.",
                   default: "$PUSHPROOF_SHARED, else ../shared beside the package"),
            .flag("json", "Print the findings as JSON."),
        ],
        discussion: """
        DIR defaults to Specs. Prints one line per finding: file, JSON pointer into it, what is wrong.
        Exit status: 0 when the specs are clean, 1 when anything was found, 64 on a usage error.
        """)

    let directory: String
    let shared: String?
    let json: Bool

    init(_ arguments: ParsedArguments) throws {
        directory = arguments.positionals.first ?? "Specs"
        shared = arguments.value("shared")
        json = arguments.has("json")
    }

    func run() async -> Int32 {
        let findings = SpecLinter.lint(directory: directory, sharedDirectory: shared)
        if json {
            print(JSONValue.array(findings.map { $0.json() }).serialized())
        } else {
            for finding in findings { print(finding.description) }
            print(findings.isEmpty ? "\(directory): no findings" : "\(directory): \(findings.count) finding\(findings.count == 1 ? "" : "s")")
        }
        return findings.isEmpty ? ExitCode.success : ExitCode.failure
    }
}
