import Driver
import JSON
import RecordCheck
import RecordLine
import Reports

/// `pushproof show RECORDING`: a recording as a table people can read.
struct ShowCommand: Subcommand {
    static let spec = CommandSpec(
        name: "show",
        abstract: "Print a recording as a table: one row per request with its answer and verdict.",
        positionals: ["RECORDING"],
        options: [
            .value("last", "N", "Only the last N requests.", default: "all"),
            .value("route", "ROUTE", "Only requests of this route (apns, fcm, oauth, unknown)."),
        ],
        discussion: """
        The verdict column is what the gateway recorded: it judges pushes only when it runs with
        --specs. Without, the column holds only gateway warnings, and a note says so;
        'pushproof check RECORDING' judges any recording against the specs afterwards.
        """)

    let path: String
    let last: Int?
    let route: String?

    init(_ arguments: ParsedArguments) throws {
        path = arguments.positionals[0]
        last = arguments.value("last") == nil ? nil : try arguments.int("last", default: 0, range: 1...Int(Int32.max))
        route = arguments.value("route")
    }

    func run() async -> Int32 {
        let lines: LineReader
        do { lines = try LineReader(path: path) } catch {
            printError("pushproof show: \(error)")
            return ExitCode.ioError
        }
        // Rows are printed as they are read; only `--last N` keeps rows, N of them, in a ring.
        print("   seq  route protocol path                                          status reason                verdict")
        var kept: [String] = []
        var oldest = 0
        var shown = 0
        var unreadable = FirstExamples<(line: Int, problem: String)>(kept: 10)
        var judged = 0
        var lineNumber = 0
        while let read = lines.next() {
            lineNumber += 1
            let line: [UInt8]
            switch read {
            case .text(let text): line = text
            case .tooLong(let bytes):
                unreadable.add((lineNumber, "a line of \(bytes) bytes, over the \(LineReader.maxLineBytes >> 20) MiB a record line can hold"))
                continue
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let record: RecordedExchange
            do { record = try RecordedExchange(decoding: line) } catch {
                unreadable.add((lineNumber, error.description))
                continue
            }
            if let route, route != record.route.rawValue { continue }
            var verdict = ""
            if let judgement = record.verdict?.judgement {
                judged += 1
                let count = judgement.violations.count
                if !judgement.covered {
                    verdict = "not covered by any spec"
                } else {
                    verdict = (judgement.spec ?? "unmatched") + (count == 0 ? " ok" : " \(Format.counted(count, "violation"))")
                }
            }
            let warnings = record.gatewayWarnings
            if !warnings.isEmpty {
                verdict += (verdict.isEmpty ? "" : ", ") + Format.counted(warnings.count, "gateway warning")
            }
            let path = record.path
            let shortPath = path.count > 44 ? String(path.prefix(30)) + "…" + String(path.suffix(8)) : path
            let seq = record.sequence.map(String.init) ?? "?"
            let status = record.status.map(String.init) ?? "?"
            var row = seq.leftPadded(6) + "  " + record.route.rawValue.padding(to: 6) + (record.protocol ?? "?").padding(to: 9)
                + shortPath.padding(to: 46) + status.leftPadded(4) + "  " + (record.reason ?? "").padding(to: 22) + verdict
            // The gateway's own explanation of a refused credential, under its row.
            if let detail = record.detail { row += "\n" + String(repeating: " ", count: 8) + "detail: " + detail }
            shown += 1
            if let last {
                if kept.count < last { kept.append(row) } else { kept[oldest] = row; oldest = (oldest + 1) % last }
            } else {
                print(row)
            }
        }
        for index in kept.indices { print(kept[(oldest + index) % kept.count]) }
        if judged == 0, shown > 0 {
            print("(no spec verdicts: the gateway ran without --specs; 'pushproof check \(path)' judges this recording)")
        }
        for (line, problem) in unreadable.first { printError("pushproof show: line \(line): \(problem)") }
        if !unreadable.isEmpty { printError("pushproof show: " + Format.counted(unreadable.count, "unreadable line") + " skipped") }
        return unreadable.isEmpty ? ExitCode.success : ExitCode.ioError
    }
}
