// The arrival matcher as a state machine, without sockets: which event each push belongs to,
// what its latency is measured from, and the cleanup findings a load run reports.
import Driver
import JSON
import RecordLine
import Scenario
import ScenarioLoad
import ScenarioRunner
import Testing

private func arrival(token: String, status: Int = 200, reason: String? = nil, spec: String = "poolse.ring.fcm") -> RecordedExchange {
    RecordedExchange(sequence: 0, route: .fcm, path: "/v1/projects/p/messages:send",
                     body: Array(#"{"message":{"token":"\#(token)"}}"#.utf8), status: status, reason: reason,
                     verdict: RecordedVerdict(judgement: .init(spec: spec, ok: true)))
}

private let ms: UInt64 = 1_000_000
private let plan = LoadPlan(scenario: "test", model: .closed(concurrency: 1, count: 2))

@Suite struct ArrivalMatcherTests {
    /// A split run whose sender fans out itself: another segment handed event 1 over at its
    /// intended time (100 ms) before this one expected it. Its push waits past the horizon, and
    /// is matched, timed from 100 ms, once the event is expected; one before the horizon is not held.
    @Test func anArrivalPastTheHorizonWaitsForItsEventToBeExpected() {
        var matcher = ArrivalMatcher(graceNanoseconds: 0) { $0 }
        matcher.hold(from: 0)
        #expect(matcher.receive(arrival(token: "tok-a"), at: 5 * ms) == nil, "event 0 is not expected yet: held")
        #expect(matcher.unexpected == 0)
        matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        #expect(matcher.hold(from: 100 * ms) == [5 * ms], "matched once its event is expected")
        #expect(matcher.receive(arrival(token: "tok-b"), at: 120 * ms) == nil, "past the horizon: held")
        matcher.expect(event: 1, intended: 100 * ms, started: 100 * ms, pushes: [ExpectedPush(token: "tok-b", spec: "poolse.ring.fcm")])
        #expect(matcher.hold(from: .max) == [20 * ms], "from event 1's intended time")
        #expect(matcher.receive(arrival(token: "tok-c"), at: 130 * ms) == nil)
        #expect(matcher.unexpected == 1, "no horizon: matched at once, and no event called for it")
        #expect(matcher.outstanding == 0)
    }

    @Test func aPushIsMatchedToItsEventAndTimedFromTheEventsIntendedTime() {
        var matcher = ArrivalMatcher(graceNanoseconds: 0) { $0 }
        // Event 0 was due at 0 but handed over at 30 ms (the sender was behind): latency runs from 0.
        matcher.expect(event: 0, intended: 0, started: 30 * ms, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm"),
                                                                           ExpectedPush(token: "tok-b", spec: "poolse.ring.fcm")])
        #expect(matcher.arrive(arrival(token: "tok-a"), at: 40 * ms) == 40 * ms)
        #expect(matcher.arrive(arrival(token: "tok-b"), at: 50 * ms) == 50 * ms)
        #expect(matcher.outstanding == 0)
        let (summary, cleanup) = matcher.finish(plan: plan, played: 1, planned: 1, elapsed: 60 * ms, lateAfter: 10 * ms, store: nil)
        #expect(summary.counts.sent == 2)
        #expect(summary.counts.delivered == 2)
        #expect(summary.counts.lateIterations == 1, "handed over 30 ms late")
        #expect(summary.latency.count == 2)
        #expect(summary.latency.max >= 49 * ms, "from the intended time, not the late start")
        #expect(summary.serviceTime.max < 21 * ms, "from the actual start")
        #expect(summary.timeToRingAll.count == 1)
        #expect(summary.counts.fanOutsFullyDelivered == 1)
        #expect(cleanup.allSatisfy { $0.passed })
    }

    /// A retry of a 429 with Retry-After: 1 that comes 200 ms later is counted, named, and
    /// fails the scenario's default thresholds; one that waits the second is not.
    @Test func aRetryBeforeRetryAfterIsCountedAndFailsTheDefaultThresholds() {
        for (retryAt, tooSoon) in [(200 * ms, true), (1_100 * ms, false)] {
            var matcher = ArrivalMatcher(graceNanoseconds: 0) { $0 }
            matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
            var refused = arrival(token: "tok-a", status: 429, reason: "QUOTA_EXCEEDED")
            refused.retryAfterSeconds = 1
            matcher.arrive(refused, at: 10 * ms)
            matcher.arrive(arrival(token: "tok-a"), at: retryAt)
            let (summary, _) = matcher.finish(plan: plan, played: 1, planned: 1, elapsed: 2_000 * ms, lateAfter: 10 * ms, store: nil)
            #expect(summary.counts.retriesTooSoon == (tooSoon ? 1 : 0))
            #expect(summary.notes.contains { $0.contains("retry too soon: push #2 to tok-a came 0.190 s after push #1 was answered 429 "
                                                          + "QUOTA_EXCEEDED with Retry-After: 1") } == tooSoon, "\(summary.notes)")
            let report = RunReport(summary: summary, thresholds: Thresholds().withScenarioDefaults())
            #expect(report.passed == !tooSoon, "\(report.failureMessages)")
        }
    }

    @Test func aTransientAnswerWaitsForTheRetryAndAWrongSpecIsUnexpected() {
        var matcher = ArrivalMatcher(graceNanoseconds: 0) { $0 }
        matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        #expect(matcher.arrive(arrival(token: "tok-a", status: 503, reason: "UNAVAILABLE"), at: 1 * ms) == nil)
        #expect(matcher.outstanding == 1)
        #expect(matcher.arrive(arrival(token: "tok-a", spec: "poolse.message.fcm"), at: 2 * ms) == nil)
        #expect(matcher.arrive(arrival(token: "tok-a"), at: 3 * ms) == 3 * ms)
        #expect(matcher.unexpected == 1)
        #expect(matcher.transientAnswers == 1)
        let (summary, _) = matcher.finish(plan: plan, played: 1, planned: 1, elapsed: 4 * ms, lateAfter: 10 * ms, store: nil)
        #expect(summary.counts.completed == 1)
        #expect(summary.notes.contains { $0.contains("1 pushes reached the gateway that no event called for") })
    }

    @Test func aPushToATokenAnsweredDeadBeforeItsEventIsACleanupFinding() {
        var matcher = ArrivalMatcher(graceNanoseconds: 5 * ms) { "person/" + $0 }
        matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED"), at: 1 * ms)
        matcher.finished(event: 0, at: 2 * ms)
        #expect(matcher.takeNewlyDead() == ["tok-a"])
        #expect(matcher.isDead("tok-a"))
        // The sender was told at 1 ms and still pushed for an event handed over at 20 ms.
        matcher.expect(event: 1, intended: 20 * ms, started: 20 * ms, pushes: [ExpectedPush(token: "tok-b", spec: "poolse.ring.fcm")])
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED"), at: 21 * ms)
        let (summary, cleanup) = matcher.finish(plan: plan, played: 2, planned: 2, elapsed: 30 * ms, lateAfter: 10 * ms, store: nil)
        #expect(summary.counts.tokensRemoved == 1)
        #expect(summary.counts.abandoned == 1, "tok-b never arrived")
        let deadRule = cleanup.first { $0.rule == "no push to a dead token" }
        #expect(deadRule?.problems.count == 1)
        #expect(deadRule?.problems.first?.contains("person/tok-a") == true)
        // Counted, so a threshold can bound it as k6 users write it.
        #expect(summary.counts.deadTokenPushes == 1)
        let bound = Thresholds([try! Threshold(parsing: "dead_token_pushes==0")])
        #expect(!RunReport(summary: summary, thresholds: bound).passed)
        #expect(try! Threshold(parsing: "abandoned==0").metric == .missing)
        #expect(try! Threshold(parsing: "retry_after_violations==0").metric == .retriesTooSoon)
    }

    @Test func anExpectedPushToATokenThatDiedMeanwhileIsNotMissingAndTheStoreIsCompared() {
        var matcher = ArrivalMatcher(graceNanoseconds: 0) { $0 }
        matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED"), at: 1 * ms)
        matcher.expect(event: 1, intended: 2 * ms, started: 2 * ms, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        let listed = [ListedDevice(id: "a", token: "tok-a")]
        let (summary, cleanup) = matcher.finish(plan: plan, played: 2, planned: 2, elapsed: 3 * ms, lateAfter: 10 * ms,
                                                store: (listed, ["tok-a", "tok-b"]))
        #expect(summary.counts.abandoned == 0, "a sender is right to skip a dead token")
        #expect(summary.counts.sent == 1)
        let store = cleanup.first { $0.rule == "the sender's store matches the gateway's answers" }
        #expect(store?.problems.count == 2, "kept the dead tok-a, lost the live tok-b: \(store?.problems ?? [])")
    }

    @Test func aPushWaitingWhenItsTokenDiesIsOptionalForEventsHandedOverSince() {
        var matcher = ArrivalMatcher(graceNanoseconds: 5 * ms) { $0 }
        matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        // Events overlap: event 1 is handed over before event 0's push to tok-a is answered.
        matcher.expect(event: 1, intended: 2 * ms, started: 2 * ms, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.message.fcm")])
        matcher.expect(event: 2, intended: 4 * ms, started: 4 * ms, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.message.fcm")])
        #expect(matcher.outstanding == 3)
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED"), at: 3 * ms)
        // Event 1 was decided before the answer: its push must come. Event 2's need not.
        #expect(matcher.outstanding == 1)
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED", spec: "poolse.message.fcm"), at: 5 * ms)
        #expect(matcher.outstanding == 0)
        // Event 2's push comes anyway, within the grace: matched, not unexpected, no finding.
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED", spec: "poolse.message.fcm"), at: 6 * ms)
        #expect(matcher.unexpected == 0)
        let (summary, cleanup) = matcher.finish(plan: plan, played: 3, planned: 3, elapsed: 7 * ms, lateAfter: 10 * ms, store: nil)
        #expect(summary.counts.sent == 3)
        #expect(summary.counts.tokensRemoved == 3)
        #expect(summary.counts.abandoned == 0)
        #expect(cleanup.allSatisfy { $0.passed }, "\(cleanup.flatMap(\.problems))")
    }

    /// With events in flight a loaded sender reads an answer late: until it finished the event
    /// whose push was answered dead (and the grace after), a push it decided is not a finding.
    @Test func aSenderHasHeardOfADeadTokenOnceItFinishedTheEventThatPushedToIt() {
        var matcher = ArrivalMatcher(graceNanoseconds: 5 * ms) { $0 }
        matcher.expect(event: 0, intended: 0, started: 0, pushes: [ExpectedPush(token: "tok-a", spec: "poolse.ring.fcm")])
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED"), at: 1 * ms)
        // Event 0 is still delivering at 20 ms: event 1's push to tok-a was decided before the sender heard.
        matcher.expect(event: 1, intended: 20 * ms, started: 20 * ms, pushes: [])
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED", spec: "poolse.message.fcm"), at: 21 * ms)
        matcher.finished(event: 0, at: 30 * ms)
        matcher.finished(event: 1, at: 31 * ms)
        // Event 2 was handed over well after event 0 finished: its push to tok-a is a finding.
        matcher.expect(event: 2, intended: 40 * ms, started: 40 * ms, pushes: [])
        matcher.arrive(arrival(token: "tok-a", status: 404, reason: "UNREGISTERED", spec: "poolse.message.fcm"), at: 41 * ms)
        #expect(matcher.unexpected == 1, "only event 2's push")
        let (_, cleanup) = matcher.finish(plan: plan, played: 3, planned: 3, elapsed: 50 * ms, lateAfter: 10 * ms, store: nil)
        let deadRule = cleanup.first { $0.rule == "no push to a dead token" }
        #expect(deadRule?.problems.count == 1, "\(deadRule?.problems ?? [])")
        #expect(deadRule?.problems.first?.contains("answered dead 39 ms before") == true, "\(deadRule?.problems ?? [])")
    }
}
