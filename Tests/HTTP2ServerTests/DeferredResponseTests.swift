import Foundation
import Glibc
import HTTP2Server
import HTTPCore
import Synchronization
import Testing

/// The responder's state machine, without sockets.
@Suite struct DeferredResponseStateTests {
    private static func answer(_ status: Int) -> HTTPResponse { HTTPResponse(status: status, body: Array("\(status)".utf8)) }

    @Test func completionBeforeTheTransportBindsIsReturnedByBind() {
        let responder = DeferredResponse(timeoutNanos: 1_000_000) { Self.answer(504) }
        #expect(responder.complete(Self.answer(200)))
        #expect(!responder.complete(Self.answer(201)), "only the first answer counts")
        let woken = Atomic<Int>(0)
        let ready = responder.bind { _ in woken.add(1, ordering: .relaxed) }
        #expect(ready?.status == 200)
        #expect(woken.load(ordering: .relaxed) == 0)
        #expect(responder.take() == nil, "taken once")
        #expect(responder.expire() == nil)
    }

    @Test func completionAfterBindingWakesTheTransportOnceAndIsTakenOnce() {
        let responder = DeferredResponse(timeoutNanos: 1_000_000) { Self.answer(504) }
        let woken = Atomic<Int>(0)
        #expect(responder.bind { _ in woken.add(1, ordering: .relaxed) } == nil)
        #expect(responder.take() == nil, "nothing before complete")
        #expect(responder.isPending)
        #expect(responder.complete(Self.answer(200)))
        #expect(!responder.complete(Self.answer(201)))
        #expect(woken.load(ordering: .relaxed) == 1)
        #expect(responder.take()?.status == 200)
        #expect(responder.take() == nil)
    }

    @Test func expiryWhilePendingAsksOnTimeoutAndLaterCompletionsLose() {
        let asked = Atomic<Int>(0)
        let responder = DeferredResponse(timeoutNanos: 1_000_000) {
            asked.add(1, ordering: .relaxed)
            return Self.answer(504)
        }
        _ = responder.bind { _ in }
        #expect(responder.expire()?.status == 504)
        #expect(asked.load(ordering: .relaxed) == 1)
        #expect(!responder.complete(Self.answer(200)))
        #expect(responder.expire() == nil)
        #expect(asked.load(ordering: .relaxed) == 1)
    }

    @Test func expiryAfterACompletionNotYetTakenSendsTheCompletion() {
        let asked = Atomic<Int>(0)
        let responder = DeferredResponse(timeoutNanos: 1_000_000) {
            asked.add(1, ordering: .relaxed)
            return Self.answer(504)
        }
        _ = responder.bind { _ in }
        responder.complete(Self.answer(200))
        #expect(responder.expire()?.status == 200)
        #expect(asked.load(ordering: .relaxed) == 0)
        #expect(responder.take() == nil)
    }

    @Test func cancellationRunsTheHandlersOnceAndStopsCompletions() {
        let cancelled = Atomic<Int>(0)
        let responder = DeferredResponse(timeoutNanos: 1_000_000) { Self.answer(504) }
        responder.onCancel { cancelled.add(1, ordering: .relaxed) }
        _ = responder.bind { _ in }
        responder.cancel()
        responder.cancel()
        #expect(cancelled.load(ordering: .relaxed) == 1)
        #expect(!responder.complete(Self.answer(200)))
        #expect(responder.expire() == nil)
        responder.onCancel { cancelled.add(10, ordering: .relaxed) }
        #expect(cancelled.load(ordering: .relaxed) == 11, "a handler added after the cancellation runs at once")
    }

    @Test func cancellationAfterDeliveryRunsNoHandler() {
        let cancelled = Atomic<Int>(0)
        let responder = DeferredResponse(timeoutNanos: 1_000_000) { Self.answer(504) }
        responder.onCancel { cancelled.add(1, ordering: .relaxed) }
        _ = responder.bind { _ in }
        responder.complete(Self.answer(200))
        _ = responder.take()
        responder.cancel()
        #expect(cancelled.load(ordering: .relaxed) == 0)
    }
}

/// Defers every request whose path starts with `/defer`. Headers: `x-complete-after-ms: N`
/// completes from another thread after N ms (absent: never); `x-timeout-ms: N` (default 5000).
/// The timeout answer is 504 "timed out"; cancellations are counted.
private struct DeferringHandler: HTTPHandler {
    let cancellations = ArrivalCounter()
    let arrivals = ArrivalCounter()

    func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        guard request.path.hasPrefix("/defer") else {
            return HTTPResponse(status: 200, body: Array("plain \(request.path)\n".utf8))
        }
        arrivals.count.add(1, ordering: .relaxed)
        let timeout = request.header("x-timeout-ms").flatMap(UInt64.init) ?? 5000
        let responder = DeferredResponse(timeoutNanos: timeout * 1_000_000) {
            HTTPResponse(status: 504, body: Array("timed out \(request.path)\n".utf8))
        }
        let cancellations = cancellations
        responder.onCancel { cancellations.count.add(1, ordering: .relaxed) }
        if let after = request.header("x-complete-after-ms").flatMap(UInt32.init) {
            let path = request.path
            let thread = Thread {
                usleep(after * 1000)
                responder.complete(HTTPResponse(status: 200, body: Array("completed \(path)\n".utf8)))
            }
            thread.start()
        }
        return .deferred(responder)
    }
}

/// Deferred answers over real sockets: HTTP/1.1 and h2, completed from another thread, timed
/// out, and cancelled when the client goes away.
@Suite struct DeferredResponseLiveTests {
    @Test(arguments: ["--http1.1", "--http2-prior-knowledge"])
    func answerCompletedFromAnotherThreadIsSent(_ version: String) throws {
        try withServer(handler: DeferringHandler()) { _, port in
            let result = try curl([version, "-s", "-w", "%{http_code}", "-H", "x-complete-after-ms: 50",
                                   "http://127.0.0.1:\(port)/defer/a"])
            #expect(result.output == "completed /defer/a\n200")
        }
    }

    @Test(arguments: ["--http1.1", "--http2-prior-knowledge"])
    func unansweredRequestGetsTheTimeoutAnswer(_ version: String) throws {
        try withServer(handler: DeferringHandler()) { _, port in
            let result = try curl([version, "-s", "-w", "%{http_code}", "-H", "x-timeout-ms: 100",
                                   "http://127.0.0.1:\(port)/defer/b"])
            #expect(result.output == "timed out /defer/b\n504")
        }
    }

    @Test func otherStreamsAreServedWhileOneWaits() throws {
        try withServer(handler: DeferringHandler(), configuration: ServerConfiguration(threads: 1)) { _, port in
            // One loop thread: the plain request is answered while the deferred one still waits.
            let result = try curl(["--http2-prior-knowledge", "-s", "--parallel", "--parallel-immediate",
                                   "-H", "x-timeout-ms: 1500", "-w", "%{http_code} %{time_total}\n",
                                   "http://127.0.0.1:\(port)/defer/slow", "http://127.0.0.1:\(port)/plain"])
            #expect(result.output.contains("timed out /defer/slow\n"))
            let plainLine = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("plain") })
            #expect(plainLine == "plain /plain")
            let times = result.output.split(separator: "\n").filter { $0.hasPrefix("200 ") }.compactMap { Double($0.dropFirst(4)) }
            #expect(times.count == 1 && times[0] < 1.0, "the plain answer did not wait for the deferred one: \(result.output)")
        }
    }

    @Test func pipelinedHTTP1AnswersKeepTheirOrderBehindADeferredOne() throws {
        try withServer(handler: DeferringHandler()) { _, port in
            let client = try RawClient(port: port)
            client.send("GET /defer/first HTTP/1.1\r\nHost: x\r\nX-Complete-After-Ms: 100\r\n\r\n"
                + "GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let text = String(decoding: client.readToEnd().bytes, as: UTF8.self)
            let first = try #require(text.range(of: "completed /defer/first"))
            let second = try #require(text.range(of: "plain /second"))
            #expect(first.lowerBound < second.lowerBound)
        }
    }

    @Test func clientThatGoesAwayCancelsTheWait() throws {
        let handler = DeferringHandler()
        try withServer(handler: handler) { _, port in
            do {
                let client = try RawClient(port: port)
                client.send("GET /defer/gone HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(handler.arrivals.wait(for: 1))
            }  // RawClient closes its socket when released
            #expect(handler.cancellations.wait(for: 1))
        }
    }

    /// Issue 19: a cancelled wait is freed at once, not kept by its deadline timer until the
    /// deadline (five minutes for the longest poll).
    @Test func aCancelledWaitIsFreedBeforeItsDeadline() throws {
        final class Watching: HTTPHandler, Sendable {
            let responder = Mutex<WeakResponder>(WeakResponder())
            let arrivals = ArrivalCounter()
            func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
                let deferred = DeferredResponse(timeoutNanos: 60_000_000_000) { HTTPResponse(status: 504) }
                responder.withLock { $0.value = deferred }
                arrivals.count.add(1, ordering: .relaxed)
                return .deferred(deferred)
            }
        }
        struct WeakResponder { weak var value: DeferredResponse? }
        let handler = Watching()
        try withServer(handler: handler) { _, port in
            do {
                let client = try RawClient(port: port)
                client.send("GET /defer HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(handler.arrivals.wait(for: 1))
                #expect(handler.responder.withLock { $0.value } != nil, "waiting: the loop holds it")
            }
            var freed = false
            for _ in 0..<200 where !freed {
                usleep(10_000)
                freed = handler.responder.withLock { $0.value } == nil
            }
            #expect(freed, "the 60 s timer does not keep a cancelled wait")
        }
    }

    @Test func shutdownAnswersWaitingRequestsAtOnce() throws {
        let handler = DeferringHandler()
        let server = HTTPServer(listeners: [ListenerConfiguration(host: "127.0.0.1", port: 0, handler: handler)],
                                configuration: ServerConfiguration(threads: 1))
        let port = try server.start()[0].port
        let client = try RawClient(port: port)
        client.send("GET /defer/drain HTTP/1.1\r\nHost: x\r\nX-Timeout-Ms: 60000\r\n\r\n")
        #expect(handler.arrivals.wait(for: 1))
        let started = Date()
        server.shutdown(gracePeriod: .seconds(10))
        #expect(Date().timeIntervalSince(started) < 5, "the drain did not wait for the 60 s poll")
        let text = String(decoding: client.readToEnd().bytes, as: UTF8.self)
        #expect(text.contains("timed out /defer/drain"))
    }
}
