#if canImport(Glibc)
import Descriptors
import Driver
import Glibc
import Reports
#endif

/// Exit codes shared by every subcommand (sysexits(3) for usage, as swift-argument-parser does).
public enum ExitCode {
    public static let success: Int32 = 0
    /// Violations found, a threshold missed: the run judged the system under test and it failed.
    public static let failure: Int32 = 1
    /// Input or output could not be read or written (a missing recording, an unreadable spec).
    public static let ioError: Int32 = 2
    public static let usage: Int32 = 64
}

public func exitProcess(with code: Int32) -> Never {
    exit(code)
}

/// A subcommand: declared options (which drive parsing and `--help`), `validate` separate
/// from `run` as in swift-argument-parser.
protocol Subcommand: SendableMetatype {
    static var spec: CommandSpec { get }
    init(_ arguments: ParsedArguments) throws
    func run() async -> Int32
}

/// A subcommand's declaration and constructor, so the table needs no existential metatypes.
struct CommandEntry: Sendable {
    let spec: CommandSpec
    let make: @Sendable (ParsedArguments) throws -> any Subcommand

    init<C: Subcommand>(_ type: C.Type) {
        spec = C.spec
        make = { try C($0) }
    }

    /// A command whose arguments choose the type that runs it (`drive --scenario`).
    init(spec: CommandSpec, make: @escaping @Sendable (ParsedArguments) throws -> any Subcommand) {
        self.spec = spec
        self.make = make
    }
}

public enum PushproofCommand {
    static let subcommands: [CommandEntry] = [
        CommandEntry(ServeCommand.self),
        CommandEntry(CheckCommand.self),
        CommandEntry(ShowCommand.self),
        CommandEntry(SpecsLintCommand.self),
        CommandEntry(TokenCommand.self),
        CommandEntry(CredentialsCommand.self),
        CommandEntry(SendCommand.self),
        CommandEntry(spec: DriveCommand.spec, make: DriveCommand.make),
        CommandEntry(MergeCommand.self),
        CommandEntry(PlanCommand.self),
        CommandEntry(RunCommand.self),
        CommandEntry(AdapterCommand.self),
        CommandEntry(K8sRenderCommand.self),
        CommandEntry(K8sSegmentCommand.self),
        CommandEntry(K8sCollectCommand.self),
    ]

    public static var usage: String {
        var out = """
        pushproof: a conformance and load-testing suite for push-notification senders (APNs, FCM).

        USAGE: pushproof <command> [options]

        COMMANDS:

        """
        for command in subcommands {
            out += "  " + command.spec.name.padding(to: 14) + command.spec.abstract + "\n"
        }
        out += "  " + "help".padding(to: 14) + "Show this text, or a command's help: pushproof help <command>.\n"
        out += "\nRun 'pushproof <command> --help' for a command's options."
        return out
    }

    public static func main(_ arguments: [String]) async -> Int32 {
        guard let name = arguments.first else {
            printError(usage)
            return ExitCode.usage
        }
        var rest = Array(arguments.dropFirst())
        if name == "help" || name == "--help" || name == "-h" {
            guard let topic = rest.first else {
                print(usage)
                return ExitCode.success
            }
            return await main([topic, "--help"])
        }
        if name == "--version" || name == "version" {
            print("pushproof \(version)")
            return ExitCode.success
        }
        // Two-word commands ("specs lint") are looked up by their full name first.
        var command = subcommands.first { $0.spec.name == name }
        if command == nil, let second = rest.first, let found = subcommands.first(where: { $0.spec.name == "\(name) \(second)" }) {
            command = found
            rest.removeFirst()
        }
        // The first word of two-word commands alone ("pushproof k8s", "pushproof specs --help"):
        // name the commands it begins.
        let family = subcommands.filter { $0.spec.name.hasPrefix(name + " ") }
        if command == nil, !family.isEmpty {
            let list = family.map { "  " + $0.spec.name.padding(to: 14) + $0.spec.abstract }.joined(separator: "\n")
            let helpAsked = rest.first == "--help" || rest.first == "-h"
            let lead = helpAsked ? "" : "pushproof \(name): " + (rest.first.map { "unknown command '\(name) \($0)'; " } ?? "") + "give one of:\n"
            let text = lead + list + "\n\nRun 'pushproof \(family[0].spec.name) --help' for a command's options."
            if helpAsked { print(text) } else { printError(text) }
            return helpAsked ? ExitCode.success : ExitCode.usage
        }
        guard let command else {
            var message = "pushproof: unknown command '\(name)'"
            if let near = subcommands.map(\.spec.name).min(by: { editDistance($0, name) < editDistance($1, name) }),
               editDistance(near, name) <= 2 {
                message += "; did you mean '\(near)'?"
            }
            printError(message + "\n\n" + usage)
            return ExitCode.usage
        }
        let instance: any Subcommand
        do {
            let parsed = try ParsedArguments.parse(rest, for: command.spec)
            if parsed.helpRequested {
                print(command.spec.helpText)
                return ExitCode.success
            }
            instance = try command.make(parsed)
        } catch {
            printError("pushproof \(command.spec.name): \(error)\nRun 'pushproof \(command.spec.name) --help' for usage.")
            return ExitCode.usage
        }
        return await instance.run()
    }

    public static let version = "0.1.0"
}

func printError(_ message: String) {
    var line = message
    if !line.hasSuffix("\n") { line += "\n" }
    // Write(2) to fd 2 directly: the C `stderr` global is not concurrency-safe in Swift 6.
    writeAll(2, line)
}

/// Prints and flushes at once: a parent process waiting for a line (e.g. serve's ready line)
/// must not wait for stdio's buffer.
func printNow(_ message: String) {
    writeAll(1, message.hasSuffix("\n") ? message : message + "\n")
}

func writeAll(_ fd: Int32, _ text: String) {
    try? Descriptors.writeAll(fd, Array(text.utf8))  // nowhere left to report a failed write to stderr
}
