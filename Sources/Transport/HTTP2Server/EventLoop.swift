// One event loop per thread: epoll (level-triggered) over its own SO_REUSEPORT listening
// sockets, its connections and an eventfd for wake-ups, plus a min-heap of timers
// (delayed responses, idle timeouts, lingering closes, the shutdown grace period).
// Everything a loop owns is touched only by its thread.
import CLinux
import CHTTPParser
import CNGHTTP2
import Clocks
import Descriptors
import Glibc
import HTTPCore
import Synchronization

/// State shared by the server object and its loops: only atomics.
final class ServerState: Sendable {
    let openConnections = Atomic<Int>(0)
    let acceptedConnections = Atomic<Int>(0)
    let requestsServed = Atomic<Int>(0)
    /// HTTP/2 connections closed with GOAWAY(ENHANCE_YOUR_CALM) by RapidResetGuard.
    let rapidResetCloses = Atomic<Int>(0)
    let nextConnectionID = Atomic<UInt64>(1)
    let stopping = Atomic<Bool>(false)
    /// Monotonic deadline after which draining loops drop whatever is still open.
    let graceDeadline = Atomic<UInt64>(UInt64.max)
}

/// Values a loop needs per connection, resolved once.
struct LoopSettings {
    var http2: HTTP2Settings
    var maxRequestBodyBytes: Int
    var idleTimeoutNanos: UInt64
    var requestHeadTimeoutNanos: UInt64
    var requestBodyTimeoutNanos: UInt64
    var responseSendTimeoutNanos: UInt64 = 30_000_000_000
    var maxBufferedBodyBytesPerConnection: Int
    /// How long a closing connection keeps reading (and discarding) so that its last
    /// response is not destroyed by a TCP RST caused by unread input.
    var lingerNanos: UInt64 = 2_000_000_000
}

/// A listening socket of one loop and the application served on it.
final class ListenerRuntime {
    let socket: ListeningSocket
    let fd: Int32
    let handler: any HTTPHandler
    let tls: TLSContext?

    init(socket: ListeningSocket, handler: any HTTPHandler, tls: TLSContext?) {
        self.socket = socket
        fd = socket.fd
        self.handler = handler
        self.tls = tls
    }

    var isOpen: Bool { socket.isOpen }
}

enum TimerKind {
    /// Periodic scan for idle connections: one timer per loop rather than one per
    /// connection, so closed connections are not kept alive by pending timers.
    case idleSweep
    /// The end of an accept pause after descriptors ran out (AcceptBackoff).
    case resumeAccepting
    case delayedHTTP2(Connection, streamID: Int32)
    case delayedHTTP1(Connection, sequence: Int)
    case lingerExpired(Connection)
    case shutdownGrace
    /// A deferred answer's `timeoutNanos` is up (see `DeferredAnswers`). Named by its
    /// registration, not held: a poll whose client went away is freed at once, leaving the
    /// heap only this entry until its deadline.
    case deferredDeadline(DeferredAnswers.Registration)
}

struct TimerEntry {
    var deadline: UInt64
    var sequence: UInt64
    var kind: TimerKind

    @inline(__always)
    func fires(before other: TimerEntry) -> Bool {
        deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
    }
}

/// Binary min-heap ordered by deadline, then insertion order.
struct TimerHeap {
    private var entries: [TimerEntry] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }
    var nextDeadline: UInt64? { entries.first?.deadline }

    mutating func schedule(_ kind: TimerKind, at deadline: UInt64) {
        nextSequence &+= 1
        entries.append(TimerEntry(deadline: deadline, sequence: nextSequence, kind: kind))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].fires(before: entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popExpired(now: UInt64) -> TimerKind? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count, entries[left].fires(before: entries[smallest]) { smallest = left }
                if right < entries.count, entries[right].fires(before: entries[smallest]) { smallest = right }
                if smallest == parent { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first.kind
    }

    mutating func removeAll() { entries.removeAll() }
}

/// Scratch space for building an nghttp2 header list without per-response allocation.
final class HeaderBlockBuilder {
    var bytes: [UInt8] = []
    var entries: [nghttp2_nv] = []

    init() {
        bytes.reserveCapacity(4096)
        entries.reserveCapacity(32)
    }
}

final class EventLoop {
    private let epoll: FileDescriptor
    let epollFD: Int32
    /// Owned by `HTTPServer` (closed after this loop's thread is joined).
    let wakeFD: Int32
    let state: ServerState
    let settings: LoopSettings
    private(set) var listeners: [ListenerRuntime]
    var connections: [Int32: Connection] = [:]
    var timers = TimerHeap()
    /// Monotonic time, refreshed after every epoll_wait.
    let clock: LoopClock
    var now: UInt64 { clock.now }
    /// Every read lands here and is consumed before the next read, so one buffer serves all
    /// of this loop's connections.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Requests whose handler deferred its answer; completions from other threads arrive
    /// through its mailbox and this loop's eventfd.
    let deferredAnswers: DeferredAnswers
    /// Scratch space for building an nghttp2 header list, shared by the loop's sessions.
    let headerBlock: HeaderBlockBuilder
    /// What every session of this loop is given (its settings, clock, tables, scratch space);
    /// the loop keeps what it references alive.
    let sessionResources: SessionResources
    private(set) var draining = false
    private var acceptBackoff = AcceptBackoff()
    /// The listeners are out of epoll's interest set until `.resumeAccepting` fires.
    private var acceptPaused = false
    private let eventCapacity: Int32 = 512
    private let events: UnsafeMutablePointer<epoll_event>

    /// The listeners' sockets are theirs (`ListeningSocket`): one that fails here is closed
    /// with the runtimes the caller drops.
    init(listeners: [ListenerRuntime], wakeFD: Int32, state: ServerState,
         settings: LoopSettings) throws(HTTPServerError) {
        // Until every property is set, deinit will not run: what is made before then is freed
        // here (the epoll descriptor closes itself).
        let epoll: FileDescriptor
        do throws(SystemCallError) {
            epoll = FileDescriptor(taking: try blockingSystemCall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) })
        } catch {
            throw HTTPServerError(error)
        }
        guard let callbacks = makeHTTP2Callbacks() else {
            throw HTTPServerError("nghttp2_session_callbacks_new failed")
        }
        guard let options = makeHTTP2Options(settings.http2) else {
            nghttp2_session_callbacks_del(callbacks)
            throw HTTPServerError("nghttp2_option_new failed")
        }
        epollFD = epoll.raw
        self.epoll = epoll
        self.wakeFD = wakeFD
        self.state = state
        self.settings = settings
        self.listeners = listeners
        let clock = LoopClock(now: SystemClock.monotonicNanoseconds())
        self.clock = clock
        self.readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        let deferredAnswers = DeferredAnswers(wakeFD: wakeFD)
        self.deferredAnswers = deferredAnswers
        let headerBlock = HeaderBlockBuilder()
        self.headerBlock = headerBlock
        self.sessionResources = SessionResources(settings: settings, clock: clock, statistics: state,
                                                 deferredAnswers: deferredAnswers, headerBlock: headerBlock,
                                                 http2Callbacks: callbacks, http2Options: options,
                                                 http1Settings: makeHTTP1Settings())
        self.events = .allocate(capacity: Int(eventCapacity))
        do throws(SystemCallError) {
            try register(wakeFD, events: EPOLLIN.rawValue)
        } catch {
            throw systemError("epoll_ctl(eventfd)", error.code)
        }
        for listener in listeners {
            do throws(SystemCallError) {
                try register(listener.fd, events: EPOLLIN.rawValue)
            } catch {
                throw systemError("epoll_ctl(listener)", error.code)
            }
        }
    }

    deinit {
        for listener in listeners { listener.socket.close() }
        nghttp2_session_callbacks_del(sessionResources.http2Callbacks)
        nghttp2_option_del(sessionResources.http2Options)
        sessionResources.http1Settings.deallocate()
        readBuffer.deallocate()
        events.deallocate()
    }

    func register(_ fd: Int32, events: UInt32) throws(SystemCallError) {
        try control(EPOLL_CTL_ADD, fd, events: events)
    }

    /// Throws if the kernel refuses (the descriptor is not registered, or is gone).
    func modify(_ fd: Int32, events: UInt32) throws(SystemCallError) {
        try control(EPOLL_CTL_MOD, fd, events: events)
    }

    /// Before the descriptor is closed. A descriptor never registered (its set-up failed) is
    /// no error; nothing else can fail here for a descriptor this loop registered.
    func unregister(_ fd: Int32) {
        do throws(SystemCallError) {
            try control(EPOLL_CTL_DEL, fd, events: 0)
        } catch {
            assert(error.code == ENOENT, "epoll_ctl(DEL) of fd \(fd): \(error)")
        }
    }

    @inline(__always)
    private func control(_ operation: Int32, _ fd: Int32, events: UInt32) throws(SystemCallError) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = try blockingSystemCall("epoll_ctl") { epoll_ctl(epollFD, operation, fd, &event) }
    }

    @inline(__always)
    func schedule(_ kind: TimerKind, after nanos: UInt64) {
        timers.schedule(kind, at: now &+ nanos)
    }

    /// A connection is closed between `idleTimeout` and `idleTimeout + idleSweepInterval`
    /// after its last activity (and likewise for the request head and body deadlines).
    private var idleSweepInterval: UInt64 {
        let shortest = min(settings.idleTimeoutNanos, settings.requestHeadTimeoutNanos, settings.requestBodyTimeoutNanos,
                           settings.responseSendTimeoutNanos)
        return max(10_000_000, min(1_000_000_000, shortest / 4))
    }

    /// Runs until a shutdown has drained every connection.
    func run() {
        clock.now = SystemClock.monotonicNanoseconds()
        timers.schedule(.idleSweep, at: now &+ idleSweepInterval)
        while true {
            let timeout = waitTimeoutMilliseconds()
            // EINTR is retried inside; any other failure means the epoll descriptor is unusable.
            guard let ready = try? blockingSystemCall("epoll_wait", { epoll_wait(epollFD, events, eventCapacity, timeout) }) else {
                break
            }
            clock.now = SystemClock.monotonicNanoseconds()
            for index in 0..<Int(ready) {
                let event = events[index]
                let fd = event.data.fd
                if let connection = connections[fd] {
                    connection.handle(events: event.events)
                } else if fd == wakeFD {
                    handleWake()
                } else if let listener = listeners.first(where: { $0.fd == fd && $0.isOpen }) {
                    accept(on: listener)
                }
            }
            fireExpiredTimers()
            if draining && connections.isEmpty { break }
        }
        for connection in Array(connections.values) { connection.close() }
        deferredAnswers.close()
        timers.removeAll()
    }

    private func waitTimeoutMilliseconds() -> Int32 {
        guard let deadline = timers.nextDeadline else { return -1 }
        let current = SystemClock.monotonicNanoseconds()
        if deadline <= current { return 0 }
        let milliseconds = (deadline - current + 999_999) / 1_000_000
        return Int32(clamping: milliseconds)
    }

    private func fireExpiredTimers() {
        while let kind = timers.popExpired(now: now) {
            switch kind {
            case .idleSweep:
                for connection in Array(connections.values) { connection.checkTimeouts() }
                timers.schedule(.idleSweep, at: now &+ idleSweepInterval)
            case let .delayedHTTP2(connection, streamID): connection.fireDelayedHTTP2(streamID: streamID)
            case let .delayedHTTP1(connection, sequence): connection.fireDelayedHTTP1(sequence: sequence)
            case let .lingerExpired(connection): connection.close()
            case .resumeAccepting:
                resumeAccepting()
            case .shutdownGrace:
                for connection in Array(connections.values) { connection.close() }
            case let .deferredDeadline(registration): deferredAnswers.expire(registration)
            }
        }
    }

    private func handleWake() {
        drainWakeEvent(wakeFD)
        deferredAnswers.deliverPosted()
        if state.stopping.load(ordering: .acquiring) && !draining { beginDraining() }
    }

    /// Graceful shutdown: stop accepting, ask every connection to finish what it has.
    private func beginDraining() {
        draining = true
        for listener in listeners where listener.isOpen { closeListener(listener) }
        timers.schedule(.shutdownGrace, at: state.graceDeadline.load(ordering: .relaxed))
        // Long polls answer now, with what they have, instead of holding up the drain.
        deferredAnswers.expireAll()
        for connection in Array(connections.values) { connection.beginShutdown() }
    }

    /// Out of descriptors: stop watching the listeners for a while (see `AcceptBackoff`).
    private func pauseAccepting(nanos: UInt64) {
        guard !acceptPaused, !draining else { return }
        acceptPaused = true
        setListenerInterest(0)
        schedule(.resumeAccepting, after: nanos)
    }

    private func resumeAccepting() {
        guard acceptPaused else { return }
        acceptPaused = false
        setListenerInterest(EPOLLIN.rawValue)
    }

    /// A listener whose interest the kernel will not change is closed: one that cannot be
    /// paused would spin the loop, one that cannot be resumed would serve nobody.
    private func setListenerInterest(_ events: UInt32) {
        for listener in listeners where listener.isOpen {
            do throws(SystemCallError) {
                try modify(listener.fd, events: events)
            } catch {
                closeListener(listener)
            }
        }
    }

    private func closeListener(_ listener: ListenerRuntime) {
        unregister(listener.fd)
        listener.socket.close()
    }

    private func accept(on listener: ListenerRuntime) {
        for _ in 0..<64 {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let accepted: IOOutcome<Int32>
            do throws(SystemCallError) {
                accepted = try systemCall("accept") {
                    withUnsafeMutablePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener.fd, $0, &length) }
                    }
                }
            } catch {
                switch acceptBackoff.failed(errno: error.code) {
                case .retry: continue
                case .stop: return
                case let .pause(nanos):
                    pauseAccepting(nanos: nanos)
                    return
                }
            }
            guard case let .done(fd) = accepted else { return }  // nothing more waiting
            acceptBackoff.succeeded()
            let descriptor = FileDescriptor(taking: fd)
            // A socket that cannot be made non-blocking would stall the loop: closed at once.
            guard (try? prepareAcceptedSocket(fd)) != nil else { continue }
            let id = state.nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue
            // The connection owns the socket from here; a failed set-up closes it.
            guard let connection = Connection(descriptor: descriptor, loop: self, listener: listener, id: id,
                                              peer: describeSocketAddress(address)) else { continue }
            connections[fd] = connection
            state.acceptedConnections.wrappingAdd(1, ordering: .relaxed)
            state.openConnections.wrappingAdd(1, ordering: .relaxed)
            do throws(SystemCallError) {
                try register(fd, events: EPOLLIN.rawValue)
            } catch {
                connection.close()
            }
        }
    }
}

/// Non-blocking, close-on-exec, no Nagle delay. accept4 is hidden behind _GNU_SOURCE in
/// Swift's Glibc module: fcntls instead.
private func prepareAcceptedSocket(_ fd: Int32) throws(SystemCallError) {
    let flags = try blockingSystemCall("fcntl") { fcntl(fd, F_GETFL) }
    _ = try blockingSystemCall("fcntl") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    _ = try blockingSystemCall("fcntl") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    // Best effort: without it answers may wait for an ACK (Nagle), but they still go out.
    try? setSocketOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
}

