import HTTPCore
import JSON
import RecordLine
import Synchronization

/// The newest requests the gateway answered, as record lines, for the control API's
/// `GET /requests` (WireMock's verification API, Pushy's listener: a test asks the server
/// what it received instead of parsing the record file).
///
/// An observer on the hot path, so its cost per request is one lock taken briefly, to copy
/// the line `Recorder` already encoded into a byte ring beside a fixed-size slot with the
/// few fields the filters read (route, status, and reason and spec id as small numbers; see
/// `JournalRing` for why, with the perf figures). `token=` reads the path or body from the
/// line itself, outside the lock. Memory is bounded: at most `capacity` requests and
/// `maxBytes` of lines, whichever comes first; the oldest are dropped (and counted).
///
/// Sequence numbers are the record file's when `Recorder` also writes one (it numbers each
/// line under this journal's lock, so both agree and the ring stays in order); without a
/// record file the journal numbers lines 1, 2, 3…
public final class RequestJournal: Sendable {
    /// One request's line, copied out of the ring for an answer.
    struct Line: Sendable {
        var sequence: UInt64
        var route: GatewayRoute
        /// The record line after its sequence number: `,"time":…}` and a newline.
        var tail: [UInt8]

        /// The whole record line, without its newline.
        func append(to out: inout [UInt8]) {
            out.append(contentsOf: RecordLine.linePrefix)
            appendDecimal(sequence, to: &out)
            out.append(contentsOf: tail.dropLast())
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
    /// Most bytes a query copies out of the ring in one hold of the lock, so a large answer
    /// does not stall the requests being recorded meanwhile.
    private let copyBatchBytes: Int
    private let state: Mutex<State>

    /// `listedStrings` and `copyBatchBytes`: smaller only in tests, to reach those paths.
    public convenience init(capacity: Int, maxBytes: Int = RequestJournal.defaultMaxBytes) {
        self.init(capacity: capacity, maxBytes: maxBytes, listedStrings: JournalStrings.defaultLimit, copyBatchBytes: 1 << 20)
    }

    init(capacity: Int, maxBytes: Int, listedStrings: Int, copyBatchBytes: Int) {
        self.capacity = max(1, capacity)
        self.maxBytes = min(max(1, maxBytes), Int(UInt32.max))
        self.copyBatchBytes = copyBatchBytes
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
        let spec = exchange.verdict?["spec"]?.stringValue
        let waiters = state.withLock { state -> [JournalWaiter] in
            let sequence = number(state.lastSequence + 1)
            state.lastSequence = sequence
            let slot = JournalRing.Slot(sequence: sequence, offset: 0, length: 0, status: status, route: route,
                                        reason: state.strings.id(reason), spec: state.strings.id(spec))
            state.ring.append(lineTail, slot)
            return state.waiters.isEmpty ? [] : Array(state.waiters.values)
        }
        for waiter in waiters { waiter.poke() }
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

    /// The requests that match `query` with a sequence number above `after` (and above
    /// `query.since`), oldest first: how many, and the first `keep` of them (nil: all).
    /// Also the newest sequence number looked at, from which a long poll goes on.
    func matches(_ query: JournalQuery, after: UInt64 = 0, keep: Int? = nil) -> (kept: [Line], count: Int, through: UInt64) {
        var floor = max(after, query.since)
        var kept: [Line] = []
        var count = 0
        var through: UInt64 = 0
        while true {
            let batch = state.withLock { state in
                Self.scan(query, after: floor, room: keep.map { $0 - kept.count }, copyBatchBytes: copyBatchBytes, in: state)
            }
            through = batch.through
            if batch.readsLines {
                for line in batch.lines where query.matchesLine(line) {
                    count += 1
                    if keep.map({ kept.count < $0 }) ?? true { kept.append(line) }
                }
            } else {
                count += batch.counted
                kept.append(contentsOf: batch.lines)
            }
            guard let resume = batch.resumeAfter else { break }
            floor = resume
        }
        return (kept, count, through)
    }

    /// One hold of the lock's worth of `matches`.
    private struct Batch {
        /// Copies of matching lines (`readsLines`: of candidates the line must confirm).
        var lines: [Line] = []
        /// Matches found (not `readsLines`), copied or not.
        var counted = 0
        /// True when every candidate's line must be read to decide (`token=`, or a reason
        /// or spec that only the line names).
        var readsLines = false
        /// Where to go on when this batch stopped at `copyBatchBytes`.
        var resumeAfter: UInt64?
        var through: UInt64 = 0
    }

    private static func scan(_ query: JournalQuery, after floor: UInt64, room: Int?, copyBatchBytes: Int,
                             in state: borrowing State) -> Batch {
        var batch = Batch(readsLines: query.token != nil
                            || (state.strings.overflowed && (query.reason != nil || query.spec != nil)),
                          through: state.lastSequence)
        // A reason or spec never seen matches no slot (only `unlisted` ones, when listed out).
        let reason = query.reason.map { state.strings.existingID($0) ?? JournalStrings.none }
        let spec = query.spec.map { state.strings.existingID($0) ?? JournalStrings.none }
        func fieldMatches(_ id: JournalStrings.ID, _ wanted: JournalStrings.ID?) -> Bool {
            guard let wanted else { return true }
            return id == JournalStrings.unlisted || (wanted != JournalStrings.none && id == wanted)
        }
        var copied = 0
        var index = state.ring.firstIndex(after: floor)
        while index < state.ring.count {
            let slot = state.ring.slot(index)
            index += 1
            if let route = query.route, slot.route != route { continue }
            if let status = query.status, Int(slot.status) != status { continue }
            guard fieldMatches(slot.reason, reason), fieldMatches(slot.spec, spec) else { continue }
            if !batch.readsLines {
                batch.counted += 1
                guard room.map({ batch.lines.count < $0 }) ?? true else { continue }
            }
            // Copied: the ring may reuse these bytes as soon as the lock is let go.
            batch.lines.append(Line(sequence: slot.sequence, route: slot.route, tail: Array(state.ring.line(of: slot))))
            copied += Int(slot.length)
            if copied >= copyBatchBytes, index < state.ring.count {
                batch.resumeAfter = slot.sequence
                break
            }
        }
        return batch
    }

    func addWaiter(_ waiter: JournalWaiter) {
        state.withLock { $0.waiters[ObjectIdentifier(waiter)] = waiter }
    }

    func removeWaiter(_ waiter: JournalWaiter) {
        _ = state.withLock { $0.waiters.removeValue(forKey: ObjectIdentifier(waiter)) }
    }

    /// `[line,line,…]`: the record lines as one JSON array.
    static func jsonArray(_ lines: [Line], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (index, line) in lines.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            line.append(to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}

private func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
    if value >= 10 { appendDecimal(value / 10, to: &out) }
    out.append(UInt8(ascii: "0") + UInt8(value % 10))
}
