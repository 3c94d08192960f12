// The GOAWAY texts the gateway owns and hands to the transport as bytes.
import MockGateway
import Testing

@Suite struct APNSGoAwayTests {
    @Test func theDebugDataIsAPNsReasonJSON() {
        #expect(String(decoding: APNSGoAway.shutdownDebugData, as: UTF8.self) == #"{"reason":"Shutdown"}"#)
        #expect(String(decoding: APNSGoAway.streamLimitDebugData, as: UTF8.self)
                == #"{"reason":"Maximum active streams violated for this endpoint."}"#)
    }
}
