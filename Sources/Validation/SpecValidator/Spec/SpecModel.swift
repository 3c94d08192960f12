import JSON

/// Where a rule comes from: a sentence of a product document (`seed`, a file in
/// shared/seeds) or of a protocol reference (`reference`, a file in shared/reference).
/// The linter checks that `sentence` occurs verbatim in that file.
public struct SpecSource: Sendable, Equatable {
    /// File name in shared/seeds (`000_011794c6e3cb5dae.txt`), or nil for a reference source.
    public var seed: String?
    /// File name in shared/reference (`apns.md`), or nil for a seed source.
    public var reference: String?
    public var sentence: String

    public init(seed: String? = nil, reference: String? = nil, sentence: String) {
        self.seed = seed
        self.reference = reference
        self.sentence = sentence
    }

    public func json() -> JSONValue {
        var object = JSONObject()
        if let seed { object["seed"] = .string(seed) }
        if let reference { object["reference"] = .string(reference) }
        object["sentence"] = .string(sentence)
        return .object(object)
    }
}

/// One broken rule in one request.
public struct SpecViolation: Sendable, Equatable, CustomStringConvertible {
    /// Into the request: `/headers/apns-topic`, `/body/aps/alert/title`, `/body/message/data/cv`,
    /// or the root for a request no spec matches.
    public var pointer: JSONPointer
    /// The rule's id: `header:apns-push-type`, `derived:collapse-id`, `schema:/properties/cv/const`,
    /// `unmatched`, `body-json`.
    public var rule: String
    /// The sentence the rule encodes; nil only for set-level rules (`unmatched`, `body-json`).
    public var source: SpecSource?
    /// What the rule wanted, in words or as JSON text.
    public var expected: String
    /// What the request carried, as JSON text (header values as JSON strings); nil when absent.
    public var found: String?
    public var message: String

    public init(pointer: JSONPointer, rule: String, source: SpecSource?, expected: String, found: String?, message: String) {
        self.pointer = pointer
        self.rule = rule
        self.source = source
        self.expected = expected
        self.found = found
        self.message = message
    }

    /// One line for `pushproof check`: where, which rule, what was wanted and found, and why.
    public var description: String {
        var text = "\(pointer.tokens.isEmpty ? "/" : pointer.description) [\(rule)] \(message): expected \(expected), found \(found ?? "nothing")"
        if let source {
            text += " (\(source.seed ?? source.reference ?? ""): \"\(source.sentence)\")"
        }
        return text
    }

    public func json() -> JSONValue {
        var object = JSONObject()
        object["pointer"] = .string(pointer.description)
        object["rule"] = .string(rule)
        object["source"] = source?.json() ?? .null
        object["expected"] = .string(expected)
        object["found"] = found.map { .string($0) } ?? .null
        object["message"] = .string(message)
        return .object(object)
    }
}

/// The judgement of one request against a spec set.
public struct SpecVerdict: Sendable, Equatable, CustomStringConvertible {
    /// The spec that recognised the request (`poolse.ring.apns`); nil when none did.
    public var specID: String?
    public var violations: [SpecViolation]
    /// True when the route is out of scope (`oauth`, `/token`): nothing was judged.
    public var outOfScope: Bool
    /// Set when no product claims the request (its APNs topic or FCM project is none of the
    /// products'): nothing was judged, and that is no violation. `check` reports these apart.
    public var uncovered: UncoveredRequest?
    /// Where that spec is in the judging set's `specs` (nil when no spec recognised the request,
    /// or for a verdict built by hand), so a reader finds what it keeps per spec without hashing
    /// the id (`SpecJudge.recordedForm`: ~0.4% of a judged push, perf). Not part of `==`.
    public internal(set) var specIndex: Int?

    public init(specID: String?, violations: [SpecViolation], outOfScope: Bool = false, uncovered: UncoveredRequest? = nil) {
        self.specID = specID
        self.violations = violations
        self.outOfScope = outOfScope
        self.uncovered = uncovered
    }

    init(specID: String, specIndex: Int, violations: [SpecViolation]) {
        self.init(specID: specID, violations: violations)
        self.specIndex = specIndex
    }

    public static func == (a: SpecVerdict, b: SpecVerdict) -> Bool {
        a.specID == b.specID && a.violations == b.violations && a.outOfScope == b.outOfScope && a.uncovered == b.uncovered
    }

    public var passed: Bool { violations.isEmpty }

    /// `poolse.ring.apns: ok`, or the spec (or "unmatched") and one violation per line.
    public var description: String {
        if outOfScope { return "out of scope" }
        if let uncovered { return "not covered by any spec (\(uncovered.label))" }
        let head = specID ?? "no spec"
        if violations.isEmpty { return head + ": ok" }
        return head + ": \(violations.count) violation\(violations.count == 1 ? "" : "s")\n" + violations.map { "  " + $0.description }.joined(separator: "\n")
    }

    /// The form written into a recording line: `{"spec": id|null, "ok": bool, "violations": [...]}`
    /// (plus `"outOfScope": true` when the route was not judged, `"covered": false` when no
    /// product claims the request).
    public func json() -> JSONValue {
        var object = JSONObject()
        object["spec"] = specID.map { .string($0) } ?? .null
        object["ok"] = .bool(violations.isEmpty)
        if outOfScope { object["outOfScope"] = .bool(true) }
        if uncovered != nil { object["covered"] = .bool(false) }
        object["violations"] = .array(violations.map { $0.json() })
        return .object(object)
    }
}

/// A problem at one place in a spec directory: which file, where in it, and what. Loading
/// throws the first one it meets (as `SpecLoadError`); the linter lists all it finds (as
/// `LintFinding`), a load error among them.
public struct SpecProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var pointer: JSONPointer
    public var message: String

    public init(file: String, pointer: JSONPointer, message: String) {
        self.file = file
        self.pointer = pointer
        self.message = message
    }

    public var description: String {
        pointer.tokens.isEmpty ? "\(file): \(message)" : "\(file) at \(pointer): \(message)"
    }

    /// `{"file", "pointer", "message"}`, for `pushproof specs lint --json`.
    public func json() -> JSONValue {
        ["file": .string(file), "pointer": .string(pointer.description), "message": .string(message)]
    }
}

/// A spec directory that cannot be loaded: the problem that stopped the load.
public typealias SpecLoadError = SpecProblem

/// One problem the linter found in a spec directory.
public typealias LintFinding = SpecProblem

extension JSONValue {
    /// The text a template yields for this value: strings as they are, integral numbers without
    /// a fraction ("1793952045"), booleans as "true"/"false". Objects and arrays have none.
    var templateText: String? {
        switch self {
        case .string(let s): return s
        case .number(let d):
            if d.rounded(.towardZero) == d, abs(d) < 9_007_199_254_740_992 { return String(Int(d)) }
            return String(d)
        case .bool(let b): return b ? "true" : "false"
        case .null, .array, .object: return nil
        }
    }
}
