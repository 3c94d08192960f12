import PushModel

/// A ready-made poolse workspace for timing rule evaluation plus payload building, without
/// delivery. Build it once (setup), then time `ringFanout()` / `messageFanout()` /
/// `callEndedFanout()`, each of which evaluates one event and builds every push.
///
/// Every member has three devices: an iOS PushKit token, an iOS APNs token and an Android
/// token, so a ring builds 2 pushes per callee and a message 2 per recipient.
public struct SenderWorkload: Sendable {
    public let rules: PoolseRules
    public let conversation: Conversation
    public let caller: User
    public let store: InMemoryDeviceStore

    public init(members: Int, preview: PreviewMode = .full) {
        let count = max(2, members)
        let ids = (0..<count).map { "user-\($0)" }
        let store = InMemoryDeviceStore()
        for id in ids {
            store.register(Device(userID: id, platform: .ios, kind: .voip, token: "voip-" + id))
            store.register(Device(userID: id, platform: .ios, kind: .alert, token: "apns-" + id))
            store.register(Device(userID: id, platform: .android, token: "fcm-" + id))
        }
        self.store = store
        conversation = Conversation(id: "conv-load", kind: .group, name: "Load test", members: ids)
        caller = User(id: ids[0], externalID: "ext-" + ids[0], displayName: "Caller")
        rules = PoolseRules(
            app: AppConfig(iosBundleID: "com.example.load", fcmProjectID: "load-project"),
            settings: WorkspaceSettings(preview: preview),
            devices: store,
            grants: FixedGrants(call: "eyJhbGciOiJFUzI1NiJ9.load.call", reply: "eyJhbGciOiJFUzI1NiJ9.load.reply"),
            clock: .fixed(milliseconds: 1_793_952_000_000))
    }

    /// The call every fan-out uses: placed by member 0, ringing everyone else.
    public var call: Call {
        Call.placed(id: "call-load", conversation: conversation, caller: caller, media: .video,
                    ringDeadline: 1_793_952_045_000)
    }

    /// One ring to every other member: `2 * (members - 1)` pushes.
    public func ringFanout() throws -> [PushRequest] {
        try rules.callPlaced(call)
    }

    /// One text message from member 0 to everyone else: `2 * (members - 1)` pushes.
    public func messageFanout() throws -> [PushRequest] {
        let message = Message(id: "msg-load", conversationID: conversation.id, sender: caller,
                              text: "ship it", sentAt: 1_793_952_843_112)
        return try rules.messageSent(message, in: conversation, unread: UnreadTotals())
    }

    /// The call ends unanswered: ring_ended + finished + missed for everyone rung.
    public func callEndedFanout() throws -> [PushRequest] {
        try rules.callEnded(call, reason: .noAnswer)
    }

    /// Convenience: set up a workspace of `members` and build one ring fan-out.
    public static func buildRingFanout(members: Int) throws -> [PushRequest] {
        try SenderWorkload(members: members).ringFanout()
    }
}
