import HTTPCore
import JSON
import PushModel
import RecordLine
import SpecValidator

/// Judges live requests against a spec set (`serve --specs DIR`). A violation is a finding
/// written into the record and counted in `/metrics`; the gateway still answers as Apple or
/// Google would, unless `rejectViolations` is on.
///
/// A class of constants: the gateway reads it on every request, and a reference costs one
/// retain where the struct cost one per part of its spec set (its copy in `MockGateway.judge`,
/// through the optional's value witnesses, was ~0.5% of a judged push, perf).
public final class SpecJudge: Sendable {
    public let specs: SpecSet
    /// Answer a request that breaks its spec with 400 (a pushproof reason, not Apple's or
    /// Google's) instead of the real gateway's answer.
    public let rejectViolations: Bool

    /// A spec's passing verdict as it is recorded, value and bytes: the same for every push that
    /// passes (most of them), so it is built once at load instead of a request and encoded again
    /// into its line (perf: ~4% of a request with `--specs`). A class: a judged push carries
    /// it to the observers with one retain.
    final class PassingVerdict: Sendable {
        let id: String
        let recorded: RecordedVerdict
        let encoded: [UInt8]

        init(id: String) {
            self.id = id
            recorded = RecordedVerdict(judgement: RecordedVerdict.Judgement(SpecVerdict(specID: id, violations: [])))
            encoded = RecordLine.encode(recorded)
        }
    }

    /// Each spec's passing verdict, indexed as `specs.specs` (`SpecVerdict.specIndex`).
    private let passingVerdicts: [PassingVerdict]

    public init(specs: SpecSet, rejectViolations: Bool = false) {
        self.specs = specs
        self.rejectViolations = rejectViolations
        passingVerdicts = specs.specs.map { PassingVerdict(id: $0.id) }
    }

    /// `verdict` as the record and the metrics take it, with the bytes of the record line's
    /// `verdict` when it is a spec's passing verdict (kept from load).
    func recordedForm(of verdict: SpecVerdict) -> (verdict: RecordedVerdict, encoded: [UInt8]?) {
        if verdict.passed, !verdict.outOfScope, verdict.uncovered == nil, let index = verdict.specIndex,
           index < passingVerdicts.count, passingVerdicts[index].id == verdict.specID {
            return (passingVerdicts[index].recorded, passingVerdicts[index].encoded)
        }
        return (RecordedVerdict(judgement: RecordedVerdict.Judgement(verdict)), nil)
    }

    /// What the judge found on one request: a pass as the spec's kept verdict, or the verdict.
    enum Judgement {
        case passed(PassingVerdict)
        case verdict(SpecVerdict)
    }

    /// This judge with `product` claiming the app `bundleID` and `fcmProject` too (a
    /// scenario's own app): `SpecSet.claiming`.
    public func claiming(product: String, bundleID: String?, fcmProject: String?) -> SpecJudge {
        let claimed = specs.claiming(product: product, bundleID: bundleID, fcmProject: fcmProject)
        return claimed.config == specs.config ? self : SpecJudge(specs: claimed, rejectViolations: rejectViolations)
    }

    /// Loads `directory`; `configOverrides` replaces values of specset.json's `config`
    /// (e.g. the bundle ids of the app under test).
    public convenience init(directory: String, configOverrides: JSONObject = [:], rejectViolations: Bool = false) throws(SpecLoadError) {
        self.init(specs: try SpecSet.load(directory: directory, configOverrides: configOverrides), rejectViolations: rejectViolations)
    }

    /// Judges one request on a tape of its body (cheaper than a tree, perf `serve --specs`):
    /// `tape` when the service built one already (`ServiceOutcome.payloadTape`, a
    /// `JSONParser.tape(request.body)` at the payload check's depth limit), else its own.
    func judge(_ request: HTTPRequest, route: GatewayRoute, tape: JSONTape? = nil) -> Judgement {
        switch specs.judgement(route: route, method: request.method, path: request.path, fields: request.headers,
                               body: request.body, tape: tape) {
        case .passed(let index): .passed(passingVerdicts[index])
        case .verdict(let verdict): .verdict(verdict)
        }
    }

    /// The verdict on a body over the route's `maxBodyBytes`, read from its size alone: no
    /// request that big conforms, and parsing it is what a hostile client wants.
    func oversizedBodyVerdict(_ request: HTTPRequest, route: GatewayRoute) -> SpecVerdict {
        if specs.isOutOfScope(route: route, path: request.path) { return SpecVerdict(specID: nil, violations: [], outOfScope: true) }
        let limit = route.maxBodyBytes ?? 0
        let violation = SpecViolation(pointer: JSONPointer(tokens: ["body"]), rule: "body-size", source: nil,
                                      expected: "at most \(limit) bytes", found: "\(request.body.count) bytes",
                                      message: "the body (\(request.body.count) bytes) is over the \(route.rawValue) limit of \(limit) bytes: not parsed, not judged")
        return SpecVerdict(specID: nil, violations: [violation])
    }

    /// The 400 that replaces a would-be success when `rejectViolations` is on, in the route's
    /// own error shape so clients parse it: APNs `{"reason":"SpecViolation"}`, FCM
    /// INVALID_ARGUMENT with one BadRequest field violation per broken rule.
    func rejection(for verdict: SpecVerdict, route: GatewayRoute, apnsID: String?) -> (response: HTTPResponse, reason: String) {
        let summary = verdict.violations.prefix(5).map { "\($0.pointer) [\($0.rule)]" }.joined(separator: "; ")
        switch route {
        case .fcm:
            var error = GoogleError(code: 400, status: "INVALID_ARGUMENT",
                                    message: "pushproof: the message breaks spec \(verdict.specID ?? "(none matched)"): \(summary)")
            error.fieldViolations = verdict.violations.map { (field: $0.pointer.description, description: $0.message) }
            return (error.response, "SpecViolation")
        default:
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("reason"); writer.string("SpecViolation")
            writer.key("spec"); if let id = verdict.specID { writer.string(id) } else { writer.null() }
            writer.key("violations")
            writer.beginArray()
            for violation in verdict.violations { writer.string(violation.description) }
            writer.endArray()
            writer.endObject()
            var headers = [HTTPHeader("content-type", "application/json")]
            if let apnsID { headers.insert(HTTPHeader("apns-id", apnsID), at: 0) }
            return (HTTPResponse(status: 400, headers: headers, body: writer.bytes), "SpecViolation")
        }
    }
}

extension RecordedVerdict.Judgement {
    /// A spec judge's verdict as the gateway records it.
    init(_ verdict: SpecVerdict) {
        self.init(spec: verdict.specID, ok: verdict.passed, covered: verdict.uncovered == nil,
                  violations: verdict.violations.map(RecordedVerdict.Violation.init))
    }
}

extension RecordedVerdict.Violation {
    init(_ violation: SpecViolation) {
        self.init(pointer: violation.pointer.description, rule: violation.rule,
                  source: violation.source.map { RecordedVerdict.Source(seed: $0.seed, reference: $0.reference, sentence: $0.sentence) },
                  expected: violation.expected, found: violation.found, message: violation.message)
    }
}
