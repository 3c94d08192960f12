import HTTPCore
import JSON
import RecordLine
import SpecValidator
import Testing
@testable import MockGateway

/// The record line is a contract (README "Recording format"): the same exchange must give the
/// same bytes, whatever is refactored underneath. The version-1 lines were written by the
/// encoder as it was before it moved into the RecordLine module; version 2 changed only the
/// JSON bodies (`json` in place of a `body` string).
@Suite struct RecordLineGoldenTests {
    static func line(_ exchange: GatewayExchange, seq: Int) -> String {
        let (prefix, suffix) = Recorder.encode(exchange)
        return String(decoding: prefix + Array(String(seq).utf8) + suffix, as: UTF8.self)
    }

    /// Every optional member: TLS h2 APNs with a client certificate, a verdict, a fault, a
    /// delay and connection actions; a binary body; an OAuth body with an assertion; HTTP/1.1.
    static let exchanges: [GatewayExchange] = {
        var apns = RecorderTests.exchange()
        apns.request.isTLS = true
        apns.clientCertificateSubject = "UID=com.x, CN=Apple Push Services: com.x"
        apns.fault = "latency"
        apns.detail = "kid ABC is not configured (apns.keys)"
        apns.response.delayNanos = 1_500_000
        apns.response.actions = [.goAway(errorCode: 0, debugData: []), .resetStream(errorCode: 8), .closeConnection, .setMaxConcurrentStreams(1)]
        apns.verdict = RecordedVerdict(
            judgement: .init(spec: "poolse.ring.apns", ok: false,
                             violations: [.init(pointer: "/body/aps", rule: "required", source: nil, expected: "aps", found: nil,
                                                message: "a \"quoted\" é")]),
            gatewayWarnings: ["duplicate apns-topic"])
        let binary = RecorderTests.exchange(body: "")
        var binaryBody = binary
        binaryBody.request.body = [0xFF, 0x00, 0xC3, 0x28, 0x41]
        binaryBody.response.body = [0x80]
        let oauthRequest = HTTPRequest(method: "POST", path: "/token", authority: nil,
                                       headers: [HTTPHeader("content-type", "application/x-www-form-urlencoded")],
                                       body: Array("grant_type=urn%3Aietf&assertion=aGVhZA.Y2xhaW1z.c2ln".utf8),
                                       version: .http1_1, connectionID: 9, streamID: 1, arrivalNanos: 86_400_000_000_001)
        let oauth = GatewayExchange(request: oauthRequest, response: HTTPResponse(status: 200, body: Array(#"{"access_token":"t"}"#.utf8)),
                                    route: .oauth, answeredNanos: 86_400_000_100_000)
        return [apns, binaryBody, oauth]
    }()

    /// The lines of version 2 (`json` for the JSON bodies, request and answer).
    static let golden: [String] = [
        #"{"v":2,"seq":1,"time":"2026-11-06T08:00:00.123456Z","arrival_ns":1793952000123456789,"answered_ns":1793952000124000000,"connection":7,"stream":3,"protocol":"h2","tls":true,"route":"apns","method":"POST","path":"/3/device/abcd","authority":"127.0.0.1","client_certificate":{"subject":"UID=com.x, CN=Apple Push Services: com.x"},"headers":[["authorization","bearer aGVhZGVy.Y2xhaW1z.<redacted>"],["apns-topic","com.x"],["apns-topic","com.y"]],"json":{"aps":{}},"response":{"status":400,"reason":"DuplicateHeaders","detail":"kid ABC is not configured (apns.keys)","headers":[["apns-id","0D8E0FD5-E3C4-4B4B-8E2A-0E94E1E1B1B1"]],"json":{"reason":"DuplicateHeaders"},"delay_ns":1500000,"actions":["goaway:0","rst_stream:8","close","max_concurrent_streams:1"]},"fault":"latency","verdict":{"spec":"poolse.ring.apns","ok":false,"violations":[{"pointer":"/body/aps","rule":"required","source":null,"expected":"aps","found":null,"message":"a \"quoted\" é"}],"gateway_warnings":["duplicate apns-topic"]}}"#,
        #"{"v":2,"seq":2,"time":"2026-11-06T08:00:00.123456Z","arrival_ns":1793952000123456789,"answered_ns":1793952000124000000,"connection":7,"stream":3,"protocol":"h2","tls":false,"route":"apns","method":"POST","path":"/3/device/abcd","authority":"127.0.0.1","headers":[["authorization","bearer aGVhZGVy.Y2xhaW1z.<redacted>"],["apns-topic","com.x"],["apns-topic","com.y"]],"body_base64":"/wDDKEE=","response":{"status":400,"reason":"DuplicateHeaders","headers":[["apns-id","0D8E0FD5-E3C4-4B4B-8E2A-0E94E1E1B1B1"]],"body_base64":"gA=="}}"#,
        #"{"v":2,"seq":3,"time":"1970-01-02T00:00:00.000000Z","arrival_ns":86400000000001,"answered_ns":86400000100000,"connection":9,"stream":1,"protocol":"http/1.1","tls":false,"route":"oauth","method":"POST","path":"/token","headers":[["content-type","application/x-www-form-urlencoded"]],"body":"grant_type=urn%3Aietf&assertion=aGVhZA.Y2xhaW1z.<redacted>","response":{"status":200,"reason":null,"headers":[],"json":{"access_token":"t"}}}"#,
    ]

    /// The same exchanges as version 1 wrote them (every body a string): what a recording made
    /// before version 2 holds, which every reader still reads.
    static let goldenVersion1: [String] = [
        #"{"v":1,"seq":1,"time":"2026-11-06T08:00:00.123456Z","arrival_ns":1793952000123456789,"answered_ns":1793952000124000000,"connection":7,"stream":3,"protocol":"h2","tls":true,"route":"apns","method":"POST","path":"/3/device/abcd","authority":"127.0.0.1","client_certificate":{"subject":"UID=com.x, CN=Apple Push Services: com.x"},"headers":[["authorization","bearer aGVhZGVy.Y2xhaW1z.<redacted>"],["apns-topic","com.x"],["apns-topic","com.y"]],"body":"{\"aps\":{}}","response":{"status":400,"reason":"DuplicateHeaders","detail":"kid ABC is not configured (apns.keys)","headers":[["apns-id","0D8E0FD5-E3C4-4B4B-8E2A-0E94E1E1B1B1"]],"body":"{\"reason\":\"DuplicateHeaders\"}","delay_ns":1500000,"actions":["goaway:0","rst_stream:8","close","max_concurrent_streams:1"]},"fault":"latency","verdict":{"spec":"poolse.ring.apns","ok":false,"violations":[{"pointer":"/body/aps","rule":"required","source":null,"expected":"aps","found":null,"message":"a \"quoted\" é"}],"gateway_warnings":["duplicate apns-topic"]}}"#,
        #"{"v":1,"seq":2,"time":"2026-11-06T08:00:00.123456Z","arrival_ns":1793952000123456789,"answered_ns":1793952000124000000,"connection":7,"stream":3,"protocol":"h2","tls":false,"route":"apns","method":"POST","path":"/3/device/abcd","authority":"127.0.0.1","headers":[["authorization","bearer aGVhZGVy.Y2xhaW1z.<redacted>"],["apns-topic","com.x"],["apns-topic","com.y"]],"body_base64":"/wDDKEE=","response":{"status":400,"reason":"DuplicateHeaders","headers":[["apns-id","0D8E0FD5-E3C4-4B4B-8E2A-0E94E1E1B1B1"]],"body_base64":"gA=="}}"#,
        #"{"v":1,"seq":3,"time":"1970-01-02T00:00:00.000000Z","arrival_ns":86400000000001,"answered_ns":86400000100000,"connection":9,"stream":1,"protocol":"http/1.1","tls":false,"route":"oauth","method":"POST","path":"/token","headers":[["content-type","application/x-www-form-urlencoded"]],"body":"grant_type=urn%3Aietf&assertion=aGVhZA.Y2xhaW1z.<redacted>","response":{"status":200,"reason":null,"headers":[],"body":"{\"access_token\":\"t\"}"}}"#,
    ]

    /// The verdict a line carries is what the spec engine's `SpecVerdict.json()` wrote before
    /// the verdict was typed (`RecordedVerdict`): the same bytes for every shape the gateway records.
    @Test func aRecordedVerdictIsWrittenAsTheSpecVerdictsJSON() {
        let sourced = SpecViolation(pointer: JSONPointer(tokens: ["headers", "apns-topic"]), rule: "header:apns-topic",
                                    source: SpecSource(seed: "000_x.txt", sentence: "The topic is \"the\" bundle id."),
                                    expected: "one of com.x", found: #""com.y""#, message: "wrong topic é")
        let referenced = SpecViolation(pointer: JSONPointer(tokens: ["body", "aps", "alert"]), rule: "schema:/required",
                                       source: SpecSource(reference: "apns.md", sentence: "alert"), expected: "present",
                                       found: nil, message: "missing")
        let unmatched = SpecViolation(pointer: .root, rule: "unmatched", source: nil, expected: "a push", found: "{}", message: "none")
        let verdicts = [
            SpecVerdict(specID: "poolse.ring.apns", violations: []),
            SpecVerdict(specID: "poolse.ring.apns", violations: [sourced, referenced]),
            SpecVerdict(specID: nil, violations: [unmatched]),
            SpecVerdict(specID: nil, violations: [], uncovered: UncoveredRequest(route: .apns, identity: "com.other")),
        ]
        for verdict in verdicts {
            let recorded = RecordLine.encode(RecordedVerdict(judgement: RecordedVerdict.Judgement(verdict)))
            #expect(String(decoding: recorded, as: UTF8.self) == verdict.json().serialized())
        }
    }

    /// A version-1 line and its version-2 form read back as the same exchange, the body byte for byte.
    @Test func versionOneAndTwoLinesReadAlike() throws {
        for (old, new) in zip(Self.goldenVersion1, Self.golden) {
            let v1 = try RecordedExchange(decoding: Array(old.utf8))
            let v2 = try RecordedExchange(decoding: Array(new.utf8))
            #expect(v1.body == v2.body)
            #expect(v1.sequence == v2.sequence && v1.path == v2.path && v1.status == v2.status && v1.reason == v2.reason)
            #expect(v1.headers.map { "\($0.name)=\($0.value)" } == v2.headers.map { "\($0.name)=\($0.value)" })
            #expect(v1.verdict == v2.verdict && v1.detail == v2.detail && v1.fault == v2.fault)
        }
        #expect(try RecordedExchange(decoding: Array(Self.golden[0].utf8)).body == Self.exchanges[0].request.body)
    }

    @Test func theSameExchangeGivesTheSameBytes() {
        let lines = Self.exchanges.enumerated().map { Self.line($1, seq: $0 + 1) }
        #expect(lines.count == Self.golden.count)
        for (index, line) in lines.enumerated() {
            #expect(index < Self.golden.count && line == Self.golden[index] + "\n", "line \(index + 1):\n\(line)")
        }
    }
}
