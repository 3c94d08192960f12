// The in-process library as a Swift server team uses it: started inside a test, pushed at by
// a real HTTP/2 client (curl) signing with the test credentials it hands out, asked what it
// received, its listeners called, a token set gone.
import Crypto
import Foundation
import JSON
import PushproofGateway
import PushproofTestSupport
import Synchronization
import Testing

@Suite(.serialized) struct PushproofGatewayTests {
    private static let token = String(repeating: "ab", count: 32)

    /// A provider token signed with the gateway's test key: one per gateway, as Apple wants
    /// (a new token per push is refused TooManyProviderTokenUpdates).
    private func providerToken(for gateway: PushproofGateway) throws -> String {
        let key = try ECP256PrivateKey(pem: String(contentsOfFile: gateway.apnsKeyFile, encoding: .utf8))
        return try APNsProviderToken.make(keyID: gateway.apnsKeyID, teamID: gateway.apnsTeamID,
                                          issuedAt: Int(Date().timeIntervalSince1970), key: key)
    }

    /// An APNs push through curl over HTTP/2 and TLS, trusting the gateway's certificate; the status code.
    private func push(to gateway: PushproofGateway, jwt: String, topic: String = "com.acme.shop", token: String = token,
                      body: String = #"{"aps":{"alert":"Fixed in 2.4"}}"#) throws -> String {
        let result = try curl(["--http2", "--cacert", gateway.caFile, "-o", "/dev/null", "-w", "%{http_code}",
                               "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: \(topic)", "-H", "apns-push-type: alert",
                               "-d", body, "\(gateway.apnsURL)/3/device/\(token)"])
        return result.output
    }

    @Test func aTestStartsTheGatewayPushesAtItAndAsksWhatArrived() throws {
        let gateway = try PushproofGateway(bundleIDs: ["com.acme.shop"], fcmProject: "acme-shop")
        defer { gateway.stop() }
        #expect(gateway.apnsURL.hasPrefix("https://127.0.0.1:"))
        let accepted = Mutex<[String]>([]), rejected = Mutex<[String]>([])
        gateway.onAccepted { push in accepted.withLock { $0.append(push.token ?? "") } }
        gateway.onRejected { push in rejected.withLock { $0.append(push.reason ?? "") } }
        let jwt = try providerToken(for: gateway)

        #expect(try push(to: gateway, jwt: jwt) == "200")
        let first = try #require(gateway.received.first)
        #expect(gateway.received.count == 1)
        #expect(first.route == .apns && first.accepted && first.token == Self.token)
        #expect(first.header("APNS-Topic") == "com.acme.shop")
        #expect(first.json?["aps"]?["alert"] == "Fixed in 2.4")
        #expect(accepted.withLock { $0 } == [Self.token])

        // A token the test says is gone is answered as Apple answers it.
        gateway.setToken(Self.token, .gone)
        #expect(try push(to: gateway, jwt: jwt) == "410")
        #expect(gateway.received.last?.reason == "Unregistered")
        // Another app's topic is refused as Apple refuses it.
        #expect(try push(to: gateway, jwt: jwt, topic: "com.other.app") == "400")
        #expect(rejected.withLock { $0 } == ["Unregistered", "TopicDisallowed"])
        #expect(gateway.received.filter { !$0.accepted }.count == 2)

        gateway.clearReceived()
        #expect(gateway.received.isEmpty)
        gateway.stop()
        #expect(try push(to: gateway, jwt: jwt) != "200", "stopped: nothing answers")
    }

    @Test func aGatewayWithSpecsJudgesEveryPush() throws {
        let specs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/Specs"
        let gateway = try PushproofGateway(bundleIDs: ["com.example.loop"], specsDirectory: specs)
        defer { gateway.stop() }
        // poolse's app, an alert no poolse spec describes: judged, and failed.
        #expect(try push(to: gateway, jwt: try providerToken(for: gateway), topic: "com.example.loop", body: #"{"aps":{"alert":"hi"}}"#) == "200")
        let push = try #require(gateway.received.first)
        #expect(push.passedSpec == false, "\(push)")
    }
}
