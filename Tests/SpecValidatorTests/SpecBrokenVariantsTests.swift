import JSON
import SpecValidator
import Testing

/// One change to a spec example.
enum Edit: Sendable {
    /// Sets a header (nil removes it).
    case header(String, String?)
    /// Sets a body value at a JSON pointer below the body (nil removes it).
    case body(String, JSONValue?)
}

/// A spec example with a defect, and the violation it must produce.
struct BrokenVariant: Sendable, CustomTestStringConvertible {
    var name: String
    var spec: String
    var example: Int = 0
    var edits: [Edit]
    var pointer: String
    var rule: String

    var testDescription: String { "\(spec): \(name)" }

    init(_ name: String, _ spec: String, example: Int = 0, _ edits: [Edit], pointer: String, rule: String) {
        self.name = name
        self.spec = spec
        self.example = example
        self.edits = edits
        self.pointer = pointer
        self.rule = rule
    }
}

extension JSONValue {
    /// A copy with the value at `tokens` replaced (nil removes it); missing objects on the way are created.
    func setting(_ tokens: ArraySlice<String>, to newValue: JSONValue?) -> JSONValue {
        guard let token = tokens.first else { return newValue ?? .null }
        switch self {
        case .object(var object):
            if tokens.count == 1 {
                object[token] = newValue
            } else {
                object[token] = (object[token] ?? .object([:])).setting(tokens.dropFirst(), to: newValue)
            }
            return .object(object)
        case .array(var array):
            guard let index = Int(token), array.indices.contains(index) else { return self }
            if tokens.count == 1 {
                if let newValue { array[index] = newValue } else { array.remove(at: index) }
            } else {
                array[index] = array[index].setting(tokens.dropFirst(), to: newValue)
            }
            return .array(array)
        default:
            return self
        }
    }
}

func applying(_ edits: [Edit], to example: SpecExample) -> SpecExample {
    var copy = example
    for edit in edits {
        switch edit {
        case .header(let name, let value):
            copy.headers.removeAll { $0.name == name }
            if let value { copy.headers.append((name, value)) }
        case .body(let pointer, let value):
            let tokens = JSONPointer(pointer)?.tokens ?? []
            copy.body = copy.body.setting(tokens[...], to: value)
        }
    }
    return copy
}

private let dataPrefix = "/message/data/"
private let ringData = "/properties/message/properties/data"

let brokenVariants: [BrokenVariant] = [
    // poolse ring, APNs (VoIP)
    .init("push type alert instead of voip", "poolse.ring.apns", [.header("apns-push-type", "alert")],
          pointer: "/headers/apns-push-type", rule: "header:apns-push-type"),
    .init("no push type", "poolse.ring.apns", [.header("apns-push-type", nil)],
          pointer: "/headers/apns-push-type", rule: "header:apns-push-type"),
    .init("priority 5", "poolse.ring.apns", [.header("apns-priority", "5")],
          pointer: "/headers/apns-priority", rule: "header:apns-priority"),
    .init("expiration not 0", "poolse.ring.apns", [.header("apns-expiration", "1793952060")],
          pointer: "/headers/apns-expiration", rule: "header:apns-expiration"),
    .init("topic without .voip", "poolse.ring.apns", [.header("apns-topic", "com.example.loop")],
          pointer: "/headers/apns-topic", rule: "header:apns-topic"),
    // Another app's topic is no poolse push at all (SpecJudgeTests: not covered); poolse's own
    // bundle id with another push type's suffix is a poolse push with the wrong topic.
    .init("poolse topic with the complication suffix", "poolse.ring.apns", [.header("apns-topic", "com.example.loop.complication")],
          pointer: "/headers/apns-topic", rule: "header:apns-topic"),
    .init("cv 2", "poolse.ring.apns", [.body("/cv", "2")], pointer: "/body/cv", rule: "schema:/properties/cv/const"),
    .init("cv missing", "poolse.ring.apns", [.body("/cv", nil)], pointer: "/body/cv", rule: "schema:/required"),
    .init("ring_deadline quoted on iOS", "poolse.ring.apns", [.body("/ring_deadline", "1793952045000")],
          pointer: "/body/ring_deadline", rule: "schema:/properties/ring_deadline/type"),
    .init("has_video as a flag string on iOS", "poolse.ring.apns", [.body("/has_video", "1")],
          pointer: "/body/has_video", rule: "schema:/properties/has_video/type"),
    .init("unknown media", "poolse.ring.apns", [.body("/media", "screen")],
          pointer: "/body/media", rule: "schema:/properties/media/enum"),

    // poolse ring, FCM
    .init("ttl of a day", "poolse.ring.fcm", [.body("/message/android/ttl", "86400s")],
          pointer: "/body/message/android/ttl", rule: "schema:/properties/message/properties/android/properties/ttl/const"),
    .init("normal priority", "poolse.ring.fcm", [.body("/message/android/priority", "NORMAL")],
          pointer: "/body/message/android/priority", rule: "schema:/properties/message/properties/android/properties/priority/enum"),
    .init("a notification block", "poolse.ring.fcm", [.body("/message/notification", ["title": "Alice"])],
          pointer: "/body/message/notification", rule: "schema:/properties/message/properties/notification/not"),
    .init("an android notification block", "poolse.ring.fcm", [.body("/message/android/notification", ["title": "Alice"])],
          pointer: "/body/message/android/notification", rule: "schema:/properties/message/properties/android/properties/notification/not"),
    .init("sent_at as a number on Android", "poolse.ring.fcm", [.body(dataPrefix + "sent_at", 1_793_952_000_000)],
          pointer: "/body/message/data/sent_at", rule: "schema:\(ringData)/properties/sent_at/type"),
    .init("has_video as a boolean on Android", "poolse.ring.fcm", [.body(dataPrefix + "has_video", true)],
          pointer: "/body/message/data/has_video", rule: "schema:\(ringData)/properties/has_video/enum"),
    .init("cv missing on Android", "poolse.ring.fcm", [.body(dataPrefix + "cv", nil)],
          pointer: "/body/message/data/cv", rule: "schema:\(ringData)/required"),
    .init("an extra numeric data value", "poolse.ring.fcm", [.body(dataPrefix + "attempt", 2)],
          pointer: "/body/message/data/attempt", rule: "schema:\(ringData)/additionalProperties/type"),
    .init("no android block", "poolse.ring.fcm", [.body("/message/android", nil)],
          pointer: "/body/message/android", rule: "schema:/properties/message/required"),
    .init("no token target", "poolse.ring.fcm", [.body("/message/token", nil)],
          pointer: "/body/message/token", rule: "schema:/properties/message/required"),
    .init("content-type text/plain", "poolse.ring.fcm", [.header("content-type", "text/plain")],
          pointer: "/headers/content-type", rule: "header:content-type"),

    // ring ended, finished
    .init("a finished-only reason on ring_ended", "poolse.ring_ended.fcm", [.body(dataPrefix + "reason", "no_answer")],
          pointer: "/body/message/data/reason", rule: "schema:\(ringData)/properties/reason/enum"),
    .init("ring_ended ttl missing", "poolse.ring_ended.fcm", [.body("/message/android/ttl", nil)],
          pointer: "/body/message/android/ttl", rule: "schema:/properties/message/properties/android/required"),
    .init("a ring_ended-only reason on finished", "poolse.finished.fcm", [.body(dataPrefix + "reason", "answered_elsewhere")],
          pointer: "/body/message/data/reason", rule: "schema:\(ringData)/properties/reason/enum"),
    .init("finished sent_at as a number", "poolse.finished.fcm", [.body(dataPrefix + "sent_at", 1_793_952_265_000)],
          pointer: "/body/message/data/sent_at", rule: "schema:\(ringData)/properties/sent_at/type"),

    // missed call, FCM
    .init("group missed call titled with the caller", "poolse.missed.fcm", example: 1, [.body(dataPrefix + "title", "Alice")],
          pointer: "/body/message/data/title", rule: "derived:missed-title"),
    .init("group missed call body without the caller", "poolse.missed.fcm", example: 1, [.body(dataPrefix + "body", "Missed video call")],
          pointer: "/body/message/data/body", rule: "derived:missed-body"),
    .init("direct audio call said to be video", "poolse.missed.fcm", [.body(dataPrefix + "body", "Missed video call")],
          pointer: "/body/message/data/body", rule: "derived:missed-body"),
    .init("missed call with a 60 s ttl", "poolse.missed.fcm", [.body("/message/android/ttl", "60s")],
          pointer: "/body/message/android/ttl", rule: "schema:/properties/message/properties/android/properties/ttl/const"),

    // missed call, APNs
    .init("collapse id without missed-", "poolse.missed.apns", [.header("apns-collapse-id", "4a69…")],
          pointer: "/headers/apns-collapse-id", rule: "header:apns-collapse-id"),
    .init("no collapse id", "poolse.missed.apns", [.header("apns-collapse-id", nil)],
          pointer: "/headers/apns-collapse-id", rule: "header:apns-collapse-id"),
    .init("expiration 0 instead of 24 hours", "poolse.missed.apns", [.header("apns-expiration", "0")],
          pointer: "/headers/apns-expiration", rule: "header:apns-expiration"),
    .init("expiration a week out", "poolse.missed.apns", [.header("apns-expiration", "1794557245")],
          pointer: "/headers/apns-expiration", rule: "header:apns-expiration"),
    .init("voip push type for a missed call", "poolse.missed.apns", [.header("apns-push-type", "voip")],
          pointer: "/headers/apns-push-type", rule: "header:apns-push-type"),
    .init("voip topic on an alert push", "poolse.missed.apns", [.header("apns-topic", "com.example.loop.voip")],
          pointer: "/headers/apns-topic", rule: "header:apns-topic"),
    .init("group missed call titled with the caller, iOS", "poolse.missed.apns", example: 1, [.body("/aps/alert/title", "Alice")],
          pointer: "/body/aps/alert/title", rule: "derived:missed-title"),
    .init("wrong category", "poolse.missed.apns", [.body("/aps/category", "poolse_message")],
          pointer: "/body/aps/category", rule: "schema:/properties/aps/properties/category/const"),
    .init("body object with another call id", "poolse.missed.apns", [.body("/body/call_id", "9999")],
          pointer: "/body/body/call_id", rule: "derived:routing-call_id"),
    .init("body object missing", "poolse.missed.apns", [.body("/body", nil)], pointer: "/body/body", rule: "schema:/required"),
    .init("thread-id not the conversation", "poolse.missed.apns", [.body("/aps/thread-id", "other")],
          pointer: "/body/aps/thread-id", rule: "derived:thread-id"),
    .init("sent_at quoted on iOS", "poolse.missed.apns", [.body("/sent_at", "1793952045000")],
          pointer: "/body/sent_at", rule: "schema:/properties/sent_at/type"),

    // new message, APNs
    .init("collapse id not the message id", "poolse.message.apns", [.header("apns-collapse-id", "missed-8d0e…")],
          pointer: "/headers/apns-collapse-id", rule: "header:apns-collapse-id"),
    .init("badge not the unread total", "poolse.message.apns", [.body("/aps/badge", 5)],
          pointer: "/body/aps/badge", rule: "derived:badge"),
    .init("no mutable-content", "poolse.message.apns", [.body("/aps/mutable-content", nil)],
          pointer: "/body/aps/mutable-content", rule: "schema:/properties/aps/required"),
    .init("summary-arg not the sender", "poolse.message.apns", [.body("/aps/summary-arg", "Bob")],
          pointer: "/body/aps/summary-arg", rule: "derived:summary-arg"),
    .init("wrong category on a message", "poolse.message.apns", [.body("/aps/category", "poolse_missed_call")],
          pointer: "/body/aps/category", rule: "schema:/properties/aps/properties/category/const"),
    .init("named group titled with the sender", "poolse.message.apns", [.body("/aps/alert/title", "Alice")],
          pointer: "/body/aps/alert/title", rule: "derived:alert-text"),
    .init("direct conversation with a Sender: text body", "poolse.message.apns", example: 1, [.body("/aps/alert/body", "Alice: ship it")],
          pointer: "/body/aps/alert/body", rule: "derived:alert-text"),
    .init("hidden preview still carrying the text", "poolse.message.apns", example: 2, [.body("/text", "ship it")],
          pointer: "/body/text", rule: "derived:hidden-preview-carries-no-text"),
    .init("hidden preview leaking the text into the alert", "poolse.message.apns", example: 2, [.body("/aps/alert/body", "ship it")],
          pointer: "/body/aps/alert/body", rule: "derived:alert-text"),
    .init("unread_total quoted on iOS", "poolse.message.apns", [.body("/unread_total", "4")],
          pointer: "/body/unread_total", rule: "schema:/properties/unread_total/type"),
    .init("body object with another group flag", "poolse.message.apns", [.body("/body/group", "0")],
          pointer: "/body/body/group", rule: "derived:routing-group"),
    .init("expiration of a week", "poolse.message.apns", [.header("apns-expiration", "1794557643")],
          pointer: "/headers/apns-expiration", rule: "header:apns-expiration"),

    // new message, FCM
    .init("unread_total as a number on Android", "poolse.message.fcm", [.body(dataPrefix + "unread_total", 4)],
          pointer: "/body/message/data/unread_total", rule: "schema:\(ringData)/properties/unread_total/type"),
    .init("mentioned not a flag", "poolse.message.fcm", [.body(dataPrefix + "mentioned", "no")],
          pointer: "/body/message/data/mentioned", rule: "schema:\(ringData)/properties/mentioned/enum"),
    .init("a notification block on a message", "poolse.message.fcm", [.body("/message/notification", ["title": "Engineering", "body": "Alice: ship it"])],
          pointer: "/body/message/notification", rule: "schema:/properties/message/properties/notification/not"),

    // conversation read
    .init("read push as an alert", "poolse.read.apns", [.header("apns-push-type", "alert")],
          pointer: "/headers/apns-push-type", rule: "header:apns-push-type"),
    .init("read push at priority 10", "poolse.read.apns", [.header("apns-priority", "10")],
          pointer: "/headers/apns-priority", rule: "header:apns-priority"),
    .init("read push with an alert", "poolse.read.apns", [.body("/aps/alert", ["body": "read"])],
          pointer: "/body/aps/alert", rule: "schema:/properties/aps/additionalProperties"),
    .init("content-available as a string", "poolse.read.apns", [.body("/aps/content-available", "1")],
          pointer: "/body/aps/content-available", rule: "schema:/properties/aps/properties/content-available/const"),
    .init("read unread_total quoted on iOS", "poolse.read.apns", [.body("/unread_total", "0")],
          pointer: "/body/unread_total", rule: "schema:/properties/unread_total/type"),
    .init("read unread_total as a number on Android", "poolse.read.fcm", [.body(dataPrefix + "unread_total", 0)],
          pointer: "/body/message/data/unread_total", rule: "schema:\(ringData)/properties/unread_total/type"),
    .init("read with a ring's ttl", "poolse.read.fcm", [.body("/message/android/ttl", "60s")],
          pointer: "/body/message/android/ttl", rule: "schema:/properties/message/properties/android/properties/ttl/const"),

    // Yama
    .init("body without the sender", "yama.message.apns", [.body("/aps/alert/body", "the new mockups are up")],
          pointer: "/body/aps/alert/body", rule: "schema:/properties/aps/properties/alert/properties/body/pattern"),
    .init("no sound", "yama.message.apns", [.body("/aps/sound", nil)],
          pointer: "/body/aps/sound", rule: "schema:/properties/aps/required"),
    .init("empty group name", "yama.message.apns", [.body("/aps/alert/title", "")],
          pointer: "/body/aps/alert/title", rule: "schema:/properties/aps/properties/alert/properties/title/minLength"),
    .init("Yama push as background", "yama.message.apns", [.header("apns-push-type", "background")],
          pointer: "/headers/apns-push-type", rule: "header:apns-push-type"),
    .init("tenant topic with a VoIP suffix on an alert", "yama.message.apns", [.header("apns-topic", "com.example.yama.tenant.voip")],
          pointer: "/headers/apns-topic", rule: "header:apns-topic"),

    // Concierge
    .init("badge not the unread count", "concierge.reply.apns", [.body("/aps/badge", 3)],
          pointer: "/body/aps/badge", rule: "derived:badge"),
    .init("thread-id not the conversation id", "concierge.reply.apns", [.body("/aps/thread-id", "cnv_other")],
          pointer: "/body/aps/thread-id", rule: "derived:thread-id"),
    .init("unread quoted on iOS", "concierge.reply.apns", [.body("/concierge/unread", "1")],
          pointer: "/body/concierge/unread", rule: "schema:/properties/concierge/properties/unread/type"),
    .init("a conversation id without cnv_", "concierge.reply.apns", [.body("/concierge/conversationId", "c-1")],
          pointer: "/body/concierge/conversationId", rule: "schema:/properties/concierge/properties/conversationId/pattern"),
    .init("unread as a number on Android", "concierge.reply.fcm", [.body(dataPrefix + "unread", 1)],
          pointer: "/body/message/data/unread", rule: "schema:\(ringData)/properties/unread/type"),
    .init("no notification block on Android", "concierge.reply.fcm", [.body("/message/notification", nil)],
          pointer: "/body/message/notification", rule: "schema:/properties/message/required"),
    .init("notification title differs from the data title", "concierge.reply.fcm", [.body("/message/notification/title", "Concierge")],
          pointer: "/body/message/notification/title", rule: "derived:notification-title"),
]

@Suite struct SpecBrokenVariantsTests {
    @Test func theCatalogueIsLargeAndCoversEveryProduct() {
        #expect(brokenVariants.count >= 40)
        for product in ["poolse.", "yama.", "concierge."] {
            #expect(brokenVariants.contains { $0.spec.hasPrefix(product) })
        }
    }

    @Test(arguments: brokenVariants)
    func brokenVariantFailsWithItsRule(_ variant: BrokenVariant) throws {
        let set = try SpecFixtures.load()
        let spec = try #require(set.spec(id: variant.spec))
        let example = try #require(spec.examples.indices.contains(variant.example) ? spec.examples[variant.example] : nil)
        #expect(set.judge(example).violations.isEmpty, "the unbroken example must pass")
        let verdict = set.judge(applying(variant.edits, to: example))
        #expect(verdict.specID == variant.spec)
        let found = verdict.violations.map { "\($0.pointer) \($0.rule)" }
        #expect(found.contains("\(variant.pointer) \(variant.rule)"), "got \(found)")
        for violation in verdict.violations where violation.rule.hasPrefix("header:") || violation.rule.hasPrefix("derived:") {
            #expect(violation.source != nil, "\(violation.rule) has no source")
        }
        #expect(verdict.violations.allSatisfy { $0.source?.sentence.isEmpty == false })
    }
}
