// Pieces every live test shares: external client tools (curl, nghttp, h2load), a raw socket
// client for malformed input, HTTP/2 frame parsing, temporary directories, and a real
// `pushproof serve` process. A library target of its own so each test module uses one copy.
import Foundation
import Glibc
import Synchronization

public struct ToolResult: Sendable {
    public var status: Int32
    public var output: String
    public var error: String
    public var outputBytes: [UInt8] = []
}

/// The python3 on PATH, for the tests that read our output with a third-party Python package.
public func python3OnPath() -> URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("python3") }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// What `make test-data` fetched (Scripts/fetch-*.sh): $PUSHPROOF_TEST_DATA, else the checkout's .build/test-data.
public func testDataDirectory(repositoryRoot: URL) -> URL {
    ProcessInfo.processInfo.environment["PUSHPROOF_TEST_DATA"].map { URL(fileURLWithPath: $0) }
        ?? repositoryRoot.appendingPathComponent(".build/test-data")
}

/// Runs a command-line client to completion, optionally feeding it `input`.
/// Runs a tool to completion. A tool still running after `timeoutSeconds` is killed (SIGKILL),
/// so a test that wrongly starts something long-lived fails instead of hanging the suite.
public func runTool(_ executable: String, _ arguments: [String], input: [UInt8]? = nil,
                    currentDirectory: String? = nil, timeoutSeconds: Int = 120) throws -> ToolResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    let inputPipe = input.map { _ in Pipe() }
    if let inputPipe { process.standardInput = inputPipe }
    try process.run()
    let pid = process.processIdentifier
    let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(timeoutSeconds), execute: watchdog)
    defer { watchdog.cancel() }
    if let input, let inputPipe {
        inputPipe.fileHandleForWriting.write(Data(input))
        try inputPipe.fileHandleForWriting.close()
    }
    // Read before waiting so a chatty tool cannot block on a full pipe.
    let outData = output.fileHandleForReading.readDataToEndOfFile()
    let errData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolResult(status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
                      error: String(decoding: errData, as: UTF8.self), outputBytes: [UInt8](outData))
}

public func curl(_ arguments: [String]) throws -> ToolResult {
    try runTool("/usr/bin/curl", ["-sS", "--max-time", "10"] + arguments)
}

/// `connect(2)` to a `sockaddr_in` or `sockaddr_in6`, its length taken from its type.
private func connectSocket<Address>(_ fd: Int32, to address: Address) -> Int32 {
    withUnsafePointer(to: address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
    }
}

/// A blocking loopback TCP client for malformed input.
public final class RawClient {
    public let fd: Int32

    public init(port: Int, host: String = "127.0.0.1") throws {
        let isIPv6 = host.contains(":")
        fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawClientError.socket }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            connected = connectSocket(fd, to: address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            connected = connectSocket(fd, to: address)
        }
        // No close here: `fd` is set, so a throw runs deinit, which closes it (closing it here
        // too could close a descriptor another thread had opened under that number meanwhile).
        guard connected == 0 else { throw RawClientError.connect }
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until the server closes (or `timeoutMicroseconds` of silence, 5 s by default).
    /// `closedByPeer` tells which.
    public func readToEnd(timeoutMicroseconds: Int = 5_000_000) -> (bytes: [UInt8], closedByPeer: Bool) {
        var timeout = timeval(tv_sec: timeoutMicroseconds / 1_000_000, tv_usec: timeoutMicroseconds % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
            } else {
                // 0: orderly close; ECONNRESET also means the server closed.
                return (received, count == 0 || errno == ECONNRESET)
            }
        }
    }
}

public enum RawClientError: Error { case socket, connect }

/// HTTP/2 frames (RFC 9113 §4.1) found in a byte stream, in order.
public func parseFrames(_ bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])] {
    var frames: [(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])] = []
    var index = 0
    while index + 9 <= bytes.count {
        let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
        let streamID = (UInt32(bytes[index + 5]) << 24 | UInt32(bytes[index + 6]) << 16
            | UInt32(bytes[index + 7]) << 8 | UInt32(bytes[index + 8])) & 0x7fff_ffff
        guard index + 9 + length <= bytes.count else { break }
        frames.append((bytes[index + 3], bytes[index + 4], streamID, Array(bytes[(index + 9)..<(index + 9 + length)])))
        index += 9 + length
    }
    return frames
}

/// One HTTP/2 frame (RFC 9113 §4.1): 24-bit length, type, flags, 31-bit stream id, payload.
public func http2Frame(type: UInt8, flags: UInt8, streamID: UInt32, _ payload: [UInt8]) -> [UInt8] {
    [UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), type, flags,
     UInt8(streamID >> 24 & 0x7f), UInt8(streamID >> 16 & 0xff), UInt8(streamID >> 8 & 0xff), UInt8(streamID & 0xff)] + payload
}

public let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
/// An empty SETTINGS frame.
public let emptySettingsFrame: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]

/// Runs each tool invocation on a thread of its own, all at once (segments of one run must
/// overlap in time), and returns their results in order once every one has ended.
public func runConcurrently(_ runs: [@Sendable () throws -> ToolResult]) -> [Result<ToolResult, any Error>] {
    let results = Mutex([Result<ToolResult, any Error>?](repeating: nil, count: runs.count))
    let group = DispatchGroup()
    for (index, run) in runs.enumerated() {
        group.enter()
        Thread {
            let result = Result { try run() }
            results.withLock { $0[index] = result }
            group.leave()
        }.start()
    }
    group.wait()
    return results.withLock { $0.map { $0! } }
}
