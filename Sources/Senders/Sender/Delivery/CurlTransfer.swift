// One reusable libcurl easy handle and the state of the request it carries.
import CCurl
import Glibc
import PushModel

/// Owned by the delivery thread. Its address is the easy handle's CURLOPT_PRIVATE and the
/// user data of its callbacks; the loop keeps every transfer alive until the multi handle
/// is gone, so the unretained pointer never dangles.
final class CurlTransfer {
    enum Purpose {
        case idle
        case push(DeliveryJob)
        case accessToken
    }

    /// How a request asks for HTTP/2, and where it stands on its connection.
    struct HTTPMode: Equatable {
        enum Version: Equatable {
            /// https://: h2 by ALPN.
            case tls
            /// http://: HTTP/2 with prior knowledge (h2c).
            case priorKnowledge
            /// http:// onto an h2c connection already open, on a libcurl that fails to reuse
            /// h2c connections with prior knowledge (`priorKnowledgeReuseIsBroken`): asking
            /// for plain HTTP/2 multiplexes onto it without tripping the bug.
            case plainHTTP2
        }

        var version: Version
        /// "scheme://host:port": libcurl shares connections per host and port.
        var origin: String
        /// The first request on a new connection, sent alone (see `CurlLoop.startTransfer`).
        var isProbe: Bool

        static let idle = HTTPMode(version: .tls, origin: "", isProbe: false)
    }

    /// A request's header lines, and an id that is the same for every request carrying the
    /// same lines (0: used once, never matched), so a handle can keep its libcurl list.
    struct HeaderSet {
        var id: Int
        var lines: [String]
    }

    /// What one finished request produced.
    struct Answer {
        var purpose: Purpose
        var mode: HTTPMode
        var body: [UInt8]
        var apnsID: String?
        var retryAfter: Double?
        /// Set when no HTTP answer arrived.
        var transportError: DeliveryVerdict?
    }

    /// Error bodies are small; anything beyond this is dropped rather than buffered.
    static let maxBodyBytes = 64 * 1024

    /// The most response body bytes kept (`maxBodyBytes` for pushes).
    let bodyLimit: Int

    let easy: UnsafeMutableRawPointer
    /// The request headers as libcurl holds them, kept across requests: consecutive pushes
    /// usually carry the same header set (same push type, topic and provider token), and
    /// rebuilding the list costs two allocations per line plus the frees.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// Which `HeaderSet` `headerList` was built from (0: none).
    private var headerListID = 0
    /// The request body, owned here so libcurl can send it without its own copy (CURLOPT_POSTFIELDS
    /// points into it); grows to the largest body seen and is reused.
    private var bodyBuffer: UnsafeMutableRawPointer
    private var bodyCapacity: Int
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private(set) var purpose: Purpose = .idle
    private(set) var mode: HTTPMode = .idle
    fileprivate var body: [UInt8] = []
    fileprivate var apnsID: String?
    fileprivate var retryAfter: Double?

    /// libcurl's upload buffer for each handle (CURLOPT_UPLOAD_BUFFERSIZE).
    static let uploadBufferBytes = 16 * 1024
    /// libcurl's receive buffer for each handle (CURLOPT_BUFFERSIZE).
    static let receiveBufferBytes = 4 * 1024

    /// `sockets` counts the connections the handle opens; nil for a one-shot request (`CurlRequest`).
    init?(configuration: DeliveryConfiguration, sockets: ConnectionSockets?, bodyLimit: Int = CurlTransfer.maxBodyBytes) {
        guard let easy = curl_easy_init() else { return nil }
        self.easy = easy
        self.bodyLimit = bodyLimit
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        bodyCapacity = 1024
        bodyBuffer = .allocate(byteCount: bodyCapacity, alignment: 1)
        let me = Unmanaged.passUnretained(self).toOpaque()
        // Options that never change for this handle.
        _ = cshim_easy_setopt_ptr(easy, CURLOPT_PRIVATE, me)
        _ = cshim_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, curlReceiveBody)
        _ = cshim_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, me)
        _ = cshim_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, curlReceiveHeader)
        _ = cshim_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, me)
        _ = cshim_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = cshim_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        if let sockets {
            _ = cshim_easy_setopt_sockopt_callback(easy, curlSocketOpened)
            _ = cshim_easy_setopt_ptr(easy, CURLOPT_SOCKOPTDATA, sockets.callbackContext)
            _ = cshim_easy_setopt_closesocket_callback(easy, curlSocketClosing)
            _ = cshim_easy_setopt_ptr(easy, CURLOPT_CLOSESOCKETDATA, sockets.callbackContext)
        }
        // With no proxy variable set, libcurl would still look for one (getenv of each
        // spelling) on every request; saying "no proxy for any host" skips that, and is
        // what it would conclude anyway.
        if !Self.environmentNamesProxy { _ = cshim_easy_setopt_string(easy, CURLOPT_NOPROXY, "*") }
        _ = cshim_easy_setopt_long(easy, CURLOPT_POST, 1)
        // Wait for an existing connection to multiplex on rather than open another.
        _ = cshim_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        // libcurl gives every handle a 64 KiB upload buffer by default: 64 MB for the reference
        // sender's thousand handles, for bodies of at most 4 KiB (APNs) and answers smaller
        // still. 16 KiB is libcurl's least.
        _ = cshim_easy_setopt_long(easy, CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferBytes)
        // Its receive buffer is 16 KiB a handle by default (16 MB of a 100,000-person call's
        // peak); the gateways' answers are a few hundred bytes at most, and a larger one is
        // read in more pieces, not cut.
        _ = cshim_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, Self.receiveBufferBytes)
        _ = cshim_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, configuration.requestTimeoutMilliseconds)
        _ = cshim_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds)
        switch configuration.tls {
        case .systemRoots:
            break
        case .caFile(let path):
            _ = cshim_easy_setopt_string(easy, CURLOPT_CAINFO, path)
        case .insecure:
            _ = cshim_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 0)
            _ = cshim_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 0)
        }
    }

    /// Frees the handle; only after it left the multi handle.
    func release() {
        reset()
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        headerList = nil
        errorBuffer.deallocate()
        bodyBuffer.deallocate()
    }

    /// Sets up one POST; `mode` says how to ask for HTTP/2. Options that did not change
    /// since this handle's last request (header list, HTTP version) are not set again.
    func prepare(url: String, headers: HeaderSet, body requestBody: [UInt8], purpose: Purpose, mode: HTTPMode) -> Bool {
        reset()
        self.purpose = purpose
        if headers.id == 0 || headers.id != headerListID {
            _ = cshim_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, nil)
            curl_slist_free_all(headerList)
            headerList = nil
            headerListID = 0
            for line in headers.lines {
                guard let appended = curl_slist_append(headerList, line) else { return false }
                headerList = appended
            }
            guard cshim_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList) == CURLE_OK else { return false }
            headerListID = headers.id
        }
        if mode.version != versionSet {
            let version = switch mode.version {
            case .tls, .plainHTTP2: CURL_HTTP_VERSION_2TLS
            case .priorKnowledge: CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
            }
            guard cshim_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(version)) == CURLE_OK else { return false }
            versionSet = mode.version
        }
        self.mode = mode
        guard cshim_easy_setopt_string(easy, CURLOPT_URL, url) == CURLE_OK else { return false }
        if requestBody.count > bodyCapacity {
            bodyBuffer.deallocate()
            bodyCapacity = max(requestBody.count, bodyCapacity * 2)
            bodyBuffer = .allocate(byteCount: bodyCapacity, alignment: 1)
        }
        requestBody.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { bodyBuffer.copyMemory(from: base, byteCount: bytes.count) }
        }
        // The size first: with it unset libcurl would take the body for a C string.
        guard cshim_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(requestBody.count)) == CURLE_OK else { return false }
        return cshim_easy_setopt_ptr(easy, CURLOPT_POSTFIELDS, bodyBuffer) == CURLE_OK
    }

    /// What CURLOPT_HTTP_VERSION was last set for on this handle.
    private var versionSet: HTTPMode.Version?

    /// Takes the answer and makes the handle idle again.
    func finish(result: CURLcode, status: Int) -> Answer {
        var answer = Answer(purpose: purpose, mode: mode, body: body, apnsID: apnsID, retryAfter: retryAfter, transportError: nil)
        if result != CURLE_OK {
            let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(result))
            answer.transportError = ResponseClassifier.classifyTransportError(
                code: Int(result.rawValue), message: detail, permanent: Self.isPermanent(result))
        }
        reset()
        return answer
    }

    func reset() {
        purpose = .idle
        mode = .idle
        body.removeAll(keepingCapacity: true)
        apnsID = nil
        retryAfter = nil
        errorBuffer.pointee = 0
    }

    /// libcurl before 8.0 fails every request that reuses an HTTP/2 prior-knowledge (h2c)
    /// connection with CURLE_HTTP2, "Error in the HTTP2 framing layer" (curl issue #10634,
    /// fixed in 8.0.0 by PR #10643; Debian bookworm ships 7.88.1 unfixed). Requests that
    /// ask for plain HTTP/2 reuse such a connection fine, hence `HTTPMode.Version.plainHTTP2`.
    static let priorKnowledgeReuseIsBroken: Bool = {
        // version_num sits in the first version of the struct, so the oldest layout suffices.
        guard let info = curl_version_info(CURLVERSION_FIRST) else { return true }
        return info.pointee.version_num < 0x08_00_00
    }()

    /// Whether any variable libcurl takes a proxy from is set (curl_easy_setopt(3),
    /// CURLOPT_PROXY: "http_proxy", "HTTPS_PROXY", "ALL_PROXY", either case).
    static let environmentNamesProxy: Bool = {
        let names = ["http_proxy", "https_proxy", "all_proxy"]
        return names.contains { name in
            getenv(name) != nil || getenv(name.uppercased()) != nil
        }
    }()

    /// Errors of configuration rather than of the network: retrying cannot help.
    static func isPermanent(_ code: CURLcode) -> Bool {
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_NOT_BUILT_IN,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_PEER_FAILED_VERIFICATION,
             CURLE_BAD_FUNCTION_ARGUMENT, CURLE_OUT_OF_MEMORY:
            true
        default:
            false
        }
    }

    fileprivate func appendBody(_ bytes: UnsafeRawBufferPointer) {
        let room = bodyLimit - body.count
        guard room > 0 else { return }
        body.append(contentsOf: bytes.prefix(room))
    }

    /// Picks the two response headers the sender acts on; every other header costs a
    /// case-insensitive prefix compare and nothing else.
    fileprivate func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        if let value = Self.value(of: "apns-id", in: line) {
            apnsID = String(decoding: value, as: UTF8.self)
        } else if let value = Self.value(of: "retry-after", in: line) {
            retryAfter = parseRetryAfterSeconds(value)
        } else if line.starts(with: "HTTP/".utf8) {
            // A new response (after an informational one) starts clean.
            apnsID = nil
            retryAfter = nil
        }
    }

    static func value(of name: StaticString, in line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer.SubSequence? {
        let nameLength = name.utf8CodeUnitCount
        guard line.count > nameLength, line[nameLength] == UInt8(ascii: ":") else { return nil }
        let nameBytes = UnsafeRawBufferPointer(start: name.utf8Start, count: nameLength)
        for index in 0..<nameLength where lowercased(line[index]) != nameBytes[index] { return nil }
        var start = nameLength + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, [UInt8(ascii: "\r"), UInt8(ascii: "\n"), UInt8(ascii: " ")].contains(line[end - 1]) { end -= 1 }
        return line[start..<end]
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}

// C callbacks: recover the transfer from the user-data pointer; nothing here can throw.

private func curlReceiveBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userData: UnsafeMutableRawPointer?) -> Int {
    hand(data, size * count, userData) { $0.appendBody($1) }
}

private func curlReceiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userData: UnsafeMutableRawPointer?) -> Int {
    hand(data, size * count, userData) { $0.receiveHeaderLine($1) }
}

/// What both write callbacks do: give the `total` bytes to the transfer behind `userData`, and
/// tell libcurl all were taken (any other count aborts the transfer).
@inline(__always)
private func hand(_ data: UnsafeMutablePointer<CChar>?, _ total: Int, _ userData: UnsafeMutableRawPointer?,
                  to take: (CurlTransfer, UnsafeRawBufferPointer) -> Void) -> Int {
    guard let data, let userData else { return total }
    take(Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue(), UnsafeRawBufferPointer(start: data, count: total))
    return total
}
