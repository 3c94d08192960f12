import HTTPCore
import Testing
import RecordLine

/// `RecordedHeaders` reuses a connection's previous encoding pair by pair: whatever the
/// sequence of header lists, each line must be byte for byte the line written without it.
@Suite struct RecordedHeadersTests {
    static let jwt = "bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQyJ9.eyJpc3MiOiJERUYiLCJpYXQiOjF9.c2lnbmF0dXJl"
    static let lists: [HTTPFields] = [
        [HTTPHeader("apns-topic", "com.x"), HTTPHeader("authorization", jwt), HTTPHeader("apns-priority", "10")],
        [HTTPHeader("apns-topic", "com.x"), HTTPHeader("authorization", jwt), HTTPHeader("apns-priority", "10")],
        [HTTPHeader("apns-topic", "com.x"), HTTPHeader("authorization", "bearer other"), HTTPHeader("apns-priority", "10")],
        [HTTPHeader("apns-topic", "com.x"), HTTPHeader("authorization", "bearer other")],
        [HTTPHeader("apns-topic", "com.x"), HTTPHeader("authorization", "bearer other"), HTTPHeader("x-quote", "a\"b\\c\u{1}é")],
        [HTTPHeader("apns-id", "123e4567-e89b-12d3-a456-426614174000"), HTTPHeader("apns-topic", "com.x")],
        [],
        [HTTPHeader("apns-topic", "com.x")],
    ]

    @Test func everyLineIsTheLineWrittenWithoutTheCache() {
        var cache = RecordedHeaders()
        for headers in Self.lists {
            let request = HTTPRequest(method: "POST", path: "/3/device/ab", headers: headers, body: Array("{}".utf8),
                                      connectionID: 3, streamID: 5, arrivalNanos: 7)
            func tail(_ encoded: [UInt8]?) -> [UInt8] {
                RecordLine.encodeTail(request: request, response: HTTPResponse(status: 200), route: "apns", reason: nil,
                                      detail: nil, fault: nil, verdict: nil, answeredNanos: 8,
                                      clientCertificateSubject: nil, redactAssertion: false, requestHeaders: encoded)
            }
            let cached = tail(cache.encode(headers))
            #expect(String(decoding: cached, as: UTF8.self) == String(decoding: tail(nil), as: UTF8.self))
            #expect(!String(decoding: cached, as: UTF8.self).contains("c2lnbmF0dXJl"))
        }
    }
}
