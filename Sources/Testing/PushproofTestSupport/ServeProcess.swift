import Foundation
import Glibc
import Synchronization

/// A temporary directory removed when the value is released.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "test") throws {
        let template = NSTemporaryDirectory() + "pushproof-\(label)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let created = bytes.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: created)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        let target = file(name)
        try text.write(toFile: target, atomically: true, encoding: .utf8)
        return target
    }
}

/// The built `pushproof` executable: beside the test bundle in `.build/<triple>/<config>/`.
public func pushproofExecutable() -> String {
    if let override = ProcessInfo.processInfo.environment["PUSHPROOF_BIN"] { return override }
    let bundle = Bundle.main.bundleURL.deletingLastPathComponent()
    for candidate in [bundle, bundle.deletingLastPathComponent()] {
        let path = candidate.appendingPathComponent("pushproof").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    // `swift test` runs the bundle from .build/<triple>/debug: fall back to the package layout.
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/pushproof").path
}

public struct ServeError: Error, CustomStringConvertible {
    public var description: String
}

/// A real `pushproof serve` process on loopback (port 0 for both listeners), stopped with
/// SIGTERM when the test is done. Its ready line tells the chosen ports.
public final class ServeProcess: @unchecked Sendable {
    // @unchecked: the Process and pipes are touched only by the test that owns this value.
    public let process = Process()
    public let port: Int
    public let adminPort: Int?
    public let readyLine: String
    public let isTLS: Bool
    /// Where both listeners are (127.0.0.1 unless in a namespace).
    public let host: String
    private let stderrPipe = Pipe()
    private let stdoutPipe = Pipe()
    /// Held open for the gateway's life: if the test process dies, the gateway reads EOF and
    /// stops (--stop-on-stdin-eof) instead of outliving it.
    private let stdinPipe = Pipe()

    /// Starts `pushproof serve ARGUMENTS --listen 127.0.0.1:0 --admin 127.0.0.1:0` in
    /// `directory` (where the self-signed certificate is written).
    /// - Parameter openFileLimit: run it under `prlimit --nofile=N:N` (soft and hard), to
    ///   test what happens when descriptors run out.
    /// - Parameter namespace: run it in that network namespace (`NetworkNamespaces.exec`), both
    ///   listeners on `host` there: `ports` fixed, since several replicas share one admin port
    ///   behind one name.
    public init(_ arguments: [String], directory: String, admin: Bool = true, openFileLimit: Int? = nil,
                namespace: [String]? = nil, host: String = "127.0.0.1", ports: (push: Int, admin: Int) = (0, 0)) throws {
        self.host = host
        var full = ["serve", "--listen", "\(host):\(ports.push)"] + (admin ? ["--admin", "\(host):\(ports.admin)"] : ["--admin", "off"])
        full += ["--stop-on-stdin-eof"] + arguments
        if let namespace {
            process.executableURL = URL(fileURLWithPath: namespace[0])
            full = Array(namespace.dropFirst()) + [pushproofExecutable()] + full
        } else if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            full = ["--nofile=\(openFileLimit):\(openFileLimit)", pushproofExecutable()] + full
        } else {
            process.executableURL = URL(fileURLWithPath: pushproofExecutable())
        }
        process.arguments = full
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        try process.run()
        // The ready line, or the process's end (a startup error) if that comes first.
        var line = ""
        let handle = stdoutPipe.fileHandleForReading
        while !line.hasSuffix("\n") {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line += String(decoding: chunk, as: UTF8.self)
        }
        guard line.contains("ready") else {
            process.waitUntilExit()
            let errorText = String(decoding: stderrPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw ServeError(description: "pushproof serve did not start (exit \(process.terminationStatus)): \(errorText)")
        }
        readyLine = line.trimmingCharacters(in: .whitespacesAndNewlines)
        isTLS = readyLine.contains("https://")
        port = Self.port(after: isTLS ? "https://\(host):" : "http://\(host):", in: readyLine) ?? 0
        adminPort = Self.port(after: "admin http://\(host):", in: readyLine)
    }

    private static func port(after marker: String, in line: String) -> Int? {
        guard let range = line.range(of: marker) else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// The self-signed certificate the ready line names (`cert pushproof-cert-<port>.pem`),
    /// as an absolute path; nil with --h2c or --cert.
    public var certificatePath: String? {
        guard let range = readyLine.range(of: " cert ") else { return nil }
        let path = String(readyLine[range.upperBound...].prefix { $0 != " " })
        return path.hasPrefix("/") ? path : (process.currentDirectoryURL?.path ?? ".") + "/" + path
    }

    /// The server's resident memory (VmRSS in /proc/PID/status), in bytes. prlimit execs the
    /// server, so the process id is the server's either way.
    public var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes * 1024
    }

    /// CPU time the server has used (user + system, all threads), in seconds.
    public var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ") else { return 0 }
        // Fields after the command name start at field 3 (state); utime and stime are 14 and 15.
        let fields = stat[afterName.upperBound...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    public var baseURL: String { "\(isTLS ? "https" : "http")://\(host):\(port)" }
    public var adminURL: String { "http://\(host):\(adminPort ?? 0)" }

    /// Closes the gateway's standard input, as the death of the test process would.
    public func closeStandardInput() {
        try? stdinPipe.fileHandleForWriting.close()
    }

    /// Waits up to `seconds` for the process to end by itself; false if it is still running.
    public func waitForExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        return !process.isRunning
    }

    /// Sends SIGTERM and waits; returns the exit status and what it printed on stderr.
    @discardableResult
    /// Sends `signal` and waits for the gateway to exit: at most `patience` seconds (its own
    /// shutdown grace is 5 s), then SIGKILL, so a gateway that does not stop fails its test
    /// (status 137 and a note in `stderr`) instead of stalling the whole run.
    public func stop(signal: Int32 = SIGTERM, patience: Double = 30) -> (status: Int32, stderr: String) {
        if process.isRunning { kill(process.processIdentifier, signal) }
        // Standard error is read meanwhile, so a full pipe cannot hold the gateway up.
        let reader = DispatchQueue(label: "serve-stderr")
        let errorBytes = CollectedOutput()
        let drained = DispatchSemaphore(value: 0)
        let handle = stderrPipe.fileHandleForReading
        reader.async {
            let data = handle.readDataToEndOfFile()
            errorBytes.data.withLock { $0 = data }
            drained.signal()
        }
        let deadline = Date().addingTimeInterval(patience)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        var note = ""
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            note = "\n(ServeProcess: the gateway did not exit within \(patience) s of signal \(signal); killed)"
        }
        process.waitUntilExit()
        _ = drained.wait(timeout: .now() + 5)
        let errorText = errorBytes.data.withLock { String(decoding: $0, as: UTF8.self) }
        return (process.terminationStatus, errorText + note)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// What a reader thread collected, handed back under a lock.
private final class CollectedOutput: Sendable {
    let data = Mutex(Data())
}

/// Runs `pushproof ARGUMENTS` to completion.
public func pushproof(_ arguments: [String], directory: String? = nil, input: [UInt8]? = nil) throws -> ToolResult {
    try runTool(pushproofExecutable(), arguments, input: input, currentDirectory: directory)
}
