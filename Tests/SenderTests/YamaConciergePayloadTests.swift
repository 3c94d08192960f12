import JSON
import PushModel
import Testing
@testable import Sender

// Yama's and Concierge's payloads compared, as JSON values, with their seed examples.

@Suite("Yama payloads")
struct YamaPayloadTests {
    @Test("\"It is an alert notification (title + body + sound)\": {aps: {alert: {title: <group name>, body: <sender>: <message preview>}, sound: default}}")
    func alert() throws {
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: YamaSeed.store())
            .messageCreated(YamaSeed.message, in: YamaSeed.room)
        let expected = try json(#"""
        {
          "aps": {
            "alert": { "title": "Design", "body": "Ana: New mockups are up" },
            "sound": "default"
          }
        }
        """#)
        #expect(!pushes.isEmpty)
        for push in pushes { #expect(try json(push.body) == expected) }
    }
}

@Suite("Concierge payloads")
struct ConciergePayloadTests {
    static func pushes(_ app: ConciergeApp = ConciergeSeed.app) throws -> [PushRequest] {
        try ConciergeRules(app: app, devices: ConciergeSeed.store()).reply(ConciergeSeed.reply, toCustomer: "customer")
    }

    @Test("APNs is the seed example: \"Data fields sit in a top-level concierge dictionary\"")
    func apns() throws {
        let expected = try json(#"""
        {
          "aps": { "alert": { "title": "Kirill", "body": "Fixed in 2.4, update when you can" }, "badge": 1, "thread-id": "cnv_..." },
          "concierge": { "source": "concierge", "conversationId": "cnv_...", "messageId": "msg_...", "unread": 1 }
        }
        """#)
        #expect(try json(push(Self.pushes(), to: "ios-customer").body) == expected)
    }

    @Test("FCM: \"A notification block (title, body) plus a data map where every value is a string\"")
    func fcm() throws {
        let message = try #require(try json(push(Self.pushes(), to: "fcm-customer").body)["message"])
        let expectedData = try json(#"""
        { "source": "concierge", "conversationId": "cnv_...", "messageId": "msg_...", "unread": "1", "title": "Kirill", "body": "Fixed in 2.4, update when you can" }
        """#)
        #expect(message["data"] == expectedData)
        #expect(message["notification"] == ["title": "Kirill", "body": "Fixed in 2.4, update when you can"])
        #expect(message["token"] == "fcm-customer")
    }

    @Test("With Show team names off, both platforms carry the app's name as title")
    func appNameTitle() throws {
        var app = ConciergeSeed.app
        app.showTeamNames = false
        let pushes = try Self.pushes(app)
        #expect(try json(push(pushes, to: "ios-customer").body)["aps"]?["alert"]?["title"] == "Acme")
        let message = try #require(try json(push(pushes, to: "fcm-customer").body)["message"])
        #expect(message["notification"]?["title"] == "Acme")
        #expect(message["data"]?["title"] == "Acme")
    }
}
