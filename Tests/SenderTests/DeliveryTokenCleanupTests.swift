import Clocks
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite struct DeliveryTokenCleanupTests {
    @Test func aGoneTokenIsDeletedTimedAndReportedOnce() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        let gone = Device(userID: "alice", platform: .ios, kind: .alert, token: String(repeating: "aa", count: 32))
        let kept = Device(userID: "alice", platform: .ios, kind: .voip, token: String(repeating: "bb", count: 32))
        try store.register(gone)
        try store.register(kept)
        let deliverer = try PushDeliverer(
            configuration: DeliveryConfiguration(apnsBaseURL: "http://127.0.0.1:9"),
            credentials: DeliveryCredentials(apns: CountingTokenSource()), deviceStore: store, log: { _ in })

        let push = PushRequest(device: gone, kind: "yama.message", body: [])
        let batch = ResultBatch([push], each: nil)
        let job = DeliveryJob(ticket: 7, push: push, attempts: 1, holdsSlot: false, waiter: batch, place: 0)
        deliverer.shared.removeToken(of: job, reason: "Unregistered", status: 410, answeredAtNanoseconds: SystemClock.monotonicNanoseconds())
        let result = await batch.results()[0]
        await deliverer.shutdown()

        #expect(result.outcome == .tokenRemoved(reason: "Unregistered"))
        #expect(result.ticket == 7)
        #expect(try store.devices(of: "alice") == [kept])
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.tokensRemoved == 1)
        #expect(statistics.devicesDeleted == 1)
        #expect(statistics.tokenCleanup.totalCount == 1)
        #expect(statistics.tokenCleanup.max > 0)
        #expect(statistics.tokenCleanup.min == statistics.tokenCleanup.max)
    }
}
