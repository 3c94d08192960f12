// What a load run (`drive --scenario`, `plan --scenario`) needs from `run`'s machinery without
// judging event by event: the app a scenario is played for, the gateway opened with its
// starting token states and an arrival observer, and the reference rules as the oracle that
// says which pushes each event must cause.
import Foundation
import JSON
import MockGateway
import PushModel
import Scenario
import Sender
import SpecValidator
import Synchronization

/// The iOS bundle id and FCM project a scenario is played for: the file's `app`, else the
/// spec set's `config` for the product (specset.json), else an example.
public struct ScenarioApp: Sendable, Equatable {
    public var bundleID: String
    public var fcmProject: String

    public init(bundleID: String, fcmProject: String) {
        self.bundleID = bundleID
        self.fcmProject = fcmProject
    }

    public init(_ scenario: Scenario, judge: SpecJudge) {
        let config = judge.specs.config[scenario.product.rawValue]
        bundleID = scenario.bundleID ?? config?["bundle_ids"]?[0]?.stringValue ?? "com.example.loop"
        fcmProject = scenario.fcmProject ?? config?["fcm_project"]?.stringValue ?? "\(scenario.product.rawValue)-example"
    }
}

extension GatewayOpening {
    /// The scenario's starting token states and faults, for `app`, judged by `judge` with the
    /// scenario's product claiming `app`.
    public init(_ scenario: Scenario, app: ScenarioApp, devices: ScenarioDeviceIndex, judge: SpecJudge) {
        self.init(product: scenario.product.rawValue, hasAndroidDevices: devices.hasAndroidDevices,
                  bundleID: app.bundleID, fcmProject: app.fcmProject, tokens: [], faults: scenario.faults, startMs: scenario.startMs,
                  judge: judge.claiming(product: scenario.product.rawValue, bundleID: app.bundleID, fcmProject: app.fcmProject))
        answerRules = scenario.answerRules
        for (deviceID, state) in scenario.tokenStates {
            guard let token = devices.token(ofDevice: deviceID) else { continue }
            tokens.append((token, state))
        }
    }
}

extension GatewayOpening {
    /// Why a gateway whose judge claims the apps in `specConfig` (specset.json's config, as
    /// a `pushproof serve` reports it in `GET /status`) cannot judge this scenario's pushes,
    /// with what to pass; nil when its product claims the scenario's app.
    public func unclaimedApp(specConfig: JSONValue) -> String? {
        // FCM pushes, and so the project, only matter when the scenario has Android devices.
        guard let claim = ProductIdentities.claimingEntry(config: specConfig, product: product, bundleIDs: [bundleID],
                                                          fcmProjects: hasAndroidDevices ? [fcmProject] : []) else { return nil }
        let what = (claim.missingBundleIDs.map { "bundle id " + $0 } + claim.missingProjects.map { "FCM project " + $0 })
            .joined(separator: " and ")
        return "the gateway's specs do not claim the scenario's \(what) for \(product): every push would be judged "
            + "\"not covered by any spec\". Start pushproof serve with --spec-config FILE, FILE holding "
            + JSONValue.object([product: .object(claim.entry)]).serialized()
    }
}

extension ScenarioRunner {
    /// The embedded gateway with `observers` seeing every exchange on its event loop. It keeps
    /// only counters itself (no exchange list), so a long load run's memory stays flat;
    /// `exchanges(after:)` answers nothing.
    public static func openEmbeddedGateway(opening: GatewayOpening,
                                           observers: [any GatewayObserver]) throws(GatewayStartError) -> any ScenarioGateway {
        try EmbeddedGateway(opening: opening, recordFile: nil, observers: observers, retainingExchanges: false)
    }
}

extension ScenarioRunner {
    /// `run` against the embedded gateway with `observers` seeing every exchange too (the
    /// CLI's progress line counts pushes with one).
    public static func run(_ scenario: Scenario, judge: SpecJudge, sender: any ScenarioSender, options: RunOptions = RunOptions(),
                           record: RecordFile?, observers: [any GatewayObserver]) async throws(GatewayStartError) -> ScenarioReport {
        try await run(scenario, judge: judge, sender: sender, options: options) { opening throws(GatewayStartError) in
            try EmbeddedGateway(opening: opening, recordFile: record, observers: observers)
        }
    }
}

/// The pushes each event must cause, listed once for `run` and load runs: the file's `expect`
/// entries (with their pinned fields and headers), or the reference rules' decision (each with
/// the rules' push, what the sender's must say), kept in step event by event. It lists pushes
/// to every token the rules still know, gone ones too: a load run matches their answers (token
/// cleanup, not unexpected pushes); `run` leaves out the tokens the scenario made not valid.
public final class ScenarioOracle: Sendable {
    // The world is not Sendable; it is only touched under this lock, one event at a time.
    private let world: Mutex<ReferenceWorld>
    private let expectations: [Int: [ExpectedPush]]?
    private let devices: ScenarioDeviceIndex
    private let namingDevices: Bool
    private let sliceDevices: Int

    /// `namingDevices`: each decided push carries its device's position in `devices`, by which
    /// `run` keys its expectation and its report names the device (`<person>/<device>`); a load
    /// run, which names devices only in its findings, goes by the token (the lookup was a fifth
    /// of the list's cost for a 10,000-member ring).
    public convenience init(_ scenario: Scenario, app: ScenarioApp, devices: ScenarioDeviceIndex? = nil, namingDevices: Bool = true) {
        self.init(scenario, app: app, devices: devices, namingDevices: namingDevices, sliceDevices: Self.sliceDevices)
    }

    /// `sliceDevices`: how many devices a slice of a fan-out has (`ScenarioOracle.sliceDevices`).
    init(_ scenario: Scenario, app: ScenarioApp, devices: ScenarioDeviceIndex?, namingDevices: Bool, sliceDevices: Int) {
        self.sliceDevices = sliceDevices
        let devices = devices ?? ScenarioDeviceIndex(scenario)
        world = Mutex(ReferenceWorld(scenario: scenario, devices: devices, bundleID: app.bundleID, fcmProject: app.fcmProject))
        self.devices = devices
        self.namingDevices = namingDevices
        if let entries = scenario.expectations {
            var byEvent: [Int: [ExpectedPush]] = [:]
            for entry in entries {
                byEvent[entry.event, default: []] += entry.deliveries.compactMap { delivery in
                    devices.token(ofDevice: delivery.device).map { token in
                        let position = devices.position(ofToken: DeviceToken(token))
                        return ExpectedPush(device: position.map(devices.name(at:)) ?? token, token: token, spec: delivery.spec,
                                            fields: delivery.fields, headers: delivery.headers, source: delivery.source,
                                            devicePosition: position.map(Int32.init))
                    }
                }
            }
            expectations = byEvent
        } else {
            expectations = nil
        }
    }

    /// Devices a slice the oracle decides at a time: the sender's. Each slice runs the rules
    /// over every member again (only the slice's have devices): at 131,072 the oracle of a
    /// 100,000-person call took ~0.75 s against ~0.95 s, but a slice's requests (17 MB at the
    /// call's end) were then the run's largest moment, 5 MB of its peak RSS (run-scenario.sh
    /// and heaptrack, session 15).
    static let sliceDevices = ReferenceSender.sliceDevices

    /// The event's pushes. Call once per event, in order: the reference world moves on.
    public func expected(for event: ScenarioEvent, index: Int) -> [ExpectedPush] {
        listed(for: event, index: index).whole
    }

    /// The event's pushes, each the reference rules decided for a device of the index as its
    /// position and kind (8 bytes, where an `ExpectedPush` is 80) when the oracle names
    /// devices (`namingDevices`). Call once per event, in order: the reference world moves on.
    public func listed(for event: ScenarioEvent, index: Int) -> ExpectedPushes {
        world.withLock { world in
            let fromFile = { ExpectedPushes(self.expectations?[index] ?? [], devices: self.devices) }
            guard let decision = try? world.plan(event) else { return fromFile() }
            if expectations != nil {
                // Made all the same, as it always was: whatever a decision changes in the
                // world, the next event finds changed.
                _ = try? decision()
                return fromFile()
            }
            // An FCM message's body is the same for every device but for its token: cut out,
            // one body serves the fan-out (150,000 references of ~450 bytes each otherwise).
            // An event's messages come a few kinds at a time (ring ended, finished, missed):
            // the last few bodies are enough to share, and cheaper than hashing every one.
            var recent: [[UInt8]] = []
            // Spec ids, one string per kind of the event (a fresh "poolse.ring.apns" a push is
            // a heap string each).
            var specIDs: [(kind: String, transport: PushTransport, id: String)] = []
            func specID(of push: PushRequest) -> String {
                if let known = specIDs.first(where: { $0.kind == push.kind && $0.transport == push.transport }) { return known.id }
                let id = push.kind + "." + push.transport.rawValue
                specIDs.append((push.kind, push.transport, id))
                return id
            }
            func reference(of push: PushRequest) -> ContentReference {
                var reference: ContentReference
                if push.transport == .fcm, var cut = ContentReference.cut(of: push, decidedAtMs: world.nowMs) {
                    if let shared = recent.first(where: { $0 == cut.body }) {
                        cut.body = shared
                    } else {
                        if recent.count == 4 { recent.removeFirst() }
                        recent.append(cut.body)
                    }
                    reference = cut
                } else {
                    reference = ContentReference(headers: push.headers, body: push.body, decidedAtMs: world.nowMs)
                }
                return reference
            }
            func add(_ push: PushRequest, to expected: inout ExpectedPushes) {
                // Looked up once: the report's name and `run`'s expectation index both start from
                // it (a report names the device by it when it lists the push, `ExpectedListings`).
                // A load run's matcher keys by token and needs neither.
                if namingDevices, let position = devices.position(ofToken: DeviceToken(push.device.token)) {
                    expected.append(position: Int32(position), spec: specID(of: push), reference: reference(of: push))
                } else {
                    expected.append(ExpectedPush(token: push.device.token, spec: specID(of: push), reference: reference(of: push)))
                }
            }
            // Decided a slice of the population at a time, as the reference sender decides
            // them, each slice's pushes made expectations before the next is decided: the
            // whole fan-out's requests at once (their headers and bodies, every path) were the
            // largest part of a 100,000-person call's peak (23 MB of 145, heaptrack).
            var expected = ExpectedPushes(devices: devices)
            let slices = world.store.slices(ofSize: sliceDevices)
            for (number, slice) in slices.enumerated() {
                guard let pushes = try? world.store.narrowed(to: slice, decision) else { return ExpectedPushes(devices: nil) }
                if number == 0, slices.count > 1 {
                    // Room for the whole fan-out, estimated from the first slice's pushes a
                    // device with an eighth to spare, so the list is not regrown (and copied)
                    // slice by slice. A whole slice's worth reserved for the short last slice
                    // too left 9 MB of a 100,000-person call's peak empty (heaptrack).
                    let estimate = pushes.count * devices.initialCount / max(sliceDevices, 1)
                    expected.reserveCapacity(estimate + estimate / 8)
                }
                for push in pushes { add(push, to: &expected) }
            }
            return expected
        }
    }

    /// A token the gateway answered gone or bad: the rules no longer push to it, as a sender should not.
    public func forget(token: String) {
        _ = world.withLock { world in world.store.remove(token: token) }
    }
}

extension SenderSetup {
    /// What a load run tells its sender: the same as `run` does.
    public init(scenario: Scenario, app: ScenarioApp, gateway: GatewayAccess, share: SenderShare? = nil, devices: ScenarioDeviceIndex? = nil) {
        self.init(scenario: scenario, bundleID: app.bundleID, fcmProject: app.fcmProject, gateway: gateway, share: share, devices: devices)
    }
}
