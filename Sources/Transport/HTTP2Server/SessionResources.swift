// What a protocol session is given when it starts, and what it hands back besides its
// `SessionActions`. A session holds neither its connection nor its loop: it reads the loop's
// clock and settings, uses the loop's scratch space and tables, and records what the loop
// must set up (timers, deferred-answer waits) for the connection to do after the call.
import CLinux
import CHTTPParser
import HTTPCore

/// The loop's time, refreshed after every epoll_wait; sessions read it, never set it.
final class LoopClock {
    var now: UInt64

    init(now: UInt64) { self.now = now }
}

/// Bytes waiting for the socket: `bytes[start...]` is unsent. The connection writes it; an
/// HTTP/1.1 session serializes its answers straight into it.
final class OutputBuffer {
    var bytes: [UInt8] = []
    var start = 0

    var unsent: Int { bytes.count - start }
    var isDrained: Bool { start == bytes.count }

    /// Everything has been written: empty, keeping the capacity unless it is large (a large
    /// response's buffer is not kept on an idle connection).
    func reset() {
        if bytes.capacity > 1 << 20 {
            bytes = []
        } else {
            bytes.removeAll(keepingCapacity: true)
        }
        start = 0
    }

    /// The connection has closed: nothing more is sent.
    func discard() {
        bytes = []
        start = 0
    }
}

/// Something a request of the session waits for, which the connection sets up on the loop
/// after the call that recorded it (`SessionActions.schedule`). `id` names the request: an
/// HTTP/2 stream id, an HTTP/1.1 response sequence number.
enum SessionFollowUp {
    /// The answer is delayed (`HTTPResponse.delayNanos`): a timer, then `fireDelayedResponse`.
    case delayedAnswer(id: Int, afterNanos: UInt64)
    /// The handler deferred its answer and it has not come yet (`DeferredAnswers.claim`
    /// found none): the loop waits for it, with its deadline.
    case deferredAnswer(DeferredResponse, id: Int)
}

/// The loop's settings, tables and scratch space a session uses, resolved once per loop.
/// References are unowned: the loop owns them and outlives its sessions.
struct SessionResources {
    let settings: LoopSettings
    unowned(unsafe) let clock: LoopClock
    /// The server's counters (requests served, rapid-reset closes).
    let statistics: ServerState
    /// Deferred answers already given (`claim`) and waits that end early (`cancel`).
    unowned(unsafe) let deferredAnswers: DeferredAnswers
    /// Scratch space for an nghttp2 header list, shared by the loop's sessions.
    unowned(unsafe) let headerBlock: HeaderBlockBuilder
    let http2Callbacks: OpaquePointer
    let http2Options: OpaquePointer
    let http1Settings: UnsafeMutablePointer<http_parser_settings>

    /// The request body limit (`--max-body`), on both transports.
    var maxBodyBytes: Int { settings.maxRequestBodyBytes }
    /// One header-section limit on both transports: SETTINGS_MAX_HEADER_LIST_SIZE's accounting
    /// (name + value + 32 a field, RFC 9113 §6.5.2).
    var maxHeaderListSize: Int { Int(settings.http2.maxHeaderListSize) }
}

/// What a session's callbacks ask of its connection during one of the session's calls,
/// returned when the call ends (`take`). The follow-ups' array keeps its capacity, so a
/// delayed or deferred answer costs no allocation after the first.
struct SessionOutbox {
    private var actions: SessionActions = []
    private var followUps: [SessionFollowUp] = []

    mutating func ask(_ action: SessionActions) { actions.formUnion(action) }

    /// A timer or a deferred wait to set up: the call returns `.schedule`.
    mutating func follow(_ followUp: SessionFollowUp) {
        followUps.append(followUp)
        actions.insert(.schedule)
    }

    /// What the call that is ending asked for.
    @inline(__always)
    mutating func take() -> SessionActions {
        let taken = actions
        actions = []
        return taken
    }

    /// Hands each follow-up to `body`, in order, and forgets them.
    mutating func takeFollowUps(_ body: (SessionFollowUp) -> Void) {
        for followUp in followUps { body(followUp) }
        followUps.removeAll(keepingCapacity: true)
    }

    /// A deferred answer's request has ended before the connection set up its wait.
    mutating func forget(_ responder: DeferredResponse) {
        guard !followUps.isEmpty else { return }
        followUps.removeAll { followUp in
            if case let .deferredAnswer(waiting, _) = followUp { return waiting === responder }
            return false
        }
    }

    /// The session has ended: nothing is asked any more.
    mutating func clear() {
        actions = []
        followUps.removeAll()
    }
}
