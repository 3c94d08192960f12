// The rapid-reset defence (CVE-2023-44487): resets of streams the server had not finished
// answering spend a per-connection budget, and a client that spends it all gets
// GOAWAY(ENHANCE_YOUR_CALM) and loses its connection; resets of answered streams (libcurl's
// habit) are free, and other connections are served on.
import Glibc
import HTTPCore
import Testing
@testable import HTTP2Server

/// HEADERS (END_HEADERS, and END_STREAM when asked) for GET http://x/ with `x-empty`, so the
/// echo handler answers with one HEADERS frame and no body.
func requestFrame(streamID: UInt32, endStream: Bool) -> [UInt8] {
    let block: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x"), 0x00, 0x07] + Array("x-empty".utf8) + [0x00]
    return [0, 0, UInt8(block.count), 0x1, endStream ? 0x5 : 0x4] + bigEndian(streamID) + block
}

func resetFrame(streamID: UInt32, errorCode: UInt32) -> [UInt8] {
    [0, 0, 4, 0x3, 0] + bigEndian(streamID) + bigEndian(errorCode)
}

private func bigEndian(_ value: UInt32) -> [UInt8] {
    withUnsafeBytes(of: value.bigEndian) { Array($0) }
}

private let pingFrame: [UInt8] = [0, 0, 8, 0x6, 0, 0, 0, 0, 0] + Array("pingpong".utf8)
let prefaceAndSettings = clientPreface + emptySettingsFrame + [0, 0, 0, 0x4, 0x1, 0, 0, 0, 0]  // + SETTINGS ACK

/// How many of `attempts` takes at `nowNanos` succeed (a mutating call cannot sit inside `#expect`).
private func taken(_ bucket: inout TokenBucket, _ attempts: Int = 1, at nowNanos: UInt64) -> Int {
    var count = 0
    for _ in 0..<attempts where bucket.take(nowNanos: nowNanos) { count += 1 }
    return count
}

@Suite struct TokenBucketTests {
    @Test func startsFullAndRunsDry() {
        var bucket = TokenBucket(capacity: 3, refillPerSecond: 0, nowNanos: 0)
        #expect(taken(&bucket, 4, at: 0) == 3)
        #expect(taken(&bucket, at: 3_600_000_000_000) == 0, "no refill at rate 0")
    }

    @Test func refillsOneTokenPerIntervalUpToCapacity() {
        var bucket = TokenBucket(capacity: 3, refillPerSecond: 2, nowNanos: 1_000)
        #expect(taken(&bucket, 3, at: 1_000) == 3)
        #expect(taken(&bucket, at: 1_000 + 499_999_999) == 0, "half a second earns the first token")
        #expect(taken(&bucket, at: 1_000 + 500_000_000) == 1)
        #expect(taken(&bucket, at: 1_000 + 500_000_001) == 0)
        // A long pause fills the bucket to capacity, not beyond.
        #expect(taken(&bucket, 10, at: 1_000 + 60_000_000_000) == 3)
    }

    @Test func partOfAnIntervalCarriesOver() {
        var bucket = TokenBucket(capacity: 3, refillPerSecond: 2, nowNanos: 0)
        #expect(taken(&bucket, 3, at: 0) == 3)
        #expect(taken(&bucket, 2, at: 750_000_000) == 1, "one token earned at 0.5 s")
        // 0.25 s of the next interval was already past at 0.75 s: the next token is due at 1.0 s.
        #expect(taken(&bucket, 2, at: 1_000_000_000) == 1)
    }

    /// A full bucket earns nothing: time spent full is not saved up.
    @Test func timeSpentFullIsNotSaved() {
        var bucket = TokenBucket(capacity: 1, refillPerSecond: 2, nowNanos: 0)
        #expect(taken(&bucket, at: 0) == 1)
        #expect(taken(&bucket, at: 750_000_000) == 1, "full again at 0.5 s")
        #expect(taken(&bucket, at: 1_000_000_000) == 0, "the next token is due at 1.25 s")
        #expect(taken(&bucket, at: 1_250_000_000) == 1)
    }

    @Test func clockExtremesDoNotOverflow() {
        var bucket = TokenBucket(capacity: 2, refillPerSecond: 2_000_000_000, nowNanos: 0)
        #expect(taken(&bucket, 2, at: 0) == 2)
        #expect(taken(&bucket, at: UInt64.max) == 1)
        #expect(bucket.tokens == 1)
        #expect(taken(&bucket, 2, at: 5) == 1, "a clock reading from the past earns nothing")
    }
}

@Suite struct RapidResetTests {
    /// The attack: open a stream and reset it at once, thousands of times. With END_STREAM
    /// the handler has answered by the time the reset arrives but the answer has not gone
    /// out; without it the request never completes. Either way the stream was unanswered.
    @Test(arguments: [false, true])
    func resettingUnansweredStreamsEndsThatConnectionOnly(completeRequests: Bool) throws {
        try withServer(handler: EchoHandler(), configuration: ServerConfiguration(threads: 1)) { server, port in
            // A bystander, connected first, on the same event loop as the attacker.
            let bystander = try RawClient(port: port)
            let bystanderFrames = FrameReader(bystander)
            bystander.send(prefaceAndSettings)

            let attacker = try RawClient(port: port)
            let frames = FrameReader(attacker)
            attacker.send(prefaceAndSettings)
            // Five times the burst: the refill (33 a second) would need two minutes of sending
            // to make up the difference, so the budget runs out.
            let pairs = 5 * Int(RapidResetGuard.burst)
            var batch: [UInt8] = []
            for index in 0..<pairs {
                let streamID = UInt32(2 * index + 1)
                batch += requestFrame(streamID: streamID, endStream: completeRequests)
                batch += resetFrame(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
                if batch.count > 32 * 1024 || index == pairs - 1 {
                    attacker.send(batch)  // fails quietly once the server has closed
                    batch.removeAll(keepingCapacity: true)
                }
            }
            var received: [(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])] = []
            while let frame = frames.next() { received.append(frame) }
            var byte: UInt8 = 0
            #expect(recv(attacker.fd, &byte, 1, 0) == 0, "the server closed the attacker's connection")

            let goAway = try #require(received.first { $0.type == 0x7 }, "frames: \(received.map(\.type))")
            #expect(received.filter { $0.type == 0x7 }.count == 1)
            let lastStreamID = UInt32(goAway.payload[0]) << 24 | UInt32(goAway.payload[1]) << 16
                | UInt32(goAway.payload[2]) << 8 | UInt32(goAway.payload[3])
            let errorCode = UInt32(goAway.payload[4]) << 24 | UInt32(goAway.payload[5]) << 16
                | UInt32(goAway.payload[6]) << 8 | UInt32(goAway.payload[7])
            #expect(errorCode == HTTP2ErrorCode.enhanceYourCalm)
            #expect(Array(goAway.payload.dropFirst(8)) == RapidResetGuard.goAwayDebugData)
            // Never before the burst is spent: stream 2 * burst + 1 carries the first reset over it.
            #expect(lastStreamID >= 2 * UInt32(RapidResetGuard.burst) + 1)
            #expect(lastStreamID < UInt32(2 * pairs))
            #expect(server.rapidResetCloses == 1)

            // The bystander is still served.
            bystander.send(requestFrame(streamID: 1, endStream: true))
            var answered = false
            while let frame = bystanderFrames.next() {
                #expect(frame.type != 0x7, "no GOAWAY for the bystander")
                if frame.type == 0x1, frame.streamID == 1 {
                    answered = frame.flags & 0x1 != 0
                    break
                }
            }
            #expect(answered)
            // And so is a new connection.
            let next = try RawClient(port: port)
            let nextFrames = FrameReader(next)
            next.send(prefaceAndSettings + requestFrame(streamID: 1, endStream: true))
            var nextAnswered = false
            while let frame = nextFrames.next() {
                if frame.type == 0x1, frame.streamID == 1 {
                    nextAnswered = true
                    break
                }
            }
            #expect(nextAnswered)
            #expect(server.rapidResetCloses == 1)
        }
    }

    /// Resets of answered streams never count: after 1,500 of them (libcurl's pattern) the
    /// connection still has its whole burst for resets of unanswered streams. Had the
    /// answered ones counted, the 1,001st reset would have ended the connection.
    @Test func onlyUnansweredStreamsSpendTheBudget() throws {
        try withServer(handler: EchoHandler(), configuration: ServerConfiguration(threads: 1)) { server, port in
            let client = try RawClient(port: port)
            let frames = FrameReader(client)
            client.send(prefaceAndSettings)
            var goAway: [UInt8]?
            var streamID: UInt32 = 1
            var pendingReset: [UInt8] = []
            answered: for _ in 0..<1500 {
                client.send(pendingReset + requestFrame(streamID: streamID, endStream: true))
                while let frame = frames.next() {
                    if frame.type == 0x7 {
                        goAway = frame.payload
                        break answered
                    }
                    if frame.type == 0x1, frame.streamID == streamID, frame.flags & 0x1 != 0 { break }
                }
                pendingReset = resetFrame(streamID: streamID, errorCode: 0x5)  // STREAM_CLOSED, after the answer
                streamID += 2
            }
            #expect(goAway == nil)
            // Now resets of unanswered streams, just under the burst, then a PING.
            var batch = pendingReset
            for _ in 0..<(Int(RapidResetGuard.burst) - 10) {
                batch += requestFrame(streamID: streamID, endStream: false)
                batch += resetFrame(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
                streamID += 2
            }
            client.send(batch + pingFrame)
            var pingAcknowledged = false
            while let frame = frames.next() {
                if frame.type == 0x7 {
                    goAway = frame.payload
                    break
                }
                if frame.type == 0x6, frame.flags & 0x1 != 0 {
                    pingAcknowledged = true
                    break
                }
            }
            #expect(goAway == nil, "GOAWAY \(goAway.map { Array($0.prefix(8)) } ?? [])")
            #expect(pingAcknowledged)
            #expect(server.rapidResetCloses == 0)
            #expect(server.requestsServed == 1500)
        }
    }
}
