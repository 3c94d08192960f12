// Reading answer rules: the configuration's `answer_rules`, the control API's `/answer-rules`,
// a scenario's `gateway.answer_rules`. Cold path.
import JSON
import PushModel

extension ConfigReader {
    /// A list of rules (`[{"name", "route"?, "match"?, "answer", "times"?}, …]`), at most
    /// `AnswerRule.maximumCount`, names unique.
    func answerRules(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> [AnswerRule] {
        guard case .array(let elements) = value else { throw fail(path, "expected an array of rules") }
        guard elements.count <= AnswerRule.maximumCount else {
            throw fail(path, "\(elements.count) rules; at most \(AnswerRule.maximumCount)")
        }
        var rules: [AnswerRule] = []
        var names: Set<String> = []
        for (index, element) in elements.enumerated() {
            let rule = try answerRule(element, "\(path)[\(index)]")
            guard names.insert(rule.name).inserted else {
                throw fail("\(path)[\(index)].name", "\"\(rule.name)\" names an earlier rule too")
            }
            rules.append(rule)
        }
        return rules
    }

    func answerRule(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> AnswerRule {
        let o = try JSONFields(value, path: path, allowed: ["name", "route", "match", "answer", "times"])
        let name = try o.requiredString("name")
        guard name.utf8.count <= 128, name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw o.fail("name", "at most 128 bytes, no control characters (it is a metric label)")
        }
        let route: GatewayRoute? = switch try o.choice("route", ["apns", "fcm"]) {
        case "apns": .apns
        case "fcm": .fcm
        default: nil
        }
        let match = try o.object("match", allowed: ["token", "token_prefix", "nth", "from_nth", "after_ms", "before_ms",
                                                    "fields", "absent", "headers"]).map(ruleMatch) ?? AnswerRule.Match()
        guard let answerFields = try o.object("answer", allowed: ["status", "reason", "retry_after_seconds", "since_ms"]) else {
            throw o.fail("answer", "required ({\"status\": 429, …})")
        }
        return AnswerRule(name: name, match: match, answer: try ruleAnswer(answerFields, route: route),
                          times: try o.int("times", range: 1...Int(Int32.max)))
    }

    private func ruleMatch(_ o: JSONFields) throws(GatewayConfigurationError) -> AnswerRule.Match {
        var match = AnswerRule.Match()
        let token = try o.string("token"), prefix = try o.string("token_prefix")
        switch (token, prefix) {
        case (let token?, nil):
            guard !token.isEmpty else { throw o.fail("token", "empty") }
            match.token = .exactly(DeviceTokenRegistry.key(token))
        case (nil, let prefix?):
            guard !prefix.isEmpty else { throw o.fail("token_prefix", "empty (leave it out to match every token)") }
            match.token = .prefix(DeviceTokenRegistry.key(prefix))
        case (nil, nil): break
        case (_?, _?): throw o.fail("token_prefix", "give token or token_prefix, not both")
        }
        let nth = try o.int("nth", range: 1...Int(Int32.max)), fromNth = try o.int("from_nth", range: 1...Int(Int32.max))
        switch (nth, fromNth) {
        case (let n?, nil): match.count = .nth(n)
        case (nil, let n?): match.count = .fromNth(n)
        case (nil, nil): break
        case (_?, _?): throw o.fail("from_nth", "give nth or from_nth, not both")
        }
        match.afterMillis = try o.int("after_ms", range: 0...Int(Int64.max)).map { UInt64($0) }
        match.beforeMillis = try o.int("before_ms", range: 0...Int(Int64.max)).map { UInt64($0) }
        if let after = match.afterMillis, let before = match.beforeMillis, before <= after {
            throw o.fail("before_ms", "must be later than after_ms (\(after))")
        }
        if let fields = try o.object("fields") {
            // Values as written: null is a value to match (`absent` says "not there").
            for (text, expected) in fields.object.entries {
                guard !text.isEmpty, let pointer = JSONPointer(text) else {
                    throw fields.fail(text, "not a JSON Pointer (like /aps/alert/title)")
                }
                match.fields.append(.init(pointer: pointer, value: expected))
            }
        }
        for (index, text) in (try o.strings("absent") ?? []).enumerated() {
            guard !text.isEmpty, let pointer = JSONPointer(text) else {
                throw fail(o.path("absent", index), "not a JSON Pointer (like /aps/sound)")
            }
            match.absentFields.append(pointer)
        }
        if let headers = try o.object("headers") {
            for (name, expected) in headers.object.entries {
                switch expected {
                case .string(let value): match.headers.append(.init(name: name.lowercased(), value: value))
                case .null: match.headers.append(.init(name: name.lowercased(), value: nil))
                default: throw headers.fail(name, "a header's value is a string (null: the header must be absent)")
                }
            }
        }
        return match
    }

    /// Statuses a rule without `route` may answer: those both gateways have a reason for that
    /// means the same (410: the token is gone, as a gone token is answered on each).
    static let sharedRuleAnswers: [Int: (APNSReason, FCMErrorCode)] = [
        410: (.unregistered, .unregistered), 429: (.tooManyRequests, .quotaExceeded),
        500: (.internalServerError, .internalError), 503: (.serviceUnavailable, .unavailable),
    ]

    /// FCM error codes a rule may answer: those the gateway has Google's answer for.
    static let ruleFCMCodes: [FCMErrorCode] = [.invalidArgument, .senderIdMismatch, .unregistered, .quotaExceeded,
                                               .internalError, .unavailable]

    private func ruleAnswer(_ o: JSONFields, route: GatewayRoute?) throws(GatewayConfigurationError) -> AnswerRule.Answer {
        let status = try o.int("status", range: 100...599)
        let reason = try o.string("reason")
        var answer = AnswerRule.Answer()
        switch route {
        case nil:
            guard reason == nil else {
                throw o.fail("reason", "a reason is APNs' or FCM's own: give the rule a route (\"apns\" or \"fcm\")")
            }
            guard let status else { throw o.fail("status", "required") }
            guard let shared = Self.sharedRuleAnswers[status] else {
                throw o.fail("status", "without a route, one of 410, 429, 500, 503 (give a route for the others)")
            }
            (answer.apns, answer.fcm) = shared
        case .apns?:
            let known = APNSReason.allCases.filter { $0 != .idleTimeout && $0 != .shutdown }
            if let reason {
                guard let found = known.first(where: { $0.rawValue == reason }) else {
                    throw o.fail("reason", "not an APNs reason: \(reason)")
                }
                if let status, status != found.status {
                    throw o.fail("status", "\(reason) is answered \(found.status), not \(status)")
                }
                answer.apns = found
            } else {
                let defaults: [Int: APNSReason] = [410: .unregistered, 429: .tooManyRequests, 500: .internalServerError,
                                                   503: .serviceUnavailable]
                guard let status else { throw o.fail("status", "required (or a reason)") }
                guard let found = defaults[status] else {
                    let statuses = Set(known.map(\.status)).sorted().map(String.init).joined(separator: ", ")
                    if known.contains(where: { $0.status == status }) {
                        throw o.fail("reason", "required for \(status): which APNs reason (e.g. \(known.first { $0.status == status }!.rawValue))")
                    }
                    throw o.fail("status", "APNs answers \(statuses)")
                }
                answer.apns = found
            }
        case .fcm?:
            if let reason {
                guard let found = Self.ruleFCMCodes.first(where: { $0.rawValue == reason }) else {
                    throw o.fail("reason", "one of \(Self.ruleFCMCodes.map(\.rawValue).joined(separator: ", ")), not \(reason)")
                }
                if let status, status != found.status {
                    throw o.fail("status", "\(reason) is answered \(found.status), not \(status)")
                }
                answer.fcm = found
            } else {
                guard let status else { throw o.fail("status", "required (or a reason)") }
                guard let found = Self.ruleFCMCodes.first(where: { $0.status == status }) else {
                    throw o.fail("status", "one of \(Self.ruleFCMCodes.map { String($0.status) }.joined(separator: ", "))")
                }
                answer.fcm = found
            }
        case .oauth?, .unknown?:
            break
        }
        let answered = answer.apns?.status ?? answer.fcm?.status ?? 0
        answer.retryAfterSeconds = try o.int("retry_after_seconds", range: 0...86_400)
        if answer.retryAfterSeconds != nil, ![429, 503].contains(answered) {
            throw o.fail("retry_after_seconds", "only on a 429 or a 503 (this rule answers \(answered))")
        }
        answer.sinceMillis = try sinceMillis(o)
        if answer.sinceMillis != nil, answer.apns?.status != 410 {
            throw o.fail("since_ms", "only on a 410 (the token's timestamp)")
        }
        return answer
    }
}
