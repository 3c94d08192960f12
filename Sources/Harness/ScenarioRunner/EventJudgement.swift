// One event's verdict built as its exchanges arrive. Each push is judged when it comes (its
// spec's verdict, the expectation it counts for, its pinned fields and reference content,
// the Retry-After and dead-token rules) and then dropped: what is kept per expected push is a
// count, and the extra sequences of a duplicate, never the event's exchanges with their
// headers and bodies. `EventJudge.judge` feeds one a whole list; `run` feeds it as the gateway
// receives them, so memory follows the pushes in flight, not the fan-out.
import JSON
import PushModel
import RecordLine
import Scenario
import SpecValidator

public struct EventJudgement: Sendable {
    let index: Int
    let type: String
    let oracle: String
    let source: String?
    /// The cleanup state before the event (dead tokens, refusals, registrations).
    private let cleanup: CleanupState
    private let deviceName: @Sendable (String) -> String
    private let specs: SpecSet?
    private let wallClockMs: Int64
    /// The run's devices: an entry with a position is named by it.
    private let devices: ScenarioDeviceIndex?

    /// The expectation in its order; an entry's pinned fields and headers and its reference
    /// push are dropped once they were checked on its device's first accepted push.
    private var expected: ExpectedPushes
    /// Matching pushes each entry got, and (sparse) the sequences of those beyond its count.
    /// How many accepted pushes counted for each expectation (4 bytes each: 150,000 an event).
    private var matched: [Int32]
    private var extra: [Int: [Int]] = [:]
    /// The entry a push of a device and spec counts for: the first naming that spec, else the
    /// device's first entry of any spec (an entry naming a spec takes its pushes first, and
    /// each entry takes every push it matches: `DeliveryTally.compare`).
    private var entries: ExpectationIndex
    /// Later entries of a device and spec an earlier one takes the pushes of (rare): they are
    /// checked on the same first accepted push.
    private var sameDeviceSpec: [Int: [Int]] = [:]
    /// Field and content findings on the first accepted push, by entry.
    private var fieldProblems: [Int: [Problem]] = [:]
    private var contentProblems: [Int: [Problem]] = [:]
    /// What the gateway answered the refused pushes to expected devices, so a missing push says why.
    private var refusals: [DeviceToken: [(sequence: Int?, answer: String)]] = [:]
    private var unexpected: [(token: String, spec: String?, sequence: Int)] = []
    private var specProblems = ProblemList()
    private var retryProblems = ProblemList()
    private var deadTokenProblems = ProblemList()
    private var retryAfter = RetryAfterRule()
    /// Accepted pushes: those that counted for their device and spec as positions in `expected`.
    private var delivered = DeliveredPushes(capacity: 0)
    /// Spec ids as first seen: the deliveries of a fan-out share one string each.
    private var specIDs = SharedStrings()
    /// The spec last looked up by id (`spec(id:)`).
    private var lastSpec: PushSpec?
    /// With `devices`, the positions of the tokens dead before the event: a push's check is a
    /// bit, not a look-up of its token. Nil: the tokens are looked up.
    private let deadPositions: DevicePositions?

    /// `deviceName` names a device by its token as the entries of `expected` are named: a push
    /// that counts for an entry is listed under the entry's `device`. `devices`: the run's
    /// device index, whose positions the entries' `devicePosition` are.
    public init(index: Int, type: String, oracle: String, source: String?, expected: [ExpectedPush], cleanup: CleanupState,
                deviceName: @escaping @Sendable (String) -> String, specs: SpecSet? = nil, wallClockMs: Int64 = 0,
                devices: ScenarioDeviceIndex? = nil) {
        self.init(index: index, type: type, oracle: oracle, source: source, expected: ExpectedPushes(expected, devices: devices),
                  cleanup: cleanup, deviceName: deviceName, specs: specs, wallClockMs: wallClockMs, devices: devices)
    }

    /// `expected`'s positions are in `devices`.
    public init(index: Int, type: String, oracle: String, source: String?, expected: ExpectedPushes, cleanup: CleanupState,
                deviceName: @escaping @Sendable (String) -> String, specs: SpecSet? = nil, wallClockMs: Int64 = 0,
                devices: ScenarioDeviceIndex? = nil) {
        self.index = index
        self.type = type
        self.oracle = oracle
        self.source = source
        self.cleanup = cleanup
        self.deviceName = deviceName
        self.specs = specs
        self.wallClockMs = wallClockMs
        self.expected = expected
        self.devices = devices
        deadPositions = devices.flatMap { devices in
            var positions = DevicePositions(count: devices.count)
            for token in cleanup.dead.keys {
                // A dead token the index does not know: every push's is looked up.
                guard let position = devices.position(ofToken: token) else { return nil }
                positions.insert(position)
            }
            return positions
        }
        matched = Array(repeating: 0, count: expected.count)
        // Sized once: grown by doubling, a 150,000-push event's index and list of deliveries
        // would each pass through twice their size.
        entries = ExpectationIndex(capacity: expected.count, devices: devices)
        delivered = DeliveredPushes(capacity: expected.count)
        // By index: `enumerated()` copied each entry, its six strings and arrays retained.
        for position in expected.indices {
            if let first = entries.add(position, token: expected.token(at: position),
                                       devicePosition: expected.devicePosition(at: position), spec: expected.spec(at: position)) {
                sameDeviceSpec[first, default: []].append(position)
            }
        }
    }

    /// Judges exchanges in the order the gateway answered them.
    public mutating func observe(_ exchanges: [RecordedExchange]) {
        // Each exchange is still copied out of the array for the call (a retain of each of
        // its fields, about a tenth of the reads of a 100,000-person call: perf, disassembly);
        // a class would be one retain, but the exchange is a value wherever a recording is read.
        for position in exchanges.indices { observe(exchanges[position]) }
    }

    /// Judges one exchange (only pushes matter), in the order the gateway answered them.
    public mutating func observe(_ push: RecordedExchange) {
        guard push.isPush else { return }
        let written = push.token
        let token = written.map { DeviceToken($0) }
        // The token's key in the expectation: looked up once a push.
        let device = token.flatMap { entries.key(of: $0) }
        let sequence = push.sequence ?? 0
        // Every push passes its spec, and matches one. Named only when something is wrong.
        if let judgement = push.verdict?.judgement, judgement.spec == nil || !judgement.violations.isEmpty {
            let name = written.map(deviceName) ?? push.path
            if let spec = judgement.spec {
                for violation in judgement.violations {
                    let pointer = violation.pointer
                    specProblems.append(Problem(.specViolation, "request \(push.requestNumber) \(spec) to \(name) at \(pointer.isEmpty ? "/" : pointer): \(violation.message)",
                                                source: violation.source?.sentence))
                }
            } else {
                specProblems.append(Problem(.unmatched, "request \(push.requestNumber) to \(name) matches no spec"))
            }
        }
        if push.accepted {
            let spec = push.specID.map { specIDs.shared($0) }
            let position = token.flatMap { count(push, token: $0, device: device, spec: spec, sequence: sequence) }
            // A push that counted for an entry is the entry's device (same token, named by the
            // same `deviceName`): it is not named again, which was a tenth of judging a push.
            if let position, DeliveredPushes.fits(position: position, sequence: sequence) {
                delivered.append(position: position, sequence: sequence)
            } else {
                delivered.append((written.map(deviceName) ?? "?", spec, sequence))
            }
        } else if let token, let device, entries.hasEntry(device: device) {
            refusals[token, default: []].append((push.sequence, push.answer))
        }
        guard let token else { return }
        let answered = push.answeredNanos.flatMap { $0 > 0 ? $0 : nil }
        // The label's closure captures the sequence alone: capturing `push` copied the whole
        // exchange for every push (a retain of each field; perf: ~8% of the reads).
        let number = push.sequence
        if let finding = retryAfter.observe(push, token: token, label: "request " + RecordedExchange.requestNumber(number), at: answered,
                                            deviceName: { deviceName(token.comparable) }) {
            retryProblems.append(Problem(.retryTooSoon, finding))
        }
        // No push to a token already answered gone or bad.
        if !cleanup.dead.isEmpty, mayBeDead(device), let death = cleanup.dead[token] {
            deadTokenProblems.append(.deadTokenPush(device: deviceName(token.comparable), push: "request \(push.requestNumber)",
                                                    answered: "\(death.answer.rawValue) at event \(death.event)"))
        }
    }

    /// An accepted push: counted for its entry (the first one of a device and spec also has
    /// its pinned fields and content checked), or unexpected.
    /// Returns the entry's position when the push counted for an entry of its own spec (then
    /// the entry's device and spec are the push's, for `DeliveredPushes`).
    private mutating func count(_ push: RecordedExchange, token: DeviceToken, device: UInt32?, spec: String?, sequence: Int) -> Int? {
        if let spec, let device, let entry = entries.entry(device: device, spec: spec) {
            if matched[entry] == 0 {
                check(entry, on: push)
                for later in sameDeviceSpec[entry] ?? [] { check(later, on: push) }
            }
            take(entry, sequence)
            return entry
        } else if let device, let entry = entries.entryOfAnySpec(device: device) {
            take(entry, sequence)
        } else {
            unexpected.append((token.comparable, spec, sequence))
        }
        return nil
    }

    /// False when the device of key `device` is certainly not dead: its bit says so. True
    /// means its token is looked up in the cleanup state.
    private func mayBeDead(_ device: UInt32?) -> Bool {
        guard let deadPositions, let device, entries.isPosition(device) else { return true }
        return deadPositions.contains(Int(device))
    }

    private mutating func take(_ entry: Int, _ sequence: Int) {
        matched[entry] &+= 1
        if matched[entry] > expected.count(at: entry) { extra[entry, default: []].append(sequence) }
    }

    /// Pinned fields and headers, and what the push says against the reference rules' push;
    /// then the entry's copies of them go.
    private mutating func check(_ position: Int, on push: RecordedExchange) {
        if expected.pinsFieldsOrHeaders(at: position) {
            let entry = expected[position]
            let device = name(of: entry)
            var problems: [Problem] = []
            for (name, value) in entry.headers {
                let found = push.headers.first { $0.name == name }?.value
                if found != value {
                    problems.append(Problem(.field, "\(entry.specName) to \(device) at header \(name): expected "
                                            + (value.map { JSONValue.string($0).serialized() } ?? "none") + ", found "
                                            + (found.map { JSONValue.string($0).serialized() } ?? "none"), source: entry.source ?? source))
                }
            }
            if !entry.fields.isEmpty {
                let body = (try? JSONParser.parse(push.body)) ?? .null
                for (pointer, value) in entry.fields {
                    let found = pointer.resolve(in: body)
                    if found != value {
                        problems.append(Problem(.field, "\(entry.specName) to \(device) at \(pointer): expected \(value.serialized()), found "
                                                + (found?.serialized() ?? "nothing"), source: entry.source ?? source))
                    }
                }
            }
            if !problems.isEmpty { fieldProblems[position] = problems }
        }
        if specs != nil, let reference = expected.reference(at: position), let spec = expected.spec(at: position).flatMap({ spec(id: $0) }) {
            // The entry is read in place: a copy of it (six strings and arrays) a push was a
            // tenth of judging.
            let differences = spec.compareContent(headers: push.headers, body: push.body, with: reference, token: expected.token(at: position),
                                                  wallClockMs: wallClockMs)
            if !differences.isEmpty {
                let entry = expected[position]
                contentProblems[position] = differences.map { difference in
                    Problem(.content, "content: \(entry.specName) to \(name(of: entry)) (request \(push.requestNumber)): \(difference)",
                            source: difference.source?.sentence)
                }
            }
        }
        expected.dropContent(at: position)
    }

    /// How a report names the entry's device: by its position in the run's devices when it has one.
    private func name(of entry: ExpectedPush) -> String {
        guard let devices, let position = entry.devicePosition else { return entry.device }
        return devices.name(at: Int(position))
    }

    /// The spec with this id: a fan-out's pushes name one or two, so the last one found is
    /// asked first.
    private mutating func spec(id: String) -> PushSpec? {
        if let lastSpec, lastSpec.id == id { return lastSpec }
        lastSpec = specs?.spec(id: id)
        return lastSpec
    }

    /// What had to arrive, as the report lists it.
    public var expectedListing: ExpectedListings { ExpectedListings(expected, devices: devices) }

    /// The verdict on what was observed: the problems in the order a report lists them
    /// (missing, duplicates, unexpected, spec findings, pinned fields, content, retries, dead
    /// tokens), at most `ProblemList.listedPerKind` of each kind.
    /// The verdict, and the judgement's per-push state let go (the expectation and its
    /// index: a 100,000-person event's ~40 MB), as when it is done.
    public mutating func finish() -> EventVerdict {
        let verdict = verdict()
        expected = ExpectedPushes(devices: nil)
        matched = []
        extra = [:]
        entries = ExpectationIndex(capacity: 0)
        delivered = DeliveredPushes(capacity: 0)
        return verdict
    }

    public func verdict() -> EventVerdict {
        var problems = ProblemList()
        // Entries naming a spec first, so a "(any spec)" entry only takes what they leave.
        let order = expected.indices.filter { expected.spec(at: $0) != nil } + expected.indices.filter { expected.spec(at: $0) == nil }
        var missing: [(entry: Int, got: Int)] = []
        var repeated: [Int] = []
        for position in order {
            if matched[position] < expected.count(at: position) {
                missing.append((position, Int(matched[position])))
            } else if matched[position] > expected.count(at: position) {
                repeated.append(position)
            }
        }
        for (position, got) in missing {
            let entry = expected[position]
            let token = DeviceToken(entry.token)
            let name = deviceName(entry.token)
            let refused = refusals[token] ?? []
            // Dropped only if nothing went to the token at all: a sender still pushing it and
            // refused again (a bad signature on every push) kept it; its answer says why below.
            if let problem = cleanup.missedPushProblem(token: token, spec: entry.specName, deviceName: name),
               problem.kind == .notPushedAfterRegistering || (got == 0 && refused.isEmpty) {
                problems.append(problem)
            }
            var message = "missing: \(entry.specName) to \(name) (accepted \(got) of \(entry.count))"
            if !refused.isEmpty {
                let answers = refused.reduce(into: [String]()) { list, push in if !list.contains(push.answer) { list.append(push.answer) } }
                message += "; the gateway answered " + refused.map { "#" + ($0.sequence.map(String.init) ?? "?") }.joined(separator: ", ")
                    + ": " + answers.joined(separator: "; ")
            }
            // The source of the device's first entry of that spec.
            let first = entries.key(of: token).flatMap { device in
                entry.spec.map { entries.entry(device: device, spec: $0) } ?? entries.entryOfAnySpec(device: device)
            }
            problems.append(Problem(.missing, message, source: first.flatMap { expected[$0].source } ?? source))
        }
        for position in repeated {
            let entry = expected[position]
            problems.append(Problem(.duplicate, "duplicate: \(entry.specName) to \(deviceName(entry.token)) accepted \(matched[position]) times "
                                    + "(extra: request #\((extra[position] ?? []).map(String.init).joined(separator: ", #")))"))
        }
        // A push of a missing spec to another token of the same person: the wrong token kind.
        var missingOfOwner: [String: Int] = [:]
        for (position, _) in missing {
            guard let owner = Self.owner(deviceName(expected.token(at: position))) else { continue }
            let key = Self.ownerKey(spec: expected.spec(at: position), owner: owner)
            if missingOfOwner[key] == nil { missingOfOwner[key] = position }
        }
        let sortedUnexpected = unexpected.sorted { ($0.sequence, $0.token) < ($1.sequence, $1.token) }
        for (token, spec, sequence) in sortedUnexpected {
            let name = deviceName(token)
            let wrongKind = missingOfOwner.isEmpty ? nil : Self.owner(name).flatMap { missingOfOwner[Self.ownerKey(spec: spec, owner: $0)] }
            if let wrongKind {
                problems.append(Problem(.wrongToken, "wrong token: \(spec ?? "a push") went to \(name) (request #\(sequence)) "
                                        + "instead of \(deviceName(expected.token(at: wrongKind)))"))
            } else {
                problems.append(Problem(.unexpected, "unexpected: \(spec ?? "an unmatched push") to \(name) (request #\(sequence))"))
            }
        }
        problems.append(contentsOf: specProblems)
        for position in fieldProblems.keys.sorted() { for problem in fieldProblems[position]! { problems.append(problem) } }
        for position in contentProblems.keys.sorted() { for problem in contentProblems[position]! { problems.append(problem) } }
        problems.append(contentsOf: retryProblems)
        problems.append(contentsOf: deadTokenProblems)
        let listing = expectedListing
        var delivered = delivered
        delivered.setListing(listing)
        return EventVerdict(index: index, type: type, oracle: oracle, source: source, expected: listing, delivered: delivered,
                            problems: problems.listed)
    }

    /// Device names are `<person>/<device>`: the person.
    static func owner(_ name: String) -> String? {
        name.firstIndex(of: "/").map { String(name[..<$0]) }
    }

    /// A spec (or none) and a person, as one key.
    private static func ownerKey(spec: String?, owner: String) -> String {
        (spec.map { "+" + $0 } ?? "-") + "\u{0}" + owner
    }
}

/// Strings as first seen, so equal ones share storage (a fan-out's 150,000 deliveries name one
/// or two spec ids). The last one is compared first: a fan-out names one spec after another.
struct SharedStrings: Sendable {
    private var seen: Set<String> = []
    private var last: String?

    mutating func shared(_ text: String) -> String {
        if let last, last == text { return last }
        let first = seen.insert(text).memberAfterInsert
        last = first
        return first
    }
}

/// Where an event's expected pushes are, by device and spec: each device as an integer key
/// (its position in the run's device index, else a key given here to a token the index does
/// not know), each spec as a small integer. Keyed by the token and spec strings themselves,
/// a 150,000-push event's index hashed both into string-keyed tables an entry, and again a
/// push; now a push's token is hashed once, into the run's index, and an event that reaches a
/// good part of the population finds its entries in arrays by position.
struct ExpectationIndex: Sendable {
    /// The run's devices, whose positions are the keys; nil: every token gets a key here.
    private let devices: ScenarioDeviceIndex?
    /// Keys of expected tokens with no position, from `firstOwnKey` on.
    private var ownKeys: [DeviceToken: UInt32] = [:]
    private let firstOwnKey: UInt32
    /// A fan-out names one or two specs: their keys, in the order first seen.
    private var specs: [String] = []
    /// Dense: by spec key, by device key, the first entry naming that spec (-1: none). Made
    /// when the event reaches at least an eighth of the devices; a few pushes in a large
    /// population use `sparse` instead of arrays of the whole population.
    private let isDense: Bool
    private var dense: [[Int32]] = []
    private var sparse: [UInt64: Int32] = [:]
    private var entryOfAnySpecByDevice: [UInt32: Int32] = [:]

    /// `capacity`: the event's expected pushes.
    init(capacity: Int, devices: ScenarioDeviceIndex? = nil) {
        self.devices = devices
        firstOwnKey = UInt32(devices?.count ?? 0)
        isDense = devices.map { capacity > 0 && capacity * 8 >= $0.count } ?? false
        if !isDense {
            sparse.reserveCapacity(capacity)
            if devices == nil { ownKeys.reserveCapacity(capacity) }
        }
    }

    /// Adds the entry at `position` for the token as `written` (`devicePosition`: its device's
    /// position in `devices`, when known); returns the earlier entry of the same device and
    /// spec when there is one (that one takes the pushes), else nil.
    mutating func add(_ position: Int, token written: String, devicePosition: Int32?, spec: String?) -> Int? {
        let device: UInt32
        if devices != nil, let devicePosition {
            device = UInt32(devicePosition)
        } else {
            let token = DeviceToken(written)
            if let known = key(of: token) {
                device = known
            } else {
                device = firstOwnKey + UInt32(ownKeys.count)
                ownKeys[token] = device
            }
        }
        guard let spec else {
            if entryOfAnySpecByDevice[device] == nil { entryOfAnySpecByDevice[device] = Int32(position) }
            return nil
        }
        let specKey = specKey(spec) ?? {
            specs.append(spec)
            if isDense { dense.append(Array(repeating: -1, count: Int(firstOwnKey))) }
            return UInt32(specs.count - 1)
        }()
        if let first = entry(device: device, specKey: specKey) { return first }
        if isDense {
            let (spec, index) = (Int(specKey), Int(device))
            // A key of its own (a token the index does not know) lies past the positions.
            if index >= dense[spec].count { dense[spec] += repeatElement(-1, count: index - dense[spec].count + 1) }
            dense[spec][index] = Int32(position)
        } else {
            sparse[Self.key(device, specKey)] = Int32(position)
        }
        return nil
    }

    /// The key of `token`: its position in the run's devices, else the key given to it here;
    /// nil for a token nothing was expected for that the run does not know.
    func key(of token: DeviceToken) -> UInt32? {
        if let position = devices?.position(ofToken: token) { return UInt32(position) }
        return ownKeys.isEmpty ? nil : ownKeys[token]
    }

    /// Whether some entry is for the device of key `device`.
    func hasEntry(device: UInt32) -> Bool {
        if entryOfAnySpec(device: device) != nil { return true }
        return specs.indices.contains { entry(device: device, specKey: UInt32($0)) != nil }
    }

    /// Whether `device` is a position in the run's devices (not a key given here).
    func isPosition(_ device: UInt32) -> Bool { devices != nil && device < firstOwnKey }

    /// The first entry of `device` naming `spec`.
    func entry(device: UInt32, spec: String) -> Int? {
        specKey(spec).flatMap { entry(device: device, specKey: $0) }
    }

    private func entry(device: UInt32, specKey: UInt32) -> Int? {
        if isDense {
            let (spec, index) = (Int(specKey), Int(device))
            return index < dense[spec].count && dense[spec][index] >= 0 ? Int(dense[spec][index]) : nil
        }
        return sparse[Self.key(device, specKey)].map(Int.init)
    }

    /// The first entry of `device` that names no spec.
    func entryOfAnySpec(device: UInt32) -> Int? {
        entryOfAnySpecByDevice.isEmpty ? nil : entryOfAnySpecByDevice[device].map(Int.init)
    }

    private func specKey(_ spec: String) -> UInt32? { specs.firstIndex(of: spec).map(UInt32.init) }

    private static func key(_ device: UInt32, _ spec: UInt32) -> UInt64 { UInt64(device) << 32 | UInt64(spec) }
}

/// An event's problems, at most `listedPerKind` of each kind: the rest of a kind are counted
/// in one more problem of that kind after its last listed one ("… and 1,200 more"), so a
/// sender that misses a 100,000-person fan-out gets a readable report in bounded memory.
public struct ProblemList: Sendable {
    public static let listedPerKind = 100

    private var problems: [Problem] = []
    private var counts: [Problem.Kind: Int] = [:]

    public init() {}

    public mutating func append(_ problem: Problem) {
        counts[problem.kind, default: 0] += 1
        if counts[problem.kind]! <= Self.listedPerKind { problems.append(problem) }
    }

    public mutating func append(contentsOf other: ProblemList) {
        for problem in other.problems { append(problem) }
        for (kind, count) in other.counts where count > Self.listedPerKind {
            counts[kind, default: 0] += count - Self.listedPerKind
        }
    }

    /// The problems listed, each kind over the limit followed by the count of the rest.
    public var listed: [Problem] {
        var out: [Problem] = []
        out.reserveCapacity(problems.count + counts.count)
        var seen: [Problem.Kind: Int] = [:]
        for problem in problems {
            out.append(problem)
            seen[problem.kind, default: 0] += 1
            let total = counts[problem.kind]!
            if seen[problem.kind] == Self.listedPerKind, total > Self.listedPerKind {
                let rest = total - Self.listedPerKind
                out.append(Problem(problem.kind, "… and \(rest) more \(problem.kind.rawValue) problem\(rest == 1 ? "" : "s") in this event"))
            }
        }
        return out
    }
}
