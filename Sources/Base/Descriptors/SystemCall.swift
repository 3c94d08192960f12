// The one way pushproof calls the kernel for descriptors (swift-nio's `syscall` and
// `BaseSocket`, in small): a wrapper that retries EINTR, tells "would block" apart and keeps
// errno, and a descriptor type that owns what it names.
import Glibc

/// A system call that failed: which, and its errno.
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    public let call: String
    public let code: Int32

    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    public var description: String { "\(call) failed: \(String(cString: strerror(code))) (errno \(code))" }
}

/// What a call on a non-blocking descriptor did.
public enum IOOutcome<Value: BinaryInteger>: Equatable {
    case done(Value)
    /// EAGAIN / EWOULDBLOCK: try again once the descriptor is ready.
    case wouldBlock
}

/// Runs `body`, a call that returns -1 and sets errno on failure, again while it is
/// interrupted by a signal (EINTR). "Would block" is `.wouldBlock`; any other failure
/// throws, errno kept.
@inline(__always)
public func systemCall<Value: BinaryInteger>(_ call: StaticString, _ body: () -> Value) throws(SystemCallError) -> IOOutcome<Value> {
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
        throw SystemCallError(call: String(describing: call), code: code)
    }
}

/// `systemCall` for a call that cannot block (or a blocking descriptor): the result.
@inline(__always)
public func blockingSystemCall<Value: BinaryInteger>(_ call: StaticString, _ body: () -> Value) throws(SystemCallError) -> Value {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(call: String(describing: call), code: code)
    }
}

/// A descriptor this value owns: closed exactly once, when the value ends or `close()` is
/// called, unless `release()` hands it on. Not copyable, so it cannot be closed twice or
/// outlive its owner by accident.
public struct FileDescriptor: ~Copyable, Sendable {
    public let raw: Int32

    /// Takes ownership of `raw` (a descriptor nothing else will close).
    public init(taking raw: Int32) {
        self.raw = raw
    }

    /// Closes it now. EINTR is not retried: Linux has released the descriptor by then, and a
    /// retry could close one another thread just opened.
    public consuming func close() {
        _ = Glibc.close(raw)
        discard self
    }

    /// Gives up ownership: the caller closes the descriptor.
    public consuming func release() -> Int32 {
        let raw = raw
        discard self
        return raw
    }

    deinit {
        _ = Glibc.close(raw)
    }
}

/// Writes all of `bytes` to a blocking descriptor (a pipe, a terminal, a file), retrying
/// interrupted and partial writes.
public func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemCallError) {
    var offset = 0
    while offset < bytes.count {
        let start = offset
        let written = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemCallError) in
                try blockingSystemCall("write") { Glibc.write(fd, raw.baseAddress! + start, raw.count - start) }
            }
        }
        offset += try written.get()
    }
}
