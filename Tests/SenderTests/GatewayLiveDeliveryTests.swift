import Foundation
import PushModel
import Testing
@testable import Sender

/// Opt-in end-to-end run against a running `pushproof serve` (the lead's integration tests
/// start one themselves). Set PUSHPROOF_E2E_GATEWAY (base URL), PUSHPROOF_E2E_CA (its
/// certificate, for https) and PUSHPROOF_E2E_DIR (apns.p8 for key ABC123DEFG / team
/// TEAM123456, sa.json for project demo-project) with the gateway configured so that
/// "ab"x32 and "fcm-gone" are gone, "cd"x32 and "fcm-bad" are bad, everything else valid.
@Suite struct GatewayLiveDeliveryTests {
    static let environment = ProcessInfo.processInfo.environment
    static let gateway = environment["PUSHPROOF_E2E_GATEWAY"]

    @Test(.enabled(if: gateway != nil))
    func deliversRetriesAndCleansUpAgainstTheMockGateway() async throws {
        let base = try #require(Self.gateway)
        let directory = try #require(Self.environment["PUSHPROOF_E2E_DIR"])
        let credentials = try DeliveryCredentials.load(
            apnsKeyPath: directory + "/apns.p8", apnsKeyID: "ABC123DEFG", apnsTeamID: "TEAM123456",
            serviceAccountPath: directory + "/sa.json")
        let temporary = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: temporary.file("devices.sqlite"))
        let configuration = DeliveryConfiguration(
            apnsBaseURL: base, fcmBaseURL: base, oauthTokenURL: base + "/token",
            connectionsPerGateway: 1, maxInFlight: 200,
            tls: Self.environment["PUSHPROOF_E2E_CA"].map(TLSTrust.caFile) ?? .systemRoots,
            retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.1, maxAttempts: 8))
        let deliverer = try PushDeliverer(configuration: configuration, credentials: credentials, deviceStore: store, log: { _ in })

        var devices = (0..<300).map { Device(userID: "ios\($0 % 10)", platform: .ios, token: String(format: "%064x", $0 + 1)) }
        devices += (0..<50).map { Device(userID: "android\($0 % 10)", platform: .android, token: "fcm-valid-\($0)") }
        let goneIOS = Device(userID: "gone", platform: .ios, token: String(repeating: "ab", count: 32))
        let badIOS = Device(userID: "gone", platform: .ios, token: String(repeating: "cd", count: 32))
        let goneAndroid = Device(userID: "gone", platform: .android, token: "fcm-gone")
        let badAndroid = Device(userID: "gone", platform: .android, token: "fcm-bad")
        let payloadError = Device(userID: "payload", platform: .android, token: "fcm-payload")
        devices += [goneIOS, badIOS, goneAndroid, badAndroid, payloadError]
        for device in devices { try store.register(device) }

        let results = await withTaskGroup(of: PushResult.self) { group in
            for device in devices {
                let push: PushRequest
                if device.platform == .ios {
                    push = PushRequest(device: device, kind: "e2e", headers: [("apns-push-type", "alert"), ("apns-topic", "com.example.app")],
                                       body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
                } else {
                    let data = device == payloadError ? #"{"count":12}"# : #"{"k":"v"}"#
                    push = PushRequest(device: device, kind: "e2e", body: Array(#"{"message":{"token":"\#(device.token)","data":\#(data)}}"#.utf8))
                }
                group.addTask { await deliverer.deliver(push) }
            }
            return await group.reduce(into: [PushResult]()) { $0.append($1) }
        }
        await deliverer.shutdown()

        let byToken = Dictionary(uniqueKeysWithValues: results.map { ($0.device.token, $0) })
        #expect(results.count == devices.count)
        #expect(results.filter(\.outcome.isDelivered).count == 350)
        #expect(byToken[goneIOS.token]?.outcome == .tokenRemoved(reason: "Unregistered"))
        #expect(byToken[badIOS.token]?.outcome == .tokenRemoved(reason: "BadDeviceToken"))
        #expect(byToken[goneAndroid.token]?.outcome == .tokenRemoved(reason: "UNREGISTERED"))
        #expect(byToken[badAndroid.token]?.outcome == .tokenRemoved(reason: "INVALID_ARGUMENT"))
        #expect(byToken[payloadError.token]?.outcome == .failed(reason: "INVALID_ARGUMENT", status: 400))
        #expect(try store.devices(of: "gone") == [])
        #expect(try store.devices(of: "payload") == [payloadError])
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.connectionsOpened == 1)
        #expect(statistics.providerTokensSigned == 1)
        #expect(statistics.accessTokensFetched == 1)
        #expect(statistics.devicesDeleted == 4)
        #expect(statistics.tokenCleanup.count == 4)
    }
}
