// The one protocol between `pushproof run` and a sender. Everything crosses it as values a
// process could read from a JSON line (the scenario's own objects, URLs and file paths), so
// an external sender speaking JSON lines on stdio can stand behind it as the reference one does.
import Foundation
import PushModel
import Scenario
import Sender
import Synchronization

/// Where the gateway is and how a sender authenticates to it: URLs and files, as a team's
/// own sender would be configured.
public struct GatewayAccess: Sendable {
    public var apnsURL: String
    public var fcmURL: String
    public var tokenURL: String
    /// The gateway's TLS certificate (PEM) to trust.
    public var caFile: String
    public var apnsKeyFile: String
    public var apnsKeyID: String
    public var apnsTeamID: String
    public var serviceAccountFile: String
    /// An APNs provider certificate and its key (PEM), where the gateway offers certificate
    /// auth; nil: provider tokens only (the embedded gateway).
    public var apnsCertFile: String?
    public var apnsCertKeyFile: String?
    /// Whether the gateway speaks cleartext HTTP/2 (prior knowledge) rather than TLS.
    public var h2c = false

    public init(apnsURL: String, fcmURL: String, tokenURL: String, caFile: String, apnsKeyFile: String,
                apnsKeyID: String, apnsTeamID: String, serviceAccountFile: String) {
        self.apnsURL = apnsURL
        self.fcmURL = fcmURL
        self.tokenURL = tokenURL
        self.caFile = caFile
        self.apnsKeyFile = apnsKeyFile
        self.apnsKeyID = apnsKeyID
        self.apnsTeamID = apnsTeamID
        self.serviceAccountFile = serviceAccountFile
    }
}

/// What a sender is told before the first event: the scenario (product, app, settings,
/// people with their devices, conversations, rooms) and the gateway.
public struct SenderSetup: Sendable {
    public var scenario: Scenario
    public var bundleID: String
    public var fcmProject: String
    public var gateway: GatewayAccess
    /// The part of a run split over machines this sender plays (docs/scale-out.md): the
    /// segment, for an adapter's `hello`, and the tokens of the devices it owns, which a
    /// sender that decides every push itself (`restrictsToOwnedDevices`) sends to alone. nil:
    /// the whole run.
    public var share: SenderShare?
    /// The run's index of the scenario's devices, for a sender in this process to share
    /// (nil: one that needs it builds its own).
    public var devices: ScenarioDeviceIndex?

    public init(scenario: Scenario, bundleID: String, fcmProject: String, gateway: GatewayAccess, share: SenderShare? = nil,
                devices: ScenarioDeviceIndex? = nil) {
        self.scenario = scenario
        self.bundleID = bundleID
        self.fcmProject = fcmProject
        self.gateway = gateway
        self.share = share
        self.devices = devices
    }
}

/// One segment's part of a scenario run, as a sender is told it.
public struct SenderShare: Sendable {
    public var index: Int
    public var count: Int
    public var ownedTokens: Set<DeviceToken>

    public init(index: Int, count: Int, ownedTokens: Set<DeviceToken>) {
        self.index = index
        self.count = count
        self.ownedTokens = ownedTokens
    }
}

/// A device as the sender holds it, when it can list them.
public struct ListedDevice: Sendable, Equatable {
    /// The scenario's device id, as far as the sender knows it (reports name devices by the
    /// token; this is for reading a store dump).
    public var id: String
    public var token: String

    public init(id: String, token: String) {
        self.id = id
        self.token = token
    }
}

public struct SenderError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A sender under test. `run` calls `setUp` once, then `handle` for each event in order, and
/// `tearDown` at the end. `handle` returns once the sender has done what the event asks
/// (the runner then waits for the gateway to settle, so a sender that returns early is judged
/// the same). Token cleanup is the sender's own business: the runner judges it from what
/// reaches the gateway, and, where `devices()` answers, from the sender's store.
public protocol ScenarioSender: Sendable {
    /// A short name for reports ("reference"; an adapter's is known after `setUp`).
    var name: String { get }
    func setUp(_ setup: SenderSetup) async throws(SenderError)
    func handle(_ event: ScenarioEvent, index: Int) async throws(SenderError)
    /// Hands `event` over and returns once the sender has taken it (decided its pushes), with
    /// what is left to wait for. A load run (`drive --scenario`) calls it one event at a time,
    /// in order, and may have several events' deliveries going at once (`--events-in-flight`).
    /// Default: `handle`, nothing left after it.
    func accept(_ event: ScenarioEvent, index: Int) async throws(SenderError) -> EventDelivery
    /// The devices the sender holds now; nil when it cannot say.
    func devices() async throws(SenderError) -> [ListedDevice]?
    /// Throws when the sender did not stop cleanly (an adapter that did not answer `shutdown`).
    func tearDown() async throws(SenderError)
    /// Sends to the owned devices alone when given a `SenderShare` (the reference sender, in
    /// the segment's process), so every segment plays every event; false for a sender that
    /// fans out itself (an adapter in front of a team's backend), to which each event is
    /// handed by one segment only.
    var restrictsToOwnedDevices: Bool { get }
}

/// The rest of an event a sender has accepted: its pushes still on their way.
public struct EventDelivery: Sendable {
    private let delivering: Task<Void, Never>?

    /// Nothing left: the sender was done when it accepted the event.
    public static let done = EventDelivery(nil)

    public init(_ delivering: Task<Void, Never>?) { self.delivering = delivering }

    /// Returns once the event's pushes are answered (at once for `done`).
    public func finished() async { await delivering?.value }
}

extension ScenarioSender {
    public var restrictsToOwnedDevices: Bool { false }

    public func accept(_ event: ScenarioEvent, index: Int) async throws(SenderError) -> EventDelivery {
        try await handle(event, index: index)
        return .done
    }
}

/// The reference sender (Sources/Senders/Sender): the seed rules decide, libcurl delivers, and tokens
/// the gateway reports as gone are deleted from its in-memory store.
public final class ReferenceSender: ScenarioSender {
    private struct State {
        var world: ReferenceWorld?
        var deliverer: PushDeliverer?
        /// A segment's devices: pushes to others are decided (the world moves on) but not sent.
        var owned: Set<DeviceToken>?
        /// The latest event's pushes, while slices of it are left to decide.
        var deciding: EventPushes?
    }
    // The world is touched only by `accept` (and `handle` through it), which the runners call
    // one event at a time; the lock makes that ordering a fact rather than a promise.
    private let state = Mutex(State())
    public let name = "reference"
    public var restrictsToOwnedDevices: Bool { true }

    public init() {}

    public func setUp(_ setup: SenderSetup) async throws(SenderError) {
        let access = setup.gateway
        let credentials: DeliveryCredentials
        do {
            credentials = try DeliveryCredentials.load(apnsKeyPath: access.apnsKeyFile, apnsKeyID: access.apnsKeyID,
                                                       apnsTeamID: access.apnsTeamID, serviceAccountPath: access.serviceAccountFile)
        } catch {
            throw SenderError("credentials: \(error)")
        }
        let devices = setup.devices ?? ScenarioDeviceIndex(setup.scenario)
        let store = ScenarioDeviceStore(devices)
        let configuration = DeliveryConfiguration(
            apnsBaseURL: access.apnsURL, fcmBaseURL: access.fcmURL, oauthTokenURL: access.tokenURL,
            // With h2c (http:// URLs) libcurl makes no TLS connection: no certificate to trust.
            fcmProjectID: setup.fcmProject, maxInFlight: Self.pushesInFlight, tls: access.h2c ? .systemRoots : .caFile(access.caFile),
            retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.2, maxAttempts: 4),
            requestTimeoutMilliseconds: 10_000, connectTimeoutMilliseconds: 5_000)
        do {
            let deliverer = try PushDeliverer(configuration: configuration, credentials: credentials, deviceStore: store,
                                              log: { _ in })
            // Built inside the lock: the world is not Sendable and never leaves it.
            state.withLock { state in
                state = State(world: ReferenceWorld(scenario: setup.scenario, devices: devices, bundleID: setup.bundleID,
                                                    fcmProject: setup.fcmProject, store: store),
                              deliverer: deliverer, owned: setup.share?.ownedTokens)
            }
        } catch {
            throw SenderError("delivery: \(error)")
        }
    }

    public func handle(_ event: ScenarioEvent, index: Int) async throws(SenderError) {
        try await accept(event, index: index).finished()
    }

    /// Applies the event to the world (in the order events are accepted) and delivers its
    /// pushes concurrently on a task of their own, deciding them a slice of the population at
    /// a time as the delivery takes them (`EventPushes`): a 100,000-person call's end is 150,000
    /// pushes, decided ~30,000 at a time instead of held all at once.
    public func accept(_ event: ScenarioEvent, index: Int) async throws(SenderError) -> EventDelivery {
        let (pushes, deliverer): (EventPushes?, PushDeliverer?)
        do {
            (pushes, deliverer) = try state.withLock { state in
                guard let world = state.world else { return (nil, state.deliverer) }
                // The slices left of an earlier event are decided first, as of that event.
                try state.deciding?.decideTheRest()
                let pushes = EventPushes(try world.plan(event), store: world.store, owned: state.owned)
                state.deciding = pushes
                return (pushes, state.deliverer)
            }
        } catch {
            throw SenderError("event \(index): \(error)")
        }
        guard let deliverer, let pushes else { throw SenderError("not set up") }
        do {
            if try pushes.isEmpty() { return .done }
        } catch {
            throw SenderError("event \(index): \(error)")
        }
        return EventDelivery(Task { await Self.deliver(pushes, through: DeliveryPool(deliverer: deliverer)) })
    }

    /// Pushes handed over in batches of this many, at most `batchesInFlight` at once: enough
    /// to keep the deliverer's in-flight slots full, while each batch's pushes are let go once
    /// answered, so a 150,000-push fan-out does not hold every push (and a task each) to its end.
    static let batchSize = 256
    static let batchesInFlight = 8
    /// Pushes unanswered at once (the deliverer's slots, a libcurl handle each).
    static let pushesInFlight = 256
    /// Devices per slice of the population an event's pushes are decided for at once: each
    /// slice walks the event's whole list of people (the rules skip those outside it), so
    /// fewer, larger slices cost less time; this many is ~3 MB of pushes.
    static let sliceDevices = 32_768

    /// Delivers the event's pushes in order, in batches, a slice at a time.
    static func deliver(_ pushes: EventPushes, through pool: DeliveryPool) async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            // A slice the rules refused to decide was refused at `accept` (the first) or is
            // left undelivered: the rules throw only for a store that cannot be read.
            while var pending = (try? pushes.next()) ?? nil {
                pending.reverse()
                while !pending.isEmpty {
                    var batch: [PushRequest] = []
                    batch.reserveCapacity(min(batchSize, pending.count))
                    while batch.count < batchSize, let push = pending.popLast() { batch.append(push) }
                    if running >= batchesInFlight, await group.next() != nil { running -= 1 }
                    group.addTask { [batch] in _ = await pool.deliver(contentsOf: batch) }
                    running += 1
                }
            }
        }
    }

    public func devices() async -> [ListedDevice]? {
        state.withLock { state in
            guard let world = state.world else { return nil }
            var listed: [ListedDevice] = []
            listed.reserveCapacity(world.store.count)
            world.store.forEachDevice { device, position in
                if let owned = state.owned, !owned.contains(DeviceToken(device.token)) { return }
                // An initial device's id is its index entry's; one registered since, the world's.
                let id = position.map { world.devices.entries[$0].device.id } ?? world.deviceID(ofToken: device.token) ?? device.userID
                listed.append(ListedDevice(id: id, token: device.token))
            }
            return listed
        }
    }

    public func tearDown() async {
        let deliverer = state.withLock { state -> PushDeliverer? in
            defer { state = State() }
            return state.deliverer
        }
        await deliverer?.shutdown()
    }
}

/// An event's pushes, decided a slice of the population at a time as its delivery takes
/// them (`next`), by the rules' decision the world made for the event (`ReferenceWorld.plan`)
/// with the store narrowed to each slice. The world must not move on while slices are left:
/// `accept` decides the rest of an earlier event's (`decideTheRest`) before the next event.
final class EventPushes: Sendable {
    // The decision is not Sendable: it is only called under this lock.
    private struct State: @unchecked Sendable {
        var decision: ReferenceWorld.Decision?
        var slices: [Range<Int>?]
        var next = 0
        /// Decided and not yet taken.
        var decided: [[PushRequest]] = []
    }
    private let state: Mutex<State>
    private let store: ScenarioDeviceStore
    private let owned: Set<DeviceToken>?

    init(_ decision: @escaping ReferenceWorld.Decision, store: ScenarioDeviceStore, owned: Set<DeviceToken>?) {
        state = Mutex(State(decision: decision, slices: store.slices(ofSize: ReferenceSender.sliceDevices)))
        self.store = store
        self.owned = owned
    }

    /// Decides the next slice not yet decided; false when none is left.
    private func decideOne(_ state: inout State) throws -> Bool {
        guard let decision = state.decision, state.next < state.slices.count else {
            state.decision = nil
            return false
        }
        let slice = state.slices[state.next]
        state.next += 1
        var pushes = try store.narrowed(to: slice, decision)
        if let owned { pushes.removeAll { !owned.contains(DeviceToken($0.device.token)) } }
        if !pushes.isEmpty { state.decided.append(pushes) }
        return true
    }

    /// Whether the event has no push at all (deciding slices until one has some).
    func isEmpty() throws -> Bool {
        try state.withLock { state in
            while state.decided.isEmpty { guard try decideOne(&state) else { return true } }
            return false
        }
    }

    /// The next slice's pushes; nil when every push was taken.
    func next() throws -> [PushRequest]? {
        try state.withLock { state in
            while state.decided.isEmpty { guard try decideOne(&state) else { return nil } }
            return state.decided.removeFirst()
        }
    }

    /// Decides every slice left now (before the world applies another event).
    func decideTheRest() throws {
        try state.withLock { state in while try decideOne(&state) {} }
    }
}
