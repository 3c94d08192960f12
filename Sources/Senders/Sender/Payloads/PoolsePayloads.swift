// poolse payloads, field for field as the poolse seed ("Push payloads") lists them.
// Every payload has cv "1", a type and (mostly) an event. iOS bodies keep JSON numbers; FCM data
// maps carry every value as a string. Each builder writes the fields once and is called with the
// encoding of the platform it serves.
import PushModel

public enum PoolsePayloads {
    /// "Every payload has cv: "1" (the payload version)".
    public static let payloadVersion = "1"

    // MARK: Ring

    /// The ring fields: the iOS VoIP body as is, or the Android data map.
    /// `has_video` is a JSON boolean on iOS (as the seed's ring example shows) and "1"/"0" on FCM.
    public static func ring(call: Call, grant: String, sentAt: Int64, encoding: PayloadEncoding) -> [UInt8] {
        var writer = PayloadWriter(capacity: 384 + grant.utf8.count)
        writer.beginObject()
        writer.string("cv", payloadVersion)
        writer.string("type", "call")
        writer.string("event", "ring")
        writer.string("call_id", call.id)
        writer.string("conversation_id", call.conversation.id)
        writer.string("conversation_name", call.conversation.wireName)
        writer.string("caller_user_id", call.caller.id)
        writer.string("caller_external_id", call.caller.externalID)
        writer.string("caller_name", call.caller.displayName)
        writer.string("media", call.media.rawValue)
        writer.flag("has_video", call.media == .video, encoding)
        writer.integer("ring_deadline", call.ringDeadline, encoding)
        writer.integer("sent_at", sentAt, encoding)
        writer.string("grant", grant)
        writer.endObject()
        return writer.bytes
    }

    // MARK: Ring ended and finished (Android only)

    /// `ring_ended` data map ("Not sent to iOS").
    public static func ringEnded(call: Call, reason: RingEndedReason, sentAt: Int64) -> [UInt8] {
        callEvent(event: "ring_ended", call: call, reason: reason.rawValue, sentAt: sentAt)
    }

    /// `finished` data map ("Not sent to iOS").
    public static func finished(call: Call, reason: CallEndReason, sentAt: Int64) -> [UInt8] {
        callEvent(event: "finished", call: call, reason: reason.rawValue, sentAt: sentAt)
    }

    private static func callEvent(event: String, call: Call, reason: String, sentAt: Int64) -> [UInt8] {
        var writer = PayloadWriter(capacity: 192)
        writer.beginObject()
        writer.string("cv", payloadVersion)
        writer.string("type", "call_event")
        writer.string("event", event)
        writer.string("call_id", call.id)
        writer.string("conversation_id", call.conversation.id)
        writer.string("reason", reason)
        writer.integer("sent_at", sentAt, .fcmData)
        writer.endObject()
        return writer.bytes
    }

    // MARK: Missed call

    /// The ready-to-show missed-call text:
    /// "In a group, title is the conversation name and body reads "Missed video call from Alice".
    /// Otherwise title is the caller's name and body is "Missed voice call" or "Missed video call"."
    /// A group without a name has no title to show, so it reads like a direct call.
    public static func missedCallText(call: Call) -> (title: String, body: String) {
        let what = "Missed " + call.media.spokenName + " call"
        if call.conversation.isGroup, let name = call.conversation.displayName {
            return (name, what + " from " + call.caller.displayName)
        }
        return (call.caller.displayName, what)
    }

    /// Android `missed` data map, with `title` and `body` ready to show.
    public static func missedFCMData(call: Call, sentAt: Int64) -> [UInt8] {
        let text = missedCallText(call: call)
        var writer = PayloadWriter(capacity: 384)
        writer.beginObject()
        writeMissedFields(&writer, call: call, type: "call_event", encoding: .fcmData, sentAt: sentAt) {
            $0.string("title", text.title)
            $0.string("body", text.body)
        }
        writer.endObject()
        return writer.bytes
    }

    /// iOS missed-call alert body. `type` is "call_missed", not "call_event", and the top-level
    /// `body` object repeats the routing keys "because expo-notifications reads a remote push's
    /// data from there".
    public static func missedAPNS(call: Call, sentAt: Int64) -> [UInt8] {
        let text = missedCallText(call: call)
        var writer = PayloadWriter(capacity: 640)
        writer.beginObject()
        writer.beginObject("aps")
        writer.alert(title: text.title, body: text.body)
        writer.string("sound", "default")
        writer.string("category", "poolse_missed_call")
        writer.string("thread-id", call.conversation.id)
        writer.endObject()
        writeMissedFields(&writer, call: call, type: "call_missed", encoding: .apns, sentAt: sentAt) { _ in }
        writer.beginObject("body")
        writer.string("type", "call_missed")
        writer.string("call_id", call.id)
        writer.string("conversation_id", call.conversation.id)
        writer.string("media", call.media.rawValue)
        writer.string("caller_user_id", call.caller.id)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    private static func writeMissedFields(
        _ writer: inout PayloadWriter, call: Call, type: String, encoding: PayloadEncoding, sentAt: Int64,
        text: (inout PayloadWriter) -> Void
    ) {
        writer.string("cv", payloadVersion)
        writer.string("type", type)
        writer.string("event", "missed")
        writer.string("call_id", call.id)
        writer.string("conversation_id", call.conversation.id)
        writer.string("conversation_name", call.conversation.wireName)
        writer.string("caller_user_id", call.caller.id)
        writer.string("caller_name", call.caller.displayName)
        writer.string("media", call.media.rawValue)
        text(&writer)
        writer.integer("sent_at", sentAt, encoding)
    }

    // MARK: New message

    /// What one recipient's new-message push says about the message.
    public struct MessageNotice: Sendable {
        public var message: Message
        public var conversation: Conversation
        public var mentioned: Bool
        public var unreadTotal: Int
        public var replyGrant: String
        public var preview: PreviewMode

        public init(message: Message, conversation: Conversation, mentioned: Bool, unreadTotal: Int, replyGrant: String, preview: PreviewMode) {
            self.message = message
            self.conversation = conversation
            self.mentioned = mentioned
            self.unreadTotal = unreadTotal
            self.replyGrant = replyGrant
            self.preview = preview
        }
    }

    /// The alert text:
    /// "hidden: no title, and the body is "New message".
    ///  A group with a name: the conversation name as title, and "Sender: text" as body.
    ///  Anything else: the sender's name as title, and the text as body."
    public static func messageAlert(_ notice: MessageNotice) -> (title: String?, body: String) {
        if notice.preview == .hidden { return (nil, "New message") }
        let text = PreviewText.clip(notice.message.text)
        if notice.conversation.isGroup, let name = notice.conversation.displayName {
            return (name, notice.message.sender.displayName + ": " + text)
        }
        return (notice.message.sender.displayName, text)
    }

    /// Android `message`/`new` data map. With preview hidden the text is left out: the data map
    /// has nothing else that tells the app to hide it ("preview ... changes what the push carries").
    public static func messageFCMData(_ notice: MessageNotice) -> [UInt8] {
        var writer = PayloadWriter(capacity: 448 + notice.message.text.utf8.count + notice.replyGrant.utf8.count)
        writer.beginObject()
        writeMessageFields(&writer, notice, encoding: .fcmData)
        writer.endObject()
        return writer.bytes
    }

    /// iOS new-message alert body: "The same fields at the top level (numbers unquoted), plus"
    /// `aps` and the routing `body`. `group` and `mentioned` stay "1"/"0" strings, as the seed's
    /// iOS `body` object shows for `group`.
    public static func messageAPNS(_ notice: MessageNotice) -> [UInt8] {
        let alert = messageAlert(notice)
        let message = notice.message
        var writer = PayloadWriter(capacity: 768 + 2 * message.text.utf8.count + notice.replyGrant.utf8.count)
        writer.beginObject()
        writer.beginObject("aps")
        writer.alert(title: alert.title, body: alert.body)
        writer.string("sound", "default")
        writer.integer("badge", notice.unreadTotal)
        writer.string("thread-id", notice.conversation.id)
        writer.string("category", "poolse_message")
        writer.integer("mutable-content", 1)
        writer.string("summary-arg", message.sender.displayName)
        writer.endObject()
        writeMessageFields(&writer, notice, encoding: .apns)
        writer.beginObject("body")
        writer.string("type", "message")
        writer.string("event", "new")
        writer.string("conversation_id", notice.conversation.id)
        writer.string("message_id", message.id)
        writer.string("sender_user_id", message.sender.id)
        writer.string("group", notice.conversation.isGroup ? "1" : "0")
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    private static func writeMessageFields(_ writer: inout PayloadWriter, _ notice: MessageNotice, encoding: PayloadEncoding) {
        let message = notice.message
        writer.string("cv", payloadVersion)
        writer.string("type", "message")
        writer.string("event", "new")
        writer.string("message_id", message.id)
        writer.string("conversation_id", notice.conversation.id)
        writer.string("conversation_name", notice.conversation.wireName)
        writer.string("group", notice.conversation.isGroup ? "1" : "0")
        writer.string("sender_user_id", message.sender.id)
        writer.string("sender_external_id", message.sender.externalID)
        writer.string("sender_name", message.sender.displayName)
        if notice.preview == .full { writer.string("text", PreviewText.clip(message.text)) }
        writer.string("mentioned", notice.mentioned ? "1" : "0")
        writer.integer("sent_at", message.sentAt, encoding)
        writer.integer("unread_total", notice.unreadTotal, encoding)
        writer.string("reply_grant", notice.replyGrant)
    }

    // MARK: Conversation read

    /// Android `message`/`read` data map.
    public static func readFCMData(conversationID: String, unreadTotal: Int) -> [UInt8] {
        var writer = PayloadWriter(capacity: 128)
        writer.beginObject()
        writer.string("cv", payloadVersion)
        writer.string("type", "message")
        writer.string("event", "read")
        writer.string("conversation_id", conversationID)
        writer.integer("unread_total", unreadTotal, .fcmData)
        writer.endObject()
        return writer.bytes
    }

    /// iOS background body: `aps` holds `content-available: 1` only; type is "message_read".
    public static func readAPNS(conversationID: String, unreadTotal: Int) -> [UInt8] {
        var writer = PayloadWriter(capacity: 160)
        writer.beginObject()
        writer.beginObject("aps")
        writer.integer("content-available", 1)
        writer.endObject()
        writer.string("cv", payloadVersion)
        writer.string("type", "message_read")
        writer.string("event", "read")
        writer.string("conversation_id", conversationID)
        writer.integer("unread_total", unreadTotal)
        writer.endObject()
        return writer.bytes
    }
}
