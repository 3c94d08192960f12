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
import Scenario
import ScenarioRunner
import SpecValidator
import Synchronization

public struct ScenarioLoadOptions: Sendable {
    /// Events per second (open model: event i is due i/rate seconds after the start); nil:
    /// each event as soon as the sender has taken the previous one (closed model).
    public var rate: Double?
    /// The end of the run waits for the expected pushes, then for this long without any.
    public var settleMilliseconds = 50
    /// The longest the end of the run waits for the pushes still expected.
    public var drainTimeoutMilliseconds = 10_000
    /// An event handed to the sender this late after its intended time counts as late.
    public var lateAfter: Duration = .milliseconds(10)
    /// A push to a token answered dead this long before its event was handed over is a push
    /// to a dead token (the answer must reach the sender and its store first).
    public var cleanupGrace: Duration = .milliseconds(50)

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
}

/// A push as the gateway answered it, copied off its event loop: the token is read (an FCM
/// body parsed) on the matcher's task, not the loop's.
struct RawArrival: Sendable {
    var route: String
    var path: String
    var body: [UInt8]
    var status: Int
    var reason: String?
    var verdict: JSONValue?
    /// Nanoseconds from the run's start.
    var at: UInt64
}

/// Hands every push the gateway answers to the matcher's stream, timed on arrival.
final class ArrivalObserver: GatewayObserver {
    private let continuation: AsyncStream<RawArrival>.Continuation
    /// Monotonic nanoseconds of the run's start, set again when the first event is due (a
    /// push during the sender's setup is timed from the observer's creation, never from 0).
    let origin = Atomic<UInt64>(SystemClock.monotonicNanoseconds())

    init(_ continuation: AsyncStream<RawArrival>.Continuation) {
        self.continuation = continuation
    }

    func observe(_ exchange: GatewayExchange) {
        guard exchange.route == .apns || exchange.route == .fcm else { return }
        let at = SystemClock.monotonicNanoseconds() &- origin.load(ordering: .relaxed)
        // The body array is shared, not copied.
        continuation.yield(RawArrival(route: exchange.route.rawValue, path: exchange.request.path, body: exchange.request.body,
                                      status: exchange.response.status, reason: exchange.reason, verdict: exchange.verdict, at: at))
    }
}

public enum ScenarioLoad {
    /// Plays `scenario` through `sender` (fresh) against an embedded gateway. Throws only when
    /// the gateway cannot start; a failing sender ends the run early (`aborted`).
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: ScenarioLoadOptions = ScenarioLoadOptions(),
                           progress: ProgressCounters? = nil) async throws(GatewayStartError) -> ScenarioLoadResult {
        let app = ScenarioApp(scenario, judge: judge)
        let (stream, continuation) = AsyncStream.makeStream(of: RawArrival.self)
        let observer = ArrivalObserver(continuation)
        let devices = ScenarioDeviceIndex(scenario)
        let (tokenOfDevice, tokenOfComparable) = (devices.tokenOfDevice, devices.tokenOfComparable)
        let gateway = try ScenarioRunner.openEmbeddedGateway(judge: judge, opening: GatewayOpening(scenario, app: app, devices: devices),
                                                             observers: [observer])
        var matcher = ArrivalMatcher(graceNanoseconds: HDRHistogram.nanoseconds(options.cleanupGrace), deviceName: devices.name(ofToken:))
        for (deviceID, state) in scenario.tokenStates where state == .bad {
            if let token = tokenOfDevice[deviceID] { matcher.badTokens.insert(AddressedDevice.comparable(token)) }
        }
        let shared = Mutex(matcher)
        let consumer = Task {
            for await raw in stream {
                let exchange = ObservedExchange(sequence: 0, route: raw.route, path: raw.path, body: raw.body, status: raw.status,
                                                reason: raw.reason, verdict: raw.verdict)
                let latency = shared.withLock { $0.arrive(exchange, at: raw.at) }
                progress?.pushArrived(latencyNanoseconds: latency)
            }
        }

        let plan = LoadPlan(scenario: scenario.name, model: options.rate.map { rate in
            .open(ratePerSecond: rate, duration: .nanoseconds(Int64(Double(max(1, scenario.events.count)) / rate * 1e9)))
        } ?? .closed(concurrency: 1, count: scenario.events.count), lateAfter: options.lateAfter)
        var aborted: String?
        var played = 0
        var live = Set(scenario.people.flatMap { $0.devices.map { AddressedDevice.comparable($0.token) } })
        let oracle = ScenarioOracle(scenario, app: app)
        do {
            try await sender.setUp(SenderSetup(scenario: scenario, app: app, gateway: gateway.access))
        } catch {
            aborted = "sender setup: \(error)"
        }
        let start = SystemClock.monotonicNanoseconds()
        observer.origin.store(start, ordering: .relaxed)
        func now() -> UInt64 { SystemClock.monotonicNanoseconds() &- start }
        var nowMs = scenario.startMs

        events: for (index, event) in scenario.events.enumerated() where aborted == nil {
            let intended = options.rate.map { UInt64((Double(index) * 1e9 / $0).rounded()) } ?? now()
            let early = now()
            if intended > early { try? await Task.sleep(for: .nanoseconds(Int64(intended - early)), tolerance: .zero, clock: .continuous) }
            // The rules forget tokens the gateway answered dead, as the sender should have.
            for token in shared.withLock({ $0.takeNewlyDead() }) {
                oracle.forget(token: tokenOfComparable[token] ?? token)
                live.remove(token)
            }
            if let at = event.atMs { nowMs = scenario.startMs + at }
            switch event.kind {
            case .gatewayToken(let deviceID, let state):
                let token = tokenOfDevice[deviceID]!
                do {
                    try await gateway.setToken(token, state, nowMs: nowMs)
                } catch {
                    aborted = "event \(index): \(error)"
                    break events
                }
                shared.withLock { matcher in
                    if state == .bad { matcher.badTokens.insert(AddressedDevice.comparable(token)) } else {
                        matcher.badTokens.remove(AddressedDevice.comparable(token))
                    }
                }
            case .deviceRegistered(_, let device, _): live.insert(AddressedDevice.comparable(device.token))
            case .deviceUnregistered(let deviceID): live.remove(AddressedDevice.comparable(tokenOfDevice[deviceID]!))
            default: break
            }
            let expected = oracle.expected(for: event, index: index)
            let started = now()
            shared.withLock { $0.expect(event: index, intended: intended, started: started, pushes: expected) }
            do {
                try await sender.handle(event, index: index)
            } catch {
                aborted = "event \(index): \(error)"
                break events
            }
            played += 1
            progress?.played.add(1, ordering: .relaxed)
        }

        // The end: every expected push arrived and the gateway went quiet, or the drain timeout.
        let settle = UInt64(options.settleMilliseconds) * 1_000_000
        let deadline = now() &+ UInt64(options.drainTimeoutMilliseconds) * 1_000_000
        while now() < deadline {
            let (outstanding, last) = shared.withLock { ($0.outstanding, $0.lastArrival) }
            let current = now()
            if outstanding == 0, current &- min(last, current) >= settle { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        for token in shared.withLock({ $0.takeNewlyDead() }) { live.remove(token) }
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
        continuation.finish()
        await consumer.value

        let finished = shared.withLock { matcher in
            matcher.finish(plan: plan, played: played, planned: scenario.events.count, elapsed: elapsed,
                           lateAfter: HDRHistogram.nanoseconds(options.lateAfter), store: listed.map { ($0, live) })
        }
        var summary = finished.summary
        if let aborted { summary.notes.append("the run stopped early: \(aborted)") }
        return ScenarioLoadResult(summary: summary, cleanup: finished.cleanup, sender: sender.name, aborted: aborted,
                                  unexpectedPushes: shared.withLock { $0.unexpected })
    }
}
