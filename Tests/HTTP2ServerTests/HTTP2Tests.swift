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
