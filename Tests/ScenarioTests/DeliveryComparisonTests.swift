import PushModel
import Scenario
import Testing

@Suite struct DeliveryComparisonTests {
    @Test("An expectation is 80 bytes: a 100,000-person call's end holds 150,000 of them at once")
    func anExpectationStaysSmall() {
        // 96 with the token's offset in the reference an `Int?`; what is not in every
        // expectation (count, name, pinned fields) lives in one optional box.
        #expect(MemoryLayout<ExpectedPush>.stride <= 80)
        #expect(MemoryLayout<ContentReference?>.size <= 32)
    }

    @Test func anAPNsTokenIsComparedWithoutCaseAndAnFCMTokenAsItIs() {
        #expect(DeviceToken("7F3C5D1E") == DeviceToken("7f3c5d1e"))
        #expect(DeviceToken("7F3C5D1E").comparable == "7f3c5d1e")
        #expect(DeviceToken("fcm-Token-1") != DeviceToken("fcm-token-1"))
        #expect(DeviceToken("fcm-Token-1").description == "fcm-Token-1")
        // Hex with anything else in it is not an APNs token, and keeps its case.
        #expect(DeviceToken("AB/CD").comparable == "AB/CD")
        #expect(DeviceToken("ABCDEFG").comparable == "ABCDEFG")
        #expect(DeviceToken("abc0123").comparable == "abc0123")
        #expect(DeviceToken("").comparable == "")
        let bridged = String(decoding: Array("7F3C".utf8), as: UTF8.self)
        #expect(DeviceToken(bridged).comparable == "7f3c")
    }

    /// One expected push, whatever lists it: a scenario's (a spec, once) or `check --expect`'s
    /// (any spec, a count); tokens match in their comparable form.
    @Test func expectedPushesAreMatchedByTokenSpecAndCount() {
        var tally = DeliveryTally()
        tally.add(token: "ABCDEF01", status: 200, spec: "poolse.ring.apns", sequence: 1)
        tally.add(token: "fcm-1", status: 503, spec: "poolse.ring.fcm", sequence: 2)
        tally.add(token: "fcm-1", status: 200, spec: "poolse.ring.fcm", sequence: 3)
        tally.add(token: "fcm-2", status: 200, spec: nil, sequence: 4)
        tally.add(token: "fcm-2", status: 200, spec: "poolse.message.fcm", sequence: 5)
        tally.add(token: "fcm-3", status: 200, spec: "poolse.ring.fcm", sequence: 6)
        tally.add(token: nil, status: 200, spec: nil, sequence: 7)
        let comparison = tally.compare(with: [
            ExpectedPush(device: "alice/phone", token: "abcdef01", spec: "poolse.ring.apns"),
            ExpectedPush(token: "fcm-1", spec: "poolse.ring.fcm"),
            ExpectedPush(token: "fcm-2", spec: nil, count: 2),
            ExpectedPush(token: "fcm-4", spec: "poolse.ring.fcm"),
        ])
        #expect(comparison.expectedCount == 5)
        #expect(comparison.asExpected == 4)
        #expect(comparison.missing.map { "\($0.entry.token) \($0.got)" } == ["fcm-4 0"])
        #expect(comparison.unexpected.map { "\($0.token) \($0.sequence)" } == ["fcm-3 6"])
        #expect(comparison.problems.first == "missing: poolse.ring.fcm to fcm-4: expected 1, accepted 0")
    }
}
