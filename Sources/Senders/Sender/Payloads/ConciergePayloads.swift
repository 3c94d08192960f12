// Concierge's reply push (Concierge seed, "Payload").

public enum ConciergePayloads {
    /// "the title is the team member's name when Show team names is on, otherwise your app's
    /// name; the body is the message preview".
    public static func alertText(app: ConciergeApp, reply: ConciergeReply) -> (title: String, body: String) {
        let title: String
        switch reply.author {
        case .teamMember(let name) where app.showTeamNames && !name.isEmpty: title = name
        default: title = app.name
        }
        return (title, PreviewText.clip(reply.text))
    }

    /// APNs: alert, `badge` = unread, `thread-id` = conversation id; "Data fields sit in a
    /// top-level concierge dictionary" with `unread` as a number.
    public static func replyAPNS(app: ConciergeApp, reply: ConciergeReply) -> [UInt8] {
        let text = alertText(app: app, reply: reply)
        var writer = PayloadWriter(capacity: 224 + text.title.utf8.count + text.body.utf8.count)
        writer.beginObject()
        writer.beginObject("aps")
        writer.alert(title: text.title, body: text.body)
        writer.integer("badge", reply.unread)
        writer.string("thread-id", reply.conversationID)
        writer.endObject()
        writer.beginObject("concierge")
        writeDataFields(&writer, reply: reply, encoding: .apns)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// The FCM data map: the same fields as strings, plus `title` and `body`.
    public static func replyFCMData(app: ConciergeApp, reply: ConciergeReply) -> [UInt8] {
        let text = alertText(app: app, reply: reply)
        var writer = PayloadWriter(capacity: 160 + text.title.utf8.count + text.body.utf8.count)
        writer.beginObject()
        writeDataFields(&writer, reply: reply, encoding: .fcmData)
        writer.string("title", text.title)
        writer.string("body", text.body)
        writer.endObject()
        return writer.bytes
    }

    /// The whole FCM message: notification block plus data map.
    public static func replyFCM(token: String, app: ConciergeApp, reply: ConciergeReply) -> [UInt8] {
        let text = alertText(app: app, reply: reply)
        return FCMEnvelope.notificationMessage(
            token: token, title: text.title, body: text.body, data: replyFCMData(app: app, reply: reply))
    }

    private static func writeDataFields(_ writer: inout PayloadWriter, reply: ConciergeReply, encoding: PayloadEncoding) {
        writer.string("source", "concierge")
        writer.string("conversationId", reply.conversationID)
        writer.string("messageId", reply.messageID)
        writer.integer("unread", reply.unread, encoding)
    }
}
