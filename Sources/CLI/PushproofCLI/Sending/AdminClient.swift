// A client for the gateway's control API (`pushproof serve --admin`), which listens on
// loopback in cleartext; libcurl does the HTTP.
import CCurl
import Foundation
import JSON

struct AdminError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Talks to `http://HOST:PORT` of a `pushproof serve --admin` listener.
struct AdminClient {
    let host: String
    let port: Int
    let baseURL: String

    /// Accepts `http://HOST:PORT` (an IP literal or localhost), with or without a trailing slash.
    init(url: String) throws(UsageError) {
        var rest = url
        guard rest.hasPrefix("http://") else {
            throw UsageError(message: "--admin: '\(url)' is not an http:// URL (the control API speaks cleartext)")
        }
        rest.removeFirst("http://".count)
        while rest.hasSuffix("/") { rest.removeLast() }
        let hostPort = try HostPort(parsing: rest, option: "admin")
        host = hostPort.host == "localhost" ? "127.0.0.1" : hostPort.host
        port = hostPort.port
        baseURL = "http://" + rest
    }

    /// `PUT /tokens/<token>` with `{"state": state}`: the gateway answers that token so from now on.
    func setTokenState(_ token: String, state: String) throws(AdminError) {
        let response = try request("PUT", "/tokens/" + token, body: "{\"state\":\"\(state)\"}")
        guard (200..<300).contains(response.status) else {
            throw AdminError(message: "control API refused PUT /tokens/\(token): HTTP \(response.status) \(response.body)")
        }
    }

    /// `GET /metrics`: Prometheus text.
    func metrics() throws(AdminError) -> String {
        let response = try request("GET", "/metrics", body: nil)
        guard response.status == 200 else { throw AdminError(message: "control API: GET /metrics answered HTTP \(response.status)") }
        return response.body
    }

    /// Spec violations the gateway has counted so far; nil when it judges nothing (no --specs).
    func specViolationCount() throws(AdminError) -> Int? {
        let status = try request("GET", "/status", body: nil)
        guard status.status == 200, let parsed = try? JSONParser.parse(status.body) else {
            throw AdminError(message: "control API: GET /status answered HTTP \(status.status)")
        }
        guard let specs = parsed["specs"], specs != .null else { return nil }
        return specViolations(inMetrics: try metrics()) ?? 0
    }

    /// One request with libcurl's easy interface (cold path: a handful of calls per run).
    func request(_ method: String, _ path: String, body: String?) throws(AdminError) -> (status: Int, body: String) {
        guard let handle = curl_easy_init() else { throw AdminError(message: "control API: libcurl could not start") }
        defer { curl_easy_cleanup(handle) }
        let url = baseURL + path
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        let received = ResponseBuffer()
        let unmanaged = Unmanaged.passRetained(received)
        defer { unmanaged.release() }
        _ = cshim_easy_setopt_string(handle, CURLOPT_URL, url)
        _ = cshim_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
        _ = cshim_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, 10_000)
        _ = cshim_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        // Loopback only: never through a proxy from the environment.
        _ = cshim_easy_setopt_string(handle, CURLOPT_NOPROXY, "*")
        _ = cshim_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            let buffer = Unmanaged<ResponseBuffer>.fromOpaque(context).takeUnretainedValue()
            buffer.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        })
        _ = cshim_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, unmanaged.toOpaque())
        if let body {
            headers = curl_slist_append(headers, "content-type: application/json")
            _ = cshim_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headers)
            // libcurl keeps its own copy of the body (JSON text, no NUL bytes).
            _ = cshim_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.utf8.count))
            _ = cshim_easy_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, body)
        }
        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            throw AdminError(message: "control API \(method) \(url): \(String(cString: curl_easy_strerror(code)))")
        }
        var status = 0
        _ = cshim_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return (status, String(decoding: received.bytes, as: UTF8.self))
    }
}

/// Collects a response body inside libcurl's write callback.
private final class ResponseBuffer {
    var bytes: [UInt8] = []
}

/// The sum of every `pushproof_spec_violations_total` sample in Prometheus text, nil when the
/// gateway exports none (it judges nothing without --specs).
func specViolations(inMetrics text: String) -> Int? {
    var total: Double?
    for line in text.split(separator: "\n") where line.hasPrefix("pushproof_spec_violations_total") {
        guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
        total = (total ?? 0) + value
    }
    return total.map { Int($0) }
}
