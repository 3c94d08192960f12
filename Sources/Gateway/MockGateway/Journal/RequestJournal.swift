import Dispatch
import HTTPCore
import JSON
import PushModel
import RecordLine
import Synchronization

/// The newest requests the gateway answered, as record lines, for the control API's
/// `GET /requests` (WireMock's verification API, Pushy's listener: a test asks the server
/// what it received instead of parsing the record file).
///
/// An observer on the hot path, so its cost per request is one lock taken briefly, to copy
/// the line `Recorder` already encoded into a byte ring beside a fixed-size slot with the
/// few fields the filters read (route, status, reason and spec id as small numbers, the
/// device token as a hash; see `JournalRing` for why, with the perf figures). Memory is
/// bounded: at most `capacity` requests and `maxBytes` of lines, whichever comes first; the
/// oldest are dropped (and counted).
///
/// Nothing that asks costs memory beyond those bounds or holds up the requests being
/// recorded: an answer is streamed from the ring as the client reads it (`JournalAnswer`), a
/// long poll keeps a count and a sequence number, not lines (`JournalWaiter`), and waiting
/// polls are evaluated on a queue of their own, at most once a millisecond and each from the
/// last line it saw, never on the thread that recorded the request. At most `maxWaiters`
/// polls wait at once.
///
/// Sequence numbers are the record file's when `Recorder` also writes one (it numbers each
/// line under this journal's lock, so both agree and the ring stays in order); without a
/// record file the journal numbers lines 1, 2, 3…
public final class RequestJournal: Sendable {
    /// One request's line, copied out of the ring for a filter that must read it.
    struct Line: Sendable {
        var sequence: UInt64
        var route: GatewayRoute
        /// The record line after its sequence number: `,"time":…}` and a newline.
        var tail: [UInt8]

        /// The whole record line, without its newline.
        func append(to out: inout [UInt8]) {
            Self.append(sequence: sequence, tail: tail, to: &out)
        }

        /// The whole record line, without its newline.
        var bytes: [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(tail.count + 32)
            append(to: &bytes)
            return bytes
        }
    }

    /// What `/status` and `/metrics` say of the journal.
    public struct Counts: Sendable, Equatable {
        /// Requests held now.
        public var held: Int
        /// Requests dropped since start because the journal was full (`DELETE /requests` drops none).
        public var dropped: UInt64
        /// The newest sequence number given out (0: none yet).
        public var lastSequence: UInt64
        /// Long polls waiting now.
        public var waiting: Int
        /// Bytes of record lines held now (at most `maxBytes`).
        public var bytes: Int = 0
    }

    private struct State: ~Copyable {
        var ring: JournalRing
        var strings: JournalStrings
        var lastSequence: UInt64 = 0
        var waiters: [ObjectIdentifier: JournalWaiter] = [:]
    }

    /// Default byte bound: 16 MiB, about 15000 requests of the benchmark's shape (an APNs
    /// push with a 400-byte payload and six headers: a ~1.1 KB line), more of smaller ones.
    /// Small enough that a gateway that has recorded a million requests stays well under
    /// 64 MB of RSS, large enough for any one test's traffic.
    public static let defaultMaxBytes = 16 << 20

    /// The most requests held; at least 1.
    public let capacity: Int
    /// The most bytes of record lines held; at least 1.
    public let maxBytes: Int
    /// Most slots one hold of the lock looks at, so a scan of a large journal (up to 10^7
    /// slots) does not stall the requests being recorded meanwhile.
    private let slotsPerHold: Int
    private let state: Mutex<State>
    /// Where waiting polls are evaluated (`scheduleEvaluation`).
    private let evaluation = DispatchQueue(label: "pushproof.journal.waiters")
    private let evaluationScheduled = Atomic<Bool>(false)
    private let lastEvaluationNanos = Atomic<UInt64>(0)

    /// Most long polls waiting at once; one more is answered 503. Each costs the evaluation
    /// queue a look at every new slot.
    public static let maxWaiters = 256
    /// Waiting polls are looked at no more often than this: under a flood of requests one
    /// pass covers many new lines, so the passes' cost does not grow with the request rate.
    static let evaluationIntervalNanos: UInt64 = 1_000_000
    /// Most bytes of candidate lines one hold of the lock copies out to read (`token=` matching
    /// most of the journal must not copy all of it at once, for an answer or for a pass over
    /// the waiting polls, where a line many polls read is copied once).
    static let candidateBytesPerHold = 256 << 10

    /// `listedStrings` and `slotsPerHold`: smaller only in tests, to reach those paths.
    public convenience init(capacity: Int, maxBytes: Int = RequestJournal.defaultMaxBytes) {
        self.init(capacity: capacity, maxBytes: maxBytes, listedStrings: JournalStrings.defaultLimit, slotsPerHold: 16_384)
    }

    init(capacity: Int, maxBytes: Int, listedStrings: Int, slotsPerHold: Int) {
        self.capacity = max(1, capacity)
        self.maxBytes = min(max(1, maxBytes), Int(UInt32.max))
        self.slotsPerHold = max(1, slotsPerHold)
        state = Mutex(State(ring: JournalRing(maxRequests: self.capacity, maxBytes: self.maxBytes),
                            strings: JournalStrings(limit: listedStrings)))
    }

    /// Keeps one recorded line. `number` runs under the journal's lock and returns the line's
    /// sequence number, given the next one the journal would use: `Recorder` hands the line to
    /// the record file there and returns the file's number.
    func append(lineTail: [UInt8], of exchange: GatewayExchange, number: (_ next: UInt64) -> UInt64) {
        let route = exchange.route
        let status = UInt16(clamping: exchange.response.status)
        let reason = exchange.reason
        let spec = exchange.verdict?.specID
        let token = JournalToken.hash(of: exchange)
        let hasWaiters = state.withLock { state -> Bool in
            let sequence = number(state.lastSequence + 1)
            state.lastSequence = sequence
            let slot = JournalRing.Slot(sequence: sequence, offset: 0, length: 0, status: status, route: route,
                                        reason: state.strings.id(reason), spec: state.strings.id(spec), token: token)
            state.ring.append(lineTail, slot)
            return !state.waiters.isEmpty
        }
        if hasWaiters, !evaluationScheduled.load(ordering: .relaxed) { scheduleEvaluation() }
    }

    /// Forgets every request held (`DELETE /requests`). Sequence numbers go on from where they
    /// were, so a `since=` cursor stays valid.
    public func clear() {
        state.withLock { $0.ring.removeAll() }
    }

    public var counts: Counts {
        state.withLock { state in
            Counts(held: state.ring.count, dropped: state.ring.dropped, lastSequence: state.lastSequence,
                   waiting: state.waiters.count, bytes: state.ring.bytesHeld)
        }
    }

    // MARK: Scans

    /// How far a scan has gone: the lines it may look at have sequence numbers in
    /// (`after`, `through`]; it moves `after` on as it goes.
    struct Cursor {
        var after: UInt64
        /// Fixed by the first step (the newest line then) unless given: an answer covers the
        /// journal as it was when first read, not the lines that keep arriving.
        var through: UInt64?
        /// Matches still wanted (a query's `limit`); nil: every one.
        var remaining: Int?
        /// Matches found (and, when writing, written) so far.
        var found = 0
        var finished = false

        init(_ query: JournalQuery, after: UInt64 = 0, through: UInt64? = nil) {
            self.after = max(after, query.since)
            self.through = through
            remaining = query.limit
        }
    }

    /// Counts the matches of `query` above `after` (and `query.since`), up to the newest line:
    /// how many, and the sequence number a poll goes on from.
    func count(_ query: JournalQuery, after: UInt64 = 0) -> (count: Int, through: UInt64) {
        var cursor = Cursor(query, after: after)
        cursor.remaining = nil
        var ignored: [UInt8] = []
        while !cursor.finished { step(query, &cursor, writing: false, into: &ignored, preferredBytes: .max) }
        return (cursor.found, max(cursor.after, cursor.through ?? 0))
    }

    /// One hold of the lock's worth of a scan: at most `slotsPerHold` slots, and when writing
    /// (`[line,line,…]`'s lines, a comma before each but the first) about `preferredBytes`.
    /// A filter the slot cannot decide (`token=`, whose hash may collide, or a reason or spec
    /// past `JournalStrings`' list) copies its candidates and reads them outside the lock.
    func step(_ query: JournalQuery, _ cursor: inout Cursor, writing: Bool, into out: inout [UInt8], preferredBytes: Int) {
        var candidates: [Line] = []
        state.withLock { state in
            let through = cursor.through ?? state.lastSequence
            cursor.through = through
            let filter = SlotFilter(query, strings: state.strings)
            var index = state.ring.firstIndex(after: cursor.after)
            var looked = 0
            var candidateBytes = 0
            while true {
                guard index < state.ring.count else {
                    cursor.finished = true
                    break
                }
                let slot = state.ring.slot(index)
                guard slot.sequence <= through else {
                    cursor.finished = true
                    break
                }
                index += 1
                looked += 1
                cursor.after = slot.sequence
                if filter.matches(slot) {
                    if filter.readsLines {
                        // Copied: the ring may reuse these bytes as soon as the lock is let go.
                        candidates.append(Line(sequence: slot.sequence, route: slot.route, tail: Array(state.ring.line(of: slot))))
                        candidateBytes += Int(slot.length)
                    } else {
                        if writing {
                            if cursor.found > 0 { out.append(UInt8(ascii: ",")) }
                            Line.append(sequence: slot.sequence, tail: state.ring.line(of: slot), to: &out)
                        }
                        cursor.found += 1
                        if let remaining = cursor.remaining {
                            cursor.remaining = remaining - 1
                            if remaining == 1 {
                                cursor.finished = true
                                break
                            }
                        }
                    }
                }
                if looked >= slotsPerHold || out.count >= preferredBytes
                    || candidateBytes >= min(preferredBytes, Self.candidateBytesPerHold) { break }
            }
        }
        for line in candidates where !(cursor.remaining == 0) && query.matchesLine(line) {
            if writing {
                if cursor.found > 0 { out.append(UInt8(ascii: ",")) }
                line.append(to: &out)
            }
            cursor.found += 1
            if let remaining = cursor.remaining {
                cursor.remaining = remaining - 1
                if remaining == 1 { cursor.finished = true }
            }
        }
    }

    // MARK: Waiting polls

    /// Registers a poll; false when `maxWaiters` are waiting already.
    func addWaiter(_ waiter: JournalWaiter) -> Bool {
        state.withLock { state in
            guard state.waiters.count < Self.maxWaiters else { return false }
            state.waiters[ObjectIdentifier(waiter)] = waiter
            return true
        }
    }

    func removeWaiter(_ waiter: JournalWaiter) {
        _ = state.withLock { $0.waiters.removeValue(forKey: ObjectIdentifier(waiter)) }
    }

    /// New lines (or a new poll): every waiting poll is looked at on the evaluation queue, in
    /// one pass, no sooner than `evaluationIntervalNanos` after the last pass began. Requests
    /// recorded meanwhile only find the pass already scheduled.
    func scheduleEvaluation() {
        guard !evaluationScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = lastEvaluationNanos.load(ordering: .relaxed) &+ Self.evaluationIntervalNanos
        let pass: @Sendable () -> Void = { [self] in
            lastEvaluationNanos.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            evaluationScheduled.store(false, ordering: .releasing)
            evaluateWaiters()
        }
        if due > now {
            evaluation.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due), execute: pass)
        } else {
            evaluation.async(execute: pass)
        }
    }
}

extension RequestJournal {
    /// One pass over the waiting polls (the evaluation queue's work; tests call it to know a
    /// pass has looked at what is held): the new slots are read once for all of them, a hold
    /// of the lock per `slotsPerHold` slots, each slot checked against every poll that has not
    /// seen it; the lines a filter must read are copied and read outside the lock.
    func evaluateWaiters() {
        let waiters = state.withLock { Array($0.waiters.values) }
        let positions = waiters.map(\.position)
        guard var floor = positions.compactMap({ $0 }).min() else { return }
        var counts = [Int](repeating: 0, count: waiters.count)
        // The pass covers the lines held when it began: it never chases a flood's newest line.
        var through: UInt64?
        var finished = false
        while !finished {
            // A line some polls must read, copied once for all of them.
            var candidates: [(waiters: [Int], line: Line)] = []
            var candidateBytes = 0
            state.withLock { state in
                let end = through ?? state.lastSequence
                through = end
                let filters = waiters.map { SlotFilter($0.query, strings: state.strings) }
                var index = state.ring.firstIndex(after: floor)
                var looked = 0
                while true {
                    guard index < state.ring.count, state.ring.slot(index).sequence <= end else {
                        finished = true
                        break
                    }
                    guard looked < slotsPerHold, candidateBytes < Self.candidateBytesPerHold else { break }
                    let slot = state.ring.slot(index)
                    index += 1
                    looked += 1
                    floor = slot.sequence
                    var readers: [Int] = []
                    for waiter in waiters.indices {
                        guard let position = positions[waiter], position < slot.sequence, filters[waiter].matches(slot) else { continue }
                        if filters[waiter].readsLines { readers.append(waiter) } else { counts[waiter] += 1 }
                    }
                    if !readers.isEmpty {
                        candidates.append((readers, Line(sequence: slot.sequence, route: slot.route, tail: Array(state.ring.line(of: slot)))))
                        candidateBytes += Int(slot.length)
                    }
                }
            }
            for (readers, line) in candidates {
                for waiter in readers where waiters[waiter].query.matchesLine(line) { counts[waiter] += 1 }
            }
        }
        for index in waiters.indices {
            guard let from = positions[index] else { continue }
            waiters[index].advance(by: counts[index], from: from, through: max(through ?? 0, from))
        }
    }
}

/// What a query asks of a slot, with its reason and spec as the journal's string ids: decided
/// from the slot alone unless `readsLines` (then a match is a candidate its line confirms).
struct SlotFilter {
    let route: GatewayRoute?
    let status: Int?
    /// nil: any; `JournalStrings.none`: a string never seen, which no listed slot carries.
    let reason: JournalStrings.ID?
    let spec: JournalStrings.ID?
    let token: UInt64?
    /// `token=` (a hash can collide), or a reason or spec past the journal's listed strings.
    let readsLines: Bool

    init(_ query: JournalQuery, strings: JournalStrings) {
        route = query.route
        status = query.status
        reason = query.reason.map { strings.existingID($0) ?? JournalStrings.none }
        spec = query.spec.map { strings.existingID($0) ?? JournalStrings.none }
        token = query.tokenHash
        readsLines = query.token != nil || (strings.overflowed && (query.reason != nil || query.spec != nil))
    }

    func matches(_ slot: JournalRing.Slot) -> Bool {
        if let route, slot.route != route { return false }
        if let status, Int(slot.status) != status { return false }
        if let token, slot.token != token { return false }
        return Self.matches(slot.reason, reason) && Self.matches(slot.spec, spec)
    }

    /// An `unlisted` slot may be anything: its line decides (`readsLines`).
    private static func matches(_ id: JournalStrings.ID, _ wanted: JournalStrings.ID?) -> Bool {
        guard let wanted else { return true }
        return id == JournalStrings.unlisted || (wanted != JournalStrings.none && id == wanted)
    }
}

extension RequestJournal.Line {
    /// A whole record line from its sequence number and the rest, without its newline.
    static func append(sequence: UInt64, tail: some Collection<UInt8>, to out: inout [UInt8]) {
        out.append(contentsOf: RecordLine.linePrefix)
        appendDecimal(sequence, to: &out)
        out.append(contentsOf: tail.dropLast())
    }
}
