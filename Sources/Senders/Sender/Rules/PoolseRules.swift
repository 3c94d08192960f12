import Clocks
import PushModel

/// Who gets which poolse push, as the poolse seed ("Push payloads") says. Each function takes
/// one event and returns the pushes to send, one per device; it sends nothing itself.
///
/// Token routing ("Overview"): VoIP pushes (the ring) go to the iOS PushKit token (`kind: voip`)
/// only; every other iOS push goes to the regular APNs token (`kind: alert`). Android gets FCM
/// data messages with `android.priority: "HIGH"`.
public struct PoolseRules: Sendable {
    public var app: AppConfig
    public var settings: WorkspaceSettings
    public var devices: any DeviceStore
    public var grants: any GrantIssuer
    public var clock: WallClock

    public init(app: AppConfig, settings: WorkspaceSettings = .init(), devices: any DeviceStore,
                grants: any GrantIssuer = FixedGrants(), clock: WallClock = .system) {
        self.app = app
        self.settings = settings
        self.devices = devices
        self.grants = grants
        self.clock = clock
    }

    // MARK: Ring

    /// A call was placed: ring "everyone else in the conversation when a call is placed"
    /// (`call.rung`). "Rooms never ring."
    public func callPlaced(_ call: Call) throws -> [PushRequest] {
        // Each person once already (`Call.rung`): a set over them a slice was the largest
        // moment of a 100,000-member ring (7.4 MB, heaptrack).
        try ring(call, people: call.rung)
    }

    /// "the people added with "Add people"" are rung too. People already in the call, and the
    /// caller, are not.
    public func peopleAdded(_ people: [String], to call: Call) throws -> [PushRequest] {
        try ring(call, people: unique(people.filter { $0 != call.caller.id && !call.joined.contains($0) }))
    }

    /// "Sent to every registered device of each person rung." iOS: the PushKit token only,
    /// `apns-push-type: voip`, priority 10, `apns-expiration: 0`, topic `<bundle id>.voip`.
    /// Android: FCM with ttl 60s. `people` lists each person once.
    private func ring(_ call: Call, people: [String]) throws -> [PushRequest] {
        guard call.kind == .call else { return [] }
        let now = clock.nowMilliseconds
        let headers = APNSHeaders.make(pushType: .voip, topic: app.voipTopic, priority: .immediate, expiration: 0)
        var fanout = Fanout()
        for userID in people {
            let userDevices = try devices.devices(of: userID)
            guard !userDevices.isEmpty else { continue }
            let grant = grants.callGrant(callID: call.id, userID: userID)
            fanout.apple(userDevices, tokenKind: .voip, kind: PushKind.ring, headers: headers) {
                PoolsePayloads.ring(call: call, grant: grant, sentAt: now, encoding: .apns)
            }
            fanout.android(userDevices, kind: PushKind.ring, ttl: .oneMinute) {
                PoolsePayloads.ring(call: call, grant: grant, sentAt: now, encoding: .fcmData)
            }
        }
        return fanout.requests
    }

    // MARK: Ring ended

    /// "Tells a ringing Android phone to stop. Sent to the user's Android devices when:
    /// they answer on another device (answered_elsewhere); the device that answered is skipped;
    /// they decline on another device (declined); the call ends while their phone is still
    /// ringing (cancelled, timeout or finished)." "Not sent to iOS."
    public func ringEnded(_ call: Call, stop: RingStop) throws -> [PushRequest] {
        var fanout = Fanout()
        try ringEnded(call, stop: stop, into: &fanout)
        return fanout.requests
    }

    private func ringEnded(_ call: Call, stop: RingStop, into fanout: inout Fanout) throws {
        guard call.kind == .call else { return }
        let now = clock.nowMilliseconds
        let reason = stop.reason
        let people: [String]
        let skipToken: String?
        var onlyStillRinging = false
        switch stop {
        case .answeredElsewhere(let userID, let deviceToken):
            people = [userID]
            skipToken = deviceToken
        case .declined(let userID, let deviceToken):
            people = [userID]
            skipToken = deviceToken
        case .callEnded:
            // Everyone rung, those still ringing picked as they come: no list of them is made
            // (2 MB a slice of a 100,000-member call's end).
            people = call.everyoneRung
            skipToken = nil
            onlyStillRinging = true
        }
        for userID in people where !onlyStillRinging || call.isStillRinging(userID) {
            fanout.android(try devices.devices(of: userID), kind: PushKind.ringEnded, ttl: .oneMinute, skipToken: skipToken) {
                PoolsePayloads.ringEnded(call: call, reason: reason, sentAt: now)
            }
        }
    }

    // MARK: Call ended

    /// "Sent when a call or room ends, to the Android devices of everyone involved: the caller,
    /// everyone rung, and everyone who joined." FCM ttl 60s. "Not sent to iOS."
    public func callFinished(_ call: Call, reason: CallEndReason) throws -> [PushRequest] {
        var fanout = Fanout()
        try callFinished(call, reason: reason, into: &fanout)
        return fanout.requests
    }

    private func callFinished(_ call: Call, reason: CallEndReason, into fanout: inout Fanout) throws {
        let now = clock.nowMilliseconds
        var data: [UInt8]?
        try call.forEachInvolved { userID in
            fanout.android(try devices.devices(of: userID), kind: PushKind.callFinished, ttl: .oneMinute) {
                if let data { return data }
                let built = PoolsePayloads.finished(call: call, reason: reason, sentAt: now)
                data = built
                return built
            }
        }
    }

    /// "Sent when a call ends to each person rung who never joined (at the start, or added later
    /// with "Add people"), except people who declined. People whose phone refused the ring
    /// because they were on another call (busy) do get it. Rooms never produce one." Off when
    /// the workspace's Missed-call notifications setting is off.
    /// iOS: alert to the APNs token, expires after 24 hours, `apns-collapse-id: missed-<call_id>`.
    /// Android: FCM ttl 86400s.
    public func missedCall(_ call: Call) throws -> [PushRequest] {
        var fanout = Fanout()
        try missedCall(call, into: &fanout)
        return fanout.requests
    }

    private func missedCall(_ call: Call, into fanout: inout Fanout) throws {
        guard call.kind == .call, settings.missedCalls else { return }
        let now = clock.nowMilliseconds
        let headers = APNSHeaders.make(
            pushType: .alert, topic: app.iosBundleID, priority: .immediate,
            expiration: APNSHeaders.oneDayFrom(nowMilliseconds: now), collapseID: "missed-" + call.id)
        var apnsBody: [UInt8]?
        var fcmData: [UInt8]?
        for userID in call.everyoneRung where call.missed(userID) {
            let userDevices = try devices.devices(of: userID)
            fanout.apple(userDevices, tokenKind: .alert, kind: PushKind.missedCall, headers: headers) {
                if let apnsBody { return apnsBody }
                let built = PoolsePayloads.missedAPNS(call: call, sentAt: now)
                apnsBody = built
                return built
            }
            fanout.android(userDevices, kind: PushKind.missedCall, ttl: .oneDay) {
                if let fcmData { return fcmData }
                let built = PoolsePayloads.missedFCMData(call: call, sentAt: now)
                fcmData = built
                return built
            }
        }
    }

    /// Everything a call's end sends: `ring_ended` to phones still ringing, `finished` to
    /// everyone involved, and missed-call notifications.
    public func callEnded(_ call: Call, reason: CallEndReason) throws -> [PushRequest] {
        // One list grown once, not three joined (a 100,000-person call's end is 150,000 pushes).
        var fanout = Fanout()
        try ringEnded(call, stop: .callEnded(reason), into: &fanout)
        try callFinished(call, reason: reason, into: &fanout)
        try missedCall(call, into: &fanout)
        return fanout.requests
    }

    // MARK: Messages

    /// The members a text message notifies: "every member except the sender, minus members who
    /// muted the conversation, unless the message mentions them. If the workspace's Group
    /// conversations setting is Only @mentions, a group conversation notifies only the people
    /// mentioned. Direct conversations always notify."
    public func messageRecipients(_ message: Message, in conversation: Conversation) -> [String] {
        guard settings.chatNotifications, message.kind == .text else { return [] }
        let onlyMentions = conversation.isGroup && settings.groupConversations == .onlyMentions
        return unique(conversation.members).filter { userID in
            guard userID != message.sender.id else { return false }
            let mentioned = message.mentions(userID)
            if onlyMentions && !mentioned { return false }
            return mentioned || !conversation.hasMuted(userID)
        }
    }

    /// "sent when a text message is sent and the workspace has Send chat notifications on.
    /// custom and system messages never send one." iOS: alert to the APNs token,
    /// `apns-collapse-id: <message_id>`, expires after 24 hours. Android: FCM ttl 86400s.
    public func messageSent(_ message: Message, in conversation: Conversation, unread: some UnreadCounter) throws -> [PushRequest] {
        let recipients = messageRecipients(message, in: conversation)
        guard !recipients.isEmpty else { return [] }
        let now = clock.nowMilliseconds
        let headers = APNSHeaders.make(
            pushType: .alert, topic: app.iosBundleID, priority: .immediate,
            expiration: APNSHeaders.oneDayFrom(nowMilliseconds: now), collapseID: message.id)
        var fanout = Fanout()
        for userID in recipients {
            let userDevices = try devices.devices(of: userID)
            guard !userDevices.isEmpty else { continue }
            let notice = PoolsePayloads.MessageNotice(
                message: message, conversation: conversation, mentioned: message.mentions(userID),
                unreadTotal: unread.unreadTotal(of: userID),
                replyGrant: grants.replyGrant(conversationID: conversation.id, userID: userID),
                preview: settings.preview)
            fanout.apple(userDevices, tokenKind: .alert, kind: PushKind.newMessage, headers: headers) {
                PoolsePayloads.messageAPNS(notice)
            }
            fanout.android(userDevices, kind: PushKind.newMessage, ttl: .oneDay) {
                PoolsePayloads.messageFCMData(notice)
            }
        }
        return fanout.requests
    }

    /// "Sent to the reader's own devices when their read cursor moves forward past unread
    /// messages". iOS: background push to the APNs token, priority 5. Android: FCM ttl 86400s.
    public func readCursorMoved(_ move: ReadCursorMove) throws -> [PushRequest] {
        guard move.movesPastUnread else { return [] }
        let headers = APNSHeaders.make(pushType: .background, topic: app.iosBundleID, priority: .powerConsiderate)
        let readerDevices = try devices.devices(of: move.readerID)
        var fanout = Fanout()
        fanout.apple(readerDevices, tokenKind: .alert, kind: PushKind.conversationRead, headers: headers) {
            PoolsePayloads.readAPNS(conversationID: move.conversationID, unreadTotal: move.unreadTotal)
        }
        fanout.android(readerDevices, kind: PushKind.conversationRead, ttl: .oneDay) {
            PoolsePayloads.readFCMData(conversationID: move.conversationID, unreadTotal: move.unreadTotal)
        }
        return fanout.requests
    }
}

/// `ids` without repeats, first occurrence kept.
func unique(_ ids: [String]) -> [String] {
    var seen = Set<String>()
    seen.reserveCapacity(ids.count)
    return ids.filter { seen.insert($0).inserted }
}
