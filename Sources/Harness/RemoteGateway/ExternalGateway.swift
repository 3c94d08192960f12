// `pushproof run --gateway URL --admin URL`: a scenario against a `pushproof serve` running
// elsewhere. Token states and faults go through its control API (`PUT /tokens/<t>`,
// `PUT /faults/<route>`), and what reached it for each event is read back from its request
// journal (`GET /requests?since=SEQ`, long-polled with `wait_ms`).
import Clocks
import Foundation
import JSON
import MockGateway
import RecordLine
import Scenario
import SpecValidator
import Driver
import ScenarioLoad
import ScenarioRunner
import Synchronization

public final class ExternalGateway: ScenarioGateway {
    public let access: GatewayAccess
    private let replicas: GatewayReplicas

    /// Resets every replica (`POST /reset`: token states, faults and answer rules back to its
    /// configuration), then sets the scenario's token states, faults and answer rules on each.
    public init(replicas: GatewayReplicas, access: GatewayAccess, opening: GatewayOpening) throws(GatewayStartError) {
        self.replicas = replicas
        self.access = access
        for admin in replicas.admins {
            // A serve that reports its spec config must claim the scenario's app, or nothing is judged.
            if let config = try Self.call(admin, "GET", "/status", body: nil)["spec_config"],
               let unclaimed = opening.unclaimedApp(specConfig: config) {
                throw GatewayStartError(replicas.count == 1 ? unclaimed : "\(admin.baseURL): \(unclaimed)")
            }
        }
        try everywhere("POST", "/reset", body: nil)
        for (token, state) in opening.tokens {
            try setTokenNow(token, state, nowMs: opening.startMs)
        }
        for (route, faults) in opening.faults?.objectValue ?? JSONObject() {
            try everywhere("PUT", "/faults/" + route, body: faults.serialized())
        }
        if let rules = opening.answerRules { try everywhere("PUT", "/answer-rules", body: rules.serialized()) }
    }

    public convenience init(admin: AdminClient, access: GatewayAccess, opening: GatewayOpening) throws(GatewayStartError) {
        try self.init(replicas: GatewayReplicas([admin]), access: access, opening: opening)
    }

    public func setToken(_ token: String, _ state: TokenState, nowMs: Int64) throws(GatewayStartError) {
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
        try everywhere("PUT", "/tokens/" + token, body: body.serialized())
    }

    /// Each replica's journal's last `seq` (`GET /status`, `journal.last_seq`).
    public func mark() throws(GatewayStartError) -> GatewayMark {
        var positions: [Int] = []
        for admin in replicas.admins {
            let status = try Self.call(admin, "GET", "/status", body: nil)
            guard let last = status["journal"]?["last_seq"]?.intValue else {
                throw GatewayStartError("control API \(admin.baseURL): GET /status has no journal.last_seq")
            }
            positions.append(last)
        }
        return GatewayMark(replicaPositions: positions)
    }

    /// Long polls `GET /requests?since=…&wait_ms=…` of each replica in turn (the first waits,
    /// the others are swept right after it answers): each answer brings what arrived; the event
    /// is answered once enough pushes were accepted across the replicas and a round found
    /// nothing on any of them.
    public func settle(after mark: GatewayMark, expectedAccepted: Int, options: RunOptions) throws(GatewayStartError) {
        let clock = MonotonicClock()
        let deadline = clock.now + .milliseconds(options.eventTimeoutMilliseconds)
        var since = mark.replicaPositions
        var accepted = 0
        while clock.now < deadline {
            let left = max(1, Int((deadline - clock.now) / .milliseconds(1)))
            let wait = accepted >= expectedAccepted ? min(max(options.settleMilliseconds, 1), left) : min(1_000, left)
            var quiet = true
            for (index, admin) in replicas.admins.enumerated() {
                let answer = try Self.journal(admin, "/requests?since=\(since[index])&wait_ms=\(index == 0 ? wait : 0)")
                for exchange in answer.exchanges {
                    guard let sequence = exchange.sequence else { continue }
                    since[index] = max(since[index], sequence)
                    if exchange.isPush, exchange.accepted { accepted += 1 }
                }
                if answer.lineCount > 0 || (index == 0 && answer.timedOut != true) { quiet = false }
            }
            if quiet, accepted >= expectedAccepted { return }
        }
    }

    /// What every replica received since `mark`, merged in the order the replicas answered
    /// (`answered_ns`, one clock on one machine, NTP's across machines).
    public func exchanges(after mark: GatewayMark) throws(GatewayStartError) -> [RecordedExchange] {
        var merged: [RecordedExchange] = []
        for (index, admin) in replicas.admins.enumerated() {
            let answer = try Self.journal(admin, "/requests?since=\(mark.replicaPositions[index])")
            guard answer.isArray else {
                throw GatewayStartError("control API \(admin.baseURL): GET /requests did not answer an array")
            }
            merged += answer.exchanges
        }
        guard replicas.count > 1 else { return merged }
        return merged.enumerated().sorted { a, b in
            (a.element.answeredNanos ?? 0, a.offset) < (b.element.answeredNanos ?? 0, b.offset)
        }.map(\.element)
    }

    public func stop() {}

    private func everywhere(_ method: String, _ path: String, body: String?) throws(GatewayStartError) {
        for admin in replicas.admins { try Self.call(admin, method, path, body: body) }
    }

    /// One control API request; its JSON answer (`{}` for an empty body).
    @discardableResult
    private static func call(_ admin: AdminClient, _ method: String, _ path: String, body: String?) throws(GatewayStartError) -> JSONValue {
        let answer = try answerBody(admin, method, path, body: body)
        if answer.isEmpty { return .object(JSONObject()) }
        do {
            return try JSONParser.parse(answer)
        } catch {
            throw GatewayStartError("control API \(admin.baseURL) \(method) \(path): not JSON: \(error)")
        }
    }

    /// `GET` of a `/requests` path: its record lines.
    private static func journal(_ admin: AdminClient, _ path: String) throws(GatewayStartError) -> JournalAnswerLines {
        let answer = try answerBody(admin, "GET", path, body: nil)
        do {
            return try JournalAnswerLines(Array(answer.utf8))
        } catch {
            throw GatewayStartError("control API \(admin.baseURL) GET \(path): not JSON: \(error)")
        }
    }

    private static func answerBody(_ admin: AdminClient, _ method: String, _ path: String, body: String?) throws(GatewayStartError) -> String {
        let response: (status: Int, body: String)
        do {
            response = try admin.request(method, path, body: body)
        } catch {
            throw GatewayStartError("\(error)")
        }
        guard (200..<300).contains(response.status) else {
            throw GatewayStartError("control API \(admin.baseURL) refused \(method) \(path): HTTP \(response.status) \(response.body)")
        }
        return response.body
    }
}

/// A `GET /requests` answer read for its record lines: the array (or a long poll's
/// `{"requests": […], "timed_out": …}`), each line decoded from its own bytes. A tree of the
/// answer would not do: a version-2 line's `json` is the body as received, which only its
/// bytes give back (key order, repeated keys, number spellings).
struct JournalAnswerLines {
    /// The lines that are record lines with a `seq` and a status (`RecordedExchange(recordLine:)`), in order.
    var exchanges: [RecordedExchange] = []
    /// How many lines the answer held, read or not.
    var lineCount = 0
    /// The answer was the array itself (`GET /requests` without `wait_ms`).
    var isArray = false
    /// A long poll's `timed_out`.
    var timedOut: Bool?

    init(_ body: [UInt8]) throws(JSONError) {
        let result: Result<JournalAnswerLines, JSONError> = body.withUnsafeBufferPointer { bytes in
            Result { () throws(JSONError) -> JournalAnswerLines in try JournalAnswerLines(bytes) }
        }
        self = try result.get()
    }

    private init(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONError) {
        var lines: [Range<Int>] = []
        if let ranges = try JSONParser.elementRanges(ofArrayIn: bytes) {
            isArray = true
            lines = ranges
        } else {
            let answer = try JSONParser.parse(bytes, leavingRaw: "requests")
            timedOut = answer.value["timed_out"]?.boolValue
            if let requests = answer.raw {
                let inner = UnsafeBufferPointer(rebasing: bytes[requests])
                lines = (try JSONParser.elementRanges(ofArrayIn: inner) ?? []).map { ($0.lowerBound + requests.lowerBound)..<($0.upperBound + requests.lowerBound) }
            }
        }
        lineCount = lines.count
        exchanges = lines.compactMap { RecordedExchange(recordLine: UnsafeBufferPointer(rebasing: bytes[$0])) }
    }
}

/// `drive --scenario` and `plan --scenario` against a `pushproof serve` (`--gateway`,
/// `--admin`): the control API sets token states and faults as for `run`, and one follower
/// long-polls the request journal for the whole run (`GET /requests?since=SEQ&wait_ms=…`,
/// answered as soon as a line is there), handing every push to the load run's matcher timed by
/// its `answered_ns` (so the poll's own delay is not in the latencies; on another machine the
/// two clocks must agree, as NTP keeps them, or latencies shift by the difference).
public final class FollowedGateway: ScenarioGateway {
    private let gateway: ExternalGateway
    /// One a replica.
    private let followers: [JournalFollower]

    public init(replicas: GatewayReplicas, access: GatewayAccess, opening: GatewayOpening, feed: ArrivalFeed) throws(GatewayStartError) {
        // Arrivals are matched to events by the spec id the gateway's judge records.
        for admin in replicas.admins {
            let status: JSONValue
            do {
                let response = try admin.request("GET", "/status", body: nil)
                guard response.status == 200 else { throw AdminError(message: "GET /status answered HTTP \(response.status)") }
                status = try JSONParser.parse(response.body)
            } catch {
                throw GatewayStartError("control API \(admin.baseURL): \(error)")
            }
            if status["specs"] == nil || status["specs"] == .null {
                throw GatewayStartError("the gateway \(replicas.count == 1 ? "" : admin.baseURL + " ")judges nothing: start pushproof serve "
                                        + "with --specs (a load run matches each push to its event by device token and the spec id the "
                                        + "gateway's judge records)")
            }
        }
        gateway = try ExternalGateway(replicas: replicas, access: access, opening: opening)
        let mark = try gateway.mark()
        followers = zip(replicas.admins, mark.replicaPositions).map { JournalFollower(admin: $0, since: $1, feed: feed) }
        for follower in followers { follower.start() }
    }

    public var access: GatewayAccess { gateway.access }
    public func setToken(_ token: String, _ state: TokenState, nowMs: Int64) throws(GatewayStartError) {
        try gateway.setToken(token, state, nowMs: nowMs)
    }
    public func mark() throws(GatewayStartError) -> GatewayMark { try gateway.mark() }
    public func settle(after mark: GatewayMark, expectedAccepted: Int, options: RunOptions) throws(GatewayStartError) {
        try gateway.settle(after: mark, expectedAccepted: expectedAccepted, options: options)
    }
    public func exchanges(after mark: GatewayMark) throws(GatewayStartError) -> [RecordedExchange] { try gateway.exchanges(after: mark) }

    /// Stops the followers once each has read what its journal holds.
    public func stop() { for follower in followers { follower.stop() } }

    /// Lines the journals dropped (each is a ring: `serve --journal-size`) before they were read.
    public var missedLines: Int { followers.reduce(0) { $0 + $1.missed } }
    /// Why a follower stopped early (its control API failed), if one did.
    public var failure: String? {
        followers.lazy.compactMap { follower in follower.failure.map { self.followers.count == 1 ? $0 : "\(follower.baseURL): \($0)" } }.first
    }
}

/// The one reader of a `pushproof serve`'s journal during a load run, on a thread of its own
/// (each poll blocks in libcurl for up to `pollMilliseconds`).
final class JournalFollower: Sendable {
    private struct State {
        var since: Int
        var stopping = false
        var missed = 0
        var failure: String?
    }
    private let admin: AdminClient
    private let feed: ArrivalFeed
    private let state: Mutex<State>
    private let stopped = DispatchSemaphore(value: 0)
    /// A poll this long finds nothing only when the gateway is idle; stopping waits for it at most.
    static let pollMilliseconds = 200

    init(admin: AdminClient, since: Int, feed: ArrivalFeed) {
        self.admin = admin
        self.feed = feed
        state = Mutex(State(since: since))
    }

    var missed: Int { state.withLock { $0.missed } }
    var baseURL: String { admin.baseURL }
    var failure: String? { state.withLock { $0.failure } }

    func start() {
        let thread = Thread { [self] in
            while !state.withLock({ $0.stopping }), poll(waiting: true) {}
            // A last sweep without waiting: what arrived since the last answer.
            _ = poll(waiting: false)
            stopped.signal()
        }
        thread.name = "pushproof journal follower"
        thread.start()
    }

    /// Blocks until the last sweep is done (at most one poll, `pollMilliseconds`); a second call returns at once.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        if first { stopped.wait() }
    }

    /// One `GET /requests`; false once the control API failed (the failure is kept).
    private func poll(waiting: Bool) -> Bool {
        let since = state.withLock { $0.since }
        let path = "/requests?since=\(since)" + (waiting ? "&wait_ms=\(Self.pollMilliseconds)" : "")
        let lines: [RecordedExchange]
        do {
            let response = try admin.request("GET", path, body: nil)
            guard response.status == 200 else { throw AdminError(message: "GET \(path) answered HTTP \(response.status) \(response.body)") }
            lines = try JournalAnswerLines(Array(response.body.utf8)).exchanges
        } catch {
            state.withLock { $0.failure = "the request journal: \(error)" }
            return false
        }
        var last = since
        var missed = 0
        for exchange in lines {
            guard let sequence = exchange.sequence else { continue }
            // Nothing is filtered: a gap in `seq` is lines the ring dropped before this poll.
            missed += max(0, sequence - last - 1)
            last = max(last, sequence)
            feed.arrived(exchange, answeredWallNanos: exchange.answeredNanos ?? SystemClock.wallClockNanoseconds())
        }
        state.withLock { state in
            state.since = last
            state.missed += missed
        }
        return true
    }
}

/// Where `drive --scenario` and `plan --scenario` play: the embedded gateway, or with
/// `--gateway URL --admin URL --ca FILE` and credentials (as `run` takes them) a `pushproof serve`.
public struct ScenarioLoadGateway: Sendable {
    public let external: (replicas: GatewayReplicas, access: GatewayAccess)?

    public init(external: (replicas: GatewayReplicas, access: GatewayAccess)?) {
        self.external = external
    }

    /// For the heading line.
    public var description: String {
        guard let external else { return "the embedded gateway (same machine)" }
        return "the gateway at \(external.access.apnsURL) (" + (external.replicas.count == 1 ? "its journal" : "journals")
            + " at \(external.replicas.description))"
    }

    /// One load run of `scenario` there. A journal the follower could not read, or lines it
    /// dropped before they were read, are notes (the first also stops the run: `aborted`).
    public func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: ScenarioLoadOptions,
             progress: ProgressCounters?) async throws(GatewayStartError) -> ScenarioLoadResult {
        guard let external else {
            return try await ScenarioLoad.run(scenario, judge: judge, sender: sender, options: options, progress: progress)
        }
        var followed: FollowedGateway?
        var result = try await ScenarioLoad.run(scenario, judge: judge, sender: sender, options: options, progress: progress) {
            opening, feed throws(GatewayStartError) in
            let gateway = try FollowedGateway(replicas: external.replicas, access: external.access, opening: opening, feed: feed)
            followed = gateway
            return gateway
        }
        if let followed {
            if followed.missedLines > 0 {
                result.summary.notes.append("the gateway's journal dropped \(followed.missedLines) requests before they were read "
                                            + "(a ring: start pushproof serve with a larger --journal-size); their pushes count as missing")
            }
            if let failure = followed.failure {
                result.summary.notes.append("arrivals stopped being read: \(failure)")
                if result.aborted == nil { result.aborted = failure }
            }
        }
        return result
    }
}
