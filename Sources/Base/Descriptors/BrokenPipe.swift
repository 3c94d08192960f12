// SIGPIPE, set once for the process: the one place it is written.
import Glibc

/// A write to a socket or pipe whose reader has gone fails with EPIPE instead of killing the
/// process with SIGPIPE. Process-wide and idempotent: `main.swift` calls it first, and so do
/// the parts that may run embedded in another program (the HTTP server, whose OpenSSL writes
/// with write(2) rather than send with MSG_NOSIGNAL; the adapter process's pipes).
public func ignoreBrokenPipeSignal() {
    _ = signal(SIGPIPE, SIG_IGN)
}
