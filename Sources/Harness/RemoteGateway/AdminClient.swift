// A client for the gateway's control API (`pushproof serve --admin`), which listens on
// loopback in cleartext; the sender's libcurl wrapper does the HTTP.
import JSON
import Sender

public struct AdminError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}

/// Talks to `http://HOST:PORT` of a `pushproof serve --admin` listener.
public struct AdminClient: Sendable {
    public let host: String
    public let port: Int
    public let baseURL: String

    public init(host: String, port: Int, baseURL: String) {
        self.host = host
        self.port = port
        self.baseURL = baseURL
    }

    /// `PUT /tokens/<token>` with `{"state": state}`: the gateway answers that token so from now on.
    public func setTokenState(_ token: String, state: String) throws(AdminError) {
        let response = try request("PUT", "/tokens/" + token, body: "{\"state\":\"\(state)\"}")
        guard (200..<300).contains(response.status) else {
            throw AdminError(message: "control API refused PUT /tokens/\(token): HTTP \(response.status) \(response.body)")
        }
    }

    /// `GET /metrics`: Prometheus text.
    /// `DELETE /provider-tokens`: the gateway forgets each team's provider-token updates, as
    /// if this process's token were the team's first. The mock counts them across connections
    /// as Apple does, so a second `drive` within 20 minutes of the first (each signs its own
    /// token) would otherwise be refused TooManyProviderTokenUpdates, which is Apple's answer
    /// to that but not what a load run measures.
    public func forgetProviderTokenUpdates() throws(AdminError) {
        let answer = try request("DELETE", "/provider-tokens", body: nil)
        guard answer.status == 200 else { throw AdminError(message: "DELETE /provider-tokens: HTTP \(answer.status) \(answer.body)") }
    }

    public func metrics() throws(AdminError) -> String {
        let response = try request("GET", "/metrics", body: nil)
        guard response.status == 200 else { throw AdminError(message: "control API: GET /metrics answered HTTP \(response.status)") }
        return response.body
    }

    /// Spec violations the gateway has counted so far; nil when it judges nothing (no --specs).
    public func specViolationCount() throws(AdminError) -> Int? {
        let status = try request("GET", "/status", body: nil)
        guard status.status == 200, let parsed = try? JSONParser.parse(status.body) else {
            throw AdminError(message: "control API: GET /status answered HTTP \(status.status)")
        }
        guard let specs = parsed["specs"], specs != .null else { return nil }
        return specViolations(inMetrics: try metrics()) ?? 0
    }

    /// One request through the sender's libcurl wrapper (cold path: a handful of calls per run).
    public func request(_ method: String, _ path: String, body: String?) throws(AdminError) -> (status: Int, body: String) {
        let url = baseURL + path
        do {
            let response = try CurlRequest.perform(method, url: url, headers: body == nil ? [] : ["content-type: application/json"],
                                                   body: body.map { Array($0.utf8) })
            return (response.status, String(decoding: response.body, as: UTF8.self))
        } catch {
            throw AdminError(message: "control API \(error)")
        }
    }
}

/// The sum of every `pushproof_spec_violations_total` sample in Prometheus text, nil when the
/// gateway exports none (it judges nothing without --specs).
public func specViolations(inMetrics text: String) -> Int? {
    var total: Double?
    for line in text.split(separator: "\n") where line.hasPrefix("pushproof_spec_violations_total") {
        guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
        total = (total ?? 0) + value
    }
    return total.map { Int($0) }
}
