// What became of one push. Every push handed to a `PushDeliverer` ends with exactly one.

/// The single, final outcome of one push.
public enum PushOutcome: Sendable, Equatable {
    /// The gateway accepted the push. `id` is the `apns-id` response header (APNs) or the
    /// message `name` (FCM, "projects/<project>/messages/<id>"); `nil` if the gateway sent none.
    case delivered(id: String?)
    /// The push was not delivered and will not be retried. `reason` is the APNs `reason`,
    /// the FCM `errorCode` (or `error.status`), or a sender-side reason such as
    /// "NetworkError: ..."; `status` is the HTTP status, 0 when no answer arrived.
    case failed(reason: String, status: Int)
    /// The gateway said the token is gone (APNs 410 / BadDeviceToken, FCM UNREGISTERED or an
    /// invalid token) and the device was deleted from the store.
    case tokenRemoved(reason: String)
    /// No credentials for this gateway: the push was logged, not sent (Concierge seed:
    /// "Without credentials, local dev logs each push instead of sending it").
    /// `line` is the logged line.
    case dryRun(line: String)

    public var isDelivered: Bool { if case .delivered = self { true } else { false } }
}
