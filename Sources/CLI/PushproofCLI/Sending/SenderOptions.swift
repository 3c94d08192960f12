// Options shared by `send` and `drive`: where the gateways are, how to trust them, which
// credentials to sign with, and how wide the reference sender may go.
import Crypto
import Foundation
import PushModel
import Sender
import Synchronization

/// How `send` and `drive` reach the gateways, parsed once from the command line.
struct SenderOptions {
    static let specs: [OptionSpec] = [
        .value("gateway", "URL", "Base URL of a gateway serving APNs, FCM and /token on one origin (pushproof serve). "
               + "Repeat it for replicas of one configuration: delivery thread t sends to the (t mod M)th of the M, and "
               + "fetches its FCM access tokens from that one's /token (a replica honours only the tokens it issued).",
               default: "https://127.0.0.1:8443, http:// with --h2c", repeatable: true),
        .value("apns", "URL", "APNs origin; pushes go to URL/3/device/<token>.", default: "--gateway"),
        .value("fcm", "URL", "FCM origin; pushes go to URL/v1/projects/<project>/messages:send.", default: "--gateway"),
        .value("token-url", "URL", "OAuth2 token endpoint for FCM access tokens.", default: "the service account's token_uri"),
        .flag("h2c", "Cleartext HTTP/2 with prior knowledge (http:// URLs), for pushproof serve --h2c."),
        .value("ca", "FILE", "Trust the certificates in this PEM file (pushproof serve writes pushproof-cert-<port>.pem)."),
        .flag("insecure", "Skip TLS certificate and host checks (local testing only)."),
        .value("apns-key", "FILE", "APNs token-auth key (.p8). Without it APNs pushes are logged, not sent."),
        .value("key-id", "ID", "The .p8 key's 10-character key id (JWT kid)."),
        .value("team-id", "ID", "The 10-character Apple team id (JWT iss)."),
        .value("service-account", "FILE", "Google service-account JSON. Without it FCM pushes are logged, not sent."),
        .value("project", "ID", "FCM project id.", default: "the service account's project_id, else poolse-example"),
        .value("bundle-id", "ID", "The app's bundle id: the apns-topic (VoIP: <id>.voip).", default: "com.example.loop"),
        .value("connections", "N", "Most connections per gateway origin (h2c on libcurl < 8: always 1).", default: "1"),
        .value("streams", "N", "Most concurrent streams per connection (the server's SETTINGS may lower it).", default: "1000"),
        .value("max-in-flight", "N", "Most pushes unfinished at once per delivery thread; the sender waits for a slot beyond it.",
               default: "1000"),
        .value("senders", "N", "Delivery threads: PushDeliverers, each with its own libcurl multi handle and connections; "
               + "pushes are spread over them by device token.", default: "1, or one per --gateway"),
        .value("attempts", "N", "Attempts per push in all, retries of 429/5xx included.", default: "5"),
    ]

    var apnsURL: String
    var fcmURL: String
    /// The gateways of a repeated `--gateway`, in order (empty for one): replicas a delivery
    /// thread each is pinned to, round robin.
    var gatewayReplicas: [String]
    var tokenURL: String?
    var tls: TLSTrust
    var apnsKeyPath: String?
    var keyID: String?
    var teamID: String?
    var serviceAccountPath: String?
    var projectOverride: String?
    var bundleID: String
    var connections: Int
    var streams: Int
    var maxInFlight: Int
    var attempts: Int
    var senders: Int

    init(_ arguments: ParsedArguments) throws(UsageError) {
        let h2c = arguments.has("h2c")
        let gateways = arguments.all("gateway").map { url in
            var url = url
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
        let gateway = gateways.first ?? (h2c ? "http://127.0.0.1:8443" : "https://127.0.0.1:8443")
        apnsURL = arguments.value("apns") ?? gateway
        fcmURL = arguments.value("fcm") ?? gateway
        tokenURL = arguments.value("token-url")
        gatewayReplicas = gateways.count > 1 ? gateways : []
        if !gatewayReplicas.isEmpty {
            if let origin = ["apns", "fcm"].first(where: { arguments.value($0) != nil }) {
                throw UsageError(message: "--\(origin) names one origin, but --gateway is given \(gateways.count) times (replicas); "
                                 + "give the replicas as --gateway alone")
            }
            if let duplicate = Dictionary(grouping: gateways, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
                throw UsageError(message: "--gateway \(duplicate) is given twice")
            }
        }
        _ = try GatewayOptions.cleartext([("apns", apnsURL), ("fcm", fcmURL)] + gatewayReplicas.map { ("gateway", $0) },
                                         h2c: h2c, ca: arguments.value("ca"))
        // The token endpoint is not a push origin: TLS or not, whatever --h2c says.
        _ = try GatewayOptions.cleartext([("token-url", tokenURL ?? "https://")], h2c: false, ca: nil)
        if arguments.has("insecure") {
            if arguments.value("ca") != nil { throw UsageError(message: "--ca and --insecure exclude each other") }
            tls = .insecure
        } else if let ca = arguments.value("ca") {
            tls = .caFile(ca)
        } else {
            tls = .systemRoots
        }
        apnsKeyPath = arguments.value("apns-key")
        keyID = arguments.value("key-id")
        teamID = arguments.value("team-id")
        if apnsKeyPath != nil, keyID == nil || teamID == nil {
            throw UsageError(message: "--apns-key needs --key-id and --team-id")
        }
        if apnsKeyPath == nil, keyID != nil || teamID != nil {
            throw UsageError(message: "--key-id and --team-id go with --apns-key")
        }
        serviceAccountPath = arguments.value("service-account")
        projectOverride = arguments.value("project")
        bundleID = arguments.value("bundle-id") ?? "com.example.loop"
        if bundleID.isEmpty { throw UsageError(message: "--bundle-id must not be empty") }
        connections = try arguments.int("connections", default: 1, range: 1...256)
        streams = try arguments.int("streams", default: 1000, range: 1...100_000)
        maxInFlight = try arguments.int("max-in-flight", default: 1000, range: 1...1_000_000)
        attempts = try arguments.int("attempts", default: 5, range: 1...20)
        senders = try arguments.int("senders", default: max(1, gatewayReplicas.count), range: 1...64)
        if senders < gatewayReplicas.count {
            throw UsageError(message: "--senders \(senders) is fewer than the \(gatewayReplicas.count) gateways: each delivery thread "
                             + "sends to one gateway, so every gateway needs one (give --senders \(gatewayReplicas.count) or more)")
        }
    }

    var hasCredentials: Bool { apnsKeyPath != nil || serviceAccountPath != nil }

    /// `--transport apns|fcm|both` (default both).
    static func transports(_ arguments: ParsedArguments) throws(UsageError) -> Set<PushTransport> {
        switch arguments.value("transport") ?? "both" {
        case "both": [.apns, .fcm]
        case "apns": [.apns]
        case "fcm": [.fcm]
        case let other: throw UsageError(message: "--transport is apns, fcm or both, not '\(other)'")
        }
    }

    /// What `send` and `drive` start delivering with: the key files read (`loadCredentials`) and the
    /// device store opened, SQLite at `devicesPath` (`--devices FILE`) or in memory. On failure,
    /// prints `pushproof COMMAND: <why>` and returns nil (the caller exits with an I/O error).
    func openDelivery(command: String, devicesPath: String?)
        -> (credentials: DeliveryCredentials, projectID: String, store: any DeviceStore)? {
        do {
            let (credentials, projectID) = try loadCredentials()
            let store: any DeviceStore = try devicesPath.map { path throws(DeviceStoreError) in try SQLiteDeviceStore(path: path) }
                ?? InMemoryDeviceStore()
            return (credentials, projectID, store)
        } catch {
            printError("pushproof \(command): \(error)")
            return nil
        }
    }

    /// Reads the key files. Throws a `FileError` naming the file that could not be used.
    func loadCredentials() throws(FileError) -> (credentials: DeliveryCredentials, projectID: String) {
        // A CA file libcurl cannot read would fail every push one by one: say so up front.
        if case .caFile(let path) = tls { _ = try readText(path) }
        var credentials = DeliveryCredentials()
        var project = projectOverride
        if let apnsKeyPath, let keyID, let teamID {
            do {
                credentials.apns = try APNsSigningKey(p8Path: apnsKeyPath, keyID: keyID, teamID: teamID)
            } catch {
                throw FileError(path: apnsKeyPath, reason: "not a usable APNs .p8 key: \(error)")
            }
        }
        if let serviceAccountPath {
            let json = try readText(serviceAccountPath)
            do {
                let account = try GoogleServiceAccount(json: json)
                credentials.fcm = account
                if project == nil { project = account.projectID }
            } catch {
                throw FileError(path: serviceAccountPath, reason: "not a usable service account: \(error)")
            }
        }
        return (credentials, project ?? "poolse-example")
    }

    /// The deliverer's configuration: `maxInFlight` at least `minimumInFlight` so a caller
    /// with that many concurrent sends never waits for a slot.
    /// With `replica` (one of `gatewayReplicas`), the deliverer pinned to it: APNs and FCM there,
    /// and its access tokens from there unless `--token-url` names one endpoint for all.
    func deliveryConfiguration(projectID: String, minimumInFlight: Int = 0, replica: String? = nil) -> DeliveryConfiguration {
        DeliveryConfiguration(
            apnsBaseURL: replica ?? apnsURL, fcmBaseURL: replica ?? fcmURL,
            oauthTokenURL: tokenURL ?? replica.map { $0 + "/token" }, fcmProjectID: projectID,
            connectionsPerGateway: connections, streamsPerConnection: streams,
            maxInFlight: max(maxInFlight, minimumInFlight), tls: tls,
            retry: RetryPolicy(baseDelay: 0.05, maxDelay: 2, maxAttempts: attempts))
    }

    /// `senders` deliverers over one device store, deliverer t pinned to gateway replica t mod M
    /// when there are several. They share one APNs provider token (as all deliverers made from
    /// one `DeliveryCredentials` do): Apple answers TooManyProviderTokenUpdates when a team's
    /// token changes more often than every 20 minutes.
    func makePool(credentials: DeliveryCredentials, projectID: String, store: any DeviceStore,
                        minimumInFlight: Int = 0, log: @escaping @Sendable (String) -> Void) throws(DeliveryError) -> DeliveryPool {
        let shared = credentials
        var deliverers: [PushDeliverer] = []
        for index in 0..<senders {
            let replica = gatewayReplicas.isEmpty ? nil : gatewayReplicas[index % gatewayReplicas.count]
            let configuration = deliveryConfiguration(projectID: projectID, minimumInFlight: minimumInFlight, replica: replica)
            deliverers.append(try PushDeliverer(configuration: configuration, credentials: shared, deviceStore: store, log: log))
        }
        return DeliveryPool(deliverers: deliverers)
    }

    /// "h2c" or "TLS", and the connection bound in effect, for reports.
    var transportDescription: String {
        anyCleartext ? "h2c (prior knowledge)" : "HTTP/2 over TLS"
    }

    /// An origin is reached in cleartext h2c (its URL is http://: `GatewayOptions.cleartext`).
    var anyCleartext: Bool { apnsURL.hasPrefix("http://") || fcmURL.hasPrefix("http://") }
}


/// Deterministic device tokens the mock gateway accepts: APNs tokens are 64 hex digits
/// (apns.md: the gateway checks length and hex), FCM tokens any opaque string.
enum DemoTokens {
    /// `scope` separates products and runs; `0b` marks VoIP tokens, `0a` alert tokens.
    static func apns(scope: UInt8, kind: IOSTokenKind, index: Int) -> String {
        let prefix = hex(byte: scope) + (kind == .voip ? "0b" : "0a")
        let digits = String(UInt64(index), radix: 16)
        return prefix + String(repeating: "0", count: 64 - prefix.count - digits.count) + digits
    }

    static func fcm(scope: String, index: Int) -> String {
        "fcm-\(scope)-\(index)-" + String(repeating: "x", count: 8)
    }

    private static func hex(byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}
