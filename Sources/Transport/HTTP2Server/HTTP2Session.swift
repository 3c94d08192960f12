// HTTP/2 on libnghttp2's server session, driven with mem_recv/mem_send so the connection
// owns the socket and batches writes. Callbacks are file-private functions that recover
// the session from nghttp2's user_data; nothing in them can throw. The session knows no
// connection and no loop: what it wants done it records, and its calls return it
// (`SessionActions`, `SessionFollowUp`).
import CNGHTTP2
import Clocks
import Glibc
import HTTPCore

/// One request stream: what has arrived so far, then the response being sent.
///
/// Its properties are `@exclusivity(unchecked)`: a stream is its session's alone, touched
/// only on that session's loop thread, by callbacks that never pass one of its properties
/// inout to code that reaches the stream again. The dynamic checks Swift makes on a class's
/// stored properties (`swift_beginAccess`, an entry in a per-thread set a write) were ~2.5%
/// of a recorded request, taken at every header, body chunk and reuse; without them the CPU
/// per request fell ~4% (Benchmarks/README.md, "Round 5").
final class HTTP2Stream {
    @exclusivity(unchecked) var method = ""
    @exclusivity(unchecked) var path = ""
    @exclusivity(unchecked) var authority: String?
    @exclusivity(unchecked) var scheme: String?
    @exclusivity(unchecked) var headers = HTTPFields()
    @exclusivity(unchecked) var body: [UInt8] = []
    @exclusivity(unchecked) var headerListSize = 0
    /// When its answer's body was submitted, until the body has all been handed to nghttp2
    /// (the peer's flow-control window let it out): what the send timeout watches.
    @exclusivity(unchecked) var responsePendingSince: UInt64?
    /// The trailer block's size, counted as a field section of its own (RFC 9110 §6.5, RFC 9113
    /// §6.5.2: SETTINGS_MAX_HEADER_LIST_SIZE bounds each): its fields are dropped, its cost not.
    @exclusivity(unchecked) var trailerListSize = 0
    @exclusivity(unchecked) var arrivalNanos: UInt64
    /// Monotonic time the request's header block ended without END_STREAM: its body must be
    /// complete within `requestBodyTimeout` of it. nil while the head is still arriving.
    @exclusivity(unchecked) var headEndedNanos: UInt64?
    /// Header list over SETTINGS_MAX_HEADER_LIST_SIZE: answered 431, never dispatched.
    @exclusivity(unchecked) var headersTooLarge = false
    /// A response (or reset) has been submitted, or the transport refused the request.
    @exclusivity(unchecked) var answered = false
    /// Send RST_STREAM(NO_ERROR) once the transport's own response has gone out, if the
    /// client is still sending.
    @exclusivity(unchecked) var resetAfterResponse = false
    @exclusivity(unchecked) var pendingResponse: HTTPResponse?
    /// The handler deferred its answer; the stream waits for it (`DeferredAnswers`).
    @exclusivity(unchecked) var deferred: DeferredResponse?
    @exclusivity(unchecked) var responseBody: [UInt8] = []
    @exclusivity(unchecked) var responseOffset = 0
    /// A body pulled piece by piece into `responseBody` as the window lets it out; nil once
    /// it has given its last piece.
    @exclusivity(unchecked) var streamedBody: (any StreamedBody)?

    init(arrivalNanos: UInt64) {
        self.arrivalNanos = arrivalNanos
        // Room for a push's headers (APNs: ~6 apns-*/authorization/content-type, plus what the
        // client adds; a provider token is ~170 bytes) in one allocation each, instead of
        // growing as they arrive.
        headers.reserveCapacity(fields: Self.expectedHeaderCount, bytes: Self.expectedHeaderBytes)
    }

    static let expectedHeaderCount = 12
    static let expectedHeaderBytes = 512

    /// A body buffer up to this capacity is kept for the stream's next use (APNs' largest
    /// payload is 5120 bytes); a larger one is freed, so a spare stream holds little.
    static let bodyCapacityKept = 8192

    /// Empties a closed stream for its session's next one (`HTTP2Session.spareStreams`),
    /// keeping the header and body buffers' capacity: a new stream was three allocations.
    func reuse(arrivalNanos: UInt64) {
        method = ""
        path = ""
        authority = nil
        scheme = nil
        headers.removeAll(keepingCapacity: true)
        if body.capacity > Self.bodyCapacityKept { body = [] } else { body.removeAll(keepingCapacity: true) }
        headerListSize = 0
        trailerListSize = 0
        responsePendingSince = nil
        self.arrivalNanos = arrivalNanos
        headEndedNanos = nil
        headersTooLarge = false
        answered = false
        resetAfterResponse = false
        pendingResponse = nil
        deferred = nil
        responseBody = []
        responseOffset = 0
        streamedBody = nil
    }
}

/// Why the server itself sends GOAWAY (RFC 9113 §6.8), each with its error code and debug
/// data: one place submits them all (`HTTP2Session.submitGoAway`).
enum GoAwayReason {
    /// Server shutdown, or an idle connection: NO_ERROR, streams in flight finish.
    case shutdown
    /// A header block not complete within the request head timeout.
    case headerBlockTimeout
    /// Answers the peer does not take (its flow-control window stays shut).
    case sendTimeout
    /// Header lists far over SETTINGS_MAX_HEADER_LIST_SIZE, again (`HeaderListGuard`).
    case headerListBomb
    /// Too many streams reset before their answer (`RapidResetGuard`).
    case rapidReset
    /// A request over the acknowledged stream limit, with the configured code and text
    /// (`HTTP2Settings.streamLimitGoAwayDebugData`: the gateway hands APNs' wording in).
    case streamLimit(errorCode: UInt32, debugData: [UInt8])
    /// The application's `ConnectionAction.goAway`.
    case application(errorCode: UInt32, debugData: [UInt8])

    var errorCode: UInt32 {
        switch self {
        case .shutdown: HTTP2ErrorCode.noError
        case .headerBlockTimeout, .sendTimeout, .headerListBomb, .rapidReset: HTTP2ErrorCode.enhanceYourCalm
        case let .streamLimit(errorCode, _), let .application(errorCode, _): errorCode
        }
    }

    var debugData: [UInt8] {
        switch self {
        case .shutdown: []
        case .headerBlockTimeout: Self.headerTimeoutDebugData
        case .sendTimeout: Self.sendTimeoutDebugData
        case .headerListBomb: Self.headerBombDebugData
        case .rapidReset: RapidResetGuard.goAwayDebugData
        case let .streamLimit(_, debugData), let .application(_, debugData): debugData
        }
    }

    /// The transport's own GOAWAYs that end the connection: nghttp2 is not to send one of its
    /// own when the session then fails (`HTTP2Session.receive`).
    var replacesLibraryGoAway: Bool {
        switch self {
        case .shutdown, .application: false
        case .headerBlockTimeout, .sendTimeout, .headerListBomb, .rapidReset, .streamLimit: true
        }
    }

    static let headerTimeoutDebugData: [UInt8] = Array("request header block not complete in time".utf8)
    static let sendTimeoutDebugData: [UInt8] = Array("answers not taken in time: the flow-control window stays shut".utf8)
    static let headerBombDebugData: [UInt8] = Array("header lists far over SETTINGS_MAX_HEADER_LIST_SIZE".utf8)
}

final class HTTP2Session {
    let context: ConnectionContext
    let handler: any HTTPHandler
    private let resources: SessionResources
    private var session: OpaquePointer?
    /// What the callbacks of the call in progress ask of the connection.
    private var outbox = SessionOutbox()
    /// Owns the stream objects; nghttp2's stream user data points at them unretained.
    private var streams: [Int32: HTTP2Stream] = [:]
    /// Closed streams kept for the next ones (`HTTP2Stream.reuse`), at most `spareStreamsKept`.
    private var spareStreams: [HTTP2Stream] = []
    /// A sender keeps its window full, so as many streams open as close: up to the streams a
    /// connection had open at once are kept (h2load `-m 100` closes them in bursts, and 16 kept
    /// still made 0.8 streams a request). What a spare holds is small (`HTTP2Stream.reuse`).
    private static let spareStreamsKept = 128
    /// The pseudo-headers as Strings, made again only when they change.
    private var pseudoHeaders = PseudoHeaderStrings()
    /// Our own GOAWAY (a stream-limit violation, rapid reset) replaced nghttp2's.
    private var ownGoAwaySubmitted = false
    /// Client resets of streams we had not finished answering still allowed (RapidResetGuard).
    private var unansweredResetBudget: TokenBucket
    /// The last stream id of the GOAWAY we submitted. nghttp2 takes new streams until the
    /// GOAWAY is written, but the client sends every stream above it again elsewhere (RFC 9113
    /// §6.8), so those must not reach the handler: a push would be delivered twice.
    private var goAwayLastStreamID = Int32.max
    /// Body bytes held for incomplete streams, all streams together.
    private var bodyBudget: BufferedBodyBudget
    private var headerListGuard: HeaderListGuard
    /// Runs while a header block (HEADERS + CONTINUATION) is arriving: nothing else can be
    /// read on the connection until it ends (RFC 9113 §6.10), so a stalled one stalls all.
    private var headerBlockDeadline: Deadline
    /// When a response body byte last went to nghttp2 (the send timeout measures from it).
    private var lastResponseProgressNanos: UInt64 = 0

    init?(context: ConnectionContext, handler: any HTTPHandler, resources: SessionResources) {
        self.context = context
        self.handler = handler
        self.resources = resources
        let settings = resources.settings
        bodyBudget = BufferedBodyBudget(limit: settings.maxBufferedBodyBytesPerConnection)
        headerListGuard = HeaderListGuard(limit: resources.maxHeaderListSize)
        headerBlockDeadline = Deadline(durationNanos: settings.requestHeadTimeoutNanos)
        unansweredResetBudget = RapidResetGuard.budget(nowNanos: resources.clock.now)
        var created: OpaquePointer?
        guard nghttp2_session_server_new2(&created, resources.http2Callbacks, Unmanaged.passUnretained(self).toOpaque(),
                                          resources.http2Options) == 0, let created else { return nil }
        session = created
        let http2 = settings.http2
        let entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: http2.headerTableSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: handler.initialMaxConcurrentStreams()),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: http2.initialWindowSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: http2.maxFrameSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: http2.maxHeaderListSize),
        ]
        guard nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count) == 0 else {
            nghttp2_session_del(created)
            session = nil
            return nil
        }
    }

    func destroy() {
        if let session { nghttp2_session_del(session) }
        session = nil
        for stream in streams.values { cancelDeferred(stream) }
        streams.removeAll()
        spareStreams.removeAll()
        outbox.clear()
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }


    /// Feeds received bytes to nghttp2. `.linger` on a fatal session error: the connection
    /// sends what nghttp2 queued (e.g. GOAWAY) and ends. Written output is not reported: the
    /// connection writes after its reads.
    func receive(_ bytes: UnsafeRawBufferPointer) -> SessionActions {
        guard let session else { return .linger }
        guard let base = bytes.baseAddress else { return [] }
        let consumed = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if consumed < 0 {
            if !ownGoAwaySubmitted {
                // nghttp2 queues its own GOAWAY for most frame errors (then this is a no-op);
                // for floods it queues nothing, and flooding is not a protocol error.
                _ = nghttp2_session_terminate_session(session, Self.goAwayCode(forLibraryError: Int32(consumed)))
            }
            outbox.ask(.linger)
        }
        return outbox.take()
    }

    /// The next frames nghttp2 has to send, valid until the next call to nghttp2; empty when
    /// it has none, nil on a fatal error (or once the session has ended).
    @inline(__always)
    func pendingOutput() -> UnsafeBufferPointer<UInt8>? {
        guard let session else { return nil }
        var data: UnsafePointer<UInt8>?
        let produced = nghttp2_session_mem_send(session, &data)
        if produced < 0 { return nil }
        return UnsafeBufferPointer(start: data, count: data == nil ? 0 : produced)
    }

    /// Hands the recorded timers and deferred waits to `body`, and forgets them.
    func takeFollowUps(_ body: (SessionFollowUp) -> Void) { outbox.takeFollowUps(body) }

    /// The GOAWAY error code for a fatal nghttp2 error: ENHANCE_YOUR_CALM (RFC 9113 §7: "the
    /// endpoint is detecting that its peer is exhibiting a behavior that might be generating
    /// excessive load") for floods of PING/SETTINGS (answers queued faster than they are read)
    /// and of CONTINUATION frames; PROTOCOL_ERROR for the rest.
    static func goAwayCode(forLibraryError error: Int32) -> UInt32 {
        switch error {
        case NGHTTP2_ERR_FLOODED.rawValue, NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue,
             NGHTTP2_ERR_TOO_MANY_SETTINGS.rawValue, NGHTTP2_ERR_TOO_MANY_INFLIGHT_SETTINGS.rawValue:
            return HTTP2ErrorCode.enhanceYourCalm
        default:
            return HTTP2ErrorCode.protocolError
        }
    }

    /// The request head and body deadlines (`ServerConfiguration.requestHeadTimeout`,
    /// `requestBodyTimeout`) and the send timeout: `.write` for 408 answers, `.closeAfterWrite`
    /// with a GOAWAY queued.
    func checkDeadlines() -> SessionActions {
        guard session != nil else { return [] }
        let now = resources.clock.now
        if headerBlockDeadline.hasExpired(nowNanos: now) {
            headerBlockDeadline.stop()
            submitGoAway(.headerBlockTimeout)
            // Nothing more is read: the rest of the stalled block could not be decoded anyway.
            outbox.ask(.closeAfterWrite)
            return outbox.take()
        }
        // Answers the peer does not take: no body byte let out for the send timeout while one
        // waits (its window stays shut; PINGs keep it from being idle).
        if let waitingSince = streams.values.lazy.compactMap(\.responsePendingSince).min(),
           now &- max(waitingSince, lastResponseProgressNanos) >= resources.settings.responseSendTimeoutNanos {
            submitGoAway(.sendTimeout)
            outbox.ask(.closeAfterWrite)
            return outbox.take()
        }
        let bodyTimeout = resources.settings.requestBodyTimeoutNanos
        for (streamID, stream) in streams where !stream.answered {
            guard let headEnded = stream.headEndedNanos, now &- headEnded >= bodyTimeout else { continue }
            bodyBudget.release(stream.body.count)
            stream.body = []
            refuse(streamID: streamID, stream: stream, status: 408)
            outbox.ask(.write)
        }
        return outbox.take()
    }

    /// Both directions are done (after a GOAWAY and the last stream): close the connection.
    var isFinished: Bool {
        guard let session else { return true }
        return nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    /// Server shutdown, or an idle connection (RFC 9113 §6.8): GOAWAY NO_ERROR naming the
    /// last stream we took, so streams in flight finish and the client retries anything newer
    /// elsewhere.
    func beginShutdown() {
        submitGoAway(.shutdown)
    }

    /// GOAWAY for `reason`, naming the last stream we took (never more than an earlier GOAWAY
    /// named: RFC 9113 §6.8 lets the number only go down). The one place a GOAWAY is submitted.
    private func submitGoAway(_ reason: GoAwayReason) {
        guard let session else { return }
        if reason.replacesLibraryGoAway { ownGoAwaySubmitted = true }
        goAwayLastStreamID = min(goAwayLastStreamID, nghttp2_session_get_last_proc_stream_id(session))
        _ = reason.debugData.withUnsafeBufferPointer { debug in
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), goAwayLastStreamID, reason.errorCode,
                                  debug.baseAddress, debug.count)
        }
    }

    func answerDeferred(streamID: Int32, with response: HTTPResponse) -> SessionActions {
        guard let stream = streams[streamID], stream.deferred != nil else { return [] }
        stream.deferred = nil
        submit(response, streamID: streamID, stream: stream)
        return outbox.take()
    }

    /// The stream ends before its deferred answer came (client reset, connection closed).
    private func cancelDeferred(_ stream: HTTP2Stream) {
        guard let responder = stream.deferred else { return }
        stream.deferred = nil
        outbox.forget(responder)
        resources.deferredAnswers.cancel(responder)
    }

    func fireDelayedResponse(streamID: Int32) -> SessionActions {
        guard let stream = streams[streamID], let response = stream.pendingResponse else { return [] }
        stream.pendingResponse = nil
        submit(response, streamID: streamID, stream: stream)
        return outbox.take()
    }

    // MARK: Callbacks (called by nghttp2 from inside mem_recv / mem_send)

    @inline(__always)
    fileprivate func stream(_ streamID: Int32) -> HTTP2Stream? {
        guard let session, let pointer = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
        return Unmanaged<HTTP2Stream>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// `body` on the stream without retaining it, for the callbacks that come once a header or
    /// a DATA chunk (`streams` owns it while nghttp2 knows it).
    @inline(__always)
    private func withStream(_ streamID: Int32, _ body: (HTTP2Stream) -> Int32) -> Int32 {
        guard let session, let pointer = nghttp2_session_get_stream_user_data(session, streamID) else { return 0 }
        return Unmanaged<HTTP2Stream>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }

    fileprivate func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let session else { return 0 }
        if frame.pointee.headers.cat == NGHTTP2_HCAT_HEADERS {
            // A trailer block: it must arrive within the head deadline as a request's head must.
            headerBlockDeadline.restart(nowNanos: resources.clock.now)
            return withStream(frame.pointee.hd.stream_id) { stream in
                stream.trailerListSize = 0
                return 0
            }
        }
        guard frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
        let streamID = frame.pointee.hd.stream_id
        headerBlockDeadline.restart(nowNanos: resources.clock.now)
        let arrival = SystemClock.wallClockNanoseconds()
        let stream: HTTP2Stream
        if let spare = spareStreams.popLast() {
            spare.reuse(arrivalNanos: arrival)
            stream = spare
        } else {
            stream = HTTP2Stream(arrivalNanos: arrival)
        }
        streams[streamID] = stream
        _ = nghttp2_session_set_stream_user_data(session, streamID, Unmanaged.passUnretained(stream).toOpaque())
        return 0
    }

    fileprivate func header(_ frame: UnsafePointer<nghttp2_frame>, name: UnsafePointer<UInt8>, nameLength: Int,
                            value: UnsafePointer<UInt8>, valueLength: Int) -> Int32 {
        // Trailers (a second HEADERS block) are accepted and their fields dropped, but counted.
        if frame.pointee.headers.cat == NGHTTP2_HCAT_HEADERS {
            return withStream(frame.pointee.hd.stream_id) { stream in
                stream.trailerListSize += nameLength + valueLength + 32
                guard stream.trailerListSize > resources.maxHeaderListSize else { return 0 }
                return headerListOverLimit(streamID: frame.pointee.hd.stream_id, stream: stream, size: stream.trailerListSize)
            }
        }
        guard frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
        return withStream(frame.pointee.hd.stream_id) { stream in
            header(frame, of: stream, name: name, nameLength: nameLength, value: value, valueLength: valueLength)
        }
    }

    private func header(_ frame: UnsafePointer<nghttp2_frame>, of stream: HTTP2Stream, name: UnsafePointer<UInt8>,
                        nameLength: Int, value: UnsafePointer<UInt8>, valueLength: Int) -> Int32 {
        stream.headerListSize += nameLength + valueLength + 32
        if stream.headerListSize > resources.maxHeaderListSize {
            return headerListOverLimit(streamID: frame.pointee.hd.stream_id, stream: stream, size: stream.headerListSize)
        }
        let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
        let valueBytes = UnsafeBufferPointer(start: value, count: valueLength)
        if nameLength > 0 && name[0] == UInt8(ascii: ":") {
            // nghttp2 has already checked pseudo-header names and order (RFC 9113 §8.3).
            // memcmp, not `elementsEqual` against a String's UTF-8 view: that generic loop was
            // ~0.8% of the server's time (perf, four pseudo-headers per request).
            switch nameLength {
            case 5 where memcmp(name, ":path", 5) == 0: stream.path = pseudoHeaders.path(valueBytes)
            case 7 where memcmp(name, ":method", 7) == 0: stream.method = pseudoHeaders.method(valueBytes)
            case 7 where memcmp(name, ":scheme", 7) == 0: stream.scheme = pseudoHeaders.scheme(valueBytes)
            case 10 where memcmp(name, ":authority", 10) == 0: stream.authority = pseudoHeaders.authority(valueBytes)
            default: break
            }
            return 0
        }
        stream.headers.append(name: nameBytes, value: valueBytes)
        return 0
    }

    /// A header (or trailer) list of `size` bytes, past SETTINGS_MAX_HEADER_LIST_SIZE: 431 once
    /// the block ends, or, far past it, stop decoding (HeaderListGuard).
    private func headerListOverLimit(streamID: Int32, stream: HTTP2Stream, size: Int) -> Int32 {
        switch headerListGuard.judge(size: size) {
        case .keep:
            return 0
        case .tooLarge:
            stream.headersTooLarge = true
            stream.headers = HTTPFields()
            return 0
        case .abandonStream:
            // nghttp2 resets the stream (RST_STREAM INTERNAL_ERROR) and decodes the rest of
            // the block only to keep its HPACK table in step, without calling us.
            stream.headersTooLarge = true
            stream.answered = true
            stream.headers = HTTPFields()
            headerBlockDeadline.stop()
            return Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        case .closeConnection:
            submitGoAway(.headerListBomb)
            return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
        }
    }

    fileprivate func dataChunk(streamID: Int32, data: UnsafePointer<UInt8>, length: Int) -> Int32 {
        withStream(streamID) { stream in dataChunk(streamID: streamID, of: stream, data: data, length: length) }
    }

    private func dataChunk(streamID: Int32, of stream: HTTP2Stream, data: UnsafePointer<UInt8>, length: Int) -> Int32 {
        guard !stream.answered, !stream.headersTooLarge else { return 0 }
        if stream.body.count + length > resources.maxBodyBytes {
            bodyBudget.release(stream.body.count)
            stream.body = []
            refuse(streamID: streamID, stream: stream, status: 413)
            return 0
        }
        guard bodyBudget.take(length) else {
            // Over the connection's budget for buffered bodies: not processed, the client may
            // send it again (RFC 9113 §8.7), on this connection once others have finished.
            bodyBudget.release(stream.body.count)
            stream.body = []
            stream.answered = true
            if let session {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, HTTP2ErrorCode.refusedStream)
            }
            return 0
        }
        stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        return 0
    }

    fileprivate func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let type = frame.pointee.hd.type
        if type == UInt8(NGHTTP2_RST_STREAM.rawValue) { return resetReceived(streamID: frame.pointee.hd.stream_id) }
        guard type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) else { return 0 }
        if type == UInt8(NGHTTP2_HEADERS.rawValue) { headerBlockDeadline.stop() }
        let streamID = frame.pointee.hd.stream_id
        // Unretained, as for a header or a DATA chunk: `streams` holds the stream while nghttp2
        // reports its frames, and nothing here closes it (a retain and a release a request, perf).
        return withStream(streamID) { stream in
            guard !stream.answered else { return 0 }
            if stream.headersTooLarge {
                refuse(streamID: streamID, stream: stream, status: 431)
                return 0
            }
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                dispatch(streamID: streamID, stream: stream)
            } else if stream.headEndedNanos == nil {
                stream.headEndedNanos = resources.clock.now
            }
            return 0
        }
    }

    /// nghttp2 is about to end the connection over an invalid frame. If the frame is a
    /// request over the acknowledged stream limit and a custom GOAWAY is configured, send
    /// that one instead and stop the session (nghttp2 then sends nothing of its own).
    fileprivate func invalidFrame(_ frame: UnsafePointer<nghttp2_frame>, libraryError: Int32) -> Int32 {
        let http2 = resources.settings.http2
        guard let debugData = http2.streamLimitGoAwayDebugData, let session,
              frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
              libraryError == NGHTTP2_ERR_PROTO.rawValue,
              frame.pointee.hd.stream_id > nghttp2_session_get_last_proc_stream_id(session) else { return 0 }
        let limit = nghttp2_session_get_local_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        guard streams.count >= Int(limit) else { return 0 }
        submitGoAway(.streamLimit(errorCode: http2.streamLimitGoAwayErrorCode, debugData: debugData))
        return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
    }

    /// A client RST_STREAM, seen before nghttp2 closes the stream. Only a reset of a stream
    /// we had not finished answering (it is still open and our END_STREAM has not been sent)
    /// spends the connection's budget: libcurl resets each stream after reading its whole
    /// answer, when the stream is already closed here, and that never counts. With the budget
    /// spent: GOAWAY(ENHANCE_YOUR_CALM) naming the last stream taken, and the connection
    /// closes (the failure return stops nghttp2 from reading the rest of what was received).
    private func resetReceived(streamID: Int32) -> Int32 {
        guard let session, stream(streamID) != nil,
              nghttp2_session_get_stream_local_close(session, streamID) == 0 else { return 0 }
        if unansweredResetBudget.take(nowNanos: resources.clock.now) { return 0 }
        resources.statistics.rapidResetCloses.wrappingAdd(1, ordering: .relaxed)
        submitGoAway(.rapidReset)
        return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
    }

    fileprivate func streamClosed(_ streamID: Int32) {
        if let stream = streams.removeValue(forKey: streamID) {
            bodyBudget.release(stream.body.count)
            cancelDeferred(stream)
            if spareStreams.count < Self.spareStreamsKept { spareStreams.append(stream) }
        }
    }

    fileprivate func readResponseBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                                      flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = stream(streamID) else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        if stream.responseOffset >= stream.responseBody.count, let source = stream.streamedBody {
            // The next piece, only now that the window takes it: a stalled peer holds one piece.
            stream.responseBody.removeAll(keepingCapacity: true)
            stream.responseOffset = 0
            if source.next(into: &stream.responseBody, preferredBytes: length) { stream.streamedBody = nil }
        }
        let count = min(length, stream.responseBody.count - stream.responseOffset)
        if count > 0 {
            stream.responseBody.withUnsafeBytes { body in
                guard let base = body.baseAddress else { return }
                UnsafeMutableRawPointer(buffer).copyMemory(from: base + stream.responseOffset, byteCount: count)
            }
            stream.responseOffset += count
        }
        if count > 0 { lastResponseProgressNanos = resources.clock.now }
        if stream.responseOffset >= stream.responseBody.count, stream.streamedBody == nil {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            stream.responseBody = []
            stream.responsePendingSince = nil
        }
        return count
    }

    // MARK: Requests and responses

    /// The transport answers by itself (413, 431) and, if the client is still sending,
    /// stops it with RST_STREAM(NO_ERROR) after the complete response (RFC 9113 §8.1).
    private func refuse(streamID: Int32, stream: HTTP2Stream, status: Int) {
        stream.answered = true
        stream.resetAfterResponse = true
        let partial = HTTPRequest(method: stream.method, path: stream.path, authority: stream.authority,
                                  scheme: stream.scheme, headers: stream.headers, version: .http2,
                                  isTLS: context.isTLS, connectionID: context.id, streamID: streamID,
                                  arrivalNanos: stream.arrivalNanos)
        handler.transportRejected(partial, response: HTTPResponse(status: status), on: context)
        // Submitted now, RST_STREAM could overtake the response and cancel it; it waits for
        // the response's HEADERS to be sent (see `frameSent`).
        submitHeaders(status: status, headers: [], hasBody: false, streamID: streamID)
    }

    fileprivate func frameSent(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let session else { return 0 }
        let streamID = frame.pointee.hd.stream_id
        guard let stream = stream(streamID), stream.resetAfterResponse else { return 0 }
        stream.resetAfterResponse = false
        if nghttp2_session_get_stream_remote_close(session, streamID) == 0 {
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, HTTP2ErrorCode.noError)
        }
        return 0
    }

    private func dispatch(streamID: Int32, stream: HTTP2Stream) {
        stream.answered = true
        guard streamID <= goAwayLastStreamID else {
            // Unprocessed, as our GOAWAY says; REFUSED_STREAM tells the client so too.
            if let session {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, HTTP2ErrorCode.refusedStream)
            }
            return
        }
        // RFC 9113 §8.3.1: a client may send `host` instead of `:authority` (aioapns does);
        // either names the authority, as `host` does on HTTP/1.1. The header stays in `headers`.
        let authority = stream.authority ?? stream.headers.value(of: "host")
        var request = HTTPRequest(method: stream.method, path: stream.path, authority: authority,
                                  scheme: stream.scheme, headers: stream.headers, body: stream.body,
                                  version: .http2, isTLS: context.isTLS, connectionID: context.id,
                                  streamID: streamID, arrivalNanos: stream.arrivalNanos)
        bodyBudget.release(stream.body.count)
        stream.headers = HTTPFields()
        stream.body = []
        var response = handler.handle(request, on: context)
        // The buffers back to the stream for its next use: unless the handler kept a copy,
        // they are the request's alone again and keep their capacity without a new allocation.
        // (Emptied now: `streamClosed` releases what a stream's body holds from the budget.)
        swap(&stream.headers, &request.headers)
        swap(&stream.body, &request.body)
        stream.headers.removeAll(keepingCapacity: true)
        stream.body.removeAll(keepingCapacity: true)
        if let responder = response.deferred {
            guard let ready = resources.deferredAnswers.claim(responder) else {
                stream.deferred = responder
                outbox.follow(.deferredAnswer(responder, id: Int(streamID)))
                return
            }
            response = ready
        }
        if response.delayNanos > 0 {
            stream.pendingResponse = response
            outbox.follow(.delayedAnswer(id: Int(streamID), afterNanos: response.delayNanos))
        } else {
            submit(response, streamID: streamID, stream: stream)
        }
    }

    /// Queues the response, then applies its actions in order. `.resetStream` and
    /// `.closeConnection` replace the response.
    private func submit(_ response: HTTPResponse, streamID: Int32, stream: HTTP2Stream) {
        guard let session else { return }
        var replaced = false
        for action in response.actions {
            switch action {
            case let .resetStream(errorCode):
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
                replaced = true
            case .closeConnection:
                outbox.ask(.close)
                replaced = true
            default: break
            }
        }
        if !replaced {
            stream.responseBody = response.streamedBody == nil ? response.body : []
            stream.responseOffset = 0
            stream.streamedBody = response.streamedBody
            let hasBody = !response.body.isEmpty || response.streamedBody != nil
            if hasBody { stream.responsePendingSince = resources.clock.now }
            submitHeaders(status: response.status, headers: response.headers, hasBody: hasBody, streamID: streamID)
        }
        for action in response.actions {
            switch action {
            case let .goAway(errorCode, debugData):
                submitGoAway(.application(errorCode: errorCode, debugData: debugData))
            case let .setMaxConcurrentStreams(limit):
                var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                                   value: limit)
                _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
            case .resetStream, .closeConnection:
                break
            }
        }
        context.noteCompleted()
        resources.statistics.requestsServed.wrappingAdd(1, ordering: .relaxed)
    }

    /// Builds the header list in the loop's scratch buffers. With no body the response is a
    /// single HEADERS frame carrying END_STREAM (what APNs sends for success).
    private func submitHeaders(status: Int, headers: [HTTPHeader], hasBody: Bool, streamID: Int32) {
        guard let session else { return }
        // The loop's buffers are borrowed into locals and given back: appending to the shared
        // object's properties took an exclusivity check (swift_beginAccess) at every append,
        // ~1% of the server's time (perf).
        let block = resources.headerBlock
        var bytes: [UInt8] = []
        var entries: [nghttp2_nv] = []
        swap(&bytes, &block.bytes)
        swap(&entries, &block.entries)
        defer {
            swap(&bytes, &block.bytes)
            swap(&entries, &block.entries)
        }
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        let statusCode = (100...999).contains(status) ? status : 500
        bytes.append(contentsOf: ":status".utf8)
        bytes.append(UInt8(ascii: "0") + UInt8(statusCode / 100))
        bytes.append(UInt8(ascii: "0") + UInt8(statusCode / 10 % 10))
        bytes.append(UInt8(ascii: "0") + UInt8(statusCode % 10))
        for header in headers {
            bytes.append(contentsOf: header.name.utf8)
            bytes.append(contentsOf: header.value.utf8)
        }
        let neverIndexed = resources.settings.http2.neverIndexedResponseHeaders
        bytes.withUnsafeMutableBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            let flags = UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
            entries.append(nghttp2_nv(name: base, value: base + 7, namelen: 7, valuelen: 3, flags: flags))
            var offset = 10
            for header in headers {
                let nameLength = header.name.utf8.count
                let valueLength = header.value.utf8.count
                let fieldFlags = neverIndexed.contains(header.name) ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : flags
                entries.append(nghttp2_nv(name: base + offset, value: base + offset + nameLength,
                                          namelen: nameLength, valuelen: valueLength, flags: fieldFlags))
                offset += nameLength + valueLength
            }
            entries.withUnsafeBufferPointer { entries in
                if hasBody {
                    var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil),
                                                         read_callback: readResponseBodyCallback)
                    _ = nghttp2_submit_response(session, streamID, entries.baseAddress, entries.count, &provider)
                } else {
                    _ = nghttp2_submit_response(session, streamID, entries.baseAddress, entries.count, nil)
                }
            }
        }
    }
}

// MARK: - C callbacks

/// Runs `body` on the session behind nghttp2's user data without retaining it: the session is
/// alive for the whole nghttp2 call that calls back (its connection is making that call), and
/// a retain and a release of it in every callback were ~1% of the server's time (perf, with
/// its stream's: `withStream`).
@inline(__always)
private func withOwner<Result>(_ userData: UnsafeMutableRawPointer?, orElse fallback: Result,
                               _ body: (HTTP2Session) -> Result) -> Result {
    guard let userData else { return fallback }
    return Unmanaged<HTTP2Session>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
}

private func onBeginHeaders(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?,
                            _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    return withOwner(userData, orElse: 0) { $0.beginHeaders(frame) }
}

private func onHeader(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?,
                      _ name: UnsafePointer<UInt8>?, _ nameLength: Int, _ value: UnsafePointer<UInt8>?,
                      _ valueLength: Int, _ flags: UInt8, _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame, let name, let value else { return 0 }
    return withOwner(userData, orElse: 0) {
        $0.header(frame, name: name, nameLength: nameLength, value: value, valueLength: valueLength)
    }
}

private func onDataChunk(_ session: OpaquePointer?, _ flags: UInt8, _ streamID: Int32,
                         _ data: UnsafePointer<UInt8>?, _ length: Int, _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let data else { return 0 }
    return withOwner(userData, orElse: 0) { $0.dataChunk(streamID: streamID, data: data, length: length) }
}

private func onFrameReceived(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?,
                             _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    return withOwner(userData, orElse: 0) { $0.frameReceived(frame) }
}

private func onFrameSent(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?,
                         _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    return withOwner(userData, orElse: 0) { $0.frameSent(frame) }
}

private func onInvalidFrame(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ libraryError: Int32,
                            _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    return withOwner(userData, orElse: 0) { $0.invalidFrame(frame, libraryError: libraryError) }
}

private func onStreamClose(_ session: OpaquePointer?, _ streamID: Int32, _ errorCode: UInt32,
                           _ userData: UnsafeMutableRawPointer?) -> Int32 {
    withOwner(userData, orElse: ()) { $0.streamClosed(streamID) }
    return 0
}

private func readResponseBodyCallback(_ session: OpaquePointer?, _ streamID: Int32, _ buffer: UnsafeMutablePointer<UInt8>?,
                                      _ length: Int, _ flags: UnsafeMutablePointer<UInt32>?,
                                      _ source: UnsafeMutablePointer<nghttp2_data_source>?,
                                      _ userData: UnsafeMutableRawPointer?) -> Int {
    let failure = Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    guard let buffer, let flags else { return failure }
    return withOwner(userData, orElse: failure) { $0.readResponseBody(streamID, into: buffer, length: length, flags: flags) }
}

/// One callback table per loop, shared by its sessions.
func makeHTTP2Callbacks() -> OpaquePointer? {
    var callbacks: OpaquePointer?
    guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
    nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSent)
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks, onInvalidFrame)
    return callbacks
}

func makeHTTP2Options(_ settings: HTTP2Settings) -> OpaquePointer? {
    var options: OpaquePointer?
    guard nghttp2_option_new(&options) == 0, let options else { return nil }
    // Our HPACK encoder keeps to the same table size we advertise for the decoder.
    nghttp2_option_set_max_deflate_dynamic_table_size(options, Int(settings.headerTableSize))
    // nghttp2's rapid-reset guard (CVE-2023-44487; 1000 RST_STREAMs, then 33 a second) ends
    // the connection with GOAWAY(INTERNAL_ERROR), even for resets of finished streams. libcurl
    // 7.88 (Debian 12) resets every stream after its response, so a sender lost its connection
    // every ~2000 pushes, which APNs never does. Off: RapidResetGuard takes its place, with the
    // same budget but counting only resets of streams not yet answered.
    nghttp2_option_set_stream_reset_rate_limit(options, UInt64.max, UInt64.max)
    return options
}
