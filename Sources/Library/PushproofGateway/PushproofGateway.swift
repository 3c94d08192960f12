// The in-process mock for Swift server teams (as Pushy's MockApnsServer is for Java): the
// gateway `pushproof run` embeds, started inside a test on a free loopback port with fresh
// test credentials, a typed list of what it received, and listeners for accepted and
// rejected pushes. The public API is this file; everything behind it is the CLI's own gateway.
import Foundation
import JSON
import MockGateway
import PushModel
import RecordLine
import Scenario
import ScenarioRunner
import SpecValidator
import Synchronization

/// A mock APNs + FCM gateway running in this process on `127.0.0.1` (port chosen by the
/// system), over TLS with a self-signed certificate, strict about auth as Apple and Google
/// are. Point the sender under test at ``apnsURL`` and ``fcmURL``, trust ``caFile``, sign with
/// ``apnsKeyFile`` (key id ``apnsKeyID``, team ``apnsTeamID``) and ``serviceAccountFile``.
///
/// ```swift
/// let gateway = try PushproofGateway(bundleIDs: ["com.acme.shop"], fcmProject: "acme-shop")
/// defer { gateway.stop() }
/// gateway.onRejected { push in print("refused:", push.status, push.reason ?? "") }
/// try await mySender.notify(user: "ana")          // configured with gateway.apnsURL, caFile, …
/// #expect(gateway.received.map(\.token) == [anasToken])
/// ```
public final class PushproofGateway: Sendable {
    /// One push (APNs or FCM) as the gateway received and answered it.
    public struct ReceivedPush: Sendable {
        public enum Route: String, Sendable { case apns, fcm }
        public let route: Route
        /// The device token as the sender wrote it: APNs's path, FCM's `message.token`.
        public let token: String?
        public let headers: [(name: String, value: String)]
        /// The request body as received.
        public let body: [UInt8]
        /// The answer's status (0: the stream was reset or the connection dropped) and reason
        /// (`BadDeviceToken`, `UNREGISTERED`, …; nil when accepted).
        public let status: Int
        public let reason: String?
        /// With specs: the spec the push matched and whether it passed.
        public let spec: String?
        public let passedSpec: Bool?

        public var accepted: Bool { status == 200 }

        /// A push as the gateway records it.
        init(route: Route, _ exchange: RecordedExchange) {
            self.route = route
            token = exchange.token
            headers = exchange.headers
            body = exchange.body
            status = exchange.status ?? 0
            reason = exchange.reason
            spec = exchange.specID
            passedSpec = exchange.verdict?.judgement?.ok
        }

        /// The body parsed as JSON (nil when it is not JSON).
        public var json: JSONValue? { try? JSONParser.parse(body) }

        /// The value of request header `name` (case-insensitive), nil when absent.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What a token is answered as from now on.
    public enum TokenAnswer: Sendable {
        /// 200.
        case valid
        /// APNs 410 Unregistered, FCM 404 UNREGISTERED.
        case gone
        /// APNs 400 BadDeviceToken, FCM 400 INVALID_ARGUMENT.
        case bad
    }

    /// The most pushes ``received`` keeps (the oldest are dropped beyond it), so a long test
    /// cannot grow memory without bound.
    public static let maxReceived = 100_000

    private let gateway: EmbeddedGateway
    private let journal: Journal

    public var apnsURL: String { gateway.access.apnsURL }
    public var fcmURL: String { gateway.access.fcmURL }
    public var tokenURL: String { gateway.access.tokenURL }
    public var caFile: String { gateway.access.caFile }
    public var apnsKeyFile: String { gateway.access.apnsKeyFile }
    public var apnsKeyID: String { gateway.access.apnsKeyID }
    public var apnsTeamID: String { gateway.access.apnsTeamID }
    public var serviceAccountFile: String { gateway.access.serviceAccountFile }

    /// Starts the gateway. `bundleIDs`: the APNs topics it accepts (a `.voip` topic follows
    /// from its bundle id); `fcmProject`: the FCM project its service account sends to;
    /// `specsDirectory`: judge every push against these specs (pushproof's `Specs/`, or your
    /// own), nil to judge none.
    public init(bundleIDs: [String], fcmProject: String = "pushproof-test", specsDirectory: String? = nil) throws {
        let journal = Journal()
        let judge = try specsDirectory.map { directory in try SpecJudge(directory: directory) }
        gateway = try EmbeddedGateway(judge: judge, bundleIDs: bundleIDs, fcmProject: fcmProject, tokens: TokenConfiguration(),
                                      faults: nil, recordFile: nil, observers: [journal], retainingExchanges: false)
        self.journal = journal
    }

    /// The pushes received so far, oldest first.
    public var received: [ReceivedPush] { journal.pushes.withLock { Array($0) } }

    /// Forgets what was received (listeners stay).
    public func clearReceived() { journal.pushes.withLock { $0.removeAll() } }

    /// Calls `listener` for each push the gateway accepts, on the gateway's event loop: keep it short.
    public func onAccepted(_ listener: @escaping @Sendable (ReceivedPush) -> Void) {
        journal.listeners.withLock { $0.accepted.append(listener) }
    }

    /// Calls `listener` for each push the gateway refuses (any answer but 200), on its event loop.
    public func onRejected(_ listener: @escaping @Sendable (ReceivedPush) -> Void) {
        journal.listeners.withLock { $0.rejected.append(listener) }
    }

    /// From now on the gateway answers `token` so, on both APNs and FCM.
    public func setToken(_ token: String, _ answer: TokenAnswer) {
        let state: TokenState = switch answer {
        case .valid: .valid
        case .gone: .gone(sinceMs: nil)
        case .bad: .bad
        }
        gateway.setToken(token, state, nowMs: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// Stops the server and removes the credential files. Idempotent.
    public func stop() { gateway.stop() }

    deinit { gateway.stop() }
}

/// Keeps what arrived and calls the listeners; an observer of the gateway.
private final class Journal: GatewayObserver {
    struct Listeners {
        var accepted: [@Sendable (PushproofGateway.ReceivedPush) -> Void] = []
        var rejected: [@Sendable (PushproofGateway.ReceivedPush) -> Void] = []
    }
    let pushes = Mutex<[PushproofGateway.ReceivedPush]>([])
    let listeners = Mutex(Listeners())

    func observe(_ exchange: GatewayExchange) {
        let route: PushproofGateway.ReceivedPush.Route
        switch exchange.route {
        case .apns: route = .apns
        case .fcm: route = .fcm
        case .oauth, .unknown: return
        }
        let push = PushproofGateway.ReceivedPush(route: route, RecordedExchange(exchange))
        pushes.withLock { pushes in
            if pushes.count >= PushproofGateway.maxReceived { pushes.removeFirst(pushes.count - PushproofGateway.maxReceived + 1) }
            pushes.append(push)
        }
        let called = listeners.withLock { push.accepted ? $0.accepted : $0.rejected }
        for listener in called { listener(push) }
    }
}
