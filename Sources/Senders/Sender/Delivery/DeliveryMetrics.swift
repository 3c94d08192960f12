// Counters a load test reads while pushes flow. Atomic, so reading never slows the loop.
import Metrics
import PushModel
import Synchronization

/// Live counters of a `PushDeliverer`.
public final class DeliveryMetrics: Sendable {
    /// Pushes accepted by `send`.
    public let submitted = Atomic<Int>(0)
    public let delivered = Atomic<Int>(0)
    public let failed = Atomic<Int>(0)
    public let tokensRemoved = Atomic<Int>(0)
    public let dryRuns = Atomic<Int>(0)
    /// Requests put on the wire (first attempts and retries).
    public let attemptsSent = Atomic<Int>(0)
    public let retriesScheduled = Atomic<Int>(0)
    /// New connections libcurl opened (sum of CURLINFO_NUM_CONNECTS), OAuth included.
    public let connectionsOpened = Atomic<Int>(0)
    /// APNs provider tokens signed; stays at 1 per refresh interval however many pushes go.
    public let providerTokensSigned = Atomic<Int>(0)
    /// OAuth2 access tokens fetched.
    public let accessTokensFetched = Atomic<Int>(0)
    /// Rows the store actually deleted (a token already gone counts in `tokensRemoved` only).
    public let devicesDeleted = Atomic<Int>(0)
    /// Deletions the store refused (the push then ends `.failed`).
    public let tokenRemovalErrors = Atomic<Int>(0)
    /// Time from the gateway's answer to the device's deletion, in nanoseconds. Recorded by
    /// the cleanup queue, read by `snapshot`.
    private let tokenCleanupLatency = Mutex(HDRHistogram())

    public init() {}

    public var snapshot: DeliveryStatistics {
        DeliveryStatistics(
            submitted: submitted.load(ordering: .relaxed), delivered: delivered.load(ordering: .relaxed),
            failed: failed.load(ordering: .relaxed), tokensRemoved: tokensRemoved.load(ordering: .relaxed),
            dryRuns: dryRuns.load(ordering: .relaxed), attemptsSent: attemptsSent.load(ordering: .relaxed),
            retriesScheduled: retriesScheduled.load(ordering: .relaxed),
            connectionsOpened: connectionsOpened.load(ordering: .relaxed),
            providerTokensSigned: providerTokensSigned.load(ordering: .relaxed),
            accessTokensFetched: accessTokensFetched.load(ordering: .relaxed),
            tokenRemovalErrors: tokenRemovalErrors.load(ordering: .relaxed),
            devicesDeleted: devicesDeleted.load(ordering: .relaxed),
            tokenCleanup: tokenCleanupLatency.withLock { $0 })
    }

    func recordTokenCleanup(nanoseconds: UInt64) {
        tokenCleanupLatency.withLock { $0.record(nanoseconds) }
    }

    func record(_ outcome: PushOutcome) {
        switch outcome {
        case .delivered: delivered.add(1, ordering: .relaxed)
        case .failed: failed.add(1, ordering: .relaxed)
        case .tokenRemoved: tokensRemoved.add(1, ordering: .relaxed)
        case .dryRun: dryRuns.add(1, ordering: .relaxed)
        }
    }
}

/// A copy of the counters at one moment.
public struct DeliveryStatistics: Sendable, Equatable {
    public var submitted, delivered, failed, tokensRemoved, dryRuns, attemptsSent, retriesScheduled: Int
    public var connectionsOpened, providerTokensSigned, accessTokensFetched, tokenRemovalErrors, devicesDeleted: Int
    /// Time from the gateway's answer to the device's deletion, nanoseconds.
    public var tokenCleanup: HDRHistogram

    /// Pushes with an outcome.
    public var finished: Int { delivered + failed + tokensRemoved + dryRuns }
}
