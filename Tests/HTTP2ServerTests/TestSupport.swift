// Shared pieces for the live tests: a switchable echo handler, a server scoped to one test,
// external client tools (curl, nghttp, h2load) and a raw socket client.
import Foundation
import Glibc
import HTTP2Server
import HTTPCore
import Synchronization
import Testing

final class ArrivalCounter: Sendable {
    let count = Atomic<Int>(0)

    /// Polls until `expected` requests arrived or about 5 s passed.
    func wait(for expected: Int) -> Bool {
        for _ in 0..<500 {
            if count.load(ordering: .relaxed) >= expected { return true }
            usleep(10_000)
        }
        return false
    }
}

/// Echoes the request as text. Request headers switch behaviour:
/// `x-empty` → 200 with no body; `x-response-bytes: N` → an N-byte body; `x-status: N`; `x-delay-ms: N`;
/// `x-action: goaway | reset | close | maxstreams`.
struct EchoHandler: HTTPHandler {
    var maxConcurrentStreams: UInt32 = 1000
    /// Counts requests as they reach the handler (before any delay).
    var arrivals: ArrivalCounter? = nil

    func initialMaxConcurrentStreams() -> UInt32 { maxConcurrentStreams }

    func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        arrivals?.count.add(1, ordering: .relaxed)
        var response = HTTPResponse(status: Int(request.header("x-status") ?? "") ?? 200)
        if let delay = request.header("x-delay-ms").flatMap(UInt64.init) { response.delayNanos = delay * 1_000_000 }
        switch request.header("x-action") {
        case "goaway":
            response.actions = [.goAway(errorCode: HTTP2ErrorCode.enhanceYourCalm, debugData: Array(#"{"reason":"TooManyRequests"}"#.utf8))]
        case "reset": response.actions = [.resetStream(errorCode: HTTP2ErrorCode.refusedStream)]
        case "close": response.actions = [.closeConnection]
        case "maxstreams": response.actions = [.setMaxConcurrentStreams(7)]
        default: break
        }
        if let size = request.header("x-response-bytes").flatMap(Int.init) {
            response.body = patternBytes(size)
            return response
        }
        if request.header("x-empty") != nil {
            response.headers = [HTTPHeader("apns-id", "00000000-0000-0000-0000-000000000001")]
            return response
        }
        var text = "method=\(request.method)\npath=\(request.path)\nversion=\(request.version.rawValue)\n"
        text += "tls=\(request.isTLS)\nstream=\(request.streamID)\nauthority=\(request.authority ?? "")\n"
        if let certificate = connection.clientCertificateDER {
            text += "clientcert=\(certificate.map { String($0, radix: 16) }.joined(separator: ":"))\n"
        }
        for header in request.headers { text += "h:\(header.name)=\(header.value)\n" }
        text += "body=\(String(decoding: request.body, as: UTF8.self))\n"
        response.headers = [HTTPHeader("content-type", "text/plain")]
        response.body = Array(text.utf8)
        return response
    }
}

/// Runs `body` against a started server and always shuts it down.
func withServer<T>(handler: any HTTPHandler = EchoHandler(), host: String = "127.0.0.1",
                   tls: TLSConfiguration? = nil,
                   configuration: ServerConfiguration = ServerConfiguration(threads: 2),
                   _ body: (HTTPServer, Int) throws -> T) throws -> T {
    let server = HTTPServer(listeners: [ListenerConfiguration(host: host, port: 0, tls: tls, handler: handler)],
                            configuration: configuration)
    let bound = try server.start()
    defer { server.shutdown(gracePeriod: .seconds(2)) }
    return try body(server, bound[0].port)
}

struct ToolResult {
    var status: Int32
    var outputBytes: [UInt8]
    var error: String
    /// Decoded on demand: repairing megabytes of binary output as UTF-8 is slow.
    var output: String { String(decoding: outputBytes, as: UTF8.self) }
}

/// Runs a command-line client to completion, optionally feeding it `input`.
func runTool(_ executable: String, _ arguments: [String], input: [UInt8]? = nil) throws -> ToolResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    let inputPipe = input.map { _ in Pipe() }
    if let inputPipe { process.standardInput = inputPipe }
    try process.run()
    if let input, let inputPipe {
        inputPipe.fileHandleForWriting.write(Data(input))
        try inputPipe.fileHandleForWriting.close()
    }
    // Read before waiting so a chatty tool cannot block on a full pipe.
    let outData = output.fileHandleForReading.readDataToEndOfFile()
    let errData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolResult(status: process.terminationStatus, outputBytes: [UInt8](outData),
                      error: String(decoding: errData, as: UTF8.self))
}

func curl(_ arguments: [String]) throws -> ToolResult {
    try runTool("/usr/bin/curl", ["-sS", "--max-time", "10"] + arguments)
}

/// A blocking loopback TCP client for malformed input.
final class RawClient {
    let fd: Int32

    init(port: Int, host: String = "127.0.0.1") throws {
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
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard connected == 0 else {
            close(fd)
            throw RawClientError.connect
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until the server closes (or `timeoutMicroseconds` of silence, 5 s by default).
    /// `closedByPeer` tells which.
    func readToEnd(timeoutMicroseconds: Int = 5_000_000) -> (bytes: [UInt8], closedByPeer: Bool) {
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

enum RawClientError: Error { case socket, connect }

/// HTTP/2 frames (RFC 9113 §4.1) found in a byte stream, in order.
func parseFrames(_ bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])] {
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

let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
/// An empty SETTINGS frame.
let emptySettingsFrame: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]

/// `count` bytes of 0, 1, ..., 250, 0, 1, ...: a body whose corruption or reordering shows.
func patternBytes(_ count: Int) -> [UInt8] {
    let period = (0..<251).map { UInt8($0) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    while bytes.count < count { bytes.append(contentsOf: period.prefix(count - bytes.count)) }
    return bytes
}
