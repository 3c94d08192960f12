// Shared pieces for the live tests: a switchable echo handler and a server scoped to one test.
// Client tools, raw sockets and frame parsing come from PushproofTestSupport.
import Foundation
import Glibc
import HTTP2Server
import HTTPCore
@_exported import PushproofTestSupport
import Synchronization
import Testing

final class ArrivalCounter: Sendable {
    let count = Atomic<Int>(0)

    /// Polls until `expected` requests arrived or about 5 s passed.
    func wait(for expected: Int) -> Bool {
        for _ in 0..<500 {
            if count.load(ordering: .relaxed) >= expected { return true }
            usleep(10_000)
        }
        return false
    }
}

/// Echoes the request as text. Request headers switch behaviour:
/// `x-empty` → 200 with no body; `x-response-bytes: N` → an N-byte body; `x-status: N`; `x-delay-ms: N`;
/// `x-action: goaway | reset | close | maxstreams`.
struct EchoHandler: HTTPHandler {
    var maxConcurrentStreams: UInt32 = 1000
    /// Counts requests as they reach the handler (before any delay).
    var arrivals: ArrivalCounter? = nil

    func initialMaxConcurrentStreams() -> UInt32 { maxConcurrentStreams }

    func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        arrivals?.count.add(1, ordering: .relaxed)
        var response = HTTPResponse(status: Int(request.header("x-status") ?? "") ?? 200)
        if let delay = request.header("x-delay-ms").flatMap(UInt64.init) { response.delayNanos = delay * 1_000_000 }
        switch request.header("x-action") {
        case "goaway":
            response.actions = [.goAway(errorCode: HTTP2ErrorCode.enhanceYourCalm, debugData: Array(#"{"reason":"TooManyRequests"}"#.utf8))]
        case "reset": response.actions = [.resetStream(errorCode: HTTP2ErrorCode.refusedStream)]
        case "close": response.actions = [.closeConnection]
        case "maxstreams": response.actions = [.setMaxConcurrentStreams(7)]
        default: break
        }
        if let size = request.header("x-response-bytes").flatMap(Int.init) {
            response.body = patternBytes(size)
            return response
        }
        if request.header("x-empty") != nil {
            response.headers = [HTTPHeader("apns-id", "00000000-0000-0000-0000-000000000001")]
            return response
        }
        var text = "method=\(request.method)\npath=\(request.path)\nversion=\(request.version.rawValue)\n"
        text += "tls=\(request.isTLS)\nstream=\(request.streamID)\nauthority=\(request.authority ?? "")\n"
        if let certificate = connection.clientCertificateDER {
            text += "clientcert=\(certificate.map { String($0, radix: 16) }.joined(separator: ":"))\n"
        }
        for header in request.headers { text += "h:\(header.name)=\(header.value)\n" }
        text += "body=\(String(decoding: request.body, as: UTF8.self))\n"
        response.headers = [HTTPHeader("content-type", "text/plain")]
        response.body = Array(text.utf8)
        return response
    }
}

/// Runs `body` against a started server and always shuts it down.
func withServer<T>(handler: any HTTPHandler = EchoHandler(), host: String = "127.0.0.1",
                   tls: TLSConfiguration? = nil,
                   configuration: ServerConfiguration = ServerConfiguration(threads: 2),
                   _ body: (HTTPServer, Int) throws -> T) throws -> T {
    let server = HTTPServer(listeners: [ListenerConfiguration(host: host, port: 0, tls: tls, handler: handler)],
                            configuration: configuration)
    let bound = try server.start()
    defer { server.shutdown(gracePeriod: .seconds(2)) }
    return try body(server, bound[0].port)
}

/// `count` bytes of 0, 1, ..., 250, 0, 1, ...: a body whose corruption or reordering shows.
func patternBytes(_ count: Int) -> [UInt8] {
    let period = (0..<251).map { UInt8($0) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    while bytes.count < count { bytes.append(contentsOf: period.prefix(count - bytes.count)) }
    return bytes
}
