import HTTPCore
import PushModel
import Testing
import RecordLine

/// `RecordedRequestHead` reuses a connection's previous line head whole, and its headers pair
/// by pair: whatever the sequence of requests, each line must be byte for byte the line
/// written without it.
@Suite struct RecordedRequestHeadTests {
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
        // The same bytes split differently between name and value: another field.
        [HTTPHeader("apns-topi", "ccom.x")],
    ]

    /// Each request varies one thing of the head at a time, and goes again unchanged.
    static let requests: [(request: HTTPRequest, route: GatewayRoute, subject: String?)] = {
        var requests: [(HTTPRequest, GatewayRoute, String?)] = []
        for (index, fields) in lists.enumerated() {
            var request = HTTPRequest(method: "POST", path: "/3/device/ab", authority: "127.0.0.1:2197", headers: fields,
                                      body: Array("{}".utf8), connectionID: 3, streamID: Int32(2 * index + 1), arrivalNanos: 7)
            requests.append((request, .apns, nil))
            requests.append((request, .apns, nil))
            request.path = "/3/device/cd\(index)"
            requests.append((request, .apns, nil))
            request.authority = index % 2 == 0 ? nil : "localhost"
            requests.append((request, .apns, nil))
            requests.append((request, .apns, "CN=Apple Push Services: com.x"))
            request.method = "GET"
            requests.append((request, .unknown, "CN=Apple Push Services: com.x"))
            request.isTLS = true
            request.version = .http1_1
            requests.append((request, .unknown, "CN=Apple Push Services: com.x"))
        }
        return requests
    }()

    @Test func everyLineIsTheLineWrittenWithoutTheCache() {
        var cache = RecordedRequestHead()
        for (request, route, subject) in Self.requests {
            func tail(_ head: [UInt8]?) -> String {
                String(decoding: RecordLine.encodeTail(request: request, response: HTTPResponse(status: 200), route: route, reason: nil,
                                                       detail: nil, fault: nil, verdict: nil, answeredNanos: 8,
                                                       clientCertificateSubject: subject, redactAssertion: false, requestHead: head),
                       as: UTF8.self)
            }
            let cached = tail(cache.encode(request, route: route, clientCertificateSubject: subject))
            #expect(cached == tail(nil))
            #expect(!cached.contains("c2lnbmF0dXJl"))
        }
    }
}
