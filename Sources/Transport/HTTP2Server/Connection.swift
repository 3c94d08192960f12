// One accepted socket: TLS (optional), protocol detection, the HTTP/2 or HTTP/1.1 session,
// the outgoing byte buffer, and a graceful close that keeps reading briefly so the peer
// gets our last bytes instead of a TCP RST.
import CHTTPParser
import CNGHTTP2
import Clocks
import Descriptors
import Glibc
import HTTPCore

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
let http2ClientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

final class Connection {
    enum Phase {
        case handshaking
        /// Waiting for enough bytes to tell the HTTP/2 preface from an HTTP/1.1 request line.
        case sniffing
        case http2(HTTP2Session)
        case http1(HTTP1Session)
        /// Write side shut down; reading and discarding until EOF or the linger timer.
        case lingering
        case closed
    }

    /// The socket's number: the loop's key for this connection, valid until `close()`.
    let fd: Int32
    /// The socket itself, closed when the connection closes (or its set-up fails).
    private var descriptor: FileDescriptor?
    unowned let loop: EventLoop
    let listener: ListenerRuntime
    let id: UInt64
    let peer: String
    private(set) var tls: TLSStream?
    let isTLS: Bool
    private(set) var phase: Phase
    private var sniffed: [UInt8] = []
    private var context: ConnectionContext?
    /// Bytes waiting for the socket; `output[outputStart...]` is unsent.
    var output: [UInt8] = []
    private var outputStart = 0
    var unsentOutputBytes: Int { output.count - outputStart }
    private var lastActivity: UInt64
    /// Until a protocol session starts (TLS handshake, preface sniffing), the connection is
    /// held to the request head deadline from the moment it was accepted.
    private let acceptedNanos: UInt64
    private var pollingWritable = false
    /// Reading stops while this much output is unsent, so a client that sends requests but
    /// never reads the answers cannot make us buffer without bound (a non-reading client
    /// cost ~0.8 MB a connection at 1 MB).
    static let outputHighWater = 64 * 1024
    /// Reading is off because output is backed up (`outputHighWater`)...
    private var pausedForOutput = false
    /// ...or because the HTTP/1.1 session holds answers it may not add to (`PipelineLimit`).
    private var pausedForSession = false
    private var readPaused: Bool { pausedForOutput || pausedForSession }
    private(set) var shuttingDown = false
    /// Requests on this connection waiting for a deferred answer (`DeferredAnswers`): the
    /// connection is not idle while it owes one.
    var awaitedAnswers = 0

    init?(descriptor: consuming FileDescriptor, loop: EventLoop, listener: ListenerRuntime, id: UInt64, peer: String) {
        fd = descriptor.raw
        self.descriptor = .some(descriptor)
        self.loop = loop
        self.listener = listener
        self.id = id
        self.peer = peer
        self.lastActivity = loop.now
        self.acceptedNanos = loop.now
        if let tlsContext = listener.tls {
            guard let stream = TLSStream(context: tlsContext, fd: fd) else { return nil }
            tls = stream
            isTLS = true
            phase = .handshaking
        } else {
            isTLS = false
            phase = .sniffing
        }
    }

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    // MARK: Events

    @inline(__always)
    func handle(events: UInt32) {
        // epoll reports hang-ups and errors even with reading paused (interest 0); level-
        // triggered, it would report them on every turn. Nothing can be sent any more.
        if readPaused && events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            close()
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readable() }
        if events & EPOLLOUT.rawValue != 0 && !isClosed { writable() }
    }

    private func readable() {
        switch phase {
        case .closed: return
        case .lingering:
            discardInput()
            return
        case .handshaking:
            guard advanceHandshake() else { return }
        default: break
        }
        readAndProcess()
    }

    private func writable() {
        switch phase {
        case .closed: return
        case .lingering:
            setWritablePolling(false)
        case .handshaking:
            if advanceHandshake() { readAndProcess() }
        default:
            flush()
            resumeHeldInput()
            // TLS may have been waiting to write before it could read further.
            if tls != nil && !isClosed { readAndProcess() }
        }
    }

    /// Returns true once the handshake is complete and application data may be read.
    private func advanceHandshake() -> Bool {
        guard let tls else { return true }
        switch tls.handshake() {
        case .done:
            lastActivity = loop.now
            setWritablePolling(false)
            switch tls.negotiatedProtocol {
            case .http2: startHTTP2()
            case .http1: startHTTP1()
            case .none: phase = .sniffing
            }
            return !isClosed
        case .wantRead:
            setWritablePolling(false)
            return false
        case .wantWrite:
            setWritablePolling(true)
            return false
        case .closed, .failed:
            close()
            return false
        }
    }

    private func readAndProcess() {
        if pausedForSession { return }
        let buffer = loop.readBuffer
        var rounds = 0
        let turnStarted = SystemClock.monotonicNanoseconds()
        // A limit on rounds and on time (LoopTurn) keeps one busy client from starving the
        // others (level-triggered epoll brings us back); decrypted bytes OpenSSL already holds
        // must be drained now, since epoll will not report them.
        reading: while (rounds < LoopTurn.maximumReads && SystemClock.monotonicNanoseconds() &- turnStarted < LoopTurn.budgetNanos)
                        || tls?.hasPendingData == true {
            if output.count - outputStart >= Connection.outputHighWater {
                setPausedForOutput(true)
                break
            }
            rounds += 1
            let count: Int
            if let tls {
                switch tls.read(into: buffer) {
                case let .done(read): count = read
                case .wantRead: break reading
                case .wantWrite:
                    setWritablePolling(true)
                    break reading
                case .closed:
                    peerClosed()
                    return
                case .failed:
                    close()
                    return
                }
            } else {
                switch try? systemCall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
                case .done(let read) where read > 0: count = read
                case .done:
                    peerClosed()
                    return
                case .wouldBlock: break reading
                case nil:
                    close()
                    return
                }
            }
            lastActivity = loop.now
            receive(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
            switch phase {
            case .closed, .lingering: return
            case let .http1(session) where session.holdsInput:
                setPausedForSession(true)
                break reading
            default: break
            }
            if tls == nil && count < buffer.count { break }
        }
        flush()
        if pausedForSession && !isClosed { resumeHeldInput() }
    }

    private func receive(_ bytes: UnsafeRawBufferPointer) {
        switch phase {
        case let .http2(session):
            if !session.receive(bytes) {
                flush()
                if !isClosed { beginLinger() }
                return
            }
            if session.abortRequested { close() }
        case let .http1(session):
            session.receive(bytes)
            if session.abortRequested { close() }
        case .sniffing:
            sniff(bytes)
        case .handshaking, .lingering, .closed:
            break
        }
    }

    /// Prior-knowledge h2 (RFC 9113 §3.3) starts with the preface; anything else is taken as
    /// HTTP/1.1 as soon as one byte differs from it.
    private func sniff(_ bytes: UnsafeRawBufferPointer) {
        if sniffed.isEmpty && bytes.count >= http2ClientPreface.count {
            let isHTTP2 = http2ClientPreface.withUnsafeBytes { preface in
                guard let expected = preface.baseAddress, let received = bytes.baseAddress else { return false }
                return memcmp(expected, received, preface.count) == 0
            }
            if isHTTP2 { startHTTP2() } else { startHTTP1() }
            receive(bytes)
            return
        }
        sniffed.append(contentsOf: bytes)
        let compared = min(sniffed.count, http2ClientPreface.count)
        let matches = sniffed[0..<compared].elementsEqual(http2ClientPreface[0..<compared])
        if !matches {
            startHTTP1()
        } else if sniffed.count >= http2ClientPreface.count {
            startHTTP2()
        } else {
            return
        }
        let pending = sniffed
        sniffed = []
        pending.withUnsafeBytes { receive($0) }
    }

    private func startHTTP2() {
        let context = ConnectionContext(id: id, version: .http2, isTLS: isTLS, peer: peer)
        context.clientCertificateDER = tls?.peerCertificateDER()
        self.context = context
        listener.handler.connectionOpened(context)
        guard let session = HTTP2Session(connection: self, context: context) else {
            close()
            return
        }
        phase = .http2(session)
        if shuttingDown { session.submitShutdownGoAway() }
    }

    private func startHTTP1() {
        let context = ConnectionContext(id: id, version: .http1_1, isTLS: isTLS, peer: peer)
        context.clientCertificateDER = tls?.peerCertificateDER()
        self.context = context
        listener.handler.connectionOpened(context)
        let session = HTTP1Session(connection: self, context: context)
        phase = .http1(session)
        if shuttingDown { session.beginShutdown() }
    }

    private func peerClosed() {
        // Send what is ready (the peer may only have shut down its write side), then close.
        flush()
        close()
    }

    // MARK: Output

    /// Moves everything the session has ready into `output` and writes it, then closes the
    /// connection if the session is finished.
    func flush() {
        switch phase {
        case let .http2(session):
            guard let handle = session.session else { return }
            while true {
                if output.count - outputStart >= Connection.outputHighWater {
                    guard writeOutput() else { return }
                    if output.count - outputStart >= Connection.outputHighWater / 2 { break }  // socket is full
                }
                var data: UnsafePointer<UInt8>?
                let produced = nghttp2_session_mem_send(handle, &data)
                if produced < 0 {
                    close()
                    return
                }
                if produced == 0 { break }
                if let data { output.append(contentsOf: UnsafeBufferPointer(start: data, count: produced)) }
            }
            guard writeOutput() else { return }
            if session.abortRequested {
                close()
            } else if outputStart == output.count && session.isFinished {
                beginLinger()
            }
        case let .http1(session):
            guard writeOutput() else { return }
            // A streamed body goes on only as the socket takes what was written of it.
            while outputStart == output.count, session.continueStreaming() {
                guard writeOutput() else { return }
            }
            if session.abortRequested {
                close()
            } else if outputStart == output.count && session.isFinished {
                beginLinger()
            }
        default:
            _ = writeOutput()
        }
    }

    /// Writes as much of `output` as the socket takes. Returns false if the connection closed.
    private func writeOutput() -> Bool {
        while outputStart < output.count {
            let start = outputStart
            let written: Int = output.withUnsafeBytes { raw in
                let pending = UnsafeRawBufferPointer(rebasing: raw[start...])
                if let tls {
                    switch tls.write(pending) {
                    case let .done(count): return count
                    case .wantRead, .wantWrite: return 0
                    case .closed, .failed: return -1
                    }
                }
                switch try? systemCall("send", { send(fd, pending.baseAddress, pending.count, Int32(MSG_NOSIGNAL)) }) {
                case .done(let count): return count
                case .wouldBlock: return 0
                case nil: return -1
                }
            }
            if written < 0 {
                close()
                return false
            }
            if written == 0 {
                setWritablePolling(true)
                return true
            }
            outputStart += written
            lastActivity = loop.now  // a slow reader that is still reading is not idle
        }
        if output.capacity > 1 << 20 {
            output = []  // don't keep a large response's buffer on an idle connection
        } else {
            output.removeAll(keepingCapacity: true)
        }
        outputStart = 0
        setWritablePolling(false)
        setPausedForOutput(false)  // level-triggered: pending input is reported again
        return true
    }

    private func setWritablePolling(_ enabled: Bool) {
        guard enabled != pollingWritable, !isClosed else { return }
        pollingWritable = enabled
        updateInterest()
    }

    private func setPausedForOutput(_ paused: Bool) {
        guard paused != pausedForOutput, !isClosed else { return }
        pausedForOutput = paused
        updateInterest()
    }

    private func setPausedForSession(_ paused: Bool) {
        guard paused != pausedForSession, !isClosed else { return }
        pausedForSession = paused
        updateInterest()
    }

    private func updateInterest() {
        // The kernel refusing a change of interest (the socket is gone) leaves nothing to serve.
        if !loop.modify(fd, events: (readPaused ? 0 : EPOLLIN.rawValue) | (pollingWritable ? EPOLLOUT.rawValue : 0)) { close() }
    }

    // MARK: Timers

    /// The idle timeout, and the request head and body deadlines (`requestHeadTimeout`).
    func checkTimeouts() {
        switch phase {
        case .closed, .lingering: return
        case .handshaking, .sniffing:
            if loop.now &- acceptedNanos >= loop.settings.requestHeadTimeoutNanos {
                close()
                return
            }
        case let .http2(session):
            // flush() writes what was queued (a GOAWAY) before it honours `abortRequested`.
            guard session.checkDeadlines() else { break }
            flush()
        case let .http1(session):
            guard session.checkDeadlines() else { break }
            flush()
        }
        switch phase {
        case .closed, .lingering: return
        default: break
        }
        let idle = loop.settings.idleTimeoutNanos
        if awaitedAnswers == 0, loop.now &- lastActivity >= idle {
            // HTTP/2 peers are told why (GOAWAY NO_ERROR, RFC 9113 §6.8) before the close.
            if case let .http2(session) = phase {
                session.submitShutdownGoAway()
                flush()
            }
            close()
        }
    }

    func fireDelayedHTTP2(streamID: Int32) {
        guard case let .http2(session) = phase else { return }
        session.fireDelayedResponse(streamID: streamID)
        if session.abortRequested { close() } else { flush() }
    }

    func fireDelayedHTTP1(sequence: Int) {
        guard case let .http1(session) = phase else { return }
        session.fireDelayedResponse(sequence: sequence)
        if session.abortRequested {
            close()
            return
        }
        flush()
        resumeHeldInput()
    }

    /// An HTTP/1.1 session that paused parsing (PipelineLimit, outputHighWater) goes on once
    /// its answers have gone out, and then so does reading.
    /// Each round parses at least one held request (or all that is held), so this ends.
    private func resumeHeldInput() {
        guard case let .http1(session) = phase else { return }
        while session.holdsInput && !isClosed {
            guard session.resumeParsing() else { break }  // still too much pending: wait for timers or writes
            if session.abortRequested {
                close()
                return
            }
            flush()
        }
        if !isClosed && pausedForSession && !session.holdsInput {
            setPausedForSession(false)  // level-triggered: what waits in the socket is reported again
        }
    }

    /// A deferred answer has come (`DeferredAnswers`): sent like a delayed response whose
    /// time is up.
    func answerDeferred(_ target: DeferredTarget, with response: HTTPResponse) {
        switch (phase, target) {
        case let (.http2(session), .http2(_, streamID)):
            session.answerDeferred(streamID: streamID, with: response)
            if session.abortRequested { close() } else { flush() }
        case let (.http1(session), .http1(_, sequence)):
            session.answerDeferred(sequence: sequence, with: response)
            if session.abortRequested { close() } else { flush() }
        default:
            break
        }
    }

    // MARK: Closing

    /// Server shutdown: HTTP/2 gets GOAWAY(NO_ERROR) and finishes its open streams; HTTP/1.1
    /// finishes the request in progress; connections without a protocol yet just close.
    func beginShutdown() {
        shuttingDown = true
        switch phase {
        case let .http2(session):
            session.submitShutdownGoAway()
            flush()
        case let .http1(session):
            session.beginShutdown()
            flush()
        case .handshaking, .sniffing:
            close()
        case .lingering, .closed:
            break
        }
    }

    /// Ends the session, shuts down our write side and reads until the peer closes, so the
    /// last response (or GOAWAY) is not lost to a reset caused by unread input.
    private func beginLinger() {
        switch phase {
        case .lingering, .closed: return
        default: break
        }
        endSession()
        tls?.sendCloseNotify()
        _ = shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        setWritablePolling(false)
        setPausedForOutput(false)
        setPausedForSession(false)
        loop.schedule(.lingerExpired(self), after: loop.settings.lingerNanos)
    }

    private func discardInput() {
        let buffer = loop.readBuffer
        while true {
            switch try? systemCall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
            case .done(let read) where read > 0: continue
            case .wouldBlock: return
            case .done, nil:
                close()
                return
            }
        }
    }

    private func endSession() {
        switch phase {
        case let .http2(session): session.destroy()
        case let .http1(session): session.destroy()
        default: break
        }
        if let context {
            self.context = nil
            listener.handler.connectionClosed(context)
        }
    }

    /// Closes the socket now. Safe to call more than once; never called from inside an
    /// nghttp2 or http-parser callback (those only set `abortRequested`).
    func close() {
        if isClosed { return }
        endSession()
        loop.unregister(fd)
        descriptor = nil  // closes the socket
        phase = .closed
        tls = nil
        output = []
        loop.connections[fd] = nil
        loop.state.openConnections.wrappingSubtract(1, ordering: .relaxed)
    }
}
