import Foundation
import JSON
@testable import Scenario
import Testing

private func decode(_ text: String) throws(JSONFieldError) -> Scenario {
    try Scenario(json: Array(text.utf8), name: "test.json")
}

private let minimal = """
{"format": 1, "product": "poolse",
 "people": [{"id": "alice", "name": "Alice", "devices": [{"id": "a-ios", "platform": "ios", "kind": "voip"}]},
            {"id": "bob", "devices": [{"id": "b-android", "platform": "android", "token": "tok-b"}]}],
 "conversations": [{"id": "c1", "kind": "group", "name": "Eng", "members": ["alice", "bob"]}],
 "events": [{"type": "call.placed", "call": "k1", "conversation": "c1", "caller": "alice", "media": "video"},
            {"type": "call.ended", "call": "k1", "reason": "no_answer", "at_ms": 45000}],
 "expect": [{"event": 0, "source": "Sent to every registered device of each person rung",
             "deliveries": [{"device": "b-android", "spec": "poolse.ring.fcm", "fields": {"/message/data/media": "video"}}]}]}
"""

@Suite struct ScenarioDecoderTests {
    @Test func readsPeopleDevicesEventsAndExpectations() throws {
        let scenario = try decode(minimal)
        #expect(scenario.product == .poolse)
        #expect(scenario.people.map(\.id) == ["alice", "bob"])
        #expect(scenario.people[1].externalID == "ext-bob")
        #expect(scenario.device("b-android")?.token == "tok-b")
        #expect(scenario.device("a-ios")?.voip == true)
        #expect(scenario.events.count == 2)
        #expect(scenario.events[1].kind == .callEnded(call: "k1", reason: .noAnswer))
        #expect(scenario.events[1].atMs == 45000)
        let expectation = try #require(scenario.expectations?.first)
        #expect(expectation.deliveries[0].fields[0].pointer.description == "/message/data/media")
        // Pinned headers: lowercase names, null for "absent".
        let pinned = try decode(minimal.replacingFirst(#""fields": {"#, with: #""headers": {"TTL": "60", "x-none": null}, "fields": {"#))
        let headers = try #require(pinned.expectations?.first?.deliveries.first?.headers)
        #expect(headers.map(\.name) == ["ttl", "x-none"] && headers.map(\.value) == ["60", nil])
    }

    @Test func derivedTokensAreWellFormedAndStable() throws {
        let ios = ScenarioTokens.token(forDevice: "a-ios", platform: .ios)
        #expect(ios.count == 64 && ios.allSatisfy(\.isHexDigit))
        #expect(ios == ScenarioTokens.token(forDevice: "a-ios", platform: .ios))
        #expect(ios != ScenarioTokens.token(forDevice: "a-ios2", platform: .ios))
        let android = ScenarioTokens.token(forDevice: "x", platform: .android)
        #expect(android.count == 152 && android.contains(":APA91b"))
    }

    /// The tokens are written in place; every scenario's tokens must stay what the first
    /// spelling of the derivation (pieces joined) gave, or recordings and reports would move.
    @Test func derivedTokensAreTheJoinedDerivation() {
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for id in ["a-ios", "x", "", "p0-voip", "p99999-android", "ünïcode"] {
            let ios = (0..<4).map { hex(ScenarioTokens.fnv1a(id, seed: UInt64($0))) }.joined()
            #expect(ScenarioTokens.token(forDevice: id, platform: .ios) == ios, "\(id)")
            var state = ScenarioTokens.fnv1a(id, seed: 0x0fc3)
            func characters(_ count: Int) -> String {
                String((0..<count).map { _ in
                    state = ScenarioTokens.splitmix(state)
                    return alphabet[Int(state >> 58)]
                })
            }
            let android = characters(22) + ":APA91b" + characters(152 - 29)
            #expect(ScenarioTokens.token(forDevice: id, platform: .android) == android, "\(id)")
        }
    }

    @Test(arguments: [
        (#""product": "poolse""#, #""product": "pool""#, #"product: expected one of "poolse", "yama", "concierge", found "pool""#),
        (#""caller": "alice""#, #""caller": "zed""#, #"events[0].caller: unknown person "zed""#),
        (#""kind": "voip""#, #""kind": "pushkit""#, #"people[0].devices[0].kind: expected one of "voip", "alert", found "pushkit""#),
        (#""reason": "no_answer""#, #""reason": "no_answer", "colour": 1"#, "events[1].colour: unknown key"),
        (#""call": "k1", "reason""#, #""call": "k9", "reason""#, #"events[1].call: no call "k9" was placed or started before this event"#),
        (#""event": 0"#, #""event": 7"#, "expect[0].event: there are 2 events (0 to 1)"),
        (#""device": "b-android", "spec""#, #""device": "nope", "spec""#, #"expect[0].deliveries[0].device: unknown device "nope""#),
        (#""id": "b-android""#, #""id": "a-ios""#, #"people[1].devices[0].id: device "a-ios" is declared twice"#),
        (#"{"type": "call.ended""#, #"{"type": "call.answered", "call": "k1", "user": "bob", "device": "a-ios"}, {"type": "call.ended""#,
         #"events[1].device: device "a-ios" is not bob's"#),
        (#"{"type": "call.ended""#, #"{"type": "device.registered", "device": "b-ios"}, {"type": "call.ended""#,
         #"events[1].device: unknown device "b-ios" (give an object for a new one)"#),
        (#""conversations""#, #""gateway": {"tokens": {"zz-ios": "gone"}}, "conversations""#, #"gateway.tokens.zz-ios: unknown device "zz-ios""#),
        (#""format": 1"#, #""format": 2"#, "format: this pushproof reads format 1, found 2"),
        (#""fields": {"#, #""headers": {"apns-collapse-id": 5}, "fields": {"#,
         "expect[0].deliveries[0].headers.apns-collapse-id: a header's value is a string (null: the header must be absent)"),
        (#""type": "call.placed""#, #""type": "message.created""#, #"events[0].type: "message.created" is a yama event; this scenario's product is poolse"#),
    ])
    func errorsNameTheirKeyPath(original: String, replacement: String, message: String) {
        let text = minimal.replacingFirst(original, with: replacement)
        #expect(text != minimal)
        do {
            _ = try decode(text)
            Issue.record("decoded, expected \(message)")
        } catch {
            #expect(error.description.hasPrefix(message), "\(error.description)")
        }
    }

    @Test func generateGivesTheSamePopulationEveryRun() throws {
        let text = """
        {"format": 1, "product": "poolse",
         "generate": {"people": 200, "seed": 7, "devices": {"voip": 0.6, "alert": 0.8, "android": 0.4},
                      "gone": 0.1, "bad": 0.05, "muted": 0.2},
         "events": [{"type": "message.sent", "conversation": "c0", "sender": "p0", "text": "hi"}]}
        """
        let first = try decode(text), second = try decode(text)
        #expect(first.people == second.people)
        #expect(first.tokenStates.map(\.device) == second.tokenStates.map(\.device))
        #expect(first.people.count == 200)
        let voip = first.people.filter { $0.devices.contains { $0.voip } }.count
        #expect(voip > 90 && voip < 150)
        #expect(!first.tokenStates.isEmpty && !first.conversations[0].mutedBy.isEmpty)
        #expect(!first.conversations[0].mutedBy.contains("p0"))
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
