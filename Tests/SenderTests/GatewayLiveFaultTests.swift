// Faults injected by the mock (429/503 with Retry-After, GOAWAY, stream resets) against the
// sender's promise: every push ends with exactly one outcome, none is lost, and none the
// gateway accepted is sent again. The gateway's record is the ground truth for the last part.
import Foundation
import JSON
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite(.serialized) struct GatewayLiveFaultTests {
    /// Pushes to distinct devices (so the record can be counted per device token), APNs and
    /// FCM interleaved so faults switched on mid-run meet both.
    static func pushes(apns: Int, fcm: Int) -> [PushRequest] {
        var pushes: [PushRequest] = []
        for index in 0..<max(apns, fcm) {
            if index < apns { pushes.append(LivePushes.alert(to: LivePushes.iosDevice(index))) }
            if index < fcm { pushes.append(LivePushes.data(to: LivePushes.androidDevice(index))) }
        }
        return pushes
    }

    /// Checks the accounting of one run and returns the results by device token:
    /// - every ticket has exactly one result;
    /// - a delivered push was answered 200 exactly once by the gateway, any other push never,
    ///   and the gateway saw it at least once.
    @discardableResult
    static func expectAccounted(tickets: [UInt64], results: [PushResult], recorded: [RecordedExchange],
                                sourceLocation: SourceLocation = #_sourceLocation) -> [String: PushResult] {
        #expect(results.count == tickets.count, sourceLocation: sourceLocation)
        #expect(Set(results.map(\.ticket)) == Set(tickets), sourceLocation: sourceLocation)
        let byToken = Dictionary(grouping: recorded.filter { $0.route == "apns" || $0.route == "fcm" }) { $0.deviceToken ?? "" }
        var resultsByToken: [String: PushResult] = [:]
        for result in results {
            resultsByToken[result.device.token] = result
            let lines = byToken[result.device.token] ?? []
            let accepted = lines.filter { $0.status == 200 }.count
            if result.outcome.isDelivered {
                #expect(accepted == 1, "\(result.device.token): \(accepted) answers 200", sourceLocation: sourceLocation)
            } else {
                #expect(accepted == 0, "\(result.device.token) ended \(result.outcome) after a 200", sourceLocation: sourceLocation)
            }
            #expect(result.attempts >= 1 && !lines.isEmpty, "\(result.device.token): \(result.attempts) attempts", sourceLocation: sourceLocation)
        }
        return resultsByToken
    }

    /// Without faults, thousands of pushes share the one connection allowed (past nghttp2's
    /// rapid-reset burst of 1000, which libcurl 7.88's reset-after-every-stream used to hit).
    @Test(arguments: [true, false])
    func thousandsOfPushesShareOneConnection(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls)
        let pushes = Self.pushes(apns: 2500, fcm: 500)
        let deliverer = try gateway.deliverer(InMemoryDeviceStore())
        let (tickets, results) = await deliverAll(pushes, with: deliverer)
        Self.expectAccounted(tickets: tickets, results: results, recorded: try gateway.recorded())
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.delivered == pushes.count)
        #expect(statistics.connectionsOpened == 1)
        #expect(statistics.retriesScheduled == 0)
    }

    /// Apple: 429 TooManyRequests and 503 ServiceUnavailable may be retried after backing off;
    /// Google: 429 and 503 with exponential backoff, honouring Retry-After (apns.md, fcm.md).
    /// Faults set through the control API; with three attempts some pushes run out of them.
    /// The retry waits the Retry-After second the gateway asked for, not the sender's own
    /// (millisecond) backoff.
    @Test(arguments: [true, false])
    func throttledAndUnavailablePushesAreRetriedAndAccountedFor(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls, faults: ["seed": 7])
        let throttle: JSONValue = ["error_rates": ["429": 0.25, "503": 0.25], "retry_after_seconds": 1]
        try gateway.control("PUT", "/faults/apns", throttle)
        try gateway.control("PUT", "/faults/fcm", throttle)
        let pushes = Self.pushes(apns: 200, fcm: 100)
        let deliverer = try gateway.deliverer(InMemoryDeviceStore(), retry: RetryPolicy(baseDelay: 0.005, maxDelay: 0.02, maxAttempts: 3))
        let (tickets, results) = await deliverAll(pushes, with: deliverer)
        let recorded = try gateway.recorded()
        Self.expectAccounted(tickets: tickets, results: results, recorded: recorded)

        let refusals = recorded.filter { $0.route != "oauth" && $0.status != 200 }
        #expect(Set(refusals.map(\.status)) == [429, 503])
        #expect(refusals.allSatisfy { $0.retryAfter == "1" })
        let byToken = Dictionary(grouping: recorded) { $0.deviceToken ?? "" }
        for result in results {
            let lines = byToken[result.device.token] ?? []
            // Nothing here resets streams, so each attempt is one recorded request.
            #expect(result.attempts == lines.count)
            for (refused, next) in zip(lines, lines.dropFirst()) {
                #expect(next.arrivalSeconds - refused.answeredSeconds >= 0.9, "retried before Retry-After: 1 ran out")
            }
            switch result.outcome {
            case .delivered:
                #expect(lines.last?.status == 200)
            case .failed(let reason, let status):
                #expect(result.attempts == 3)
                #expect([429, 503].contains(status))
                #expect(["TooManyRequests", "ServiceUnavailable", "QUOTA_EXCEEDED", "UNAVAILABLE"].contains(reason), "\(reason)")
            default:
                Issue.record("unexpected outcome \(result.outcome)")
            }
        }
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.delivered + statistics.failed == pushes.count)
        #expect(statistics.delivered > 0 && statistics.failed > 0)
        #expect(statistics.retriesScheduled == results.reduce(0) { $0 + $1.attempts - 1 })
        #expect(statistics.attemptsSent == recorded.filter { $0.route != "oauth" }.count)
    }

    /// APNs closes connections with GOAWAY (apns.md, "Transport"); streams above its last
    /// stream id were never processed and are sent again on a new connection. Every push
    /// still ends once, and none is accepted twice.
    @Test(arguments: [true, false])
    func goAwayEveryFiftyStreamsLosesAndDuplicatesNothing(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls, faults: ["seed": 11, "apns": ["goaway_after_streams": 50],
                                                         "fcm": ["goaway_after_streams": 50]])
        let pushes = Self.pushes(apns: 400, fcm: 100)
        let deliverer = try gateway.deliverer(InMemoryDeviceStore(), retry: RetryPolicy(baseDelay: 0.005, maxDelay: 0.02, maxAttempts: 6))
        let (tickets, results) = await deliverAll(pushes, with: deliverer)
        let recorded = try gateway.recorded()
        Self.expectAccounted(tickets: tickets, results: results, recorded: recorded)

        let statistics = deliverer.metrics.snapshot
        #expect(statistics.delivered == pushes.count)
        #expect(statistics.connectionsOpened >= pushes.count / 50)
        #expect(Set(recorded.map(\.connection)).count >= pushes.count / 50, "the gateway saw the reconnections")
    }

    /// Streams reset by the gateway (RST_STREAM REFUSED_STREAM) from the middle of the run
    /// on: the push had no answer, so it goes again; still one outcome each, one 200 each.
    @Test(arguments: [true, false])
    func streamResetsMidRunLoseAndDuplicateNothing(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls, faults: ["seed": 13])
        let pushes = Self.pushes(apns: 400, fcm: 100)
        let deliverer = try gateway.deliverer(InMemoryDeviceStore(), retry: RetryPolicy(baseDelay: 0.005, maxDelay: 0.02, maxAttempts: 6))
        let collector = Task {
            var results: [PushResult] = []
            for await result in deliverer.outcomes { results.append(result) }
            return results
        }
        var tickets: [UInt64] = []
        for (index, push) in pushes.enumerated() {
            if index == pushes.count / 4 {
                // Mid-run: some pushes are answered, others in flight or not yet sent.
                while deliverer.metrics.snapshot.finished < pushes.count / 8 { try await Task.sleep(for: .milliseconds(2)) }
                try gateway.control("PUT", "/faults/apns", ["reset_rate": 0.1])
                try gateway.control("PUT", "/faults/fcm", ["reset_rate": 0.1])
            }
            tickets.append(await deliverer.send(push))
        }
        await deliverer.shutdown()
        let results = await collector.value
        let recorded = try gateway.recorded()
        Self.expectAccounted(tickets: tickets, results: results, recorded: recorded)

        #expect(recorded.contains { $0.status == 0 }, "some streams were reset")
        #expect(deliverer.metrics.snapshot.delivered == pushes.count)
    }
}
