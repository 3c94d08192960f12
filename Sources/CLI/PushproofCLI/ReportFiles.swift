import Foundation

/// A command's optional report files (--json, --junit, --html, ...): each is written if asked
/// for, and a file that cannot be written is said on standard error and remembered, so the
/// command can exit 2 after writing the others.
struct ReportFiles {
    let command: String
    private(set) var failed = false

    init(command: String) { self.command = command }

    mutating func write(_ path: String?, _ text: @autoclosure () -> String) {
        guard let path else { return }
        write(path) { try Data(text().utf8).write(to: URL(fileURLWithPath: path)) }
    }

    /// Runs `body`, which writes `path` its own way, once the folder `path` names exists
    /// (`--html out/run.html` makes `out/`).
    mutating func write(_ path: String, using body: () throws -> Void) {
        do {
            try createParentDirectory(of: path)
            try body()
        } catch {
            printError("pushproof \(command): cannot write \(path): \(error.localizedDescription)")
            failed = true
        }
    }
}
