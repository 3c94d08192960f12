// The gateway `run` starts for a scenario: the mock (MockGateway on HTTP2Server) in this
// process, on loopback, over TLS with freshly generated test credentials and strict auth
// (APNs provider tokens, FCM access tokens), judging every push against the specs.
import Clocks
import Crypto
import Foundation
import HTTP2Server
import HTTPCore
import JSON
import MockGateway
import RecordLine
import Scenario
import SpecValidator
import Synchronization
import PushModel

/// Keeps the exchanges not yet read (`run` reads them every few milliseconds and judges them
/// as they come), and, with `--record`, hands each on to the recorder too.
final class ExchangeLog: GatewayObserver {
    /// False for a load run, whose observers match arrivals themselves: only the counters are
    /// kept, so memory does not grow with the run.
    private let retaining: Bool

    init(retaining: Bool = true) { self.retaining = retaining }

    private struct State {
        /// The exchanges not yet judged, from position `firstPosition` on.
        var exchanges: [RecordedExchange] = []
        /// Exchanges before this one were handed to an event's verdict and dropped, so memory
        /// follows one event's pushes, not the whole run's.
        var firstPosition = 0
        /// Pushes (APNs, FCM) the gateway accepted so far: what `settle` polls.
        var acceptedPushes = 0
        /// Exchanges observed so far, dropped ones included.
        var total: Int { firstPosition + exchanges.count }
    }
    private let state = Mutex(State())

    func observe(_ exchange: GatewayExchange) {
        let acceptedPush = exchange.route.carriesPushes && (200..<300).contains(exchange.response.status)
        guard retaining else {
            state.withLock { state in
                state.firstPosition += 1
                if acceptedPush { state.acceptedPushes += 1 }
            }
            return
        }
        // Built outside the lock; numbered under it. The token is read later, off the loop.
        var recorded = RecordedExchange(exchange)
        state.withLock { state in
            recorded.sequence = state.total + 1
            if acceptedPush { state.acceptedPushes += 1 }
            state.exchanges.append(recorded)
        }
    }

    var count: Int { state.withLock { $0.total } }
    var acceptedPushes: Int { state.withLock { $0.acceptedPushes } }
    /// Both counters under one lock, so they agree.
    var counts: (exchanges: Int, acceptedPushes: Int) { state.withLock { ($0.total, $0.acceptedPushes) } }

    /// The exchanges from position `start` on, handed over: the log keeps none of them, so the
    /// gateway's next append never copies a list the reader still holds. Each has its token
    /// read on the caller's thread, not the gateway's event loop, which only appends. Events are
    /// judged in order, so the ones before `start` are done with and dropped here.
    func exchanges(from start: Int) -> [RecordedExchange] {
        var list = state.withLock { state in
            let judged = min(max(0, start - state.firstPosition), state.exchanges.count)
            state.exchanges.removeFirst(judged)
            state.firstPosition += state.exchanges.count + judged
            var taken: [RecordedExchange] = []
            swap(&taken, &state.exchanges)
            return taken
        }
        for index in list.indices { list[index].readToken() }
        return list
    }
}

/// The gateway could not be started or driven: the embedded one failed to start, or a
/// `pushproof serve`'s control API refused a request or did not answer.
public struct GatewayStartError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A running embedded gateway. `stop()` shuts it down and removes its credential files.
public final class EmbeddedGateway: ScenarioGateway {
    public let access: GatewayAccess
    let log: ExchangeLog
    let gateway: MockGateway
    private let server: HTTPServer
    private let directory: String
    private let recorder: Recorder?

    static let keyID = "SCENARIO01"
    static let teamID = "PUSHPROOF1"

    /// Starts with the scenario's token states, faults and answer rules (`opening.faults`,
    /// `opening.answerRules`, in serve's configuration shape).
    /// `observers` see every exchange too (a load run's arrival matcher); with them,
    /// `retainingExchanges: false` keeps only the log's counters.
    convenience init(opening: GatewayOpening, recordFile: RecordFile?, observers: [any GatewayObserver] = [],
                     retainingExchanges: Bool = true) throws(GatewayStartError) {
        var tokens = TokenConfiguration()
        for (token, state) in opening.tokens {
            switch state {
            case .valid: tokens.valid.append(token)
            case .gone(let since): tokens.gone.append((token, UInt64(since ?? opening.startMs)))
            case .expired: tokens.expired.append((token, UInt64(opening.startMs)))
            case .bad: tokens.bad.append(token)
            case .otherSender: tokens.otherSender.append(token)
            }
        }
        try self.init(judge: opening.judge, bundleIDs: [opening.bundleID], fcmProject: opening.fcmProject, tokens: tokens,
                      faults: opening.faults, answerRules: opening.answerRules, recordFile: recordFile, observers: observers, retainingExchanges: retainingExchanges)
    }

    /// `faults`, `answerRules`: the scenario's `gateway.faults` and `gateway.answer_rules`, in
    /// serve's configuration shape. Public for the `PushproofGateway` library, which starts one
    /// inside a team's own tests.
    public init(judge: SpecJudge?, bundleIDs: [String], fcmProject: String, tokens: TokenConfiguration, faults: JSONValue?,
         answerRules: JSONValue? = nil, recordFile: RecordFile?, observers: [any GatewayObserver] = [], retainingExchanges: Bool = true) throws(GatewayStartError) {
        let directory = NSTemporaryDirectory() + "pushproof-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var configuration = GatewayConfiguration()
            if faults != nil || answerRules != nil {
                var given = JSONObject()
                if let faults { given["faults"] = faults }
                if let answerRules { given["answer_rules"] = answerRules }
                do {
                    let read = try GatewayConfiguration.parse(json: Array(JSONValue.object(given).serialized().utf8))
                    configuration.faults = read.faults
                    configuration.answerRules = read.answerRules
                } catch {
                    throw GatewayStartError("gateway.\(error)")
                }
            }
            let credentials = try TestCredentials.generate(fcmProject: fcmProject, tokenURI: "https://127.0.0.1:0/token")
            let (apnsKey, serviceAccountJSON, account) = (credentials.apnsKey, credentials.serviceAccountJSON, credentials.serviceAccount)
            configuration.apns = APNSConfiguration(
                keys: [.init(keyID: Self.keyID, teamID: Self.teamID, publicKeyPEM: try apnsKey.publicKey.spkiPEM)],
                bundleIDs: Set(bundleIDs))
            configuration.tokens = tokens
            let certificate = try SelfSignedCertificate.generate(commonName: "pushproof", subjectAltNames: ["localhost", "127.0.0.1"])
            let log = ExchangeLog(retaining: retainingExchanges)
            let recorder = recordFile.map { Recorder(file: $0) }
            // The token URL names the port, which is known once bound: the gateway accepts its
            // own /token as audience whatever the port, and the sender is told the real URL.
            configuration.fcm = FCMConfiguration(
                projectID: fcmProject,
                serviceAccounts: [.init(clientEmail: account.clientEmail, privateKeyID: account.privateKeyID, keyPEM: account.privateKeyPEM)])
            let gateway = try MockGateway(configuration: configuration, observers: [log as any GatewayObserver] + (recorder.map { [$0] } ?? []) + observers,
                                          judge: judge)
            var settings = ServerConfiguration(threads: 1)
            settings.http2.streamLimitGoAwayDebugData = APNSGoAway.streamLimitDebugData
            settings.http2.neverIndexedResponseHeaders = APNSResponseHeaders.neverIndexed
            let server = HTTPServer(listeners: [ListenerConfiguration(
                host: "127.0.0.1", port: 0,
                tls: TLSConfiguration(certificateChainPEM: certificate.certificatePEM, privateKeyPEM: certificate.privateKeyPEM),
                handler: gateway)], configuration: settings)
            let bound = try server.start()
            let base = "https://127.0.0.1:\(bound[0].port)"
            let write = { (name: String, text: String) throws -> String in
                let path = directory + "/" + name
                guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw GatewayStartError("cannot write \(path)")
                }
                return path
            }
            // The service account's token_uri must point at this gateway.
            var accountObject = try JSONParser.parse(serviceAccountJSON).objectValue ?? [:]
            accountObject["token_uri"] = .string(base + "/token")
            access = GatewayAccess(
                apnsURL: base, fcmURL: base, tokenURL: base + "/token",
                caFile: try write("gateway-cert.pem", certificate.certificatePEM),
                apnsKeyFile: try write("apns-key.p8", try apnsKey.pkcs8PEM), apnsKeyID: Self.keyID, apnsTeamID: Self.teamID,
                serviceAccountFile: try write("service-account.json", JSONValue.object(accountObject).serialized()))
            self.log = log
            self.gateway = gateway
            self.server = server
            self.directory = directory
            self.recorder = recorder
        } catch let error as GatewayStartError {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw GatewayStartError("embedded gateway: \(error)")
        }
    }

    /// From now on the gateway answers `token` as `state`.
    public func setToken(_ token: String, _ state: TokenState, nowMs: Int64) {
        gateway.tokens.set(token, to: Self.registryState(state, nowMs: nowMs))
    }

    public func mark() -> GatewayMark {
        let (count, accepted) = log.counts
        return GatewayMark(position: count, acceptedPushes: accepted)
    }

    /// Polls the log's counters, never its exchanges, so a 20,000-push event costs nothing to
    /// wait on.
    public func settle(after mark: GatewayMark, expectedAccepted: Int, options: RunOptions) async {
        let clock = MonotonicClock()
        let deadline = clock.now + .milliseconds(options.eventTimeoutMilliseconds)
        var lastCount = -1
        var quietSince = clock.now
        while clock.now < deadline {
            let (count, accepted) = log.counts
            if count != lastCount {
                lastCount = count
                quietSince = clock.now
            }
            if accepted - mark.acceptedPushes >= expectedAccepted, clock.now - quietSince >= .milliseconds(options.settleMilliseconds) {
                return
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    public func exchanges(after mark: GatewayMark) -> [RecordedExchange] { log.exchanges(from: mark.position) }

    /// The log answers under its lock: `run` reads it every few milliseconds during an event.
    public var readsWhileSending: Bool { true }

    static func registryState(_ state: TokenState, nowMs: Int64) -> DeviceTokenState {
        switch state {
        case .valid: .valid
        case .gone(let since): .gone(sinceMillis: UInt64(since ?? nowMs))
        case .expired: .expired(sinceMillis: UInt64(nowMs))
        case .bad: .bad
        case .otherSender: .otherSender
        }
    }

    public func stop() {
        server.shutdown(gracePeriod: .seconds(2))
        recorder?.file?.flush()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
