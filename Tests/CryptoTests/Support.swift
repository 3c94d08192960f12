import Foundation
import Testing

/// Runs the `openssl` command line (and other tools) for cross-checks, in a scratch directory
/// removed when the test ends.
final class Scratch {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("crypto-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func write(_ name: String, _ text: String) throws { try text.write(toFile: path(name), atomically: true, encoding: .utf8) }
    func write(_ name: String, bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path(name))) }
    func read(_ name: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path(name)))) }
    func readText(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    struct Outcome {
        var status: Int32
        var output: String
    }

    /// Runs `tool` with `arguments`, stdout and stderr together.
    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    /// Runs `openssl` and requires it to succeed.
    @discardableResult
    func openssl(_ arguments: String...) throws -> String {
        try openssl(arguments)
    }

    @discardableResult
    func openssl(_ arguments: [String]) throws -> String {
        let outcome = try run("openssl", arguments)
        try #require(outcome.status == 0, "openssl \(arguments.joined(separator: " ")) failed: \(outcome.output)")
        return outcome.output
    }
}
