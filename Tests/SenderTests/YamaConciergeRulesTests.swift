import PushModel
import Testing
@testable import Sender

// Who gets Yama's and Concierge's pushes. Each test quotes the seed sentence it checks.

enum YamaSeed {
    static let tenant = YamaTenant(id: "acme", iosBundleID: "com.acme.yama")
    static let room = YamaRoom(slug: "design", name: "Design", members: [
        YamaMember(userID: "ana", displayName: "Ana"),
        YamaMember(userID: "ben", displayName: "Ben"),
        YamaMember(userID: "cat", displayName: "Cat"),
    ])
    static let message = YamaMessage(id: "m1", authorID: "ana", authorName: "Ana", text: "New mockups are up")

    static func store() -> InMemoryDeviceStore {
        InMemoryDeviceStore([
            Device(userID: "ana", platform: .ios, token: "ios-ana"),
            Device(userID: "ben", platform: .ios, token: "ios-ben"),
            Device(userID: "ben", platform: .ios, token: "ios-ben-ipad"),
            Device(userID: "cat", platform: .ios, token: "ios-cat"),
        ])
    }
}

@Suite("Yama: message_created")
struct YamaRulesTests {
    @Test("\"A push is delivered on message_created to every member of the room except the author.\"")
    func everyMemberButAuthor() throws {
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: YamaSeed.store())
            .messageCreated(YamaSeed.message, in: YamaSeed.room)
        #expect(tokens(pushes) == ["ios-ben", "ios-ben-ipad", "ios-cat"])
        #expect(pushes.allSatisfy { $0.kind == PushKind.yamaMessage })
    }

    @Test("\"unless the recipient has muted the conversation\" (PUT /api/v1/rooms/:slug/mute)")
    func mutedRoom() throws {
        var room = YamaSeed.room
        room.mutedBy = ["ben"]
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: YamaSeed.store()).messageCreated(YamaSeed.message, in: room)
        #expect(users(pushes) == ["cat"])
    }

    @Test("\"or their account\": \"by setting their status to Do Not Disturb (PATCH /api/v1/me)\"")
    func doNotDisturb() throws {
        var room = YamaSeed.room
        room.members[2].status = .doNotDisturb
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: YamaSeed.store()).messageCreated(YamaSeed.message, in: room)
        #expect(users(pushes) == ["ben"])
    }

    @Test("\"It is an alert notification (title + body + sound)\": alert headers on the tenant's own topic")
    func alertOnTenantTopic() throws {
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: YamaSeed.store())
            .messageCreated(YamaSeed.message, in: YamaSeed.room)
        #expect(!pushes.isEmpty)
        for push in pushes {
            #expect(push.header("apns-push-type") == "alert")
            #expect(push.header("apns-topic") == "com.acme.yama")
            #expect(push.header("apns-priority") == "10")
        }
    }

    @Test("\"android is reserved for a future FCM channel\": Android devices get nothing")
    func androidReserved() throws {
        let store = YamaSeed.store()
        store.register(Device(userID: "cat", platform: .android, token: "fcm-cat"))
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: store).messageCreated(YamaSeed.message, in: YamaSeed.room)
        #expect(!tokens(pushes).contains("fcm-cat"))
        #expect(tokens(pushes).contains("ios-cat"))
    }

    @Test("\"Re-registering is idempotent.\"")
    func reRegisteringIsIdempotent() throws {
        let store = YamaSeed.store()
        store.register(Device(userID: "cat", platform: .ios, token: "ios-cat"))
        store.register(Device(userID: "cat", platform: .ios, token: "ios-cat"))
        #expect(store.count == 4)
        #expect(store.devices(of: "cat").count == 1)
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: store).messageCreated(YamaSeed.message, in: YamaSeed.room)
        #expect(tokens(pushes).filter { $0 == "ios-cat" }.count == 1)
    }

    @Test("\"Unregister on logout or when the token rotates\": an unregistered token gets nothing")
    func unregister() throws {
        let store = YamaSeed.store()
        #expect(store.remove(token: "ios-ben"))
        #expect(!store.remove(token: "ios-ben"))
        let pushes = try YamaRules(tenant: YamaSeed.tenant, devices: store).messageCreated(YamaSeed.message, in: YamaSeed.room)
        #expect(tokens(pushes) == ["ios-ben-ipad", "ios-cat"])
    }

    @Test("Registering from many tasks at once keeps one record per token")
    func concurrentRegistration() async {
        let store = InMemoryDeviceStore()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<200 {
                        store.register(Device(userID: "u\(index % 10)", platform: .ios, token: "t\(index)"))
                        if task == 0 && index % 2 == 0 { store.register(Device(userID: "u\(index % 10)", platform: .ios, token: "t\(index)")) }
                    }
                }
            }
        }
        #expect(store.count == 200)
        #expect(store.allDevices().count == 200)
        #expect(store.devices(of: "u3").count == 20)
    }

    @Test("A token registered again by another user moves to that user")
    func tokenMovesBetweenUsers() throws {
        let store = YamaSeed.store()
        store.register(Device(userID: "cat", platform: .ios, token: "ios-ben"))
        #expect(store.devices(of: "ben").map(\.token) == ["ios-ben-ipad"])
        #expect(store.devices(of: "cat").map(\.token) == ["ios-cat", "ios-ben"])
        #expect(store.count == 4)
    }
}

enum ConciergeSeed {
    static let app = ConciergeApp(name: "Acme", iosBundleID: "com.acme.app", fcmProjectID: "acme", showTeamNames: true)
    static let reply = ConciergeReply(conversationID: "cnv_...", messageID: "msg_...",
                                      author: .teamMember(name: "Kirill"),
                                      text: "Fixed in 2.4, update when you can", unread: 1)

    static func store() -> InMemoryDeviceStore {
        InMemoryDeviceStore([
            Device(userID: "customer", platform: .ios, token: "ios-customer"),
            Device(userID: "customer", platform: .android, token: "fcm-customer"),
            Device(userID: "customer", platform: .android, token: ""),
            Device(userID: "other", platform: .ios, token: "ios-other"),
        ])
    }
}

@Suite("Concierge: replies")
struct ConciergeRulesTests {
    @Test("\"Every team or AI reply is pushed to each of the customer's devices that has a push token.\"")
    func everyDeviceWithToken() throws {
        let rules = ConciergeRules(app: ConciergeSeed.app, devices: ConciergeSeed.store())
        let team = try rules.reply(ConciergeSeed.reply, toCustomer: "customer")
        #expect(tokens(team) == ["fcm-customer", "ios-customer"])
        var aiReply = ConciergeSeed.reply
        aiReply.author = .ai
        #expect(tokens(try rules.reply(aiReply, toCustomer: "customer")) == ["fcm-customer", "ios-customer"])
        #expect(try rules.reply(ConciergeSeed.reply, toCustomer: "nobody").isEmpty)
    }

    @Test("APNs pushes are alerts on the app's topic")
    func apnsHeaders() throws {
        let ios = try ConciergeRules(app: ConciergeSeed.app, devices: ConciergeSeed.store())
            .reply(ConciergeSeed.reply, toCustomer: "customer").filter { $0.device.platform == .ios }
        #expect(ios.count == 1)
        #expect(ios.first?.header("apns-push-type") == "alert")
        #expect(ios.first?.header("apns-topic") == "com.acme.app")
    }

    @Test("\"the title is the team member's name when Show team names is on, otherwise your app's name\"")
    func titleFollowsShowTeamNames() {
        var app = ConciergeSeed.app
        #expect(ConciergePayloads.alertText(app: app, reply: ConciergeSeed.reply).title == "Kirill")
        app.showTeamNames = false
        #expect(ConciergePayloads.alertText(app: app, reply: ConciergeSeed.reply).title == "Acme")
        var aiReply = ConciergeSeed.reply
        aiReply.author = .ai
        app.showTeamNames = true
        #expect(ConciergePayloads.alertText(app: app, reply: aiReply).title == "Acme")
    }
}
