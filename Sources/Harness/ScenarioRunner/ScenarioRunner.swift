// Plays a scenario through a sender against an embedded gateway and judges every event.
import Clocks
import Foundation
import JSON
import MockGateway
import PushModel
import RecordLine
import Scenario
import SpecValidator
import Synchronization

/// One scenario's outcome.
public struct ScenarioReport: Sendable {
    public var name: String
    public var description: String?
    public var sender: String
    /// "expect" (the file's own) or "reference rules".
    public var oracle: String
    public var events: [EventVerdict]
    /// A problem that stopped the scenario (the sender failed), if any.
    public var aborted: String?
    /// Where the run's time went.
    public var timing = RunTiming()

    public var passed: Bool { aborted == nil && events.allSatisfy(\.passed) }

    /// Every cleanup rule with the problems that break it (empty: it holds).
    public var cleanupRules: [(rule: String, problems: [(event: Int, problem: Problem)])] {
        CleanupRule.allCases.map { rule in
            (rule.name, events.flatMap { event in event.problems.filter { $0.cleanupRule == rule }.map { (event.index, $0) } })
        }
    }
}

/// Where one scenario's wall time went, so a report can show that judging stays a small
/// share of a large run (Benchmarks/run-scenario.sh).
public struct RunTiming: Sendable {
    /// From the gateway's start to the sender's teardown.
    public var total: Duration = .zero
    /// Inside the sender's `handle` (deciding and delivering).
    public var sending: Duration = .zero
    /// Waiting for the gateway to settle after the sender returned.
    public var settling: Duration = .zero
    /// The runner's own work per event: reading the event's exchanges, matching them with the
    /// expectation, the verdicts, the cleanup state and the store comparison. What runs alone
    /// (between events, after the sender returned) counts its wall time. The reads while the
    /// sender sends (every 10 ms, beside it) count the CPU time they used: their wall time also
    /// holds the time the sender's and the gateway's threads, or other processes, had the
    /// cores, which `sending` counts already (measured on two cores: 1.07 s of wall time for
    /// 0.80 s of CPU, quiet; more under load). That wall time is `judgingReadsWall`.
    public var judging: Duration = .zero
    /// The wall time of the reads beside the sender, which `judging` counts by their CPU time.
    public var judgingReadsWall: Duration = .zero
    /// The reference rules deciding each event's pushes: the oracle without `expect`, and the
    /// world kept in step with one (a second copy of the reference sender's own deciding).
    public var oracle: Duration = .zero
    public init() {}

    /// `judging` as a share of `total` (0 when nothing was timed).
    public var judgingShare: Double {
        total == .zero ? 0 : judging.inSeconds / total.inSeconds
    }
}

public struct RunOptions: Sendable {
    /// Quiet time after the last request before an event counts as answered.
    public var settleMilliseconds: Int = 50
    /// The longest an event may take to reach its expected count.
    public var eventTimeoutMilliseconds: Int = 10_000
    /// The longest the whole scenario may take (`run --time-limit`): 10^6 events at the event
    /// timeout would otherwise take weeks. nil: no limit.
    public var timeLimit: Duration?
    public init() {}
}

public enum ScenarioRunner {
    /// Runs one scenario through `sender` (fresh for this scenario). Throws only when the
    /// gateway cannot be started.
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: RunOptions = RunOptions(),
                           record: RecordFile? = nil) async throws(GatewayStartError) -> ScenarioReport {
        try await run(scenario, judge: judge, sender: sender, options: options) { opening throws(GatewayStartError) in
            try EmbeddedGateway(opening: opening, recordFile: record)
        }
    }

    /// Runs one scenario against the gateway `open` gives (the embedded one, or a `pushproof
    /// serve` driven through its control API). `judge` gives the products' bundle ids and FCM
    /// projects; the gateway judges the pushes.
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: RunOptions = RunOptions(),
                           open: (GatewayOpening) async throws(GatewayStartError) -> any ScenarioGateway)
        async throws(GatewayStartError) -> ScenarioReport {
        let app = ScenarioApp(scenario, judge: judge)
        let (bundleID, fcmProject) = (app.bundleID, app.fcmProject)

        let clock = MonotonicClock()
        let started = clock.now
        let devices = ScenarioDeviceIndex(scenario)
        let deviceName: @Sendable (String) -> String = { devices.name(ofToken: $0) }

        // Token states at the start; the walk keeps its own copy to name answers.
        let opening = GatewayOpening(scenario, app: app, devices: devices, judge: judge)
        var walk = ScenarioWalk(scenario, devices: devices, opening: opening)
        let gateway = try await open(opening)
        defer { gateway.stop() }

        let oracleName = scenario.expectations == nil ? "reference rules" : "expect"
        var report = ScenarioReport(name: scenario.name, description: scenario.description, sender: sender.name, oracle: oracleName,
                                    events: [])
        do {
            try await sender.setUp(SenderSetup(scenario: scenario, bundleID: bundleID, fcmProject: fcmProject, gateway: gateway.access,
                                               devices: devices))
        } catch {
            report.aborted = "sender setup: \(error)"
            report.sender = sender.name
            try? await sender.tearDown()
            return report
        }
        // An adapter names itself in its hello, during setUp.
        report.sender = sender.name
        var mark = clock.now
        let oracle = ScenarioOracle(scenario, app: app, devices: devices)
        report.timing.oracle += clock.now - mark
        var judging = Duration.zero
        mark = clock.now
        var cleanup = CleanupState()
        var removedFromOracle: Set<DeviceToken> = []
        judging += clock.now - mark

        events: for (index, event) in scenario.events.enumerated() {
            if let limit = options.timeLimit, clock.now - started >= limit {
                report.aborted = "the time limit of \(limit.inSeconds) s passed after \(index) of \(scenario.events.count) events (--time-limit)"
                break events
            }
            mark = clock.now
            do {
                if case .registered(let token) = try await walk.prepare(event, on: gateway) {
                    cleanup.registered(DeviceToken(token))
                    removedFromOracle.remove(DeviceToken(token))
                }
            } catch {
                report.aborted = "event \(index): \(error)"
                break events
            }
            // What must arrive: the file's expectation, or the reference rules' decision less
            // pushes to tokens the gateway answers as dead (those reach nobody).
            judging += clock.now - mark
            mark = clock.now
            var expected = oracle.listed(for: event, index: index)
            report.timing.oracle += clock.now - mark
            mark = clock.now
            let source = scenario.expectations?.first { $0.event == index }?.source
            if scenario.expectations == nil {
                let notValid = walk.answeredNotValid
                if !notValid.isEmpty {
                    // By position: the oracle found each push's; the few not-valid tokens are looked up here.
                    var notValidPositions = DevicePositions(count: devices.count)
                    for token in notValid.keys { if let position = devices.position(ofToken: token) { notValidPositions.insert(position) } }
                    expected.removeAll { position, token in
                        position.map { notValidPositions.contains(Int($0)) } ?? (notValid[DeviceToken(token())] != nil)
                    }
                }
            }
            let start: GatewayMark
            do {
                start = try await gateway.mark()
            } catch {
                report.aborted = "event \(index): \(error)"
                break events
            }
            let expectedCount = expected.count
            let arriving = ArrivingExchanges(
                EventJudgement(index: index, type: event.type, oracle: oracleName, source: source, expected: consume expected,
                               cleanup: cleanup, deviceName: deviceName, specs: opening.judge.specs,
                               wallClockMs: Int64(Date().timeIntervalSince1970 * 1000), devices: devices),
                cleanup: cleanup, badTokens: walk.badTokens, from: start)
            // The embedded gateway's exchanges are read and judged every few milliseconds while
            // the sender sends, so an event's pushes never pile up in memory.
            let reader = gateway.readsWhileSending ? Task { await arriving.readUntilCancelled(from: gateway) } : nil
            judging += clock.now - mark
            mark = clock.now
            do {
                try await sender.handle(event, index: index)
            } catch {
                reader?.cancel()
                await reader?.value
                report.events.append(EventVerdict(index: index, type: event.type, oracle: oracleName, source: source,
                                                  expected: arriving.expectedListing, delivered: [],
                                                  problems: [Problem(.sender, "the sender failed: \(error)")]))
                report.aborted = "event \(index): \(error)"
                break events
            }
            report.timing.sending += clock.now - mark
            mark = clock.now
            do {
                try await gateway.settle(after: start, expectedAccepted: expectedCount, options: options)
                report.timing.settling += clock.now - mark
                reader?.cancel()
                await reader?.value
                try await arriving.read(from: gateway)
            } catch {
                report.aborted = "event \(index): \(error)"
                break events
            }
            var (verdict, after, spent, wallBesideSending) = arriving.finish()
            judging += spent
            report.timing.judgingReadsWall += wallBesideSending
            cleanup = after
            mark = clock.now
            // The oracle forgets dead devices as a sender should; the store comparison too.
            for (token, death) in cleanup.dead where !removedFromOracle.contains(token) {
                if let device = devices.writtenToken(token) { oracle.forget(token: device) }
                removedFromOracle.insert(token)
                walk.died(token)
                verdict.tokensDied.append((deviceName(token.comparable), death.answer))
            }
            verdict.tokensDied.sort { $0.device < $1.device }
            judging += clock.now - mark
            let listed: [ListedDevice]?
            do {
                listed = try await sender.devices()
            } catch {
                report.events.append(verdict)
                report.aborted = "event \(index): \(error)"
                break events
            }
            if let listed {
                mark = clock.now
                verdict.problems += EventJudge.compareStore(listed: listed, live: walk.live, dead: Set(cleanup.dead.keys),
                                                            devices: devices, deviceName: deviceName)
                judging += clock.now - mark
            }
            report.events.append(verdict)
        }
        do {
            try await sender.tearDown()
        } catch {
            // The first problem is the one that stopped the run; a failed shutdown after it
            // (an adapter already gone) adds nothing.
            if report.aborted == nil { report.aborted = "sender shutdown: \(error)" }
        }
        // Named now, the run done: the verdicts listed each push by its device's position
        // while the run held its population (`ExpectedListings`); a report outlives the run
        // (`run` of a folder keeps every scenario's), and must not keep the people alive.
        if !report.events.isEmpty {
            let names = devices.reportNames()
            for event in report.events.indices { report.events[event].nameDevices(by: names) }
        }
        report.timing.judging = judging
        report.timing.total = clock.now - started
        return report
    }
}

/// One event's exchanges, read from the gateway as they arrive and judged at once
/// (`EventJudgement`); the cleanup state follows their answers.
final class ArrivingExchanges: Sendable {
    private struct State: Sendable {
        var judgement: EventJudgement
        var cleanup: CleanupState
        var cursor: GatewayMark
        /// Time spent reading and judging: the run's `judging`.
        var spent: Duration = .zero
        /// The wall time of the reads beside the sender: `RunTiming.judgingReadsWall`.
        var wallBesideSending: Duration = .zero
    }
    private let state: Mutex<State>
    private let index: Int
    private let badTokens: Set<DeviceToken>

    init(_ judgement: consuming EventJudgement, cleanup: CleanupState, badTokens: Set<DeviceToken>, from start: GatewayMark) {
        index = judgement.index
        self.badTokens = badTokens
        state = Mutex(State(judgement: judgement, cleanup: cleanup, cursor: start))
    }

    /// Reads and judges what arrived since the last read. `besideSending`: the sender is
    /// sending meanwhile (`readUntilCancelled`), and the read is charged the CPU time its thread
    /// used rather than its wall time, which on a busy machine is mostly time the sender's and
    /// the gateway's threads (or anything else) had the cores: see `RunTiming.judging`.
    func read(from gateway: any ScenarioGateway, besideSending: Bool = false) async throws(GatewayStartError) {
        let clock = MonotonicClock()
        let began = clock.now
        let (thread, cpuBegan) = (pthread_self(), SystemClock.threadCPUNanoseconds())
        let cursor = state.withLock { $0.cursor }
        do {
            // Freed at the end of this block, inside the time judging is charged (freeing is
            // judging's too).
            let batch = try await gateway.exchanges(after: cursor)
            state.withLock { state in
                state.judgement.observe(batch)
                state.cleanup.absorb(batch, event: index, badTokens: badTokens)
                state.cursor.position = batch.last?.sequence ?? (state.cursor.position + batch.count)
            }
        }
        let wall = clock.now - began
        // A thread's CPU clock: a read that resumed on another thread is charged its wall time.
        let cpu = pthread_equal(thread, pthread_self()) != 0
            ? Duration.nanoseconds(Int64(SystemClock.threadCPUNanoseconds() &- cpuBegan)) : wall
        state.withLock { state in
            if besideSending {
                state.spent += cpu
                state.wallBesideSending += wall
            } else {
                state.spent += wall
            }
        }
    }

    /// Reads every few milliseconds until cancelled (a gateway that answers at once never fails).
    func readUntilCancelled(from gateway: any ScenarioGateway) async {
        while !Task.isCancelled {
            try? await read(from: gateway, besideSending: true)
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    var expectedListing: ExpectedListings { state.withLock { $0.judgement.expectedListing } }

    /// The event's verdict, the cleanup state after it, the time spent judging it, and the wall
    /// time of its reads beside the sender.
    func finish() -> (verdict: EventVerdict, cleanup: CleanupState, spent: Duration, wallBesideSending: Duration) {
        state.withLock { state in
            let clock = MonotonicClock()
            let began = clock.now
            // Done with the event: its expectation goes before the store is compared.
            let verdict = state.judgement.finish()
            return (verdict, state.cleanup, state.spent + (clock.now - began), state.wallBesideSending)
        }
    }
}
