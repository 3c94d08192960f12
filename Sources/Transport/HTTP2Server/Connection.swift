// One accepted socket: TLS (optional), protocol detection, the HTTP/2 or HTTP/1.1 session,
// the outgoing byte buffer, and a graceful close that keeps reading briefly so the peer
// gets our last bytes instead of a TCP RST. What happens next is decided by the
// `ConnectionState` value; the connection carries out the effects it returns (`perform`) and
// the actions its session returns.
import CLinux
import CHTTPParser
import Clocks
import Descriptors
import Glibc
import HTTPCore

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
let http2ClientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

final class Connection {
    /// The protocol session, from its start until it ends (lingering or closing).
    private enum Session {
        case http2(HTTP2Session)
        case http1(HTTP1Session)
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
    /// The phase and flags: changed only by its events, whose effects `perform` carries out.
    private var state: ConnectionState
    private var session: Session?
    private var sniffed: [UInt8] = []
    private var context: ConnectionContext?
    /// Bytes waiting for the socket.
    let output = OutputBuffer()
    private var lastActivity: UInt64
    /// Until a protocol session starts (TLS handshake, preface sniffing), the connection is
    /// held to the request head deadline from the moment it was accepted.
    private let acceptedNanos: UInt64
    /// Reading stops while this much output is unsent, so a client that sends requests but
    /// never reads the answers cannot make us buffer without bound (a non-reading client
    /// cost ~0.8 MB a connection at 1 MB).
    static let outputHighWater = 64 * 1024
    /// Requests on this connection waiting for a deferred answer (`DeferredAnswers`): the
    /// connection is not idle while it owes one.
    var awaitedAnswers = 0
    /// The socket is closed and the connection gone from its loop.
    private(set) var isClosed = false

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
        }
        state = ConnectionState(isTLS: listener.tls != nil)
    }

    // MARK: Effects

    /// Carries out `effects` in their declared order, stopping once the connection is closed.
    /// The state has already moved on (it may say closed while the write before the close
    /// runs): what the effects need is the session and the socket, which live here.
    @inline(__always)
    private func perform(_ effects: ConnectionEffects) {
        if effects.isEmpty { return }
        performEach(effects)
    }

    private func performEach(_ effects: ConnectionEffects) {
        if effects.contains(.schedule) { scheduleFollowUps() }
        if effects.contains(.updateInterest) { updateInterest() }
        if effects.contains(.advanceHandshake), !isClosed { advanceHandshake() }
        if effects.contains(.startHTTP2), !isClosed { startHTTP2() }
        if effects.contains(.startHTTP1), !isClosed { startHTTP1() }
        if effects.contains(.shutDownSession), !isClosed { shutDownSession() }
        if effects.contains(.write), !isClosed { flush() }
        if effects.contains(.resumeInput), !isClosed { resumeHeldInput() }
        if effects.contains(.read), !isClosed { readAndProcess() }
        if effects.contains(.discardInput), !isClosed { discardInput() }
        if effects.contains(.linger), !isClosed { linger() }
        if effects.contains(.close), !isClosed { tearDown() }
    }

    /// Carries out what a session's call returned.
    @inline(__always)
    private func perform(_ actions: SessionActions) {
        if actions.isEmpty { return }
        perform(state.sessionReturned(actions))
    }

    // MARK: Events

    @inline(__always)
    func handle(events: UInt32) {
        if events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { perform(state.hungUp()) }
        if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { perform(state.readable()) }
        if events & EPOLLOUT.rawValue != 0 { perform(state.writable()) }
    }

    private func advanceHandshake() {
        guard let tls else { return }
        let outcome: HandshakeOutcome
        switch tls.handshake() {
        case .done:
            lastActivity = loop.now
            outcome = .done(tls.negotiatedProtocol)
        case .wantRead: outcome = .wantRead
        case .wantWrite: outcome = .wantWrite
        case .closed, .failed: outcome = .failed
        }
        perform(state.handshook(outcome))
    }

    private func readAndProcess() {
        guard state.readsInput else { return }
        let buffer = loop.readBuffer
        var rounds = 0
        let turnStarted = SystemClock.monotonicNanoseconds()
        // A limit on rounds and on time (LoopTurn) keeps one busy client from starving the
        // others (level-triggered epoll brings us back); decrypted bytes OpenSSL already holds
        // must be drained now, since epoll will not report them.
        reading: while (rounds < LoopTurn.maximumReads && SystemClock.monotonicNanoseconds() &- turnStarted < LoopTurn.budgetNanos)
                        || tls?.hasPendingData == true {
            if output.unsent >= Connection.outputHighWater {
                perform(state.outputBackedUp())
                break
            }
            rounds += 1
            let count: Int
            if let tls {
                switch tls.read(into: buffer) {
                case let .done(read): count = read
                case .wantRead: break reading
                case .wantWrite:
                    perform(state.writeBlocked())
                    break reading
                case .closed:
                    perform(state.peerClosed())
                    return
                case .failed:
                    perform(state.close())
                    return
                }
            } else {
                switch try? systemCall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
                case .done(let read) where read > 0: count = read
                case .done:
                    perform(state.peerClosed())
                    return
                case .wouldBlock: break reading
                case nil:
                    perform(state.close())
                    return
                }
            }
            lastActivity = loop.now
            receive(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
            switch state.phase {
            case .closed, .lingering: return
            default: break
            }
            if state.pausedForSession { break }  // the HTTP/1.1 session holds input
            if tls == nil && count < buffer.count { break }
        }
        flush()
        if state.pausedForSession && !isClosed { resumeHeldInput() }
    }

    /// Hands received bytes to the session (or the sniffer). What the session writes is
    /// written once the reads of this turn are done.
    private func receive(_ bytes: UnsafeRawBufferPointer) {
        switch session {
        case let .http2(session)?: perform(session.receive(bytes))
        case let .http1(session)?: perform(session.receive(bytes))
        case nil: if state.phase == .sniffing { sniff(bytes) }
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
            perform(state.sniffed(http2: isHTTP2))
            receive(bytes)
            return
        }
        sniffed.append(contentsOf: bytes)
        let compared = min(sniffed.count, http2ClientPreface.count)
        let matches = sniffed[0..<compared].elementsEqual(http2ClientPreface[0..<compared])
        if !matches {
            perform(state.sniffed(http2: false))
        } else if sniffed.count >= http2ClientPreface.count {
            perform(state.sniffed(http2: true))
        } else {
            return
        }
        let pending = sniffed
        sniffed = []
        pending.withUnsafeBytes { receive($0) }
    }

    /// The context the handler sees for this connection's session, announced to it.
    private func openContext(_ version: HTTPVersion) -> ConnectionContext {
        let context = ConnectionContext(id: id, version: version, isTLS: state.isTLS, peer: peer)
        context.clientCertificateDER = tls?.peerCertificateDER()
        self.context = context
        listener.handler.connectionOpened(context)
        return context
    }

    private func startHTTP2() {
        let context = openContext(.http2)
        guard let started = HTTP2Session(context: context, handler: listener.handler, resources: loop.sessionResources) else {
            perform(state.close())
            return
        }
        session = .http2(started)
    }

    private func startHTTP1() {
        let context = openContext(.http1_1)
        session = .http1(HTTP1Session(context: context, handler: listener.handler, output: output, resources: loop.sessionResources))
    }

    private func shutDownSession() {
        switch session {
        case let .http2(session)?: session.beginShutdown()
        case let .http1(session)?: session.beginShutdown()
        case nil: break
        }
    }

    /// Sets up on the loop the timers and deferred waits the session recorded.
    private func scheduleFollowUps() {
        switch session {
        case let .http2(session)?:
            session.takeFollowUps { followUp in
                switch followUp {
                case let .delayedAnswer(id, nanos):
                    loop.schedule(.delayedHTTP2(self, streamID: Int32(truncatingIfNeeded: id)), after: nanos)
                case let .deferredAnswer(responder, id):
                    loop.deferredAnswers.wait(for: responder, target: .http2(self, streamID: Int32(truncatingIfNeeded: id)), loop: loop)
                }
            }
        case let .http1(session)?:
            session.takeFollowUps { followUp in
                switch followUp {
                case let .delayedAnswer(id, nanos):
                    loop.schedule(.delayedHTTP1(self, sequence: id), after: nanos)
                case let .deferredAnswer(responder, id):
                    loop.deferredAnswers.wait(for: responder, target: .http1(self, sequence: id), loop: loop)
                }
            }
        case nil:
            break
        }
    }

    // MARK: Output

    /// Moves everything the session has ready into `output` and writes it; a session that is
    /// finished once it has all gone out is the event `sessionFinished`.
    private func flush() {
        switch session {
        case let .http2(session)?:
            while true {
                if output.unsent >= Connection.outputHighWater {
                    guard writeOutput() else { return }
                    if output.unsent >= Connection.outputHighWater / 2 { break }  // socket is full
                }
                guard let frames = session.pendingOutput() else {
                    perform(state.close())
                    return
                }
                if frames.isEmpty { break }
                output.bytes.append(contentsOf: frames)
            }
            guard writeOutput() else { return }
            if output.isDrained && session.isFinished { perform(state.sessionFinished()) }
        case let .http1(session)?:
            guard writeOutput() else { return }
            // A streamed body goes on only as the socket takes what was written of it.
            var streamed: SessionActions = []
            while output.isDrained {
                let progress = session.continueStreaming()
                streamed.formUnion(progress)
                guard progress.contains(.write) else { break }
                guard writeOutput() else { return }
            }
            // Reaching a `.closeConnection` answer behind the streamed one closes, now that what
            // came before it is written.
            perform(streamed.subtracting(.write))
            if !isClosed && output.isDrained && session.isFinished { perform(state.sessionFinished()) }
        case nil:
            _ = writeOutput()
        }
    }

    /// Writes as much of `output` as the socket takes. Returns false if the connection closed.
    private func writeOutput() -> Bool {
        while output.start < output.bytes.count {
            let start = output.start
            let written: Int = output.bytes.withUnsafeBytes { raw in
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
                perform(state.close())
                return false
            }
            if written == 0 {
                perform(state.writeBlocked())
                return !isClosed
            }
            output.start += written
            lastActivity = loop.now  // a slow reader that is still reading is not idle
        }
        output.reset()
        perform(state.outputDrained())  // level-triggered: pending input is reported again
        return !isClosed
    }

    private func updateInterest() {
        guard !isClosed, !state.isClosed else { return }
        let events = (state.readsPaused ? 0 : EPOLLIN.rawValue) | (state.wantsWritable ? EPOLLOUT.rawValue : 0)
        // The kernel refusing a change of interest (the socket is gone) leaves nothing to serve.
        do throws(SystemCallError) {
            try loop.modify(fd, events: events)
        } catch {
            perform(state.close())
        }
    }

    // MARK: Timers

    /// The idle timeout, and the request head and body deadlines (`requestHeadTimeout`).
    func checkTimeouts() {
        switch state.phase {
        case .closed, .lingering: return
        case .handshaking, .sniffing:
            if loop.now &- acceptedNanos >= loop.settings.requestHeadTimeoutNanos {
                perform(state.headDeadlinePassed())
                return
            }
        case .http2, .http1:
            switch session {
            case let .http2(session)?: perform(session.checkDeadlines())
            case let .http1(session)?: perform(session.checkDeadlines())
            case nil: break
            }
        }
        if awaitedAnswers == 0, loop.now &- lastActivity >= loop.settings.idleTimeoutNanos {
            perform(state.idleTimedOut())
        }
    }

    func fireDelayedHTTP2(streamID: Int32) {
        guard case let .http2(session)? = session else { return }
        perform(session.fireDelayedResponse(streamID: streamID).union(.write))
    }

    func fireDelayedHTTP1(sequence: Int) {
        guard case let .http1(session)? = session else { return }
        perform(session.fireDelayedResponse(sequence: sequence).union(.write))
        if !isClosed { resumeHeldInput() }
    }

    /// An HTTP/1.1 session that paused parsing (PipelineLimit, outputHighWater) goes on once
    /// its answers have gone out, and then so does reading.
    /// Each round parses at least one held request (or all that is held), so this ends.
    private func resumeHeldInput() {
        guard case let .http1(session)? = session else { return }
        while session.holdsInput && !isClosed {
            guard let actions = session.resumeParsing() else { break }  // still too much pending: wait for timers or writes
            perform(actions.union(.write))
        }
        if !isClosed && state.pausedForSession && !session.holdsInput {
            perform(state.sessionReleasedInput())  // level-triggered: what waits in the socket is reported again
        }
    }

    /// A deferred answer has come (`DeferredAnswers`): sent like a delayed response whose
    /// time is up.
    func answerDeferred(_ target: DeferredTarget, with response: HTTPResponse) {
        switch (session, target) {
        case let (.http2(session)?, .http2(_, streamID)):
            perform(session.answerDeferred(streamID: streamID, with: response).union(.write))
        case let (.http1(session)?, .http1(_, sequence)):
            perform(session.answerDeferred(sequence: sequence, with: response).union(.write))
        default:
            break
        }
    }

    // MARK: Closing

    /// Server shutdown (`ConnectionState.beginShutdown`).
    func beginShutdown() {
        perform(state.beginShutdown())
    }

    /// Ends the session, shuts down our write side and reads until the peer closes, so the
    /// last response (or GOAWAY) is not lost to a reset caused by unread input.
    private func linger() {
        endSession()
        tls?.sendCloseNotify()
        // A peer already gone (ENOTCONN) is found out by the reads that follow.
        _ = try? blockingSystemCall("shutdown") { shutdown(fd, Int32(SHUT_WR)) }
        loop.schedule(.lingerExpired(self), after: loop.settings.lingerNanos)
    }

    private func discardInput() {
        let buffer = loop.readBuffer
        while true {
            switch try? systemCall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
            case .done(let read) where read > 0: continue
            case .wouldBlock: return
            case .done, nil:
                perform(state.close())
                return
            }
        }
    }

    private func endSession() {
        switch session {
        case let .http2(session)?: session.destroy()
        case let .http1(session)?: session.destroy()
        case nil: break
        }
        session = nil
        if let context {
            self.context = nil
            listener.handler.connectionClosed(context)
        }
    }

    /// Closes the connection now (the linger timer, the shutdown grace period, the loop's
    /// end). Safe to call more than once; never called from inside an nghttp2 or http-parser
    /// callback (those record actions in the session).
    func close() {
        perform(state.close())
    }

    private func tearDown() {
        isClosed = true
        endSession()
        loop.unregister(fd)
        descriptor = nil  // closes the socket
        tls = nil
        output.discard()
        loop.connections[fd] = nil
        loop.state.openConnections.wrappingSubtract(1, ordering: .relaxed)
    }
}
