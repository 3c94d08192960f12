// Token cleanup against the mock: dead tokens leave the SQLite store and get no later push;
// errors about the payload never cost a user their device.
import Foundation
import JSON
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite(.serialized) struct GatewayLiveCleanupTests {
    static let alice = User(id: "alice", externalID: "ext-alice", displayName: "Alice")
    static let now: Int64 = 1_793_952_000_000

    static func rules(_ store: any DeviceStore) -> PoolseRules {
        PoolseRules(app: AppConfig(iosBundleID: LiveGateway.bundleID, fcmProjectID: LiveGateway.project),
                    devices: store, grants: FixedGrants(call: "grant-token"), clock: .fixed(milliseconds: now))
    }

    static func call(_ id: String) -> Call {
        Call.placed(id: id, conversation: Conversation(id: "conv-1", kind: .group, name: "Team", members: ["alice", "bob", "carol"]),
                    caller: alice, media: .audio, ringDeadline: now + 45_000)
    }

    /// Apple: stop sending to a token answered 410 (apns.md, "Unregistered"); Google: delete
    /// a token answered 404 UNREGISTERED (fcm.md). Bob's phones are gone at the gateway: the
    /// first ring deletes them from the database file, and the next ring (rules reading the
    /// same file) addresses only Carol.
    @Test(arguments: [true, false])
    func goneTokensAreDeletedAndGetNoLaterPush(tls: Bool) async throws {
        let bobIOS = LivePushes.iosDevice(1, user: "bob", kind: .voip)
        let bobAndroid = LivePushes.androidDevice(1, user: "bob")
        let carolIOS = LivePushes.iosDevice(2, user: "carol", kind: .voip)
        let carolAndroid = LivePushes.androidDevice(2, user: "carol")
        let gateway = try LiveGateway(tls: tls, tokens: [
            "gone": [["token": .string(bobIOS.token), "since_ms": 1_793_900_000_000], .string(bobAndroid.token)],
        ])
        let databasePath = gateway.directory.file("devices.sqlite")
        let store = try SQLiteDeviceStore(path: databasePath)
        for device in [bobIOS, bobAndroid, carolIOS, carolAndroid] { try store.register(device) }

        let firstRing = try Self.rules(store).callPlaced(Self.call("call-1"))
        #expect(Set(firstRing.map(\.device.token)) == [bobIOS.token, bobAndroid.token, carolIOS.token, carolAndroid.token])
        let first = try gateway.deliverer(store)
        let (_, firstResults) = await deliverAll(firstRing, with: first)
        let outcomes = Dictionary(uniqueKeysWithValues: firstResults.map { ($0.device.token, $0.outcome) })
        #expect(outcomes[bobIOS.token] == .tokenRemoved(reason: "Unregistered"))
        #expect(outcomes[bobAndroid.token] == .tokenRemoved(reason: "UNREGISTERED"))
        #expect(outcomes[carolIOS.token]?.isDelivered == true)
        #expect(outcomes[carolAndroid.token]?.isDelivered == true)
        #expect(first.metrics.snapshot.devicesDeleted == 2)

        // The deletions are in the file, not only in this connection's view of it.
        let reopened = try SQLiteDeviceStore(path: databasePath)
        #expect(try reopened.devices(of: "bob") == [])
        #expect(Set(try reopened.devices(of: "carol")) == [carolIOS, carolAndroid])

        let secondRing = try Self.rules(reopened).callPlaced(Self.call("call-2"))
        #expect(Set(secondRing.map(\.device.token)) == [carolIOS.token, carolAndroid.token])
        let second = try gateway.deliverer(reopened)
        let (_, secondResults) = await deliverAll(secondRing, with: second)
        #expect(secondResults.count == 2 && secondResults.allSatisfy(\.outcome.isDelivered))

        // The gateway saw each of Bob's tokens once (answered 410 / 404), Carol's twice.
        let perToken = Dictionary(grouping: try gateway.recorded().filter { $0.route != "oauth" }) { $0.deviceToken ?? "" }
        #expect(perToken[bobIOS.token]?.map(\.status) == [410])
        #expect(perToken[bobAndroid.token]?.map(\.status) == [404])
        #expect(perToken[carolIOS.token]?.map(\.status) == [200, 200])
        #expect(perToken[carolAndroid.token]?.map(\.status) == [200, 200])
    }

    /// A 400 can be about the token (APNs BadDeviceToken, FCM "not a valid FCM registration
    /// token": delete it) or about the payload (FCM data values must be strings; APNs empty
    /// or oversized payloads: keep the device). Only the former may delete.
    @Test(arguments: [true, false])
    func payloadErrorsNeverDeleteADevice(tls: Bool) async throws {
        let badIOS = LivePushes.iosDevice(1, user: "bad")
        let badAndroid = LivePushes.androidDevice(1, user: "bad")
        let numberData = LivePushes.androidDevice(2, user: "keep")
        let emptyPayload = LivePushes.iosDevice(3, user: "keep")
        let oversized = LivePushes.iosDevice(4, user: "keep")
        let fine = LivePushes.iosDevice(5, user: "keep")
        let gateway = try LiveGateway(tls: tls, tokens: ["bad": [.string(badIOS.token), .string(badAndroid.token)]])
        let store = try SQLiteDeviceStore(path: gateway.directory.file("devices.sqlite"))
        for device in [badIOS, badAndroid, numberData, emptyPayload, oversized, fine] { try store.register(device) }

        let big = String(repeating: "x", count: 5000)
        let pushes = [
            LivePushes.alert(to: badIOS),
            LivePushes.data(to: badAndroid),
            LivePushes.data(to: numberData, data: #"{"type":"ping","count":12}"#),
            LivePushes.alert(to: emptyPayload, payload: ""),
            LivePushes.alert(to: oversized, payload: #"{"aps":{"alert":"\#(big)"}}"#),
            LivePushes.alert(to: fine),
        ]
        let deliverer = try gateway.deliverer(store)
        let (_, results) = await deliverAll(pushes, with: deliverer)
        let outcomes = Dictionary(uniqueKeysWithValues: results.map { ($0.device.token, $0.outcome) })

        #expect(outcomes[badIOS.token] == .tokenRemoved(reason: "BadDeviceToken"))
        #expect(outcomes[badAndroid.token] == .tokenRemoved(reason: "INVALID_ARGUMENT"))
        #expect(outcomes[numberData.token] == .failed(reason: "INVALID_ARGUMENT", status: 400))
        #expect(outcomes[emptyPayload.token] == .failed(reason: "PayloadEmpty", status: 400))
        #expect(outcomes[oversized.token] == .failed(reason: "PayloadTooLarge", status: 413))
        #expect(outcomes[fine.token]?.isDelivered == true)
        #expect(results.allSatisfy { $0.attempts == 1 }, "none of these is retried")

        #expect(try store.devices(of: "bad") == [])
        #expect(Set(try store.devices(of: "keep")) == [numberData, emptyPayload, oversized, fine])
        #expect(deliverer.metrics.snapshot.devicesDeleted == 2)
    }
}
