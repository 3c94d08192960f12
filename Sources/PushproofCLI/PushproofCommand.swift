#if canImport(Glibc)
import Glibc
#endif

/// Exit codes shared by every subcommand (sysexits(3) for usage, as swift-argument-parser does).
public enum ExitCode {
    public static let success: Int32 = 0
    public static let failure: Int32 = 1
    public static let ioError: Int32 = 2
    public static let usage: Int32 = 64
}

public func exitProcess(with code: Int32) -> Never {
    exit(code)
}

public enum PushproofCommand {
    public static let usage = """
    usage: pushproof <command> [options]

    commands:
      serve      run the mock APNs + FCM gateway
      help       show this text

    Run 'pushproof <command> --help' for a command's options.
    """

    public static func main(_ arguments: [String]) async -> Int32 {
        guard let command = arguments.first else {
            printError(usage)
            return ExitCode.usage
        }
        switch command {
        case "help", "--help", "-h":
            print(usage)
            return ExitCode.success
        default:
            printError("pushproof: unknown command '\(command)'\n\n\(usage)")
            return ExitCode.usage
        }
    }
}

func printError(_ message: String) {
    var line = message
    if !line.hasSuffix("\n") { line += "\n" }
    // Write(2) to fd 2 directly: the C `stderr` global is not concurrency-safe in Swift 6.
    _ = line.withCString { write(2, $0, strlen($0)) }
}
