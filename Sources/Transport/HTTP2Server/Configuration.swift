// Public configuration of the transport: what to listen on, how to speak TLS, and the
// HTTP/2 settings the server advertises.
import Glibc
import HTTPCore

/// Certificate and key for a TLS listener, as PEM files or PEM text. The certificate may be
/// a chain (leaf first, then intermediates).
public struct TLSConfiguration: Sendable {
    public enum Source: Sendable {
        case files(certificateChainPath: String, privateKeyPath: String)
        case pem(certificateChain: String, privateKey: String)
    }

    public var source: Source
    /// Ask clients for a certificate (APNs certificate-based provider auth) and hand it to
    /// the application as `ConnectionContext.clientCertificateDER`. It is not verified here:
    /// any certificate, or none, completes the handshake, so the application can answer
    /// 403 BadCertificate the way APNs does instead of failing the handshake.
    public var requestsClientCertificate: Bool

    public init(certificateChainPath: String, privateKeyPath: String, requestsClientCertificate: Bool = false) {
        source = .files(certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        self.requestsClientCertificate = requestsClientCertificate
    }

    public init(certificateChainPEM: String, privateKeyPEM: String, requestsClientCertificate: Bool = false) {
        source = .pem(certificateChain: certificateChainPEM, privateKey: privateKeyPEM)
        self.requestsClientCertificate = requestsClientCertificate
    }
}

/// One listening address and the application served on it. The gateway and its admin API
/// are two listeners with two handlers.
public struct ListenerConfiguration: Sendable {
    /// An IPv4 or IPv6 literal (`127.0.0.1`, `::1`, `0.0.0.0`, `::`) or a resolvable name.
    public var host: String
    /// 0 lets the kernel choose; `HTTPServer.start()` reports the port it chose.
    public var port: Int
    /// nil serves cleartext (h2c by prior knowledge, or HTTP/1.1).
    public var tls: TLSConfiguration?
    public var handler: any HTTPHandler

    public init(host: String, port: Int, tls: TLSConfiguration? = nil, handler: any HTTPHandler) {
        self.host = host
        self.port = port
        self.tls = tls
        self.handler = handler
    }
}

/// The SETTINGS a new HTTP/2 connection advertises (RFC 9113 §6.5.2). The defaults are what
/// api.push.apple.com advertises; SETTINGS_MAX_CONCURRENT_STREAMS comes from the handler.
public struct HTTP2Settings: Sendable, Equatable {
    public var headerTableSize: UInt32 = 4096
    public var initialWindowSize: UInt32 = 65535
    public var maxFrameSize: UInt32 = 16384
    /// Enforced: a request whose header list (RFC 9113 §6.5.2 size: name + value + 32 per
    /// field) exceeds it is answered 431 (RFC 6585 §5) and the rest of its stream discarded.
    public var maxHeaderListSize: UInt32 = 8000
    /// Debug data for the GOAWAY sent when a client opens more streams than the
    /// SETTINGS_MAX_CONCURRENT_STREAMS it has acknowledged (a connection error, RFC 9113
    /// §5.1.2). nil keeps nghttp2's own text, "request HEADERS: max concurrent streams
    /// exceeded". APNs has been seen answering "Maximum active streams violated for this
    /// endpoint." here. (Streams over a limit not yet acknowledged get RST_STREAM
    /// REFUSED_STREAM instead.)
    public var streamLimitGoAwayDebugData: [UInt8]? = nil
    /// Error code of that GOAWAY when `streamLimitGoAwayDebugData` is set.
    public var streamLimitGoAwayErrorCode: UInt32 = HTTP2ErrorCode.protocolError
    /// Response header names (lowercase) whose value is new on nearly every answer (APNs'
    /// `apns-id`): HPACK-encoded as literals never indexed (RFC 7541 §6.2.3), the same header
    /// to the peer, kept out of the connection's dynamic table. Indexed, each answer added an
    /// entry no later answer used, and nghttp2's encoder compared the new value with every
    /// entry of that name already there (~55 in a 4 KB table): memcmp alone was 3.7% of the
    /// server's time, 0.8% after (perf).
    public var neverIndexedResponseHeaders: [String] = []

    public init() {}
}

public struct ServerConfiguration: Sendable {
    /// Event-loop threads; each has its own SO_REUSEPORT listening socket per listener.
    public var threads: Int
    public var http2: HTTP2Settings
    /// Request bodies above this are refused: HTTP/2 answers 413 then RST_STREAM(NO_ERROR)
    /// (RFC 9113 §8.1 lets a server answer before the request is complete and stop it);
    /// HTTP/1.1 answers 413 with `connection: close` and closes.
    public var maxRequestBodyBytes: Int
    /// A connection that has received nothing for this long is closed (also bounds slow
    /// TLS handshakes and clients that never send a request).
    public var idleTimeout: Duration
    /// A request head must be complete this long after its first byte (for the first request
    /// of a connection: after the connection was accepted, TLS handshake included), or the
    /// connection is answered 408 (HTTP/1.1) or closed. Every byte resets the idle timer, so
    /// without this a client sending one byte a second ("slowloris") is never closed. An
    /// HTTP/2 header block (HEADERS + CONTINUATION) that takes longer ends the connection
    /// with GOAWAY(ENHANCE_YOUR_CALM), since nothing else can be read until it ends.
    public var requestHeadTimeout: Duration
    /// A request body must be complete this long after its head: HTTP/1.1 answers 408 and
    /// closes; HTTP/2 answers the stream 408 and resets it (RST_STREAM NO_ERROR).
    public var requestBodyTimeout: Duration
    /// An HTTP/2 answer whose body the peer does not take (its flow-control window stays shut:
    /// SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE) for this long ends the connection with
    /// GOAWAY(ENHANCE_YOUR_CALM), as nginx's `send_timeout` does. PINGs keep a connection from
    /// being idle, so without this such a peer held its answers' memory forever.
    public var responseSendTimeout: Duration
    /// Request-body bytes one HTTP/2 connection may hold for its incomplete streams; a stream
    /// that would take it over is reset with REFUSED_STREAM. nil: twice
    /// `maxRequestBodyBytes` (at least one 65,535-byte window).
    public var maxBufferedBodyBytesPerConnection: Int?

    public init(threads: Int = ServerConfiguration.defaultThreadCount,
                http2: HTTP2Settings = HTTP2Settings(),
                maxRequestBodyBytes: Int = 1 << 20,
                idleTimeout: Duration = .seconds(60),
                requestHeadTimeout: Duration = .seconds(10),
                requestBodyTimeout: Duration = .seconds(30),
                responseSendTimeout: Duration = .seconds(30),
                maxBufferedBodyBytesPerConnection: Int? = nil) {
        self.threads = threads
        self.http2 = http2
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.idleTimeout = idleTimeout
        self.requestHeadTimeout = requestHeadTimeout
        self.requestBodyTimeout = requestBodyTimeout
        self.responseSendTimeout = responseSendTimeout
        self.maxBufferedBodyBytesPerConnection = maxBufferedBodyBytesPerConnection
    }

    /// The number of online cores.
    public static var defaultThreadCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

/// Where a listener actually listens (the chosen port when 0 was asked for).
public struct BoundListener: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var isTLS: Bool
}

/// Why the server could not start.
public struct HTTPServerError: Error, CustomStringConvertible, Equatable {
    public var description: String
    init(_ description: String) { self.description = description }
}
