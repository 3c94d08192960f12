// A scenario played as load through the reference sender against the embedded gateway.
import Driver
import Foundation
import MockGateway
import Scenario
import ScenarioLoad
import ScenarioRunner
import Testing

private let specs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Specs").path

/// 60 people, each with a PushKit token, half with an Android phone; 10% of tokens gone. A call
/// is placed and cancelled, then two messages go to the group.
private let generated = """
{"format": 1, "product": "poolse",
 "generate": {"people": 60, "seed": 5, "devices": {"voip": 1, "alert": 1, "android": 0.5}, "gone": 0.1, "name": "Load"},
 "events": [
  {"type": "call.placed", "call": "k1", "conversation": "c0", "caller": "p0", "media": "audio"},
  {"type": "call.ended", "call": "k1", "reason": "cancelled"},
  {"type": "message.sent", "conversation": "c0", "message": "m1", "sender": "p1", "text": "hi"},
  {"type": "message.sent", "conversation": "c0", "message": "m2", "sender": "p2", "text": "again"}
 ]}
"""

@Suite(.serialized) struct ScenarioLoadTests {
    @Test func everyPushIsCountedTimedAndTheGoneTokensAreCleanedUp() async throws {
        let scenario = try Scenario(json: Array(generated.utf8), name: "generated")
        let gone = scenario.tokenStates.filter { if case .gone = $0.state { true } else { false } }.count
        #expect(gone > 0, "the generator marked some tokens gone")
        var options = ScenarioLoadOptions()
        options.rate = 20
        let progress = ProgressCounters(total: scenario.events.count, plannedSeconds: nil)
        let result = try await ScenarioLoad.run(scenario, judge: try SpecJudge(directory: specs), sender: ReferenceSender(),
                                                options: options, progress: progress)
        let counts = result.summary.counts
        #expect(result.aborted == nil)
        #expect(counts.iterations == 4)
        #expect(counts.sent > 100, "a ring and two messages to 59 others")
        #expect(counts.completed == counts.sent, "every expected push reached the gateway")
        #expect(counts.abandoned == 0)
        #expect(result.summary.latency.count == UInt64(counts.completed))
        #expect(result.summary.timeToRingAll.count == 4, "one per event with pushes")
        // Each gone token that a push reaches is answered gone once and then dropped by the sender.
        #expect(counts.tokensRemoved > 0)
        #expect(counts.tokensRemoved <= gone)
        #expect(counts.delivered + counts.tokensRemoved == counts.completed)
        #expect(result.unexpectedPushes == 0)
        #expect(result.cleanup.count == 4)
        #expect(result.cleanup.allSatisfy { $0.passed }, "\(result.cleanup.flatMap(\.problems))")
        #expect(progress.played.load(ordering: .relaxed) == 4)
        #expect(progress.pushes.load(ordering: .relaxed) == counts.completed)
        #expect(result.summary.modelKind == "open")
    }
}
