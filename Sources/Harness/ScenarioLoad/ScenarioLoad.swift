// A scenario played as load: its events go through any `ScenarioSender` at a rate (open
// model) or back to back (closed), the embedded gateway's observer hands every push it
// answers to an `ArrivalMatcher`, and the Driver's `RunSummary` comes out, so reports,
// thresholds and baselines are those of `drive` (load-testing.md).
import Clocks
import Driver
import Foundation
import JSON
import Metrics
import MockGateway
import PushModel
import RecordLine
import Reports
import Scenario
import ScenarioRunner
import SpecValidator
import Synchronization

public struct ScenarioLoadOptions: Sendable {
    /// Events per second (open model: event i is due i/rate seconds after the start); nil:
    /// each event as soon as the sender has taken the previous one (closed model).
    public var rate: Double?
    /// Instead of `rate`: event i is due when the ramping schedule's iteration i is
    /// (`drive --stages`); events the schedule has no time for are not played.
    public var stages: ArrivalSchedule?
    /// Events come on a schedule (`rate` or `stages`), not back to back.
    public var isOpenModel: Bool { rate != nil || stages != nil }
    /// The end of the run waits for the expected pushes, then for this long without any.
    public var settleMilliseconds = 50
    /// The longest the end of the run waits for the pushes still expected.
    public var drainTimeoutMilliseconds = 10_000
    /// An event handed to the sender this late after its intended time counts as late.
    public var lateAfter: Duration = .milliseconds(10)
    /// A push to a token answered dead this long before its event was handed over, and this
    /// long after the sender finished the event whose push was answered, is a push to a dead
    /// token (the answer must reach the sender and its store first).
    public var cleanupGrace: Duration = .milliseconds(50)
    /// The most events handed to the sender whose pushes it has not finished
    /// (`--events-in-flight`). 1: each event's pushes are answered before the next event is
    /// handed over. Above 1, events are still handed over one at a time and in order (the
    /// sender decides them in order: a call's answer after its ring), but the pushes of
    /// several may be on the wire at once, in any order between events. A sender that answers
    /// on acceptance (an adapter) overlaps events whatever this says.
    public var eventsInFlight = 1
    /// This machine's part of a run split over machines (`drive --scenario --segment`), nil
    /// for the whole run.
    public var segment: ExecutionSegment?
    /// Every segment's common start (`--start-at`): the run waits for it after the sender's
    /// setup, and intended times count from it, so a late start shows as latency.
    public var plannedStart: PlannedStart?

    public init() {}
}

/// What a scenario-driven load run measured.
public struct ScenarioLoadResult: Sendable {
    public var summary: RunSummary
    /// `run`'s token-cleanup rules, each with what broke it.
    public var cleanup: [CleanupFinding]
    /// The sender's `name`.
    public var sender: String
    /// The sender failed (setup or an event); the figures are those of the events before.
    public var aborted: String?
    public var unexpectedPushes: Int
    /// The most events handed over and not finished at once (at most `eventsInFlight`).
    public var peakEventsInFlight: Int
    /// The latency histograms and each event's completion, for a segment's result
    /// (`pushproof merge`).
    public var measured: RunResult
    /// Unix nanoseconds of the run's start (the planned start, late by the wake-up's offset).
    public var actualStartUnixNanoseconds: Int64

    /// What fails the run besides its thresholds (missing and unexpected pushes are bounded by
    /// `Thresholds.withScenarioDefaults`): the sender stopped, a token-cleanup rule broke, or
    /// pushes were expected and none arrived.
    public var findings: [String] {
        var findings: [String] = []
        if let aborted { findings.append("the sender failed: \(aborted)") }
        for finding in cleanup where !finding.passed {
            findings.append("token cleanup '\(finding.rule)' (\(finding.problems.count)): " + finding.problems.prefix(3).joined(separator: "; "))
        }
        if summary.counts.sent > 0, summary.counts.completed == 0 { findings.append("no push reached the gateway") }
        return findings
    }
}

/// A push as the gateway answered it, and when: nanoseconds from the run's start. Copied off
/// the gateway's event loop as it is (the body shared, not copied); the token is read (an FCM
/// body parsed) on the matcher's task, not the loop's.
typealias Arrival = (exchange: RecordedExchange, at: UInt64)

/// Where the gateway's answers reach a load run's matcher: the embedded gateway's observer
/// (`ArrivalObserver`, timed on the loop as each push is answered), or a follower of a
/// `pushproof serve`'s request journal (the CLI's, timed by the gateway's `answered_ns`).
/// Arrivals queue here and the matcher takes them in batches: one wake-up of its task per
/// push (an `AsyncStream` element each) cost the event loop and the matcher a task switch
/// for every push of a 20,000-push ring.
public final class ArrivalFeed: Sendable {
    private let pending = Mutex<[Arrival]>([])
    /// Signalled when an arrival finds the queue empty; at most one signal waits.
    private let signal: AsyncStream<Void>.Continuation
    let signals: AsyncStream<Void>
    /// Monotonic and wall-clock nanoseconds of the run's start, set again when the first event
    /// is due (a push during the sender's setup is timed from the feed's creation, never from 0).
    private let monotonicOrigin = Atomic<UInt64>(SystemClock.monotonicNanoseconds())
    private let wallOrigin = Atomic<UInt64>(SystemClock.wallClockNanoseconds())

    init() {
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The run starts now: arrivals are timed from here.
    func start(monotonic: UInt64) {
        wallOrigin.store(SystemClock.wallClockNanoseconds(), ordering: .relaxed)
        monotonicOrigin.store(monotonic, ordering: .relaxed)
    }

    /// A push answered now, on this machine's monotonic clock (the embedded gateway).
    func arrivedNow(_ exchange: RecordedExchange) {
        queue((exchange, SystemClock.monotonicNanoseconds() &- monotonicOrigin.load(ordering: .relaxed)))
    }

    /// A push the gateway answered at `answeredWallNanos` (its record line's `answered_ns`,
    /// Unix nanoseconds on the gateway's clock: on another machine, clocks must agree, or
    /// latencies shift by the difference).
    public func arrived(_ exchange: RecordedExchange, answeredWallNanos: UInt64) {
        guard exchange.isPush else { return }
        let origin = wallOrigin.load(ordering: .relaxed)
        queue((exchange, answeredWallNanos &- min(origin, answeredWallNanos)))
    }

    private func queue(_ arrival: Arrival) {
        let wasEmpty = pending.withLock { pending in
            defer { pending.append(arrival) }
            return pending.isEmpty
        }
        // The matcher takes everything queued when it wakes: later arrivals need no signal
        // until it has emptied the queue again.
        if wasEmpty { signal.yield() }
    }

    /// Every arrival queued so far, in order.
    func take() -> [Arrival] {
        pending.withLock { pending in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
    }

    func finish() { signal.finish() }
}

/// Hands every push the embedded gateway answers to the feed, timed on arrival.
final class ArrivalObserver: GatewayObserver {
    private let feed: ArrivalFeed

    init(_ feed: ArrivalFeed) { self.feed = feed }

    func observe(_ exchange: GatewayExchange) {
        guard exchange.route.carriesPushes else { return }
        // The body array is shared, not copied; the header fields are left out (none is read).
        feed.arrivedNow(RecordedExchange(exchange, headers: false))
    }
}

/// The matcher, shared by the walk, the arrivals' task and the tasks that wait for events'
/// deliveries (a class: each of those closures holds it).
private final class SharedMatcher: Sendable {
    private let matcher: Mutex<ArrivalMatcher>

    init(_ matcher: ArrivalMatcher) { self.matcher = Mutex(matcher) }

    func withLock<Result: Sendable>(_ body: (inout ArrivalMatcher) -> Result) -> Result { matcher.withLock { body(&$0) } }
}

/// Events handed to the sender whose pushes it has not finished, and the most at once.
private final class EventsInFlight: Sendable {
    private let counts = Mutex((now: 0, peak: 0))

    func began() {
        counts.withLock { counts in
            counts.now += 1
            counts.peak = max(counts.peak, counts.now)
        }
    }

    func ended() { counts.withLock { $0.now -= 1 } }

    var peak: Int { counts.withLock { $0.peak } }
}

public enum ScenarioLoad {
    /// Plays `scenario` through `sender` (fresh) against an embedded gateway. Throws only when
    /// the gateway cannot start; a failing sender ends the run early (`aborted`).
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: ScenarioLoadOptions = ScenarioLoadOptions(),
                           progress: ProgressCounters? = nil) async throws(GatewayStartError) -> ScenarioLoadResult {
        try await run(scenario, judge: judge, sender: sender, options: options, progress: progress) { opening, feed throws(GatewayStartError) in
            try ScenarioRunner.openEmbeddedGateway(opening: opening, observers: [ArrivalObserver(feed)])
        }
    }

    /// Plays `scenario` against the gateway `open` gives, which hands every push it answers
    /// to the feed (the embedded one through its observer; a `pushproof serve` through a
    /// follower of its request journal). `judge` gives the products' bundle ids and FCM projects.
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: ScenarioLoadOptions = ScenarioLoadOptions(),
                           progress: ProgressCounters? = nil,
                           open: (GatewayOpening, ArrivalFeed) async throws(GatewayStartError) -> any ScenarioGateway)
        async throws(GatewayStartError) -> ScenarioLoadResult {
        let app = ScenarioApp(scenario, judge: judge)
        let feed = ArrivalFeed()
        let devices = ScenarioDeviceIndex(scenario)
        let opening = GatewayOpening(scenario, app: app, devices: devices, judge: judge)
        var walk = ScenarioWalk(scenario, devices: devices, opening: opening)
        let gateway = try await open(opening, feed)
        let share = options.segment.map { ScenarioSegment($0, scenario: scenario) }
        var matcher = ArrivalMatcher(graceNanoseconds: options.cleanupGrace.clampedNanoseconds, deviceName: devices.name(ofToken:))
        matcher.badTokens = walk.badTokens
        let shared = SharedMatcher(matcher)
        let consumer = Task {
            func match(_ arrivals: [Arrival]) {
                let (latencies, unexpected, dead, tooSoon) = shared.withLock { matcher in
                    var latencies: [UInt64?] = []
                    latencies.reserveCapacity(arrivals.count)
                    for (exchange, at) in arrivals {
                        var exchange = exchange
                        exchange.readToken()
                        // Another segment's device: that segment matches it (the gateways see every segment's pushes).
                        if let share, !share.owns(token: exchange.deviceToken) { continue }
                        latencies.append(matcher.receive(exchange, at: at))
                    }
                    return (latencies, matcher.unexpected, matcher.deadTokenPushCount, matcher.retriesTooSoon)
                }
                if let progress {
                    for latency in latencies { progress.pushArrived(latencyNanoseconds: latency) }
                    progress.unexpected.store(unexpected, ordering: .relaxed)
                    progress.deadTokenPushes.store(dead, ordering: .relaxed)
                    progress.retriesTooSoon.store(tooSoon, ordering: .relaxed)
                }
            }
            for await _ in feed.signals {
                match(feed.take())
                // Arrivals are timed as they come (on the loop, or by the gateway's clock), and
                // nothing waits on the matcher to start an event: a millisecond's batch costs no
                // accuracy and saves a wake-up a push.
                try? await Task.sleep(for: .milliseconds(1))
            }
            match(feed.take())
        }

        let inFlight = max(1, options.eventsInFlight)
        let schedule = options.stages ?? options.rate.map { rate in
            ArrivalSchedule.constant(rate, for: .nanoseconds(Int64(Double(max(1, scenario.events.count)) / rate * 1e9)))
        }
        let plan = LoadPlan(scenario: scenario.name, model: schedule.map(LoadModel.open) ?? .closed(concurrency: inFlight, count: scenario.events.count),
                            lateAfter: options.lateAfter)
        var aborted: String?
        var played = 0
        let oracle = ScenarioOracle(scenario, app: app, devices: devices, namingDevices: false)
        do {
            try await sender.setUp(SenderSetup(scenario: scenario, app: app, gateway: gateway.access, share: share?.senderShare, devices: devices))
        } catch {
            aborted = "sender setup: \(error)"
        }
        // Set up first, then wait: every segment's events count from the same instant.
        let planned = await options.plannedStart?.wait()
        let start = planned?.start.nanoseconds ?? SystemClock.monotonicNanoseconds()
        let actualStart = planned.map { (options.plannedStart?.unixMilliseconds ?? 0) * 1_000_000 + $0.offsetNanoseconds }
            ?? Int64(SystemClock.wallClockNanoseconds())
        feed.start(monotonic: start)
        func now() -> UInt64 { SystemClock.monotonicNanoseconds() &- start }
        let window = EventsInFlight()
        // Another segment may hand an event over before this one expects it: arrivals wait
        // until every event due before them is expected.
        let striped = share != nil && !sender.restrictsToOwnedDevices
        /// When the event after `index` is due: arrivals from then on wait for it to be expected.
        func horizon(after index: Int) -> UInt64 {
            index + 1 < scenario.events.count ? schedule?.dueTime(of: index + 1) ?? .max : .max
        }
        if striped { shared.withLock { _ = $0.hold(from: horizon(after: -1)) } }
        /// How long pushproof took to decide each event's expected pushes (before its time).
        var ownWork = HDRHistogram()

        // Events are handed over one at a time and in order (`accept`), so the sender decides
        // them in order; up to `inFlight` of them may then be delivering at once.
        await withTaskGroup(of: Void.self) { deliveries in
            var delivering = 0
            events: for (index, event) in scenario.events.enumerated() where aborted == nil {
                while delivering >= inFlight, await deliveries.next() != nil { delivering -= 1 }
                // Cancelled (`--abort-on-fail`): the events not handed over are not played.
                if Task.isCancelled { break events }
                // The rules forget tokens the gateway answered dead, as the sender should have.
                func forgetTheDead() {
                    for token in shared.withLock({ $0.takeNewlyDead() }) {
                        oracle.forget(token: devices.writtenToken(token) ?? token.comparable)
                        walk.died(token)
                    }
                }
                forgetTheDead()
                // pushproof's own work, the event's expected pushes, is done ahead of the event's
                // time, so it is never counted as the sender's latency (a 5,000-person storm's
                // expectations took ~110 ms an event). A token that dies while the event waits
                // is still expected here; the matcher holds a push to it optional.
                let workStarted = now()
                let decided = oracle.expected(for: event, index: index)
                let expected = share.map { share in decided.filter { share.owns(token: DeviceToken($0.token)) } } ?? decided
                ownWork.record(now() &- workStarted)
                let intended: UInt64
                if let schedule {
                    guard let due = schedule.dueTime(of: index) else { break events }
                    intended = due
                } else {
                    intended = now()
                }
                // An event another segment hands over (a sender that fans out itself): this one
                // times its own devices' pushes from the event's intended time, when that segment
                // hands it over. Expected at once, not at that time: its pushes may reach the
                // gateway before this segment wakes for it.
                // Its token states are set here too (every segment sets them alike), so the walk
                // and the matcher know them.
                let handsOver = share?.handsOver(event: index, to: sender) ?? true
                if !handsOver {
                    shared.withLock { matcher in
                        matcher.expect(event: index, intended: intended, started: intended, pushes: expected)
                        matcher.finished(event: index, at: intended)
                        matcher.hold(from: horizon(after: index))
                    }
                }
                let early = now()
                if intended > early { try? await Task.sleep(for: .nanoseconds(Int64(intended - early)), tolerance: .zero, clock: .continuous) }
                forgetTheDead()
                do {
                    if case .tokenState(let token, let state) = try await walk.prepare(event, on: gateway) {
                        shared.withLock { matcher in
                            if state == .bad { matcher.badTokens.insert(DeviceToken(token)) } else {
                                matcher.badTokens.remove(DeviceToken(token))
                            }
                        }
                    }
                } catch {
                    aborted = "event \(index): \(error)"
                    break events
                }
                guard handsOver else {
                    played += 1
                    progress?.played.add(1, ordering: .relaxed)
                    continue
                }
                let started = now()
                shared.withLock { matcher in
                    matcher.expect(event: index, intended: intended, started: started, pushes: expected)
                    if striped { matcher.hold(from: horizon(after: index)) }
                }
                // In flight from the moment it is handed over.
                window.began()
                let delivery: EventDelivery
                do {
                    delivery = try await sender.accept(event, index: index)
                } catch {
                    window.ended()
                    aborted = "event \(index): \(error)"
                    break events
                }
                delivering += 1
                deliveries.addTask {
                    await delivery.finished()
                    window.ended()
                    let at = SystemClock.monotonicNanoseconds() &- start
                    shared.withLock { $0.finished(event: index, at: at) }
                }
                played += 1
                progress?.played.add(1, ordering: .relaxed)
            }
            await deliveries.waitForAll()
        }
        // No event left to expect: nothing waits any longer.
        if striped { shared.withLock { _ = $0.hold(from: .max) } }

        // The end: every expected push arrived and the gateway went quiet, or the drain timeout.
        let settle = UInt64(options.settleMilliseconds) * 1_000_000
        let deadline = now() &+ UInt64(options.drainTimeoutMilliseconds) * 1_000_000
        while now() < deadline, !Task.isCancelled {
            let (outstanding, last) = shared.withLock { ($0.outstanding, $0.lastArrival) }
            let current = now()
            if outstanding == 0, current &- min(last, current) >= settle { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        for token in shared.withLock({ $0.takeNewlyDead() }) { walk.died(token) }
        var listed: [ListedDevice]?
        if aborted == nil {
            do {
                listed = try await sender.devices()
            } catch {
                aborted = "devices: \(error)"
            }
        }
        do {
            try await sender.tearDown()
        } catch {
            if aborted == nil { aborted = "shutdown: \(error)" }
        }
        let elapsed = now()
        gateway.stop()
        feed.finish()
        await consumer.value

        let live = walk.liveTokens
        let (finished, measured) = shared.withLock { matcher in
            let finished = matcher.finish(plan: plan, played: played, planned: scenario.events.count, elapsed: elapsed,
                                          lateAfter: options.lateAfter.clampedNanoseconds,
                                          store: listed.map { ($0, live.filter { share?.owns(token: $0) ?? true }) })
            return (finished, matcher.measured(summary: finished.summary, lateAfter: options.lateAfter.clampedNanoseconds))
        }
        var summary = finished.summary
        if let share {
            summary.notes.append(share.note)
            if !sender.restrictsToOwnedDevices {
                summary.notes.append("segment \(share.segment.index)/\(share.segment.segmentCount): handed over "
                                     + "\(share.segment.count(of: scenario.events.count)) of \(scenario.events.count) events "
                                     + "(striped: the sender fans out itself)")
            }
        }
        if let plannedStart = options.plannedStart, let planned {
            summary.notes.append("started \(Format.milliseconds(Double(planned.offsetNanoseconds))) ms after --start-at \(plannedStart)")
        }
        let peak = window.peak
        if inFlight > 1 { summary.notes.append("events in flight: at most \(inFlight), \(peak) at the peak") }
        if ownWork.totalCount > 0 {
            summary.notes.append("pushproof's own work: each event's expected pushes took \(Format.milliseconds(ownWork.value(atPercentile: 50))) ms "
                                 + "(p50), \(Format.milliseconds(ownWork.max)) ms at most, decided before the event's time and not counted "
                                 + "in the sender's latency")
        }
        if let aborted { summary.notes.append("the run stopped early: \(aborted)") }
        if aborted == nil, played < scenario.events.count {
            let why = Task.isCancelled ? "the run was cancelled" : "the stages end first"
            summary.notes.append("\(scenario.events.count - played) of \(scenario.events.count) events not played: \(why)")
        }
        return ScenarioLoadResult(summary: summary, cleanup: finished.cleanup, sender: sender.name, aborted: aborted,
                                  unexpectedPushes: shared.withLock { $0.unexpected }, peakEventsInFlight: peak,
                                  measured: measured, actualStartUnixNanoseconds: actualStart)
    }
}
