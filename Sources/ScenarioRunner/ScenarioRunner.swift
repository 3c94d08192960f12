// Plays a scenario through a sender against an embedded gateway and judges every event.
import Foundation
import JSON
import MockGateway
import PushModel
import Scenario
import SpecValidator

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

    public var passed: Bool { aborted == nil && events.allSatisfy(\.passed) }

    /// Every cleanup rule with the problems that break it (empty: it holds).
    public var cleanupRules: [(rule: String, problems: [(event: Int, problem: Problem)])] {
        let rules = ["no push to a dead token", "tokens kept after transient and payload errors",
                     "a device registered again is pushed again", "the sender's store matches the gateway's answers"]
        return rules.map { rule in
            (rule, events.flatMap { event in event.problems.filter { $0.cleanupRule == rule }.map { (event.index, $0) } })
        }
    }
}

public struct RunOptions: Sendable {
    /// Quiet time after the last request before an event counts as answered.
    public var settleMilliseconds: Int = 50
    /// The longest an event may take to reach its expected count.
    public var eventTimeoutMilliseconds: Int = 10_000
    public init() {}
}

public enum ScenarioRunner {
    /// Runs one scenario. `makeSender` gives a fresh sender per scenario. Throws only when the
    /// gateway cannot be started.
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: RunOptions = RunOptions(),
                           record: RecordFile? = nil) async throws(GatewayStartError) -> ScenarioReport {
        let config = judge.specs.config[scenario.product.rawValue]
        let bundleID = scenario.bundleID ?? config?["bundle_ids"]?[0]?.stringValue ?? "com.example.loop"
        let fcmProject = scenario.fcmProject ?? config?["fcm_project"]?.stringValue ?? "\(scenario.product.rawValue)-example"

        // Token states at the start; the runner keeps its own copy to name answers.
        var states: [String: TokenState] = [:]
        var tokens = TokenConfiguration()
        for (deviceID, state) in scenario.tokenStates {
            guard let token = scenario.device(deviceID)?.token else { continue }
            states[AddressedDevice.comparable(token)] = state
            switch state {
            case .valid: tokens.valid.append(token)
            case .gone(let since): tokens.gone.append((token, UInt64(since ?? scenario.startMs)))
            case .expired: tokens.expired.append((token, UInt64(scenario.startMs)))
            case .bad: tokens.bad.append(token)
            case .otherSender: tokens.otherSender.append(token)
            }
        }
        let gateway = try EmbeddedGateway(judge: judge, bundleIDs: [bundleID], fcmProject: fcmProject, tokens: tokens,
                                          faults: scenario.faults, recordFile: record)
        defer { gateway.stop() }

        var names: [String: String] = [:]
        var owner: [String: String] = [:]
        for (person, device) in scenario.devices {
            names[AddressedDevice.comparable(device.token)] = "\(person.id)/\(device.id)"
            owner[device.id] = person.id
        }
        let deviceName = { (token: String) -> String in names[AddressedDevice.comparable(token)] ?? token }

        let oracleName = scenario.expectations == nil ? "reference rules" : "expect"
        var report = ScenarioReport(name: scenario.name, description: scenario.description, sender: sender.name, oracle: oracleName,
                                    events: [])
        do {
            try await sender.setUp(SenderSetup(scenario: scenario, bundleID: bundleID, fcmProject: fcmProject, gateway: gateway.access))
        } catch {
            report.aborted = "sender setup: \(error)"
            await sender.tearDown()
            return report
        }
        let oracle = ReferenceWorld(scenario: scenario, bundleID: bundleID, fcmProject: fcmProject)
        var cleanup = CleanupState()
        // Devices the sender should hold: registered, not unregistered, not answered dead.
        var live = Set(scenario.people.flatMap { $0.devices.map { AddressedDevice.comparable($0.token) } })
        var nowMs = scenario.startMs

        for (index, event) in scenario.events.enumerated() {
            if let at = event.atMs { nowMs = scenario.startMs + at }
            switch event.kind {
            case .gatewayToken(let deviceID, let state):
                let token = scenario.device(deviceID)!.token
                gateway.setToken(token, state, nowMs: nowMs)
                states[AddressedDevice.comparable(token)] = state
            case .deviceRegistered(_, let device, _):
                cleanup.registered(device.token)
                live.insert(AddressedDevice.comparable(device.token))
            case .deviceUnregistered(let deviceID):
                live.remove(AddressedDevice.comparable(scenario.device(deviceID)!.token))
            default:
                break
            }
            // What must arrive: the file's expectation, or the reference rules' decision less
            // pushes to tokens the gateway answers as dead (those reach nobody).
            var expected: [ExpectedPush] = []
            var source: String?
            let decided = (try? oracle.decide(event)) ?? []
            if let expectations = scenario.expectations {
                let entry = expectations.first { $0.event == index }
                source = entry?.source
                expected = (entry?.deliveries ?? []).map { delivery in
                    ExpectedPush(device: delivery.device, token: scenario.device(delivery.device)!.token, spec: delivery.spec,
                                 fields: delivery.fields, source: delivery.source)
                }
            } else {
                expected = decided.compactMap { push in
                    let token = AddressedDevice.comparable(push.device.token)
                    if let state = states[token], state != .valid { return nil }
                    let name = names[token] ?? push.device.token
                    return ExpectedPush(device: String(name.split(separator: "/").last ?? ""), token: push.device.token,
                                        spec: push.kind + "." + push.transport.rawValue)
                }
            }
            let start = gateway.log.count
            do {
                try await sender.handle(event, index: index)
            } catch {
                report.events.append(EventVerdict(index: index, type: event.type, oracle: oracleName, source: source, expected: expected,
                                                  delivered: [], problems: [Problem(.sender, "the sender failed: \(error)")]))
                report.aborted = "event \(index): \(error)"
                break
            }
            await settle(gateway.log, from: start, expectedCount: expected.count, options: options)
            let exchanges = gateway.log.exchanges(from: start)
            var verdict = EventJudge.judge(index: index, type: event.type, oracle: oracleName, source: source, expected: expected,
                                           exchanges: exchanges, cleanup: cleanup, deviceName: deviceName)
            let badTokens = Set(states.filter { $0.value == .bad }.map(\.key))
            cleanup.absorb(exchanges, event: index, badTokens: badTokens)
            // The oracle forgets dead devices as a sender should; the store comparison too.
            for token in cleanup.dead.keys {
                if let device = oracle.store.allDevices().first(where: { AddressedDevice.comparable($0.token) == token }) {
                    oracle.store.remove(token: device.token)
                }
                live.remove(token)
            }
            if let listed = await sender.devices() {
                verdict.problems += EventJudge.compareStore(listed: listed, live: live, dead: Set(cleanup.dead.keys), deviceName: deviceName)
            }
            report.events.append(verdict)
        }
        await sender.tearDown()
        return report
    }

    /// Waits until the event's pushes are answered: the expected number accepted and no new
    /// request for the settle time, or the event timeout.
    static func settle(_ log: ExchangeLog, from start: Int, expectedCount: Int, options: RunOptions) async {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(options.eventTimeoutMilliseconds)
        var lastCount = -1
        var quietSince = clock.now
        while clock.now < deadline {
            let exchanges = log.exchanges(from: start)
            if exchanges.count != lastCount {
                lastCount = exchanges.count
                quietSince = clock.now
            }
            let accepted = exchanges.filter { $0.isPush && $0.accepted }.count
            if accepted >= expectedCount, clock.now - quietSince >= .milliseconds(options.settleMilliseconds) { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
