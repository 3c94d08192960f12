import PushModel
import Testing
@testable import Sender

/// An FCM fan-out holds one message template; each push's bytes are made when it is sent.
@Suite struct FCMTemplateTests {
    static let data = Array(#"{"type":"call","event":"ring","call_id":"k1"}"#.utf8)

    @Test(arguments: ["fcm-token-1", "dQw4w9WgXcQ:APA91bH-very_long-Token", ""])
    func aTemplatedPushHasTheBytesOfTheWholeMessage(token: String) {
        let device = Device(userID: "u", platform: .android, token: token)
        let template = FCMEnvelope.dataMessageTemplate(data: Self.data, ttl: .oneMinute)
        let push = PushRequest(device: device, kind: "poolse.ring", template: template.bytes, tokenOffset: template.tokenOffset)
        #expect(push.body == FCMEnvelope.dataMessage(token: token, data: Self.data, ttl: .oneMinute))
        #expect(push.template?.bytes == template.bytes)
    }

    @Test func settingTheBodyReplacesTheTemplate() {
        let template = FCMEnvelope.dataMessageTemplate(data: Self.data, ttl: .oneDay)
        var push = PushRequest(device: Device(userID: "u", platform: .android, token: "t"), kind: "k", template: template.bytes,
                               tokenOffset: template.tokenOffset)
        push.body = Array("{}".utf8)
        #expect(push.body == Array("{}".utf8))
        #expect(push.template == nil)
    }

    @Test func aTokenTheWriterWouldEscapeGetsAMessageOfItsOwn() throws {
        for token in [#"quo"te"#, #"back\slash"#, "new\nline", "del\u{7F}", "café"] {
            #expect(!FCMEnvelope.fitsTemplate(token), "\(token)")
        }
        #expect(FCMEnvelope.fitsTemplate("dQw4w9WgXcQ:APA91bH-_0"))
        var fanout = Fanout()
        let odd = Device(userID: "u", platform: .android, token: #"odd"token"#)
        let plain = Device(userID: "u", platform: .android, token: "plain")
        fanout.android([odd, plain], kind: "poolse.ring", ttl: .oneMinute) { Self.data }
        #expect(fanout.requests.count == 2)
        #expect(fanout.requests[0].template == nil)
        #expect(fanout.requests[0].body == FCMEnvelope.dataMessage(token: odd.token, data: Self.data, ttl: .oneMinute))
        let shared = try #require(fanout.requests[1].template)
        #expect(fanout.requests[1].body == FCMEnvelope.dataMessage(token: "plain", data: Self.data, ttl: .oneMinute))
        #expect(shared.tokenOffset == #"{"message":{"token":""#.utf8.count)
    }

    @Test func theOracleCutsATemplatedPushWithoutSearchingItsBody() throws {
        let template = FCMEnvelope.dataMessageTemplate(data: Self.data, ttl: .oneMinute)
        let push = PushRequest(device: Device(userID: "u", platform: .android, token: "tok"), kind: "k", template: template.bytes,
                               tokenOffset: template.tokenOffset)
        let cut = try #require(ContentReference.cut(of: push, decidedAtMs: 5))
        #expect(cut.body == template.bytes)
        #expect(cut.withToken("tok").body == push.body)
        let searched = try #require(ContentReference(headers: [], body: push.body, decidedAtMs: 5).cuttingToken("tok"))
        #expect(searched.body == cut.body)
        #expect(searched.tokenOffset == cut.tokenOffset)
    }
}
