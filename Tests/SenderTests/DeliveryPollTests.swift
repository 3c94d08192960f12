// The delivery loop's wait in curl_multi_poll: while transfers run it is capped, so a transfer
// libcurl queued for a multiplexed connection (started only when the loop performs again)
// never waits out the idle timeout. Seen as a ~1 s stall in `drive --scenario
// --events-in-flight 1` runs, where each event's fan-out waits for the one before.
import Clocks
import Foundation
import PushModel
import Testing
@testable import Sender

@Suite struct DeliveryPollTests {
    @Test func whileTransfersRunTheLoopWaitsAtMostTenMilliseconds() {
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: true, nextRetryDue: nil, now: 0) == 10)
        // A retry due later than the cap does not lengthen the wait.
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: true, nextRetryDue: 5_000_000_000, now: 0) == 10)
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: true, nextRetryDue: 3_000_000, now: 0) == 4)
    }

    @Test func idleTheLoopWaitsForTheNextRetryOrASecond() {
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: false, nextRetryDue: nil, now: 0) == 1000)
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: false, nextRetryDue: 250_000_000, now: 0) == 251)
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: false, nextRetryDue: 5_000_000_000, now: 0) == 1000)
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: false, nextRetryDue: 1_000, now: 2_000) == 0)
    }

    /// Fan-outs one after another, each waited for before the next (`--events-in-flight 1`),
    /// over one TLS connection: no fan-out of 40 pushes takes 100 ms more than the typical one.
    /// A push stranded until the poll's idle timeout would add up to a second to its fan-out.
    @Test(.timeLimit(.minutes(1)))
    func fanOutsOneAfterAnotherDoNotStall() async throws {
        let gateway = try LiveGateway(tls: true)
        let pool = DeliveryPool(deliverer: try gateway.deliverer(InMemoryDeviceStore()))
        let clock = MonotonicClock()
        var rounds: [Duration] = []
        for round in 0..<30 {
            let pushes = (0..<40).map { index in
                index % 2 == 0 ? LivePushes.alert(to: LivePushes.iosDevice(round * 40 + index))
                    : LivePushes.data(to: LivePushes.androidDevice(round * 40 + index))
            }
            let started = clock.now
            let results = await pool.deliver(contentsOf: pushes)
            rounds.append(clock.now - started)
            #expect(results.allSatisfy { $0.outcome.isDelivered }, "round \(round): \(results.map(\.outcome))")
        }
        // The first round opens the connections and fetches the FCM access token.
        let typical = rounds.dropFirst().sorted()[rounds.count / 2]
        let slowest = rounds.dropFirst().max()!
        #expect(slowest - typical < .milliseconds(100), "fan-outs took \(rounds.map { Int($0.inSeconds * 1000) }) ms")
        await pool.deliverer.shutdown()
    }
}
