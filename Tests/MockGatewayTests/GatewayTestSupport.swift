import Clocks
import Crypto
import HTTPCore
import JSON
import Synchronization
import Testing
@testable import MockGateway

/// Keeps every exchange it is shown.
final class CollectingObserver: GatewayObserver {
    private let collected = Mutex<[GatewayExchange]>([])
    func observe(_ exchange: GatewayExchange) { collected.withLock { $0.append(exchange) } }
    var exchanges: [GatewayExchange] { collected.withLock { $0 } }
    var last: GatewayExchange? { exchanges.last }
}

/// Keys generated once per test process.
enum TestKeys {
    static let apnsKey: ECP256PrivateKey = try! ECP256PrivateKey.generate()
    static let otherTeamKey: ECP256PrivateKey = try! ECP256PrivateKey.generate()
    static let forgedKey: ECP256PrivateKey = try! ECP256PrivateKey.generate()
    static let serviceAccountKey: RSAPrivateKey = try! RSAPrivateKey.generate(bits: 2048)
    static let forgedRSAKey: RSAPrivateKey = try! RSAPrivateKey.generate(bits: 2048)
}

let deviceToken = String(repeating: "ab", count: 32)
let validAPNSID = "123e4567-e89b-42d3-a456-426614174000"
let teamID = "TEAM123456"
let keyID = "KEY1234567"
let otherTeamID = "TEAM999999"
let otherKeyID = "KEY9999999"
let serviceAccountEmail = "pusher@demo-project.iam.gserviceaccount.com"
let serviceAccountKeyID = "0123456789abcdef0123456789abcdef01234567"
/// What a sender sends a zero-config gateway: any bearer token passes there.
let zeroConfigAuthorization = "bearer zero-config-token"

/// A gateway plus one connection, driven by calling `handle` directly.
final class Harness {
    let gateway: MockGateway
    let observer = CollectingObserver()
    let clock: ManualClock
    var connection: ConnectionContext
    private var nextConnectionID: UInt64 = 1
    private var nextStream: Int32 = 1

    init(_ configuration: GatewayConfiguration = GatewayConfiguration(), clock: ManualClock = ManualClock(),
         judge: SpecJudge? = nil) throws {
        self.clock = clock
        gateway = try MockGateway(configuration: configuration, observers: [observer], judge: judge, clock: clock.wallClock)
        connection = ConnectionContext(id: 1, version: .http2, isTLS: true, peer: "127.0.0.1:50000")
        gateway.connectionOpened(connection)
    }

    func newConnection(version: HTTPVersion = .http2) {
        nextConnectionID += 1
        connection = ConnectionContext(id: nextConnectionID, version: version, isTLS: true, peer: "127.0.0.1:50001")
        gateway.connectionOpened(connection)
    }

    @discardableResult
    func send(method: String = "POST", path: String, headers: [HTTPHeader], body: [UInt8],
              version: HTTPVersion = .http2, authority: String? = "127.0.0.1:8443") -> HTTPResponse {
        let request = HTTPRequest(method: method, path: path, authority: authority, scheme: "https", headers: HTTPFields(headers), body: body,
                                  version: version, isTLS: true, connectionID: connection.id, streamID: nextStream)
        nextStream += 2
        let response = gateway.handle(request, on: connection)
        connection.noteCompleted()
        return response
    }

    /// An APNs push; `headers` replace the defaults of the same name, `nil` values remove them.
    /// The default `authorization` is a bearer token any zero-config gateway accepts (and one
    /// with keys configured refuses: InvalidProviderToken).
    @discardableResult
    func push(token: String = deviceToken, method: String = "POST", path: String? = nil,
              headers overrides: [String: String?] = [:], extra: [HTTPHeader] = [],
              payload: String = #"{"aps":{"alert":"hi"}}"#) -> HTTPResponse {
        var fields: [(String, String?)] = [("apns-topic", "com.example.app"), ("apns-push-type", "alert"),
                                           ("authorization", zeroConfigAuthorization)]
        for (name, value) in overrides {
            if let i = fields.firstIndex(where: { $0.0 == name }) { fields[i].1 = value } else { fields.append((name, value)) }
        }
        let headers = fields.compactMap { name, value in value.map { HTTPHeader(name, $0) } } + extra
        return send(method: method, path: path ?? "/3/device/\(token)", headers: headers, body: Array(payload.utf8))
    }

    func providerToken(key: ECP256PrivateKey = TestKeys.apnsKey, keyID kid: String = keyID, team: String = teamID,
                       issuedAt: Int? = nil) -> String {
        try! APNsProviderToken.make(keyID: kid, teamID: team, issuedAt: issuedAt ?? Int(clock.nowSeconds), key: key)
    }
}

/// An APNs configuration with token auth on (two teams' keys).
func authConfiguration(bundles: Set<String>? = nil, streams: UInt32 = 1000) throws -> GatewayConfiguration {
    var configuration = GatewayConfiguration()
    configuration.apns = APNSConfiguration(
        keys: [.init(keyID: keyID, teamID: teamID, publicKeyPEM: try TestKeys.apnsKey.publicKey.spkiPEM),
               .init(keyID: otherKeyID, teamID: otherTeamID, publicKeyPEM: try TestKeys.otherTeamKey.publicKey.spkiPEM)],
        bundleIDs: bundles, maxConcurrentStreams: streams)
    return configuration
}

func json(_ response: HTTPResponse) -> JSONValue? {
    try? JSONParser.parse(response.body)
}

func header(_ response: HTTPResponse, _ name: String) -> String? {
    response.headers.first { $0.name == name }?.value
}

func reason(_ response: HTTPResponse) -> String? {
    json(response)?["reason"]?.stringValue
}
