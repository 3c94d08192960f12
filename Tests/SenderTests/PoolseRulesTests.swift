import PushModel
import Testing
@testable import Sender

// Who gets which poolse push. Each test quotes the poolse seed sentence it checks.

// MARK: Fixtures shared by the Sender tests (seed ids, so payloads match the seed examples).

enum Seed {
    static let now: Int64 = 1_793_952_000_000
    static let bundle = "com.acme.loop"
    static let app = AppConfig(iosBundleID: bundle, fcmProjectID: "acme-loop")
    static let alice = User(id: "2b7e…", externalID: "acme-alice", displayName: "Alice")
    static let bob = User(id: "bob", externalID: "acme-bob", displayName: "Bob")
    static let carol = User(id: "carol", externalID: "acme-carol", displayName: "Carol")
    static let dave = User(id: "dave", externalID: "acme-dave", displayName: "Dave")
    static let grant = "eyJhbGciOi…"

    static let group = Conversation(id: "6f1c…", kind: .group, name: "Engineering",
                                    members: [alice.id, bob.id, carol.id])
    static let direct = Conversation(id: "6f1c…", kind: .direct, members: [alice.id, bob.id])

    /// Every user has an iOS PushKit token, an iOS APNs token and an Android token; Bob has a
    /// second Android phone.
    static func store() -> InMemoryDeviceStore {
        let store = InMemoryDeviceStore()
        for user in [alice, bob, carol, dave] {
            store.register(Device(userID: user.id, platform: .ios, kind: .voip, token: "voip-\(user.id)"))
            store.register(Device(userID: user.id, platform: .ios, kind: .alert, token: "apns-\(user.id)"))
            store.register(Device(userID: user.id, platform: .android, token: "fcm-\(user.id)"))
        }
        store.register(Device(userID: bob.id, platform: .android, token: "fcm-bob-2"))
        return store
    }

    static func rules(_ settings: WorkspaceSettings = .init(), store: InMemoryDeviceStore = store()) -> PoolseRules {
        PoolseRules(app: app, settings: settings, devices: store,
                    grants: FixedGrants(call: grant, reply: grant), clock: .fixed(milliseconds: now))
    }

    static func call(_ conversation: Conversation = group, kind: CallKind = .call, media: CallMedia = .video) -> Call {
        var call = Call.placed(id: "4a69…", conversation: conversation, caller: alice, media: media,
                               ringDeadline: 1_793_952_045_000)
        call.kind = kind
        if kind == .room { call.rung = [] }
        return call
    }

    static func message(_ text: String = "ship it", kind: MessageKind = .text, mentions: Set<String> = []) -> Message {
        Message(id: "8d0e…", conversationID: group.id, sender: alice, kind: kind, text: text,
                mentions: mentions, sentAt: 1_793_952_843_112)
    }
}

extension PushRequest {
    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

/// Tokens the pushes go to, sorted, for order-free comparison.
func tokens(_ requests: [PushRequest]) -> [String] { requests.map(\.device.token).sorted() }

/// Users the pushes go to, without repeats, sorted.
func users(_ requests: [PushRequest]) -> [String] { Set(requests.map(\.device.userID)).sorted() }

// MARK: Ring

@Suite("poolse: ring")
struct RingRulesTests {
    @Test("\"Sent to every registered device of each person rung: everyone else in the conversation when a call is placed\"")
    func ringsEveryoneElse() throws {
        let pushes = try Seed.rules().callPlaced(Seed.call())
        #expect(users(pushes) == ["bob", "carol"])
        #expect(tokens(pushes) == ["fcm-bob", "fcm-bob-2", "fcm-carol", "voip-bob", "voip-carol"])
        #expect(pushes.allSatisfy { $0.kind == PushKind.ring })
    }

    @Test("\"or the people added with \\\"Add people\\\"\"")
    func ringsPeopleAdded() throws {
        let pushes = try Seed.rules().peopleAdded([Seed.dave.id], to: Seed.call())
        #expect(tokens(pushes) == ["fcm-dave", "voip-dave"])
    }

    @Test("Adding someone already in the call or the caller rings nobody")
    func addingJoinedOrCallerRingsNobody() throws {
        var call = Seed.call()
        call.joined = [Seed.bob.id]
        let pushes = try Seed.rules().peopleAdded([Seed.bob.id, Seed.alice.id], to: call)
        #expect(pushes.isEmpty)
    }

    @Test("\"Rooms never ring.\"")
    func roomsNeverRing() throws {
        var room = Seed.call(kind: .room)
        room.rung = [Seed.bob.id]
        #expect(try Seed.rules().callPlaced(room).isEmpty)
        #expect(try Seed.rules().peopleAdded([Seed.dave.id], to: room).isEmpty)
    }

    @Test("\"On iOS it goes to the PushKit token only (apns-push-type: voip, priority 10, apns-expiration: 0, topic <bundle id>.voip)\"")
    func iosRingIsVoIP() throws {
        let ios = try Seed.rules().callPlaced(Seed.call()).filter { $0.device.platform == .ios }
        #expect(tokens(ios) == ["voip-bob", "voip-carol"])
        for push in ios {
            #expect(push.device.kind == .voip)
            #expect(push.header("apns-push-type") == "voip")
            #expect(push.header("apns-priority") == "10")
            #expect(push.header("apns-expiration") == "0")
            #expect(push.header("apns-topic") == Seed.bundle + ".voip")
            #expect(push.header("apns-collapse-id") == nil)
        }
    }

    @Test("\"VoIP pushes go to the PushKit token ... Everything else goes to the regular APNs token\": no voip token, no iOS ring")
    func noVoIPTokenNoIOSRing() throws {
        let store = InMemoryDeviceStore([Device(userID: "bob", platform: .ios, kind: .alert, token: "apns-bob")])
        #expect(try Seed.rules(store: store).callPlaced(Seed.call()).isEmpty)
    }

    @Test("\"A device whose token Apple or Google reports as gone is deleted. It gets nothing until the app registers it again.\"")
    func deletedDeviceGetsNothingUntilRegistered() throws {
        let store = Seed.store()
        let rules = Seed.rules(store: store)
        #expect(store.remove(token: "voip-bob"))
        #expect(!tokens(try rules.callPlaced(Seed.call())).contains("voip-bob"))
        store.register(Device(userID: "bob", platform: .ios, kind: .voip, token: "voip-bob"))
        #expect(tokens(try rules.callPlaced(Seed.call())).contains("voip-bob"))
    }
}

// MARK: Ring ended

@Suite("poolse: ring ended")
struct RingEndedRulesTests {
    @Test("\"they answer on another device (answered_elsewhere); the device that answered is skipped\"")
    func answeredElsewhereSkipsAnsweringDevice() throws {
        let pushes = try Seed.rules().ringEnded(Seed.call(), stop: .answeredElsewhere(userID: "bob", deviceToken: "fcm-bob"))
        #expect(tokens(pushes) == ["fcm-bob-2"])
        #expect(pushes.allSatisfy { $0.kind == PushKind.ringEnded })
    }

    @Test("Answering on iOS stops every Android phone of that user")
    func answeredOnIOSStopsAllAndroid() throws {
        let pushes = try Seed.rules().ringEnded(Seed.call(), stop: .answeredElsewhere(userID: "bob", deviceToken: "voip-bob"))
        #expect(tokens(pushes) == ["fcm-bob", "fcm-bob-2"])
    }

    @Test("\"they decline on another device (declined)\"")
    func declinedOnAnotherDevice() throws {
        let pushes = try Seed.rules().ringEnded(Seed.call(), stop: .declined(userID: "bob", deviceToken: "fcm-bob-2"))
        #expect(tokens(pushes) == ["fcm-bob"])
        #expect(RingStop.declined(userID: "bob", deviceToken: nil).reason == .declined)
    }

    @Test("\"the call ends while their phone is still ringing (cancelled, timeout or finished)\"", arguments: [
        (CallEndReason.cancelled, RingEndedReason.cancelled),
        (.noAnswer, .timeout),
        (.finished, .finished),
    ])
    func callEndsWhileRinging(end: CallEndReason, expected: RingEndedReason) throws {
        var call = Seed.call()
        call.added = [Seed.dave.id]
        call.joined = [Seed.carol.id]
        let pushes = try Seed.rules().ringEnded(call, stop: .callEnded(end))
        // Carol joined, so her phone is no longer ringing; Bob and the added Dave still are.
        #expect(users(pushes) == ["bob", "dave"])
        #expect(RingStop.callEnded(end).reason == expected)
    }

    @Test("Declined and busy phones are not ringing when the call ends")
    func declinedAndBusyAreNotRinging() throws {
        var call = Seed.call()
        call.declined = [Seed.bob.id]
        call.busy = [Seed.carol.id]
        #expect(try Seed.rules().ringEnded(call, stop: .callEnded(.cancelled)).isEmpty)
    }

    @Test("\"Not sent to iOS.\"")
    func notSentToIOS() throws {
        let pushes = try Seed.rules().ringEnded(Seed.call(), stop: .callEnded(.cancelled))
        #expect(!pushes.isEmpty)
        #expect(pushes.allSatisfy { $0.device.platform == .android })
    }
}

// MARK: Call finished

@Suite("poolse: call finished")
struct CallFinishedRulesTests {
    @Test("\"Sent when a call or room ends, to the Android devices of everyone involved: the caller, everyone rung, and everyone who joined.\"")
    func everyoneInvolvedOnAndroid() throws {
        var call = Seed.call(Conversation(id: "6f1c…", kind: .group, members: ["2b7e…", "bob"]))
        call.added = [Seed.carol.id]
        call.joined = [Seed.dave.id] // joined without being rung (e.g. from the conversation)
        let pushes = try Seed.rules().callFinished(call, reason: .finished)
        #expect(tokens(pushes) == ["fcm-2b7e…", "fcm-bob", "fcm-bob-2", "fcm-carol", "fcm-dave"])
        #expect(pushes.allSatisfy { $0.kind == PushKind.callFinished && $0.device.platform == .android })
    }

    @Test("\"Sent when a call or room ends\": a room's joiners and its starter get it")
    func roomEnds() throws {
        var room = Seed.call(kind: .room)
        room.joined = [Seed.bob.id]
        let pushes = try Seed.rules().callFinished(room, reason: .finished)
        #expect(users(pushes) == ["2b7e…", "bob"])
    }

    @Test("callEnded sends ring_ended to phones still ringing, finished to everyone, missed to people rung")
    func callEndedCombines() throws {
        var call = Seed.call()
        call.joined = [Seed.bob.id]
        let pushes = try Seed.rules().callEnded(call, reason: .finished)
        #expect(users(pushes.filter { $0.kind == PushKind.ringEnded }) == ["carol"])
        #expect(users(pushes.filter { $0.kind == PushKind.callFinished }) == ["2b7e…", "bob", "carol"])
        #expect(users(pushes.filter { $0.kind == PushKind.missedCall }) == ["carol"])
    }
}

// MARK: Missed call

@Suite("poolse: missed call")
struct MissedCallRulesTests {
    @Test("\"Sent when a call ends to each person rung who never joined (at the start, or added later with \\\"Add people\\\")\"")
    func rungWhoNeverJoined() throws {
        var call = Seed.call()
        call.added = [Seed.dave.id]
        call.joined = [Seed.bob.id]
        let pushes = try Seed.rules().missedCall(call)
        #expect(users(pushes) == ["carol", "dave"])
        #expect(tokens(pushes) == ["apns-carol", "apns-dave", "fcm-carol", "fcm-dave"])
    }

    @Test("\"except people who declined\"")
    func notDecliners() throws {
        var call = Seed.call()
        call.declined = [Seed.bob.id]
        #expect(users(try Seed.rules().missedCall(call)) == ["carol"])
    }

    @Test("\"People whose phone refused the ring because they were on another call (busy) do get it.\"")
    func busyPeopleGetIt() throws {
        var call = Seed.call()
        call.busy = [Seed.bob.id, Seed.carol.id]
        #expect(users(try Seed.rules().missedCall(call)) == ["bob", "carol"])
    }

    @Test("\"Rooms never produce one.\"")
    func roomsNever() throws {
        var room = Seed.call(kind: .room)
        room.rung = [Seed.bob.id]
        #expect(try Seed.rules().missedCall(room).isEmpty)
        #expect(try Seed.rules().callEnded(room, reason: .finished).allSatisfy { $0.kind == PushKind.callFinished })
    }

    @Test("\"Turn it off with the dashboard's Missed-call notifications setting (missed_calls).\"")
    func settingOff() throws {
        let rules = Seed.rules(WorkspaceSettings(missedCalls: false))
        #expect(try rules.missedCall(Seed.call()).isEmpty)
        let ended = try rules.callEnded(Seed.call(), reason: .noAnswer)
        #expect(!ended.isEmpty) // finished still goes
        #expect(!ended.contains { $0.kind == PushKind.missedCall })
    }

    @Test("\"iOS (alert push to the APNs token, expires after 24 hours, apns-collapse-id: missed-<call_id>)\"")
    func iosHeaders() throws {
        let ios = try Seed.rules().missedCall(Seed.call()).filter { $0.device.platform == .ios }
        #expect(tokens(ios) == ["apns-bob", "apns-carol"])
        for push in ios {
            #expect(push.header("apns-push-type") == "alert")
            #expect(push.header("apns-topic") == Seed.bundle)
            #expect(push.header("apns-priority") == "10")
            #expect(push.header("apns-expiration") == String(Seed.now / 1000 + 86_400))
            #expect(push.header("apns-collapse-id") == "missed-4a69…")
        }
    }
}

// MARK: New message

@Suite("poolse: new message")
struct NewMessageRulesTests {
    @Test("\"sent when a text message is sent and the workspace has Send chat notifications on\"")
    func textWithNotificationsOn() throws {
        #expect(users(try Seed.rules().messageSent(Seed.message(), in: Seed.group, unread: UnreadTotals())) == ["bob", "carol"])
        let off = Seed.rules(WorkspaceSettings(chatNotifications: false))
        #expect(try off.messageSent(Seed.message(), in: Seed.group, unread: UnreadTotals()).isEmpty)
    }

    @Test("\"custom and system messages never send one.\"", arguments: [MessageKind.custom, .system])
    func customAndSystemNever(kind: MessageKind) throws {
        #expect(try Seed.rules().messageSent(Seed.message(kind: kind), in: Seed.group, unread: UnreadTotals()).isEmpty)
    }

    @Test("\"every member except the sender, minus members who muted the conversation, unless the message mentions them\"")
    func mutedOnlyWhenMentioned() throws {
        var group = Seed.group
        group.members.append(Seed.dave.id)
        group.mutedBy = [Seed.bob.id, Seed.carol.id]
        let rules = Seed.rules()
        #expect(users(try rules.messageSent(Seed.message(), in: group, unread: UnreadTotals())) == ["dave"])
        let mentioning = Seed.message(mentions: [Seed.carol.id])
        #expect(users(try rules.messageSent(mentioning, in: group, unread: UnreadTotals())) == ["carol", "dave"])
    }

    @Test("\"If the workspace's Group conversations setting is Only @mentions, a group conversation notifies only the people mentioned.\"")
    func onlyMentionsInGroups() throws {
        let rules = Seed.rules(WorkspaceSettings(groupConversations: .onlyMentions))
        #expect(try rules.messageSent(Seed.message(), in: Seed.group, unread: UnreadTotals()).isEmpty)
        let mentioning = Seed.message(mentions: [Seed.bob.id])
        #expect(users(try rules.messageSent(mentioning, in: Seed.group, unread: UnreadTotals())) == ["bob"])
    }

    @Test("\"Direct conversations always notify.\"")
    func directAlwaysNotifies() throws {
        let rules = Seed.rules(WorkspaceSettings(groupConversations: .onlyMentions))
        #expect(users(try rules.messageSent(Seed.message(), in: Seed.direct, unread: UnreadTotals())) == ["bob"])
    }

    @Test("The sender is never notified, even when mentioning themselves")
    func senderNeverNotified() throws {
        let pushes = try Seed.rules().messageSent(Seed.message(mentions: [Seed.alice.id]), in: Seed.group, unread: UnreadTotals())
        #expect(!pushes.isEmpty)
        #expect(!users(pushes).contains(Seed.alice.id))
    }

    @Test("\"iOS (alert push to the APNs token, apns-collapse-id: <message_id>, expires after 24 hours)\"")
    func iosHeaders() throws {
        let pushes = try Seed.rules().messageSent(Seed.message(), in: Seed.group, unread: UnreadTotals())
        let ios = pushes.filter { $0.device.platform == .ios }
        #expect(tokens(ios) == ["apns-bob", "apns-carol"])
        for push in ios {
            #expect(push.header("apns-push-type") == "alert")
            #expect(push.header("apns-topic") == Seed.bundle)
            #expect(push.header("apns-collapse-id") == "8d0e…")
            #expect(push.header("apns-expiration") == String(Seed.now / 1000 + 86_400))
        }
        #expect(tokens(pushes.filter { $0.device.platform == .android }) == ["fcm-bob", "fcm-bob-2", "fcm-carol"])
    }
}

// MARK: Conversation read

@Suite("poolse: conversation read")
struct ConversationReadRulesTests {
    static func move(from: Int64 = 10, to: Int64 = 14, passed: Int = 3) -> ReadCursorMove {
        ReadCursorMove(readerID: "bob", conversationID: "6f1c…", previousPosition: from, newPosition: to,
                       unreadMessagesPassed: passed, unreadTotal: 0)
    }

    @Test("\"Sent to the reader's own devices when their read cursor moves forward past unread messages\"")
    func readersOwnDevices() throws {
        let pushes = try Seed.rules().readCursorMoved(Self.move())
        #expect(tokens(pushes) == ["apns-bob", "fcm-bob", "fcm-bob-2"])
        #expect(pushes.allSatisfy { $0.kind == PushKind.conversationRead })
    }

    @Test("A cursor that does not move forward, or passes no unread message, sends nothing")
    func noMoveNoPush() throws {
        #expect(try Seed.rules().readCursorMoved(Self.move(from: 14, to: 14)).isEmpty)
        #expect(try Seed.rules().readCursorMoved(Self.move(from: 14, to: 10)).isEmpty)
        #expect(try Seed.rules().readCursorMoved(Self.move(passed: 0)).isEmpty)
    }

    @Test("\"iOS (background push to the APNs token, apns-push-type: background, priority 5)\"")
    func iosBackground() throws {
        let ios = try Seed.rules().readCursorMoved(Self.move()).filter { $0.device.platform == .ios }
        #expect(ios.count == 1)
        #expect(ios.first?.device.kind == .alert)
        #expect(ios.first?.header("apns-push-type") == "background")
        #expect(ios.first?.header("apns-priority") == "5")
        #expect(ios.first?.header("apns-topic") == Seed.bundle)
    }
}

// MARK: Who a call involves

@Suite("poolse: who a call rang, involved and missed")
struct CallPeopleTests {
    /// The lists as the seed words them, made the plain way: a set over everything.
    static func firstOfEach(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }
    }

    @Test("Each person is listed once, at their first place, whatever repeats in rung, added and joined")
    func eachPersonOnce() {
        var call = Call(id: "c", conversation: Seed.group, caller: Seed.alice, media: .audio,
                        rung: ["bob", "carol", "bob", Seed.alice.id, "erin", "carol"])
        #expect(call.rung == ["bob", "carol", Seed.alice.id, "erin"])
        #expect(call.everyoneRung == call.rung)
        call.added = ["dave", "bob", "dave", "frank"]
        call.joined = ["frank", "zoe", Seed.alice.id, "carol"]
        call.declined = ["erin"]
        let everyoneRung = Self.firstOfEach(["bob", "carol", Seed.alice.id, "erin", "dave", "bob", "dave", "frank"])
        #expect(call.everyoneRung == everyoneRung)
        #expect(call.everyoneInvolved == Self.firstOfEach([Seed.alice.id] + everyoneRung + call.joined.sorted()))
        #expect(call.everyoneInvolved == [Seed.alice.id, "bob", "carol", "erin", "dave", "frank", "zoe"])
        #expect(call.missedBy == ["bob", "dave"])
        #expect(call.stillRinging == ["bob", "dave"])
        call.rung.append("bob")
        #expect(call.rung == ["bob", "carol", Seed.alice.id, "erin"], "a repeat assigned later is dropped too")
    }
}
