import Foundation
import JSON
import Metrics

/// Counts of a run. Pushes and iterations in warm-up are counted apart and nowhere else.
public struct RunCounts: Sendable, Equatable {
    /// Measured iterations started (a fan-out is one iteration of many pushes).
    public var iterations = 0
    public var warmUpIterations = 0
    /// Measured iterations whose first push went out more than `lateAfter` after its intended time.
    public var lateIterations = 0
    /// Measured iterations never sent: dropped for lateness (`dropAfter`) or cut off by the time limit.
    public var droppedIterations = 0
    /// Measured pushes handed to the target.
    public var sent = 0
    /// Measured pushes whose outcome came back.
    public var completed = 0
    public var delivered = 0
    public var failed = 0
    public var tokensRemoved = 0
    /// Warm-up pushes handed to the target.
    public var warmUpPushes = 0
    /// Measured pushes sent whose outcome never came back before the run returned.
    public var abandoned = 0
    /// Measured pushes of started iterations left unsent when the run stopped (the rest of a
    /// fan-out, or a push whose worker was cancelled while waiting for its send time).
    public var unsentPushes = 0
    /// Measured fan-outs whose every push has an outcome.
    public var fanOuts = 0
    public var fanOutsFullyDelivered = 0
    /// Measured fan-outs still waiting for outcomes when the run returned.
    public var fanOutsIncomplete = 0
    /// Pushes that reached the gateway that no event called for (scenario runs; 0 otherwise).
    public var unexpected = 0
    /// Retries of a 429 or 503 sent before its Retry-After had passed (scenario runs).
    public var retriesTooSoon = 0
    /// Pushes to a token the gateway had answered gone or bad, past the grace a sender gets to
    /// learn it (scenario runs: the "no push to a dead token" cleanup rule).
    public var deadTokenPushes = 0

    public init() {}
}

/// How many pushes ended one way: `kind` is "delivered", "failed" or "token_removed".
public struct OutcomeCount: Sendable, Equatable {
    public var kind: String
    public var reason: String
    public var count: Int

    public init(kind: String, reason: String, count: Int) {
        self.kind = kind
        self.reason = reason
        self.count = count
    }
}

/// Where a run ran: quoted in every report, since absolute figures only compare on the same
/// machine class (load-testing.md, "Throughput and comparisons").
public struct RunEnvironment: Sendable, Equatable {
    public var cores: Int
    public var hostname: String
    public var operatingSystem: String
    /// ISO 8601, UTC.
    public var date: String

    public init(cores: Int, hostname: String, operatingSystem: String, date: String) {
        self.cores = cores
        self.hostname = hostname
        self.operatingSystem = operatingSystem
        self.date = date
    }

    public static func current() -> RunEnvironment {
        let info = ProcessInfo.processInfo
        return RunEnvironment(cores: info.activeProcessorCount, hostname: info.hostName,
                              operatingSystem: info.operatingSystemVersionString,
                              date: ISO8601DateFormatter().string(from: Date()))
    }
}

/// Everything a run measured, in a form reports, thresholds and baselines read, and that
/// survives a JSON round trip. Latencies are nanoseconds.
public struct RunSummary: Sendable, Equatable {
    public var scenario: String
    /// "open" or "closed".
    public var modelKind: String
    public var modelDescription: String
    /// Open model only.
    public var targetRate: Double?
    public var plannedSeconds: Double?
    /// Closed model only.
    public var concurrency: Int?
    public var plannedCount: Int?
    public var warmUpSeconds: Double

    public var environment: RunEnvironment
    public var counts: RunCounts
    public var outcomes: [OutcomeCount]
    /// Start to return.
    public var elapsedSeconds: Double
    /// End of warm-up to the last measured completion: the span throughput is taken over.
    public var measuredSeconds: Double
    /// Measured completed pushes per second.
    public var throughput: Double
    public var deliveredThroughput: Double
    /// Failed pushes / completed pushes. Token removals are cleanup, not errors.
    public var errorRate: Double

    /// From intended send time: corrected for coordinated omission.
    public var latency: LatencySummary
    /// From actual send time.
    public var serviceTime: LatencySummary
    /// Actual minus intended send time: the driver's own lateness. With a target that answers at
    /// once, this is the floor under the corrected latency (timer wake-ups, a full worker pool).
    public var sendLag: LatencySummary
    /// Per fan-out: first intended send to last delivered push.
    public var timeToRingAll: LatencySummary
    public var latencyTable: [PercentilePoint]
    public var serviceTimeTable: [PercentilePoint]
    /// Measured completions per second after warm-up, by second.
    public var completedPerSecond: [Int]
    public var deliveredPerSecond: [Int]
    /// Offered pushes and served latency second by second (empty in reports written before it).
    public var perSecond = PerSecondSeries()

    /// Conformance violations the gateway saw during the run; set by the caller, nil when unknown.
    public var violations: Int?
    /// The run hit its time limit with pushes still in flight.
    public var timedOut: Bool
    /// Caveats for readers ("shorter than 10 s: noise", abandoned pushes...).
    public var notes: [String]
    /// The sender measured and where the gateway ran; set by the caller, nil when unknown.
    public var sender: SenderIdentity? = nil

    public init(scenario: String, modelKind: String, modelDescription: String, targetRate: Double?, plannedSeconds: Double?,
                concurrency: Int?, plannedCount: Int?, warmUpSeconds: Double, environment: RunEnvironment,
                counts: RunCounts, outcomes: [OutcomeCount], elapsedSeconds: Double, measuredSeconds: Double,
                throughput: Double, deliveredThroughput: Double, errorRate: Double,
                latency: LatencySummary, serviceTime: LatencySummary, sendLag: LatencySummary, timeToRingAll: LatencySummary,
                latencyTable: [PercentilePoint], serviceTimeTable: [PercentilePoint],
                completedPerSecond: [Int], deliveredPerSecond: [Int], violations: Int?, timedOut: Bool, notes: [String]) {
        self.scenario = scenario
        self.modelKind = modelKind
        self.modelDescription = modelDescription
        self.targetRate = targetRate
        self.plannedSeconds = plannedSeconds
        self.concurrency = concurrency
        self.plannedCount = plannedCount
        self.warmUpSeconds = warmUpSeconds
        self.environment = environment
        self.counts = counts
        self.outcomes = outcomes
        self.elapsedSeconds = elapsedSeconds
        self.measuredSeconds = measuredSeconds
        self.throughput = throughput
        self.deliveredThroughput = deliveredThroughput
        self.errorRate = errorRate
        self.latency = latency
        self.serviceTime = serviceTime
        self.sendLag = sendLag
        self.timeToRingAll = timeToRingAll
        self.latencyTable = latencyTable
        self.serviceTimeTable = serviceTimeTable
        self.completedPerSecond = completedPerSecond
        self.deliveredPerSecond = deliveredPerSecond
        self.violations = violations
        self.timedOut = timedOut
        self.notes = notes
    }

    /// Derives the figures of a finished run.
    public init(plan: LoadPlan, environment: RunEnvironment, counts: RunCounts, outcomes: [OutcomeCount],
         elapsedSeconds: Double, measuredSeconds: Double, latency: HDRHistogram, serviceTime: HDRHistogram,
         sendLag: HDRHistogram, timeToRingAll: HDRHistogram, completedPerSecond: [Int], deliveredPerSecond: [Int], timedOut: Bool) {
        var targetRate: Double?, plannedSeconds: Double?, concurrency: Int?, plannedCount: Int?
        switch plan.model {
        case .open(let schedule):
            // A ramp's target is its peak: the rate the run had to reach.
            targetRate = schedule.peakRate
            plannedSeconds = schedule.duration.inSeconds
        case .closed(let workers, let count):
            concurrency = workers
            plannedCount = count
        }
        var notes: [String] = []
        if plan.isRateBased, (plannedSeconds ?? 0) < 10 {
            notes.append("noise: rate-based run shorter than 10 s; its figures do not compare (load-testing.md)")
        }
        if timedOut { notes.append("time limit reached with pushes in flight; they were cancelled") }
        if counts.abandoned > 0 { notes.append("\(counts.abandoned) pushes sent got no outcome before the run returned") }
        if counts.droppedIterations > 0 { notes.append("\(counts.droppedIterations) iterations dropped: not sent on time") }
        if latency.clampedCount > 0 { notes.append("\(latency.clampedCount) latencies above 1 h were recorded as 1 h") }
        let throughput = measuredSeconds > 0 ? Double(counts.completed) / measuredSeconds : 0
        let delivered = measuredSeconds > 0 ? Double(counts.delivered) / measuredSeconds : 0
        self.init(scenario: plan.scenario, modelKind: plan.isRateBased ? "open" : "closed",
                  modelDescription: plan.modelDescription, targetRate: targetRate, plannedSeconds: plannedSeconds,
                  concurrency: concurrency, plannedCount: plannedCount, warmUpSeconds: plan.warmUp.inSeconds,
                  environment: environment, counts: counts, outcomes: outcomes,
                  elapsedSeconds: elapsedSeconds, measuredSeconds: measuredSeconds,
                  throughput: throughput, deliveredThroughput: delivered,
                  errorRate: counts.completed > 0 ? Double(counts.failed) / Double(counts.completed) : 0,
                  latency: latency.summary, serviceTime: serviceTime.summary, sendLag: sendLag.summary,
                  timeToRingAll: timeToRingAll.summary,
                  latencyTable: latency.percentileTable(), serviceTimeTable: serviceTime.percentileTable(),
                  completedPerSecond: completedPerSecond, deliveredPerSecond: deliveredPerSecond,
                  violations: nil, timedOut: timedOut, notes: notes)
    }
}

// MARK: - JSON

extension RunSummary {
    /// The summary as JSON for tools and baselines. Latencies in integer nanoseconds (`_ns`),
    /// durations in seconds (`_s`), rates per second.
    public var json: JSONValue {
        var model: JSONObject = ["kind": .string(modelKind), "description": .string(modelDescription),
                                 "warm_up_s": .number(warmUpSeconds)]
        if let targetRate { model["rate_per_s"] = .number(targetRate) }
        if let plannedSeconds { model["duration_s"] = .number(plannedSeconds) }
        if let concurrency { model["concurrency"] = .number(Double(concurrency)) }
        if let plannedCount { model["count"] = .number(Double(plannedCount)) }
        var object: JSONObject = [
            "scenario": .string(scenario),
            "model": .object(model),
            "environment": [
                "cores": .number(Double(environment.cores)), "hostname": .string(environment.hostname),
                "os": .string(environment.operatingSystem), "date": .string(environment.date),
            ],
            "counts": counts.json,
            "outcomes": .array(outcomes.map {
                ["kind": .string($0.kind), "reason": .string($0.reason), "count": .number(Double($0.count))]
            }),
            "elapsed_s": .number(elapsedSeconds),
            "measured_s": .number(measuredSeconds),
            "throughput_per_s": .number(throughput),
            "delivered_per_s": .number(deliveredThroughput),
            "error_rate": .number(errorRate),
            "latency_ns": latency.json,
            "service_time_ns": serviceTime.json,
            "send_lag_ns": sendLag.json,
            "time_to_ring_all_ns": timeToRingAll.json,
            "latency_percentiles": Self.tableJSON(latencyTable),
            "service_time_percentiles": Self.tableJSON(serviceTimeTable),
            "completed_per_second": .array(completedPerSecond.map { .number(Double($0)) }),
            "delivered_per_second": .array(deliveredPerSecond.map { .number(Double($0)) }),
            "offered_per_second": .array(perSecond.offered.map { .number(Double($0)) }),
            "latency_per_second": [
                "count": .array(perSecond.latencyCount.map { .number(Double($0)) }),
                "mean_ns": .array(perSecond.latencyMean.map { .number(Double($0)) }),
                "sum_ns": .array(perSecond.latencySum.map { .number(Double($0)) }),
                "max_ns": .array(perSecond.latencyMax.map { .number(Double($0)) }),
            ],
            "timed_out": .bool(timedOut),
            "notes": .array(notes.map { .string($0) }),
        ]
        object["violations"] = violations.map { .number(Double($0)) } ?? .null
        object["sender_under_test"] = sender?.json ?? .null
        return .object(object)
    }

    /// Reads a summary back, from ``json`` or from a whole report (which carries the same keys).
    /// Errors name the key path of the culprit (`counts.sent: …`).
    public init(json: JSONValue) throws(ReportDecodingError) {
        do {
            let root = try JSONFields(json)
            self = try Self.decode(root)
            // Optional: baselines written before it have none.
            sender = try root.object("sender_under_test").map { (fields) throws(JSONFieldError) in try SenderIdentity(json: fields) }
        } catch {
            throw ReportDecodingError(error.description)
        }
    }

    private static func decode(_ root: JSONFields) throws(JSONFieldError) -> RunSummary {
        let model = try root.requiredObject("model")
        let environment = try root.requiredObject("environment")
        let counts = try root.requiredObject("counts")
        var decodedCounts = RunCounts()
        for (key, path) in RunCounts.fields {
            decodedCounts[keyPath: path] = try counts.requiredInt(key, range: .wholeNumbers)
        }
        // Counted since a later version: a summary written before has none.
        for (key, path) in RunCounts.laterFields {
            decodedCounts[keyPath: path] = try counts.int(key, range: .wholeNumbers) ?? 0
        }
        var outcomes: [OutcomeCount] = []
        for fields in try requiredObjects(root, "outcomes") {
            outcomes.append(OutcomeCount(kind: try fields.requiredString("kind", allowEmpty: true),
                                         reason: try fields.requiredString("reason", allowEmpty: true),
                                         count: try fields.requiredInt("count", range: .wholeNumbers)))
        }
        var notes: [String] = []
        for (index, note) in try root.requiredArray("notes").enumerated() {
            guard let text = note.stringValue else {
                throw JSONFieldError(keyPath: root.path("notes", index), problem: "expected a string, found \(note.typeName)")
            }
            notes.append(text)
        }
        var summary = RunSummary(
            scenario: try root.requiredString("scenario", allowEmpty: true),
            modelKind: try model.requiredString("kind", allowEmpty: true),
            modelDescription: try model.requiredString("description", allowEmpty: true),
            targetRate: try model.number("rate_per_s", range: .allNumbers),
            plannedSeconds: try model.number("duration_s", range: .allNumbers),
            concurrency: try model.int("concurrency", range: .wholeNumbers),
            plannedCount: try model.int("count", range: .wholeNumbers), warmUpSeconds: try model.requiredNumber("warm_up_s"),
            environment: RunEnvironment(cores: try environment.requiredInt("cores", range: .wholeNumbers),
                                        hostname: try environment.requiredString("hostname", allowEmpty: true),
                                        operatingSystem: try environment.requiredString("os", allowEmpty: true),
                                        date: try environment.requiredString("date", allowEmpty: true)),
            counts: decodedCounts, outcomes: outcomes,
            elapsedSeconds: try root.requiredNumber("elapsed_s"), measuredSeconds: try root.requiredNumber("measured_s"),
            throughput: try root.requiredNumber("throughput_per_s"), deliveredThroughput: try root.requiredNumber("delivered_per_s"),
            errorRate: try root.requiredNumber("error_rate"),
            latency: try LatencySummary(json: root.requiredObject("latency_ns")),
            serviceTime: try LatencySummary(json: root.requiredObject("service_time_ns")),
            sendLag: try LatencySummary(json: root.requiredObject("send_lag_ns")),
            timeToRingAll: try LatencySummary(json: root.requiredObject("time_to_ring_all_ns")),
            latencyTable: try table(root, "latency_percentiles"),
            serviceTimeTable: try table(root, "service_time_percentiles"),
            completedPerSecond: try requiredInts(root, "completed_per_second"),
            deliveredPerSecond: try requiredInts(root, "delivered_per_second"),
            violations: try root.int("violations", range: .wholeNumbers), timedOut: try root.requiredBool("timed_out"),
            notes: notes)
        // Optional: reports written before the series have neither key.
        // The sums, not the means, are read back: a mean is rounded, a sum exact.
        let latencyPerSecond = try root.object("latency_per_second", allowed: ["count", "mean_ns", "sum_ns", "max_ns"])
        let completions = try latencyPerSecond?.ints("count", range: .wholeNumbers) ?? []
        let sums = try latencyPerSecond?.ints("sum_ns", range: .wholeNumbers) ?? []
        let maxima = try latencyPerSecond?.ints("max_ns", range: .wholeNumbers) ?? []
        guard sums.count == completions.count, maxima.count == completions.count else {
            throw root.fail("latency_per_second", "count, sum_ns and max_ns must be as long as each other")
        }
        summary.perSecond = PerSecondSeries(offered: try root.ints("offered_per_second", range: .wholeNumbers) ?? [],
                                            latencyMax: maxima.map { UInt64($0) }, latencySum: sums.map { UInt64($0) },
                                            latencyCount: completions)
        return summary
    }

    /// Reports always carry their arrays, so an absent one is an error (not an empty list).
    private static func requiredObjects(_ root: JSONFields, _ key: String) throws(JSONFieldError) -> [JSONFields] {
        _ = try root.requiredArray(key)
        return try root.objects(key)
    }

    private static func requiredInts(_ root: JSONFields, _ key: String) throws(JSONFieldError) -> [Int] {
        guard let numbers = try root.ints(key, range: .wholeNumbers) else { throw root.fail(key, "required (an array)") }
        return numbers
    }

    /// Parses a summary or report from JSON text.
    public init(jsonText: String) throws(ReportDecodingError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(jsonText)
        } catch {
            throw ReportDecodingError("not JSON: \(error)")
        }
        try self.init(json: value)
    }

    static func tableJSON(_ table: [PercentilePoint]) -> JSONValue {
        .array(table.map { ["percentile": .number($0.percentile), "value_ns": .number(Double($0.value))] })
    }

    static func table(_ root: JSONFields, _ key: String) throws(JSONFieldError) -> [PercentilePoint] {
        try requiredObjects(root, key).map { (fields) throws(JSONFieldError) in
            PercentilePoint(percentile: try fields.requiredNumber("percentile"),
                            value: UInt64(try fields.requiredInt("value_ns", range: .nonNegative)))
        }
    }
}

extension RunCounts {
    static var fields: [(String, WritableKeyPath<RunCounts, Int>)] { [
        ("iterations", \.iterations), ("warm_up_iterations", \.warmUpIterations),
        ("late_iterations", \.lateIterations), ("dropped_iterations", \.droppedIterations),
        ("sent", \.sent), ("completed", \.completed), ("delivered", \.delivered), ("failed", \.failed),
        ("tokens_removed", \.tokensRemoved), ("warm_up_pushes", \.warmUpPushes), ("abandoned", \.abandoned),
        ("unsent_pushes", \.unsentPushes), ("fan_outs", \.fanOuts),
        ("fan_outs_fully_delivered", \.fanOutsFullyDelivered), ("fan_outs_incomplete", \.fanOutsIncomplete),
    ] }

    /// Fields a summary written by an earlier version lacks: read when present.
    static var laterFields: [(String, WritableKeyPath<RunCounts, Int>)] {
        [("unexpected", \.unexpected), ("retries_too_soon", \.retriesTooSoon), ("dead_token_pushes", \.deadTokenPushes)]
    }

    var json: JSONValue {
        .object(JSONObject((Self.fields + Self.laterFields).map { (key: $0.0, value: JSONValue.number(Double(self[keyPath: $0.1]))) }))
    }
}

extension LatencySummary {
    var json: JSONValue {
        ["count": .number(Double(count)), "min": .number(Double(min)), "mean": .number(mean),
         "p50": .number(Double(p50)), "p90": .number(Double(p90)), "p99": .number(Double(p99)),
         "p99_9": .number(Double(p999)), "max": .number(Double(max))]
    }

    init(json fields: JSONFields) throws(JSONFieldError) {
        func count(_ key: String) throws(JSONFieldError) -> UInt64 { UInt64(try fields.requiredInt(key, range: .nonNegative)) }
        self.init(count: try count("count"), min: try count("min"), mean: try fields.requiredNumber("mean"),
                  p50: try count("p50"), p90: try count("p90"), p99: try count("p99"),
                  p999: try count("p99_9"), max: try count("max"))
    }
}

/// A summary or baseline file that does not have the expected shape.
public struct ReportDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

private extension ClosedRange where Bound == Int {
    static var wholeNumbers: ClosedRange<Int> { Int.min...Int.max }
    static var nonNegative: ClosedRange<Int> { 0...Int.max }
}

private extension ClosedRange where Bound == Double {
    static var allNumbers: ClosedRange<Double> { -Double.infinity...Double.infinity }
}
