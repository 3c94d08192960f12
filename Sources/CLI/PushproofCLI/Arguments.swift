/// A small command-line parser in the shape of swift-argument-parser (which we cannot
/// depend on): each subcommand declares its options once; the declaration drives parsing,
/// `--help` and the usage errors (exit 64).
struct OptionSpec: Sendable {
    enum Kind: Sendable {
        /// `--name VALUE` or `--name=VALUE`.
        case value(placeholder: String)
        /// `--name` alone.
        case flag
    }

    var name: String
    var kind: Kind
    var help: String
    var defaultDescription: String?
    /// May be given more than once (values accumulate).
    var repeatable = false

    static func value(_ name: String, _ placeholder: String, _ help: String, default defaultDescription: String? = nil,
                      repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder), help: help, defaultDescription: defaultDescription,
                   repeatable: repeatable)
    }

    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, help: help)
    }
}

struct CommandSpec: Sendable {
    var name: String
    var abstract: String
    /// Positional arguments, e.g. ["RECORDING"]; a trailing "?" marks one optional, a trailing
    /// "…" (last only) one or more.
    var positionals: [String] = []
    var options: [OptionSpec]
    var discussion: String = ""

    var helpText: String {
        var out = "OVERVIEW: \(abstract)\n\nUSAGE: pushproof \(name)"
        if !options.isEmpty { out += " [options]" }
        for positional in positionals { out += positional.hasSuffix("?") ? " [\(positional.dropLast())]" : " \(positional)" }
        out += "\n\nOPTIONS:\n"
        let rows = options.map { option -> (String, String) in
            var left = "--\(option.name)"
            if case .value(let placeholder) = option.kind { left += " \(placeholder)" }
            var right = option.help
            if let d = option.defaultDescription { right += " (default: \(d))" }
            if option.repeatable { right += " (repeatable)" }
            return (left, right)
        } + [("-h, --help", "Show this help.")]
        let width = min(32, rows.map(\.0.count).max() ?? 0) + 2
        for (left, right) in rows {
            if left.count + 2 > width {
                out += "  \(left)\n" + String(repeating: " ", count: width + 2) + right + "\n"
            } else {
                out += "  " + left + String(repeating: " ", count: width - left.count) + right + "\n"
            }
        }
        if !discussion.isEmpty { out += "\n" + discussion + "\n" }
        return out
    }
}

struct UsageError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The parsed command line of one subcommand.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var helpRequested = false

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError(message: "--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return n
    }

    func double(_ name: String, default defaultValue: Double, range: ClosedRange<Double>) throws(UsageError) -> Double {
        guard let text = value(name) else { return defaultValue }
        guard let n = Double(text), range.contains(n) else {
            throw UsageError(message: "--\(name) takes a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return n
    }

    static func parse(_ arguments: [String], for command: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            if argument == "-h" || argument == "--help" { parsed.helpRequested = true; continue }
            guard argument.hasPrefix("--") else {
                throw UsageError(message: "unknown option '\(argument)' for 'pushproof \(command.name)'")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                var message = "unknown option '--\(name)' for 'pushproof \(command.name)'"
                if let near = command.options.map(\.name).min(by: { editDistance($0, name) < editDistance($1, name) }),
                   editDistance(near, name) <= 2 {
                    message += "; did you mean '--\(near)'?"
                }
                throw UsageError(message: message)
            }
            switch option.kind {
            case .flag:
                if inlineValue != nil { throw UsageError(message: "--\(name) takes no value") }
                parsed.flags.insert(name)
            case .value(let placeholder):
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError(message: "--\(name) needs a value (\(placeholder))") }
                    value = arguments[index]
                    index += 1
                }
                if !option.repeatable, parsed.values[name] != nil {
                    throw UsageError(message: "--\(name) was given more than once")
                }
                parsed.values[name, default: []].append(value)
            }
        }
        if parsed.helpRequested { return parsed }
        let required = command.positionals.filter { !$0.hasSuffix("?") }
        if parsed.positionals.count < required.count {
            throw UsageError(message: "missing \(required[parsed.positionals.count]) for 'pushproof \(command.name)'")
        }
        let variadic = command.positionals.last.map { $0.hasSuffix("…") || $0.hasSuffix("…?") } ?? false
        if parsed.positionals.count > command.positionals.count, !variadic {
            throw UsageError(message: "unexpected argument '\(parsed.positionals[command.positionals.count])' for 'pushproof \(command.name)'")
        }
        return parsed
    }
}

/// Levenshtein distance, for "did you mean" on mistyped options.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}

/// `host:port`, `[v6]:port`, or `:port` (loopback).
struct HostPort: Equatable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init(parsing text: String, option: String) throws(UsageError) {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw UsageError(message: "--\(option): '\(text)' is not [IPv6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw UsageError(message: "--\(option): '\(text)' is not HOST:PORT")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        if host.isEmpty { host = "127.0.0.1" }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw UsageError(message: "--\(option): port '\(portText)' is not a number from 0 to 65535")
        }
        self.host = String(host)
        self.port = port
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
