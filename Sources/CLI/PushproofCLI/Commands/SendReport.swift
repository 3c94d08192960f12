import Clocks
import Driver
import JSON
import PushModel
import Reports
import Sender

extension SendCommand {
    func deliveryJSON(_ s: DeliveryStatistics) -> JSONValue {
        [
            "submitted": .number(Double(s.submitted)), "delivered": .number(Double(s.delivered)),
            "failed": .number(Double(s.failed)), "tokens_removed": .number(Double(s.tokensRemoved)),
            "dry_runs": .number(Double(s.dryRuns)), "requests": .number(Double(s.attemptsSent)),
            "retries": .number(Double(s.retriesScheduled)), "connections_opened": .number(Double(s.connectionsOpened)),
            "provider_tokens_signed": .number(Double(s.providerTokensSigned)),
            "access_tokens_fetched": .number(Double(s.accessTokensFetched)),
            "devices_deleted": .number(Double(s.devicesDeleted)), "token_removal_errors": .number(Double(s.tokenRemovalErrors)),
            "token_cleanup_mean_ms": .number(s.tokenCleanup.mean / 1e6),
            "token_cleanup_max_ms": .number(Double(s.tokenCleanup.max) / 1e6),
        ]
    }
}

/// The pushes of a `send` run, step by step, with their outcomes.
struct SendRun {
    struct Step {
        var name: String
        var pushes: Int
        var outcomes: [(key: String, count: Int)]
        var elapsedNanoseconds: UInt64
        /// Monotonic time of the last result, and of the last delivered push (0: none).
        var lastFinish: UInt64
        var lastDelivered: UInt64

        var json: JSONObject {
            [
                "step": .string(name), "pushes": .number(Double(pushes)),
                "outcomes": .object(JSONObject(outcomes.map { (key: $0.key, value: JSONValue.number(Double($0.count))) })),
                "elapsed_ms": .number(Double(elapsedNanoseconds) / 1e6),
            ]
        }
    }

    let pool: DeliveryPool
    let dryRun: Bool
    var steps: [Step] = []
    /// Per push kind, in order of first appearance: outcome counts.
    var byKind: [(kind: String, outcomes: [String: Int])] = []
    var removed: [(device: Device, reason: String)] = []
    var failedCount = 0
    /// Deliveries made (or, dry, decided) per device token and spec id, in order of first
    /// appearance: what `--expect-out` writes.
    var deliveries: [(token: String, spec: String, count: Int)] = []
    private var deliveryIndex: [String: Int] = [:]

    /// The spec a push of `kind` answers to: the Specs/ ids are `<kind>.<transport>`.
    mutating func noteDelivery(_ result: PushResult) {
        let spec = result.kind + "." + result.device.transport.rawValue
        let key = result.device.token + "\u{0}" + spec
        if let index = deliveryIndex[key] {
            deliveries[index].count += 1
        } else {
            deliveryIndex[key] = deliveries.count
            deliveries.append((result.device.token, spec, 1))
        }
    }

    /// `{"deliveries": [{"token", "spec", "count"?}]}`, the format `check --expect` reads.
    var deliveriesJSON: JSONValue {
        ["deliveries": .array(deliveries.map { delivery in
            var entry: JSONObject = ["token": .string(delivery.token), "spec": .string(delivery.spec)]
            if delivery.count > 1 { entry["count"] = .number(Double(delivery.count)) }
            return .object(entry)
        })]
    }

    init(pool: DeliveryPool, dryRun: Bool) {
        self.pool = pool
        self.dryRun = dryRun
    }

    /// Delivers `pushes`, prints one line about them, and returns the step with its results.
    @discardableResult
    mutating func step(_ name: String, _ pushes: [PushRequest], startedAt: UInt64? = nil) async -> (step: Step, results: [PushResult]) {
        let start = startedAt ?? SystemClock.monotonicNanoseconds()
        let results = await pool.deliver(contentsOf: pushes)
        let end = SystemClock.monotonicNanoseconds()
        var counts: [String: Int] = [:]
        var order: [String] = []
        var lastFinish = start, lastDelivered: UInt64 = 0
        for result in results {
            let key = Self.key(result.outcome)
            if counts[key] == nil { order.append(key) }
            counts[key, default: 0] += 1
            lastFinish = max(lastFinish, result.finishedAt)
            switch result.outcome {
            case .delivered, .dryRun: noteDelivery(result)
            default: break
            }
            switch result.outcome {
            case .delivered: lastDelivered = max(lastDelivered, result.finishedAt)
            case .tokenRemoved(let reason): removed.append((result.device, reason))
            case .failed: failedCount += 1
            case .dryRun: break
            }
            let kind = result.kind
            if let index = byKind.firstIndex(where: { $0.kind == kind }) {
                byKind[index].outcomes[key, default: 0] += 1
            } else {
                byKind.append((kind, [key: 1]))
            }
        }
        let outcomes = order.map { (key: $0, count: counts[$0] ?? 0) }
        let step = Step(name: name, pushes: pushes.count, outcomes: outcomes, elapsedNanoseconds: end - start,
                        lastFinish: lastFinish, lastDelivered: lastDelivered)
        steps.append(step)
        let kinds = Array(Set(pushes.map(\.kind))).sorted().joined(separator: ", ")
        let summary = outcomes.isEmpty ? "" : ": " + outcomes.map { "\($0.count) \($0.key)" }.joined(separator: ", ")
        printNow("  \(name): \(pushes.count) push\(pushes.count == 1 ? "" : "es")"
                 + (kinds.isEmpty ? "" : " (\(kinds))") + summary + " in \(Format.milliseconds(end - start)) ms")
        return (step, results)
    }

    static func key(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered: "delivered"
        case .failed(let reason, let status): "failed \(reason)" + (status > 0 ? " (HTTP \(status))" : "")
        case .tokenRemoved(let reason): "token removed (\(reason))"
        case .dryRun: "logged (dry run)"
        }
    }

    func printByKind() {
        guard !byKind.isEmpty else { return }
        printNow("\nby push kind:")
        let width = byKind.map(\.kind.count).max() ?? 0
        for (kind, outcomes) in byKind {
            let total = outcomes.values.reduce(0, +)
            let detail = outcomes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            printNow("  " + kind.padding(to: width + 1) + String(total).leftPadded(6) + " sent: " + detail)
        }
    }

    var json: JSONObject {
        [
            "dry_run": .bool(dryRun),
            "steps": .array(steps.map { .object($0.json) }),
            "by_kind": .object(JSONObject(byKind.map { entry in
                (key: entry.kind, value: JSONValue.object(JSONObject(entry.outcomes.sorted { $0.key < $1.key }
                    .map { (key: $0.key, value: JSONValue.number(Double($0.value))) })))
            })),
            "pushes": .number(Double(steps.reduce(0) { $0 + $1.pushes })),
            "failed": .number(Double(failedCount)),
        ]
    }
}
