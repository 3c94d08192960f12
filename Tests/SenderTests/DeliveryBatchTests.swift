// `PushDeliverer.send(contentsOf:)` against a live `pushproof serve`: a fan-out handed over as
// one batch, with more pushes in flight than the connection has streams, so pushes queue both
// for in-flight slots and behind the origin's streams.
import Foundation
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite struct DeliveryBatchTests {
    @Test func aBatchKeepsItsOrderAndEveryPushEndsOnce() async throws {
        let gateway = try LiveGateway(tls: false)
        let store = InMemoryDeviceStore()
        var configuration = gateway.configuration(maxInFlight: 48)
        configuration.streamsPerConnection = 8
        // FCM without credentials: Android pushes run dry, interleaved with live APNs pushes.
        let deliverer = try PushDeliverer(
            configuration: configuration, credentials: DeliveryCredentials(apns: gateway.credentials.apns),
            deviceStore: store, log: { _ in })
        let collector = Task {
            var results: [PushResult] = []
            for await result in deliverer.outcomes { results.append(result) }
            return results
        }
        let pushes = (0..<300).map { index in
            LivePushes.push(to: index % 5 == 4 ? LivePushes.androidDevice(index) : LivePushes.iosDevice(index))
        }
        let tickets = await deliverer.send(contentsOf: pushes)
        await deliverer.shutdown()
        let results = await collector.value

        #expect(tickets.count == pushes.count)
        #expect(zip(tickets, tickets.dropFirst()).allSatisfy { $0 < $1 }, "tickets follow the order of the batch")
        #expect(results.count == pushes.count)
        #expect(Set(results.map(\.ticket)) == Set(tickets), "one result per ticket")
        for (ticket, push) in zip(tickets, pushes) {
            let result = try #require(results.first { $0.ticket == ticket })
            #expect(result.device == push.device)
            switch (push.transport, result.outcome) {
            case (.apns, .delivered), (.fcm, .dryRun): break
            default: Issue.record("\(push.device.token): \(result.outcome)")
            }
        }
        let recorded = try gateway.recorded()
        let apnsTokens = pushes.filter { $0.transport == .apns }.map(\.device.token)
        #expect(recorded.compactMap(\.deviceToken).sorted() == apnsTokens.sorted(), "each live push reached the gateway once")
        #expect(Set(recorded.map(\.connection)).count == 1, "all on one connection")
    }

    @Test func anEmptyBatchReturnsNoTickets() async throws {
        let deliverer = try PushDeliverer(
            configuration: DeliveryConfiguration(apnsBaseURL: "http://127.0.0.1:9"),
            credentials: .none, deviceStore: InMemoryDeviceStore(), log: { _ in })
        #expect(await deliverer.send(contentsOf: []).isEmpty)
        await deliverer.shutdown()
    }
}
