// The contract between the transport (HTTP2Server) and the applications it serves
// (the mock gateway, its admin API). Nothing here knows about sockets, TLS or nghttp2,
// so applications are tested by calling `handle` directly, without a socket.

/// The wire protocol a request arrived on.
public enum HTTPVersion: String, Sendable, Equatable {
    case http2 = "h2"
    case http1_1 = "http/1.1"
}

/// One header field. Names are lowercase (HTTP/2 requires it; HTTP/1.1 names are lowered
/// on receipt). Order and repeats are kept as received, so `DuplicateHeaders` can be judged.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A complete request: headers and the whole body, delivered once END_STREAM (or the end of
/// an HTTP/1.1 message) has been seen.
public struct HTTPRequest: Sendable {
    public var method: String
    /// `:path` as received, query included.
    public var path: String
    public var authority: String?
    public var scheme: String?
    /// Regular headers (no pseudo-headers), lowercase names, in arrival order, as bytes.
    public var headers: HTTPFields
    public var body: [UInt8]
    public var version: HTTPVersion
    public var isTLS: Bool
    /// Unique per server process, starting at 1.
    public var connectionID: UInt64
    /// The HTTP/2 stream id; for HTTP/1.1 the 1-based index of the request on its connection.
    public var streamID: Int32
    /// Wall-clock arrival of the first header byte, nanoseconds since the Unix epoch.
    public var arrivalNanos: UInt64
    /// Nothing (no bytes): with it the memberwise initializer differs from the public one, which
    /// calls it. An initializer that sets the members one by one built the request aside and
    /// copied it whole before the transport handed it on (a retain and a release of each of its
    /// Strings and arrays, ~1.3% of a request, perf).
    private var memberwise: Void = ()

    /// Every value of a header, in arrival order. `name` must be lowercase.
    public func values(of name: String) -> [String] { headers.values(of: name) }

    /// The first value of a header. `name` must be lowercase.
    public func header(_ name: String) -> String? { headers.value(of: name) }
}

extension HTTPRequest {
    public init(method: String, path: String, authority: String? = nil, scheme: String? = nil,
                headers: HTTPFields = HTTPFields(), body: [UInt8] = [], version: HTTPVersion = .http2,
                isTLS: Bool = false, connectionID: UInt64 = 0, streamID: Int32 = 1,
                arrivalNanos: UInt64 = 0) {
        self.init(method: method, path: path, authority: authority, scheme: scheme, headers: headers, body: body,
                  version: version, isTLS: isTLS, connectionID: connectionID, streamID: streamID,
                  arrivalNanos: arrivalNanos, memberwise: ())
    }
}

/// What the transport does to the connection after (or instead of) sending a response.
public enum ConnectionAction: Sendable, Equatable {
    /// Send GOAWAY with this HTTP/2 error code and debug data (APNs puts `{"reason":…}`
    /// there), let in-flight streams finish, then close. HTTP/1.1: `Connection: close`.
    case goAway(errorCode: UInt32, debugData: [UInt8])
    /// Reset the request's stream (RST_STREAM with this error code) instead of answering.
    /// HTTP/1.1: close the connection.
    case resetStream(errorCode: UInt32)
    /// Drop the TCP connection at once, without a response or GOAWAY.
    case closeConnection
    /// Advertise a new SETTINGS_MAX_CONCURRENT_STREAMS to the peer (HTTP/2 only).
    case setMaxConcurrentStreams(UInt32)
}

public struct HTTPResponse: Sendable {
    public var status: Int
    /// Lowercase names. The transport adds nothing but `content-length` on HTTP/1.1.
    public var headers: [HTTPHeader]
    /// Empty means the response is a single HEADERS frame with END_STREAM and no DATA frame
    /// (APNs answers success this way; some clients fail on an empty DATA frame).
    public var body: [UInt8]
    /// Hold the response this long before sending it, without blocking the event loop
    /// (fault injection: added latency).
    public var delayNanos: UInt64
    /// Applied in order once the response is queued. `.resetStream` and `.closeConnection`
    /// replace the response.
    public var actions: [ConnectionAction]
    /// Set: this is no answer yet; the transport sends what `deferred` is completed with (see
    /// `DeferredResponse`) and ignores every other field here.
    public var deferred: DeferredResponse?
    /// Set: the body is pulled from here as the connection drains (see `StreamedBody`) and
    /// `body` is ignored. No `content-length` is sent.
    public var streamedBody: (any StreamedBody)?

    /// How long a 429 or 503 asks the client to wait before it tries again: `retry-after` as
    /// delay-seconds (RFC 9110 §10.2.3); nil for any other answer, or for the date form.
    public var retryAfterSeconds: Int? {
        guard Self.asksToWait(status) else { return nil }
        return Self.retryAfterSeconds(status: status, value: headers.first { $0.name == "retry-after" }?.value)
    }

    /// `retryAfterSeconds` of an answer known by its status and `retry-after` value (a record line).
    public static func retryAfterSeconds(status: Int, value: String?) -> Int? {
        guard asksToWait(status), let value else { return nil }
        return Int(value)
    }

    /// 429 and 503: the answers whose `retry-after` asks a client to wait.
    public static func asksToWait(_ status: Int) -> Bool { status == 429 || status == 503 }

    /// The answer comes later, through `responder` (a long poll).
    public static func deferred(_ responder: DeferredResponse) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.deferred = responder
        return response
    }
}

extension HTTPResponse {
    /// Here, not in the type's body, so the type keeps its memberwise initializer, which this
    /// one calls: an initializer that sets the members one by one built the response aside and
    /// copied it whole (a retain and a release of each of its arrays, perf).
    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [],
                delayNanos: UInt64 = 0, actions: [ConnectionAction] = []) {
        self.init(status: status, headers: headers, body: body, delayNanos: delayNanos, actions: actions,
                  deferred: nil, streamedBody: nil)
    }
}

/// Per-connection state that lives on the connection's event-loop thread. Handlers keep
/// their own per-connection data in `applicationState` (e.g. the APNs team a connection is
/// bound to, the last provider token seen). Only ever touched from that loop's thread.
public final class ConnectionContext {
    public let id: UInt64
    public let version: HTTPVersion
    public let isTLS: Bool
    /// `host:port` of the peer.
    public let peer: String
    /// Requests completed on this connection so far (before the current one).
    public internal(set) var completedRequests: Int = 0
    public var applicationState: AnyObject?
    /// The TLS client certificate (DER) when the listener asks for one and the client sent
    /// one (APNs certificate-based provider auth); nil otherwise. Set by the transport before
    /// `connectionOpened`; the application judges it (BadCertificate, ...).
    public var clientCertificateDER: [UInt8]? = nil

    public init(id: UInt64, version: HTTPVersion, isTLS: Bool, peer: String) {
        self.id = id
        self.version = version
        self.isTLS = isTLS
        self.peer = peer
    }

    /// Called by the transport after each response is queued.
    public func noteCompleted() { completedRequests += 1 }
}

/// An application served by the transport. `handle` runs on the connection's event-loop
/// thread and must not block: slow answers use `HTTPResponse.delayNanos`, answers that wait
/// for something else `HTTPResponse.deferred(_:)`.
public protocol HTTPHandler: Sendable {
    /// The SETTINGS_MAX_CONCURRENT_STREAMS a new HTTP/2 connection advertises.
    func initialMaxConcurrentStreams() -> UInt32
    func connectionOpened(_ connection: ConnectionContext)
    func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse
    func connectionClosed(_ connection: ConnectionContext)
    /// The transport answered a request by itself, without `handle` (413 body too large, 431
    /// header list too large, 400 malformed HTTP/1.1, 408 head or body too slow). `partial` is
    /// what was known of the request: method, path and headers as far as they arrived (none
    /// when they were too large), never a body. For recording and counting only.
    func transportRejected(_ partial: HTTPRequest, response: HTTPResponse, on connection: ConnectionContext)
}

extension HTTPHandler {
    public func initialMaxConcurrentStreams() -> UInt32 { 1000 }
    public func connectionOpened(_ connection: ConnectionContext) {}
    public func connectionClosed(_ connection: ConnectionContext) {}
    public func transportRejected(_ partial: HTTPRequest, response: HTTPResponse, on connection: ConnectionContext) {}
}

/// HTTP/2 error codes (RFC 9113 §7) used in GOAWAY and RST_STREAM.
public enum HTTP2ErrorCode {
    public static let noError: UInt32 = 0x0
    public static let protocolError: UInt32 = 0x1
    public static let internalError: UInt32 = 0x2
    public static let refusedStream: UInt32 = 0x7
    public static let cancel: UInt32 = 0x8
    public static let enhanceYourCalm: UInt32 = 0xb
}
