// The one place pushproof reads the time. Two clocks, never mixed: the monotonic clock for
// delays, deadlines and latencies (it never jumps), the wall clock for times that leave the
// process (JWT `iat`, token expiry, 410 timestamps, record lines). No Foundation: the
// gateway's request path and the sender's transfer loop read these per request.
#if canImport(Glibc)
import Glibc
#endif

public enum SystemClock {
    /// Nanoseconds on CLOCK_MONOTONIC (since boot, not counting suspend): differences only.
    @inlinable @inline(__always)
    public static func monotonicNanoseconds() -> UInt64 {
        read(CLOCK_MONOTONIC)
    }

    /// Nanoseconds since the Unix epoch (CLOCK_REALTIME).
    @inlinable @inline(__always)
    public static func wallClockNanoseconds() -> UInt64 {
        read(CLOCK_REALTIME)
    }

    /// Whole milliseconds since the Unix epoch.
    @inlinable
    public static func wallClockMilliseconds() -> Int64 {
        Int64(wallClockNanoseconds() / 1_000_000)
    }

    /// Whole seconds since the Unix epoch (JWT `iat`, access-token expiry).
    @inlinable
    public static func wallClockSeconds() -> Int64 {
        Int64(wallClockNanoseconds() / 1_000_000_000)
    }

    /// CPU time this process has used, every thread, user and system (CLOCK_PROCESS_CPUTIME_ID):
    /// differences only. What a capacity plan charges a process per push.
    public static func processCPUNanoseconds() -> UInt64 {
        read(CLOCK_PROCESS_CPUTIME_ID)
    }

    /// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): differences only, on one thread.
    public static func threadCPUNanoseconds() -> UInt64 {
        read(CLOCK_THREAD_CPUTIME_ID)
    }

    @usableFromInline @inline(__always)
    static func read(_ clock: clockid_t) -> UInt64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
