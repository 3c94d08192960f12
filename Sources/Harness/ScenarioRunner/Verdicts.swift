// The verdicts of `run`, as pure functions over recorded exchanges: what one event delivered
// against what it had to, and the token-cleanup rules judged from outside the sender.
import JSON
import RecordLine
import Scenario
import SpecValidator
import PushModel

/// One thing wrong, with the words a report prints.
public struct Problem: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case missing, unexpected, duplicate, wrongToken = "wrong_token", specViolation = "spec_violation"
        case unmatched, field, deadTokenPush = "dead_token_push", droppedOnTransient = "dropped_on_transient"
        case droppedOnPayloadError = "dropped_on_payload_error", notPushedAfterRegistering = "not_pushed_after_registering"
        case storeMismatch = "store_mismatch", sender
        /// A push that says something other than the reference rules' push for its device.
        case content
        /// A retry sent before the Retry-After of the 429 or 503 it follows had passed.
        case retryTooSoon = "retry_too_soon"
    }

    public var kind: Kind
    public var message: String
    /// The seed sentence behind the expectation or the violated rule.
    public var source: String?

    public init(_ kind: Kind, _ message: String, source: String? = nil) {
        self.kind = kind
        self.message = message
        self.source = source
    }

    /// The token-cleanup rule it breaks, nil for a delivery problem.
    public var cleanupRule: CleanupRule? { CleanupRule(brokenBy: kind) }

    /// The dead-token rule's finding, in `run` and in a load run: `push` (`request #12`, `push
    /// #3`) went to `device`'s token after it was answered dead; `answered` says when.
    public static func deadTokenPush(device: String, push: String, answered: String) -> Problem {
        Problem(.deadTokenPush, "a push to a dead token: \(device) (\(push)), answered \(answered)")
    }
}

/// The token-cleanup rules, judged from outside the sender in `run` (`CleanupState`, per event)
/// and in a load run (`ArrivalMatcher`, by time); their names are what reports print, in this order.
public enum CleanupRule: String, Sendable, CaseIterable {
    /// No push to a token the gateway answered gone or bad (`deadTokenPush`).
    case noPushToDeadToken = "no push to a dead token"
    /// A transient or payload error ends no token (`droppedOnTransient`, `droppedOnPayloadError`).
    case keptAfterRefusal = "tokens kept after transient and payload errors"
    /// A device registered again after its token died is pushed again (`notPushedAfterRegistering`).
    case pushedAgainAfterRegistering = "a device registered again is pushed again"
    /// The sender's store holds the live tokens and no dead one (`storeMismatch`).
    case storeMatchesAnswers = "the sender's store matches the gateway's answers"

    /// As reports name it.
    public var name: String { rawValue }

    /// The rule a kind of problem breaks; nil for a delivery problem.
    public init?(brokenBy kind: Problem.Kind) {
        switch kind {
        case .deadTokenPush: self = .noPushToDeadToken
        case .droppedOnTransient, .droppedOnPayloadError: self = .keptAfterRefusal
        case .notPushedAfterRegistering: self = .pushedAgainAfterRegistering
        case .storeMismatch: self = .storeMatchesAnswers
        case .missing, .unexpected, .duplicate, .wrongToken, .specViolation, .unmatched, .field, .sender, .content, .retryTooSoon:
            return nil
        }
    }
}

/// The tokens' fate so far, from the gateway's answers and the scenario's registrations.
public struct CleanupState: Sendable {
    /// Token → (the event it was answered gone or bad at, how).
    public var dead: [DeviceToken: (event: Int, answer: AnswerClass)] = [:]
    /// Token → the last non-fatal refusal it got (transient or payload error), while live.
    public var refused: [DeviceToken: AnswerClass] = [:]
    /// Tokens of devices registered again after they were dead.
    public var reRegistered: Set<DeviceToken> = []

    public init() {}

    /// Notes what the event's exchanges said about tokens.
    public mutating func absorb(_ exchanges: [RecordedExchange], event: Int, badTokens: Set<DeviceToken>) {
        for exchange in exchanges { absorb(exchange, event: event, badTokens: badTokens) }
    }

    /// Notes what one exchange said about its token (a push's only).
    public mutating func absorb(_ exchange: RecordedExchange, event: Int, badTokens: Set<DeviceToken>) {
        guard exchange.isPush else { return }
        // An accepted push changes nothing while no token waits on a refusal: most pushes
        // of a fan-out, so none of them reads its token here.
        if exchange.accepted, refused.isEmpty { return }
        guard let token = exchange.deviceToken else { return }
        let answer = AnswerClass.of(status: exchange.status ?? 0, reason: exchange.reason,
                                    tokenIsBad: !badTokens.isEmpty && badTokens.contains(token))
        switch answer {
        case .gone, .bad:
            if dead[token] == nil { dead[token] = (event, answer) }
            refused[token] = nil
            reRegistered.remove(token)
        case .transient, .payloadError:
            refused[token] = answer
        case .accepted:
            if !refused.isEmpty { refused[token] = nil }
        case .otherSender:
            break
        }
    }

    /// A device registered again: it is live and must be pushed again.
    public mutating func registered(_ token: DeviceToken) {
        if dead.removeValue(forKey: token) != nil { reRegistered.insert(token) }
    }

    /// The cleanup rule an expected push that never came breaks, if one does: its device was
    /// registered again after its token died and got nothing since, or its token was dropped
    /// after a transient or payload error (which must not end a token).
    public func missedPushProblem(token: DeviceToken, spec: String, deviceName name: String) -> Problem? {
        if reRegistered.contains(token) {
            return Problem(.notPushedAfterRegistering, "\(name) registered again after cleanup but got no \(spec)")
        }
        guard let refusal = refused[token] else { return nil }
        return Problem(refusal == .transient ? .droppedOnTransient : .droppedOnPayloadError,
                       "\(name) got no \(spec): token dropped on a \(refusal == .transient ? "transient" : "payload") error")
    }
}

/// One event's verdict.
public struct EventVerdict: Sendable {
    public var index: Int
    public var type: String
    /// "expect" or "reference rules".
    public var oracle: String
    public var source: String?
    /// What had to arrive: device and spec, as the report lists it (the expectation's pinned
    /// fields and reference pushes are dropped once judged).
    public var expected: ExpectedListings
    /// Accepted pushes: device (id or token), spec, request sequence.
    public var delivered: DeliveredPushes
    public var problems: [Problem]
    /// Devices whose token this event's answers made dead (gone or bad), for the cleanup timeline.
    public var tokensDied: [(device: String, answer: AnswerClass)] = []

    public init(index: Int, type: String, oracle: String, source: String?, expected: ExpectedListings,
                delivered: [(device: String, spec: String?, sequence: Int)], problems: [Problem]) {
        self.index = index
        self.type = type
        self.oracle = oracle
        self.source = source
        self.expected = expected
        self.delivered = DeliveredPushes(delivered)
        self.problems = problems
    }

    /// Names every listed push's device by `names` from now on, so the verdict no longer
    /// holds the run's device index (and through it the people).
    mutating func nameDevices(by names: DeviceNames) {
        expected = expected.named(by: names)
        delivered.setListing(expected)
    }

    /// With `delivered` as a judgement keeps it (mostly positions in `expected`).
    init(index: Int, type: String, oracle: String, source: String?, expected: ExpectedListings,
         delivered: DeliveredPushes, problems: [Problem]) {
        self.init(index: index, type: type, oracle: oracle, source: source, expected: expected, delivered: [], problems: problems)
        self.delivered = delivered
    }

    public var passed: Bool { problems.isEmpty }
}

/// An event's accepted pushes in the order they were answered, as (device, spec, sequence).
/// One that counted for an expected push of its device and spec is kept as that expectation's
/// position and its sequence (8 bytes, where a tuple of two strings and a number is 48: a
/// 100,000-person call's report lists 150,000 of them an event); any other is kept whole.
public struct DeliveredPushes: RandomAccessCollection, Sendable, ExpressibleByArrayLiteral {
    public typealias Element = (device: String, spec: String?, sequence: Int)
    /// The listing the positions are in (shared with the verdict's `expected`).
    private var listing: ExpectedListings = []
    /// Per push: position << 32 | sequence, or (for a push kept whole) the top bit and its
    /// index in `whole`.
    private var pushes: [UInt64] = []
    private var whole: [Element] = []
    private static let wholeBit: UInt64 = 1 << 63

    public init(_ elements: [Element]) {
        for element in elements { append(element) }
    }

    public init(arrayLiteral elements: Element...) { self.init(elements) }

    init(capacity: Int) { pushes.reserveCapacity(capacity) }

    /// The listing the positions `append(position:sequence:)` takes are in.
    mutating func setListing(_ listing: ExpectedListings) { self.listing = listing }

    /// Whether a push at this position and sequence can be kept as the two.
    static func fits(position: Int, sequence: Int) -> Bool {
        (0..<(1 << 31)).contains(position) && (0..<(1 << 32)).contains(sequence)
    }

    /// A push that counted for the expectation at `position` of the listing (`fits`): the
    /// listing's device and spec are its own.
    mutating func append(position: Int, sequence: Int) {
        pushes.append(UInt64(position) << 32 | UInt64(sequence))
    }

    mutating func append(_ element: Element) {
        pushes.append(Self.wholeBit | UInt64(whole.count))
        whole.append(element)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { pushes.count }

    public subscript(index: Int) -> Element {
        let push = pushes[index]
        if push & Self.wholeBit != 0 { return whole[Int(push & ~Self.wholeBit)] }
        let entry = listing[Int(push >> 32)]
        return (entry.device, entry.spec, Int(push & 0xFFFF_FFFF))
    }
}

/// An expected push as a report lists it: the device and the spec.
public struct ExpectedListing: Sendable {
    /// A device of the run's index is kept as its position while the run goes and named once
    /// it is done (`EventVerdict.nameDevices`): a 100,000-person call lists ~300,000 pushes,
    /// and their 150,000 names made and kept as the run went were 9.5 MB of its peak
    /// (heaptrack).
    private enum Naming: Sendable {
        case written(String)
        case indexed(any DeviceNaming, Int32)
    }
    private var naming: Naming
    public var spec: String?

    /// `<person>/<device>` in a scenario, the token otherwise (made afresh for an indexed device).
    public var device: String {
        get {
            switch naming {
            case .written(let name): name
            case .indexed(let devices, let position): devices.makeName(at: Int(position))
            }
        }
        set { naming = .written(newValue) }
    }

    public init(_ push: ExpectedPush) {
        naming = .written(push.device)
        spec = push.spec
    }

    /// The device at `position` of `devices`, named when asked.
    fileprivate init(position: Int32, of devices: any DeviceNaming, spec: String?) {
        naming = .indexed(devices, position)
        self.spec = spec
    }

    fileprivate init(device: String, spec: String?) {
        naming = .written(device)
        self.spec = spec
    }

    /// The index and position the device is named by, if it is.
    fileprivate var indexed: (devices: any DeviceNaming, position: Int32)? {
        guard case .indexed(let devices, let position) = naming else { return nil }
        return (devices, position)
    }

    /// `spec`, or what a report says of a push of any spec.
    public var specName: String { spec ?? "a push" }
}

/// An event's expected pushes as a report lists them, 8 bytes each: the device (a position in
/// the run's device index, or a name) and the spec (one of the event's few). A list of
/// `ExpectedListing`s, 40 bytes each, held a 100,000-person call's ring listing (5.9 MB)
/// through the rest of the run, and made as much again while the call's end was judged.
public struct ExpectedListings: RandomAccessCollection, Sendable, ExpressibleByArrayLiteral {
    /// Per push: bits 0-31 the device, bits 32-62 the spec's index in `specs`, and bit 63 set
    /// when the device is a position in `devices`, clear when it is an index into `names`.
    private var entries: [UInt64] = []
    private var specs: [String?] = []
    private var indexOfSpec: [String?: UInt32] = [:]
    private var lastSpec = 0
    private var names: [String] = []
    /// What names the devices kept as positions: the run's index, then `DeviceNames`.
    private var devices: (any DeviceNaming)?
    private static let positionBit: UInt64 = 1 << 63

    public init() {}

    public init(_ listings: some Sequence<ExpectedListing>) {
        for listing in listings { append(listing) }
    }

    public init(arrayLiteral listings: ExpectedListing...) { self.init(listings) }

    /// `expected` listed: a push with a position in `devices` by that position.
    init(_ expected: ExpectedPushes, devices: ScenarioDeviceIndex?) {
        entries.reserveCapacity(expected.count)
        if let devices { self.devices = devices }
        for index in expected.indices {
            let (position, spec) = expected.positionAndSpec(at: index)
            let specIndex = self.spec(spec)
            if devices != nil, let position {
                entries.append(Self.positionBit | specIndex << 32 | UInt64(UInt32(position)))
            } else {
                entries.append(specIndex << 32 | name(expected[index].device))
            }
        }
    }

    init(_ expected: [ExpectedPush], devices: ScenarioDeviceIndex?) { self.init(ExpectedPushes(expected, devices: devices), devices: devices) }

    public mutating func append(_ listing: ExpectedListing) {
        let spec = spec(listing.spec)
        if let (devices, position) = listing.indexed, self.devices.map({ $0 === devices }) ?? true {
            self.devices = devices
            entries.append(Self.positionBit | spec << 32 | UInt64(UInt32(position)))
        } else {
            entries.append(spec << 32 | name(listing.device))
        }
    }

    private mutating func spec(_ spec: String?) -> UInt64 {
        // A fan-out lists a spec many times in a row: the last one asked is compared first.
        if lastSpec < specs.count, specs[lastSpec] == spec { return UInt64(lastSpec) }
        if let known = indexOfSpec[spec] {
            lastSpec = Int(known)
        } else {
            lastSpec = specs.count
            indexOfSpec[spec] = UInt32(specs.count)
            specs.append(spec)
        }
        return UInt64(lastSpec)
    }

    private mutating func name(_ name: String) -> UInt64 {
        names.append(name)
        return UInt64(names.count - 1)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { entries.count }

    public subscript(index: Int) -> ExpectedListing {
        let entry = entries[index]
        let spec = specs[Int(entry >> 32 & 0x7FFF_FFFF)]
        let device = Int32(bitPattern: UInt32(truncatingIfNeeded: entry))
        if entry & Self.positionBit != 0, let devices { return ExpectedListing(position: device, of: devices, spec: spec) }
        return ExpectedListing(device: names[Int(device)], spec: spec)
    }

    /// The listing with its devices named by `names` (the same positions) from now on.
    func named(by names: DeviceNames) -> ExpectedListings {
        guard devices != nil else { return self }
        var named = self
        named.devices = names
        return named
    }
}

public enum EventJudge {
    /// Judges one event's exchanges (pushes only matter) against `expected`, given what the
    /// cleanup state said before the event. `deviceName` turns a token into the device id a
    /// report shows. `run` feeds an `EventJudgement` as the exchanges arrive instead.
    public static func judge(
        index: Int, type: String, oracle: String, source: String?, expected: [ExpectedPush],
        exchanges: [RecordedExchange], cleanup: CleanupState, deviceName: @escaping (String) -> String,
        specs: SpecSet? = nil, wallClockMs: Int64 = 0
    ) -> EventVerdict {
        // The judgement never leaves this call, so `deviceName` is only ever called on this thread.
        nonisolated(unsafe) let name = deviceName
        var judgement = EventJudgement(index: index, type: type, oracle: oracle, source: source, expected: expected, cleanup: cleanup,
                                       deviceName: { name($0) }, specs: specs, wallClockMs: wallClockMs)
        for exchange in exchanges { judgement.observe(exchange) }
        return judgement.verdict()
    }

    /// A device and a spec id.
    public struct DeviceSpec: Hashable, Sendable {
        var token: DeviceToken
        var spec: String
    }

    /// Device names are `<person>/<device>`: same person, same prefix.
    static func sameOwner(_ a: String, _ b: String) -> Bool {
        guard let slashA = a.firstIndex(of: "/"), let slashB = b.firstIndex(of: "/") else { return false }
        return a[..<slashA] == b[..<slashB]
    }

    /// The sender's store against what it should hold: every live device, no dead one.
    public static func compareStore(listed: [ListedDevice], live: Set<DeviceToken>, dead: Set<DeviceToken>,
                                    deviceName: (String) -> String) -> [Problem] {
        // One look-up a listed device, in `live` itself: the live devices held are kept as
        // their places in `live` (integers), and `live` is walked only when some are missing.
        // A set of the listed tokens, then `live` walked against it, was two look-ups a device
        // in 150,000-entry tables of strings, a quarter of judging a 100,000-person call (perf).
        var liveHeld = Set<Set<DeviceToken>.Index>(minimumCapacity: Swift.min(listed.count, live.count))
        var keptDead: Set<DeviceToken> = []
        for device in listed {
            let token = DeviceToken(device.token)
            if !dead.isEmpty, dead.contains(token) { keptDead.insert(token) }
            if let place = live.firstIndex(of: token) { liveHeld.insert(place) }
        }
        let lost = liveHeld.count == live.count ? [] : live.indices.filter { !liveHeld.contains($0) }.map { live[$0] }
        return storeProblems(kept: keptDead, lost: lost, deviceName: deviceName)
    }

    /// `compareStore` for `run`, whose live devices are positions of the scenario's `devices`:
    /// one look-up a listed device (its token's position), then bits. Only a dead token the
    /// scenario has no device for is looked for by token.
    public static func compareStore(listed: [ListedDevice], live: DevicePositions, dead: Set<DeviceToken>,
                                    devices: ScenarioDeviceIndex, deviceName: (String) -> String) -> [Problem] {
        var deadPositions = DevicePositions(count: 0)
        var deadElsewhere: Set<DeviceToken> = []
        for token in dead {
            if let position = devices.position(ofToken: token) { deadPositions.insert(position) } else { deadElsewhere.insert(token) }
        }
        var held = DevicePositions(count: devices.count)
        var keptDead: Set<DeviceToken> = []
        for device in listed {
            let token = DeviceToken(device.token)
            if let position = devices.position(ofToken: token) {
                held.insert(position)
                if deadPositions.contains(position) { keptDead.insert(token) }
            } else if !deadElsewhere.isEmpty, deadElsewhere.contains(token) {
                keptDead.insert(token)
            }
        }
        let lost = live.subtracting(held).map { DeviceToken(devices.entries[$0].device.token) }
        return storeProblems(kept: keptDead, lost: lost, deviceName: deviceName)
    }

    /// The store's problems: dead tokens it kept, live ones it lost, each sorted for a stable
    /// report (only the differences are: this runs after every event).
    private static func storeProblems(kept: Set<DeviceToken>, lost: [DeviceToken], deviceName: (String) -> String) -> [Problem] {
        var problems = ProblemList()
        for token in kept.sorted() {
            problems.append(Problem(.storeMismatch, "the sender's store still holds \(deviceName(token.comparable)), whose token was answered gone or bad"))
        }
        for token in lost.sorted() {
            problems.append(Problem(.storeMismatch, "the sender's store lost \(deviceName(token.comparable)), whose token is live"))
        }
        return problems.listed
    }
}

extension RecordedExchange {
    /// How findings name a request: `#12`, its `seq`.
    var requestNumber: String { Self.requestNumber(sequence) }

    static func requestNumber(_ sequence: Int?) -> String { "#" + (sequence.map(String.init) ?? "?") }
}

/// The Retry-After rule, written once for `run`'s verdicts and a load run's matcher. Apple and
/// Google ask a sender to wait what a 429 or 503's `Retry-After` says before it tries again: a
/// refusal holds its device and spec for that long, and the next push to them sooner (a retry
/// is the next push to the same device of the same spec) is a retry too soon. Times are when
/// the gateway answered, so a latency fault on the retry can only hide a finding, never make one.
public struct RetryAfterRule: Sendable {
    private struct Refusal: Sendable {
        var label: String
        var answer: String
        var wait: Int
        var at: UInt64
    }
    private var waiting: [EventJudge.DeviceSpec: Refusal] = [:]

    public init() {}

    /// `push`, to `token`, answered at `at` nanoseconds (any one clock; nil: not known, it only
    /// ends a wait), named `label` in findings ("request #3", "push #3"). Returns the finding's
    /// words when it came too soon.
    public mutating func observe(_ push: RecordedExchange, token: DeviceToken, label: @autoclosure () -> String, at: UInt64?,
                                 deviceName: () -> String) -> String? {
        // Most pushes are accepted while nothing waits: then there is nothing to look up or name.
        let refused = push.status == 429 || push.status == 503
        guard refused || !waiting.isEmpty else { return nil }
        let key = EventJudge.DeviceSpec(token: token, spec: push.specID ?? "")
        var finding: String?
        if let refusal = waiting.removeValue(forKey: key), let at, at >= refusal.at {
            let gap = Double(at - refusal.at) / 1e9
            if gap < Double(refusal.wait) {
                finding = "retry too soon: \(label()) to \(deviceName()) came " + String(format: "%.3f", gap)
                    + " s after \(refusal.label) was answered \(refusal.answer) with Retry-After: \(refusal.wait) (wait at least \(refusal.wait) s)"
            }
        }
        if let at, refused, let wait = push.retryAfterSeconds, wait > 0 {
            waiting[key] = Refusal(label: label(), answer: push.answer, wait: wait, at: at)
        }
        return finding
    }
}
