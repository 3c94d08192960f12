// The public face of the transport: binds every listener on every loop, runs one event
// loop per thread, and shuts down gracefully.
import CHTTPParser
import Clocks
import Descriptors
import Glibc
import HTTPCore
import Synchronization

/// Serves `HTTPHandler` applications over HTTP/2 (h2 over TLS via ALPN or preface sniffing,
/// h2c by prior knowledge) and HTTP/1.1, on epoll event loops (one per thread).
///
/// Each loop owns one SO_REUSEPORT listening socket per listener, so the kernel spreads
/// connections; a connection lives on one loop for its whole life and its handler calls run
/// on that loop's thread.
public final class HTTPServer: Sendable {
    public let listeners: [ListenerConfiguration]
    public let configuration: ServerConfiguration
    private let state = ServerState()
    private let control = Mutex(Control())

    private struct Control: Sendable {
        var started = false
        var stopped = false
        var threads: [pthread_t] = []
        var wakeFDs: [Int32] = []
        var bound: [BoundListener] = []
    }

    public init(listeners: [ListenerConfiguration], configuration: ServerConfiguration = ServerConfiguration()) {
        self.listeners = listeners
        self.configuration = configuration
    }

    /// A server dropped without `shutdown` stops at once rather than leaking its threads.
    deinit { shutdown(gracePeriod: .zero) }

    /// Connections currently open (TLS handshakes included).
    public var openConnections: Int { state.openConnections.load(ordering: .relaxed) }
    /// Connections accepted since start.
    public var acceptedConnections: Int { state.acceptedConnections.load(ordering: .relaxed) }
    /// Requests handed to a handler since start.
    public var requestsServed: Int { state.requestsServed.load(ordering: .relaxed) }
    /// HTTP/2 connections ended with GOAWAY(ENHANCE_YOUR_CALM) for resetting too many streams
    /// before their answer (the rapid-reset defence, CVE-2023-44487).
    public var rapidResetCloses: Int { state.rapidResetCloses.load(ordering: .relaxed) }

    /// What `start()` bound, in listener order (empty before start).
    public var boundListeners: [BoundListener] { control.withLock { $0.bound } }

    /// Binds every listener (port 0 picks a free port, shared by all loops) and starts the
    /// loops. Returns the bound addresses in listener order. Throws on a bad address, a busy
    /// port or unusable TLS material; nothing is left running then.
    @discardableResult
    public func start() throws(HTTPServerError) -> [BoundListener] {
        try control.withLock { (control: inout Control) throws(HTTPServerError) -> [BoundListener] in
            guard !control.started else { throw HTTPServerError("server already started") }
            // A peer that resets while OpenSSL writes (write(2), not send with MSG_NOSIGNAL)
            // must not kill the process; an embedded server has no main.swift to see to it.
            ignoreBrokenPipeSignal()
            let loopCount = max(1, configuration.threads)
            var materials: [TLSMaterial?] = []
            for listener in listeners {
                materials.append(try listener.tls.map { (tls) throws(HTTPServerError) in try TLSMaterial(tls) })
            }

            // Sockets close themselves (`ListeningSocket`) if starting fails before a loop runs.
            var socketsPerLoop = [[ListeningSocket]](repeating: [], count: loopCount)
            var bound: [BoundListener] = []
            var wakeFDs: [Int32] = []
            var loops: [EventLoop] = []
            do throws(HTTPServerError) {
                for listener in listeners {
                    if listener.port != 0 {
                        // SO_REUSEPORT would let a second server of the same user share a busy
                        // port silently (each getting some of the connections): probe without it
                        // first, so a port in use is an error.
                        try makeListeningSocket(host: listener.host, port: listener.port, reusePort: false).close()
                    }
                    let first = try makeListeningSocket(host: listener.host, port: listener.port)
                    socketsPerLoop[0].append(first)
                    bound.append(BoundListener(host: listener.host, port: first.port, isTLS: listener.tls != nil))
                    for loopIndex in 1..<loopCount {
                        socketsPerLoop[loopIndex].append(try makeListeningSocket(host: listener.host, port: first.port))
                    }
                }
                var settings = LoopSettings(http2: configuration.http2,
                                            maxRequestBodyBytes: max(0, configuration.maxRequestBodyBytes),
                                            idleTimeoutNanos: max(1_000_000, configuration.idleTimeout.clampedNanoseconds),
                                            requestHeadTimeoutNanos: max(1_000_000, configuration.requestHeadTimeout.clampedNanoseconds),
                                            requestBodyTimeoutNanos: max(1_000_000, configuration.requestBodyTimeout.clampedNanoseconds),
                                            maxBufferedBodyBytesPerConnection: max(0, configuration.maxBufferedBodyBytesPerConnection
                                                ?? BufferedBodyBudget.defaultLimit(maxBodyBytes: configuration.maxRequestBodyBytes)))
                settings.responseSendTimeoutNanos = max(1_000_000, configuration.responseSendTimeout.clampedNanoseconds)
                for loopIndex in 0..<loopCount {
                    var runtimes: [ListenerRuntime] = []
                    for (listenerIndex, listener) in listeners.enumerated() {
                        let tls = try materials[listenerIndex].map { (material) throws(HTTPServerError) in
                            try TLSContext(material: material)
                        }
                        runtimes.append(ListenerRuntime(socket: socketsPerLoop[loopIndex][listenerIndex],
                                                        handler: listener.handler, tls: tls))
                    }
                    do throws(SystemCallError) {
                        wakeFDs.append(try makeWakeEvent().release())
                    } catch {
                        throw HTTPServerError(error)
                    }
                    loops.append(try EventLoop(listeners: runtimes, wakeFD: wakeFDs[loopIndex], state: state, settings: settings))
                }
            } catch {
                loops.removeAll()
                closeWakeEvents(wakeFDs)
                throw error
            }

            var threads: [pthread_t] = []
            for loop in loops {
                var thread = pthread_t()
                let retained = Unmanaged.passRetained(loop)
                // The loop moves to its thread; this thread never touches it again.
                let status = pthread_create(&thread, nil, { argument in
                    guard let argument else { return nil }
                    let loop = Unmanaged<EventLoop>.fromOpaque(argument).takeRetainedValue()
                    loop.run()
                    return nil
                }, retained.toOpaque())
                if status != 0 {
                    retained.release()
                    loops.removeAll()
                    state.graceDeadline.store(0, ordering: .relaxed)
                    state.stopping.store(true, ordering: .releasing)
                    for fd in wakeFDs { postWakeEvent(fd) }
                    for started in threads { pthread_join(started, nil) }
                    closeWakeEvents(wakeFDs)
                    throw systemError("pthread_create", status)
                }
                threads.append(thread)
            }
            loops.removeAll()
            control.started = true
            control.threads = threads
            control.wakeFDs = wakeFDs
            control.bound = bound
            return bound
        }
    }

    /// Stops accepting, sends GOAWAY(NO_ERROR) on every HTTP/2 connection and lets requests
    /// in flight (delayed responses included) finish for up to `gracePeriod`; then closes
    /// whatever is left and joins the loop threads. Idempotent. Must not be called from a
    /// handler (it waits for the loop threads).
    public func shutdown(gracePeriod: Duration = .seconds(5)) {
        let taken = control.withLock { (control: inout Control) -> ([pthread_t], [Int32])? in
            guard control.started, !control.stopped else { return nil }
            control.stopped = true
            return (control.threads, control.wakeFDs)
        }
        guard let (threads, wakeFDs) = taken else { return }
        state.graceDeadline.store(SystemClock.monotonicNanoseconds() &+ gracePeriod.clampedNanoseconds, ordering: .relaxed)
        state.stopping.store(true, ordering: .releasing)
        for fd in wakeFDs { postWakeEvent(fd) }
        for thread in threads { pthread_join(thread, nil) }
        closeWakeEvents(wakeFDs)
    }
}

/// The loops' eventfds, closed once no loop runs: the server owns them, not the loops, since
/// `shutdown` writes to them until the threads are joined.
private func closeWakeEvents(_ fds: [Int32]) {
    for fd in fds { FileDescriptor(taking: fd).close() }
}
