// The workspaces `send` and `drive` push for: a poolse group whose members each hold an iOS
// PushKit token, an iOS APNs token and an Android token, in whichever DeviceStore is given.
import Clocks
import Driver
import Foundation
import PushModel
import Sender

/// A poolse group of `members` people (member 0 places the calls and sends the messages).
struct GroupWorkspace: Sendable {
    let rules: PoolseRules
    let conversation: Conversation
    let users: [User]
    let store: any DeviceStore
    /// Distinguishes this workspace's tokens from other runs' on the same gateway.
    let scope: UInt8
    /// The group's devices, 3 a member, and how many of them `segment` owns (all, unsegmented).
    let deviceCount: Int
    let ownedDeviceCount: Int

    /// Registers 3 devices per member in `store`; with a `segment` of several, only that
    /// segment's share of them (by token: docs/scale-out.md), so the rules fan every call or
    /// message out to those alone, and the segments' fan-outs together are the whole group's.
    init(members: Int, store: any DeviceStore, app: AppConfig, scope: UInt8 = 0x10,
         settings: WorkspaceSettings = WorkspaceSettings(), segment: ExecutionSegment = .whole) throws {
        let count = max(2, members)
        users = (0..<count).map { User(id: "member-\($0)", externalID: "ext-member-\($0)", displayName: "Member \($0)") }
        var devices = users.enumerated().flatMap { index, user in Self.devices(of: user.id, index: index, scope: scope) }
        deviceCount = devices.count
        if segment.segmentCount > 1 {
            let owned = Set(segment.devices(of: devices.map(\.token)))
            devices.removeAll { !owned.contains($0.token) }
        }
        ownedDeviceCount = devices.count
        for device in devices { try store.register(device) }
        self.store = store
        self.scope = scope
        conversation = Conversation(id: "conv-group-\(count)", kind: .group, name: "Group of \(count)", members: users.map(\.id))
        rules = PoolseRules(app: app, settings: settings, devices: store,
                            grants: FixedGrants(call: "eyJhbGciOiJFUzI1NiJ9.call", reply: "eyJhbGciOiJFUzI1NiJ9.reply"),
                            clock: .system)
    }

    /// An iOS PushKit token, an iOS APNs token and an Android token.
    static func devices(of userID: String, index: Int, scope: UInt8) -> [Device] {
        [
            Device(userID: userID, platform: .ios, kind: .voip, token: DemoTokens.apns(scope: scope, kind: .voip, index: index)),
            Device(userID: userID, platform: .ios, kind: .alert, token: DemoTokens.apns(scope: scope, kind: .alert, index: index)),
            Device(userID: userID, platform: .android, token: DemoTokens.fcm(scope: String(scope, radix: 16), index: index)),
        ]
    }

    var caller: User { users[0] }

    /// A call placed by member 0 now, ringing everyone else.
    func placeCall(id: String) -> Call {
        Call.placed(id: id, conversation: conversation, caller: caller, media: .video,
                    ringDeadline: WallClock.system.nowMilliseconds + 45_000)
    }

    /// The pushes of one group call's ring: `2 * (members - 1)`.
    func ring(callID: String) throws -> [PushRequest] {
        try rules.callPlaced(placeCall(id: callID))
    }

    /// The pushes of one text message from member 0 to the group: `2 * (members - 1)`.
    func message(id: String, text: String = "ship it") throws -> [PushRequest] {
        let message = Message(id: id, conversationID: conversation.id, sender: caller, text: text,
                              sentAt: WallClock.system.nowMilliseconds)
        return try rules.messageSent(message, in: conversation, unread: UnreadTotals())
    }
}
