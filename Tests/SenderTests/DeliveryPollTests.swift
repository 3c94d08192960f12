// The delivery loop's wait in curl_multi_poll: while transfers run it is capped, so a transfer
// libcurl queued for a multiplexed connection (started only when the loop performs again)
// never waits out the idle timeout. Seen as a ~1 s stall in `drive --scenario
// --events-in-flight 1` runs, where each event's fan-out waits for the one before. A wait
// longer than 100 ms while transfers run fails here.
import Testing
@testable import Sender

@Suite struct DeliveryPollTests {
    @Test func whileTransfersRunTheLoopWaitsAtMostTenMilliseconds() {
        #expect(CurlLoop.pollTimeoutMilliseconds(transfersRunning: true, nextRetryDue: nil, now: 0) == 10)
        #expect(CurlLoop.busyPollMilliseconds < 100)
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
}
