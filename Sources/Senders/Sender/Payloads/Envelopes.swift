import PushModel

// What wraps a payload on each gateway: the FCM v1 message envelope and the APNs headers.

/// FCM HTTP v1 `android.ttl` values the seeds use.
public enum FCMTimeToLive: String, Sendable {
    /// Ring, ring ended, call finished: "FCM ttl: 60s" (poolse seed).
    case oneMinute = "60s"
    /// Missed call, new message, conversation read: "FCM, ttl: 86400s" (poolse seed).
    case oneDay = "86400s"
}

public enum FCMEnvelope {
    /// `{"message":{"token":…,"data":{…},"android":{"priority":"HIGH","ttl":…}}}`: a data message
    /// with no notification block, "so your app's code decides what to show" (poolse seed).
    /// `data` is an already-serialized JSON object whose values are all strings.
    public static func dataMessage(token: String, data: [UInt8], ttl: FCMTimeToLive) -> [UInt8] {
        var writer = PayloadWriter(capacity: data.count + token.utf8.count + 96)
        writer.beginObject()
        writer.beginObject("message")
        writer.string("token", token)
        writer.raw("data", data)
        writer.beginObject("android")
        writer.string("priority", FCMAndroidPriority.high.rawValue)
        writer.string("ttl", ttl.rawValue)
        writer.endObject()
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// `dataMessage` for any token: the message with an empty token, and where a token goes
    /// (right after `{"message":{"token":"`). With a token that needs no JSON escaping,
    /// `PushRequest(template:tokenOffset:)` makes the same bytes as `dataMessage(token:…)`.
    public static func dataMessageTemplate(data: [UInt8], ttl: FCMTimeToLive) -> (bytes: [UInt8], tokenOffset: Int) {
        (dataMessage(token: "", data: data, ttl: ttl), templateTokenOffset)
    }

    private static let templateTokenOffset = #"{"message":{"token":""#.utf8.count

    /// The token stands in a JSON string as it is, as the writer would write it: printable
    /// ASCII other than a quote or a backslash (FCM registration tokens are letters, digits,
    /// `-`, `_` and `:`). Any other token gets a message of its own.
    public static func fitsTemplate(_ token: String) -> Bool {
        token.utf8.allSatisfy { (0x20..<0x7F).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// `{"message":{"token":…,"notification":{"title":…,"body":…},"data":{…}}}`: a notification
    /// message with a data map, as Concierge sends ("A notification block (title, body) plus a
    /// data map where every value is a string").
    public static func notificationMessage(token: String, title: String, body: String, data: [UInt8]) -> [UInt8] {
        var writer = PayloadWriter(capacity: data.count + token.utf8.count + title.utf8.count + body.utf8.count + 80)
        writer.beginObject()
        writer.beginObject("message")
        writer.string("token", token)
        writer.beginObject("notification")
        writer.string("title", title)
        writer.string("body", body)
        writer.endObject()
        writer.raw("data", data)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}

/// The apns-* request headers a push needs (apns.md: topic, push type, priority, expiration,
/// collapse id). Authorization and content-type are the transport's job.
public enum APNSHeaders {
    /// APNs rejects a longer `apns-collapse-id` with 400 BadCollapseId (apns.md).
    public static let maxCollapseIDBytes = 64
    /// "expires after 24 hours" (poolse seed, missed call and new message).
    public static let oneDaySeconds: Int64 = 86_400

    /// Builds the list. `expiration` is Unix seconds; 0 means "deliver now or never".
    /// A collapse id longer than APNs allows is left out rather than getting the push rejected.
    public static func make(
        pushType: APNSPushType, topic: String, priority: APNSPriority,
        expiration: Int64? = nil, collapseID: String? = nil
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(5)
        headers.append(("apns-push-type", pushType.rawValue))
        headers.append(("apns-topic", topic))
        headers.append(("apns-priority", String(priority.rawValue)))
        if let expiration { headers.append(("apns-expiration", String(expiration))) }
        if let collapseID, !collapseID.isEmpty, collapseID.utf8.count <= maxCollapseIDBytes {
            headers.append(("apns-collapse-id", collapseID))
        }
        return headers
    }

    /// Unix seconds 24 hours after `nowMilliseconds`.
    public static func oneDayFrom(nowMilliseconds: Int64) -> Int64 {
        nowMilliseconds / 1000 + oneDaySeconds
    }
}

/// Message text clipped for a push body, on a character boundary, with "…" when cut.
/// APNs refuses payloads over 4096 bytes and FCM data over 4 KB, so the preview is bounded.
public enum PreviewText {
    public static let maxUTF8Bytes = 1024

    public static func clip(_ text: String, maxUTF8Bytes: Int = maxUTF8Bytes) -> String {
        guard text.utf8.count > maxUTF8Bytes else { return text }
        let ellipsis = "…"
        let budget = max(0, maxUTF8Bytes - ellipsis.utf8.count)
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let next = text.index(after: index)
            let size = text.utf8.distance(from: index, to: next)
            if used + size > budget { break }
            used += size
            end = next
        }
        return String(text[..<end]) + ellipsis
    }
}
