// Credentials against the mock's strict auth: the APNs provider token (ES256 JWT) and the
// FCM OAuth exchange, each obtained once and reused for every push.
import Encoding
import Crypto
import Foundation
import JSON
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite(.serialized) struct GatewayLiveAuthTests {
    /// Apple: "Reuse a token for all requests ... refresh it no more often than every 20
    /// minutes" (apns.md, "Token-based authentication"). The gateway verifies every JWT, so
    /// 200s prove it is accepted; its record shows one JWT (header + claims) on every request.
    @Test(arguments: [true, false])
    func oneProviderTokenIsAcceptedForEveryAPNsPush(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls)
        let store = InMemoryDeviceStore()
        let devices = (0..<300).map { LivePushes.iosDevice($0) }
        for device in devices { store.register(device) }
        let deliverer = try gateway.deliverer(store)
        let (tickets, results) = await deliverAll(devices.map { LivePushes.alert(to: $0) }, with: deliverer)

        #expect(results.count == tickets.count)
        #expect(results.allSatisfy { $0.outcome.isDelivered && $0.attempts == 1 })
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.providerTokensSigned == 1)
        #expect(statistics.delivered == devices.count)

        let apns = try gateway.recorded().filter { $0.route == "apns" }
        #expect(apns.count == devices.count)
        #expect(apns.allSatisfy { $0.status == 200 })
        let authorizations = Set(apns.compactMap(\.authorization))
        #expect(authorizations.count == 1, "one JWT for all \(apns.count) requests: \(authorizations.sorted().prefix(3))")
        // The record keeps the JWT's header and claims: the key, team and issue time signed.
        let parts = try #require(authorizations.first?.dropFirst("bearer ".count).split(separator: "."))
        try #require(parts.count >= 2)
        let header = try JSONParser.parse(try #require(Base64URL.decode(parts[0])))
        let claims = try JSONParser.parse(try #require(Base64URL.decode(parts[1])))
        #expect(header["alg"] == "ES256")
        #expect(header["kid"] == "ABC123DEFG")
        #expect(claims["iss"] == "TEAM123456")
        #expect(claims["iat"]?.intValue != nil)
    }

    /// Google's JWT-bearer grant (fcm.md, "Authorization"): one RS256 assertion buys one
    /// access token, used for every FCM push until it nears expiry.
    @Test(arguments: [true, false])
    func oneAccessTokenServesEveryFCMPush(tls: Bool) async throws {
        let gateway = try LiveGateway(tls: tls)
        let store = InMemoryDeviceStore()
        let devices = (0..<200).map { LivePushes.androidDevice($0) }
        for device in devices { store.register(device) }
        let deliverer = try gateway.deliverer(store)
        let (tickets, results) = await deliverAll(devices.map { LivePushes.data(to: $0) }, with: deliverer)

        #expect(results.count == tickets.count)
        #expect(results.allSatisfy { result in
            guard case .delivered(let id?) = result.outcome else { return false }
            return id.hasPrefix("projects/\(LiveGateway.project)/messages/")
        })
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.accessTokensFetched == 1)
        #expect(statistics.delivered == devices.count)

        let recorded = try gateway.recorded()
        let oauth = recorded.filter { $0.route == "oauth" }
        #expect(oauth.count == 1)
        #expect(oauth.first?.status == 200)
        let fcm = recorded.filter { $0.route == "fcm" }
        #expect(fcm.count == devices.count)
        #expect(fcm.allSatisfy { $0.status == 200 })
        #expect(Set(fcm.compactMap(\.authorization)).count == 1)
    }
}
