// A scenario played as load through the reference sender against the embedded gateway.
import Driver
import Foundation
import MockGateway
import Scenario
import ScenarioLoad
import ScenarioRunner
import Synchronization
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

    /// A storm: 12 messages to the group, nothing else.
    private static let storm = """
    {"format": 1, "product": "poolse",
     "generate": {"people": 20, "seed": 9, "devices": {"voip": 1, "alert": 1, "android": 0.5}, "gone": 0.1, "name": "Storm"},
     "events": [
    \((0..<12).map { #"  {"type": "message.sent", "conversation": "c0", "message": "m\#($0)", "sender": "p\#($0 % 5)", "text": "hi"}"# }
        .joined(separator: ",\n"))
     ]}
    """

    @Test(arguments: [1, 4])
    func eventsInFlightBoundHowManyEventsAreDeliveringAtOnce(inFlight: Int) async throws {
        let scenario = try Scenario(json: Array(Self.storm.utf8), name: "storm")
        var options = ScenarioLoadOptions()
        options.eventsInFlight = inFlight
        options.drainTimeoutMilliseconds = 10
        // A sender whose deliveries finish only once `inFlight` events were handed over: with
        // one in flight the walk waits for each; with four it must hand over four first.
        let sender = GatedSender(releaseAt: inFlight)
        let result = try await ScenarioLoad.run(scenario, judge: try SpecJudge(directory: specs), sender: sender, options: options)
        #expect(result.aborted == nil)
        #expect(result.summary.counts.iterations == 12)
        #expect(result.peakEventsInFlight == inFlight)
        #expect(sender.acceptedInOrder, "events are handed over one at a time and in order")
    }

    @Test func overlappingEventsThroughTheReferenceSenderCountEveryPushAndKeepCleanupRight() async throws {
        let scenario = try Scenario(json: Array(Self.storm.utf8), name: "storm")
        var options = ScenarioLoadOptions()
        options.eventsInFlight = 6
        let result = try await ScenarioLoad.run(scenario, judge: try SpecJudge(directory: specs), sender: ReferenceSender(), options: options)
        let counts = result.summary.counts
        #expect(result.aborted == nil)
        #expect(counts.iterations == 12)
        #expect(counts.sent > 12 * 10, "12 messages to 19 others")
        #expect(counts.completed == counts.sent, "every expected push reached the gateway")
        #expect(counts.abandoned == 0)
        #expect(counts.delivered + counts.tokensRemoved == counts.completed)
        #expect(result.cleanup.allSatisfy { $0.passed }, "\(result.cleanup.flatMap(\.problems))")
        #expect((1...6).contains(result.peakEventsInFlight))
        #expect(result.summary.modelKind == "closed")
    }
}

/// A sender that sends nothing; each event's delivery is held until `releaseAt` events in all
/// (or the storm's 12) were accepted, so how many overlap is decided by the walk alone.
private final class GatedSender: ScenarioSender {
    private struct State {
        var accepted: [Int] = []
        /// The held deliveries: each ends when its stream is finished.
        var held: [AsyncStream<Void>.Continuation] = []
    }
    private let state = Mutex(State())
    private let releaseAt: Int
    let name = "gated"

    init(releaseAt: Int) { self.releaseAt = releaseAt }

    var acceptedInOrder: Bool { state.withLock { $0.accepted == Array(0..<$0.accepted.count) } }

    func setUp(_ setup: SenderSetup) async {}
    func handle(_ event: ScenarioEvent, index: Int) async {}
    func devices() async -> [ListedDevice]? { nil }
    func tearDown() async {}

    func accept(_ event: ScenarioEvent, index: Int) async -> EventDelivery {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let released = state.withLock { state -> [AsyncStream<Void>.Continuation]? in
            state.accepted.append(index)
            state.held.append(continuation)
            guard state.accepted.count % releaseAt == 0 || state.accepted.count == 12 else { return nil }
            defer { state.held.removeAll() }
            return state.held
        }
        for held in released ?? [] { held.finish() }
        return EventDelivery(Task { for await _ in stream {} })
    }
}
