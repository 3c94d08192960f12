// The listening socket and addresses: cold-path calls that turn a failure into a
// thrown `HTTPServerError`. Reads and writes go through `Descriptors.systemCall`.
import Glibc

func systemError(_ call: String, _ code: Int32 = errno) -> HTTPServerError {
    HTTPServerError("\(call) failed: \(String(cString: strerror(code))) (errno \(code))")
}

func setSocketOption(_ fd: Int32, _ level: Int32, _ option: Int32, _ value: Int32) -> Bool {
    var value = value
    return setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
}

/// Opens a non-blocking listening socket with SO_REUSEPORT so every event loop can own one
/// on the same port and the kernel spreads new connections across them.
/// - Parameter reusePort: set SO_REUSEPORT so every loop can have its own socket on the port.
func makeListeningSocket(host: String, port: Int, reusePort: Bool = true) throws(HTTPServerError) -> (fd: Int32, port: Int) {
    guard (0...65535).contains(port) else { throw HTTPServerError("port \(port) is out of range") }
    var hints = addrinfo()
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var results: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &results)
    guard status == 0, let info = results else {
        throw HTTPServerError("cannot resolve listen host \(host): \(String(cString: gai_strerror(status)))")
    }
    defer { freeaddrinfo(results) }
    let fd = socket(info.pointee.ai_family,
                    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw systemError("socket") }
    guard setSocketOption(fd, SOL_SOCKET, SO_REUSEADDR, 1),
          !reusePort || setSocketOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) else {
        let error = systemError("setsockopt(SO_REUSEPORT)")
        close(fd)
        throw error
    }
    guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
        let error = systemError("bind \(host):\(port)")
        close(fd)
        throw error
    }
    guard listen(fd, 1024) == 0 else {
        let error = systemError("listen")
        close(fd)
        throw error
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else {
        let error = systemError("getsockname")
        close(fd)
        throw error
    }
    return (fd, socketAddressPort(storage) ?? port)
}

func socketAddressPort(_ storage: sockaddr_storage) -> Int? {
    var storage = storage
    switch Int32(storage.ss_family) {
    case AF_INET:
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    case AF_INET6:
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
    default:
        return nil
    }
}

/// `host:port` (IPv6 as `[addr]:port`) for logs and `ConnectionContext.peer`.
func describeSocketAddress(_ storage: sockaddr_storage) -> String {
    var storage = storage
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let port = socketAddressPort(storage) ?? 0
    switch Int32(storage.ss_family) {
    case AF_INET:
        withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                var raw = address.pointee.sin_addr
                _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
            }
        }
        return "\(stringFromNullTerminated(text)):\(port)"
    case AF_INET6:
        withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                var raw = address.pointee.sin6_addr
                _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
            }
        }
        return "[\(stringFromNullTerminated(text))]:\(port)"
    default:
        return "unknown"
    }
}

func stringFromNullTerminated(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension HTTPServer {
    /// Raises this process's soft RLIMIT_NOFILE to its hard limit and returns the new soft
    /// limit. Debian's default soft limit (1024) is a few hundred connections per loop; the
    /// hard limit (often 524288) is what a server is allowed, and nginx and h2o raise it the
    /// same way. Process-wide, so it is the caller's choice (`pushproof serve` makes it).
    @discardableResult
    public static func raiseOpenFileLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
