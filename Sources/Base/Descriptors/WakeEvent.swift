// Waking a thread that waits in epoll or curl_multi_poll from another thread: an eventfd, the
// one mechanism the server's loops and the sender's transfer loop share.
import CLinux
import Glibc

/// A non-blocking, close-on-exec eventfd to poll for wake-ups.
public func makeWakeEvent() throws(SystemCallError) -> FileDescriptor {
    FileDescriptor(taking: try blockingSystemCall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) })
}

/// Wakes whoever polls the eventfd `fd` (one more on its counter). A counter too full to add
/// to (EAGAIN) already wakes it, so losing this one loses nothing. From any thread.
public func postWakeEvent(_ fd: Int32) {
    var one: UInt64 = 1
    _ = try? systemCall("write") { write(fd, &one, MemoryLayout<UInt64>.size) }
}

/// Empties the eventfd `fd` after a wake-up: one read takes the whole counter (nothing to read
/// is no error: non-blocking).
public func drainWakeEvent(_ fd: Int32) {
    var counter: UInt64 = 0
    _ = try? systemCall("read") { read(fd, &counter, MemoryLayout<UInt64>.size) }
}
