// `pushproof merge`: the segments of one run, each written by its machine (``SegmentResult``),
// made one run again, or refused when they are not one run (docs/scale-out.md). Histograms add
// exactly (one shape everywhere), so the merged percentiles are those of the union; a fan-out whose
// pushes went out from several machines rang all when the last of its parts did.
import Clocks
import Metrics
import Reports

/// Why results cannot be merged. Every message names the files.
public struct SegmentMergeError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The merged run and a line of figures a segment.
public struct SegmentMerge: Sendable {
    /// A segment that started later than this after the planned start is refused by default.
    public static let defaultMaxStartSkew: Duration = .milliseconds(100)

    /// One result and the file it came from.
    public struct Part: Sendable {
        public var path: String
        public var result: SegmentResult
        public init(path: String, result: SegmentResult) {
            self.path = path
            self.result = result
        }
    }

    public let parts: [Part]
    public let summary: RunSummary
    public let latency: HDRHistogram
    public let serviceTime: HDRHistogram
    public let sendLag: HDRHistogram
    public let timeToRingAll: HDRHistogram
    public let cleanup: CleanupCounts
    /// Every segment's findings, each under its segment's name: any fails the merged run.
    public var findings: [String] {
        parts.flatMap { part in part.result.findings.map { "segment \(part.result.segmentName): \($0)" } }
    }
    /// The segments played a scenario (`drive --scenario`): its default thresholds apply.
    public var isScenario: Bool { parts.first?.result.identity.fields["scenario_sha256"] != nil }

    /// Checks the parts are every segment of one run, once each, started on time, and merges them.
    public init(_ parts: [Part], maxStartSkew: Duration = Self.defaultMaxStartSkew) throws(SegmentMergeError) {
        guard let first = parts.first else { throw SegmentMergeError("give the result files of every segment") }
        for part in parts.dropFirst() {
            let differing = first.result.identity.differences(from: part.result.identity)
            if !differing.isEmpty {
                let values = differing.map { "\($0) \(first.result.identity.fields[$0] ?? "unset") vs \(part.result.identity.fields[$0] ?? "unset")" }
                throw SegmentMergeError("\(first.path) and \(part.path) are not segments of one run: they differ in "
                                        + values.joined(separator: ", "))
            }
        }
        let count = first.result.segment.segmentCount
        var byIndex: [Int: Part] = [:]
        for part in parts {
            let index = part.result.segment.index
            if let earlier = byIndex[index] {
                throw SegmentMergeError("segment \(index)/\(count) is given twice: \(earlier.path) and \(part.path)")
            }
            byIndex[index] = part
        }
        let missing = (0..<count).filter { byIndex[$0] == nil }
        if !missing.isEmpty {
            let given = parts.map { "\($0.path) (\($0.result.segment.index)/\(count))" }.joined(separator: ", ")
            throw SegmentMergeError("segment\(missing.count == 1 ? "" : "s") \(missing.map { "\($0)/\(count)" }.joined(separator: ", ")) "
                                    + "missing: given \(given)")
        }
        let bound = Int64(maxStartSkew.clampedNanoseconds)
        for part in parts where part.result.plannedStart != nil && part.result.startOffset > bound {
            throw SegmentMergeError("\(part.path): segment \(part.result.segment.index)/\(count) started "
                                    + "\(Self.milliseconds(part.result.startOffset)) ms after the planned start, more than "
                                    + "--max-start-skew \(Self.milliseconds(bound)) ms: its load did not overlap the others'")
        }
        let ordered = (0..<count).map { byIndex[$0]! }
        self.parts = ordered

        var latency = HDRHistogram(), serviceTime = HDRHistogram(), sendLag = HDRHistogram()
        var cleanup = CleanupCounts()
        for part in ordered {
            latency.merge(part.result.latency)
            serviceTime.merge(part.result.serviceTime)
            sendLag.merge(part.result.sendLag)
            cleanup.tokensRemoved += part.result.cleanup.tokensRemoved
            cleanup.devicesDeleted += part.result.cleanup.devicesDeleted
            cleanup.removalErrors += part.result.cleanup.removalErrors
        }
        let fanOuts = Self.fanOuts(ordered.map(\.result.fanOuts))
        var ringAll = HDRHistogram()
        for fanOut in fanOuts.values { if let value = fanOut.ringAll { ringAll.record(value) } }
        self.latency = latency
        self.serviceTime = serviceTime
        self.sendLag = sendLag
        self.timeToRingAll = ringAll
        self.cleanup = cleanup
        summary = Self.summary(ordered.map(\.result), fanOuts: fanOuts, latency: latency, serviceTime: serviceTime,
                               sendLag: sendLag, timeToRingAll: ringAll, cleanup: cleanup)
    }

    /// Each iteration's parts as one fan-out: pushes and deliveries summed, late or incomplete
    /// when any part was, rung all at the latest part's last delivery.
    static func fanOuts(_ segments: [[FanOutCompletion]]) -> [Int: FanOutCompletion] {
        var merged: [Int: FanOutCompletion] = [:]
        for segment in segments {
            for part in segment {
                guard var whole = merged[part.iteration] else {
                    merged[part.iteration] = part
                    continue
                }
                whole.pushes += part.pushes
                whole.delivered += part.delivered
                whole.late = whole.late || part.late
                whole.complete = whole.complete && part.complete
                if let ring = part.ringAll { whole.ringAll = Swift.max(whole.ringAll ?? 0, ring) }
                merged[part.iteration] = whole
            }
        }
        return merged
    }

    /// The summary of the union: counts of pushes summed, counts of iterations (every segment
    /// plays every one) the largest, figures recomputed from the merged histograms; times on the
    /// planned start's axis (a segment's span shifted by its start offset).
    static func summary(_ results: [SegmentResult], fanOuts: [Int: FanOutCompletion], latency: HDRHistogram,
                        serviceTime: HDRHistogram, sendLag: HDRHistogram, timeToRingAll: HDRHistogram,
                        cleanup: CleanupCounts) -> RunSummary {
        let base = results[0].summary
        var counts = RunCounts()
        var outcomes: [String: OutcomeCount] = [:]
        var completedPerSecond: [Int] = [], deliveredPerSecond: [Int] = []
        var perSecond = PerSecondSeries()
        var elapsed = 0.0, measured = 0.0
        var violations: Int?
        for result in results {
            let c = result.summary.counts
            for path in [\RunCounts.sent, \.completed, \.delivered, \.failed, \.tokensRemoved, \.warmUpPushes, \.abandoned,
                         \.unsentPushes, \.unexpected, \.retriesTooSoon, \.deadTokenPushes] {
                counts[keyPath: path] += c[keyPath: path]
            }
            for path in [\RunCounts.iterations, \.warmUpIterations, \.droppedIterations] {
                counts[keyPath: path] = Swift.max(counts[keyPath: path], c[keyPath: path])
            }
            for outcome in result.summary.outcomes {
                outcomes["\(outcome.kind)\u{0}\(outcome.reason)", default: OutcomeCount(kind: outcome.kind, reason: outcome.reason, count: 0)]
                    .count += outcome.count
            }
            addSeries(result.summary.completedPerSecond, into: &completedPerSecond)
            addSeries(result.summary.deliveredPerSecond, into: &deliveredPerSecond)
            perSecond.merge(result.summary.perSecond)
            let offset = Swift.max(0, Double(result.startOffset) / 1e9)
            elapsed = Swift.max(elapsed, offset + result.summary.elapsedSeconds)
            measured = Swift.max(measured, offset + result.summary.measuredSeconds)
            if let v = result.summary.violations { violations = (violations ?? 0) + v }
        }
        counts.lateIterations = fanOuts.values.filter(\.late).count
        counts.fanOuts = fanOuts.values.filter(\.complete).count
        counts.fanOutsFullyDelivered = fanOuts.values.filter { $0.complete && $0.delivered == $0.pushes }.count
        counts.fanOutsIncomplete = fanOuts.values.filter { !$0.complete }.count

        // A note every segment made is the run's; another is its segment's.
        var notes: [String] = []
        for (index, result) in results.enumerated() {
            for note in result.summary.notes where !notes.contains(note) {
                let name = "segment \(index)/\(results.count)"
                if results.allSatisfy({ $0.summary.notes.contains(note) }) || note.hasPrefix(name + " ") {
                    notes.append(note)
                } else {
                    notes.append("\(name): \(note)")
                }
            }
        }
        notes.append("merged \(results.count) segments: token cleanup \(cleanup.tokensRemoved) pushes found their token gone, "
                     + "\(cleanup.devicesDeleted) devices deleted"
                     + (cleanup.removalErrors > 0 ? ", \(cleanup.removalErrors) deletions failed" : ""))
        if results[0].plannedStart == nil {
            notes.append("the segments had no --start-at: they did not start together, and their latencies do not overlap in time")
        }

        var summary = RunSummary(
            scenario: base.scenario, modelKind: base.modelKind, modelDescription: base.modelDescription,
            targetRate: base.targetRate, plannedSeconds: base.plannedSeconds, concurrency: base.concurrency,
            plannedCount: base.plannedCount, warmUpSeconds: base.warmUpSeconds, environment: base.environment,
            counts: counts, outcomes: outcomes.values.sorted { ($0.kind, $0.reason) < ($1.kind, $1.reason) },
            elapsedSeconds: elapsed, measuredSeconds: measured,
            throughput: measured > 0 ? Double(counts.completed) / measured : 0,
            deliveredThroughput: measured > 0 ? Double(counts.delivered) / measured : 0,
            errorRate: counts.completed > 0 ? Double(counts.failed) / Double(counts.completed) : 0,
            latency: latency.summary, serviceTime: serviceTime.summary, sendLag: sendLag.summary,
            timeToRingAll: timeToRingAll.summary,
            latencyTable: latency.percentileTable(), serviceTimeTable: serviceTime.percentileTable(),
            completedPerSecond: completedPerSecond, deliveredPerSecond: deliveredPerSecond,
            violations: violations, timedOut: results.contains { $0.summary.timedOut }, notes: notes)
        summary.perSecond = perSecond
        summary.sender = base.sender
        return summary
    }

    /// One line a segment: "segment 1/3 (1/3:2/3) b.json: 300 of 900 devices, 598 pushes, 1234.5/s, start +0.8 ms".
    public var segmentLines: [String] {
        parts.map { part in
            let result = part.result
            let start = result.plannedStart == nil ? "no planned start"
                : "start \(result.startOffset >= 0 ? "+" : "")\(Self.milliseconds(result.startOffset)) ms"
            return "segment \(result.segmentName) \(part.path): \(result.devicesOwned) of \(result.devicesTotal) devices, "
                + "\(result.summary.counts.completed) pushes, \(Format.significant(result.summary.throughput))/s, \(start)"
        }
    }

    static func milliseconds(_ nanoseconds: Int64) -> String { Format.milliseconds(Double(nanoseconds)) }
}
