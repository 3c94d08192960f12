import HTTPCore
import Testing
@testable import MockGateway

@Suite struct AdminMetricsTests {
    static func metricsText(_ statistics: AdminAPI.Statistics) throws -> String {
        let gateway = try MockGateway(configuration: GatewayConfiguration())
        let admin = AdminAPI(gateway: gateway, metrics: GatewayMetrics(), recorder: nil) { statistics }
        let connection = ConnectionContext(id: 1, version: .http1_1, isTLS: false, peer: "127.0.0.1:1")
        let response = admin.handle(HTTPRequest(method: "GET", path: "/metrics", version: .http1_1), on: connection)
        return String(decoding: response.body, as: UTF8.self)
    }

    /// The transport's rapid-reset closes are a counter, shown once the transport reports them.
    @Test func rapidResetClosesAreACounterWhenReported() throws {
        let reported = try Self.metricsText(.init(openConnections: 1, acceptedConnections: 4, requestsServed: 9, rapidResetCloses: 2))
        #expect(reported.contains("# TYPE pushproof_rapid_reset_closes_total counter\npushproof_rapid_reset_closes_total 2.0\n"))
        #expect(reported.contains("# TYPE pushproof_open_connections gauge\npushproof_open_connections 1.0\n"))
        let silent = try Self.metricsText(.init(openConnections: 1, acceptedConnections: 4, requestsServed: 9))
        #expect(!silent.contains("pushproof_rapid_reset_closes_total"))
    }
}
