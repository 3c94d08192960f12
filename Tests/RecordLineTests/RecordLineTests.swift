import HTTPCore
import JSON
import PushModel
import Testing
@testable import RecordLine

@Suite struct RecordLineTests {
    static let valid = #"{"v":1,"seq":4,"protocol":"h2","route":"apns","method":"POST","path":"/3/device/ab","headers":[["apns-topic","com.x"]],"#
        + #""body_base64":"/wDDKEE=","response":{"status":410,"reason":"Unregistered","headers":[],"body":""},"#
        + #""verdict":{"spec":"poolse.ring.apns","ok":true,"violations":[],"gateway_warnings":["w"]}}"#

    @Test func anEncodedLineDecodesToWhatWasEncoded() throws {
        let request = HTTPRequest(method: "POST", path: "/token", headers: [HTTPHeader("a", "1"), HTTPHeader("a", "2")],
                                  body: [0xFF, 0x01], version: .http1_1, connectionID: 1, streamID: 1, arrivalNanos: 5)
        let tail = RecordLine.encodeTail(request: request, response: HTTPResponse(status: 200), route: .oauth, reason: nil,
                                         detail: "why", fault: nil, verdict: nil, answeredNanos: 6,
                                         clientCertificateSubject: nil, redactAssertion: true)
        let line = try RecordedExchange(decoding: RecordLine.linePrefix + Array("12".utf8) + tail.dropLast())
        #expect(line.sequence == 12)
        #expect(line.protocol == "http/1.1")
        #expect(line.route == .oauth)
        #expect(line.headers.map { "\($0.name)=\($0.value)" } == ["a=1", "a=2"])
        #expect(line.body == [0xFF, 0x01])
        #expect(line.status == 200)
        #expect(line.reason == nil)
        #expect(line.detail == "why")
    }

    @Test func aHandWrittenLineDecodes() throws {
        let line = try RecordedExchange(decoding: Array(Self.valid.utf8))
        #expect(line.sequence == 4)
        #expect(line.body == [0xFF, 0x00, 0xC3, 0x28, 0x41])
        #expect(line.reason == "Unregistered")
        #expect(line.verdict?.specID == "poolse.ring.apns")
        #expect(line.verdict?.judgement?.ok == true)
        #expect(line.gatewayWarnings == ["w"])
    }

    /// Every kind of member a verdict can hold, encoded and decoded: the same value.
    @Test func aVerdictDecodesToWhatWasEncoded() throws {
        let violations = [
            RecordedVerdict.Violation(pointer: "/headers/apns-topic", rule: "header:apns-topic",
                                      source: .init(seed: "000_x.txt", reference: nil, sentence: "The topic is the bundle id."),
                                      expected: "com.x", found: #""com.y""#, message: "wrong \"topic\""),
            RecordedVerdict.Violation(pointer: "", rule: "unmatched", source: nil, expected: "a push", found: nil, message: "no spec"),
            RecordedVerdict.Violation(pointer: "/body", rule: "r", source: .init(seed: nil, reference: "apns.md", sentence: "s"),
                                      expected: "e", found: nil, message: "m"),
        ]
        let verdicts = [
            RecordedVerdict(judgement: .init(spec: "poolse.ring.apns", ok: true)),
            RecordedVerdict(judgement: .init(spec: nil, ok: false, violations: violations), gatewayWarnings: ["w1", "w2"]),
            RecordedVerdict(judgement: .init(spec: nil, ok: true, covered: false)),
            RecordedVerdict(judgement: nil, gatewayWarnings: ["w"], gatewayNotes: ["n"]),
            RecordedVerdict(judgement: nil, gatewayNotes: ["n"]),
        ]
        let request = HTTPRequest(method: "POST", path: "/3/device/ab", headers: [], body: [], version: .http2,
                                  connectionID: 1, streamID: 1, arrivalNanos: 5)
        for verdict in verdicts {
            let tail = RecordLine.encodeTail(request: request, response: HTTPResponse(status: 200), route: .apns, reason: nil,
                                             detail: nil, fault: nil, verdict: verdict, answeredNanos: 6,
                                             clientCertificateSubject: nil, redactAssertion: false)
            let line = try RecordedExchange(decoding: RecordLine.linePrefix + Array("1".utf8) + tail.dropLast())
            #expect(line.verdict == verdict)
            // The bytes a judge keeps for a verdict are those the line writes.
            #expect(String(decoding: tail, as: UTF8.self).contains(#""verdict":"# + String(decoding: RecordLine.encode(verdict), as: UTF8.self) + "}"))
        }
    }

    /// What a hand-made verdict lacks reads as absent; the judgement is there when it has any
    /// of `spec`, `ok` and `violations`.
    @Test func aSparseVerdictReadsWhatItHas() throws {
        func verdict(_ json: String) throws -> RecordedVerdict? {
            try RecordedExchange(decoding: Array((#"{"v":1,"route":"apns","method":"POST","path":"/","verdict":"# + json + "}").utf8)).verdict
        }
        #expect(try verdict(#"{"gateway_warnings":["w"]}"#) == RecordedVerdict(judgement: nil, gatewayWarnings: ["w"]))
        #expect(try verdict(#"{"spec":null}"#) == RecordedVerdict(judgement: .init(spec: nil, ok: true)))
        let partial = try #require(try verdict(#"{"violations":[{"rule":"r"},{"message":"m","source":{"seed":"s"}}]}"#)?.judgement)
        #expect(partial.ok == false)
        #expect(partial.violations.map(\.message) == ["r", "m"])
        #expect(partial.violations.map(\.rule) == ["r", "unknown"])
        #expect(partial.violations[1].source == nil)
    }

    @Test(arguments: [
        (#"{"v":99,"route":"apns"}"#, "unsupported record version 99 (this pushproof reads versions 1 and 2)"),
        (#"{"v":"1","route":"apns"}"#, #"unsupported record version "1" (this pushproof reads versions 1 and 2)"#),
        (#"{"seq":1,"route":"apns","method":"POST","path":"/"}"#, "malformed record: v (the format version) is missing"),
        (#"{"v":1,"seq":1,"route":"apns","method":"POST","path":"/","headers":5}"#,
         "malformed record: headers must be an array of [name, value] pairs"),
        (#"{"v":1,"seq":1,"route":"apns","method":"POST","path":"/","headers":[["a"]]}"#,
         "malformed record: headers must be an array of [name, value] pairs"),
        (#"{"v":1,"seq":0,"route":"apns","method":"POST","path":"/"}"#, "malformed record: seq must be a whole number of 1 or more"),
        (#"{"v":1,"seq":1,"method":"POST","path":"/"}"#, "malformed record: route must be a string (it is missing)"),
        (#"{"v":1,"seq":1,"route":"mqtt","method":"POST","path":"/"}"#, "malformed record: route must be one of apns, fcm, oauth, unknown"),
        (#"{"v":1,"seq":1,"route":"apns","method":"POST","path":"/","body_base64":"-_"}"#,
         "malformed record: body_base64 must be a base64 string (RFC 4648 §4)"),
        (#"{"v":1,"seq":1,"route":"apns","method":"POST","path":"/","response":{"status":"200"}}"#,
         "malformed record: response.status must be a whole number"),
        (#"{"v":1,"seq":1,"route":"apns","method":"POST","path":"/","verdict":[]}"#, "malformed record: verdict must be an object"),
        ("[1]", "malformed record: a record line is a JSON object"),
    ])
    func badLinesSayWhatIsWrong(line: String, message: String) {
        #expect(throws: RecordLineError.self) { try RecordedExchange(decoding: Array(line.utf8)) }
        do {
            _ = try RecordedExchange(decoding: Array(line.utf8))
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func notJSONIsSaidSo() {
        do {
            _ = try RecordedExchange(decoding: Array("{\"v\":1,".utf8))
            Issue.record("a torn line decoded")
        } catch {
            #expect(error.description.hasPrefix("not JSON: "))
        }
    }

    @Test func theLinePrefixCarriesTheVersion() {
        #expect(String(decoding: RecordLine.linePrefix, as: UTF8.self) == #"{"v":2,"seq":"#)
    }

    // MARK: Version 2: a JSON body as its bytes

    static func tail(body: [UInt8], response: [UInt8] = [], route: GatewayRoute = .apns, parsed: Bool = false) -> String {
        let request = HTTPRequest(method: "POST", path: "/3/device/ab", headers: [], body: body, version: .http2,
                                  connectionID: 1, streamID: 1, arrivalNanos: 5)
        let tail = RecordLine.encodeTail(request: request, response: HTTPResponse(status: 200, body: response), route: route,
                                         reason: nil, detail: nil, fault: nil, verdict: nil, answeredNanos: 6,
                                         clientCertificateSubject: nil, redactAssertion: route == .oauth, bodyParsedAsJSON: parsed)
        return String(decoding: tail, as: UTF8.self)
    }

    static func decode(_ tail: String) throws -> RecordedExchange {
        try RecordedExchange(decoding: RecordLine.linePrefix + Array("1".utf8) + Array(tail.utf8).dropLast())
    }

    /// What a re-serialisation would change (key order, a repeated key, number spellings, an
    /// escape, inner whitespace) is in the line as sent, and read back byte for byte.
    @Test(arguments: [
        #"{"z":1,"a":{"k":1,"k":2},"n":[1.50,1E2,-0,1e-7],"s":"caf\u00e9 é \"q\" \/","t":{ "x" :\#ttrue }}"#,
        #"{"aps":{"alert":{"title":"Hi","body":"x"}}}"#,
        "[1,2]", "3", "\"text\"", "null",
    ])
    func aJSONBodyIsItsOwnBytesInJSON(_ payload: String) throws {
        let body = Array(payload.utf8)
        for parsed in [false, true] {
            let tail = Self.tail(body: body, parsed: parsed)
            // In the body's place, right after the request's headers, with nothing besides.
            #expect(tail.contains(#""headers":[],"json":"# + payload + #","response":"#), "\(tail)")
            #expect(try Self.decode(tail).body == body)
        }
    }

    /// Not JSON a line can hold as it is: a string, as version 1 wrote it, and read back exactly.
    @Test(arguments: [
        "{\"a\":1}\n", "{\"a\":1}\r\n", "{\"a\":\n1}", " {\"a\":1}", "{\"a\":1}\t", "{\"a\":", "grant_type=x", "{'a':1}", "[1,]",
        String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
    ])
    func otherBodiesStayStrings(_ text: String) throws {
        let tail = Self.tail(body: Array(text.utf8))
        #expect(tail.contains(#","body":""#), "\(tail)")
        #expect(!tail.contains(#""json":"#), "\(tail)")
        #expect(try Self.decode(tail).body == Array(text.utf8))
    }

    @Test func sixtyFourLevelsAreStillJSON() throws {
        let body = Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)
        #expect(RecordLine.embedsAsJSON(body))
        #expect(try Self.decode(Self.tail(body: body)).body == body)
    }

    @Test func aBodyThatIsNotUTF8IsStillBase64AndAnOAuthBodyAString() throws {
        #expect(Self.tail(body: [0x7B, 0xFF, 0x7D]).contains(#""body_base64":"e/99""#))
        let oauth = Self.tail(body: Array(#"{"assertion":"aGVhZA.Y2xhaW1z.c2ln"}"#.utf8), route: .oauth)
        #expect(!oauth.contains(#""json":"#) && oauth.contains(#","body":"{\"assertion\""#), "\(oauth)")
    }

    @Test func aJSONAnswerIsJSONTooAndAnEmptyOneAString() {
        #expect(Self.tail(body: [], response: Array(#"{"reason":"BadDeviceToken"}"#.utf8))
            .contains(#""headers":[],"json":{"reason":"BadDeviceToken"}}"#))
        #expect(Self.tail(body: []).contains(#""body":"","response":{"status":200,"reason":null,"headers":[],"body":""}"#))
    }

    /// A plain success's `response` is written from templates (`successResponseStart`,
    /// `emptyResponseEnd`); the bytes are those of the member-by-member writes, which every
    /// other answer still takes (a reason, a detail, a body, a delay, actions).
    @Test func theResponseReadsTheSameFromTemplatesAndMemberByMember() throws {
        func response(_ response: HTTPResponse, reason: String? = nil, detail: String? = nil) throws -> String {
            let request = HTTPRequest(method: "POST", path: "/3/device/ab", connectionID: 1, streamID: 1, arrivalNanos: 5)
            let tail = String(decoding: RecordLine.encodeTail(request: request, response: response, route: .apns, reason: reason,
                                                              detail: detail, fault: nil, rule: "r", verdict: nil, answeredNanos: 6,
                                                              clientCertificateSubject: nil, redactAssertion: false), as: UTF8.self)
            let start = try #require(tail.firstRange(of: #","response":"#))
            return String(tail[start.lowerBound...])
        }
        #expect(String(decoding: RecordLine.successResponseStart, as: UTF8.self) == #","response":{"status":200,"reason":null,"headers":"#)
        #expect(String(decoding: RecordLine.emptyResponseEnd, as: UTF8.self) == #","body":""}"#)
        let ids = [HTTPHeader("apns-id", "5b1e…"), HTTPHeader("apns-unique-id", "q\"uote")]
        #expect(try response(HTTPResponse(status: 200, headers: ids))
            == #","response":{"status":200,"reason":null,"headers":[["apns-id","5b1e…"],["apns-unique-id","q\"uote"]],"body":""},"rule":"r"}"# + "\n")
        #expect(try response(HTTPResponse(status: 200))
            == #","response":{"status":200,"reason":null,"headers":[],"body":""},"rule":"r"}"# + "\n")
        #expect(try response(HTTPResponse(status: 200), detail: "d")
            == #","response":{"status":200,"reason":null,"detail":"d","headers":[],"body":""},"rule":"r"}"# + "\n")
        #expect(try response(HTTPResponse(status: 410, headers: ids, body: Array(#"{"reason":"Unregistered"}"#.utf8)), reason: "Unregistered")
            == #","response":{"status":410,"reason":"Unregistered","headers":[["apns-id","5b1e…"],["apns-unique-id","q\"uote"]],"json":{"reason":"Unregistered"}},"rule":"r"}"# + "\n")
        #expect(try response(HTTPResponse(status: 200, delayNanos: 7, actions: [.closeConnection]))
            == #","response":{"status":200,"reason":null,"headers":[],"body":"","delay_ns":7,"actions":["close"]},"rule":"r"}"# + "\n")
    }

    /// The line's first members after `seq` are built in one buffer (`writeTimesAndStream`);
    /// the bytes are those of the member-by-member writes, at the edges of every number.
    @Test func theTimesAndStreamReadTheSameFromOneBufferAndMemberByMember() {
        let cases: [(arrival: UInt64, answered: UInt64, connection: UInt64, stream: Int32)] = [
            (0, 0, 0, 0), (5, 6, 1, 1), (9, 10, 99, 100), (1_793_952_000_123_456_789, UInt64.max, UInt64.max, Int32.max),
            (1_709_251_199_999_999_000, 1_000_000_000_000_000_000, 10, -1), (951_782_400_000_000_000, 1, 12_345, Int32.min),
        ]
        for c in cases {
            let request = HTTPRequest(method: "POST", path: "/", connectionID: c.connection, streamID: c.stream, arrivalNanos: c.arrival)
            var expected = JSONWriter(capacity: 256)
            expected.continueAfterValue()
            expected.key(plain: RecordLine.Field.time); expected.string(Timestamp.iso8601(nanos: c.arrival))
            expected.key(plain: RecordLine.Field.arrivalNanos); expected.uint(c.arrival)
            expected.key(plain: RecordLine.Field.answeredNanos); expected.uint(c.answered)
            expected.key(plain: RecordLine.Field.connection); expected.uint(c.connection)
            expected.key(plain: RecordLine.Field.stream); expected.int(Int(c.stream))
            expected.key(plain: RecordLine.Field.path)
            var built = JSONWriter(capacity: 256)
            built.continueAfterValue()
            RecordLine.writeTimesAndStream(of: request, answeredNanos: c.answered, to: &built)
            built.key(plain: RecordLine.Field.path)
            #expect(String(decoding: built.bytes, as: UTF8.self) == String(decoding: expected.bytes, as: UTF8.self))
        }
    }

    /// A version-1 line reads as before, whatever it holds; a version-2 one holds one body.
    @Test func versionOneLinesReadAsBeforeAndVersionTwoHoldsOneBody() throws {
        let v1 = try RecordedExchange(decoding: Array(#"{"v":1,"route":"apns","method":"POST","path":"/","body":"{\"a\":1}","json":{"b":2}}"#.utf8))
        #expect(v1.body == Array(#"{"a":1}"#.utf8))
        let v2 = try RecordedExchange(decoding: Array(#"{"v":2,"route":"apns","method":"POST","path":"/","json":{"b":2 ,"b":3}}"#.utf8))
        #expect(v2.body == Array(#"{"b":2 ,"b":3}"#.utf8))
        let v2String = try RecordedExchange(decoding: Array(#"{"v":2,"route":"apns","method":"POST","path":"/","body":"x\n"}"#.utf8))
        #expect(v2String.body == Array("x\n".utf8))
        for both in [#""json":{},"body":"{}""#, #""body_base64":"e30=","json":{}"#] {
            #expect(throws: RecordLineError.malformed("a line holds one of json, body and body_base64, not two")) {
                try RecordedExchange(decoding: Array((#"{"v":2,"route":"apns","method":"POST","path":"/","# + both + "}").utf8))
            }
        }
        #expect(throws: RecordLineError.unsupportedVersion("3")) {
            try RecordedExchange(decoding: Array(#"{"v":3,"route":"apns","method":"POST","path":"/"}"#.utf8))
        }
    }
}
