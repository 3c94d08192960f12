/// A run's figures second by second, for the report's charts over time: the pushes due in
/// each second (offered, by intended time) and the latency of those completed in it (served,
/// by completion time), so a growing backlog and a sender short of its schedule show at a
/// glance. Exact and small: three integers a second, mergeable across shards.
public struct PerSecondSeries: Sendable, Equatable {
    /// Pushes whose intended time fell in each second.
    public private(set) var offered: [Int] = []
    /// The longest latency (from the intended time) of the pushes completed in each second.
    public private(set) var latencyMax: [UInt64] = []
    /// Their sum and count, for the mean.
    public private(set) var latencySum: [UInt64] = []
    public private(set) var latencyCount: [Int] = []

    public init() {}

    public init(offered: [Int], latencyMax: [UInt64], latencySum: [UInt64], latencyCount: [Int]) {
        self.offered = offered
        self.latencyMax = latencyMax
        self.latencySum = latencySum
        self.latencyCount = latencyCount
    }

    public mutating func offer(_ pushes: Int, atSecond second: Int) {
        guard second >= 0 else { return }
        Self.grow(&offered, to: second, with: 0)
        offered[second] += pushes
    }

    public mutating func complete(latency: UInt64, atSecond second: Int) {
        guard second >= 0 else { return }
        Self.grow(&latencyMax, to: second, with: 0)
        Self.grow(&latencySum, to: second, with: 0)
        Self.grow(&latencyCount, to: second, with: 0)
        latencyMax[second] = Swift.max(latencyMax[second], latency)
        latencySum[second] &+= latency
        latencyCount[second] += 1
    }

    public mutating func merge(_ other: PerSecondSeries) {
        for (second, pushes) in other.offered.enumerated() where pushes > 0 { offer(pushes, atSecond: second) }
        for second in other.latencyCount.indices where other.latencyCount[second] > 0 {
            Self.grow(&latencyMax, to: second, with: 0)
            Self.grow(&latencySum, to: second, with: 0)
            Self.grow(&latencyCount, to: second, with: 0)
            latencyMax[second] = Swift.max(latencyMax[second], other.latencyMax[second])
            latencySum[second] &+= other.latencySum[second]
            latencyCount[second] += other.latencyCount[second]
        }
    }

    /// The mean latency of each second's completions (0 where none completed).
    public var latencyMean: [UInt64] {
        zip(latencySum, latencyCount).map { sum, count in count > 0 ? sum / UInt64(count) : 0 }
    }

    public var isEmpty: Bool { offered.isEmpty && latencyCount.isEmpty }

    private static func grow<T>(_ array: inout [T], to index: Int, with zero: T) {
        if array.count <= index { array.append(contentsOf: repeatElement(zero, count: index + 1 - array.count)) }
    }
}
