import JSON

/// What the gateway found about one request besides its answer, as the record line keeps it
/// (`verdict`): the spec judge's finding (`serve --specs`) and the gateway's own notes. The one
/// verdict type from the gateway's judge to every reader (the journal, `/metrics`, `run`'s
/// verdicts, the library's `ReceivedPush`, `check`, `show`); JSON only in the record line's
/// encoder (`RecordLine.writeVerdict`) and decoder (`RecordedVerdict(decoding:)`).
public struct RecordedVerdict: Sendable, Equatable {
    /// The spec judge's finding; nil when no spec set judged the request (the gateway ran
    /// without `--specs`, or the route is out of scope) and the verdict holds only notes.
    public var judgement: Judgement?
    /// Protocol findings of the gateway's own (`gateway_warnings`, `GatewayNote.warning`).
    public var gatewayWarnings: [String]
    /// What the gateway noted that the RFCs allow (`gateway_notes`, `GatewayNote.informational`).
    public var gatewayNotes: [String]

    public init(judgement: Judgement?, gatewayWarnings: [String] = [], gatewayNotes: [String] = []) {
        self.judgement = judgement
        self.gatewayWarnings = gatewayWarnings
        self.gatewayNotes = gatewayNotes
    }

    /// The spec that recognised the request (`poolse.ring.apns`); nil when none did, or none judged.
    public var specID: String? { judgement?.spec }

    /// A spec judge's finding on one request: `spec`, `ok`, `covered`, `violations`.
    public struct Judgement: Sendable, Equatable {
        /// The spec that recognised the request; nil when none did (an `unmatched` violation
        /// says so) or no product claims it (`covered` false).
        public var spec: String?
        /// No violation (`ok`).
        public var ok: Bool
        /// False when no product claims the request (its APNs topic or FCM project is none of
        /// the products'): nothing was judged, and that is no violation.
        public var covered: Bool
        public var violations: [Violation]

        public init(spec: String?, ok: Bool, covered: Bool = true, violations: [Violation] = []) {
            self.spec = spec
            self.ok = ok
            self.covered = covered
            self.violations = violations
        }
    }

    /// One broken rule (`SpecViolation` as recorded).
    public struct Violation: Sendable, Equatable {
        /// Into the request: `/headers/apns-topic`, `/body/aps/alert/title`, or `` (the root).
        public var pointer: String
        /// The rule's id: `header:apns-push-type`, `schema:/properties/cv/const`, `unmatched`.
        public var rule: String
        public var source: Source?
        public var expected: String
        /// What the request carried, as JSON text; nil when absent.
        public var found: String?
        public var message: String

        public init(pointer: String, rule: String, source: Source?, expected: String, found: String?, message: String) {
            self.pointer = pointer
            self.rule = rule
            self.source = source
            self.expected = expected
            self.found = found
            self.message = message
        }
    }

    /// The sentence a rule encodes and where it comes from (`SpecSource` as recorded).
    public struct Source: Sendable, Equatable {
        public var seed: String?
        public var reference: String?
        public var sentence: String

        public init(seed: String?, reference: String?, sentence: String) {
            self.seed = seed
            self.reference = reference
            self.sentence = sentence
        }
    }
}

extension RecordLine {
    /// `verdict`'s value: `{"spec": id|null, "ok": bool, ("covered": false,) "violations": [...]}`
    /// when judged, then `gateway_warnings` and `gateway_notes` when there are any.
    public static func writeVerdict(_ verdict: RecordedVerdict, to w: inout JSONWriter) {
        w.beginObject()
        if let judgement = verdict.judgement {
            w.key(plain: Field.spec)
            if let spec = judgement.spec { w.string(spec) } else { w.null() }
            w.key(plain: Field.ok); w.bool(judgement.ok)
            if !judgement.covered { w.key(plain: Field.covered); w.bool(false) }
            w.key(plain: Field.violations)
            w.beginArray()
            for violation in judgement.violations { writeViolation(violation, to: &w) }
            w.endArray()
        }
        writeStrings(verdict.gatewayWarnings, as: Field.gatewayWarnings, to: &w)
        writeStrings(verdict.gatewayNotes, as: Field.gatewayNotes, to: &w)
        w.endObject()
    }

    /// `verdict`'s value alone, as `writeVerdict` writes it inside a line (a judge keeps the
    /// bytes of each spec's passing verdict: `SpecJudge.recordedForm`).
    public static func encode(_ verdict: RecordedVerdict) -> [UInt8] {
        var w = JSONWriter(capacity: 64)
        writeVerdict(verdict, to: &w)
        return w.bytes
    }

    private static func writeViolation(_ violation: RecordedVerdict.Violation, to w: inout JSONWriter) {
        w.beginObject()
        w.key(plain: Field.pointer); w.string(violation.pointer)
        w.key(plain: Field.rule); w.string(violation.rule)
        w.key(plain: Field.source)
        if let source = violation.source {
            w.beginObject()
            if let seed = source.seed { w.key(plain: Field.seed); w.string(seed) }
            if let reference = source.reference { w.key(plain: Field.reference); w.string(reference) }
            w.key(plain: Field.sentence); w.string(source.sentence)
            w.endObject()
        } else {
            w.null()
        }
        w.key(plain: Field.expected); w.string(violation.expected)
        w.key(plain: Field.found)
        if let found = violation.found { w.string(found) } else { w.null() }
        w.key(plain: Field.message); w.string(violation.message)
        w.endObject()
    }

    private static func writeStrings(_ strings: [String], as field: StaticString, to w: inout JSONWriter) {
        guard !strings.isEmpty else { return }
        w.key(plain: field)
        w.beginArray()
        for text in strings { w.string(text) }
        w.endArray()
    }
}

extension RecordedVerdict {
    /// Reads a line's `verdict` object. Lenient inside it, as every reader was: a member of the
    /// wrong kind reads as absent (a hand-made line may carry less than the gateway writes).
    /// Judged when it has `spec`, `ok` or `violations`.
    public init(decoding object: JSONObject) {
        func member(_ field: StaticString) -> JSONValue? { object[RecordLine.name(field)] }
        func strings(_ field: StaticString) -> [String] { member(field)?.arrayValue?.compactMap(\.stringValue) ?? [] }
        if member(RecordLine.Field.spec) != nil || member(RecordLine.Field.ok) != nil || member(RecordLine.Field.violations) != nil {
            let violations = (member(RecordLine.Field.violations)?.arrayValue ?? []).map { value in
                func text(_ field: StaticString) -> String? { value[RecordLine.name(field)]?.stringValue }
                let source = value[RecordLine.name(RecordLine.Field.source)].flatMap { source in
                    source[RecordLine.name(RecordLine.Field.sentence)]?.stringValue.map {
                        Source(seed: source[RecordLine.name(RecordLine.Field.seed)]?.stringValue,
                               reference: source[RecordLine.name(RecordLine.Field.reference)]?.stringValue, sentence: $0)
                    }
                }
                let rule = text(RecordLine.Field.rule) ?? "unknown"
                return Violation(pointer: text(RecordLine.Field.pointer) ?? "", rule: rule, source: source,
                                 expected: text(RecordLine.Field.expected) ?? "", found: text(RecordLine.Field.found),
                                 message: text(RecordLine.Field.message) ?? rule)
            }
            judgement = Judgement(spec: member(RecordLine.Field.spec)?.stringValue,
                                  ok: member(RecordLine.Field.ok)?.boolValue ?? violations.isEmpty,
                                  covered: member(RecordLine.Field.covered) != .bool(false), violations: violations)
        } else {
            judgement = nil
        }
        gatewayWarnings = strings(RecordLine.Field.gatewayWarnings)
        gatewayNotes = strings(RecordLine.Field.gatewayNotes)
    }
}
