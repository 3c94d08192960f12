// A minimal HTTP/1.1 client for the gateway's control API (`pushproof serve --admin`), which
// listens on loopback in cleartext. Cold path: one short request per call, Connection: close.
import Foundation
import JSON
#if canImport(Glibc)
import Glibc
#endif

struct AdminError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Talks to `http://HOST:PORT` of a `pushproof serve --admin` listener.
struct AdminClient {
    let host: String
    let port: Int
    let baseURL: String

    /// Accepts `http://HOST:PORT` (an IP literal or localhost), with or without a trailing slash.
    init(url: String) throws(UsageError) {
        var rest = url
        guard rest.hasPrefix("http://") else {
            throw UsageError(message: "--admin: '\(url)' is not an http:// URL (the control API speaks cleartext)")
        }
        rest.removeFirst("http://".count)
        while rest.hasSuffix("/") { rest.removeLast() }
        let hostPort = try HostPort(parsing: rest, option: "admin")
        host = hostPort.host == "localhost" ? "127.0.0.1" : hostPort.host
        port = hostPort.port
        baseURL = "http://" + rest
    }

    /// `PUT /tokens/<token>` with `{"state": state}`: the gateway answers that token so from now on.
    func setTokenState(_ token: String, state: String) throws(AdminError) {
        let response = try request("PUT", "/tokens/" + token, body: "{\"state\":\"\(state)\"}")
        guard (200..<300).contains(response.status) else {
            throw AdminError(message: "control API refused PUT /tokens/\(token): HTTP \(response.status) \(response.body)")
        }
    }

    /// `GET /metrics`: Prometheus text.
    func metrics() throws(AdminError) -> String {
        let response = try request("GET", "/metrics", body: nil)
        guard response.status == 200 else { throw AdminError(message: "control API: GET /metrics answered HTTP \(response.status)") }
        return response.body
    }

    /// Spec violations the gateway has counted so far; nil when it judges nothing (no --specs).
    func specViolationCount() throws(AdminError) -> Int? {
        let status = try request("GET", "/status", body: nil)
        guard status.status == 200, let parsed = try? JSONParser.parse(status.body) else {
            throw AdminError(message: "control API: GET /status answered HTTP \(status.status)")
        }
        guard let specs = parsed["specs"], specs != .null else { return nil }
        return specViolations(inMetrics: try metrics()) ?? 0
    }

    func request(_ method: String, _ path: String, body: String?) throws(AdminError) -> (status: Int, body: String) {
        let fd = try connectSocket()
        defer { close(fd) }
        let bodyBytes = Array((body ?? "").utf8)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        if body != nil { head += "Content-Type: application/json\r\nContent-Length: \(bodyBytes.count)\r\n" }
        head += "\r\n"
        try sendAll(fd, Array(head.utf8) + bodyBytes)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received.append(contentsOf: buffer[0..<n])
                if let parsed = Self.completeResponse(received) { return parsed }
            } else if n == 0 {
                break
            } else if errno != EINTR {
                throw AdminError(message: "control API at \(baseURL): read failed (errno \(errno))")
            }
        }
        guard let parsed = Self.completeResponse(received, atEnd: true) else {
            throw AdminError(message: "control API at \(baseURL): no complete HTTP response")
        }
        return parsed
    }

    /// The status and body once the head and `Content-Length` bytes have arrived (or, at the
    /// end of the stream, whatever body there is).
    static func completeResponse(_ bytes: [UInt8], atEnd: Bool = false) -> (status: Int, body: String)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let headEnd = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            return nil
        }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var length: Int?
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces))
            }
        }
        let bodyStart = headEnd + 4
        if let length {
            guard bytes.count - bodyStart >= length else { return nil }
            return (status, String(decoding: bytes[bodyStart..<bodyStart + length], as: UTF8.self))
        }
        return atEnd ? (status, String(decoding: bytes[bodyStart...], as: UTF8.self)) : nil
    }

    private func connectSocket() throws(AdminError) -> Int32 {
        let isIPv6 = host.contains(":")
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AdminError(message: "socket failed (errno \(errno))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var connected: Int32 = -1
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                close(fd)
                throw AdminError(message: "--admin: '\(host)' is not an IP address (use 127.0.0.1 or [::1])")
            }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                close(fd)
                throw AdminError(message: "--admin: '\(host)' is not an IP address (use 127.0.0.1 or [::1])")
            }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw AdminError(message: "cannot reach the control API at \(baseURL) (errno \(code))")
        }
        return fd
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws(AdminError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AdminError(message: "control API at \(baseURL): write failed (errno \(errno))")
            }
            offset += n
        }
    }
}

/// The sum of every `pushproof_spec_violations_total` sample in Prometheus text, nil when the
/// gateway exports none (it judges nothing without --specs).
func specViolations(inMetrics text: String) -> Int? {
    var total: Double?
    for line in text.split(separator: "\n") where line.hasPrefix("pushproof_spec_violations_total") {
        guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
        total = (total ?? 0) + value
    }
    return total.map { Int($0) }
}
