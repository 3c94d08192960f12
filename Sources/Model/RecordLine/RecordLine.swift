#if canImport(Glibc)
import Glibc
#endif
import Encoding
import HTTPCore
import JSON
import PushModel

/// One line of a recording (`pushproof serve --record`, the control API's `GET /requests`):
/// the contract between the gateway that writes it and every tool that reads it (`check`,
/// `show`, the journal's filters). The README's "Recording format" documents the fields.
///
/// Version rule: `v` is the format's version. A change that a reader of the old format would
/// misread (a field removed, renamed or given another meaning) raises it; adding a field does
/// not. A reader refuses a line whose `v` it does not know rather than guess at it.
///
/// Version 2 (this build writes it; it reads 1 and 2): a body that is JSON the line can hold
/// as it is (`embedsAsJSON`) is the value of `json`, its bytes as received, instead of a
/// string in `body`; version 1 always wrote `body` (or `body_base64`). The same for the
/// response's body. Nothing else changed.
///
/// A line read back is a `RecordedExchange` (`RecordedExchange(decoding:)`); `encodeTail`
/// writes one (byte-level, on the gateway's hot path).
public enum RecordLine {
    /// The version this build writes.
    public static let formatVersion = 2
    /// The versions this build reads.
    public static let readableVersions = 1...2

    /// The member names of a line, in the order they are written.
    public enum Field {
        public static let version: StaticString = "v"
        public static let sequence: StaticString = "seq"
        public static let time: StaticString = "time"
        public static let arrivalNanos: StaticString = "arrival_ns"
        public static let answeredNanos: StaticString = "answered_ns"
        public static let connection: StaticString = "connection"
        public static let stream: StaticString = "stream"
        public static let `protocol`: StaticString = "protocol"
        public static let tls: StaticString = "tls"
        public static let route: StaticString = "route"
        public static let method: StaticString = "method"
        public static let path: StaticString = "path"
        public static let authority: StaticString = "authority"
        public static let clientCertificate: StaticString = "client_certificate"
        public static let subject: StaticString = "subject"
        public static let headers: StaticString = "headers"
        public static let body: StaticString = "body"
        public static let bodyBase64: StaticString = "body_base64"
        /// Version 2: a JSON body, its bytes as received (`embedsAsJSON`), in place of `body`.
        public static let json: StaticString = "json"
        public static let response: StaticString = "response"
        public static let status: StaticString = "status"
        public static let reason: StaticString = "reason"
        public static let detail: StaticString = "detail"
        public static let delayNanos: StaticString = "delay_ns"
        public static let actions: StaticString = "actions"
        public static let fault: StaticString = "fault"
        public static let rule: StaticString = "rule"
        public static let verdict: StaticString = "verdict"
        /// Inside `verdict`.
        public static let spec: StaticString = "spec"
        public static let ok: StaticString = "ok"
        public static let violations: StaticString = "violations"
        public static let covered: StaticString = "covered"
        /// Inside each of `verdict.violations` (with `rule`, the same name as the answer rule's).
        public static let pointer: StaticString = "pointer"
        public static let source: StaticString = "source"
        public static let expected: StaticString = "expected"
        public static let found: StaticString = "found"
        public static let message: StaticString = "message"
        /// Inside a violation's `source`.
        public static let seed: StaticString = "seed"
        public static let reference: StaticString = "reference"
        public static let sentence: StaticString = "sentence"
        public static let gatewayWarnings: StaticString = "gateway_warnings"
        /// Informational notes (`GatewayNote.informational`): shown, never a failure.
        public static let gatewayNotes: StaticString = "gateway_notes"
    }

    /// The member name as a `String` (short names stay inline: no allocation).
    public static func name(_ field: StaticString) -> String { field.description }

    // MARK: Encoding

    /// A line begins `{"v":2,"seq":` and the sequence number follows, assigned by whoever
    /// numbers the lines (the record file, or the journal without one); `encodeTail` is the rest.
    public static let linePrefix: [UInt8] = {
        var w = JSONWriter(capacity: 16)
        w.beginObject()
        w.key(plain: Field.version); w.int(formatVersion)
        w.key(plain: Field.sequence)
        return w.bytes
    }()

    /// The line after its sequence number: `,"time":…}` and a newline. Secrets never reach it:
    /// `authorization` goes through `Redaction.authorization`, and an OAuth `/token` body
    /// (`redactAssertion`) through `Redaction.formAssertion`. `requestHead`, when given, is the
    /// line's members from `protocol` to `headers` already encoded (`RecordedRequestHead`, kept
    /// per connection). `verdictEncoding`, when given, is `verdict` already encoded (the judge's
    /// passing verdicts are the same bytes every time: `SpecJudge.recordedForm`).
    /// `bodyParsedAsJSON`: the gateway parsed the request's body as JSON already (at most
    /// `jsonBodyMaxDepth` deep), so `embedsAsJSON` need not validate it again.
    public static func encodeTail(request: HTTPRequest, response: HTTPResponse, route: GatewayRoute, reason: String?,
                                  detail: String?, fault: String?, rule: String? = nil, verdict: RecordedVerdict?, answeredNanos: UInt64,
                                  clientCertificateSubject: String?, redactAssertion: Bool,
                                  requestHead: [UInt8]? = nil, verdictEncoding: [UInt8]? = nil, bodyParsedAsJSON: Bool = false) -> [UInt8] {
        var w = JSONWriter(capacity: lineCapacity(bodyBytes: request.body.count))
        encodeTail(request: request, response: response, route: route, reason: reason, detail: detail, fault: fault,
                   rule: rule, verdict: verdict, answeredNanos: answeredNanos, clientCertificateSubject: clientCertificateSubject,
                   redactAssertion: redactAssertion, requestHead: requestHead, verdictEncoding: verdictEncoding,
                   bodyParsedAsJSON: bodyParsedAsJSON, into: &w)
        return w.bytes
    }

    /// Room for a line: a push's is ~750 bytes besides its body (a 432-byte VoIP ring: 1197 in
    /// all), and a JSON body grows by its escaped quotes; with both the buffer is never regrown.
    public static func lineCapacity(bodyBytes: Int) -> Int { 1024 + bodyBytes + bodyBytes / 4 }

    /// `encodeTail`, written into `w` (emptied first): a writer kept from one line to the next
    /// (`Recorder`) has its buffer already, where a new one was a ~1.5 KB allocation a line, too
    /// large for malloc's per-thread cache.
    public static func encodeTail(request: HTTPRequest, response: HTTPResponse, route: GatewayRoute, reason: String?,
                                  detail: String?, fault: String?, rule: String? = nil, verdict: RecordedVerdict?, answeredNanos: UInt64,
                                  clientCertificateSubject: String?, redactAssertion: Bool,
                                  requestHead: [UInt8]?, verdictEncoding: [UInt8]? = nil, bodyParsedAsJSON: Bool = false,
                                  into w: inout JSONWriter) {
        w.removeAll(keepingCapacity: true)
        w.continueAfterValue()  // the line so far is `{"v":2,"seq":N`
        writeTimesAndStream(of: request, answeredNanos: answeredNanos, to: &w)
        if let requestHead {
            w.raw(requestHead)
        } else {
            writeRequestHead(request, route: route, clientCertificateSubject: clientCertificateSubject, headers: nil, to: &w)
        }
        writeBody(request.body, redactAssertion: redactAssertion, parsedAsJSON: bodyParsedAsJSON, to: &w)
        // A success with no reason and an answer with no body, delay or actions (nearly every
        // push's) start and end their `response` with the same bytes: written from templates
        // (seven key and value writes fewer a line, perf).
        if response.status == 200, reason == nil, detail == nil {
            w.append(piece: successResponseStart, endsWithKey: true)
        } else {
            w.key(plain: Field.response)
            w.beginObject()
            w.key(plain: Field.status); w.int(response.status)
            w.key(plain: Field.reason)
            if let reason { w.string(reason) } else { w.null() }
            if let detail { w.key(plain: Field.detail); w.string(detail) }
            w.key(plain: Field.headers)
        }
        writeHeaders(response.headers, to: &w)
        if response.body.isEmpty, response.delayNanos == 0, response.actions.isEmpty {
            w.append(piece: emptyResponseEnd, endsWithKey: false)
        } else {
            // The gateway's own answers (APNs errors, Google's, OAuth's) are compact JSON it wrote;
            // checked anyway (an answer rule or a test may give any bytes), and most are short.
            writeBody(response.body, redactAssertion: false, parsedAsJSON: false, to: &w)
            if response.delayNanos > 0 { w.key(plain: Field.delayNanos); w.uint(response.delayNanos) }
            if !response.actions.isEmpty {
                w.key(plain: Field.actions)
                w.beginArray()
                for action in response.actions { w.string(describe(action)) }
                w.endArray()
            }
            w.endObject()
        }
        if let fault { w.key(plain: Field.fault); w.string(fault) }
        if let rule { w.key(plain: Field.rule); w.string(rule) }
        if let verdictEncoding {
            w.key(plain: Field.verdict); w.raw(verdictEncoding)
        } else if let verdict {
            w.key(plain: Field.verdict); writeVerdict(verdict, to: &w)
        }
        // Closed inside the writer: taking `w.bytes` and appending to it copied the whole line.
        w.endObject()
        w.newline()
    }

    /// `,"time":"…","arrival_ns":…,"answered_ns":…,"connection":…,"stream":…`, as the
    /// member-by-member writes give it, built in one stack buffer and appended once: nine
    /// appends (four keys, a timestamp scanned for escapes, four numbers) were ~3% of a
    /// recorded request (perf).
    static func writeTimesAndStream(of request: HTTPRequest, answeredNanos: UInt64, to w: inout JSONWriter) {
        // The five keys with their quotes and commas and a sign: 64 bytes; four numbers.
        let capacity = 64 + Timestamp.iso8601Length + 4 * (maxDecimalDigits + 1)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            let out = buffer.baseAddress!
            var end = 0
            func put(_ text: StaticString) {
                (out + end).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
                end += text.utf8CodeUnitCount
            }
            put(#","time":""#)
            Timestamp.writeISO8601(nanos: request.arrivalNanos, to: out + end)
            end += Timestamp.iso8601Length
            put(#"","arrival_ns":"#)
            end += writeDecimal(request.arrivalNanos, to: out + end)
            put(#","answered_ns":"#)
            end += writeDecimal(answeredNanos, to: out + end)
            put(#","connection":"#)
            end += writeDecimal(request.connectionID, to: out + end)
            put(#","stream":"#)
            if request.streamID < 0 { put("-") }
            end += writeDecimal(UInt64(request.streamID.magnitude), to: out + end)
            w.append(piece: UnsafeBufferPointer(start: out, count: end), endsWithKey: false)
        }
    }

    /// `,"response":{"status":200,"reason":null,"headers":`, as the member-by-member writes
    /// give it: the start of a success's `response` with no reason and no detail.
    static let successResponseStart: [UInt8] = {
        var w = JSONWriter(capacity: 64)
        w.continueAfterValue()
        w.key(plain: Field.response)
        w.beginObject()
        w.key(plain: Field.status); w.int(200)
        w.key(plain: Field.reason); w.null()
        w.key(plain: Field.headers)
        return w.bytes
    }()

    /// `,"body":""}`, as the member-by-member writes give it: the end of a `response` with no
    /// body, no delay and no actions.
    static let emptyResponseEnd: [UInt8] = {
        var w = JSONWriter(capacity: 16)
        w.continueAfterValue()
        writeBody([], redactAssertion: false, parsedAsJSON: false, to: &w)
        w.endObject()
        return w.bytes
    }()

    /// The members from `protocol` to the request's `headers`: what repeats from one request to
    /// the next on a connection (`RecordedRequestHead`). `headers`, when given, is the `headers`
    /// member's value already encoded (`RecordedHeaders`).
    static func writeRequestHead(_ request: HTTPRequest, route: GatewayRoute, clientCertificateSubject: String?,
                                 headers: [UInt8]?, to w: inout JSONWriter) {
        w.key(plain: Field.protocol); w.string(request.version.rawValue)
        w.key(plain: Field.tls); w.bool(request.isTLS)
        w.key(plain: Field.route); w.string(route.rawValue)
        w.key(plain: Field.method); w.string(request.method)
        w.key(plain: Field.path); w.string(request.path)
        if let authority = request.authority { w.key(plain: Field.authority); w.string(authority) }
        if let clientCertificateSubject {
            w.key(plain: Field.clientCertificate)
            w.beginObject()
            w.key(plain: Field.subject); w.string(clientCertificateSubject)
            w.endObject()
        }
        w.key(plain: Field.headers)
        if let headers { w.raw(headers) } else { writeHeaders(request.headers, to: &w) }
    }

    /// A response's headers. Pairs, not an object: order and repeated names are part of what is judged.
    static func writeHeaders(_ headers: [HTTPHeader], to w: inout JSONWriter) {
        w.beginArray()
        for header in headers { w.stringPair(header.name, header.value) }
        w.endArray()
    }

    /// A request's headers, from their bytes.
    static func writeHeaders(_ fields: HTTPFields, to w: inout JSONWriter) {
        w.beginArray()
        fields.withUnsafeFields { fields in
            for index in 0..<fields.count { writeHeader(name: fields.name(at: index), value: fields.value(at: index), to: &w) }
        }
        w.endArray()
    }

    /// One `["name","value"]` pair of a request, `authorization` redacted.
    static func writeHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, to w: inout JSONWriter) {
        w.beginArray()
        w.string(utf8: name)
        if name.elementsEqual("authorization".utf8) {
            w.string(Redaction.authorization(String(decoding: value, as: UTF8.self)))
        } else {
            w.string(utf8: value)
        }
        w.endArray()
    }

    /// How deep a body `embedsAsJSON` validates (the gateway's payload checks parse to the same
    /// depth): a deeper one stays a string, which keeps a line within any reader's nesting limit.
    public static let jsonBodyMaxDepth = 64

    /// Whether a line holds `body` as the value of `json`, its bytes as they are: a JSON document
    /// (`JSONParser`, at most `jsonBodyMaxDepth` deep) with no CR or LF byte (the line is one
    /// line; in valid JSON they can only be whitespace) and no whitespace before or after the
    /// value (a reader takes the value's bytes, which do not include it). Anything else is
    /// written as a string (`body`, or `body_base64` when it is not UTF-8), as version 1 did.
    /// `parsed`: the caller has parsed `body` as JSON to that depth (it is not validated again).
    public static func embedsAsJSON(_ body: [UInt8], parsed: Bool = false) -> Bool {
        guard let first = body.first, let last = body.last,
              first != 0x20, first != 0x09, last != 0x20, last != 0x09 else { return false }
        let hasLineBreak = body.withUnsafeBytes { raw in
            memchr(raw.baseAddress!, 0x0A, raw.count) != nil || memchr(raw.baseAddress!, 0x0D, raw.count) != nil
        }
        return !hasLineBreak && (parsed || JSONParser.isValid(body, options: .init(maxDepth: jsonBodyMaxDepth)))
    }

    private static func writeBody(_ body: [UInt8], redactAssertion: Bool, parsedAsJSON: Bool, to w: inout JSONWriter) {
        if body.isEmpty {
            w.key(plain: Field.body); w.string("")
            return
        }
        // An OAuth body's assertion is redacted, so its bytes are never written as they are.
        if !redactAssertion, embedsAsJSON(body, parsed: parsedAsJSON) {
            w.key(plain: Field.json); w.raw(body)
            return
        }
        if UTF8Check.isValid(body) {
            w.key(plain: Field.body)
            if redactAssertion {
                w.string(Redaction.formAssertion(String(decoding: body, as: UTF8.self)))
            } else {
                w.string(validUTF8: body)
            }
        } else {
            // Not text: kept exactly, as base64, so nothing received is lost.
            w.key(plain: Field.bodyBase64); w.string(Base64.standard.encode(body))
        }
    }

    private static func describe(_ action: ConnectionAction) -> String {
        switch action {
        case .goAway(let code, _): "goaway:\(code)"
        case .resetStream(let code): "rst_stream:\(code)"
        case .closeConnection: "close"
        case .setMaxConcurrentStreams(let n): "max_concurrent_streams:\(n)"
        }
    }
}
