import JSON
import PushModel

/// The debug data of the GOAWAY frames APNs sends, `{"reason":…}` as Apple words it. The
/// gateway owns the text; the transport, which knows nothing of APNs, is handed the bytes
/// (`HTTP2Settings.streamLimitGoAwayDebugData` from whoever assembles a server with this
/// gateway, `ConnectionAction.goAway` from the `goaway_after_streams` fault).
public enum APNSGoAway {
    /// GOAWAY(NO_ERROR) when APNs closes a connection for maintenance.
    public static let shutdownDebugData: [UInt8] = reasonBody(APNSReason.shutdown.rawValue)

    /// The connection error for a client that opens more streams than the
    /// SETTINGS_MAX_CONCURRENT_STREAMS it acknowledged: APNs has been seen answering this.
    public static let streamLimitDebugData: [UInt8] = reasonBody("Maximum active streams violated for this endpoint.")

    private static func reasonBody(_ reason: String) -> [UInt8] {
        var writer = JSONWriter(capacity: 80)
        writer.beginObject()
        writer.key("reason")
        writer.string(reason)
        writer.endObject()
        return writer.bytes
    }
}
