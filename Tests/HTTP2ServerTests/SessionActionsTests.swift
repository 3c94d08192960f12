// The protocol sessions without a connection or a socket: bytes in, answers out, and the
// actions and follow-ups their calls return (what the connection would do next).
import CNGHTTP2
import HTTPCore
import Testing
@testable import HTTP2Server

/// What a session is given, kept alive for the test (the resources reference it unowned).
private final class SessionBench {
    let clock = LoopClock(now: 1_000_000_000)
    let statistics = ServerState()
    let deferredAnswers = DeferredAnswers(wakeFD: -1)
    let headerBlock = HeaderBlockBuilder()
    let output = OutputBuffer()
    let settings = LoopSettings(http2: HTTP2Settings(), maxRequestBodyBytes: 1 << 20, idleTimeoutNanos: 60_000_000_000,
                                requestHeadTimeoutNanos: 1_000_000_000, requestBodyTimeoutNanos: 1_000_000_000,
                                maxBufferedBodyBytesPerConnection: 2 << 20)
    let callbacks = makeHTTP2Callbacks()!
    let options: OpaquePointer
    let http1Settings = makeHTTP1Settings()

    init() { options = makeHTTP2Options(settings.http2)! }

    deinit {
        nghttp2_session_callbacks_del(callbacks)
        nghttp2_option_del(options)
        http1Settings.deallocate()
    }

    var resources: SessionResources {
        SessionResources(settings: settings, clock: clock, statistics: statistics, deferredAnswers: deferredAnswers,
                         headerBlock: headerBlock, http2Callbacks: callbacks, http2Options: options, http1Settings: http1Settings)
    }

    func http1() -> HTTP1Session {
        HTTP1Session(context: ConnectionContext(id: 1, version: .http1_1, isTLS: false, peer: "test"), handler: EchoHandler(),
                     output: output, resources: resources)
    }

    func http2() -> HTTP2Session {
        HTTP2Session(context: ConnectionContext(id: 1, version: .http2, isTLS: false, peer: "test"), handler: EchoHandler(),
                     resources: resources)!
    }

    /// Everything the HTTP/2 session has to send.
    func frames(of session: HTTP2Session) -> [(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])] {
        var bytes: [UInt8] = []
        while let chunk = session.pendingOutput(), !chunk.isEmpty { bytes.append(contentsOf: chunk) }
        return parseFrames(bytes)
    }

    var text: String { String(decoding: output.bytes, as: UTF8.self) }
}

private func receive(_ session: HTTP1Session, _ text: String) -> SessionActions {
    Array(text.utf8).withUnsafeBytes { session.receive($0) }
}

private func receive(_ session: HTTP2Session, _ bytes: [UInt8]) -> SessionActions {
    bytes.withUnsafeBytes { session.receive($0) }
}

private func followUps(of take: ((SessionFollowUp) -> Void) -> Void) -> [String] {
    var seen: [String] = []
    take { followUp in
        switch followUp {
        case let .delayedAnswer(id, nanos): seen.append("delayed \(id) \(nanos)")
        case let .deferredAnswer(_, id): seen.append("deferred \(id)")
        }
    }
    return seen
}

/// HEADERS with END_STREAM and END_HEADERS for GET http://x/ with one more literal header.
private func request(streamID: UInt32, header name: String, _ value: String) -> [UInt8] {
    let block: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x"), 0x00, UInt8(name.utf8.count)] + Array(name.utf8)
        + [UInt8(value.utf8.count)] + Array(value.utf8)
    return http2Frame(type: 0x1, flags: 0x5, streamID: streamID, block)
}

private let settingsAck = http2Frame(type: 0x4, flags: 0x1, streamID: 0, [])

@Suite struct HTTP1SessionActionsTests {
    @Test func anAnswerGoesIntoTheOutputWithNothingToAskFor() {
        let bench = SessionBench()
        let session = bench.http1()
        #expect(receive(session, "GET /a HTTP/1.1\r\nHost: x\r\nX-Empty: 1\r\n\r\n") == [])
        #expect(bench.text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(bench.statistics.requestsServed.load(ordering: .relaxed) == 1)
        #expect(!session.isFinished)
    }

    @Test func aCloseActionAsksForAnImmediateClose() {
        let bench = SessionBench()
        let session = bench.http1()
        #expect(receive(session, "GET /a HTTP/1.1\r\nHost: x\r\nX-Action: close\r\n\r\n") == .close)
        #expect(bench.output.bytes.isEmpty)
    }

    @Test func aDelayedAnswerIsAFollowUpAndComesWhenItsTimerFires() {
        let bench = SessionBench()
        let session = bench.http1()
        #expect(receive(session, "GET /a HTTP/1.1\r\nHost: x\r\nX-Delay-Ms: 5\r\nX-Empty: 1\r\n\r\n") == .schedule)
        #expect(followUps(of: session.takeFollowUps) == ["delayed 0 5000000"])
        #expect(followUps(of: session.takeFollowUps) == [], "taken once")
        #expect(bench.output.bytes.isEmpty)
        #expect(session.fireDelayedResponse(sequence: 0) == [])
        #expect(bench.text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(session.fireDelayedResponse(sequence: 0) == [], "once")
    }

    @Test func answersHeldBehindADelayedOneHoldTheInputAtTheLimit() {
        let bench = SessionBench()
        let session = bench.http1()
        var requests = "GET /slow HTTP/1.1\r\nHost: x\r\nX-Delay-Ms: 5\r\n\r\n"
        for _ in 0..<PipelineLimit.maximumPendingResponses { requests += "GET /p HTTP/1.1\r\nHost: x\r\nX-Empty: 1\r\n\r\n" }
        #expect(receive(session, requests) == [.schedule, .holdInput])
        #expect(session.holdsInput)
        #expect(session.resumeParsing() == nil, "still too many held")
        #expect(session.fireDelayedResponse(sequence: 0) == [], "the answers drain; the held request is parsed")
        #expect(!session.holdsInput)
    }

    @Test func aStalledHeadIsAnswered408OnceItsDeadlinePasses() {
        let bench = SessionBench()
        let session = bench.http1()
        #expect(receive(session, "GET /a HTTP/1.1\r\nHo") == [])
        #expect(session.checkDeadlines() == [])
        bench.clock.now += bench.settings.requestHeadTimeoutNanos
        #expect(session.checkDeadlines() == .write)
        #expect(bench.text.hasPrefix("HTTP/1.1 408 "))
        #expect(session.isFinished)
    }
}

@Suite struct HTTP2SessionActionsTests {
    @Test func aRequestIsAnsweredInFramesWithNothingToAskFor() {
        let bench = SessionBench()
        let session = bench.http2()
        #expect(receive(session, clientPreface + emptySettingsFrame + settingsAck + requestFrame(streamID: 1, endStream: true)) == [])
        let frames = bench.frames(of: session)
        #expect(frames.contains { $0.type == 0x1 && $0.streamID == 1 && $0.flags & 0x1 != 0 }, "HEADERS with END_STREAM")
        #expect(bench.statistics.requestsServed.load(ordering: .relaxed) == 1)
    }

    @Test func aFatalProtocolErrorAsksToLingerWithItsGoAwayQueued() {
        let bench = SessionBench()
        let session = bench.http2()
        #expect(receive(session, Array("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".utf8)) == .linger, "not the preface")
        #expect(bench.frames(of: session).contains { $0.type == 0x7 }, "GOAWAY")
    }

    @Test func aCloseActionAsksForAnImmediateClose() {
        let bench = SessionBench()
        let session = bench.http2()
        #expect(receive(session, clientPreface + emptySettingsFrame + request(streamID: 1, header: "x-action", "close")) == .close)
    }

    @Test func aDelayedAnswerIsAFollowUp() {
        let bench = SessionBench()
        let session = bench.http2()
        _ = receive(session, clientPreface + emptySettingsFrame)
        _ = bench.frames(of: session)
        #expect(receive(session, request(streamID: 1, header: "x-delay-ms", "7")) == .schedule)
        #expect(followUps(of: session.takeFollowUps) == ["delayed 1 7000000"])
        #expect(!bench.frames(of: session).contains { $0.type == 0x1 })
        #expect(session.fireDelayedResponse(streamID: 1) == [])
        #expect(bench.frames(of: session).contains { $0.type == 0x1 && $0.streamID == 1 })
    }

    @Test func aStalledHeaderBlockEndsTheSessionWithItsOwnGoAway() {
        let bench = SessionBench()
        let session = bench.http2()
        let head = requestFrame(streamID: 1, endStream: true)
        var incomplete = head
        incomplete[4] = 0x1  // END_STREAM without END_HEADERS: a CONTINUATION must follow
        #expect(receive(session, clientPreface + emptySettingsFrame + incomplete) == [])
        _ = bench.frames(of: session)
        #expect(session.checkDeadlines() == [])
        bench.clock.now += bench.settings.requestHeadTimeoutNanos
        #expect(session.checkDeadlines() == .closeAfterWrite)
        let goAway = bench.frames(of: session).first { $0.type == 0x7 }
        #expect(goAway.map { Array($0.payload[4..<8]) } == [0, 0, 0, UInt8(HTTP2ErrorCode.enhanceYourCalm)])
        #expect(goAway.map { Array($0.payload.dropFirst(8)) } == GoAwayReason.headerBlockTimeout.debugData)
    }

    @Test func shutdownIsAGoAwayNamingTheLastStreamTaken() {
        let bench = SessionBench()
        let session = bench.http2()
        _ = receive(session, clientPreface + emptySettingsFrame + requestFrame(streamID: 3, endStream: true))
        _ = bench.frames(of: session)
        session.beginShutdown()
        let goAway = bench.frames(of: session).first { $0.type == 0x7 }
        #expect(goAway.map { Array($0.payload[0..<8]) } == [0, 0, 0, 3, 0, 0, 0, 0], "last stream 3, NO_ERROR")
    }
}
