import ScenarioRunner

/// `pushproof adapter`: the reference sender speaking the adapter protocol on stdin and
/// stdout, so `run --sender-cmd 'pushproof adapter'` plays it out of process, as a team's
/// own sender would be.
struct AdapterCommand: Subcommand {
    static let spec = CommandSpec(
        name: "adapter",
        abstract: "The reference sender behind the adapter protocol, on stdin and stdout (for run --sender-cmd).",
        positionals: [],
        options: [],
        discussion: """
        Reads one JSON request a line on stdin and answers each with one JSON line on stdout:
        hello, setup, event, devices, shutdown (docs/adapter-protocol.md, protocol 1). It
        announces the products poolse, yama and concierge, and the capability "devices".
        Exit status: 0 after shutdown or at the end of stdin; 1 when stdout cannot be written.

        EXAMPLES:
          pushproof run Specs/scenarios --sender-cmd 'pushproof adapter'
        """)

    init(_ arguments: ParsedArguments) throws {
        if let stray = arguments.positionals.first { throw UsageError(message: "unexpected argument '\(stray)'") }
    }

    func run() async -> Int32 {
        await ReferenceAdapter(version: PushproofCommand.version).serve(input: 0, output: 1)
    }
}
