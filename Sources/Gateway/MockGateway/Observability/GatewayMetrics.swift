import JSON
import PushModel
import RecordLine
import Synchronization

/// Counters behind `/metrics` (Prometheus text exposition format 0.0.4): requests by route,
/// status and reason; a latency histogram; spec violations by spec and rule; refused
/// credentials by route, reason and kind (`AuthFailureKind`, a fixed set). Gauges owned
/// by others (open connections, record lines) are passed to `render`.
public final class GatewayMetrics: GatewayObserver {
    /// Upper bounds of the latency histogram, in seconds (Prometheus `le` labels).
    public static let latencyBuckets: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    private struct RequestKey: Hashable {
        var route: GatewayRoute
        var status: Int
        var reason: String
    }

    private struct AuthFailureKey: Hashable {
        var route: GatewayRoute
        var reason: String
        var kind: AuthFailureKind
    }

    private struct ViolationKey: Hashable {
        var spec: String
        var rule: String
    }

    private struct State {
        /// Answers other than a plain 200 (below), by route, status and reason.
        var requests: [RequestKey: UInt64] = [:]
        /// 200s without a reason (nearly every answer) by route (`GatewayMetrics.slot(of:)`):
        /// an array slot, where hashing a key with its empty reason was ~1% of a recorded
        /// request (perf). `allRequests` counts them with the rest.
        var plainSuccesses = [UInt64](repeating: 0, count: GatewayRoute.allCases.count)
        var violations: [ViolationKey: UInt64] = [:]
        var authFailures: [AuthFailureKey: UInt64] = [:]
        var unmatched: UInt64 = 0
        var uncovered: UInt64 = 0
        var bucketCounts = [UInt64](repeating: 0, count: GatewayMetrics.latencyBuckets.count + 1)
        var latencySum: Double = 0
        var latencyCount: UInt64 = 0

        /// Every answer, by route, status and reason: `requests` with the plain 200s.
        var allRequests: [RequestKey: UInt64] {
            var all = requests
            for route in GatewayRoute.allCases where plainSuccesses[GatewayMetrics.slot(of: route)] > 0 {
                all[RequestKey(route: route, status: 200, reason: ""), default: 0] += plainSuccesses[GatewayMetrics.slot(of: route)]
            }
            return all
        }
    }

    /// `route`'s slot in `State.plainSuccesses`.
    private static func slot(of route: GatewayRoute) -> Int {
        switch route {
        case .apns: 0
        case .fcm: 1
        case .oauth: 2
        case .unknown: 3
        }
    }

    private let state = Mutex(State())

    public init() {}

    public func observe(_ exchange: GatewayExchange) {
        let latencyNanos = exchange.answeredNanos &- exchange.request.arrivalNanos &+ exchange.response.delayNanos
        let seconds = exchange.answeredNanos >= exchange.request.arrivalNanos ? Double(latencyNanos) / 1e9 : 0
        let bucket = Self.latencyBuckets.firstIndex { seconds <= $0 } ?? Self.latencyBuckets.count
        let plainSuccess = exchange.response.status == 200 && exchange.reason == nil
        let key = plainSuccess ? nil : RequestKey(route: exchange.route, status: exchange.response.status, reason: exchange.reason ?? "")
        var violated: [ViolationKey] = []
        var unmatched = false
        var uncovered = false
        if let judgement = exchange.verdict?.judgement {
            uncovered = !judgement.covered
            for violation in judgement.violations {
                if judgement.spec == nil, violation.rule == "unmatched" { unmatched = true; continue }
                violated.append(ViolationKey(spec: judgement.spec ?? "none", rule: violation.rule))
            }
        }
        let authFailure = exchange.authFailure.map { AuthFailureKey(route: exchange.route, reason: exchange.reason ?? "", kind: $0) }
        state.withLock { state in
            if let key { state.requests[key, default: 0] += 1 } else { state.plainSuccesses[Self.slot(of: exchange.route)] += 1 }
            if let authFailure { state.authFailures[authFailure, default: 0] += 1 }
            state.bucketCounts[bucket] += 1
            state.latencySum += seconds
            state.latencyCount += 1
            for v in violated { state.violations[v, default: 0] += 1 }
            if unmatched { state.unmatched += 1 }
            if uncovered { state.uncovered += 1 }
        }
    }

    public func reset() {
        state.withLock { $0 = State() }
    }

    /// Total requests counted, all routes.
    public var requestCount: UInt64 { state.withLock { $0.latencyCount } }

    /// Requests counted for one route, by status.
    public func count(route: GatewayRoute) -> [Int: UInt64] {
        state.withLock { state in
            var out: [Int: UInt64] = [:]
            for (key, n) in state.allRequests where key.route == route { out[key.status, default: 0] += n }
            return out
        }
    }

    /// A value owned by someone else, rendered as it is: a gauge, or a counter (a running
    /// total, `_total` by Prometheus convention) kept by the transport.
    public struct Gauge: Sendable {
        public var name: String
        public var help: String
        public var value: Double
        public var isCounter: Bool
        public init(name: String, help: String, value: Double, isCounter: Bool = false) {
            self.name = name
            self.help = help
            self.value = value
            self.isCounter = isCounter
        }
    }

    /// A counter owned by someone else with one label, rendered as it is (HELP and TYPE even
    /// when it has no series yet, as the gateway's own counters are).
    public struct LabeledCounter: Sendable {
        public var name: String
        public var help: String
        public var label: String
        public var values: [(label: String, value: UInt64)]
        public init(name: String, help: String, label: String, values: [(label: String, value: UInt64)]) {
            self.name = name
            self.help = help
            self.label = label
            self.values = values
        }
    }

    /// The exposition text.
    public func render(gauges: [Gauge] = [], counters: [LabeledCounter] = []) -> String {
        let snapshot = state.withLock { $0 }
        var out = ""
        out += "# HELP pushproof_requests_total Requests answered, by route, HTTP status and APNs reason / FCM error code.\n"
        out += "# TYPE pushproof_requests_total counter\n"
        for (key, n) in snapshot.allRequests.sorted(by: { ($0.key.route.rawValue, $0.key.status, $0.key.reason) < ($1.key.route.rawValue, $1.key.status, $1.key.reason) }) {
            out += "pushproof_requests_total{route=\"\(key.route.rawValue)\",status=\"\(key.status)\",reason=\"\(escape(key.reason))\"} \(n)\n"
        }
        out += "# HELP pushproof_request_duration_seconds Time from a request's arrival to its answer, injected latency included.\n"
        out += "# TYPE pushproof_request_duration_seconds histogram\n"
        var cumulative: UInt64 = 0
        for (i, bound) in Self.latencyBuckets.enumerated() {
            cumulative += snapshot.bucketCounts[i]
            out += "pushproof_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        cumulative += snapshot.bucketCounts[Self.latencyBuckets.count]
        out += "pushproof_request_duration_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        out += "pushproof_request_duration_seconds_sum \(snapshot.latencySum)\n"
        out += "pushproof_request_duration_seconds_count \(snapshot.latencyCount)\n"
        out += "# HELP pushproof_auth_failures_total Credentials refused, by route, reason and what was wrong (detail: one of a fixed set; the record line's response.detail says more).\n"
        out += "# TYPE pushproof_auth_failures_total counter\n"
        for (key, n) in snapshot.authFailures.sorted(by: { ($0.key.route.rawValue, $0.key.reason, $0.key.kind.rawValue) < ($1.key.route.rawValue, $1.key.reason, $1.key.kind.rawValue) }) {
            out += "pushproof_auth_failures_total{route=\"\(key.route.rawValue)\",reason=\"\(escape(key.reason))\",detail=\"\(key.kind.rawValue)\"} \(n)\n"
        }
        out += "# HELP pushproof_spec_violations_total Spec violations found, by spec and rule.\n"
        out += "# TYPE pushproof_spec_violations_total counter\n"
        for (key, n) in snapshot.violations.sorted(by: { ($0.key.spec, $0.key.rule) < ($1.key.spec, $1.key.rule) }) {
            out += "pushproof_spec_violations_total{spec=\"\(escape(key.spec))\",rule=\"\(escape(key.rule))\"} \(n)\n"
        }
        out += "# HELP pushproof_spec_unmatched_total Pushes a product claims (by topic or FCM project) that none of its specs matched.\n"
        out += "# TYPE pushproof_spec_unmatched_total counter\n"
        out += "pushproof_spec_unmatched_total \(snapshot.unmatched)\n"
        out += "# HELP pushproof_spec_uncovered_total Pushes no product claims: not covered by any spec, not judged.\n"
        out += "# TYPE pushproof_spec_uncovered_total counter\n"
        out += "pushproof_spec_uncovered_total \(snapshot.uncovered)\n"
        for counter in counters {
            out += "# HELP \(counter.name) \(counter.help)\n# TYPE \(counter.name) counter\n"
            for (label, value) in counter.values { out += "\(counter.name){\(counter.label)=\"\(escape(label))\"} \(value)\n" }
        }
        for gauge in gauges {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) \(gauge.isCounter ? "counter" : "gauge")\n\(gauge.name) \(gauge.value)\n"
        }
        return out
    }

    private func escape(_ label: String) -> String {
        var out = ""
        for c in label {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}
