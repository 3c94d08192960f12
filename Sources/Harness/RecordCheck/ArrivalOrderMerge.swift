// Several recordings read as one, in the order their requests arrived (`check REC…`).

/// A k-way merge of streams by arrival time, one pending element per stream: memory stays
/// bounded however long the recordings are.
///
/// Each stream is taken in its own order, and the next element is the earliest-arriving of the
/// streams' heads (ties to the earlier stream). A recording is written in answer order (`seq`),
/// which is arrival order but for requests answered late (an injected latency): those keep their
/// place in their file, and the merge is then arrival order up to that disorder. It is exact for
/// what the cross-replica rules ask: every line answered before a request arrived comes before
/// it, because a line's answer never precedes its arrival. The times are each gateway's clock,
/// so replicas on several machines merge as well as their clocks agree (NTP).
public struct ArrivalOrderMerge<Element> {
    private var sources: [() -> Element?]
    private var heads: [Element?]
    private var started = false
    private let arrival: (Element) -> UInt64

    /// `sources`: each stream's next element, nil at its end; `arrival`: an element's arrival time.
    public init(_ sources: [() -> Element?], arrival: @escaping (Element) -> UInt64) {
        self.sources = sources
        self.heads = Array(repeating: nil, count: sources.count)
        self.arrival = arrival
    }

    /// The next element and the index of its stream; nil when every stream has ended.
    public mutating func next() -> (source: Int, element: Element)? {
        if !started {
            started = true
            for index in sources.indices { heads[index] = sources[index]() }
        }
        // A linear scan: a check merges a handful of replicas, not thousands.
        var earliest: (index: Int, arrival: UInt64)?
        for (index, head) in heads.enumerated() {
            guard let head else { continue }
            let time = arrival(head)
            if earliest.map({ time < $0.arrival }) ?? true { earliest = (index, time) }
        }
        guard let earliest, let element = heads[earliest.index] else { return nil }
        heads[earliest.index] = sources[earliest.index]()
        return (earliest.index, element)
    }
}
