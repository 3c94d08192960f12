/// What the transport is told about the headers of the gateway's APNs answers. The gateway
/// owns the names; the transport, which knows nothing of APNs, is handed them
/// (`HTTP2Settings.neverIndexedResponseHeaders`, from whoever assembles a server with this gateway).
public enum APNSResponseHeaders {
    /// The headers whose value is new on every push: the echoed or generated `apns-id`, and
    /// `apns-unique-id` in development. Never indexed in HPACK: no later answer reuses them.
    public static let neverIndexed = ["apns-id", "apns-unique-id"]
}
