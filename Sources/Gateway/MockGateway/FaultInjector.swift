#if canImport(Glibc)
import Glibc
#endif
import PushModel
import Synchronization

/// The fault decided for one request, before any validation.
enum InjectedFault: Equatable {
    /// Drop the connection without answering.
    case close
    /// RST_STREAM (REFUSED_STREAM) instead of an answer.
    case reset
    /// Answer with this status in the route's error shape.
    case status(Int, retryAfterSeconds: Int)

    var label: String {
        switch self {
        case .close: "close"
        case .reset: "reset"
        case .status(let code, _): "status:\(code)"
        }
    }
}

/// Decides which requests get faults: per route, from a seedable random source, changeable at
/// runtime (the admin API calls `setFaults`). Draws come from one atomic counter, so with a
/// fixed seed and a fixed request order the same requests fail on every run.
public final class FaultInjector: Sendable {
    private let plans: Mutex<[GatewayRoute: RouteFaults]>
    private let random: CounterRandomSource
    /// Whether any route has faults: the request path checks this before taking the lock.
    private let active: Atomic<Bool>

    public init(configuration: FaultConfiguration) {
        let initial = configuration.routes.filter { !$0.value.isEmpty }
        plans = Mutex(initial)
        active = Atomic(!initial.isEmpty)
        random = CounterRandomSource(seed: configuration.seed)
    }

    /// The faults currently injected on a route.
    public func faults(for route: GatewayRoute) -> RouteFaults {
        plans.withLock { $0[route] } ?? RouteFaults()
    }

    /// Replaces a route's faults (an empty `RouteFaults` turns them off).
    public func setFaults(_ faults: RouteFaults, for route: GatewayRoute) {
        plans.withLock { plans in
            plans[route] = faults.isEmpty ? nil : faults
            active.store(!plans.isEmpty, ordering: .relaxed)
        }
    }

    public func clearAll() {
        plans.withLock { plans in
            plans.removeAll()
            active.store(false, ordering: .relaxed)
        }
    }

    /// The plan for a request, nil when the route has none (the common, cheap case).
    func plan(for route: GatewayRoute) -> RouteFaults? {
        guard active.load(ordering: .relaxed) else { return nil }
        return plans.withLock { $0[route] }
    }

    /// Rolls close, reset, then the error statuses (in ascending status order), one draw each
    /// kind so the rates are independent of each other's presence.
    func roll(_ plan: RouteFaults) -> InjectedFault? {
        if plan.closeRate > 0, random.nextUnit() < plan.closeRate { return .close }
        if plan.resetRate > 0, random.nextUnit() < plan.resetRate { return .reset }
        if !plan.errorRates.isEmpty {
            let draw = random.nextUnit()
            var cumulative = 0.0
            for status in plan.errorRates.keys.sorted() {
                cumulative += plan.errorRates[status] ?? 0
                if draw < cumulative { return .status(status, retryAfterSeconds: plan.retryAfterSeconds) }
            }
        }
        return nil
    }

    /// Added latency in nanoseconds.
    func latencyNanos(_ distribution: LatencyDistribution) -> UInt64 {
        let milliseconds: Double
        switch distribution {
        case .fixed(let ms):
            milliseconds = ms
        case .uniform(let low, let high):
            milliseconds = low + (high - low) * random.nextUnit()
        case .normal(let mean, let deviation):
            // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
            let u1 = 1 - random.nextUnit(), u2 = random.nextUnit()
            milliseconds = mean + deviation * (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        case .exponential(let mean):
            milliseconds = -mean * log(1 - random.nextUnit())
        }
        guard milliseconds.isFinite, milliseconds > 0 else { return 0 }
        return UInt64(min(milliseconds, 600_000) * 1_000_000)
    }
}
