import PushModel
import PushproofTestSupport
import Synchronization
import Testing
@testable import Sender

final class LineRecorder: Sendable {
    private let storage = Mutex<[String]>([])
    var lines: [String] { storage.withLock { $0 } }
    func record(_ line: String) { storage.withLock { $0.append(line) } }
}

@Suite struct DeliveryDryRunTests {
    let iosDevice = Device(userID: "alice", platform: .ios, kind: .voip, token: String(repeating: "0f", count: 32))
    let androidDevice = Device(userID: "bob", platform: .android, token: "fcm-token-bob")

    func voipPush() -> PushRequest {
        PushRequest(
            device: iosDevice, kind: "poolse.ring",
            headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip"), ("apns-priority", "10")],
            body: Array("{\"aps\":{},\n\"call\":\"c1\"}".utf8))
    }

    @Test func withoutCredentialsEachPushIsLoggedAndNothingSent() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        let recorder = LineRecorder()
        // Nothing listens on the discard port; a request would fail, not be logged.
        let configuration = DeliveryConfiguration(apnsBaseURL: "http://127.0.0.1:9", fcmBaseURL: "http://127.0.0.1:9")
        let deliverer = try PushDeliverer(configuration: configuration, credentials: .none, deviceStore: store, log: recorder.record)
        let apns = await deliverer.deliver(voipPush())
        let fcm = await deliverer.deliver(PushRequest(device: androidDevice, kind: "yama.message", body: Array(#"{"message":{"token":"fcm-token-bob"}}"#.utf8)))
        await deliverer.shutdown()

        let lines = recorder.lines
        try #require(lines.count == 2)
        #expect(apns.outcome == .dryRun(line: lines[0]))
        #expect(fcm.outcome == .dryRun(line: lines[1]))
        #expect(lines[0] == "dry-run apns POST /3/device/\(iosDevice.token) headers: [apns-push-type: voip; apns-topic: com.example.app.voip; apns-priority: 10] body: {\"aps\":{},\\n\"call\":\"c1\"}")
        #expect(lines[1] == #"dry-run fcm POST /v1/projects/-/messages:send headers: [content-type: application/json] body: {"message":{"token":"fcm-token-bob"}}"#)
        #expect(!lines.contains { $0.contains("\n") })
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.dryRuns == 2)
        #expect(statistics.attemptsSent == 0)
        #expect(statistics.connectionsOpened == 0)
    }

    @Test func onlyTheGatewayWithoutCredentialsRunsDry() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        let recorder = LineRecorder()
        let configuration = DeliveryConfiguration(
            apnsBaseURL: "http://127.0.0.1:9", fcmBaseURL: "http://127.0.0.1:9",
            retry: RetryPolicy(baseDelay: 0, maxDelay: 0, maxAttempts: 1))
        let credentials = DeliveryCredentials(apns: CountingTokenSource())
        let deliverer = try PushDeliverer(configuration: configuration, credentials: credentials, deviceStore: store, log: recorder.record)
        let fcm = await deliverer.deliver(PushRequest(device: androidDevice, kind: "yama.message", body: []))
        #expect(fcm.outcome == .dryRun(line: recorder.lines.first ?? "<none>"))
        let apns = await deliverer.deliver(voipPush())
        await deliverer.shutdown()
        // APNs has credentials, so it was really attempted (and found nobody listening).
        guard case .failed(let reason, 0) = apns.outcome else {
            Issue.record("expected a network failure, got \(apns.outcome)")
            return
        }
        #expect(reason.hasPrefix("NetworkError"))
        #expect(recorder.lines.count == 1)
    }
}
