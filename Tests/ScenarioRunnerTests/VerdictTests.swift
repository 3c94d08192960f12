import JSON
import PushModel
import RecordLine
import Scenario
@testable import ScenarioRunner
import Testing

private func push(_ sequence: Int, token: String, status: Int, reason: String? = nil, spec: String = "poolse.ring.fcm",
                  ok: Bool = true) -> RecordedExchange {
    RecordedExchange(sequence: sequence, route: .fcm, path: "/v1/projects/p/messages:send",
                     body: Array(#"{"message":{"token":"\#(token)","data":{"reason":"declined"}}}"#.utf8), status: status, reason: reason,
                     verdict: RecordedVerdict(judgement: .init(spec: spec, ok: ok)))
}

private let names = ["tok-a": "alice/a-android", "tok-b": "bob/b-android", "tok-c": "bob/b-ios"]
private func name(_ token: String) -> String { names[token] ?? token }

@Suite struct VerdictTests {
    @Test func exactlyTheExpectedDeliveriesPass() {
        let verdict = EventJudge.judge(index: 0, type: "call.placed", oracle: "expect", source: nil,
                                       expected: [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm")],
                                       exchanges: [push(1, token: "tok-a", status: 503, reason: "UNAVAILABLE"), push(2, token: "tok-a", status: 200)],
                                       cleanup: CleanupState(), deviceName: name)
        #expect(verdict.passed, "\(verdict.problems)")
        #expect(verdict.delivered.count == 1)
    }

    @Test func missingUnexpectedAndDuplicateAreEachReported() {
        let verdict = EventJudge.judge(index: 0, type: "call.placed", oracle: "expect", source: "Sent to every registered device",
                                       expected: [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm"),
                                                  ExpectedPush(device: "b-ios", token: "tok-c", spec: "poolse.ring.fcm")],
                                       exchanges: [push(1, token: "tok-a", status: 200), push(2, token: "tok-a", status: 200),
                                                   push(3, token: "tok-b", status: 200)],
                                       cleanup: CleanupState(), deviceName: name)
        let kinds = verdict.problems.map(\.kind)
        #expect(kinds.contains(.duplicate))
        #expect(kinds.contains(.wrongToken), "tok-b is bob's other token: \(verdict.problems)")
        #expect(verdict.problems.first { $0.kind == .missing }?.source == "Sent to every registered device")
    }

    /// A missing push says what the gateway answered the pushes that did go to the device; a
    /// sender refused on every push (a DER-encoded signature) is not blamed for dropping the
    /// token: it kept pushing it.
    @Test func aMissingPushSaysWhatTheGatewayAnswered() {
        var refused = push(1, token: "tok-a", status: 403, reason: "InvalidProviderToken")
        refused.detail = "the signature is 71 bytes, not 64: DER-encoded?"
        var cleanup = CleanupState()
        cleanup.absorb([refused], event: 0, badTokens: [])
        var again = refused
        again.sequence = 2
        let verdict = EventJudge.judge(index: 1, type: "call.placed", oracle: "expect", source: nil,
                                       expected: [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm")],
                                       exchanges: [again], cleanup: cleanup, deviceName: name)
        #expect(verdict.problems.map(\.kind) == [.missing], "\(verdict.problems)")
        #expect(verdict.problems.first?.message == "missing: poolse.ring.fcm to alice/a-android (accepted 0 of 1); the gateway answered #2: "
                + "403 InvalidProviderToken (the signature is 71 bytes, not 64: DER-encoded?)")
        // Nothing went to it at all: then it was dropped.
        let dropped = EventJudge.judge(index: 1, type: "call.placed", oracle: "expect", source: nil,
                                       expected: [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm")],
                                       exchanges: [], cleanup: cleanup, deviceName: name)
        #expect(dropped.problems.map(\.kind) == [.droppedOnPayloadError, .missing])
    }

    /// A retry of a 429 or 503 before its Retry-After passed is a finding; one after it is not.
    @Test func aRetryBeforeRetryAfterIsAFinding() {
        func answered(_ exchange: RecordedExchange, atSeconds seconds: Double, retryAfter: Int? = nil) -> RecordedExchange {
            var exchange = exchange
            exchange.answeredNanos = UInt64(seconds * 1e9)
            exchange.retryAfterSeconds = retryAfter
            return exchange
        }
        let expected = [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm")]
        let refused = answered(push(1, token: "tok-a", status: 429, reason: "QUOTA_EXCEEDED"), atSeconds: 100, retryAfter: 2)
        for (retryAt, tooSoon) in [(100.5, true), (102.1, false)] {
            let verdict = EventJudge.judge(index: 0, type: "call.placed", oracle: "expect", source: nil, expected: expected,
                                           exchanges: [refused, answered(push(2, token: "tok-a", status: 200), atSeconds: retryAt)],
                                           cleanup: CleanupState(), deviceName: name)
            #expect(verdict.problems.map(\.kind) == (tooSoon ? [.retryTooSoon] : []), "\(retryAt): \(verdict.problems)")
            if tooSoon {
                #expect(verdict.problems[0].message == "retry too soon: request #2 to alice/a-android came 0.500 s after request #1 was "
                        + "answered 429 QUOTA_EXCEEDED with Retry-After: 2 (wait at least 2 s)")
            }
        }
    }

    @Test func pinnedHeadersAreChecked() {
        var expected = ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm")
        expected.headers = [("apns-collapse-id", "missed-k1"), ("apns-expiration", nil)]
        var sent = push(1, token: "tok-a", status: 200)
        sent.headers = [("apns-collapse-id", "k1"), ("apns-expiration", "0")]
        let verdict = EventJudge.judge(index: 1, type: "call.ended", oracle: "expect", source: nil, expected: [expected],
                                       exchanges: [sent], cleanup: CleanupState(), deviceName: name)
        #expect(verdict.problems.map(\.message) == [
            "poolse.ring.fcm to a-android at header apns-collapse-id: expected \"missed-k1\", found \"k1\"",
            "poolse.ring.fcm to a-android at header apns-expiration: expected none, found \"0\"",
        ])
    }

    @Test func pinnedFieldsAreChecked() throws {
        let expected = ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm",
                                    fields: [(try #require(JSONPointer("/message/data/reason")), "answered_elsewhere")])
        let verdict = EventJudge.judge(index: 1, type: "call.answered", oracle: "expect", source: nil, expected: [expected],
                                       exchanges: [push(1, token: "tok-a", status: 200)], cleanup: CleanupState(), deviceName: name)
        #expect(verdict.problems.map(\.kind) == [.field])
        #expect(verdict.problems[0].message.contains("expected \"answered_elsewhere\", found \"declined\""))
    }

    @Test func aGoneTokenMustGetNoLaterPush() {
        var cleanup = CleanupState()
        cleanup.absorb([push(1, token: "tok-a", status: 404, reason: "UNREGISTERED")], event: 0, badTokens: [])
        #expect(cleanup.dead["tok-a"]?.answer == .gone)
        let later = EventJudge.judge(index: 1, type: "call.placed", oracle: "expect", source: nil, expected: [],
                                     exchanges: [push(2, token: "tok-a", status: 404, reason: "UNREGISTERED")], cleanup: cleanup, deviceName: name)
        #expect(later.problems.map(\.kind) == [.deadTokenPush])
        #expect(later.problems[0].cleanupRule?.name == "no push to a dead token")
        cleanup.registered("tok-a")
        #expect(cleanup.dead["tok-a"] == nil && cleanup.reRegistered.contains("tok-a"))
        let skipped = EventJudge.judge(index: 2, type: "call.placed", oracle: "expect", source: nil,
                                       expected: [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm")],
                                       exchanges: [], cleanup: cleanup, deviceName: name)
        #expect(skipped.problems.map(\.kind) == [.notPushedAfterRegistering, .missing])
    }

    @Test func aTokenDroppedOnATransientErrorIsNamed() {
        var cleanup = CleanupState()
        cleanup.absorb([push(1, token: "tok-b", status: 503, reason: "UNAVAILABLE")], event: 0, badTokens: [])
        let verdict = EventJudge.judge(index: 1, type: "message.sent", oracle: "expect", source: nil,
                                       expected: [ExpectedPush(device: "b-android", token: "tok-b", spec: "poolse.ring.fcm")],
                                       exchanges: [], cleanup: cleanup, deviceName: name)
        #expect(verdict.problems.first?.kind == .droppedOnTransient)
        #expect(verdict.problems.first?.message.contains("token dropped on a transient error") == true)
    }

    @Test func answersAreClassifiedAsTheProvidersMeanThem() {
        #expect(AnswerClass.of(status: 410, reason: "Unregistered", tokenIsBad: false) == .gone)
        #expect(AnswerClass.of(status: 400, reason: "BadDeviceToken", tokenIsBad: false) == .bad)
        #expect(AnswerClass.of(status: 400, reason: "INVALID_ARGUMENT", tokenIsBad: true) == .bad)
        #expect(AnswerClass.of(status: 400, reason: "INVALID_ARGUMENT", tokenIsBad: false) == .payloadError)
        #expect(AnswerClass.of(status: 0, reason: nil, tokenIsBad: false) == .transient)
        #expect(AnswerClass.of(status: 429, reason: "TooManyRequests", tokenIsBad: false) == .transient)
        #expect(AnswerClass.of(status: 403, reason: "SENDER_ID_MISMATCH", tokenIsBad: false) == .otherSender)
    }

    @Test func theStoreIsComparedWithTheGatewaysAnswers() {
        let problems = EventJudge.compareStore(listed: [ListedDevice(id: "alice-phone", token: "tok-a")], live: ["tok-b"], dead: ["tok-a"],
                                               deviceName: name)
        #expect(problems.count == 2)
        #expect(problems.allSatisfy { $0.kind == .storeMismatch })
    }

    /// A store that lists one device twice and lost another is not even: the loss is named.
    /// Tokens are compared in any case, and a dead token still held is named however it is listed.
    @Test func aDeviceListedTwiceDoesNotHideALostOne() {
        let lowercase = String(repeating: "ab", count: 32), other = String(repeating: "cd", count: 32)
        let listed = [ListedDevice(id: "alice-phone", token: lowercase.uppercased()), ListedDevice(id: "alice-phone", token: lowercase),
                      ListedDevice(id: "bob-phone", token: "tok-dead"), ListedDevice(id: "bob-phone", token: "tok-dead")]
        let problems = EventJudge.compareStore(listed: listed, live: [DeviceToken(lowercase), DeviceToken(other)], dead: ["tok-dead"],
                                               deviceName: { $0 == other ? "carol/c-phone" : $0 })
        #expect(problems.map(\.message) == [
            "the sender's store still holds tok-dead, whose token was answered gone or bad",
            "the sender's store lost carol/c-phone, whose token is live",
        ])
        let even = EventJudge.compareStore(listed: Array(listed.prefix(1)) + [ListedDevice(id: "carol-phone", token: other)],
                                           live: [DeviceToken(lowercase), DeviceToken(other)], dead: ["tok-dead"], deviceName: { $0 })
        #expect(even.isEmpty)
    }
}

/// A verdict lists at most `ProblemList.listedPerKind` problems of a kind and counts the rest,
/// so a sender that misses a whole fan-out gets a report of bounded size.
@Suite struct ProblemCapTests {
    @Test func aMissedFanOutListsAHundredAndCountsTheRest() {
        let expected = (0..<250).map { ExpectedPush(device: "p\($0)/android", token: "tok-\($0)", spec: "poolse.ring.fcm") }
        let verdict = EventJudge.judge(index: 0, type: "call.placed", oracle: "expect", source: nil, expected: expected,
                                       exchanges: [push(1, token: "tok-x", status: 200)], cleanup: CleanupState(), deviceName: name)
        let missing = verdict.problems.filter { $0.kind == .missing }
        #expect(missing.count == ProblemList.listedPerKind + 1)
        #expect(missing.last?.message == "… and 150 more missing problems in this event")
        #expect(missing.first?.message == "missing: poolse.ring.fcm to tok-0 (accepted 0 of 1)")
        // Other kinds keep their own count.
        #expect(verdict.problems.filter { $0.kind == .unexpected }.count == 1)
        #expect(verdict.expected.count == 250)
    }

    /// Fed one exchange at a time, as `run` feeds it while the sender sends, the judgement
    /// says what judging the whole list at once says.
    @Test func judgingAsPushesArriveEqualsJudgingTheList() {
        let expected = [ExpectedPush(device: "a-android", token: "tok-a", spec: "poolse.ring.fcm"),
                        ExpectedPush(device: "b-ios", token: "tok-c", spec: "poolse.ring.fcm")]
        let exchanges = [push(1, token: "tok-a", status: 503, reason: "UNAVAILABLE"), push(2, token: "tok-a", status: 200),
                         push(3, token: "tok-a", status: 200), push(4, token: "tok-b", status: 200)]
        let whole = EventJudge.judge(index: 0, type: "call.placed", oracle: "expect", source: nil, expected: expected,
                                     exchanges: exchanges, cleanup: CleanupState(), deviceName: name)
        var judgement = EventJudgement(index: 0, type: "call.placed", oracle: "expect", source: nil, expected: expected,
                                       cleanup: CleanupState(), deviceName: { names[$0] ?? $0 })
        for exchange in exchanges { judgement.observe(exchange) }
        let streamed = judgement.verdict()
        #expect(streamed.problems.map(\.message) == whole.problems.map(\.message))
        #expect(streamed.problems.map(\.kind) == [.missing, .duplicate, .wrongToken])
        #expect(streamed.delivered.map(\.sequence) == [2, 3, 4])
    }
}

/// The oracle keeps an FCM reference without its token, so a fan-out's references share one
/// body; the judge puts the token back before comparing.
@Suite struct CutReferenceTests {
    @Test func aTokenCutOutComesBackWhereItWas() throws {
        let body = Array(#"{"message":{"token":"fcm-token-1","data":{"type":"call"}}}"#.utf8)
        let reference = ContentReference(headers: [], body: body, decidedAtMs: 7)
        let cut = try #require(reference.cuttingToken("fcm-token-1"))
        let other = try #require(ContentReference(headers: [], body: Array(#"{"message":{"token":"fcm-token-22","data":{"type":"call"}}}"#.utf8),
                                                  decidedAtMs: 7).cuttingToken("fcm-token-22"))
        #expect(cut.body == other.body, "the same message to two devices: one body")
        #expect(cut.withToken("fcm-token-1").body == body)
        #expect(cut.withToken("fcm-token-1").tokenOffset == nil)
        // The judge asks whether a push's body is the reference with its token, piece by piece.
        #expect(cut.bodyEquals(body, token: "fcm-token-1"))
        #expect(!cut.bodyEquals(body, token: "fcm-token-2"), "another device's token")
        #expect(!cut.bodyEquals(Array(#"{"message":{"token":"fcm-token-1","data":{"type":"cal"}}}"#.utf8), token: "fcm-token-1"))
        #expect(!cut.bodyEquals(Array(#"{"message":{"token":"fcm-token-1","data":{"type":"call"}}} "#.utf8), token: "fcm-token-1"))
        #expect(!cut.bodyEquals(Array(#"{"message":{"token":"fcm-token-1""#.utf8), token: "fcm-token-1"), "a body cut short")
        #expect(!cut.bodyEquals([], token: ""))
        #expect(reference.bodyEquals(body, token: "ignored: nothing was cut"))
        // A body without that token as `message.token` is kept whole.
        #expect(reference.cuttingToken("fcm-token-") == nil)
        #expect(reference.cuttingToken("another") == nil)
    }
}

@Suite struct DeliveredPushesTests {
    /// The pushes that counted for their own expectation are kept as its position; the list
    /// reads back in arrival order with every device, spec and sequence as judged.
    @Test func aJudgedEventListsItsDeliveriesInTheOrderTheyCame() {
        let expected = [ExpectedPush(device: "alice/a-android", token: "tok-a", spec: "poolse.ring.fcm"),
                        ExpectedPush(device: "bob/b-android", token: "tok-b", spec: "poolse.ring.fcm")]
        let verdict = EventJudge.judge(index: 0, type: "call.placed", oracle: "reference rules", source: nil, expected: expected,
                                       exchanges: [push(7, token: "tok-b", status: 200), push(8, token: "tok-c", status: 200),
                                                   push(9, token: "tok-a", status: 200), push(10, token: "tok-a", status: 200)],
                                       cleanup: CleanupState(), deviceName: name)
        let listed = verdict.delivered.map { "\($0.device) \($0.spec ?? "-") #\($0.sequence)" }
        #expect(listed == ["bob/b-android poolse.ring.fcm #7", "bob/b-ios poolse.ring.fcm #8",
                           "alice/a-android poolse.ring.fcm #9", "alice/a-android poolse.ring.fcm #10"])
        #expect(verdict.delivered.count == 4)
    }

    @Test func anArrayOfDeliveriesReadsBackAsItWas() {
        let pushes: [DeliveredPushes.Element] = [("d1", "s", 1), ("d2", nil, 2)]
        let delivered = DeliveredPushes(pushes)
        #expect(delivered.map(\.device) == ["d1", "d2"])
        #expect(delivered.map(\.sequence) == [1, 2])
        #expect(delivered[1].spec == nil)
    }
}

/// `run` keys an event's expectation by the device positions of its device index: arrays for an
/// event that reaches many of the devices, a table for a few pushes, and keys of its own for a
/// token the index does not know. Each way, the verdict is the one keyed by token.
@Suite struct ExpectationByPositionTests {
    @Test func positionsAndTokensGiveTheSameVerdict() {
        var scenario = Scenario(name: "positions", product: .poolse)
        scenario.people = ScenarioPeople((0..<20).map { person in
            Person(id: "p\(person)", name: "P\(person)", externalID: "x\(person)",
                   devices: [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true),
                             ScenarioDevice(id: "p\(person)-android", platform: .android)])
        })
        let index = ScenarioDeviceIndex(scenario)
        let tokens = index.entries.map(\.device.token)
        #expect(tokens[2] != tokens[2].uppercased(), "an APNs token, compared without case")
        // Two of 40 devices: a table; all 40: arrays.
        // Dead before the event: a device of the index, and a token it does not know too.
        var deadKnown = CleanupState()
        deadKnown.absorb(push(0, token: tokens[10], status: 410, reason: "UNREGISTERED"), event: 0, badTokens: [])
        var deadUnknownToo = deadKnown
        deadUnknownToo.absorb(push(0, token: "tok-dead-elsewhere", status: 410, reason: "UNREGISTERED"), event: 0, badTokens: [])
        for reached in [[2, 4], Array(0..<40)] { for cleanup in [CleanupState(), deadKnown, deadUnknownToo] {
            let expected = reached.map { ExpectedPush(device: index.name(at: $0), token: tokens[$0], spec: "poolse.ring.fcm",
                                                      devicePosition: Int32($0)) }
                + [ExpectedPush(device: "stranger", token: "tok-stranger", spec: "poolse.ring.fcm")]
            let exchanges = [push(1, token: tokens[2].uppercased(), status: 200), push(2, token: tokens[2], status: 200),
                             push(3, token: tokens[6], status: 200, spec: "poolse.message.fcm"), push(4, token: "tok-stranger", status: 200),
                             push(5, token: tokens[4], status: 410, reason: "UNREGISTERED"), push(6, token: "tok-other", status: 200),
                             push(7, token: tokens[10], status: 200), push(8, token: "tok-dead-elsewhere", status: 200)]
            var byPosition = EventJudgement(index: 0, type: "call.placed", oracle: "expect", source: nil, expected: expected,
                                            cleanup: cleanup, deviceName: { index.name(ofToken: $0) }, devices: index)
            var byToken = EventJudgement(index: 0, type: "call.placed", oracle: "expect", source: nil, expected: expected,
                                         cleanup: cleanup, deviceName: { index.name(ofToken: $0) })
            for exchange in exchanges {
                byPosition.observe(exchange)
                byToken.observe(exchange)
            }
            let (positioned, tokened) = (byPosition.verdict(), byToken.verdict())
            #expect(positioned.problems == tokened.problems)
            #expect(positioned.delivered.map(\.sequence) == tokened.delivered.map(\.sequence))
            #expect(positioned.delivered.map(\.device) == tokened.delivered.map(\.device))
            let messages = positioned.problems.map(\.message)
            #expect(messages.contains { $0.hasPrefix("duplicate: poolse.ring.fcm to p1/p1-voip accepted 2 times") })
            #expect(messages.contains { $0.hasPrefix("missing: poolse.ring.fcm to p2/p2-voip (accepted 0 of 1); the gateway answered #5") })
            #expect(messages.contains("unexpected: poolse.message.fcm to p3/p3-voip (request #3)"))
            #expect(messages.contains("unexpected: poolse.ring.fcm to tok-other (request #6)"))
            #expect(!messages.contains { $0.contains("stranger") }, "a token the index does not know is expected by its own key")
            let deadPushes = positioned.problems.filter { $0.kind == .deadTokenPush }.map(\.message)
            #expect(deadPushes.count == cleanup.dead.count)
            #expect(deadPushes.contains { $0.contains("p5/p5-voip") } == !cleanup.dead.isEmpty)
        } }
    }

    /// A verdict lists an indexed device by its position while the run goes and names it when
    /// the run is done (by `DeviceNames`): the same names either way, and no index kept.
    @Test func aVerdictNamesItsDevicesOnceTheRunIsDone() {
        var scenario = Scenario(name: "names", product: .poolse)
        scenario.people = ScenarioPeople((0..<4).map { person in
            Person(id: "p\(person)", name: "P", externalID: "x\(person)",
                   devices: [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true)])
        })
        var index: ScenarioDeviceIndex? = ScenarioDeviceIndex(scenario)
        weak let weakIndex = index
        let tokens = index!.entries.map(\.device.token)
        var verdicts = [0, 1].map { event in
            var judgement = EventJudgement(
                index: event, type: "call.placed", oracle: "reference rules", source: nil,
                expected: (0..<4).map { ExpectedPush(token: tokens[$0], spec: "poolse.ring.apns", devicePosition: Int32($0)) }
                    + [ExpectedPush(token: "tok-stranger", spec: "poolse.ring.apns")],
                cleanup: CleanupState(), deviceName: { $0 }, devices: index)
            judgement.observe(push(1, token: tokens[1], status: 200, spec: "poolse.ring.apns"))
            return judgement.finish()
        }
        let listed = verdicts.map { $0.expected.map(\.device) }
        #expect(listed[0] == ["p0/p0-voip", "p1/p1-voip", "p2/p2-voip", "p3/p3-voip", "tok-stranger"])
        index = nil
        #expect(weakIndex != nil, "the listings hold the index while the run goes")
        let names = weakIndex!.reportNames()
        for event in verdicts.indices { verdicts[event].nameDevices(by: names) }
        #expect(weakIndex == nil, "named, the verdicts hold the index no more")
        #expect(verdicts.map { $0.expected.map(\.device) } == listed)
        #expect(verdicts.map { $0.delivered.map(\.device) } == [["p1/p1-voip"], ["p1/p1-voip"]])
    }

    /// The compact listing reads back every push's device and spec in order, whatever mix of
    /// positions, names and specs (none included) it holds, before and after naming.
    @Test func aListingReadsBackWhatItWasGiven() {
        var scenario = Scenario(name: "listing", product: .poolse)
        scenario.people = ScenarioPeople((0..<3).map { person in
            Person(id: "p\(person)", name: "P", externalID: "x\(person)",
                   devices: [ScenarioDevice(id: "p\(person)-android", platform: .android)])
        })
        let index = ScenarioDeviceIndex(scenario)
        let specs: [String?] = ["poolse.ring.fcm", nil, "poolse.call_finished.fcm", "poolse.ring.fcm", nil]
        let expected = specs.indices.map { number in
            number == 3 ? ExpectedPush(device: "someone/else", token: "tok-x", spec: specs[number])
                : ExpectedPush(token: index.entries[number % 3].device.token, spec: specs[number], devicePosition: Int32(number % 3))
        }
        let listing = ExpectedListings(expected, devices: index)
        let wanted = ["p0/p0-android", "p1/p1-android", "p2/p2-android", "someone/else", "p1/p1-android"]
        #expect(listing.map(\.device) == wanted)
        #expect(listing.map(\.spec) == specs)
        let named = listing.named(by: index.reportNames())
        #expect(named.map(\.device) == wanted)
        #expect(named.map(\.spec) == specs)
        // Listings appended one by one, one of them from another run's index: named at once.
        let other = ScenarioDeviceIndex(scenario)
        var appended: ExpectedListings = [listing[0], ExpectedListings([expected[1]], devices: other)[0], listing[3]]
        appended.append(listing[4])
        #expect(appended.map(\.device) == ["p0/p0-android", "p1/p1-android", "someone/else", "p1/p1-android"])
        #expect(appended.map(\.spec) == ["poolse.ring.fcm", nil, "poolse.ring.fcm", nil])
    }

    /// The oracle's fan-out kept as positions and kinds reads back the pushes it was given,
    /// field by field and whole, and keeps what a removal leaves, in order.
    @Test func expectedPushesReadBackWhatTheyWereGiven() {
        var scenario = Scenario(name: "pushes", product: .poolse)
        scenario.people = ScenarioPeople((0..<3).map { person in
            Person(id: "p\(person)", name: "P", externalID: "x\(person)",
                   devices: [ScenarioDevice(id: "p\(person)-voip", platform: .ios, voip: true)])
        })
        let index = ScenarioDeviceIndex(scenario)
        let ring = ContentReference(headers: [("apns-push-type", "voip")], body: Array(#"{"event":"ring"}"#.utf8), decidedAtMs: 5)
        let missed = ContentReference(headers: [("apns-push-type", "alert")], body: Array(#"{"event":"missed"}"#.utf8), decidedAtMs: 5)
        var pushes = ExpectedPushes(devices: index)
        pushes.append(position: 0, spec: "poolse.ring.apns", reference: ring)
        pushes.append(position: 1, spec: "poolse.ring.apns", reference: ring)
        pushes.append(ExpectedPush(device: "stranger", token: "tok-stranger", spec: nil, count: 2))
        pushes.append(position: 2, spec: "poolse.missed_call.apns", reference: missed)
        pushes.append(position: 1, spec: nil, reference: nil)
        let tokens = index.entries.map(\.device.token)
        #expect(pushes.map(\.token) == [tokens[0], tokens[1], "tok-stranger", tokens[2], tokens[1]])
        #expect(pushes.indices.map(pushes.token(at:)) == pushes.map(\.token))
        #expect(pushes.indices.map(pushes.spec(at:)) == ["poolse.ring.apns", "poolse.ring.apns", nil, "poolse.missed_call.apns", nil])
        #expect(pushes.indices.map(pushes.devicePosition(at:)) == [0, 1, nil, 2, 1])
        #expect(pushes.indices.map(pushes.count(at:)) == [1, 1, 2, 1, 1])
        #expect(pushes.indices.map { pushes.reference(at: $0)?.body } == [ring.body, ring.body, nil, missed.body, nil])
        #expect(pushes[3].reference?.headers.first?.value == "alert")
        #expect(pushes.map(\.device) == [tokens[0], tokens[1], "stranger", tokens[2], tokens[1]])
        var kept = pushes
        kept.removeAll { position, token in position == 2 || token() == "tok-stranger" }
        #expect(kept.map(\.token) == [tokens[0], tokens[1], tokens[1]])
        #expect(kept.indices.map(kept.spec(at:)) == ["poolse.ring.apns", "poolse.ring.apns", nil])
        #expect(ExpectedListings(kept, devices: index).map(\.device) == ["p0/p0-voip", "p1/p1-voip", "p1/p1-voip"])
        #expect(pushes.count == 5, "a copy keeps its pushes")
        let whole = [ExpectedPush(token: "a", spec: "s"), ExpectedPush(token: "b", spec: nil)]
        #expect(ExpectedPushes(whole).whole.map(\.token) == ["a", "b"])
    }
}
