import Foundation
import HTTP2Server
import HTTPCore
import Testing

@Suite struct CleartextHTTP2Tests {
    @Test func priorKnowledgeRequestIsEchoed() throws {
        try withServer { server, port in
            let result = try curl(["--http2-prior-knowledge", "-H", "X-Custom: one", "-H", "x-custom: two",
                                   "--data-binary", "hello body", "-w", "\n%{http_version} %{response_code}",
                                   "http://127.0.0.1:\(port)/3/device/abc?x=1"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("method=POST\n"))
            #expect(result.output.contains("path=/3/device/abc?x=1\n"))
            #expect(result.output.contains("version=h2\n"))
            #expect(result.output.contains("h:x-custom=one\nh:x-custom=two\n"))
            #expect(result.output.contains("authority=127.0.0.1:\(port)\n"))
            #expect(result.output.contains("body=hello body\n"))
            #expect(result.output.hasSuffix("\n2 200"))
            #expect(server.requestsServed == 1)
            #expect(server.acceptedConnections == 1)
        }
    }

    /// A connection's streams are reused (`HTTP2Stream.reuse`) and its repeated header Strings
    /// too (`RepeatedHeaders`): each request is exactly its own, nothing left of the one before
    /// (a longer body, more headers, another path, a header at the same place with another
    /// value). A raw client: curl 7.88 fails a second request on a reused prior-knowledge
    /// connection (error 16, against nghttpd too).
    @Test func requestsOnOneConnectionCarryNothingOfTheOneBefore() throws {
        try withServer { server, port in
            let client = try RawClient(port: port)
            let reader = FrameReader(client)
            client.send(clientPreface + emptySettingsFrame)
            /// HEADERS for `method path` (HPACK literals without indexing), then the body, if any.
            func request(_ streamID: UInt8, post: Bool, path: String, headers: [(String, String)], body: [UInt8]) -> String {
                var block: [UInt8] = [post ? 0x83 : 0x82, 0x86, 0x04, UInt8(path.utf8.count)] + Array(path.utf8)
                block += [0x01, 1] + Array("x".utf8)
                for (name, value) in headers {
                    block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
                }
                let endStream: UInt8 = body.isEmpty ? 0x1 : 0x0
                var frames: [UInt8] = [0, 0, UInt8(block.count), 0x1, 0x4 | endStream, 0, 0, 0, streamID] + block
                if !body.isEmpty {
                    frames += [0, UInt8(body.count >> 8), UInt8(body.count & 0xFF), 0x0, 0x1, 0, 0, 0, streamID] + body
                }
                client.send(frames)
                var answer: [UInt8] = []
                while let frame = reader.next() {
                    if frame.streamID == UInt32(streamID), frame.type == 0x0 { answer += frame.payload }
                    if frame.streamID == UInt32(streamID), frame.flags & 0x1 != 0 || frame.type == 0x3 { break }
                }
                return String(decoding: answer, as: UTF8.self)
            }
            let long = String(repeating: "L", count: 3000)
            let first = request(1, post: true, path: "/first/path/that/is/long",
                                headers: [("x-first", "a value longer than fifteen bytes"), ("x-same", "kept-over-fifteen-bytes")],
                                body: Array(long.utf8))
            let second = request(3, post: true, path: "/second", headers: [("x-same", "kept-over-fifteen-bytes")],
                                 body: Array("short".utf8))
            let third = request(5, post: false, path: "/second", headers: [("x-same", "changed-over-fifteen-bytes")], body: [])
            #expect(first.contains("path=/first/path/that/is/long\n"), "\(first)")
            #expect(first.contains("h:x-first=a value longer than fifteen bytes\nh:x-same=kept-over-fifteen-bytes\n"))
            #expect(first.contains("body=\(long)\n"))
            #expect(second.hasPrefix("method=POST\npath=/second\n"), "\(second)")
            #expect(!second.contains("x-first"))
            #expect(second.contains("h:x-same=kept-over-fifteen-bytes\nbody=short\n"))
            #expect(third.hasPrefix("method=GET\npath=/second\n"), "\(third)")
            #expect(third.contains("h:x-same=changed-over-fifteen-bytes\nbody=\n"))
            #expect(server.acceptedConnections == 1)
        }
    }

    /// aioapns sends `host` instead of `:authority` on h2 (RFC 9113 §8.3.1 lets a client do
    /// that): it names the authority, as `host` does on HTTP/1.1, and stays among the headers.
    @Test func hostStandsInForAMissingAuthority() throws {
        try withServer { _, port in
            let client = try RawClient(port: port)
            let reader = FrameReader(client)
            // HEADERS, END_STREAM | END_HEADERS: GET, http, "/", then `host: api.push.example`
            // as a literal with a new name (HPACK §6.2.2), and no :authority.
            let block: [UInt8] = [0x82, 0x86, 0x84, 0x00, 4] + Array("host".utf8) + [16] + Array("api.push.example".utf8)
            client.send(clientPreface + emptySettingsFrame + [0, 0, UInt8(block.count), 1, 5, 0, 0, 0, 1] + block)
            var body: [UInt8] = []
            while let frame = reader.next() {
                if frame.streamID == 1, frame.type == 0x0 { body += frame.payload }
                if frame.streamID == 1, frame.flags & 0x1 != 0 || frame.type == 0x3 { break }
            }
            let text = String(decoding: body, as: UTF8.self)
            #expect(text.contains("authority=api.push.example\n"), "\(text)")
            #expect(text.contains("h:host=api.push.example\n"))
        }
    }

    @Test func emptyBodyIsOneHeadersFrameWithEndStream() throws {
        try withServer { _, port in
            let result = try runTool("/usr/bin/nghttp", ["-v", "-H", "x-empty: 1", "http://127.0.0.1:\(port)/3/device/x"])
            #expect(result.status == 0, "\(result.error)")
            let received = result.output.split(separator: "\n").filter { $0.contains("recv ") && $0.contains("frame") }
            let headers = result.output.components(separatedBy: "recv HEADERS frame")
            #expect(headers.count == 2)
            #expect(headers.last?.contains("END_STREAM") == true)
            #expect(!received.contains { $0.contains("recv DATA frame") }, "\(received)")
            #expect(result.output.contains("apns-id: 00000000-0000-0000-0000-000000000001"))
        }
    }

    /// A header named in `neverIndexedResponseHeaders` goes out as a literal never indexed
    /// (RFC 7541 §6.2.3: first byte 0001xxxx) on every answer; without the setting, the first
    /// answer adds it to the dynamic table (01xxxxxx) and the second, the same value again,
    /// is one indexed field (1xxxxxxx). The answer's first field is `:status 200` (0x88).
    @Test(arguments: [true, false])
    func headersNamedNeverIndexedStayOutOfTheHPACKTable(neverIndexed: Bool) throws {
        var configuration = ServerConfiguration(threads: 1)
        if neverIndexed { configuration.http2.neverIndexedResponseHeaders = ["apns-id"] }
        try withServer(configuration: configuration) { _, port in
            let client = try RawClient(port: port)
            let reader = FrameReader(client)
            client.send(clientPreface + emptySettingsFrame)
            var firstBytes: [UInt8] = []
            for streamID: UInt8 in [1, 3] {
                // GET, http, "/", :authority "x", then `x-empty: 1` (literals without indexing).
                let block: [UInt8] = [0x82, 0x86, 0x84, 0x01, 1] + Array("x".utf8) + [0x00, 7] + Array("x-empty".utf8) + [1] + Array("1".utf8)
                client.send([0, 0, UInt8(block.count), 0x1, 0x5, 0, 0, 0, streamID] + block)
                while let frame = reader.next() {
                    guard frame.streamID == UInt32(streamID), frame.type == 0x1 else { continue }
                    #expect(frame.payload.first == 0x88, "\(frame.payload)")
                    firstBytes.append(frame.payload.count > 1 ? frame.payload[1] : 0)
                    break
                }
            }
            #expect(firstBytes.count == 2)
            if neverIndexed {
                #expect(firstBytes.allSatisfy { $0 & 0xF0 == 0x10 }, "\(firstBytes)")
            } else {
                #expect(firstBytes.first.map { $0 & 0xC0 == 0x40 } == true, "\(firstBytes)")
                #expect(firstBytes.last.map { $0 & 0x80 == 0x80 } == true, "\(firstBytes)")
            }
        }
    }

    @Test func advertisedSettingsMatchAPNs() throws {
        try withServer(handler: EchoHandler(maxConcurrentStreams: 1000)) { _, port in
            let result = try runTool("/usr/bin/nghttp", ["-v", "-H", "x-empty: 1", "http://127.0.0.1:\(port)/"])
            #expect(result.status == 0)
            #expect(result.output.contains("[SETTINGS_HEADER_TABLE_SIZE(0x01):4096]"))
            #expect(result.output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000]"))
            #expect(result.output.contains("[SETTINGS_INITIAL_WINDOW_SIZE(0x04):65535]"))
            #expect(result.output.contains("[SETTINGS_MAX_FRAME_SIZE(0x05):16384]"))
            #expect(result.output.contains("[SETTINGS_MAX_HEADER_LIST_SIZE(0x06):8000]"))
        }
    }

    @Test func thousandsOfStreamsOverSeveralConnectionsAllSucceed() throws {
        try withServer { server, port in
            let result = try runTool("/usr/bin/h2load", ["-n", "5000", "-c", "4", "-m", "100", "-H", "x-empty: 1",
                                                         "http://127.0.0.1:\(port)/"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("5000 succeeded, 0 failed, 0 errored"), "\(result.output)")
            #expect(server.requestsServed == 5000)
        }
    }

    @Test func delayedResponseArrives() throws {
        try withServer { _, port in
            let result = try curl(["--http2-prior-knowledge", "-H", "x-delay-ms: 150", "-w", "%{response_code}",
                                   "http://127.0.0.1:\(port)/slow"])
            #expect(result.status == 0)
            #expect(result.output.contains("path=/slow"))
            #expect(result.output.hasSuffix("200"))
        }
    }

    @Test func goAwayActionCarriesErrorCodeAndDebugData() throws {
        try withServer { _, port in
            let result = try runTool("/usr/bin/nghttp", ["-v", "-H", "x-action: goaway", "-H", "x-status: 429",
                                                         "http://127.0.0.1:\(port)/"])
            #expect(result.output.contains(":status: 429"))
            #expect(result.output.contains("recv GOAWAY frame"))
            #expect(result.output.contains("error_code=ENHANCE_YOUR_CALM(0x0b)"))
            #expect(result.output.contains(#"opaque_data(28)=[{"reason":"TooManyRequests"}]"#))
        }
    }

    @Test func resetActionResetsTheStreamOnly() throws {
        try withServer { _, port in
            let result = try runTool("/usr/bin/nghttp", ["-v", "-H", "x-action: reset", "http://127.0.0.1:\(port)/"])
            #expect(result.output.contains("recv RST_STREAM frame"))
            #expect(result.output.contains("error_code=REFUSED_STREAM(0x07)"))
            #expect(!result.output.contains("recv HEADERS frame"))
        }
    }

    @Test func closeActionDropsTheConnection() throws {
        try withServer { server, port in
            let result = try curl(["--http2-prior-knowledge", "-H", "x-action: close", "http://127.0.0.1:\(port)/"])
            #expect(result.status != 0)
            #expect(!result.output.contains("method="))
            let fresh = try curl(["--http2-prior-knowledge", "http://127.0.0.1:\(port)/after"])
            #expect(fresh.output.contains("path=/after"))
            #expect(server.acceptedConnections == 2)
        }
    }

    @Test func maxConcurrentStreamsActionSendsSettings() throws {
        try withServer { _, port in
            let result = try runTool("/usr/bin/nghttp", ["-v", "-H", "x-action: maxstreams", "-H", "x-empty: 1",
                                                         "http://127.0.0.1:\(port)/"])
            #expect(result.output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7]"))
        }
    }

    /// APNs' token-auth flow: one stream until a request succeeds, then a higher limit.
    @Test func raisedStreamLimitAppliesOnceAcknowledged() throws {
        try withServer(handler: EchoHandler(maxConcurrentStreams: 1)) { server, port in
            let client = try RawClient(port: port)
            let settingsAck: [UInt8] = [0, 0, 0, 4, 1, 0, 0, 0, 0]
            // x-action: maxstreams as a literal header without indexing (new name).
            let raise: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x"), 0x00, 8] + Array("x-action".utf8)
                + [10] + Array("maxstreams".utf8)
            client.send(clientPreface + emptySettingsFrame + settingsAck
                + [0, 0, UInt8(raise.count), 1, 5, 0, 0, 0, 1] + raise)
            usleep(200_000)
            client.send(settingsAck)  // acknowledges SETTINGS_MAX_CONCURRENT_STREAMS = 7
            var burst: [UInt8] = []
            for stream: UInt8 in [3, 5, 7] {
                burst += [0, 0, 6, 1, 5, 0, 0, 0, stream, 0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x")]
            }
            client.send(burst)
            usleep(200_000)
            client.send([0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
            let frames = parseFrames(client.readToEnd().bytes)
            #expect(frames.contains { $0.type == 0x4 && $0.payload == [0, 3, 0, 0, 0, 7] })
            #expect(frames.filter { $0.type == 0x1 }.map(\.streamID) == [1, 3, 5, 7])
            #expect(!frames.contains { $0.type == 0x7 })
            #expect(server.requestsServed == 4)
        }
    }

    @Test func largeResponseRespectsFlowControl() throws {
        try withServer { _, port in
            // nghttp's default window is 64 KiB per stream, so this needs many WINDOW_UPDATEs.
            let result = try runTool("/usr/bin/nghttp", ["-H", "x-response-bytes: 2000000", "http://127.0.0.1:\(port)/big"])
            #expect(result.status == 0)
            #expect(result.outputBytes == patternBytes(2_000_000))
        }
    }

    @Test func bodyOverTheLimitIsAnswered413() throws {
        var configuration = ServerConfiguration(threads: 1)
        configuration.maxRequestBodyBytes = 1000
        try withServer(configuration: configuration) { server, port in
            let big = String(repeating: "x", count: 5000)
            let result = try curl(["--http2-prior-knowledge", "--data-binary", big, "-w", "%{response_code}",
                                   "http://127.0.0.1:\(port)/"])
            #expect(result.output.hasSuffix("413"))
            #expect(server.requestsServed == 0)
            let small = try curl(["--http2-prior-knowledge", "--data-binary", "ok", "http://127.0.0.1:\(port)/"])
            #expect(small.output.contains("body=ok"))
        }
    }

    @Test func headerListOverTheLimitIsAnswered431() throws {
        try withServer { server, port in
            let big = String(repeating: "v", count: 9000)
            let result = try curl(["--http2-prior-knowledge", "-H", "x-big: \(big)", "-w", "%{response_code}",
                                   "http://127.0.0.1:\(port)/"])
            #expect(result.output.hasSuffix("431"))
            #expect(server.requestsServed == 0)
        }
    }

    @Test func ipv6LoopbackListener() throws {
        try withServer(host: "::1") { _, port in
            let result = try curl(["--http2-prior-knowledge", "http://[::1]:\(port)/six"])
            #expect(result.output.contains("path=/six"))
        }
    }
}
