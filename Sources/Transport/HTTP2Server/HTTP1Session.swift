// HTTP/1.1 on http-parser: keep-alive, pipelined requests answered strictly in order
// (a delayed response holds back the ones after it), Content-Length and chunked bodies.
// Answers are serialized into the connection's `OutputBuffer`; the session knows no
// connection and no loop, and its calls return what it wants done (`SessionActions`).
import CHTTPParser
import Clocks
import JSON
import Glibc
import HTTPCore

final class HTTP1Session {
    /// A response slot, in request order.
    private enum Slot {
        case waiting(HTTPResponse, isHead: Bool, closeAfter: Bool)
        /// The handler deferred its answer (`DeferredAnswers`).
        case deferred(DeferredResponse, isHead: Bool, closeAfter: Bool)
        case ready([UInt8], closeAfter: Bool)
        /// A streamed body (`StreamedBody`): `head` goes out first, then the body as the
        /// connection drains, as chunks (`chunked`) or delimited by the close.
        case streaming(head: [UInt8], body: any StreamedBody, chunked: Bool, closeAfter: Bool)
        case abort
    }

    /// Pieces of a streamed body are pulled while the connection holds less unsent output
    /// than this, so a reader that stalls holds about this much of its answer, never all of it.
    static let streamedOutputBytes = Connection.outputHighWater

    let context: ConnectionContext
    let handler: any HTTPHandler
    private let resources: SessionResources
    /// The connection's unsent bytes, which answers are serialized into. The connection owns
    /// it and ends this session before it closes.
    private unowned(unsafe) let output: OutputBuffer
    /// What the callbacks of the call in progress ask of the connection.
    private var outbox = SessionOutbox()
    /// The server is stopping: every answer from now on closes the connection.
    private var shuttingDown = false
    private let parser: UnsafeMutablePointer<http_parser>
    private var headerListSize = 0
    private var url: [UInt8] = []
    private var fieldName: [UInt8] = []
    private var fieldValue: [UInt8] = []
    private var readingValue = false
    private var headers = HTTPFields()
    private var body: [UInt8] = []
    private var arrivalNanos: UInt64 = 0
    private var requestCount: Int32 = 0
    private var inMessage = false
    /// The head is complete: header callbacks now carry a chunked body's trailer fields, which
    /// RFC 9110 §6.5.1 forbids merging into the header section (a trailer `authorization` must
    /// not authenticate the request). They are dropped, as the HTTP/2 path drops trailers; their
    /// size still counts toward http-parser's header limit.
    private var inTrailers = false
    /// Some request on this connection was HTTP/1.0, which knows no chunked coding: a streamed
    /// body to it is delimited by closing the connection (RFC 9112 §6.3).
    private var peerSpeaksHTTP10 = false
    /// Responses held back behind a delayed one; `slots[0]` has sequence `firstSlotSequence`.
    private var slots: [Slot] = []
    private var firstSlotSequence = 0
    /// No more requests are parsed (a response will close the connection, or it failed).
    private var stopped = false
    /// Close once every queued response is written.
    private var closeWhenDrained = false
    private var destroyed = false
    /// From a request's first byte until its head ends (`requestHeadTimeout`).
    private var headDeadline: Deadline
    /// From the end of a request's head until its body ends (`requestBodyTimeout`).
    private var bodyDeadline: Deadline
    /// Parsing is paused with `PipelineLimit.maximumPendingResponses` answers held back;
    /// what was read but not parsed waits in `heldInput` (at most one read's worth).
    private(set) var holdsInput = false
    private var heldInput: [UInt8] = []

    init(context: ConnectionContext, handler: any HTTPHandler, output: OutputBuffer, resources: SessionResources) {
        self.context = context
        self.handler = handler
        self.output = output
        self.resources = resources
        let settings = resources.settings
        headDeadline = Deadline(durationNanos: settings.requestHeadTimeoutNanos)
        bodyDeadline = Deadline(durationNanos: settings.requestBodyTimeoutNanos)
        // The session starts on the first bytes of the first request.
        headDeadline.startIfIdle(nowNanos: resources.clock.now)
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit { parser.deallocate() }

    func destroy() {
        destroyed = true
        stopped = true
        dropSlots()
        outbox.clear()
    }

    /// Forgets every queued response; deferred ones are cancelled (nobody will read them).
    private func dropSlots() {
        for case let .deferred(responder, _, _) in slots {
            outbox.forget(responder)
            resources.deferredAnswers.cancel(responder)
        }
        slots.removeAll()
        heldInput = []
    }

    /// Hands the recorded timers and deferred waits to `body`, and forgets them.
    func takeFollowUps(_ body: (SessionFollowUp) -> Void) { outbox.takeFollowUps(body) }

    /// Every queued response has been handed to the connection and it should now close.
    var isFinished: Bool { closeWhenDrained && slots.isEmpty }

    /// Parses received bytes. Answers go into the output buffer unreported (the connection
    /// writes after its reads); `.holdInput` when parsing paused, `.close` for a
    /// `.closeConnection` answer.
    func receive(_ bytes: UnsafeRawBufferPointer) -> SessionActions {
        parse(bytes)
        return outbox.take()
    }

    private func parse(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self) else { return }
        var offset = 0
        while offset < bytes.count && !stopped {
            let parsed = http_parser_execute(parser, resources.http1Settings, base + offset, bytes.count - offset)
            if stopped { return }
            if parser.pointee.http_errno == HPE_PAUSED.rawValue {
                // Too many answers held back (messageComplete paused the parser): keep the
                // rest for when they have gone out.
                offset += parsed
                heldInput.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                holdsInput = true
                outbox.ask(.holdInput)
                return
            }
            if parser.pointee.http_errno != HPE_OK.rawValue {
                reject(status: 400)
                return
            }
            // An Upgrade request (e.g. h2c) makes the parser return after its headers; we
            // answer it as plain HTTP/1.1 and keep parsing.
            if parsed == 0 { break }
            offset += parsed
        }
    }

    /// Server shutdown: close after the request in progress, or now if there is none.
    func beginShutdown() {
        shuttingDown = true
        if !inMessage && slots.isEmpty {
            stopped = true
            closeWhenDrained = true
        }
    }

    func answerDeferred(sequence: Int, with response: HTTPResponse) -> SessionActions {
        let index = sequence - firstSlotSequence
        guard !destroyed, index >= 0, index < slots.count,
              case let .deferred(_, isHead, closeAfter) = slots[index] else { return [] }
        slots[index] = resolve(response, isHead: isHead, closeAfter: closeAfter)
        drainSlots()
        return outbox.take()
    }

    func fireDelayedResponse(sequence: Int) -> SessionActions {
        let index = sequence - firstSlotSequence
        guard !destroyed, index >= 0, index < slots.count,
              case let .waiting(response, isHead, closeAfter) = slots[index] else { return [] }
        slots[index] = resolve(response, isHead: isHead, closeAfter: closeAfter)
        drainSlots()
        resumeHeldParsing()
        return outbox.take()
    }

    /// Parsing pauses (and the connection stops reading) while answers pile up: too many held
    /// behind a delayed one, or more unsent output than `Connection.outputHighWater` (a client
    /// that pipelines requests but does not read; one read's worth of small requests could
    /// otherwise queue thousands of answers).
    private var mustPause: Bool {
        slots.count >= PipelineLimit.maximumPendingResponses || output.unsent >= Connection.outputHighWater
    }

    /// Parses what was held back, once answers have gone out; nil if it is still held.
    func resumeParsing() -> SessionActions? {
        guard resumeHeldParsing() else { return nil }
        return outbox.take()
    }

    @discardableResult
    private func resumeHeldParsing() -> Bool {
        guard holdsInput, !stopped, !mustPause else { return false }
        holdsInput = false
        http_parser_pause(parser, 0)
        let input = heldInput
        heldInput = []
        input.withUnsafeBytes { parse($0) }
        return true
    }

    /// The request head and body deadlines: 408 and close once one has passed (RFC 9110
    /// §15.5.9). `.write` if an answer was queued.
    func checkDeadlines() -> SessionActions {
        guard !stopped else { return [] }
        let now = resources.clock.now
        guard headDeadline.hasExpired(nowNanos: now) || bodyDeadline.hasExpired(nowNanos: now) else { return [] }
        if inMessage {
            reject(status: 408)
        } else {
            // No request begun (a TLS connection that never sent one): close without an
            // answer nobody asked for, as nginx does.
            stopped = true
            headDeadline.stop()
            closeWhenDrained = true
        }
        return outbox.take().union(.write)
    }

    // MARK: Parser callbacks

    fileprivate func messageBegin() -> Int32 {
        inMessage = true
        url.removeAll(keepingCapacity: true)
        fieldName.removeAll(keepingCapacity: true)
        fieldValue.removeAll(keepingCapacity: true)
        readingValue = false
        inTrailers = false
        headerListSize = 0
        headers = HTTPFields()
        body = []
        arrivalNanos = SystemClock.wallClockNanoseconds()
        headDeadline.startIfIdle(nowNanos: resources.clock.now)
        return 0
    }

    fileprivate func url(_ data: UnsafeRawBufferPointer) -> Int32 {
        url.append(contentsOf: data)
        return 0
    }

    fileprivate func headerField(_ data: UnsafeRawBufferPointer) -> Int32 {
        if inTrailers { return 0 }
        if readingValue { commitHeader() }
        headerListSize += data.count + (fieldName.isEmpty ? 32 : 0)
        if headerListSize > resources.maxHeaderListSize {
            reject(status: 431)
            return -1
        }
        for byte in data {
            // RFC 9112 §5.1: "No whitespace is allowed between the field name and colon ... A
            // server MUST reject ... with a response status code of 400". http-parser, as
            // Debian builds it, lets a space through (and still frames by the field name, so
            // `Transfer-Encoding : chunked` was a smuggling shape): names must be tokens.
            guard isTokenCharacter(byte) else {
                reject(status: 400)
                return -1
            }
            fieldName.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
        }
        return 0
    }

    fileprivate func headerValue(_ data: UnsafeRawBufferPointer) -> Int32 {
        if inTrailers { return 0 }
        headerListSize += data.count
        if headerListSize > resources.maxHeaderListSize {
            reject(status: 431)
            return -1
        }
        readingValue = true
        fieldValue.append(contentsOf: data)
        return 0
    }

    private func commitHeader() {
        fieldName.withUnsafeBufferPointer { name in
            fieldValue.withUnsafeBufferPointer { value in headers.append(name: name, value: value) }
        }
        fieldName.removeAll(keepingCapacity: true)
        fieldValue.removeAll(keepingCapacity: true)
        readingValue = false
    }

    fileprivate func headersComplete() -> Int32 {
        if readingValue || !fieldName.isEmpty { commitHeader() }
        inTrailers = true
        headDeadline.stop()
        bodyDeadline.restart(nowNanos: resources.clock.now)
        let declaredLength = parser.pointee.content_length
        if declaredLength != UInt64.max && declaredLength > UInt64(resources.maxBodyBytes) {
            reject(status: 413)
            return -1
        }
        // RFC 9110 §10.1.1: a client waiting for 100 (curl does, for larger bodies) would
        // otherwise stall. Only when no earlier response is still owed, to keep order.
        if parser.pointee.http_major == 1, parser.pointee.http_minor >= 1, slots.isEmpty,
           headers.values(of: "expect").contains(where: { $0.lowercased() == "100-continue" }) {
            output.bytes.append(contentsOf: "HTTP/1.1 100 Continue\r\n\r\n".utf8)
        }
        return 0
    }

    fileprivate func bodyChunk(_ data: UnsafeRawBufferPointer) -> Int32 {
        if body.count + data.count > resources.maxBodyBytes {
            reject(status: 413)
            return -1
        }
        body.append(contentsOf: data)
        return 0
    }

    fileprivate func messageComplete() -> Int32 {
        inMessage = false
        bodyDeadline.stop()
        requestCount &+= 1
        let method = String(cString: http_method_str(http_method(UInt32(parser.pointee.method))))
        let keepAlive = http_should_keep_alive(parser) != 0
        if parser.pointee.http_major == 1, parser.pointee.http_minor == 0 { peerSpeaksHTTP10 = true }
        let target = RequestTarget(url)
        let request = HTTPRequest(method: method, path: target.path,
                                  authority: target.authority ?? headers.value(of: "host"),
                                  scheme: context.isTLS ? "https" : "http", headers: headers, body: body,
                                  version: .http1_1, isTLS: context.isTLS, connectionID: context.id,
                                  streamID: requestCount, arrivalNanos: arrivalNanos)
        headers = HTTPFields()
        body = []
        let response = handler.handle(request, on: context)
        context.noteCompleted()
        resources.statistics.requestsServed.wrappingAdd(1, ordering: .relaxed)
        let closeAfter = !keepAlive || shuttingDown
        enqueue(response, isHead: method == "HEAD", closeAfter: closeAfter)
        if !stopped && mustPause {
            http_parser_pause(parser, 1)  // `receive` keeps the rest; reading stops
        }
        return stopped ? -1 : 0
    }

    // MARK: Responses

    private func enqueue(_ response: HTTPResponse, isHead: Bool, closeAfter: Bool) {
        var response = response
        if let responder = response.deferred {
            guard let ready = resources.deferredAnswers.claim(responder) else {
                if closeAfter { stopped = true }
                outbox.follow(.deferredAnswer(responder, id: firstSlotSequence + slots.count))
                slots.append(.deferred(responder, isHead: isHead, closeAfter: closeAfter))
                return
            }
            response = ready
        }
        let closes = closeAfter || response.actions.contains { action in
            switch action {
            case .goAway, .resetStream, .closeConnection: return true
            case .setMaxConcurrentStreams: return false
            }
        }
        if closes { stopped = true }
        if response.delayNanos > 0 {
            outbox.follow(.delayedAnswer(id: firstSlotSequence + slots.count, afterNanos: response.delayNanos))
            slots.append(.waiting(response, isHead: isHead, closeAfter: closeAfter))
            return
        }
        if slots.isEmpty {
            // Fast path: nothing is held back, serialize straight into the socket buffer.
            if response.actions.isEmpty && response.streamedBody == nil {
                serialize(response, isHead: isHead, closeAfter: closeAfter, into: &output.bytes)
                if closeAfter { closeWhenDrained = true }
                return
            }
        }
        slots.append(resolve(response, isHead: isHead, closeAfter: closeAfter))
        drainSlots()
    }

    /// Applies the actions: `.closeConnection` drops everything, `.resetStream` closes
    /// without an answer, `.goAway` answers with `connection: close`.
    private func resolve(_ response: HTTPResponse, isHead: Bool, closeAfter: Bool) -> Slot {
        var closes = closeAfter
        for action in response.actions {
            switch action {
            case .closeConnection: return .abort
            case .resetStream: return .ready([], closeAfter: true)
            case .goAway: closes = true
            case .setMaxConcurrentStreams: break
            }
        }
        if let body = response.streamedBody, !isHead {
            let chunked = !peerSpeaksHTTP10
            if !chunked { closes = true }
            var head: [UInt8] = []
            serializeHead(response, bodyLength: nil, chunked: chunked, closeAfter: closes, into: &head)
            return .streaming(head: head, body: body, chunked: chunked, closeAfter: closes)
        }
        var bytes: [UInt8] = []
        serialize(response, isHead: isHead, closeAfter: closes, into: &bytes)
        return .ready(bytes, closeAfter: closes)
    }

    /// A streamed body at the head of the queue waits for the connection to drain: it goes on
    /// (and so do the answers queued behind it) once unsent output is below
    /// `streamedOutputBytes`. `.write` if it added output (or emptied the queue), `.close` if
    /// it reached a `.closeConnection` answer.
    func continueStreaming() -> SessionActions {
        guard !destroyed, case .streaming = slots.first else { return [] }
        let before = output.unsent
        drainSlots()
        return output.unsent > before || slots.isEmpty ? outbox.take().union(.write) : outbox.take()
    }

    /// Writes pieces of the first slot's streamed body while the connection has room. True once
    /// the body is complete (its last chunk written).
    private func pump(head: inout [UInt8], body: any StreamedBody, chunked: Bool) -> Bool {
        if !head.isEmpty {
            output.bytes.append(contentsOf: head)
            head = []
        }
        var piece: [UInt8] = []
        while output.unsent < Self.streamedOutputBytes {
            piece.removeAll(keepingCapacity: true)
            let finished = body.next(into: &piece, preferredBytes: Self.streamedOutputBytes / 4)
            if !piece.isEmpty {
                if chunked {
                    appendHex(piece.count, to: &output.bytes)
                    output.bytes.append(contentsOf: "\r\n".utf8)
                }
                output.bytes.append(contentsOf: piece)
                if chunked { output.bytes.append(contentsOf: "\r\n".utf8) }
            }
            if finished {
                if chunked { output.bytes.append(contentsOf: "0\r\n\r\n".utf8) }
                return true
            }
        }
        return false
    }

    /// Hands ready responses at the head of the queue to the connection, in order.
    private func drainSlots() {
        while let first = slots.first {
            switch first {
            case .waiting, .deferred:
                return
            case .abort:
                outbox.ask(.close)
                stopped = true
                dropSlots()
                return
            case let .ready(bytes, closeAfter):
                output.bytes.append(contentsOf: bytes)
                guard sent(closeAfter: closeAfter) else { return }
            case .streaming(var head, let body, let chunked, let closeAfter):
                guard pump(head: &head, body: body, chunked: chunked) else {
                    slots[0] = .streaming(head: head, body: body, chunked: chunked, closeAfter: closeAfter)
                    return
                }
                guard sent(closeAfter: closeAfter) else { return }
            }
        }
    }

    /// The first slot has all gone out: the next one's turn, unless it closed the connection
    /// (then false: nothing after it is sent).
    private func sent(closeAfter: Bool) -> Bool {
        slots.removeFirst()
        firstSlotSequence += 1
        guard closeAfter else { return true }
        stopped = true
        closeWhenDrained = true
        dropSlots()
        return false
    }

    /// The transport's own answer to a request it will not pass on; closes afterwards.
    private func reject(status: Int) {
        stopped = true
        holdsInput = false
        heldInput = []
        headDeadline.stop()
        bodyDeadline.stop()
        let response = HTTPResponse(status: status)
        // What is known of the request (nothing of its body), so the answer is recorded too.
        let method = url.isEmpty ? "" : String(cString: http_method_str(http_method(UInt32(parser.pointee.method))))
        if readingValue || !fieldName.isEmpty { commitHeader() }
        let target = RequestTarget(url)
        let partial = HTTPRequest(method: method, path: target.path,
                                  authority: target.authority ?? headers.value(of: "host"),
                                  scheme: context.isTLS ? "https" : "http", headers: headers,
                                  version: .http1_1, isTLS: context.isTLS, connectionID: context.id,
                                  streamID: requestCount &+ 1, arrivalNanos: arrivalNanos)
        handler.transportRejected(partial, response: response, on: context)
        inMessage = false
        slots.append(.ready(serialized(response, isHead: false, closeAfter: true), closeAfter: true))
        drainSlots()
    }

    private func serialized(_ response: HTTPResponse, isHead: Bool, closeAfter: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        serialize(response, isHead: isHead, closeAfter: closeAfter, into: &bytes)
        return bytes
    }

    private func serialize(_ response: HTTPResponse, isHead: Bool, closeAfter: Bool, into out: inout [UInt8]) {
        serializeHead(response, bodyLength: response.body.count, chunked: false, closeAfter: closeAfter, into: &out)
        if !isHead { out.append(contentsOf: response.body) }
    }

    /// The status line and headers. `bodyLength` nil: a streamed body, framed by `chunked` or
    /// by the close.
    private func serializeHead(_ response: HTTPResponse, bodyLength: Int?, chunked: Bool, closeAfter: Bool,
                               into out: inout [UInt8]) {
        let status = (100...999).contains(response.status) ? response.status : 500
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(UInt64(status), to: &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: reasonPhrase(status).utf8)
        out.append(contentsOf: "\r\n".utf8)
        for header in response.headers {
            // Framing headers are the transport's business.
            if header.name == "content-length" || header.name == "connection" || header.name == "transfer-encoding" {
                continue
            }
            out.append(contentsOf: header.name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: header.value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        if let bodyLength {
            out.append(contentsOf: "content-length: ".utf8)
            appendDecimal(UInt64(bodyLength), to: &out)
            out.append(contentsOf: "\r\n".utf8)
        } else if chunked {
            out.append(contentsOf: "transfer-encoding: chunked\r\n".utf8)
        }
        if closeAfter { out.append(contentsOf: "connection: close\r\n".utf8) }
        out.append(contentsOf: "\r\n".utf8)
    }
}

/// RFC 9110 §5.6.2 tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" /
/// "_" / "`" / "|" / "~" / DIGIT / ALPHA.
@inline(__always)
func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
         UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
         UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}


/// A chunk size: lowercase hex, no leading zeros (RFC 9112 §7.1).
private func appendHex(_ value: Int, to out: inout [UInt8]) {
    if value >= 16 { appendHex(value / 16, to: &out) }
    let digit = UInt8(value % 16)
    out.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
}

/// RFC 9110 §15 reason phrases for the codes the gateway uses; others get a generic one.
func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 200: "OK"
    case 201: "Created"
    case 204: "No Content"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 410: "Gone"
    case 413: "Content Too Large"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    default: status < 400 ? "OK" : "Error"
    }
}

// MARK: - C callbacks

@inline(__always)
private func owner(_ parser: UnsafeMutablePointer<http_parser>?) -> HTTP1Session? {
    guard let data = parser?.pointee.data else { return nil }
    return Unmanaged<HTTP1Session>.fromOpaque(data).takeUnretainedValue()
}

@inline(__always)
private func bytes(_ data: UnsafePointer<CChar>?, _ length: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length)
}

/// One settings table per loop, shared by its parsers.
func makeHTTP1Settings() -> UnsafeMutablePointer<http_parser_settings> {
    let settings = UnsafeMutablePointer<http_parser_settings>.allocate(capacity: 1)
    settings.initialize(to: http_parser_settings())
    settings.pointee.on_message_begin = { parser in owner(parser)?.messageBegin() ?? -1 }
    settings.pointee.on_url = { parser, data, length in owner(parser)?.url(bytes(data, length)) ?? -1 }
    settings.pointee.on_header_field = { parser, data, length in owner(parser)?.headerField(bytes(data, length)) ?? -1 }
    settings.pointee.on_header_value = { parser, data, length in owner(parser)?.headerValue(bytes(data, length)) ?? -1 }
    settings.pointee.on_headers_complete = { parser in owner(parser)?.headersComplete() ?? -1 }
    settings.pointee.on_body = { parser, data, length in owner(parser)?.bodyChunk(bytes(data, length)) ?? -1 }
    settings.pointee.on_message_complete = { parser in owner(parser)?.messageComplete() ?? -1 }
    return settings
}

/// An HTTP/1.1 request target as the application sees it: the origin form (`/3/device/…`).
/// RFC 9112 §3.2.2: a server MUST accept the absolute form (`https://host/3/device/…`, what a
/// client sends through a proxy), and its host overrides the Host header.
struct RequestTarget: Equatable {
    var path: String
    /// The absolute form's authority; nil for the origin form.
    var authority: String?

    init(path: String, authority: String?) {
        self.path = path
        self.authority = authority
    }

    init(_ target: [UInt8]) {
        let schemeEnd: Int? = [Array("http://".utf8), Array("https://".utf8)].lazy.compactMap { scheme -> Int? in
            guard target.count >= scheme.count else { return nil }
            let matches = zip(target, scheme).allSatisfy { byte, wanted in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte) == wanted
            }
            return matches ? scheme.count : nil
        }.first
        guard let schemeEnd else {
            path = String(decoding: target, as: UTF8.self)
            authority = nil
            return
        }
        let rest = target[schemeEnd...]
        let pathStart = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        authority = String(decoding: rest[..<pathStart], as: UTF8.self)
        let remainder = rest[pathStart...]
        path = remainder.first == UInt8(ascii: "/") ? String(decoding: remainder, as: UTF8.self) : "/" + String(decoding: remainder, as: UTF8.self)
    }
}
