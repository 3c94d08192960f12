// The bounds that keep one hostile client from taking an event loop's CPU or the process's
// memory: what happens when descriptors run out, how many request bytes one
// connection may have buffered, how long a request head or body may take, when a header
// block is so far over the limit that decoding it further is wasted work, and how long one
// connection may hold its loop. Each is a small value type with time passed in, so the
// decisions are tested without sockets or a clock.
import CLinux
import Glibc

/// What the accept loop does after `accept` fails with out-of-descriptor errors.
///
/// Under level-triggered epoll a listener with a connection waiting stays readable, and with
/// no descriptor to accept it into, every `epoll_wait` returns at once: the loop spins at
/// 100% CPU and serves nobody. Like nginx (which disables accept events for 500 ms on
/// EMFILE) and swift-nio's `AcceptBackoffHandler` (1 s), the loop stops watching its
/// listeners for a while; queued clients wait in the kernel's backlog and are accepted once
/// descriptors are free again. The pause doubles while accepts keep failing, and resets
/// after one succeeds.
struct AcceptBackoff {
    static let initialNanos: UInt64 = 50_000_000
    static let maximumNanos: UInt64 = 1_000_000_000

    /// The pause the next failure gets.
    private(set) var nextPauseNanos = AcceptBackoff.initialNanos

    enum Decision: Equatable {
        /// A transient error (EINTR, ECONNABORTED, a peer that reset in the backlog): accept again.
        case retry
        /// Nothing more to accept now (EAGAIN), or an error a pause would not help.
        case stop
        /// Out of descriptors or kernel memory: stop watching the listeners for this long.
        case pause(nanos: UInt64)
    }

    /// Decides what to do about an `accept` that failed with `errno` `code`.
    mutating func failed(errno code: Int32) -> Decision {
        switch code {
        case EINTR, ECONNABORTED, EPROTO, EPERM:
            return .retry
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            let pause = nextPauseNanos
            nextPauseNanos = min(AcceptBackoff.maximumNanos, nextPauseNanos * 2)
            return .pause(nanos: pause)
        default:
            return .stop
        }
    }

    /// An accept succeeded: descriptors are available again.
    mutating func succeeded() { nextPauseNanos = AcceptBackoff.initialNanos }
}

/// Request-body bytes an HTTP/2 connection holds for streams not yet complete.
///
/// nghttp2 sends WINDOW_UPDATE for every DATA frame it is handed, so flow control never
/// stops a client: 1,000 streams each one byte short of the body limit cost a gigabyte per
/// connection. The budget bounds that sum; a stream whose data would take the connection
/// over it is reset with REFUSED_STREAM (RFC 9113 §8.7: not processed, safe to retry).
struct BufferedBodyBudget {
    let limit: Int
    private(set) var used = 0

    init(limit: Int) { self.limit = limit }

    /// Takes `count` bytes; false (nothing taken) if that would exceed the limit.
    mutating func take(_ count: Int) -> Bool {
        guard count <= limit - used else { return false }
        used += count
        return true
    }

    /// Returns bytes a stream held (dispatched, refused or closed).
    mutating func release(_ count: Int) { used = max(0, used - count) }

    /// The default: two of the largest bodies accepted, and never less than one HTTP/2
    /// initial window (so a single stream at the limit always fits).
    static func defaultLimit(maxBodyBytes: Int) -> Int {
        max(2 * maxBodyBytes, 65_535)
    }
}

/// A deadline that starts when something begins and must finish in time (a request head,
/// a request body, a TLS handshake). `nil` start means nothing is being timed.
struct Deadline {
    let durationNanos: UInt64
    private(set) var startedNanos: UInt64?

    init(durationNanos: UInt64) { self.durationNanos = durationNanos }

    /// Starts timing unless it already runs (the first byte starts a request head's clock).
    mutating func startIfIdle(nowNanos: UInt64) {
        if startedNanos == nil { startedNanos = nowNanos }
    }

    mutating func restart(nowNanos: UInt64) { startedNanos = nowNanos }
    mutating func stop() { startedNanos = nil }

    func hasExpired(nowNanos: UInt64) -> Bool {
        guard let startedNanos else { return false }
        return nowNanos &- startedNanos >= durationNanos
    }
}

/// How an HTTP/2 header block over SETTINGS_MAX_HEADER_LIST_SIZE is treated.
///
/// Over the limit the request is answered 431, but nghttp2 goes on decoding the block: an
/// "HPACK bomb" (one-byte references to a 4 KB table entry) makes a 16 KB frame expand to
/// 64 MB of fields and costs ~40 ms of CPU each. Far over the limit the header callback fails
/// (NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE: nghttp2 resets the stream and only keeps its HPACK
/// table in step, ~0.45 ms a frame), and a connection that does it again gets
/// GOAWAY(ENHANCE_YOUR_CALM).
struct HeaderListGuard {
    /// "Far over": no honest client is this far past a limit it was told about.
    static let abandonFactor = 4
    /// Streams abandoned this way that a connection may send before it is closed.
    static let abandonedStreamsAllowed = 1

    let limit: Int
    private(set) var abandonedStreams = 0

    init(limit: Int) { self.limit = limit }

    enum Verdict: Equatable {
        /// Within the limit: keep the field.
        case keep
        /// Over the limit: drop the fields, answer 431 once the block ends.
        case tooLarge
        /// Far over: stop decoding this block (reset the stream).
        case abandonStream
        /// Far over again on this connection: GOAWAY(ENHANCE_YOUR_CALM) and close.
        case closeConnection
    }

    /// The verdict for a stream whose header list has reached `size` bytes (RFC 9113 §6.5.2).
    mutating func judge(size: Int) -> Verdict {
        if size <= limit { return .keep }
        if size <= limit * HeaderListGuard.abandonFactor { return .tooLarge }
        abandonedStreams += 1
        return abandonedStreams > HeaderListGuard.abandonedStreamsAllowed ? .closeConnection : .abandonStream
    }
}

/// How long one connection may keep its event loop busy in one turn before the others get a
/// go. Level-triggered epoll brings the connection back with whatever it still has to read.
/// A byte limit alone is not enough: 1 MB of pipelined HTTP/1.1 requests or of expensive
/// HTTP/2 frames can take seconds to process.
enum LoopTurn {
    static let budgetNanos: UInt64 = 2_000_000
    static let maximumReads = 16
}

/// HTTP/1.1 answers a connection may have waiting behind a delayed one before the transport
/// stops parsing its requests (and so stops reading it). Pipelined requests under a latency
/// fault otherwise queue without bound (1.3 M in 15 s, measured).
enum PipelineLimit {
    static let maximumPendingResponses = 64
}
