import HTTPCore
import JSON
import PushModel
import Synchronization

/// One answer rule: an answer chosen by what the request carries, as a WireMock stub
/// is. "429 with Retry-After 2 to the 3rd push for token X", "500 when `/aps/alert/title` is
/// empty", "410 for every token with prefix P after time T". Read from the configuration's
/// `answer_rules`, the control API's `/answer-rules` and a scenario's `gateway.answer_rules`
/// (`ConfigReader.answerRules`, which checks everything below).
public struct AnswerRule: Sendable, Equatable {
    /// Names the rule in `/metrics` (`pushproof_answer_rule_matches_total{rule}`) and in the
    /// record line's `rule`; unique in a list.
    public var name: String
    public var match: Match
    public var answer: Answer
    /// How many times the rule may answer; nil: no limit.
    public var times: Int?

    /// What a request must carry, every given field at once.
    public struct Match: Sendable, Equatable {
        /// The device token, in the registry's key form (hex lowercased: APNs tokens are
        /// case-insensitive), or a prefix of it in the same form.
        public var token: TokenMatch?
        /// Answer the Nth request that matches the rest (1-based), or every one from the Nth on.
        public var count: CountMatch?
        /// On the gateway's clock, Unix milliseconds: at or after, and before.
        public var afterMillis: UInt64?
        public var beforeMillis: UInt64?
        /// By JSON Pointer into the body (the APNs payload, the FCM request): equal to the value.
        public var fields: [FieldMatch]
        /// By JSON Pointer into the body: not there.
        public var absentFields: [JSONPointer]
        /// Lowercase header names: equal to the value, or (nil) absent.
        public var headers: [HeaderMatch]

        public init(token: TokenMatch? = nil, count: CountMatch? = nil, afterMillis: UInt64? = nil, beforeMillis: UInt64? = nil,
                    fields: [FieldMatch] = [], absentFields: [JSONPointer] = [], headers: [HeaderMatch] = []) {
            self.token = token
            self.count = count
            self.afterMillis = afterMillis
            self.beforeMillis = beforeMillis
            self.fields = fields
            self.absentFields = absentFields
            self.headers = headers
        }

        /// Whether the body is read at all: only a rule that looks into it parses it.
        var readsBody: Bool { !fields.isEmpty || !absentFields.isEmpty }
    }

    public enum TokenMatch: Sendable, Equatable {
        case exactly(String)
        case prefix(String)
    }

    public enum CountMatch: Sendable, Equatable {
        case nth(Int)
        case fromNth(Int)

        func holds(_ n: UInt64) -> Bool {
            switch self {
            case .nth(let wanted): n == UInt64(wanted)
            case .fromNth(let first): n >= UInt64(first)
            }
        }
    }

    public struct FieldMatch: Sendable, Equatable {
        public var pointer: JSONPointer
        public var value: JSONValue
        public init(pointer: JSONPointer, value: JSONValue) {
            self.pointer = pointer
            self.value = value
        }
    }

    public struct HeaderMatch: Sendable, Equatable {
        public var name: String
        public var value: String?
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// The answer, in each route's own vocabulary: a rule answers on the routes it has a reason
    /// for (`route` in the file: one of them; no route: both, with the reasons that mean the same).
    public struct Answer: Sendable, Equatable {
        public var apns: APNSReason?
        public var fcm: FCMErrorCode?
        /// `retry-after` on a 429 or 503; nil: none (Apple and Google may leave it out).
        public var retryAfterSeconds: Int?
        /// The 410's `timestamp` (APNs): when the token stopped being valid; nil: now.
        public var sinceMillis: UInt64?

        public init(apns: APNSReason? = nil, fcm: FCMErrorCode? = nil, retryAfterSeconds: Int? = nil, sinceMillis: UInt64? = nil) {
            self.apns = apns
            self.fcm = fcm
            self.retryAfterSeconds = retryAfterSeconds
            self.sinceMillis = sinceMillis
        }

        func answers(_ route: GatewayRoute) -> Bool {
            switch route {
            case .apns: apns != nil
            case .fcm: fcm != nil
            case .oauth, .unknown: false
            }
        }
    }

    public init(name: String, match: Match = Match(), answer: Answer, times: Int? = nil) {
        self.name = name
        self.match = match
        self.answer = answer
        self.times = times
    }

    /// At most this many rules in a list: each request may look at every one.
    public static let maximumCount = 1_000
}

/// What the rules are shown of a request that passed every check before its device's own.
struct AnswerRuleRequest {
    var route: GatewayRoute
    /// In the registry's key form (`DeviceTokenRegistry.key`); nil when the request names none
    /// (an FCM send to a topic).
    var token: String?
    var headers: HTTPFields
    var body: [UInt8]
    var nowMillis: UInt64
}

/// The answer rules in force, evaluated in order, the first that matches answering. Each rule
/// counts the requests that reach it and match (for `nth`) and its answers (for `times` and
/// `/metrics`) in atomics of its own, so memory stays one rule's worth whatever the traffic.
/// Changed at runtime by the control API; an empty list costs the request path one atomic load.
public final class AnswerRules: Sendable {
    /// One rule in force and its counters.
    final class Entry: Sendable {
        let rule: AnswerRule
        /// Requests that reached the rule and matched all but `nth`/`from_nth`.
        let seen = Atomic<UInt64>(0)
        /// Requests it answered.
        let answered = Atomic<UInt64>(0)
        init(_ rule: AnswerRule) { self.rule = rule }
    }

    private let entries: Mutex<[Entry]>
    /// Whether any rule is in force: the request path checks this before taking the lock.
    private let active: Atomic<Bool>

    public init(_ rules: [AnswerRule] = []) {
        entries = Mutex(rules.map(Entry.init))
        active = Atomic(!rules.isEmpty)
    }

    /// Whether any rule is in force (one atomic load: the request path asks before anything else).
    var isActive: Bool { active.load(ordering: .relaxed) }

    /// The rules in force, in order.
    public var rules: [AnswerRule] { entries.withLock { $0.map(\.rule) } }

    /// Each rule with its counts: requests that reached it and matched (`seen`), and answered.
    public var counts: [(rule: AnswerRule, seen: UInt64, answered: UInt64)] {
        entries.withLock { $0 }.map { ($0.rule, $0.seen.load(ordering: .relaxed), $0.answered.load(ordering: .relaxed)) }
    }

    /// Replaces every rule (their counts start again at zero).
    public func replace(with rules: [AnswerRule]) {
        let fresh = rules.map(Entry.init)
        entries.withLock { entries in
            entries = fresh
            active.store(!entries.isEmpty, ordering: .relaxed)
        }
    }

    /// Adds a rule after the others (the others keep their counts).
    public func append(_ rule: AnswerRule) {
        entries.withLock { entries in
            entries.append(Entry(rule))
            active.store(true, ordering: .relaxed)
        }
    }

    /// The rule that answers this request, nil when none does. The list is taken under the
    /// lock; the rules are looked at without it (the body is parsed once, and only when a
    /// rule that reads it has matched on everything else).
    func decide(_ request: AnswerRuleRequest) -> AnswerRule? {
        guard isActive else { return nil }
        let list = entries.withLock { $0 }
        var body: JSONValue??  // nil: not parsed yet; .some(nil): not JSON
        for entry in list {
            let rule = entry.rule
            guard rule.answer.answers(request.route) else { continue }
            if let times = rule.times, entry.answered.load(ordering: .relaxed) >= UInt64(times) { continue }
            guard Self.matchesCheaply(rule.match, request) else { continue }
            if rule.match.readsBody {
                if body == nil {
                    body = .some(try? JSONParser.parse(request.body, options: .init(maxDepth: APNSService.payloadMaxDepth)))
                }
                guard let document = body!, Self.matchesBody(rule.match, document) else { continue }
            }
            let n = entry.seen.add(1, ordering: .relaxed).newValue
            if let count = rule.match.count, !count.holds(n) { continue }
            guard Self.take(entry) else { continue }
            return rule
        }
        return nil
    }

    /// Counts one answer, unless the rule has used up its `times` meanwhile (another loop).
    private static func take(_ entry: Entry) -> Bool {
        guard let times = entry.rule.times.map(UInt64.init) else {
            entry.answered.add(1, ordering: .relaxed)
            return true
        }
        var current = entry.answered.load(ordering: .relaxed)
        while current < times {
            let (exchanged, original) = entry.answered.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Token, time and headers: what needs no parsing.
    static func matchesCheaply(_ match: AnswerRule.Match, _ request: AnswerRuleRequest) -> Bool {
        switch match.token {
        case nil: break
        case .exactly(let token)?: guard request.token == token else { return false }
        case .prefix(let prefix)?: guard let token = request.token, token.utf8.starts(with: prefix.utf8) else { return false }
        }
        if let after = match.afterMillis, request.nowMillis < after { return false }
        if let before = match.beforeMillis, request.nowMillis >= before { return false }
        for header in match.headers where request.headers.value(of: header.name) != header.value { return false }
        return true
    }

    static func matchesBody(_ match: AnswerRule.Match, _ document: JSONValue) -> Bool {
        for field in match.fields where field.pointer.resolve(in: document) != field.value { return false }
        for pointer in match.absentFields where pointer.resolve(in: document) != nil { return false }
        return true
    }
}
