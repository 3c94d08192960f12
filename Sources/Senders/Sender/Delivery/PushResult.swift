// One push's outcome with what identifies the push, as a `PushDeliverer` reports it.
import PushModel

/// One push's outcome with what identifies the push.
public struct PushResult: Sendable {
    /// The number `send` returned for this push.
    public var ticket: UInt64
    public var kind: String
    public var device: Device
    public var outcome: PushOutcome
    /// How many times it went on the wire (0 for a dry run or a push refused before sending).
    public var attempts: Int
    /// When it ended: monotonic nanoseconds (`SystemClock.monotonicNanoseconds()`).
    public var finishedAt: UInt64

    public init(ticket: UInt64, kind: String, device: Device, outcome: PushOutcome, attempts: Int, finishedAt: UInt64) {
        self.ticket = ticket
        self.kind = kind
        self.device = device
        self.outcome = outcome
        self.attempts = attempts
        self.finishedAt = finishedAt
    }
}
