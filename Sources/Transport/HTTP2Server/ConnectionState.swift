// A connection's life as a value (swift-nio-http2's state machines, in small): its phase and
// its flags change only through events, and each event returns the effects the connection
// must carry out: read, write, change epoll's interest, linger, close. No socket, no session,
// no clock: every transition is tested on its own (ConnectionStateTests).

/// The TLS handshake's progress, as the state needs it.
enum HandshakeOutcome: Equatable {
    /// Done: ALPN's choice, or none (then the preface is sniffed).
    case done(NegotiatedProtocol)
    case wantRead
    case wantWrite
    /// The peer closed or the handshake failed.
    case failed
}

/// What the connection does after an event. `Connection.perform` carries them out in the
/// order they are declared here, and stops once the connection has closed.
struct ConnectionEffects: OptionSet, Equatable, CustomStringConvertible {
    let rawValue: UInt16

    /// Set the timers and deferred-answer waits the session has recorded (`SessionFollowUp`).
    static let schedule = ConnectionEffects(rawValue: 1 << 0)
    /// Tell epoll the new interest: input unless `ConnectionState.readsPaused`, output while
    /// `ConnectionState.wantsWritable`. A refusal is the event `close`.
    static let updateInterest = ConnectionEffects(rawValue: 1 << 1)
    /// Go on with the TLS handshake; its outcome is the event `handshook`.
    static let advanceHandshake = ConnectionEffects(rawValue: 1 << 2)
    /// Start the HTTP/2 session; if it cannot start, the event `close`.
    static let startHTTP2 = ConnectionEffects(rawValue: 1 << 3)
    static let startHTTP1 = ConnectionEffects(rawValue: 1 << 4)
    /// The server is stopping, or an idle HTTP/2 connection ends: the session says so
    /// (GOAWAY NO_ERROR), or HTTP/1.1 closes after the request in progress.
    static let shutDownSession = ConnectionEffects(rawValue: 1 << 5)
    /// Write what is queued: the session's frames and answers, the output buffer.
    static let write = ConnectionEffects(rawValue: 1 << 6)
    /// HTTP/1.1: parse the input the session held back, now that answers have gone out.
    static let resumeInput = ConnectionEffects(rawValue: 1 << 7)
    /// Read and process input (unless reading has paused meanwhile).
    static let read = ConnectionEffects(rawValue: 1 << 8)
    /// Lingering: read input and throw it away.
    static let discardInput = ConnectionEffects(rawValue: 1 << 9)
    /// End the session, send close_notify, shut down the write side, start the linger timer.
    static let linger = ConnectionEffects(rawValue: 1 << 10)
    /// Close the socket now.
    static let close = ConnectionEffects(rawValue: 1 << 11)

    private static let names: [(ConnectionEffects, String)] = [
        (.schedule, "schedule"), (.updateInterest, "updateInterest"), (.advanceHandshake, "advanceHandshake"),
        (.startHTTP2, "startHTTP2"), (.startHTTP1, "startHTTP1"), (.shutDownSession, "shutDownSession"),
        (.write, "write"), (.resumeInput, "resumeInput"), (.read, "read"), (.discardInput, "discardInput"),
        (.linger, "linger"), (.close, "close"),
    ]

    var description: String { "[" + Self.names.filter { contains($0.0) }.map { "." + $0.1 }.joined(separator: ", ") + "]" }
}

/// What a session's call asks of its connection (`HTTP2Session`, `HTTP1Session`). What the C
/// callbacks decide during the call is gathered in the session and returned when it ends.
struct SessionActions: OptionSet, Equatable {
    let rawValue: UInt8

    /// Output is queued: write it.
    static let write = SessionActions(rawValue: 1 << 0)
    /// The session recorded timers or deferred-answer waits (`SessionFollowUp`): set them.
    static let schedule = SessionActions(rawValue: 1 << 1)
    /// HTTP/1.1 parsing paused with input held back (`PipelineLimit`): stop reading until
    /// the session resumes it.
    static let holdInput = SessionActions(rawValue: 1 << 2)
    /// The session is over (a fatal protocol error, its GOAWAY queued): write, then linger.
    static let linger = SessionActions(rawValue: 1 << 3)
    /// Write what is queued (a GOAWAY), then close without waiting for the peer.
    static let closeAfterWrite = SessionActions(rawValue: 1 << 4)
    /// Close at once, writing nothing more (`ConnectionAction.closeConnection`).
    static let close = SessionActions(rawValue: 1 << 5)
}

/// A connection's phase and flags. Events that do not apply to the phase change nothing and
/// return no effects.
struct ConnectionState: Equatable {
    enum Phase: Equatable {
        /// TLS handshake in progress.
        case handshaking
        /// Waiting for enough bytes to tell the HTTP/2 preface from an HTTP/1.1 request line.
        case sniffing
        case http2
        case http1
        /// Session ended and write side shut down; reading and discarding until EOF or the
        /// linger timer, so the peer gets our last bytes instead of a TCP RST.
        case lingering
        case closed
    }

    private(set) var phase: Phase
    let isTLS: Bool
    /// Output waits for the socket: epoll reports it writable.
    private(set) var wantsWritable = false
    /// Reading is off because output is backed up (`Connection.outputHighWater`), so a client
    /// that sends but never reads cannot make us buffer without bound...
    private(set) var pausedForOutput = false
    /// ...or because the HTTP/1.1 session holds answers it may not add to (`PipelineLimit`).
    private(set) var pausedForSession = false
    /// The server is stopping (`beginShutdown` has been taken).
    private(set) var shuttingDown = false

    init(isTLS: Bool) {
        self.isTLS = isTLS
        phase = isTLS ? .handshaking : .sniffing
    }

    var readsPaused: Bool { pausedForOutput || pausedForSession }
    var isClosed: Bool { phase == .closed }
    /// Input is read and handed on (the protocol is being found or spoken, reading not paused
    /// by the session).
    var readsInput: Bool {
        switch phase {
        case .sniffing, .http2, .http1: !pausedForSession
        case .handshaking, .lingering, .closed: false
        }
    }

    private var hasSession: Bool { phase == .http2 || phase == .http1 }

    // MARK: Socket events

    /// epoll reported a hang-up or an error. With reading paused (interest 0) it reports it
    /// again on every turn, level-triggered, and nothing can be sent any more: close. With
    /// reading on, the read that follows finds out.
    mutating func hungUp() -> ConnectionEffects {
        readsPaused ? close() : []
    }

    mutating func readable() -> ConnectionEffects {
        switch phase {
        case .closed: []
        case .lingering: .discardInput
        case .handshaking: .advanceHandshake
        case .sniffing, .http2, .http1: pausedForSession ? [] : .read
        }
    }

    mutating func writable() -> ConnectionEffects {
        switch phase {
        case .closed: []
        case .lingering: setWritable(false)
        case .handshaking: .advanceHandshake
        // TLS may have been waiting to write before it could read further.
        case .sniffing, .http2, .http1: isTLS ? [.write, .resumeInput, .read] : [.write, .resumeInput]
        }
    }

    mutating func handshook(_ outcome: HandshakeOutcome) -> ConnectionEffects {
        guard phase == .handshaking else { return [] }
        switch outcome {
        case let .done(negotiated):
            var effects = setWritable(false)
            switch negotiated {
            case .http2: effects.formUnion(start(.http2))
            case .http1: effects.formUnion(start(.http1))
            case .none: phase = .sniffing
            }
            return effects.union(.read)
        case .wantRead: return setWritable(false)
        case .wantWrite: return setWritable(true)
        case .failed: return close()
        }
    }

    /// The first bytes tell the protocol (prior-knowledge h2 starts with the preface).
    mutating func sniffed(http2: Bool) -> ConnectionEffects {
        guard phase == .sniffing else { return [] }
        return start(http2 ? .http2 : .http1)
    }

    /// The peer closed its side (EOF, close_notify): send what is ready (it may only have
    /// shut down its write side), then close.
    mutating func peerClosed() -> ConnectionEffects {
        switch phase {
        case .closed: []
        case .lingering: close()
        case .handshaking, .sniffing, .http2, .http1: close().union(.write)
        }
    }

    /// A write, or a TLS read, would block until the socket takes more.
    mutating func writeBlocked() -> ConnectionEffects {
        switch phase {
        case .closed, .lingering: []  // what is left unsent is given up with the write side
        case .handshaking, .sniffing, .http2, .http1: setWritable(true)
        }
    }

    /// `Connection.outputHighWater` is unsent: stop reading until it drains.
    mutating func outputBackedUp() -> ConnectionEffects {
        switch phase {
        case .closed, .lingering: []
        case .handshaking, .sniffing, .http2, .http1: setPaused(forOutput: true)
        }
    }

    /// Everything queued has been written: no more output polling, and reading goes on
    /// (level-triggered, input that waited is reported again).
    mutating func outputDrained() -> ConnectionEffects {
        guard phase != .closed else { return [] }
        let changed = wantsWritable || pausedForOutput
        wantsWritable = false
        pausedForOutput = false
        return changed ? .updateInterest : []
    }

    // MARK: Session events

    /// What a session's call returned. `.close` wins over everything; `.closeAfterWrite` and
    /// `.linger` write first. Once lingering, only a close still applies.
    mutating func sessionReturned(_ actions: SessionActions) -> ConnectionEffects {
        guard hasSession else {
            // The connection lingers while the write of a session's last call is under way.
            guard phase == .lingering, !actions.isDisjoint(with: [.close, .closeAfterWrite]) else { return [] }
            return close()
        }
        var effects: ConnectionEffects = actions.contains(.schedule) ? .schedule : []
        if actions.contains(.close) { return effects.union(close()) }
        if actions.contains(.closeAfterWrite) { return effects.union(close()).union(.write) }
        if actions.contains(.linger) { return effects.union(beginLinger()).union(.write) }
        if actions.contains(.holdInput) { effects.formUnion(setPaused(forSession: true)) }
        if actions.contains(.write) { effects.insert(.write) }
        return effects
    }

    /// The HTTP/1.1 session has parsed all it held back: reading goes on.
    mutating func sessionReleasedInput() -> ConnectionEffects {
        guard hasSession else { return [] }
        return setPaused(forSession: false)
    }

    /// The session has sent its last bytes and wants nothing more (after a GOAWAY and the
    /// last stream, or `connection: close`).
    mutating func sessionFinished() -> ConnectionEffects {
        guard hasSession else { return [] }
        return beginLinger()
    }

    // MARK: Timers and the server

    /// The request head deadline has passed before a protocol session started.
    mutating func headDeadlinePassed() -> ConnectionEffects {
        switch phase {
        case .handshaking, .sniffing: close()
        case .http2, .http1, .lingering, .closed: []
        }
    }

    /// Nothing has happened for the idle timeout. HTTP/2 peers are told why (GOAWAY
    /// NO_ERROR, RFC 9113 §6.8) before the close.
    mutating func idleTimedOut() -> ConnectionEffects {
        switch phase {
        case .closed, .lingering: []
        case .http2: close().union([.shutDownSession, .write])
        case .handshaking, .sniffing, .http1: close()
        }
    }

    /// Server shutdown: HTTP/2 gets GOAWAY(NO_ERROR) and finishes its open streams; HTTP/1.1
    /// finishes the request in progress; connections without a protocol yet just close.
    /// Taken once.
    mutating func beginShutdown() -> ConnectionEffects {
        guard !shuttingDown else { return [] }
        switch phase {
        case .http2, .http1:
            shuttingDown = true
            return [.shutDownSession, .write]
        case .handshaking, .sniffing:
            shuttingDown = true
            return close()
        case .lingering, .closed:
            return []
        }
    }

    /// Close now: an I/O error, epoll refusing the interest, a session that cannot start, the
    /// linger timer, the shutdown grace period. Once closed, nothing applies any more.
    mutating func close() -> ConnectionEffects {
        guard phase != .closed else { return [] }
        phase = .closed
        return .close
    }

    // MARK: Helpers

    /// No session starts once the server is stopping: `beginShutdown` closes connections
    /// still handshaking or sniffing.
    private mutating func start(_ next: Phase) -> ConnectionEffects {
        phase = next
        return next == .http2 ? .startHTTP2 : .startHTTP1
    }

    private mutating func beginLinger() -> ConnectionEffects {
        phase = .lingering
        let changed = wantsWritable || pausedForOutput || pausedForSession
        wantsWritable = false
        pausedForOutput = false
        pausedForSession = false
        return changed ? [.updateInterest, .linger] : .linger
    }

    private mutating func setWritable(_ enabled: Bool) -> ConnectionEffects {
        guard enabled != wantsWritable, phase != .closed else { return [] }
        wantsWritable = enabled
        return .updateInterest
    }

    private mutating func setPaused(forOutput paused: Bool) -> ConnectionEffects {
        guard paused != pausedForOutput, phase != .closed else { return [] }
        pausedForOutput = paused
        return .updateInterest
    }

    private mutating func setPaused(forSession paused: Bool) -> ConnectionEffects {
        guard paused != pausedForSession, phase != .closed else { return [] }
        pausedForSession = paused
        return .updateInterest
    }
}
