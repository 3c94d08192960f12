import Foundation
import HTTP2Server
import HTTPCore
import Synchronization
import Testing

/// Records connection lifecycle calls and answers with per-connection state.
final class LifecycleHandler: HTTPHandler {
    let events = Mutex<[String]>([])

    final class PerConnection {
        var seen = 0
    }

    func connectionOpened(_ connection: ConnectionContext) {
        connection.applicationState = PerConnection()
        events.withLock { $0.append("open \(connection.id) \(connection.version.rawValue)") }
    }

    func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        let state = connection.applicationState as? PerConnection
        state?.seen += 1
        let text = "seen=\(state?.seen ?? -1) completed=\(connection.completedRequests) conn=\(request.connectionID)\n"
        return HTTPResponse(status: 200, body: Array(text.utf8))
    }

    func connectionClosed(_ connection: ConnectionContext) {
        events.withLock { $0.append("close \(connection.id)") }
    }
}

@Suite struct LifecycleTests {
    // Two requests on one connection: curl for HTTP/1.1 keep-alive; nghttp for HTTP/2
    // (curl 7.88 fails to reuse a prior-knowledge h2c connection, against nghttpd too).
    @Test(arguments: [
        ["/usr/bin/nghttp", "http://127.0.0.1:PORT/1", "http://127.0.0.1:PORT/2"],
        ["/usr/bin/curl", "-sS", "--http1.1", "http://127.0.0.1:PORT/1", "http://127.0.0.1:PORT/2"],
    ])
    func perConnectionStateLivesAcrossRequests(command: [String]) throws {
        let handler = LifecycleHandler()
        try withServer(handler: handler) { server, port in
            let arguments = command.dropFirst().map { $0.replacingOccurrences(of: "PORT", with: String(port)) }
            let result = try runTool(command[0], arguments)
            #expect(result.output.contains("seen=1 completed=0 conn="))
            #expect(result.output.contains("seen=2 completed=1 conn="))
            #expect(server.acceptedConnections == 1)
            var waited = 0
            while server.openConnections > 0 && waited < 500 {
                usleep(10_000)
                waited += 1
            }
            let events = handler.events.withLock { $0 }
            #expect(events.count == 2)
            #expect(events.first?.hasPrefix("open ") == true)
            #expect(events.last?.hasPrefix("close ") == true)
        }
    }

    @Test func http1LoadWithPipelining() throws {
        try withServer { server, port in
            let result = try runTool("/usr/bin/h2load", ["--h1", "-n", "2000", "-c", "4", "-m", "10", "-H", "x-empty: 1",
                                                         "http://127.0.0.1:\(port)/"])
            #expect(result.output.contains("2000 succeeded, 0 failed, 0 errored"), "\(result.output)")
            #expect(server.requestsServed == 2000)
        }
    }

    @Test func countersTrackConnections() throws {
        try withServer { server, port in
            #expect(server.acceptedConnections == 0)
            _ = try curl(["--http2-prior-knowledge", "http://127.0.0.1:\(port)/"])
            _ = try curl(["--http1.1", "http://127.0.0.1:\(port)/"])
            #expect(server.acceptedConnections == 2)
            #expect(server.requestsServed == 2)
            var waited = 0
            while server.openConnections > 0 && waited < 500 {
                usleep(10_000)
                waited += 1
            }
            #expect(server.openConnections == 0)
        }
    }
}
