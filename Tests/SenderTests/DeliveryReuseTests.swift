// What the per-push savings of Delivery must not change: easy handles keep their libcurl
// header list between requests only while the header set is the same, and a push queued
// while the loop waits on answers (it is not woken then) still goes out without any help
// from shutdown.
import Foundation
import JSON
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite(.serialized) struct DeliveryReuseTests {
    /// Three header sets interleaved push by push: every handle alternates between them, so a
    /// list kept from the handle's previous request would put the wrong collapse id on the wire.
    @Test(arguments: [true, false])
    func eachRequestCarriesItsOwnPushHeaders(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls)
        let store = InMemoryDeviceStore()
        let pushes = (0..<90).map { index in
            var push = LivePushes.alert(to: LivePushes.iosDevice(index))
            push.headers.append(("apns-collapse-id", "group-\(index % 3)"))
            return push
        }
        let deliverer = try gateway.deliverer(store)
        let (_, results) = await deliverAll(pushes, with: deliverer)
        #expect(results.count == pushes.count)
        #expect(results.allSatisfy { $0.outcome.isDelivered })

        let expected = Dictionary(uniqueKeysWithValues: pushes.enumerated().map { ($1.device.token, "group-\($0 % 3)") })
        _ = try gateway.recorded()  // flushes the record file
        let lines = try String(contentsOfFile: gateway.recordPath, encoding: .utf8).split(separator: "\n")
        var seen = 0
        for line in lines {
            let exchange = try JSONParser.parse(String(line))
            guard exchange["route"]?.stringValue == "apns",
                  let token = exchange["path"]?.stringValue?.split(separator: "/").last.map(String.init) else { continue }
            let collapseIDs = (exchange["headers"]?.arrayValue ?? []).filter { $0[0] == "apns-collapse-id" }.compactMap { $0[1]?.stringValue }
            #expect(collapseIDs == [expected[token] ?? "?"], "token \(token)")
            seen += 1
        }
        #expect(seen == pushes.count)
    }

    /// With `maxInFlight` 200 a queued push wakes the loop only while it waits on fewer than
    /// 50 transfers. Pushes handed over while 150 are unanswered, and one more awaited on its
    /// own, must all end before `shutdown` is called (whose wake-up would hide a stranded push).
    @Test(.timeLimit(.minutes(1)))
    func pushesQueuedWhileTheLoopWaitsOnAnswersAllGoOut() async throws {
        let gateway = try LiveGateway(tls: false)
        let deliverer = try gateway.deliverer(InMemoryDeviceStore())
        let first = (0..<150).map { LivePushes.alert(to: LivePushes.iosDevice($0)) }
        let collector = Task {
            var results: [PushResult] = []
            for await result in deliverer.outcomes {
                results.append(result)
                if results.count == first.count { break }
            }
            return results
        }
        for push in first { await deliverer.send(push) }
        let last = await deliverer.deliver(LivePushes.alert(to: LivePushes.iosDevice(150)))
        #expect(last.outcome.isDelivered)
        // `last` went to its waiter; `outcomes` carries only the pushes nobody waits for.
        let results = await collector.value
        #expect(results.count == first.count)
        #expect(results.allSatisfy { $0.outcome.isDelivered })
        await deliverer.shutdown()
    }
}
