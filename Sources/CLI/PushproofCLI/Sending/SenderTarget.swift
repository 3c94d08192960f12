// The reference sender behind the load driver's seam.
import Driver
import PushModel
import Sender

/// The reference sender as the driver's `PushTarget`: single pushes and fan-outs both go
/// through the `DeliveryPool`, a fan-out as one batch, the path `send ring` measures.
///
/// Returns promptly once its task is cancelled: the pool's wait is cancellable, and the
/// deliverers are configured with at least as many in-flight slots as the runner has workers,
/// so handing a single push over never waits for a slot.
struct SenderTarget: PushTarget {
    let pool: DeliveryPool

    func send(_ push: PushRequest) async -> PushOutcome {
        if Task.isCancelled { return .failed(reason: "Cancelled", status: 0) }
        return await pool.deliver(push).outcome
    }

    func send(contentsOf pushes: [PushRequest], finished: @escaping @Sendable (Int, PushOutcome) -> Void) async {
        _ = await pool.deliver(contentsOf: pushes) { index, result in finished(index, result.outcome) }
    }
}
