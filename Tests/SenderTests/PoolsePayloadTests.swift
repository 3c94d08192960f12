import JSON
import PushModel
import Testing
@testable import Sender

// The poolse payloads, compared as JSON values (key order free, 1 == 1.0, "1" != 1, true != 1)
// with the examples of the poolse seed ("Push payloads"). Seed ids are kept verbatim ("4a69…").

func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser.parse(bytes) }
func json(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

/// The `data` map of an FCM v1 message body.
func fcmData(_ push: PushRequest) throws -> JSONValue {
    try #require(try json(push.body)["message"]?["data"])
}

func rules(at now: Int64, _ settings: WorkspaceSettings = .init()) -> PoolseRules {
    var rules = Seed.rules(settings)
    rules.clock = .fixed(milliseconds: now)
    return rules
}

/// The one push of `kind` to `token`.
func push(_ pushes: [PushRequest], to token: String) throws -> PushRequest {
    try #require(pushes.first { $0.device.token == token })
}

// MARK: Ring

@Suite("poolse payloads: ring")
struct RingPayloadTests {
    static let seedRing = #"""
    {
      "cv": "1",
      "type": "call",
      "event": "ring",
      "call_id": "4a69…",
      "conversation_id": "6f1c…",
      "conversation_name": "Engineering",
      "caller_user_id": "2b7e…",
      "caller_external_id": "acme-alice",
      "caller_name": "Alice",
      "media": "video",
      "has_video": true,
      "ring_deadline": 1793952045000,
      "sent_at": 1793952000000,
      "grant": "eyJhbGciOi…"
    }
    """#

    @Test("iOS ring body is the seed's ring example: \"On iOS, numbers stay numbers.\"")
    func iosRing() throws {
        let pushes = try rules(at: 1_793_952_000_000).callPlaced(Seed.call())
        #expect(try json(push(pushes, to: "voip-bob").body) == json(Self.seedRing))
    }

    @Test("Android ring: \"FCM turns every value into a string: numbers arrive as \\\"1793952000000\\\", flags as \\\"0\\\" / \\\"1\\\".\"")
    func androidRingData() throws {
        let pushes = try rules(at: 1_793_952_000_000).callPlaced(Seed.call())
        let expected = try json(#"""
        {"cv":"1","type":"call","event":"ring","call_id":"4a69…","conversation_id":"6f1c…",
         "conversation_name":"Engineering","caller_user_id":"2b7e…","caller_external_id":"acme-alice",
         "caller_name":"Alice","media":"video","has_video":"1","ring_deadline":"1793952045000",
         "sent_at":"1793952000000","grant":"eyJhbGciOi…"}
        """#)
        #expect(try fcmData(push(pushes, to: "fcm-bob")) == expected)
    }

    @Test("An audio ring says has_video false / \"0\"")
    func audioRingFlag() throws {
        let pushes = try rules(at: 1_793_952_000_000).callPlaced(Seed.call(media: .audio))
        #expect(try json(push(pushes, to: "voip-bob").body)["has_video"] == false)
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["has_video"] == "0")
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["media"] == "audio")
    }

    @Test("\"Android pushes are FCM data messages with android.priority: \\\"HIGH\\\". There is no notification block\"; ring \"ttl: 60s\"")
    func androidEnvelope() throws {
        let pushes = try rules(at: 1_793_952_000_000).callPlaced(Seed.call())
        let body = try json(push(pushes, to: "fcm-bob-2").body)
        let message = try #require(body["message"]?.objectValue)
        #expect(Set(message.keys) == ["token", "data", "android"])
        #expect(message["token"] == "fcm-bob-2")
        #expect(message["android"] == ["priority": "HIGH", "ttl": "60s"])
        #expect(body.objectValue?.keys == ["message"])
    }
}

// MARK: Ring ended and finished

@Suite("poolse payloads: ring ended and finished")
struct CallEventPayloadTests {
    @Test("ring_ended data is the seed example; \"FCM ttl: 60s\"")
    func ringEnded() throws {
        let pushes = try rules(at: 1_793_952_006_000).ringEnded(
            Seed.call(), stop: .answeredElsewhere(userID: "bob", deviceToken: "voip-bob"))
        let expected = try json(#"""
        {
          "cv": "1",
          "type": "call_event",
          "event": "ring_ended",
          "call_id": "4a69…",
          "conversation_id": "6f1c…",
          "reason": "answered_elsewhere",
          "sent_at": "1793952006000"
        }
        """#)
        let first = try push(pushes, to: "fcm-bob")
        #expect(try fcmData(first) == expected)
        #expect(try json(first.body)["message"]?["android"] == ["priority": "HIGH", "ttl": "60s"])
    }

    @Test("\"reason is one of answered_elsewhere, declined, cancelled (the caller hung up), timeout (rang out) or finished.\"")
    func ringEndedReasons() throws {
        #expect(RingEndedReason.allCases.map(\.rawValue) == ["answered_elsewhere", "declined", "cancelled", "timeout", "finished"])
        let pushes = try rules(at: 1).ringEnded(Seed.call(), stop: .callEnded(.cancelled))
        #expect(try fcmData(push(pushes, to: "fcm-carol"))["reason"] == "cancelled")
    }

    @Test("finished data is the seed example; \"FCM ttl: 60s\"")
    func finished() throws {
        let pushes = try rules(at: 1_793_952_265_000).callFinished(Seed.call(), reason: .finished)
        let expected = try json(#"""
        {
          "cv": "1",
          "type": "call_event",
          "event": "finished",
          "call_id": "4a69…",
          "conversation_id": "6f1c…",
          "reason": "finished",
          "sent_at": "1793952265000"
        }
        """#)
        let caller = try push(pushes, to: "fcm-2b7e…")
        #expect(try fcmData(caller) == expected)
        #expect(try json(caller.body)["message"]?["android"]?["ttl"] == "60s")
    }

    @Test("\"reason is finished, cancelled, no_answer, declined_all or busy_all\"")
    func finishedReasons() throws {
        #expect(CallEndReason.allCases.map(\.rawValue) == ["finished", "cancelled", "no_answer", "declined_all", "busy_all"])
        let pushes = try rules(at: 1).callFinished(Seed.call(), reason: .declinedAll)
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["reason"] == "declined_all")
    }
}

// MARK: Missed call

@Suite("poolse payloads: missed call")
struct MissedCallPayloadTests {
    static let now: Int64 = 1_793_952_045_000

    static func directAudioCall() -> Call { Seed.call(Seed.direct, media: .audio) }

    @Test("Android missed call is the seed example; \"Android (FCM, ttl: 86400s)\"")
    func android() throws {
        let pushes = try rules(at: Self.now).missedCall(Self.directAudioCall())
        let expected = try json(#"""
        {
          "cv": "1",
          "type": "call_event",
          "event": "missed",
          "call_id": "4a69…",
          "conversation_id": "6f1c…",
          "conversation_name": "",
          "caller_user_id": "2b7e…",
          "caller_name": "Alice",
          "media": "audio",
          "title": "Alice",
          "body": "Missed voice call",
          "sent_at": "1793952045000"
        }
        """#)
        let android = try push(pushes, to: "fcm-bob")
        #expect(try fcmData(android) == expected)
        #expect(try json(android.body)["message"]?["android"] == ["priority": "HIGH", "ttl": "86400s"])
    }

    @Test("iOS missed call is the seed example: \"On iOS type is \\\"call_missed\\\", not \\\"call_event\\\".\"")
    func ios() throws {
        let pushes = try rules(at: Self.now).missedCall(Self.directAudioCall())
        let expected = try json(#"""
        {
          "aps": {
            "alert": { "title": "Alice", "body": "Missed voice call" },
            "sound": "default",
            "category": "poolse_missed_call",
            "thread-id": "6f1c…"
          },
          "cv": "1",
          "type": "call_missed",
          "event": "missed",
          "call_id": "4a69…",
          "conversation_id": "6f1c…",
          "conversation_name": "",
          "caller_user_id": "2b7e…",
          "caller_name": "Alice",
          "media": "audio",
          "sent_at": 1793952045000,
          "body": {
            "type": "call_missed",
            "call_id": "4a69…",
            "conversation_id": "6f1c…",
            "media": "audio",
            "caller_user_id": "2b7e…"
          }
        }
        """#)
        #expect(try json(push(pushes, to: "apns-bob").body) == expected)
    }

    @Test("\"In a group, title is the conversation name and body reads \\\"Missed video call from Alice\\\".\"")
    func groupText() throws {
        let pushes = try rules(at: Self.now).missedCall(Seed.call(media: .video))
        let ios = try json(push(pushes, to: "apns-bob").body)
        #expect(ios["aps"]?["alert"] == ["title": "Engineering", "body": "Missed video call from Alice"])
        #expect(ios["conversation_name"] == "Engineering")
        let android = try fcmData(push(pushes, to: "fcm-bob"))
        #expect(android["title"] == "Engineering")
        #expect(android["body"] == "Missed video call from Alice")
    }

    @Test("\"Otherwise title is the caller's name and body is \\\"Missed voice call\\\" or \\\"Missed video call\\\".\"")
    func directText() {
        #expect(PoolsePayloads.missedCallText(call: Seed.call(Seed.direct, media: .audio)) == ("Alice", "Missed voice call"))
        #expect(PoolsePayloads.missedCallText(call: Seed.call(Seed.direct, media: .video)) == ("Alice", "Missed video call"))
        let unnamedGroup = Conversation(id: "g", kind: .group, members: [Seed.alice.id, "bob"])
        #expect(PoolsePayloads.missedCallText(call: Seed.call(unnamedGroup, media: .audio)) == ("Alice", "Missed voice call"))
    }
}

// MARK: New message

@Suite("poolse payloads: new message")
struct NewMessagePayloadTests {
    static let seedAndroid = #"""
    {
      "cv": "1",
      "type": "message",
      "event": "new",
      "message_id": "8d0e…",
      "conversation_id": "6f1c…",
      "conversation_name": "Engineering",
      "group": "1",
      "sender_user_id": "2b7e…",
      "sender_external_id": "acme-alice",
      "sender_name": "Alice",
      "text": "ship it",
      "mentioned": "0",
      "sent_at": "1793952843112",
      "unread_total": "4",
      "reply_grant": "eyJhbGciOi…"
    }
    """#

    static func send(_ settings: WorkspaceSettings = .init(), in conversation: Conversation = Seed.group,
                     mentions: Set<String> = []) throws -> [PushRequest] {
        try rules(at: Seed.now, settings).messageSent(
            Seed.message(mentions: mentions), in: conversation, unread: UnreadTotals(["bob": 4]))
    }

    @Test("Android new message is the seed example; \"Android (FCM, ttl: 86400s)\"")
    func android() throws {
        let android = try push(Self.send(), to: "fcm-bob")
        #expect(try fcmData(android) == json(Self.seedAndroid))
        #expect(try json(android.body)["message"]?["android"] == ["priority": "HIGH", "ttl": "86400s"])
    }

    @Test("iOS: \"The same fields at the top level (numbers unquoted), plus\" aps and body, as the seed shows")
    func ios() throws {
        guard case .object(var expected) = try json(Self.seedAndroid) else { Issue.record("not an object"); return }
        expected["sent_at"] = 1_793_952_843_112
        expected["unread_total"] = 4
        expected["aps"] = try json(#"""
        {
          "alert": { "title": "Engineering", "body": "Alice: ship it" },
          "sound": "default",
          "badge": 4,
          "thread-id": "6f1c…",
          "category": "poolse_message",
          "mutable-content": 1,
          "summary-arg": "Alice"
        }
        """#)
        expected["body"] = try json(#"""
        {
          "type": "message",
          "event": "new",
          "conversation_id": "6f1c…",
          "message_id": "8d0e…",
          "sender_user_id": "2b7e…",
          "group": "1"
        }
        """#)
        #expect(try json(push(Self.send(), to: "apns-bob").body) == .object(expected))
    }

    @Test("\"mentioned\" is \"1\" for a mentioned recipient, and badge/unread_total follow each recipient's count")
    func mentionedAndBadge() throws {
        let pushes = try Self.send(mentions: ["carol"])
        #expect(try fcmData(push(pushes, to: "fcm-carol"))["mentioned"] == "1")
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["mentioned"] == "0")
        #expect(try json(push(pushes, to: "apns-carol").body)["aps"]?["badge"] == 0)
        #expect(try json(push(pushes, to: "apns-bob").body)["aps"]?["badge"] == 4)
    }

    @Test("Preview: \"hidden: no title, and the body is \\\"New message\\\".\"")
    func hiddenPreview() throws {
        let pushes = try Self.send(WorkspaceSettings(preview: .hidden))
        let ios = try json(push(pushes, to: "apns-bob").body)
        #expect(ios["aps"]?["alert"] == ["body": "New message"])
        // The text itself is not carried either: the Android data map has no other way to say "hide".
        #expect(ios["text"] == nil)
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["text"] == nil)
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["message_id"] == "8d0e…")
    }

    @Test("Preview: \"A group with a name: the conversation name as title, and \\\"Sender: text\\\" as body.\"")
    func namedGroupPreview() throws {
        let ios = try json(push(Self.send(), to: "apns-bob").body)
        #expect(ios["aps"]?["alert"] == ["title": "Engineering", "body": "Alice: ship it"])
    }

    @Test("Preview: \"Anything else: the sender's name as title, and the text as body.\"", arguments: [
        Seed.direct,
        Conversation(id: "6f1c…", kind: .group, name: nil, members: [Seed.alice.id, "bob"]),
        Conversation(id: "6f1c…", kind: .group, name: "", members: [Seed.alice.id, "bob"]),
    ])
    func otherPreview(conversation: Conversation) throws {
        let pushes = try Self.send(in: conversation)
        let ios = try json(push(pushes, to: "apns-bob").body)
        #expect(ios["aps"]?["alert"] == ["title": "Alice", "body": "ship it"])
        #expect(ios["conversation_name"] == "")
        #expect(ios["group"] == (conversation.isGroup ? "1" : "0"))
        #expect(ios["body"]?["group"] == (conversation.isGroup ? "1" : "0"))
    }
}

// MARK: Conversation read

@Suite("poolse payloads: conversation read")
struct ConversationReadPayloadTests {
    static let move = ReadCursorMove(readerID: "bob", conversationID: "6f1c…", previousPosition: 3, newPosition: 7,
                                     unreadMessagesPassed: 4, unreadTotal: 0)

    @Test("Android read is the seed example; \"Android (FCM, ttl: 86400s)\"")
    func android() throws {
        let android = try push(Seed.rules().readCursorMoved(Self.move), to: "fcm-bob")
        let expected = try json(#"""
        {
          "cv": "1",
          "type": "message",
          "event": "read",
          "conversation_id": "6f1c…",
          "unread_total": "0"
        }
        """#)
        #expect(try fcmData(android) == expected)
        #expect(try json(android.body)["message"]?["android"] == ["priority": "HIGH", "ttl": "86400s"])
    }

    @Test("iOS read is the seed example: aps holds content-available only, type \"message_read\"")
    func ios() throws {
        let expected = try json(#"""
        {
          "aps": { "content-available": 1 },
          "cv": "1",
          "type": "message_read",
          "event": "read",
          "conversation_id": "6f1c…",
          "unread_total": 0
        }
        """#)
        #expect(try json(push(Seed.rules().readCursorMoved(Self.move), to: "apns-bob").body) == expected)
    }
}

// MARK: Every payload

@Suite("poolse payloads: common rules")
struct CommonPayloadTests {
    /// One of every poolse push, on every platform it goes to.
    static func everyPush() throws -> [PushRequest] {
        let rules = Seed.rules()
        var call = Seed.call()
        call.added = ["dave"]
        var pushes = try rules.callPlaced(call)
        pushes += try rules.ringEnded(call, stop: .answeredElsewhere(userID: "bob", deviceToken: "fcm-bob"))
        pushes += try rules.callEnded(call, reason: .noAnswer)
        pushes += try rules.messageSent(Seed.message(), in: Seed.group, unread: UnreadTotals(["bob": 2]))
        pushes += try rules.readCursorMoved(ConversationReadPayloadTests.move)
        return pushes
    }

    @Test("\"Every payload has cv: \\\"1\\\" (the payload version) and a type.\"")
    func cvAndType() throws {
        let pushes = try Self.everyPush()
        #expect(Set(pushes.map(\.kind)) == [PushKind.ring, PushKind.ringEnded, PushKind.callFinished,
                                            PushKind.missedCall, PushKind.newMessage, PushKind.conversationRead])
        for push in pushes {
            let payload = try push.transport == .fcm ? fcmData(push) : json(push.body)
            #expect(payload["cv"] == "1", "\(push.kind) on \(push.device.token)")
            #expect(payload["type"]?.stringValue != nil, "\(push.kind) on \(push.device.token)")
            #expect(payload["event"]?.stringValue != nil, "\(push.kind) on \(push.device.token)")
        }
    }

    @Test("\"FCM turns every value into a string\": every FCM data value is a string, and no push has a notification block")
    func fcmDataIsStrings() throws {
        let android = try Self.everyPush().filter { $0.transport == .fcm }
        #expect(!android.isEmpty)
        for push in android {
            let message = try #require(try json(push.body)["message"])
            #expect(message["notification"] == nil)
            #expect(message["android"]?["priority"] == "HIGH")
            for (key, value) in try #require(message["data"]?.objectValue) {
                #expect(value.stringValue != nil, "\(push.kind).\(key) is \(value.typeName)")
            }
        }
    }

    @Test("Text is escaped: quotes, backslashes, newlines, control characters and emoji survive the round trip")
    func escaping() throws {
        let text = "say \"hi\" \\ now\n\t\u{01}\u{7F} é 😀"
        let pushes = try Seed.rules().messageSent(Seed.message(text), in: Seed.direct, unread: UnreadTotals())
        #expect(try fcmData(push(pushes, to: "fcm-bob"))["text"] == .string(text))
        #expect(try json(push(pushes, to: "apns-bob").body)["aps"]?["alert"]?["body"] == .string(text))
    }

    @Test("A very long message is clipped on a character boundary so the payload stays under APNs' 4096 bytes")
    func longMessageClipped() throws {
        let text = String(repeating: "é😀a", count: 3000)
        let pushes = try Seed.rules().messageSent(Seed.message(text), in: Seed.group, unread: UnreadTotals())
        let ios = try push(pushes, to: "apns-bob")
        #expect(ios.body.count <= APNSPushType.alert.maxPayloadBytes)
        let clipped = try #require(try json(ios.body)["text"]?.stringValue)
        #expect(clipped.hasSuffix("…"))
        #expect(text.hasPrefix(String(clipped.dropLast())))
        #expect(clipped.utf8.count <= PreviewText.maxUTF8Bytes)
        #expect(PreviewText.clip("short") == "short")
    }

    @Test("A collapse id longer than APNs' 64 bytes is left out rather than getting the push rejected")
    func longCollapseIDDropped() {
        let headers = APNSHeaders.make(pushType: .alert, topic: "t", priority: .immediate,
                                       collapseID: String(repeating: "x", count: 65))
        #expect(!headers.contains { $0.name == "apns-collapse-id" })
        let ok = APNSHeaders.make(pushType: .alert, topic: "t", priority: .immediate,
                                  collapseID: String(repeating: "x", count: 64))
        #expect(ok.contains { $0.name == "apns-collapse-id" })
    }

    @Test("SenderWorkload builds 2 pushes per other member for a ring and a message")
    func workload() throws {
        let workload = SenderWorkload(members: 50)
        #expect(try workload.ringFanout().count == 98)
        #expect(try workload.messageFanout().count == 98)
        #expect(try SenderWorkload.buildRingFanout(members: 10).count == 18)
        // ring_ended + finished (caller too) on Android, missed on both platforms.
        #expect(try workload.callEndedFanout().count == 49 + 50 + 98)
    }
}
