// The listening socket and addresses: cold-path calls, through `Descriptors.blockingSystemCall`,
// that turn a failure into a thrown `HTTPServerError`. Reads and writes go through
// `Descriptors.systemCall`.
import Descriptors
import Glibc

func systemError(_ call: String, _ code: Int32) -> HTTPServerError {
    HTTPServerError("\(call) failed: \(String(cString: strerror(code))) (errno \(code))")
}

extension HTTPServerError {
    init(_ error: SystemCallError) { self.init(error.description) }
}

func setSocketOption(_ fd: Int32, _ level: Int32, _ option: Int32, _ value: Int32) throws(SystemCallError) {
    var value = value
    _ = try blockingSystemCall("setsockopt") { setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size)) }
}

/// A listening socket, owned: closed by `close()` or when the last reference to it goes. A
/// class, so the sockets of every loop can wait in arrays while the server starts (any that
/// no loop took are closed with the arrays if starting fails).
final class ListeningSocket {
    private var descriptor: FileDescriptor?
    let fd: Int32
    /// The port it is bound to (what port 0 picked).
    let port: Int

    init(_ descriptor: consuming FileDescriptor, port: Int) {
        fd = descriptor.raw
        self.descriptor = .some(descriptor)
        self.port = port
    }

    private(set) var isOpen = true

    func close() {
        isOpen = false
        descriptor = nil
    }
}

/// Opens a non-blocking listening socket with SO_REUSEPORT so every event loop can own one
/// on the same port and the kernel spreads new connections across them.
/// - Parameter reusePort: set SO_REUSEPORT so every loop can have its own socket on the port.
func makeListeningSocket(host: String, port: Int, reusePort: Bool = true) throws(HTTPServerError) -> ListeningSocket {
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
    let descriptor: FileDescriptor
    do throws(SystemCallError) {
        descriptor = FileDescriptor(taking: try blockingSystemCall("socket") {
            socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
    } catch {
        throw HTTPServerError(error)
    }
    // From here a failure closes the socket with `descriptor`.
    let fd = descriptor.raw
    do throws(SystemCallError) {
        try setSocketOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if reusePort { try setSocketOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
    } catch {
        throw systemError("setsockopt(SO_REUSEPORT)", error.code)
    }
    do throws(SystemCallError) {
        _ = try blockingSystemCall("bind") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
    } catch {
        throw systemError("bind \(host):\(port)", error.code)
    }
    var storage = sockaddr_storage()
    do throws(SystemCallError) {
        _ = try blockingSystemCall("listen") { listen(fd, 1024) }
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try blockingSystemCall("getsockname") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
    } catch {
        throw HTTPServerError(error)
    }
    return ListeningSocket(descriptor, port: socketAddressPort(storage) ?? port)
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
