// What one segment of a run split over machines writes (`drive --result FILE`), and all that
// `pushproof merge` needs to make one run of them (``SegmentMerge``): the run's identity, the
// segment's counts and outcomes, every fan-out's completion, and the histograms as an HdrHistogram
// interval log (the Java dialect: HdrHistogram's own tools read it). docs/scale-out.md.
import Crypto
import JSON
import Metrics

/// What makes segments parts of one run: the workload and every option that changes the load,
/// the segment count and weights, and the planned start; not the segment's index.
public struct RunIdentity: Sendable, Equatable {
    /// Option name → its value as given or defaulted (`members` → `300`).
    public var fields: [String: String]

    public init(fields: [String: String]) {
        self.fields = fields
    }

    /// The fields as one JSON object, keys sorted: the same text on every machine.
    public var canonicalText: String {
        JSONValue.object(JSONObject(fields.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) })).serialized()
    }

    /// SHA-256 of ``canonicalText``, lowercase hex.
    public var digest: String { SHA256.hexDigest(Array(canonicalText.utf8)) }

    /// The names whose values differ between the two (present in one only included), sorted.
    public func differences(from other: RunIdentity) -> [String] {
        Set(fields.keys).union(other.fields.keys).filter { fields[$0] != other.fields[$0] }.sorted()
    }
}

/// Token cleanup as the sender counted it on one machine.
public struct CleanupCounts: Sendable, Equatable {
    public var tokensRemoved = 0
    public var devicesDeleted = 0
    public var removalErrors = 0

    public init(tokensRemoved: Int = 0, devicesDeleted: Int = 0, removalErrors: Int = 0) {
        self.tokensRemoved = tokensRemoved
        self.devicesDeleted = devicesDeleted
        self.removalErrors = removalErrors
    }
}

/// One segment's result file.
public struct SegmentResult: Sendable {
    public static let formatVersion = 1
    /// The interval log's tags.
    public static let histogramTags = (latency: "latency", serviceTime: "service_time", sendLag: "send_lag",
                                       timeToRingAll: "time_to_ring_all")

    public var identity: RunIdentity
    public var segment: ExecutionSegment
    /// Unix milliseconds; nil when the run was not given `--start-at`.
    public var plannedStart: Int64?
    /// Unix nanoseconds of the run's actual start.
    public var actualStart: Int64
    public var devicesOwned: Int
    public var devicesTotal: Int
    public var summary: RunSummary
    public var latency: HDRHistogram
    public var serviceTime: HDRHistogram
    public var sendLag: HDRHistogram
    public var timeToRingAll: HDRHistogram
    public var fanOuts: [FanOutCompletion]
    public var cleanup: CleanupCounts
    /// What `drive` says of its sender (URLs, connections, streams); carried, not judged.
    public var senderDetails: JSONValue
    /// What failed the segment besides thresholds (a scenario's token-cleanup rules, a sender
    /// that stopped): a merge fails on every one of them.
    public var findings: [String] = []

    public init(identity: RunIdentity, segment: ExecutionSegment, plannedStart: Int64?, actualStart: Int64,
                devicesOwned: Int, devicesTotal: Int, run: RunResult, summary: RunSummary, cleanup: CleanupCounts,
                senderDetails: JSONValue, findings: [String] = []) {
        self.findings = findings
        self.identity = identity
        self.segment = segment
        self.plannedStart = plannedStart
        self.actualStart = actualStart
        self.devicesOwned = devicesOwned
        self.devicesTotal = devicesTotal
        self.summary = summary
        latency = run.latency
        serviceTime = run.serviceTime
        sendLag = run.sendLag
        timeToRingAll = run.timeToRingAll
        fanOuts = run.fanOuts
        self.cleanup = cleanup
        self.senderDetails = senderDetails
    }

    /// How late the segment started after the planned start, in nanoseconds (0 with none planned).
    public var startOffset: Int64 {
        plannedStart.map { actualStart - $0 * 1_000_000 } ?? 0
    }

    /// "1/3 (1/3:2/3)".
    public var segmentName: String { "\(segment.index)/\(segment.segmentCount) (\(segment))" }

    /// The histograms as an interval log: one interval each, from the planned (else actual) start,
    /// as long as the run, tagged.
    public func histogramLog() throws(HistogramLogError) -> String {
        let base = Double(plannedStart ?? actualStart / 1_000_000) / 1000
        let start = Double(startOffset) / 1e9
        let tags = Self.histogramTags
        let intervals = [(tags.latency, latency), (tags.serviceTime, serviceTime), (tags.sendLag, sendLag),
                         (tags.timeToRingAll, timeToRingAll)].map { tag, histogram in
            HistogramIntervalLog.Interval(tag: tag, startSeconds: start, lengthSeconds: summary.elapsedSeconds, histogram: histogram)
        }
        return try HistogramIntervalLog(startTime: base, baseTime: base, intervals: intervals).text()
    }

    public func json() throws(HistogramLogError) -> JSONValue {
        func number(_ value: Int) -> JSONValue { .number(Double(value)) }
        let fanOutsJSON: JSONValue = [
            "iteration": .array(fanOuts.map { number($0.iteration) }),
            "pushes": .array(fanOuts.map { number($0.pushes) }),
            "delivered": .array(fanOuts.map { number($0.delivered) }),
            "ring_all_ns": .array(fanOuts.map { $0.ringAll.map { .number(Double($0)) } ?? .null }),
            "late": .array(fanOuts.map { .bool($0.late) }),
            "complete": .array(fanOuts.map { .bool($0.complete) }),
        ]
        return [
            "pushproof_result": number(Self.formatVersion),
            "identity": .string(identity.digest),
            "load": .object(JSONObject(identity.fields.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) })),
            "segment": ["index": number(segment.index), "count": number(segment.segmentCount),
                        "weights": .array(segment.weights.map { .string($0.description) }), "range": .string(segment.description)],
            "devices": ["owned": number(devicesOwned), "total": number(devicesTotal)],
            "start": ["planned_unix_ms": plannedStart.map { .number(Double($0)) } ?? .null,
                      "actual_unix_ns": .string(String(actualStart)), "offset_ns": .number(Double(startOffset))],
            "summary": summary.json,
            "fan_outs": fanOutsJSON,
            "token_cleanup": ["tokens_removed": number(cleanup.tokensRemoved), "devices_deleted": number(cleanup.devicesDeleted),
                              "removal_errors": number(cleanup.removalErrors)],
            "sender": senderDetails,
            "findings": .array(findings.map(JSONValue.string)),
            "histograms": .string(try histogramLog()),
        ]
    }

    /// Reads a result file's text; errors say what is wrong, by key path.
    public init(jsonText: String) throws(SegmentResultError) {
        let root: JSONFields
        do {
            root = try JSONFields(try JSONParser.parse(jsonText))
        } catch {
            throw SegmentResultError("not a pushproof result: \(error)")
        }
        do {
            guard try root.int("pushproof_result", range: Int.min...Int.max) == Self.formatVersion else {
                throw root.fail("pushproof_result", "not a pushproof result of version \(Self.formatVersion) (drive --result writes them)")
            }
            let load = try root.requiredObject("load")
            var fields: [String: String] = [:]
            for key in load.object.keys { fields[key] = try load.requiredString(key, allowEmpty: true) }
            identity = RunIdentity(fields: fields)
            let digest = try root.requiredString("identity")
            guard digest == identity.digest else { throw root.fail("identity", "does not match the load fields: the file was edited") }

            segment = try Self.segment(try root.requiredObject("segment"))
            let devices = try root.requiredObject("devices")
            devicesOwned = try devices.requiredInt("owned", range: 0...Int.max)
            devicesTotal = try devices.requiredInt("total", range: 0...Int.max)
            let start = try root.requiredObject("start")
            plannedStart = try start.int("planned_unix_ms", range: Int.min...Int.max).map { Int64($0) }
            guard let actual = Int64(try start.requiredString("actual_unix_ns")) else {
                throw start.fail("actual_unix_ns", "expected Unix nanoseconds as a string of digits")
            }
            actualStart = actual

            guard let summaryValue = root.value("summary") else { throw root.fail("summary", "required") }
            do {
                summary = try RunSummary(json: summaryValue)
            } catch {
                throw root.fail("summary", error.description)
            }
            fanOuts = try Self.fanOuts(try root.requiredObject("fan_outs"))
            let cleanupFields = try root.requiredObject("token_cleanup")
            cleanup = CleanupCounts(tokensRemoved: try cleanupFields.requiredInt("tokens_removed", range: 0...Int.max),
                                    devicesDeleted: try cleanupFields.requiredInt("devices_deleted", range: 0...Int.max),
                                    removalErrors: try cleanupFields.requiredInt("removal_errors", range: 0...Int.max))
            senderDetails = root.value("sender") ?? .null
            findings = try root.strings("findings") ?? []
            let logText = try root.requiredString("histograms")
            let log: HistogramIntervalLog
            do {
                log = try HistogramIntervalLog(reading: logText)
            } catch {
                throw root.fail("histograms", error.description)
            }
            let tags = Self.histogramTags
            for tag in [tags.latency, tags.serviceTime, tags.sendLag, tags.timeToRingAll] where !log.tags.contains(tag) {
                throw root.fail("histograms", "no interval tagged \(tag)")
            }
            latency = log.sum(tag: tags.latency)
            serviceTime = log.sum(tag: tags.serviceTime)
            sendLag = log.sum(tag: tags.sendLag)
            timeToRingAll = log.sum(tag: tags.timeToRingAll)
        } catch let error as JSONFieldError {
            throw SegmentResultError(error.description)
        } catch {
            throw SegmentResultError("\(error)")
        }
    }

    private static func segment(_ fields: JSONFields) throws(JSONFieldError) -> ExecutionSegment {
        let weights = try fields.strings("weights") ?? []
        let index = try fields.requiredInt("index", range: 0...Int.max)
        let count = try fields.requiredInt("count", range: 1...Int.max)
        let parsed = Result { () throws(ExecutionSegmentError) in
            try ExecutionSegment(parsing: "\(index)/\(count)", weights: weights.joined(separator: ","))
        }
        switch parsed {
        case .success(let segment): return segment
        case .failure(let error): throw fields.fail("weights", error.description)
        }
    }

    private static func fanOuts(_ fields: JSONFields) throws(JSONFieldError) -> [FanOutCompletion] {
        func required(_ key: String) throws(JSONFieldError) -> [JSONValue] { try fields.requiredArray(key) }
        let iterations = try fields.ints("iteration", range: 0...Int.max) ?? []
        let pushes = try fields.ints("pushes", range: 0...Int.max) ?? []
        let delivered = try fields.ints("delivered", range: 0...Int.max) ?? []
        let ringAll = try required("ring_all_ns"), late = try required("late"), complete = try required("complete")
        guard [pushes.count, delivered.count, ringAll.count, late.count, complete.count].allSatisfy({ $0 == iterations.count }) else {
            throw fields.fail("iteration", "iteration, pushes, delivered, ring_all_ns, late and complete must be as long as each other")
        }
        var result: [FanOutCompletion] = []
        result.reserveCapacity(iterations.count)
        for i in iterations.indices {
            let ring: UInt64?
            switch ringAll[i] {
            case .null: ring = nil
            default:
                guard let value = ringAll[i].intValue, value >= 0 else { throw fields.fail("ring_all_ns", "entry \(i) is not a duration in ns") }
                ring = UInt64(value)
            }
            guard case .bool(let isLate) = late[i], case .bool(let isComplete) = complete[i] else {
                throw fields.fail("late", "entry \(i): late and complete are true or false")
            }
            result.append(FanOutCompletion(iteration: iterations[i], pushes: pushes[i], delivered: delivered[i], ringAll: ring,
                                           late: isLate, complete: isComplete))
        }
        return result
    }
}

public struct SegmentResultError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
