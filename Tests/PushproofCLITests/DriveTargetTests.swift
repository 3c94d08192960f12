// The driver's adapter over the reference sender, in-process against a live gateway.
import Driver
import Foundation
import PushModel
import PushproofTestSupport
import Sender
import Testing
@testable import PushproofCLI

@Suite(.serialized) struct DriveTargetTests {
    /// A deliverer for `serve` with test credentials, and its pool.
    func makeTarget(_ serve: ServeProcess, credentials: String) throws -> DeliveryPool {
        let parsed = try ParsedArguments.parse(["ring-fanout", "--h2c", "--gateway", serve.baseURL] + credentialArguments(credentials, gateway: serve.baseURL),
                                               for: DriveCommand.spec)
        let options = try SenderOptions(parsed)
        let (loaded, project) = try options.loadCredentials()
        let deliverer = try PushDeliverer(configuration: options.deliveryConfiguration(projectID: project), credentials: loaded,
                                          deviceStore: InMemoryDeviceStore(), log: { _ in })
        return DeliveryPool(deliverer: deliverer)
    }

    func ring(to token: String) -> PushRequest {
        PushRequest(device: Device(userID: "u", platform: .ios, kind: .voip, token: token), kind: "poolse.ring",
                    headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.loop.voip"), ("apns-priority", "10")],
                    body: Array(#"{"cv":"1","type":"call","event":"ring"}"#.utf8))
    }

    @Test func aCancelledSendReturnsWithoutWaitingForTheGateway() async throws {
        let directory = try TemporaryDirectory("drive-cancel")
        let credentials = try writeCredentials(in: directory)
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json"], directory: directory.path)
        let pool = try makeTarget(serve, credentials: credentials)
        let target = SenderTarget(pool: pool)
        let token = String(repeating: "5e", count: 32)

        // Answered at once: the adapter maps the outcome.
        #expect(await target.send(ring(to: token)).isDelivered)

        // Now every APNs answer takes 10 minutes: only cancellation can end the send early.
        let faults = try curl(["-X", "PUT", "-d", #"{"latency":{"fixed_ms":600000}}"#, serve.adminURL + "/faults/apns"])
        #expect(faults.status == 0)
        let push = ring(to: token)
        let sending = Task { await target.send(push) }
        while pool.deliverer.metrics.attemptsSent.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(5)) }
        sending.cancel()
        #expect(await sending.value == .failed(reason: "Cancelled", status: 0))
        #expect(pool.deliverer.metrics.delivered.load(ordering: .relaxed) == 1, "the slow push never came back")

        // Already cancelled before the call: returns without handing the push over.
        let before = pool.deliverer.metrics.submitted.load(ordering: .relaxed)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await target.send(push)
        }
        #expect(await early.value == .failed(reason: "Cancelled", status: 0))
        #expect(pool.deliverer.metrics.submitted.load(ordering: .relaxed) == before)

        // The gateway going away ends the stuck push, so the deliverer can shut down.
        serve.stop()
        await pool.shutdown()
        #expect(pool.deliverer.metrics.snapshot.finished == 2)
    }

    @Test func resultsArrivingBeforeTheirWaiterAreKept() async throws {
        // A deliverer without credentials runs dry: the outcome exists before `send` returns.
        let deliverer = try PushDeliverer(configuration: DeliveryConfiguration(apnsBaseURL: "http://127.0.0.1:1"),
                                          credentials: .none, deviceStore: InMemoryDeviceStore(), log: { _ in })
        let pool = DeliveryPool(deliverer: deliverer)
        let pushes = (0..<50).map { ring(to: String(format: "%064x", $0)) }
        let results = await pool.deliver(contentsOf: pushes)
        #expect(results.count == 50)
        #expect(results.map(\.device.token) == pushes.map(\.device.token), "in the order given")
        #expect(results.allSatisfy { if case .dryRun = $0.outcome { true } else { false } })
        await pool.shutdown()
    }
}
