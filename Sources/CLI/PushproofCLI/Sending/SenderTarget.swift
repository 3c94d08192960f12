// The reference sender behind the load driver's seam.
import Driver
import PushModel
import Sender

/// The reference sender as the driver's `PushTarget`.
///
/// Returns promptly once its task is cancelled: the wait for the outcome is cancellable, and
/// the deliverer is configured with at least as many in-flight slots as the runner has
/// workers, so handing a push over never waits for a slot.
struct SenderTarget: PushTarget {
    let dispatcher: DeliveryDispatcher

    func send(_ push: PushRequest) async -> PushOutcomeKind {
        if Task.isCancelled { return .failed(reason: "Cancelled") }
        guard let timed = await dispatcher.deliver(push) else { return .failed(reason: "Cancelled") }
        return Self.kind(of: timed.result.outcome)
    }

    static func kind(of outcome: PushOutcome) -> PushOutcomeKind {
        switch outcome {
        case .delivered: .delivered
        case .failed(let reason, _): .failed(reason: reason)
        case .tokenRemoved(let reason): .tokenRemoved(reason: reason)
        // Nothing went on the wire: not a delivery the run may count.
        case .dryRun: .failed(reason: "DryRun")
        }
    }
}
