import Foundation
import Descriptors
import HTTPCore
import JSON
import PushModel
import RecordLine
import Testing
@testable import MockGateway

@Suite struct RecorderTests {
    static func exchange(body: String = #"{"aps":{}}"#, route: GatewayRoute = .apns,
                         authorization: String = "bearer aGVhZGVy.Y2xhaW1z.c2lnbmF0dXJl") -> GatewayExchange {
        let request = HTTPRequest(method: "POST", path: "/3/device/abcd", authority: "127.0.0.1",
                                  headers: [HTTPHeader("authorization", authorization), HTTPHeader("apns-topic", "com.x"),
                                            HTTPHeader("apns-topic", "com.y")],
                                  body: Array(body.utf8), connectionID: 7, streamID: 3,
                                  arrivalNanos: 1_793_952_000_123_456_789)
        let response = HTTPResponse(status: 400, headers: [HTTPHeader("apns-id", "0D8E0FD5-E3C4-4B4B-8E2A-0E94E1E1B1B1")],
                                    body: Array(#"{"reason":"DuplicateHeaders"}"#.utf8))
        return GatewayExchange(request: request, response: response, route: route, reason: "DuplicateHeaders",
                               answeredNanos: 1_793_952_000_124_000_000)
    }

    static func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "pushproof-\(UUID().uuidString)-\(name)"
    }

    static func lines(of path: String) throws -> [JSONValue] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    /// The exchange an observer keeps (`RecordedExchange(_:)`) is the one its line reads back
    /// as: one type, whether the harness has the gateway in-process or reads its journal.
    @Test func theExchangeKeptIsTheLineReadBack() throws {
        var exchange = Self.exchange(body: #"{"message":{"token":"fcm-Token-1"}}"#, route: .fcm, authorization: "Bearer t")
        exchange.request.path = "/v1/projects/p/messages:send"
        exchange.response.status = 429
        exchange.response.headers.append(HTTPHeader("retry-after", "3"))
        exchange.detail = "why"
        exchange.fault = "status:429"
        exchange.answerRule = "throttle"
        exchange.deviceToken = "fcm-Token-1"
        exchange.verdict = RecordedVerdict(judgement: .init(spec: "poolse.ring.fcm", ok: true), gatewayNotes: ["n"])
        let (prefix, suffix) = Recorder.encode(exchange)
        let line = try RecordedExchange(decoding: Array((prefix + Array("5".utf8) + suffix).dropLast()))
        var kept = RecordedExchange(exchange, sequence: 5)
        #expect(kept.token == "fcm-Token-1")
        kept.readToken()
        for (read, held) in [(line, kept)] {
            #expect(read.sequence == held.sequence)
            #expect(read.protocol == held.protocol)
            #expect(read.route == held.route)
            #expect(read.method == held.method)
            #expect(read.path == held.path)
            // The line's `authorization` is redacted; the kept exchange, in this process, has it whole.
            func unsecret(_ headers: [(name: String, value: String)]) -> [String] {
                headers.filter { $0.name != "authorization" }.map { "\($0.name)=\($0.value)" }
            }
            #expect(unsecret(read.headers) == unsecret(held.headers) && read.headers.count == held.headers.count)
            #expect(read.body == held.body)
            #expect(read.status == held.status)
            #expect(read.reason == held.reason)
            #expect(read.detail == held.detail)
            #expect(read.retryAfterSeconds == 3 && held.retryAfterSeconds == 3)
            #expect(read.answeredNanos == held.answeredNanos)
            #expect(read.fault == held.fault)
            #expect(read.rule == held.rule)
            #expect(read.verdict == held.verdict)
            #expect(read.token == held.token)
        }
        // Without its header fields (a load run's arrivals), the rest is the same.
        let arrival = RecordedExchange(exchange, headers: false)
        #expect(arrival.headers.isEmpty)
        #expect(arrival.token == "fcm-Token-1")
    }

    @Test func aLineHoldsRequestResponseAndRedactedAuthorization() throws {
        let path = Self.temporaryPath("one.jsonl")
        defer { unlink(path) }
        let recorder = Recorder(file: try RecordFile(path: path))
        recorder.observe(Self.exchange())
        recorder.file?.close()
        let line = try #require(try Self.lines(of: path).first)
        #expect(line["v"] == 2)
        #expect(line["seq"] == 1)
        #expect(line["time"] == "2026-11-06T08:00:00.123456Z")
        #expect(line["connection"] == 7)
        #expect(line["stream"] == 3)
        #expect(line["route"] == "apns")
        #expect(line["path"] == "/3/device/abcd")
        // Repeated headers are kept in order, as pairs.
        #expect(line["headers"] == [["authorization", "bearer aGVhZGVy.Y2xhaW1z.<redacted>"], ["apns-topic", "com.x"], ["apns-topic", "com.y"]])
        // JSON bodies, the request's and the answer's, are their own bytes in `json`.
        #expect(line["body"] == nil)
        #expect(line["json"] == ["aps": [:]])
        #expect(line["response"]?["status"] == 400)
        #expect(line["response"]?["reason"] == "DuplicateHeaders")
        #expect(line["response"]?["json"] == ["reason": "DuplicateHeaders"])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#""json":{"aps":{}},"response":"#))
        #expect(!text.contains("c2lnbmF0dXJl"), "the JWT signature must never be written")
    }

    @Test func opaqueTokensAndOAuthAssertionsAreRedacted() {
        #expect(Redaction.authorization("Bearer ya29.secretsecretsecret") == "Bearer ya29.sec…<redacted>")
        #expect(Redaction.formAssertion("grant_type=x&assertion=aaa.bbb.sig") == "grant_type=x&assertion=aaa.bbb.<redacted>")
        #expect(Redaction.authorization("garbage") == "<redacted>")
    }

    /// The byte-level shortcut for `scheme token` and the general split must agree.
    @Test(arguments: [
        ("bearer x.y.z", "bearer x.y.<redacted>"),
        ("bearer  x.y.z", "bearer  x.y.<redacted>"),
        (" bearer x", "bearer x…<redacted>"),
        ("bearer ", "<redacted>"),
        ("bearer a.b.c.d", "bearer a.b.c.d…<redacted>"),
        ("bearer abcdefghijkl", "bearer abcdefgh…<redacted>"),
        ("Bearer é.x.y", "Bearer é.x.<redacted>"),
        ("Bearer éééééééééé", "Bearer éééééééé…<redacted>"),
        ("bearer a..", "bearer a..<redacted>"),
    ])
    func authorizationShapes(value: String, expected: String) {
        #expect(Redaction.authorization(value) == expected)
    }

    /// The gateway's word that it parsed the body as JSON (`bodyParsedAsJSON`) is a shortcut,
    /// not another rule: the line is the one the recorder's own check gives.
    @Test func theGatewaysParseGivesTheLineTheCheckGives() {
        for body in [#"{"aps":{"alert":"a"},"k":[1.0,2e3]}"#, "[1]"] {
            var parsed = Self.exchange(body: body)
            parsed.bodyParsedAsJSON = true
            let (_, checked) = Recorder.encode(Self.exchange(body: body))
            let (_, told) = Recorder.encode(parsed)
            #expect(told == checked)
            #expect(String(decoding: told, as: UTF8.self).contains(#""json":"# + body + ","))
        }
    }

    @Test func binaryBodiesAreKeptAsBase64() throws {
        let path = Self.temporaryPath("binary.jsonl")
        defer { unlink(path) }
        let recorder = Recorder(file: try RecordFile(path: path))
        var exchange = Self.exchange()
        exchange.request.body = [0xFF, 0x00, 0x41]
        recorder.observe(exchange)
        recorder.file?.close()
        let line = try #require(try Self.lines(of: path).first)
        #expect(line["body"] == nil)
        #expect(line["body_base64"] == "/wBB")
    }

    /// The recorder keeps its line writers from one line to the next: a short line after a long
    /// one is exactly the short line, nothing of the long one left in the reused buffer.
    @Test func aReusedLineWriterLeavesNothingOfThePreviousLine() throws {
        let path = Self.temporaryPath("reuse.jsonl")
        defer { unlink(path) }
        let recorder = Recorder(file: try RecordFile(path: path))
        let long = Self.exchange(body: #"{"aps":{"alert":""# + String(repeating: "x", count: 3000) + #""}}"#)
        let short = Self.exchange(body: "{}")
        for exchange in [long, short, long, short] { recorder.observe(exchange) }
        recorder.file?.close()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 4)
        for (index, (line, exchange)) in zip(lines, [long, short, long, short]).enumerated() {
            let (prefix, suffix) = Recorder.encode(exchange)
            let expected = String(decoding: prefix, as: UTF8.self) + String(index + 1) + String(decoding: suffix, as: UTF8.self)
            #expect(String(line) + "\n" == expected)
        }
    }

    @Test func concurrentWritersLoseNothingAndSequenceIsDense() async throws {
        let path = Self.temporaryPath("many.jsonl")
        defer { unlink(path) }
        // A tiny high-water mark forces producers through the overflow path too.
        let recorder = Recorder(file: try RecordFile(path: path, highWater: 4096, flushIntervalMillis: 5))
        let writers = 8, perWriter = 2_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<writers {
                group.addTask { for _ in 0..<perWriter { recorder.observe(Self.exchange()) } }
            }
        }
        recorder.file?.close()
        let lines = try Self.lines(of: path)
        #expect(lines.count == writers * perWriter)
        let sequences = lines.compactMap { $0["seq"]?.intValue }
        #expect(sequences == Array(1...(writers * perWriter)), "lines are in sequence order with no gaps")
    }

    /// A buffer that reaches `flushBytes` is written without waiting for the interval (an hour
    /// here); one that has not stays in memory until then, or until `flush()` or `close()`.
    @Test func aBufferThatReachesFlushBytesIsWrittenBeforeTheInterval() throws {
        let path = Self.temporaryPath("size-trigger.jsonl")
        defer { unlink(path) }
        let file = try RecordFile(path: path, flushBytes: 4096, flushIntervalMillis: 3_600_000)
        let line = Array(#","fill":"\#(String(repeating: "x", count: 90))"}"#.utf8) + [0x0A]
        func fileSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1 }
        for _ in 0..<10 { file.appendLine(prefix: Array(#"{"seq":"#.utf8), suffix: line) }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(fileSize() == 0, "1 KB of lines waits for the interval")
        for _ in 0..<40 { file.appendLine(prefix: Array(#"{"seq":"#.utf8), suffix: line) }
        // Woken, the flusher writes at once; 10 s only bounds a stalled machine.
        let deadline = Date().addingTimeInterval(10)
        while fileSize() < 4096, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(fileSize() >= 4096, "the buffer passed flushBytes and was written")
        file.close()
        let lines = try Self.lines(of: path)
        #expect(lines.compactMap { $0["seq"]?.intValue } == Array(1...50))
    }

    /// The file's space is reserved a step ahead of its lines while it is open (where the file
    /// system can), and what the lines did not use is given back at `close()`: the size is the
    /// lines' all along, and a closed file holds no more blocks than its bytes need.
    @Test func spaceIsReservedAheadOfTheLinesAndGivenBackAtClose() throws {
        let path = Self.temporaryPath("reserved.jsonl")
        defer { unlink(path) }
        func allocatedAndSize() -> (allocated: Int, size: Int) {
            var status = stat()
            guard stat(path, &status) == 0 else { return (-1, -1) }
            return (Int(status.st_blocks) * 512, Int(status.st_size))
        }
        let file = try RecordFile(path: path, flushIntervalMillis: 3_600_000)
        let line = Array(#","fill":"\#(String(repeating: "x", count: 90))"}"#.utf8) + [0x0A]
        for _ in 0..<100 { file.appendLine(prefix: Array(#"{"seq":"#.utf8), suffix: line) }
        file.flush()
        let open = allocatedAndSize()
        #expect(open.size > 10_000 && open.size < 12_000, "the size is the lines', not the reservation's")
        // A file system without fallocate (or a full one) gets the writes without a reservation.
        let probe = Self.temporaryPath("probe")
        let probeDescriptor = Glibc.open(probe, O_WRONLY | O_CREAT, 0o644)
        defer { Glibc.close(probeDescriptor); unlink(probe) }
        if (try? preallocate(probeDescriptor, offset: 0, length: 4096)) != nil {
            #expect(open.allocated >= RecordFile.reservationBytes, "reserved a step ahead: \(open.allocated) bytes")
        }
        file.close()
        let closed = allocatedAndSize()
        #expect(closed.size == open.size)
        #expect(closed.allocated < closed.size + 65_536, "the reservation was given back: \(closed.allocated) bytes allocated")
        #expect(try Self.lines(of: path).count == 100)
    }

    /// A file the space cannot be reserved in (a device: fallocate says ENODEV) takes every
    /// line all the same: the refusal is no failed write and loses nothing.
    @Test func aFileWithoutReservableSpaceTakesEveryLine() throws {
        let file = try RecordFile(path: "/dev/null", flushBytes: 1024, flushIntervalMillis: 3_600_000)
        let line = Array(#","fill":"\#(String(repeating: "x", count: 90))"}"#.utf8) + [0x0A]
        for _ in 0..<100 { file.appendLine(prefix: Array(#"{"seq":"#.utf8), suffix: line) }
        file.close()
        #expect(file.failedWrites == 0)
        #expect(file.lostLines == 0)
        #expect(file.writtenLines == 100)
    }

    @Test func openingAnUnwritablePathIsAClearError() {
        #expect {
            _ = try RecordFile(path: "/nonexistent-dir/record.jsonl")
        } throws: { error in
            "\(error)".contains("/nonexistent-dir/record.jsonl") && "\(error)".contains("No such file")
        }
    }

    @Test func timestampsFormatAcrossLeapYears() {
        #expect(Timestamp.iso8601(nanos: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(Timestamp.iso8601(nanos: 951_782_400_000_000_000) == "2000-02-29T00:00:00.000000Z")
        #expect(Timestamp.iso8601(nanos: 1_709_251_199_999_999_000) == "2024-02-29T23:59:59.999999Z")
    }
}

@Suite struct GatewayMetricsTests {
    @Test func countsByRouteStatusReasonAndViolations() {
        let metrics = GatewayMetrics()
        var exchange = RecorderTests.exchange()
        metrics.observe(exchange)
        metrics.observe(exchange)
        exchange.verdict = RecordedVerdict(judgement: .init(spec: "poolse.ring.apns", ok: false, violations: [
            .init(pointer: "/headers/apns-push-type", rule: "push-type", source: nil, expected: "voip", found: nil, message: "m")]))
        metrics.observe(exchange)
        let text = metrics.render(gauges: [.init(name: "pushproof_open_connections", help: "Open connections.", value: 2)])
        #expect(text.contains(#"pushproof_requests_total{route="apns",status="400",reason="DuplicateHeaders"} 3"#))
        #expect(text.contains(#"pushproof_spec_violations_total{spec="poolse.ring.apns",rule="push-type"} 1"#))
        #expect(text.contains("pushproof_request_duration_seconds_count 3"))
        #expect(text.contains(#"pushproof_request_duration_seconds_bucket{le="+Inf"} 3"#))
        // 0.54 ms from arrival to answer: counted in the 1 ms bucket, not the 0.5 ms one.
        #expect(text.contains(#"pushproof_request_duration_seconds_bucket{le="0.0005"} 0"#))
        #expect(text.contains(#"pushproof_request_duration_seconds_bucket{le="0.001"} 3"#))
        #expect(text.contains("pushproof_open_connections 2.0"))
        metrics.reset()
        #expect(metrics.requestCount == 0)
    }

    /// Plain 200s (no reason) are counted apart from the rest and rendered as one series a
    /// route, with the other statuses of the route beside them.
    @Test func plainSuccessesAreCountedByRouteWithTheRest() {
        let metrics = GatewayMetrics()
        var success = RecorderTests.exchange()
        success.response.status = 200
        success.reason = nil
        for _ in 0..<3 { metrics.observe(success) }
        var oauth = success
        oauth.route = .oauth
        metrics.observe(oauth)
        metrics.observe(RecorderTests.exchange())
        let text = metrics.render()
        #expect(text.contains(#"pushproof_requests_total{route="apns",status="200",reason=""} 3"#))
        #expect(text.contains(#"pushproof_requests_total{route="oauth",status="200",reason=""} 1"#))
        #expect(text.contains(#"pushproof_requests_total{route="apns",status="400",reason="DuplicateHeaders"} 1"#))
        #expect(!text.contains(#"route="fcm""#), "no series for a route never answered")
        #expect(metrics.count(route: .apns) == [200: 3, 400: 1])
        #expect(metrics.requestCount == 5)
        metrics.reset()
        #expect(metrics.requestCount == 0)
    }
}
