import Foundation
@testable import HTTP2Server
import HTTPCore
import Testing

@Suite struct HTTP1Tests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        try withServer { server, port in
            let result = try curl(["--http1.1", "-H", "X-Mixed-Case: Yes",
                                   "http://127.0.0.1:\(port)/a", "http://127.0.0.1:\(port)/b", "http://127.0.0.1:\(port)/c"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("path=/a\nversion=http/1.1\ntls=false\nstream=1\n"))
            #expect(result.output.contains("path=/b\nversion=http/1.1\ntls=false\nstream=2\n"))
            #expect(result.output.contains("path=/c\nversion=http/1.1\ntls=false\nstream=3\n"))
            #expect(result.output.contains("h:x-mixed-case=Yes\n"))
            #expect(server.acceptedConnections == 1)
            #expect(server.requestsServed == 3)
        }
    }

    @Test func chunkedRequestBodyIsReassembled() throws {
        try withServer { _, port in
            let result = try curl(["--http1.1", "-H", "Transfer-Encoding: chunked", "--data-binary", "chunked payload",
                                   "http://127.0.0.1:\(port)/up"])
            #expect(result.output.contains("method=POST\n"))
            #expect(result.output.contains("body=chunked payload\n"))
        }
    }

    /// One header-section limit on both transports: HTTP/1.1 answers 431 past the same 8,000
    /// bytes (name + value + 32 a field) HTTP/2 advertises, and a head within it is served.
    @Test func headersOverTheHeaderListLimitAre431AsOverHTTP2() throws {
        try withServer { _, port in
            let big = try curl(["--http1.1", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "x-big: " + String(repeating: "a", count: 8_000),
                                "http://127.0.0.1:\(port)/"])
            #expect(big.output == "431", "\(big.output)")
            let within = try curl(["--http1.1", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "x-big: " + String(repeating: "a", count: 7_000),
                                   "http://127.0.0.1:\(port)/"])
            #expect(within.output == "200", "\(within.output)")
        }
    }

    /// RFC 9112 §3.2.2: the absolute form is accepted as the origin form, its host standing
    /// for the Host header's.
    @Test func theAbsoluteFormOfTheRequestTargetIsAccepted() throws {
        #expect(RequestTarget(Array("/3/device/ab".utf8)) == RequestTarget(path: "/3/device/ab", authority: nil))
        #expect(RequestTarget(Array("HTTPS://api.push.apple.com/3/device/ab".utf8))
                == RequestTarget(path: "/3/device/ab", authority: "api.push.apple.com"))
        #expect(RequestTarget(Array("http://127.0.0.1:8443".utf8)) == RequestTarget(path: "/", authority: "127.0.0.1:8443"))
        #expect(RequestTarget(Array("http://h?x=1".utf8)) == RequestTarget(path: "/?x=1", authority: "h"))
        try withServer { _, port in
            let client = try RawClient(port: port)
            client.send("GET http://example.test/absolute?q=1 HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n")
            let text = String(decoding: client.readToEnd().bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200 "), "\(text)")
            #expect(text.contains("path=/absolute?q=1\n"), "\(text)")
        }
    }

    /// RFC 9110 §6.5.1: trailer fields are not merged into the header section. A chunked
    /// body's trailers (a trailer `authorization`, say) never reach the handler as headers, and
    /// the request's own headers, last one included, are all there.
    @Test func chunkedTrailersAreNotMergedIntoTheHeaders() throws {
        try withServer { _, port in
            let client = try RawClient(port: port)
            client.send("POST /up HTTP/1.1\r\nHost: x\r\nX-Own: yes\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                        + "5\r\nhello\r\n0\r\nAuthorization: Bearer smuggled\r\nX-Trailer-Last: 1\r\n\r\n")
            let (bytes, _) = client.readToEnd()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200 "), "\(text)")
            #expect(text.contains("body=hello\n"))
            #expect(text.contains("h:x-own=yes\n") && text.contains("h:connection=close\n"), "\(text)")
            #expect(!text.contains("authorization") && !text.contains("x-trailer-last"), "trailers stay out: \(text)")
        }
    }

    @Test func largeBodyWithExpectContinueIsAccepted() throws {
        try withServer { _, port in
            let body = String(repeating: "y", count: 200_000)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("http1-body-\(port)").path
            try body.write(toFile: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let result = try curl(["--http1.1", "--data-binary", "@" + file, "-w", "%{response_code}",
                                   "http://127.0.0.1:\(port)/"])
            #expect(result.output.contains("body=\(body)\n"))
            #expect(result.output.hasSuffix("200"))
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrderEvenWhenTheFirstIsDelayed() throws {
        try withServer { _, port in
            let client = try RawClient(port: port)
            client.send("GET /first HTTP/1.1\r\nHost: x\r\nX-Delay-Ms: 100\r\n\r\n"
                + "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /third HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let (bytes, closed) = client.readToEnd()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(closed)
            let first = try #require(text.range(of: "path=/first"))
            let second = try #require(text.range(of: "path=/second"))
            let third = try #require(text.range(of: "path=/third"))
            #expect(first.lowerBound < second.lowerBound && second.lowerBound < third.lowerBound)
            #expect(text.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == 4)
            #expect(text.contains("connection: close\r\n"))
        }
    }

    @Test func malformedRequestGets400AndServerKeepsServing() throws {
        try withServer { server, port in
            let client = try RawClient(port: port)
            client.send("GET / HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n")
            let (bytes, closed) = client.readToEnd()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
            #expect(closed)
            #expect(server.requestsServed == 0)
            let fresh = try curl(["--http1.1", "http://127.0.0.1:\(port)/ok"])
            #expect(fresh.output.contains("path=/ok"))
        }
    }

    @Test func bodyOverTheLimitIsAnswered413AndClosed() throws {
        var configuration = ServerConfiguration(threads: 1)
        configuration.maxRequestBodyBytes = 100
        try withServer(configuration: configuration) { server, port in
            let client = try RawClient(port: port)
            client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "z", count: 5000))
            let (bytes, closed) = client.readToEnd()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 413 Content Too Large\r\n"))
            #expect(text.contains("connection: close\r\n"))
            #expect(closed)
            #expect(server.requestsServed == 0)
        }
    }

    @Test func goAwayActionClosesAfterTheResponse() throws {
        try withServer { _, port in
            let client = try RawClient(port: port)
            client.send("GET /g HTTP/1.1\r\nHost: x\r\nX-Action: goaway\r\nX-Status: 429\r\n\r\n")
            let (bytes, closed) = client.readToEnd()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 429 Too Many Requests\r\n"))
            #expect(text.contains("connection: close\r\n"))
            #expect(closed)
        }
    }

    @Test func resetAndCloseActionsCloseWithoutAResponse() throws {
        try withServer { _, port in
            for action in ["reset", "close"] {
                let client = try RawClient(port: port)
                client.send("GET / HTTP/1.1\r\nHost: x\r\nX-Action: \(action)\r\n\r\n")
                let (bytes, closed) = client.readToEnd()
                #expect(bytes.isEmpty, "\(action)")
                #expect(closed, "\(action)")
            }
        }
    }

    @Test func headRequestHasLengthButNoBody() throws {
        try withServer { _, port in
            let client = try RawClient(port: port)
            client.send("HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let text = String(decoding: client.readToEnd().bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(text.contains("content-length: "))
            #expect(text.hasSuffix("\r\n\r\n"))
        }
    }

    @Test func h2cUpgradeRequestIsAnsweredAsHTTP1() throws {
        try withServer { _, port in
            // curl --http2 on http:// asks to upgrade; we do not upgrade, we answer in HTTP/1.1.
            let result = try curl(["--http2", "-w", "%{http_version}", "http://127.0.0.1:\(port)/u",
                                   "http://127.0.0.1:\(port)/v"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("path=/u\nversion=http/1.1\n"))
            #expect(result.output.contains("path=/v\nversion=http/1.1\n"))
        }
    }

    @Test func pipelineFloodFromAClientThatReadsLateIsAnsweredCompletely() throws {
        try withServer { server, port in
            let client = try RawClient(port: port)
            let count = 20_000
            var requests = String(repeating: "GET /p HTTP/1.1\r\nHost: x\r\nX-Empty: 1\r\n\r\n", count: count - 1)
            requests += "GET /p HTTP/1.1\r\nHost: x\r\nX-Empty: 1\r\nConnection: close\r\n\r\n"
            let bytes = Array(requests.utf8)
            let fd = client.fd
            // The server stops reading while our unread answers pile up, so send from another
            // thread and read here.
            let sender = Thread {
                var offset = 0
                while offset < bytes.count {
                    let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { break }
                    offset += sent
                }
            }
            sender.start()
            usleep(300_000)  // let the server's output back up before we start reading
            let (received, closed) = client.readToEnd()
            let text = String(decoding: received, as: UTF8.self)
            #expect(closed)
            #expect(text.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == count + 1)
            #expect(server.requestsServed == count)
        }
    }
}
