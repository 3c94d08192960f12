// The verdicts of `run`, as pure functions over recorded exchanges: what one event delivered
// against what it had to, and the token-cleanup rules judged from outside the sender.
import JSON
import RecordLine
import Scenario
import SpecValidator
import PushModel

/// One thing wrong, with the words a report prints.
public struct Problem: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case missing, unexpected, duplicate, wrongToken = "wrong_token", specViolation = "spec_violation"
        case unmatched, field, deadTokenPush = "dead_token_push", droppedOnTransient = "dropped_on_transient"
        case droppedOnPayloadError = "dropped_on_payload_error", notPushedAfterRegistering = "not_pushed_after_registering"
        case storeMismatch = "store_mismatch", sender
        /// A push that says something other than the reference rules' push for its device.
        case content
        /// A retry sent before the Retry-After of the 429 or 503 it follows had passed.
        case retryTooSoon = "retry_too_soon"
    }

    public var kind: Kind
    public var message: String
    /// The seed sentence behind the expectation or the violated rule.
    public var source: String?

    public init(_ kind: Kind, _ message: String, source: String? = nil) {
        self.kind = kind
        self.message = message
        self.source = source
    }

    /// The token-cleanup rule it breaks, nil for a delivery problem.
    public var cleanupRule: CleanupRule? { CleanupRule(brokenBy: kind) }

    /// The dead-token rule's finding, in `run` and in a load run: `push` (`request #12`, `push
    /// #3`) went to `device`'s token after it was answered dead; `answered` says when.
    public static func deadTokenPush(device: String, push: String, answered: String) -> Problem {
        Problem(.deadTokenPush, "a push to a dead token: \(device) (\(push)), answered \(answered)")
    }
}

/// The token-cleanup rules, judged from outside the sender in `run` (`CleanupState`, per event)
/// and in a load run (`ArrivalMatcher`, by time); their names are what reports print, in this order.
public enum CleanupRule: String, Sendable, CaseIterable {
    /// No push to a token the gateway answered gone or bad (`deadTokenPush`).
    case noPushToDeadToken = "no push to a dead token"
    /// A transient or payload error ends no token (`droppedOnTransient`, `droppedOnPayloadError`).
    case keptAfterRefusal = "tokens kept after transient and payload errors"
    /// A device registered again after its token died is pushed again (`notPushedAfterRegistering`).
    case pushedAgainAfterRegistering = "a device registered again is pushed again"
    /// The sender's store holds the live tokens and no dead one (`storeMismatch`).
    case storeMatchesAnswers = "the sender's store matches the gateway's answers"

    /// As reports name it.
    public var name: String { rawValue }

    /// The rule a kind of problem breaks; nil for a delivery problem.
    public init?(brokenBy kind: Problem.Kind) {
        switch kind {
        case .deadTokenPush: self = .noPushToDeadToken
        case .droppedOnTransient, .droppedOnPayloadError: self = .keptAfterRefusal
        case .notPushedAfterRegistering: self = .pushedAgainAfterRegistering
        case .storeMismatch: self = .storeMatchesAnswers
        case .missing, .unexpected, .duplicate, .wrongToken, .specViolation, .unmatched, .field, .sender, .content, .retryTooSoon:
            return nil
        }
    }
}

/// The tokens' fate so far, from the gateway's answers and the scenario's registrations.
public struct CleanupState: Sendable {
    /// Token → (the event it was answered gone or bad at, how).
    public var dead: [DeviceToken: (event: Int, answer: AnswerClass)] = [:]
    /// Token → the last non-fatal refusal it got (transient or payload error), while live.
    public var refused: [DeviceToken: AnswerClass] = [:]
    /// Tokens of devices registered again after they were dead.
    public var reRegistered: Set<DeviceToken> = []

    public init() {}

    /// Notes what the event's exchanges said about tokens.
    public mutating func absorb(_ exchanges: [RecordedExchange], event: Int, badTokens: Set<DeviceToken>) {
        for exchange in exchanges where exchange.isPush {
            guard let token = exchange.deviceToken else { continue }
            let answer = AnswerClass.of(status: exchange.status ?? 0, reason: exchange.reason, tokenIsBad: badTokens.contains(token))
            switch answer {
            case .gone, .bad:
                if dead[token] == nil { dead[token] = (event, answer) }
                refused[token] = nil
                reRegistered.remove(token)
            case .transient, .payloadError:
                refused[token] = answer
            case .accepted:
                refused[token] = nil
            case .otherSender:
                break
            }
        }
    }

    /// A device registered again: it is live and must be pushed again.
    public mutating func registered(_ token: DeviceToken) {
        if dead.removeValue(forKey: token) != nil { reRegistered.insert(token) }
    }

    /// The cleanup rule an expected push that never came breaks, if one does: its device was
    /// registered again after its token died and got nothing since, or its token was dropped
    /// after a transient or payload error (which must not end a token).
    public func missedPushProblem(token: DeviceToken, spec: String, deviceName name: String) -> Problem? {
        if reRegistered.contains(token) {
            return Problem(.notPushedAfterRegistering, "\(name) registered again after cleanup but got no \(spec)")
        }
        guard let refusal = refused[token] else { return nil }
        return Problem(refusal == .transient ? .droppedOnTransient : .droppedOnPayloadError,
                       "\(name) got no \(spec): token dropped on a \(refusal == .transient ? "transient" : "payload") error")
    }
}

/// One event's verdict.
public struct EventVerdict: Sendable {
    public var index: Int
    public var type: String
    /// "expect" or "reference rules".
    public var oracle: String
    public var source: String?
    public var expected: [ExpectedPush]
    /// Accepted pushes: device (id or token), spec, request sequence.
    public var delivered: [(device: String, spec: String?, sequence: Int)]
    public var problems: [Problem]
    /// Devices whose token this event's answers made dead (gone or bad), for the cleanup timeline.
    public var tokensDied: [(device: String, answer: AnswerClass)] = []

    public var passed: Bool { problems.isEmpty }
}

public enum EventJudge {
    /// Judges one event's exchanges (pushes only matter) against `expected`, given what the
    /// cleanup state said before the event. `deviceName` turns a token into the device id a
    /// report shows.
    public static func judge(
        index: Int, type: String, oracle: String, source: String?, expected: [ExpectedPush],
        exchanges: [RecordedExchange], cleanup: CleanupState, deviceName: (String) -> String,
        specs: SpecSet? = nil, wallClockMs: Int64 = 0
    ) -> EventVerdict {
        let pushes = exchanges.filter(\.isPush)
        var problems: [Problem] = []
        var tally = DeliveryTally()
        for push in pushes { tally.add(token: push.token, status: push.status, spec: push.specID, sequence: push.sequence ?? 0) }
        let comparison = tally.compare(with: expected)
        func sourceOf(_ token: String, _ spec: String?) -> String? {
            expected.first { DeviceToken($0.token) == DeviceToken(token) && $0.spec == spec }?.source ?? source
        }
        // What the gateway answered each device's refused pushes, so a missing push says why.
        var refusals: [DeviceToken: [RecordedExchange]] = [:]
        for push in pushes where !push.accepted {
            guard let token = push.deviceToken else { continue }
            refusals[token, default: []].append(push)
        }
        for (entry, got) in comparison.missing {
            let token = DeviceToken(entry.token)
            let name = deviceName(entry.token)
            let spec = entry.specName
            let refused = refusals[token] ?? []
            // Dropped only if nothing went to the token at all: a sender still pushing it and
            // refused again (a bad signature on every push) kept it; its answer says why below.
            if let problem = cleanup.missedPushProblem(token: token, spec: spec, deviceName: name),
               problem.kind == .notPushedAfterRegistering || (got == 0 && refused.isEmpty) {
                problems.append(problem)
            }
            var message = "missing: \(spec) to \(name) (accepted \(got) of \(entry.count))"
            if !refused.isEmpty {
                let answers = refused.reduce(into: [String]()) { list, push in if !list.contains(push.answer) { list.append(push.answer) } }
                message += "; the gateway answered " + refused.map(\.requestNumber).joined(separator: ", ") + ": "
                    + answers.joined(separator: "; ")
            }
            problems.append(Problem(.missing, message, source: sourceOf(entry.token, entry.spec)))
        }
        for (entry, got, extra) in comparison.repeated {
            problems.append(Problem(.duplicate, "duplicate: \(entry.specName) to \(deviceName(entry.token)) accepted \(got) times "
                                    + "(extra: request #\(extra.map(String.init).joined(separator: ", #")))"))
        }
        for (token, spec, sequence) in comparison.unexpected {
            // A push of a missing spec to another token of the same person: the wrong token kind.
            let wrongKind = comparison.missing.first { missing in
                missing.entry.spec == spec && sameOwner(deviceName(missing.entry.token), deviceName(token))
            }
            if let wrongKind {
                problems.append(Problem(.wrongToken, "wrong token: \(spec ?? "a push") went to \(deviceName(token)) (request #\(sequence)) "
                                        + "instead of \(deviceName(wrongKind.entry.token))"))
            } else {
                problems.append(Problem(.unexpected, "unexpected: \(spec ?? "an unmatched push") to \(deviceName(token)) (request #\(sequence))"))
            }
        }
        // Every push passes its spec, and matches one.
        for push in pushes {
            guard let judgement = push.verdict?.judgement else { continue }
            // Named only when something is wrong: most pushes pass.
            var name: String { push.token.map(deviceName) ?? push.path }
            guard let spec = judgement.spec else {
                problems.append(Problem(.unmatched, "request \(push.requestNumber) to \(name) matches no spec"))
                continue
            }
            for violation in judgement.violations {
                let pointer = violation.pointer
                problems.append(Problem(.specViolation, "request \(push.requestNumber) \(spec) to \(name) at \(pointer.isEmpty ? "/" : pointer): \(violation.message)",
                                        source: violation.source?.sentence))
            }
        }
        // The first accepted push of each device and spec, found once: pinned fields and content
        // are read from it (a scan per expected push was quadratic: 67 s for a 10,000-member call).
        var firstAccepted: [DeviceSpec: RecordedExchange] = [:]
        if expected.contains(where: { $0.reference != nil || !$0.fields.isEmpty || !$0.headers.isEmpty }) {
            for push in pushes where push.accepted {
                guard let token = push.deviceToken, let spec = push.specID else { continue }
                let key = DeviceSpec(token: token, spec: spec)
                if firstAccepted[key] == nil { firstAccepted[key] = push }
            }
        }
        func acceptedPush(for entry: ExpectedPush) -> RecordedExchange? {
            entry.spec.flatMap { firstAccepted[DeviceSpec(token: DeviceToken(entry.token), spec: $0)] }
        }
        // Pinned fields and headers hold on the accepted push.
        for entry in expected where !entry.fields.isEmpty || !entry.headers.isEmpty {
            guard let push = acceptedPush(for: entry) else { continue }
            for (name, value) in entry.headers {
                let found = push.headers.first { $0.name == name }?.value
                if found != value {
                    problems.append(Problem(.field, "\(entry.specName) to \(entry.device) at header \(name): expected "
                                            + (value.map { JSONValue.string($0).serialized() } ?? "none") + ", found "
                                            + (found.map { JSONValue.string($0).serialized() } ?? "none"), source: entry.source ?? source))
                }
            }
            let body = (try? JSONParser.parse(push.body)) ?? .null
            for (pointer, value) in entry.fields {
                let found = pointer.resolve(in: body)
                if found != value {
                    problems.append(Problem(.field, "\(entry.specName) to \(entry.device) at \(pointer): expected \(value.serialized()), found "
                                            + (found?.serialized() ?? "nothing"), source: entry.source ?? source))
                }
            }
        }
        // What each push says, against the reference rules' push for its device and spec.
        if let specs {
            for entry in expected {
                guard let reference = entry.reference, let spec = entry.spec.flatMap(specs.spec(id:)),
                      let push = acceptedPush(for: entry) else { continue }
                for difference in spec.compareContent(headers: push.headers, body: push.body, with: reference, wallClockMs: wallClockMs) {
                    problems.append(Problem(.content, "content: \(entry.specName) to \(entry.device) (request \(push.requestNumber)): \(difference)",
                                            source: difference.source?.sentence))
                }
            }
        }
        problems += retriesTooSoon(pushes, deviceName: deviceName)
        // No push to a token already answered gone or bad.
        for push in pushes where !cleanup.dead.isEmpty {
            guard let token = push.deviceToken, let death = cleanup.dead[token] else { continue }
            problems.append(.deadTokenPush(device: deviceName(token.comparable), push: "request \(push.requestNumber)",
                                           answered: "\(death.answer.rawValue) at event \(death.event)"))
        }
        var delivered: [(device: String, spec: String?, sequence: Int)] = []
        for push in pushes where push.accepted {
            delivered.append((push.token.map(deviceName) ?? "?", push.specID, push.sequence ?? 0))
        }
        return EventVerdict(index: index, type: type, oracle: oracle, source: source, expected: expected, delivered: delivered,
                            problems: problems)
    }

    /// Apple and Google both ask a sender to wait what a 429 or 503's `Retry-After` says
    /// before it tries again; a retry storm is what a launch-day run must catch. A retry is the
    /// next push to the same device of the same spec. Measured between the two answers: the
    /// retry arrived before its own answer, so a gap shorter than the wait is always a true
    /// finding (a latency fault on the retry can only hide one).
    static func retriesTooSoon(_ pushes: [RecordedExchange], deviceName: (String) -> String) -> [Problem] {
        var rule = RetryAfterRule()
        return pushes.compactMap { push in
            guard let token = push.deviceToken else { return nil }
            let answered = push.answeredNanos.flatMap { $0 > 0 ? $0 : nil }
            return rule.observe(push, token: token, label: "request \(push.requestNumber)", at: answered,
                                deviceName: { deviceName(token.comparable) }).map { Problem(.retryTooSoon, $0) }
        }
    }

    /// A device and a spec id.
    public struct DeviceSpec: Hashable, Sendable {
        var token: DeviceToken
        var spec: String
    }

    /// Device names are `<person>/<device>`: same person, same prefix.
    static func sameOwner(_ a: String, _ b: String) -> Bool {
        guard let slashA = a.firstIndex(of: "/"), let slashB = b.firstIndex(of: "/") else { return false }
        return a[..<slashA] == b[..<slashB]
    }

    /// The sender's store against what it should hold: every live device, no dead one.
    public static func compareStore(listed: [ListedDevice], live: Set<DeviceToken>, dead: Set<DeviceToken>,
                                    deviceName: (String) -> String) -> [Problem] {
        let held = Set(listed.map { DeviceToken($0.token) })
        // Sorted for a stable report, but only the differences: a large population has tens
        // of thousands of live tokens and this runs after every event.
        let kept = dead.filter { held.contains($0) }.sorted()
        let lost = live.filter { !held.contains($0) }.sorted()
        return kept.map { Problem(.storeMismatch, "the sender's store still holds \(deviceName($0.comparable)), whose token was answered gone or bad") }
            + lost.map { Problem(.storeMismatch, "the sender's store lost \(deviceName($0.comparable)), whose token is live") }
    }
}

extension RecordedExchange {
    /// How findings name a request: `#12`, its `seq`.
    var requestNumber: String { "#" + (sequence.map(String.init) ?? "?") }
}

/// The Retry-After rule, written once for `run`'s verdicts and a load run's matcher. Apple and
/// Google ask a sender to wait what a 429 or 503's `Retry-After` says before it tries again: a
/// refusal holds its device and spec for that long, and the next push to them sooner (a retry
/// is the next push to the same device of the same spec) is a retry too soon. Times are when
/// the gateway answered, so a latency fault on the retry can only hide a finding, never make one.
public struct RetryAfterRule: Sendable {
    private struct Refusal: Sendable {
        var label: String
        var answer: String
        var wait: Int
        var at: UInt64
    }
    private var waiting: [EventJudge.DeviceSpec: Refusal] = [:]

    public init() {}

    /// `push`, to `token`, answered at `at` nanoseconds (any one clock; nil: not known, it only
    /// ends a wait), named `label` in findings ("request #3", "push #3"). Returns the finding's
    /// words when it came too soon.
    public mutating func observe(_ push: RecordedExchange, token: DeviceToken, label: String, at: UInt64?,
                                 deviceName: () -> String) -> String? {
        let key = EventJudge.DeviceSpec(token: token, spec: push.specID ?? "")
        var finding: String?
        if let refusal = waiting.removeValue(forKey: key), let at, at >= refusal.at {
            let gap = Double(at - refusal.at) / 1e9
            if gap < Double(refusal.wait) {
                finding = "retry too soon: \(label) to \(deviceName()) came " + String(format: "%.3f", gap)
                    + " s after \(refusal.label) was answered \(refusal.answer) with Retry-After: \(refusal.wait) (wait at least \(refusal.wait) s)"
            }
        }
        if let at, push.status == 429 || push.status == 503, let wait = push.retryAfterSeconds, wait > 0 {
            waiting[key] = Refusal(label: label, answer: push.answer, wait: wait, at: at)
        }
        return finding
    }
}
