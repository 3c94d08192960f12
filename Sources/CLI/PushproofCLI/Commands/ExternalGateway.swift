// `pushproof run --gateway URL --admin URL`: a scenario against a `pushproof serve` running
// elsewhere. Token states and faults go through its control API (`PUT /tokens/<t>`,
// `PUT /faults/<route>`), and what reached it for each event is read back from its request
// journal (`GET /requests?since=SEQ`, long-polled with `wait_ms`).
import Clocks
import Foundation
import JSON
import MockGateway
import Scenario
import ScenarioRunner

final class ExternalGateway: ScenarioGateway {
    let access: GatewayAccess
    private let admin: AdminClient

    /// Resets the gateway (`POST /reset`: token states and faults back to its configuration),
    /// then sets the scenario's token states and faults.
    init(admin: AdminClient, access: GatewayAccess, opening: GatewayOpening) throws(GatewayStartError) {
        self.admin = admin
        self.access = access
        try call("POST", "/reset", body: nil)
        for (token, state) in opening.tokens {
            try setTokenNow(token, state, nowMs: opening.startMs)
        }
        for (route, faults) in opening.faults?.objectValue ?? JSONObject() {
            try call("PUT", "/faults/" + route, body: faults.serialized())
        }
    }

    func setToken(_ token: String, _ state: TokenState, nowMs: Int64) throws(GatewayStartError) {
        try setTokenNow(token, state, nowMs: nowMs)
    }

    private func setTokenNow(_ token: String, _ state: TokenState, nowMs: Int64) throws(GatewayStartError) {
        let body: JSONValue = switch state {
        case .valid: ["state": .string("valid")]
        case .gone(let since): ["state": .string("gone"), "since_ms": .number(Double(since ?? nowMs))]
        case .expired: ["state": .string("expired"), "since_ms": .number(Double(nowMs))]
        case .bad: ["state": .string("bad")]
        case .otherSender: ["state": .string("other_sender")]
        }
        try call("PUT", "/tokens/" + token, body: body.serialized())
    }

    /// The journal's last `seq` (`GET /status`, `journal.last_seq`).
    func mark() throws(GatewayStartError) -> GatewayMark {
        let status = try call("GET", "/status", body: nil)
        guard let last = status["journal"]?["last_seq"]?.intValue else {
            throw GatewayStartError("control API: GET /status has no journal.last_seq")
        }
        return GatewayMark(position: last)
    }

    /// Long polls `GET /requests?since=…&wait_ms=…`: each answer brings what arrived; the event
    /// is answered once enough pushes were accepted and a poll of the settle time found nothing.
    func settle(after mark: GatewayMark, expectedAccepted: Int, options: RunOptions) throws(GatewayStartError) {
        let clock = MonotonicClock()
        let deadline = clock.now + .milliseconds(options.eventTimeoutMilliseconds)
        var since = mark.position
        var accepted = 0
        while clock.now < deadline {
            let left = max(1, Int((deadline - clock.now) / .milliseconds(1)))
            let wait = accepted >= expectedAccepted ? min(max(options.settleMilliseconds, 1), left) : min(1_000, left)
            let answer = try call("GET", "/requests?since=\(since)&wait_ms=\(wait)", body: nil)
            let lines = answer["requests"]?.arrayValue ?? []
            for line in lines {
                guard let exchange = ObservedExchange(recordLine: line) else { continue }
                since = max(since, exchange.sequence)
                if exchange.isPush, exchange.accepted { accepted += 1 }
            }
            if lines.isEmpty, accepted >= expectedAccepted, answer["timed_out"]?.boolValue == true { return }
        }
    }

    func exchanges(after mark: GatewayMark) throws(GatewayStartError) -> [ObservedExchange] {
        let answer = try call("GET", "/requests?since=\(mark.position)", body: nil)
        guard let lines = answer.arrayValue else { throw GatewayStartError("control API: GET /requests did not answer an array") }
        return lines.compactMap { ObservedExchange(recordLine: $0) }
    }

    func stop() {}

    /// One control API request; its JSON answer (`{}` for an empty body).
    @discardableResult
    private func call(_ method: String, _ path: String, body: String?) throws(GatewayStartError) -> JSONValue {
        let response: (status: Int, body: String)
        do {
            response = try admin.request(method, path, body: body)
        } catch {
            throw GatewayStartError("\(error)")
        }
        guard (200..<300).contains(response.status) else {
            throw GatewayStartError("control API refused \(method) \(path): HTTP \(response.status) \(response.body)")
        }
        if response.body.isEmpty { return .object(JSONObject()) }
        do {
            return try JSONParser.parse(response.body)
        } catch {
            throw GatewayStartError("control API \(method) \(path): not JSON: \(error)")
        }
    }
}
