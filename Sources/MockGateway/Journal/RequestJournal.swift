import HTTPCore
import JSON
import Synchronization

/// The last `capacity` requests the gateway answered, as record lines, for the control API's
/// `GET /requests` (WireMock's verification API, Pushy's listener: a test asks the server
/// what it received instead of parsing the record file).
///
/// An observer on the hot path, so its cost per request is one lock taken briefly: the line
/// is the one `Recorder` already encoded (shared, not copied), and beside it only the few
/// fields the filters read (route, status, reason, spec id; the path and, for FCM, the body,
/// from which a `token=` query finds the token when it asks). Memory is bounded: a ring of
/// `capacity` entries, the oldest dropped (and counted) when it is full.
///
/// Sequence numbers are the record file's when `Recorder` also writes one (it numbers each
/// line under this journal's lock, so both agree and the ring stays in order); without a
/// record file the journal numbers lines 1, 2, 3…
public final class RequestJournal: Sendable {
    /// One request, as kept.
    struct Entry: Sendable {
        var sequence: UInt64
        /// The record line after its sequence number: `,"time":…}` and a newline.
        var lineTail: [UInt8]
        var route: GatewayRoute
        var status: Int
        var reason: String?
        var spec: String?
        var path: String
        /// FCM only (`message.token`); empty for the other routes.
        var body: [UInt8]

        /// The whole record line, without its newline.
        func appendLine(to out: inout [UInt8]) {
            out.append(contentsOf: Recorder.linePrefix)
            appendDecimal(sequence, to: &out)
            out.append(contentsOf: lineTail.dropLast())
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
    }

    private struct Ring {
        var entries: [Entry] = []
        /// Index of the oldest entry once `entries` is full (0 until then).
        var oldest = 0
        var lastSequence: UInt64 = 0
        var dropped: UInt64 = 0
        var waiters: [ObjectIdentifier: JournalWaiter] = [:]

        func entry(_ logical: Int) -> Entry { entries[(oldest + logical) % entries.count] }

        /// Adds `entry`, returning the one it displaced (released by the caller, outside the lock).
        mutating func append(_ entry: Entry, capacity: Int) -> Entry? {
            if entries.count < capacity {
                entries.append(entry)
                return nil
            }
            let evicted = entries[oldest]
            entries[oldest] = entry
            oldest = (oldest + 1) % capacity
            dropped += 1
            return evicted
        }

        /// The logical index of the first entry with a sequence number above `sequence`.
        func firstIndex(after sequence: UInt64) -> Int {
            var low = 0
            var high = entries.count
            while low < high {
                let middle = (low + high) / 2
                if entry(middle).sequence <= sequence { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    /// The most requests held; at least 1.
    public let capacity: Int
    private let ring = Mutex(Ring())

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Keeps one recorded line. `number` runs under the journal's lock and returns the line's
    /// sequence number, given the next one the journal would use: `Recorder` hands the line to
    /// the record file there and returns the file's number.
    func append(lineTail: [UInt8], of exchange: GatewayExchange, number: (_ next: UInt64) -> UInt64) {
        var entry = Entry(sequence: 0, lineTail: lineTail, route: exchange.route, status: exchange.response.status,
                          reason: exchange.reason, spec: exchange.verdict?["spec"]?.stringValue, path: exchange.request.path,
                          body: exchange.route == .fcm ? exchange.request.body : [])
        let (evicted, waiters) = ring.withLock { ring -> (Entry?, [JournalWaiter]) in
            entry.sequence = number(ring.lastSequence + 1)
            ring.lastSequence = entry.sequence
            let evicted = ring.append(entry, capacity: capacity)
            return (evicted, ring.waiters.isEmpty ? [] : Array(ring.waiters.values))
        }
        _ = evicted  // its buffers are freed here, after the lock
        for waiter in waiters { waiter.poke() }
    }

    /// Forgets every request held (`DELETE /requests`). Sequence numbers go on from where they
    /// were, so a `since=` cursor stays valid.
    public func clear() {
        let released = ring.withLock { ring -> [Entry] in
            var taken: [Entry] = []
            swap(&taken, &ring.entries)
            ring.oldest = 0
            return taken
        }
        _ = released
    }

    public var counts: Counts {
        ring.withLock { ring in
            Counts(held: ring.entries.count, dropped: ring.dropped, lastSequence: ring.lastSequence, waiting: ring.waiters.count)
        }
    }

    /// The requests that match `query` with a sequence number above `after` (and above
    /// `query.since`), oldest first: how many, and the first `keep` of them (nil: all).
    /// Also the newest sequence number looked at, from which a long poll goes on.
    func matches(_ query: JournalQuery, after: UInt64 = 0, keep: Int? = nil) -> (kept: [Entry], count: Int, through: UInt64) {
        let floor = max(after, query.since)
        // The token filter reads the path or body: done after the lock, on the candidates.
        let tokenLater = query.token != nil
        var kept: [Entry] = []
        var count = 0
        let through = ring.withLock { ring -> UInt64 in
            var index = ring.firstIndex(after: floor)
            while index < ring.entries.count {
                let entry = ring.entry(index)
                index += 1
                guard query.matchesRecordedFields(entry) else { continue }
                count += 1
                if tokenLater || keep.map({ kept.count < $0 }) ?? true { kept.append(entry) }
            }
            return ring.lastSequence
        }
        if tokenLater {
            kept.removeAll { !query.matchesToken($0) }
            count = kept.count
            if let keep, kept.count > keep { kept.removeLast(kept.count - keep) }
        }
        return (kept, count, through)
    }

    func addWaiter(_ waiter: JournalWaiter) {
        ring.withLock { $0.waiters[ObjectIdentifier(waiter)] = waiter }
    }

    func removeWaiter(_ waiter: JournalWaiter) {
        _ = ring.withLock { $0.waiters.removeValue(forKey: ObjectIdentifier(waiter)) }
    }

    /// `[line,line,…]`: the record lines as one JSON array.
    static func jsonArray(_ entries: [Entry], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (index, entry) in entries.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            entry.appendLine(to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}

private func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
    if value >= 10 { appendDecimal(value / 10, to: &out) }
    out.append(UInt8(ascii: "0") + UInt8(value % 10))
}
