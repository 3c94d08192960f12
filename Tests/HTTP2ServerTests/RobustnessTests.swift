import Foundation
import HTTP2Server
import HTTPCore
import Testing

/// Hostile or broken clients: each is followed by proof that a fresh connection is served.
@Suite struct RobustnessTests {
    private func expectStillServing(_ port: Int) throws {
        let fresh = try curl(["--http2-prior-knowledge", "http://127.0.0.1:\(port)/still"])
        #expect(fresh.output.contains("path=/still"))
    }

    @Test func garbageAfterThePrefaceGetsGoAwayProtocolError() throws {
        try withServer { _, port in
            let client = try RawClient(port: port)
            client.send(clientPreface + emptySettingsFrame + Array("this is not an HTTP/2 frame at all".utf8))
            let (bytes, closed) = client.readToEnd()
            #expect(closed)
            let goAway = try #require(parseFrames(bytes).first { $0.type == 0x7 })
            #expect(goAway.payload.count >= 8)
            let errorCode = goAway.payload[4...7].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            #expect(errorCode == HTTP2ErrorCode.protocolError || errorCode == 0x6 /* FRAME_SIZE_ERROR */)
            try expectStillServing(port)
        }
    }

    @Test func truncatedFrameThenDisconnect() throws {
        try withServer { server, port in
            do {
                let client = try RawClient(port: port)
                // A HEADERS frame header announcing 100 bytes, followed by only 3.
                client.send(clientPreface + emptySettingsFrame + [0, 0, 100, 1, 5, 0, 0, 0, 1, 0x82, 0x86, 0x84])
            }
            try expectStillServing(port)
            #expect(server.acceptedConnections == 2)
        }
    }

    @Test func disconnectMidBodyAndMidPreface() throws {
        try withServer { _, port in
            do {
                let client = try RawClient(port: port)
                client.send(Array(clientPreface.prefix(10)))
            }
            do {
                let client = try RawClient(port: port)
                client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly a little")
            }
            try expectStillServing(port)
        }
    }

    /// Deterministic pseudo-random input (a fixed-seed xorshift, so failures reproduce).
    private struct Garbage {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    private func frame(type: UInt8, flags: UInt8, stream: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0, UInt8(payload.count >> 8), UInt8(payload.count & 0xff), type, flags, 0, 0, 0, stream] + payload
    }

    @Test func randomFramesAndRandomHTTP1NeverTakeTheServerDown() throws {
        try withServer { server, port in
            var garbage = Garbage(state: 0x9e37_79b9_7f4a_7c15)
            for round in 0..<150 {
                let client = try RawClient(port: port)
                var bytes: [UInt8]
                switch round % 3 {
                case 0:
                    bytes = clientPreface + emptySettingsFrame
                    for _ in 0..<(1 + garbage.below(12)) {
                        bytes += frame(type: UInt8(garbage.below(12)), flags: UInt8(garbage.below(256)),
                                       stream: UInt8(garbage.below(8)), garbage.bytes(garbage.below(40)))
                    }
                case 1:
                    // Valid requests interleaved with random DATA and RST_STREAM, cut anywhere.
                    bytes = clientPreface + emptySettingsFrame
                    for stream in stride(from: 1, to: 30, by: 2) {
                        bytes += frame(type: 1, flags: garbage.below(2) == 0 ? 4 : 5, stream: UInt8(stream),
                                       [0x83, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x")])
                        if garbage.below(2) == 0 {
                            bytes += frame(type: 0, flags: UInt8(garbage.below(2)), stream: UInt8(stream),
                                           garbage.bytes(garbage.below(60)))
                        }
                        if garbage.below(5) == 0 { bytes += frame(type: 3, flags: 0, stream: UInt8(stream), [0, 0, 0, 8]) }
                    }
                    bytes = Array(bytes.prefix(clientPreface.count + garbage.below(bytes.count)))
                default:
                    bytes = Array(["GET / HTTP/1.1\r\n", "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
                                   "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "G"][garbage.below(4)].utf8)
                        + garbage.bytes(garbage.below(200))
                }
                client.send(bytes)
                if garbage.below(2) == 0 { _ = client.readToEnd(timeoutMicroseconds: 20_000) }
            }
            try expectStillServing(port)
            #expect(server.acceptedConnections == 151)
        }
    }

    @Test func idleConnectionIsClosedAfterTheTimeout() throws {
        var configuration = ServerConfiguration(threads: 1)
        configuration.idleTimeout = .milliseconds(200)
        try withServer(configuration: configuration) { server, port in
            let client = try RawClient(port: port)
            let (bytes, closed) = client.readToEnd()  // gives up after 5 s
            #expect(bytes.isEmpty)
            #expect(closed)
            try expectStillServing(port)
        }
    }

    @Test func idleHTTP2ConnectionWithAStalledStreamGetsGoAwayAndIsClosed() throws {
        var configuration = ServerConfiguration(threads: 1)
        configuration.idleTimeout = .milliseconds(200)
        try withServer(configuration: configuration) { server, port in
            let client = try RawClient(port: port)
            // HEADERS without END_STREAM: a request body that never comes.
            client.send(clientPreface + emptySettingsFrame
                + [0, 0, 6, 1, 4, 0, 0, 0, 1, 0x83, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x")])
            let (bytes, closed) = client.readToEnd()
            #expect(closed)
            let goAway = try #require(parseFrames(bytes).first { $0.type == 0x7 })
            #expect(Array(goAway.payload[4...7]) == [0, 0, 0, 0])  // NO_ERROR
            #expect(server.requestsServed == 0)
        }
    }

    @Test func streamsBeyondMaxConcurrentStreamsAreRefusedNotFatal() throws {
        try withServer(handler: EchoHandler(maxConcurrentStreams: 2)) { server, port in
            let client = try RawClient(port: port)
            // Five requests at once, before our SETTINGS can be acknowledged. HPACK: GET, http,
            // "/", then :authority "x" as a literal without indexing.
            var bytes = clientPreface + emptySettingsFrame
            for streamID: UInt8 in [1, 3, 5, 7, 9] {
                bytes += [0, 0, 6, 1, 5, 0, 0, 0, streamID, 0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x")]
            }
            client.send(bytes)
            usleep(200_000)
            client.send([0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])  // our GOAWAY ends it
            let frames = parseFrames(client.readToEnd().bytes)
            let responses = frames.filter { $0.type == 0x1 }.map(\.streamID)
            let refused = frames.filter { $0.type == 0x3 && $0.payload == [0, 0, 0, 7] }.map(\.streamID)
            #expect(responses == [1, 3])
            #expect(refused == [5, 7, 9])
            #expect(server.requestsServed == 2)
            try expectStillServing(port)
        }
    }

    /// Opens two streams (no END_STREAM) after acknowledging a limit of 1; returns the GOAWAY.
    private func violateStreamLimit(configuration: ServerConfiguration) throws -> [UInt8]? {
        try withServer(handler: EchoHandler(maxConcurrentStreams: 1), configuration: configuration) { server, port in
            let client = try RawClient(port: port)
            client.send(clientPreface + emptySettingsFrame + [0, 0, 0, 4, 1, 0, 0, 0, 0])  // + SETTINGS ACK
            usleep(100_000)
            for stream: UInt8 in [1, 3] {
                client.send([0, 0, 6, 1, 4, 0, 0, 0, stream, 0x83, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x")])
            }
            let (bytes, closed) = client.readToEnd()
            #expect(closed)
            let goAways = parseFrames(bytes).filter { $0.type == 0x7 }
            #expect(goAways.count == 1)
            try expectStillServing(port)
            return goAways.first?.payload
        }
    }

    @Test func exceedingAnAcknowledgedStreamLimitIsAConnectionError() throws {
        let payload = try #require(try violateStreamLimit(configuration: ServerConfiguration(threads: 1)))
        #expect(Array(payload[0...7]) == [0, 0, 0, 1, 0, 0, 0, 1])  // last stream 1, PROTOCOL_ERROR
        #expect(String(decoding: payload.dropFirst(8), as: UTF8.self) == "request HEADERS: max concurrent streams exceeded")
    }

    @Test func streamLimitGoAwayCanSayWhatAPNsSays() throws {
        var configuration = ServerConfiguration(threads: 1)
        configuration.http2.streamLimitGoAwayDebugData = Array(#"{"reason":"Maximum active streams violated for this endpoint."}"#.utf8)
        configuration.http2.streamLimitGoAwayErrorCode = HTTP2ErrorCode.enhanceYourCalm
        let payload = try #require(try violateStreamLimit(configuration: configuration))
        #expect(Array(payload[0...7]) == [0, 0, 0, 1, 0, 0, 0, 0x0b])
        #expect(String(decoding: payload.dropFirst(8), as: UTF8.self)
            == #"{"reason":"Maximum active streams violated for this endpoint."}"#)
    }

    @Test func thousandsOfConnectionsOpenAndCloseCleanly() throws {
        try withServer { server, port in
            let result = try runTool("/usr/bin/h2load", ["-n", "400", "-c", "200", "-m", "1", "-H", "x-empty: 1",
                                                         "http://127.0.0.1:\(port)/"])
            #expect(result.output.contains("400 succeeded, 0 failed, 0 errored"), "\(result.output)")
            #expect(server.acceptedConnections == 200)
        }
    }
}

@Suite struct ShutdownTests {
    @Test func shutdownLetsAnInFlightDelayedResponseFinish() throws {
        let arrivals = ArrivalCounter()
        let server = HTTPServer(listeners: [ListenerConfiguration(host: "127.0.0.1", port: 0, handler: EchoHandler(arrivals: arrivals))],
                                configuration: ServerConfiguration(threads: 2))
        let port = try server.start()[0].port
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nghttp")
        process.arguments = ["-v", "-H", "x-delay-ms: 400", "http://127.0.0.1:\(port)/inflight"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Wait until the request reached the handler (it is then held by the delay).
        #expect(arrivals.wait(for: 1))
        #expect(server.requestsServed == 0)
        server.shutdown(gracePeriod: .seconds(5))
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text.contains("recv GOAWAY frame"))
        #expect(text.contains("error_code=NO_ERROR(0x00)"))
        #expect(text.contains(":status: 200"))
        #expect(text.contains("path=/inflight"))
        #expect(server.openConnections == 0)
        // The port is released: nothing listens any more.
        #expect(throws: RawClientError.connect) { try RawClient(port: port) }
    }

    @Test func shutdownGraceCutsOffResponsesThatTakeTooLong() throws {
        let arrivals = ArrivalCounter()
        let server = HTTPServer(listeners: [ListenerConfiguration(host: "127.0.0.1", port: 0, handler: EchoHandler(arrivals: arrivals))],
                                configuration: ServerConfiguration(threads: 1))
        let port = try server.start()[0].port
        let client = try RawClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nX-Delay-Ms: 60000\r\n\r\n")
        #expect(arrivals.wait(for: 1))
        server.shutdown(gracePeriod: .milliseconds(100))
        let (bytes, closed) = client.readToEnd()
        #expect(bytes.isEmpty)
        #expect(closed)
        #expect(server.openConnections == 0)
    }
}

@Suite struct StartupTests {
    @Test func startingTwiceIsAnErrorAndADroppedServerStops() throws {
        var port = 0
        do {
            let server = HTTPServer(listeners: [ListenerConfiguration(host: "127.0.0.1", port: 0, handler: EchoHandler())],
                                    configuration: ServerConfiguration(threads: 1))
            port = try server.start()[0].port
            #expect(throws: HTTPServerError.self) { try server.start() }
            let result = try curl(["--http1.1", "http://127.0.0.1:\(port)/up"])
            #expect(result.output.contains("path=/up"))
        }
        #expect(throws: RawClientError.connect) { try RawClient(port: port) }
    }

    @Test func busyPortIsAClearError() throws {
        let bad = HTTPServer(listeners: [ListenerConfiguration(host: "no.such.host.invalid", port: 0, handler: EchoHandler())])
        #expect(throws: HTTPServerError.self) { try bad.start() }
        let badTLS = HTTPServer(listeners: [ListenerConfiguration(
            host: "127.0.0.1", port: 0, tls: TLSConfiguration(certificateChainPEM: "nope", privateKeyPEM: "nope"),
            handler: EchoHandler())])
        #expect(throws: HTTPServerError.self) { try badTLS.start() }
    }
}
