// One blocking HTTP request through the sender's libcurl wrapper, for cold paths outside the
// delivery loop (the gateway's control API: a handful of calls per run).
import CCurl

/// Why a `CurlRequest` got no HTTP answer.
public struct CurlRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// One request on its own easy handle, set up, read and torn down by `CurlTransfer` (the same
/// options, body collection and error text as the delivery loop's transfers), performed with
/// `curl_easy_perform` on the calling thread, never through a proxy. No connection outlives it.
public enum CurlRequest {
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var body: [UInt8]
    }

    /// Responses on these paths are small (JSON, Prometheus text); more than this is cut.
    static let bodyLimit = 16 << 20

    /// `method` "GET" sends no body; any other method sends `body` (empty when nil) with
    /// `headers` ("name: value" lines). Times out after `timeoutMilliseconds`.
    public static func perform(_ method: String, url: String, headers: [String] = [], body: [UInt8]? = nil,
                               timeoutMilliseconds: Int = 10_000, tls: TLSTrust = .systemRoots) throws(CurlRequestError) -> Response {
        let configuration = DeliveryConfiguration(tls: tls, requestTimeoutMilliseconds: timeoutMilliseconds,
                                                  connectTimeoutMilliseconds: timeoutMilliseconds)
        guard let transfer = CurlTransfer(configuration: configuration, sockets: nil, bodyLimit: bodyLimit) else {
            throw CurlRequestError(message: "libcurl could not start")
        }
        defer { transfer.release() }
        // HTTP/1.1 over cleartext, HTTP/2 where TLS offers it (CURL_HTTP_VERSION_2TLS).
        guard transfer.prepare(url: url, headers: CurlTransfer.HeaderSet(id: 0, lines: headers), body: body ?? [],
                               purpose: .idle, mode: .idle) else {
            throw CurlRequestError(message: "\(method) \(url): libcurl refused the request's options")
        }
        // Cold paths talk to the gateway under test on loopback: never through a proxy from the environment.
        _ = cshim_easy_setopt_string(transfer.easy, CURLOPT_NOPROXY, "*")
        // The handle is set up for POST; this one request may be anything else.
        if method == "GET" {
            _ = cshim_easy_setopt_long(transfer.easy, CURLOPT_HTTPGET, 1)
        } else if method != "POST" {
            _ = cshim_easy_setopt_string(transfer.easy, CURLOPT_CUSTOMREQUEST, method)
        }
        let code = curl_easy_perform(transfer.easy)
        var status = 0
        _ = cshim_easy_getinfo_long(transfer.easy, CURLINFO_RESPONSE_CODE, &status)
        let answer = transfer.finish(result: code, status: status)
        if let failure = answer.transportError {
            let reason: String = switch failure {
            case .fail(let reason, _), .retry(let reason, _, _), .refreshCredentialsAndRetry(let reason, _), .removeToken(let reason, _): reason
            case .delivered: "no answer"
            }
            throw CurlRequestError(message: "\(method) \(url): \(reason)")
        }
        return Response(status: status, body: answer.body)
    }
}
