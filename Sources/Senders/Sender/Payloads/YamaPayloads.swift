// Yama's one push (Yama seed, "When a push is sent").

public enum YamaPayloads {
    /// The alert: title "<group name>", body "<sender>: <message preview>", sound "default":
    /// "an alert notification (title + body + sound), so it appears on a locked iPhone".
    public static func messageCreatedAPNS(room: YamaRoom, message: YamaMessage) -> [UInt8] {
        let preview = PreviewText.clip(message.text)
        var writer = PayloadWriter(capacity: 96 + room.name.utf8.count + message.authorName.utf8.count + preview.utf8.count)
        writer.beginObject()
        writer.beginObject("aps")
        writer.alert(title: room.name, body: message.authorName + ": " + preview)
        writer.string("sound", "default")
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}
