import Descriptors
import Crypto
import Dispatch
import Foundation
import HTTP2Server
import HTTPCore
import JSON
import MockGateway
import Reports
import Synchronization

/// `pushproof serve`: the mock APNs + FCM gateway.
struct ServeCommand: Subcommand {
    static let spec = CommandSpec(
        name: "serve",
        abstract: "Run the mock APNs + FCM gateway (with Google's OAuth token endpoint).",
        options: [
            .value("listen", "HOST:PORT", "Where the gateway listens (APNs, FCM and /token on one port).", default: "127.0.0.1:8443"),
            .value("admin", "HOST:PORT|off", "Where the control API and /metrics listen (keep it on loopback).", default: "127.0.0.1:8444"),
            .flag("h2c", "Serve cleartext (HTTP/2 by prior knowledge, or HTTP/1.1) instead of TLS: for speed runs."),
            .value("cert", "FILE", "TLS certificate chain (PEM). Without --cert/--key a self-signed one is made at start."),
            .value("key", "FILE", "TLS private key (PEM), with --cert."),
            .value("cert-out", "FILE", "Where the generated self-signed certificate is written, for clients to trust "
                   + "(the ready line names it).", default: "pushproof-cert-<port>.pem, after the port bound"),
            .value("config", "FILE", "Gateway configuration (JSON): APNs keys, FCM service accounts, token states, faults, answer rules. "
                   + "Without it auth is off and every well-formed token is valid."),
            .value("record", "FILE", "Append every request and its answer to FILE, one JSON object a line."),
            .flag("record-append", "Keep the record file's existing lines (default: start it afresh)."),
            .value("journal-size", "N", "Requests the control API's journal keeps for GET /requests (the newest; "
                   + "0 turns it off; off too with --admin off).", default: "100000"),
            .value("journal-mib", "MIB", "At most this many MiB of record lines in the journal, whichever of this and "
                   + "--journal-size comes first (~15000 requests of 1.1 KB lines at the default).", default: "16"),
            .value("specs", "DIR|shipped", "Judge every request against the push specs in DIR and record the verdict; "
                   + "'shipped': the specs pushproof ships (\(ShippedSpecs.searchOrder))."),
            .flag("reject-violations", "With --specs: answer spec violations 400 instead of as the real gateway would."),
            .value("spec-config", "FILE", "With --specs: JSON that replaces values of specset.json's config "
                   + "(e.g. {\"poolse\": {\"bundle_ids\": [\"com.acme.app\"]}})."),
            .value("threads", "N", "Event-loop threads.", default: "number of cores"),
            .value("max-body", "BYTES", "Largest request body accepted (larger: stream reset / HTTP 413).", default: "1048576"),
            .value("idle-timeout", "SECONDS", "Close connections idle this long.", default: "60"),
            .value("header-timeout", "SECONDS", "A request head must arrive within this (slow ones: 408 / GOAWAY).", default: "10"),
            .value("body-timeout", "SECONDS", "A request body must arrive within this of its head (slow ones: 408).", default: "30"),
            .value("send-timeout", "SECONDS", "An HTTP/2 answer the client does not take (its flow-control window stays shut) "
                   + "this long ends the connection: GOAWAY ENHANCE_YOUR_CALM.", default: "30"),
            .flag("quiet", "Print nothing but the ready line and errors."),
            .flag("stop-on-stdin-eof", "Also stop (as on SIGTERM) when standard input closes: a supervisor or test "
                  + "that dies without stopping the gateway takes it with it."),
        ],
        discussion: """
        Prints one line once it is ready, e.g.
          pushproof serve: ready https://127.0.0.1:8443 (h2, http/1.1) admin http://127.0.0.1:8444 cert pushproof-cert-8443.pem
        SIGINT or SIGTERM stop it cleanly: answers in flight finish, the record file is flushed and synced.

        EXAMPLES:
          pushproof serve                                   # zero config: TLS, auth off, every token valid
          pushproof serve --h2c --listen 127.0.0.1:8080 --record out/record.jsonl
          pushproof serve --config gateway.json --specs shipped --record out/record.jsonl
        """)

    let listen: HostPort
    let admin: HostPort?
    let h2c: Bool
    let certificate: (cert: String, key: String)?
    /// nil: `pushproof-cert-<port>.pem` after the port bound, so two gateways started in one
    /// folder never overwrite each other's certificate.
    let certificateOut: String?
    let configPath: String?
    let recordPath: String?
    let recordAppend: Bool
    let journalSize: Int
    let journalMiB: Int
    let specsDirectory: String?
    let rejectViolations: Bool
    let specConfigPath: String?
    let threads: Int
    let maxBody: Int
    let idleTimeout: Int
    let headerTimeout: Int
    let bodyTimeout: Int
    let sendTimeout: Int
    let quiet: Bool
    let stopOnStandardInputEOF: Bool

    init(_ arguments: ParsedArguments) throws {
        listen = try HostPort(parsing: arguments.value("listen") ?? "127.0.0.1:8443", option: "listen")
        let adminText = arguments.value("admin") ?? "127.0.0.1:8444"
        admin = adminText == "off" ? nil : try HostPort(parsing: adminText, option: "admin")
        h2c = arguments.has("h2c")
        switch (arguments.value("cert"), arguments.value("key")) {
        case (let cert?, let key?):
            guard !h2c else { throw UsageError(message: "--cert/--key and --h2c exclude each other") }
            certificate = (cert, key)
        case (nil, nil): certificate = nil
        default: throw UsageError(message: "--cert and --key go together")
        }
        certificateOut = arguments.value("cert-out")
        configPath = arguments.value("config")
        recordPath = arguments.value("record")
        recordAppend = arguments.has("record-append")
        if recordAppend, recordPath == nil { throw UsageError(message: "--record-append needs --record") }
        journalSize = try arguments.int("journal-size", default: 100_000, range: 0...10_000_000)
        journalMiB = try arguments.int("journal-mib", default: RequestJournal.defaultMaxBytes >> 20, range: 1...4095)
        specsDirectory = arguments.value("specs")
        rejectViolations = arguments.has("reject-violations")
        if rejectViolations, specsDirectory == nil { throw UsageError(message: "--reject-violations needs --specs") }
        specConfigPath = arguments.value("spec-config")
        if specConfigPath != nil, specsDirectory == nil { throw UsageError(message: "--spec-config needs --specs") }
        threads = try arguments.int("threads", default: ServerConfiguration.defaultThreadCount, range: 1...256)
        maxBody = try arguments.int("max-body", default: 1 << 20, range: 4096...(64 << 20))
        idleTimeout = try arguments.int("idle-timeout", default: 60, range: 1...86_400)
        headerTimeout = try arguments.int("header-timeout", default: 10, range: 1...86_400)
        bodyTimeout = try arguments.int("body-timeout", default: 30, range: 1...86_400)
        sendTimeout = try arguments.int("send-timeout", default: 30, range: 1...86_400)
        quiet = arguments.has("quiet")
        stopOnStandardInputEOF = arguments.has("stop-on-stdin-eof")
        if let admin, admin.port == listen.port, admin.port != 0 {
            throw UsageError(message: "--admin and --listen use the same port \(admin.port)")
        }
    }

    func run() async -> Int32 {
        // Configuration and material first: every problem is reported before anything listens.
        var configuration = GatewayConfiguration()
        if let configPath {
            do {
                configuration = try GatewayConfiguration.load(path: configPath)
            } catch {
                printError("pushproof serve: \(configPath): \(error)")
                return ExitCode.ioError
            }
        }
        var judge: SpecJudge?
        let specs = specsDirectory.map { ShippedSpecs.locate(explicit: $0) }
        if let specs {
            do {
                let overrides = try specConfigPath.map { path throws -> JSONObject in try loadSpecConfig(path) } ?? [:]
                judge = try SpecJudge(directory: specs.path, configOverrides: overrides, rejectViolations: rejectViolations)
            } catch {
                printError("pushproof serve: --specs: \(specs.description): \(error)")
                return ExitCode.ioError
            }
        }
        var tls: TLSConfiguration?
        // Written once the port is bound (its default name carries the port).
        var generatedCertificatePEM: String?
        if let certificate {
            tls = TLSConfiguration(certificateChainPath: certificate.cert, privateKeyPath: certificate.key)
        } else if !h2c {
            do {
                let generated = try SelfSignedCertificate.generate(
                    commonName: "pushproof", subjectAltNames: ["localhost", "127.0.0.1", "::1"] + (isLiteralAddress(listen.host) ? [] : [listen.host]))
                tls = TLSConfiguration(certificateChainPEM: generated.certificatePEM, privateKeyPEM: generated.privateKeyPEM)
                generatedCertificatePEM = generated.certificatePEM
            } catch {
                printError("pushproof serve: cannot make a self-signed certificate: \(error)")
                return ExitCode.ioError
            }
        }
        // Certificate-based APNs trust: TLS clients are asked for an optional certificate, judged
        // per request (a wrong one gets Apple's 403 rather than a failed handshake; without
        // apns.certificate_authorities any certificate authenticates).
        tls?.requestsClientCertificate = true
        if configuration.apns.certificateAuthEnabled, h2c {
            printError("pushproof serve: note: apns.certificate_authorities needs TLS; with --h2c no client has a certificate")
        }
        var recordFile: RecordFile?
        if let recordPath {
            do {
                try createParentDirectory(of: recordPath)
                recordFile = try RecordFile(path: recordPath, append: recordAppend)
            } catch {
                printError("pushproof serve: \(error)")
                return ExitCode.ioError
            }
        }
        // Nobody could read a journal without the control API.
        let journal = admin != nil && journalSize > 0 ? RequestJournal(capacity: journalSize, maxBytes: journalMiB << 20) : nil
        let recorder = recordFile != nil || journal != nil ? Recorder(file: recordFile, journal: journal) : nil
        let metrics = GatewayMetrics()
        let gateway: MockGateway
        do {
            gateway = try MockGateway(configuration: configuration, observers: [recorder as (any GatewayObserver)?, metrics].compactMap { $0 },
                                  judge: judge)
        } catch {
            printError("pushproof serve: \(configPath ?? "configuration"): \(error)")
            recordFile?.close()
            return ExitCode.ioError
        }

        let server = ServerBox()
        var description: JSONObject = [
            "tls": .bool(tls != nil), "threads": .number(Double(threads)),
            "config": configPath.map { .string($0) } ?? .null, "specs": specs.map { .string($0.path) } ?? .null,
        ]
        if rejectViolations { description["reject_violations"] = true }
        // Which apps each product claims (specset.json's config after --spec-config): `run
        // --gateway` checks that the scenario's app is among them before it plays.
        if let judge { description["spec_config"] = judge.specs.config }
        var listeners = [ListenerConfiguration(host: listen.host, port: listen.port, tls: tls, handler: gateway)]
        if let admin {
            let facts = description
            let api = AdminAPI(gateway: gateway, metrics: metrics, recorder: recorder,
                               description: { server.describe(facts) }, statistics: { server.statistics })
            listeners.append(ListenerConfiguration(host: admin.host, port: admin.port, handler: api))
        }
        var settings = ServerConfiguration(threads: threads)
        settings.maxRequestBodyBytes = maxBody
        settings.idleTimeout = .seconds(idleTimeout)
        settings.requestHeadTimeout = .seconds(headerTimeout)
        settings.requestBodyTimeout = .seconds(bodyTimeout)
        settings.responseSendTimeout = .seconds(sendTimeout)
        // APNs' wording when a client opens more streams than allowed.
        settings.http2.streamLimitGoAwayDebugData = APNSGoAway.streamLimitDebugData
        settings.http2.neverIndexedResponseHeaders = APNSResponseHeaders.neverIndexed
        // Each connection is a descriptor: the soft limit (1024 on Debian) is too few.
        HTTPServer.raiseOpenFileLimit()
        let http = HTTPServer(listeners: listeners, configuration: settings)
        let bound: [BoundListener]
        do {
            bound = try http.start()
        } catch {
            printError("pushproof serve: \(error)")
            recordFile?.close()
            return ExitCode.ioError
        }
        server.set(http)
        let main = bound[0]
        var certificateNote = ""
        if let generatedCertificatePEM {
            let path = certificateOut ?? "pushproof-cert-\(main.port).pem"
            do {
                try createParentDirectory(of: path)
                try generatedCertificatePEM.write(toFile: path, atomically: true, encoding: .utf8)
                certificateNote = " cert \(path)"
            } catch {
                printError("pushproof serve: cannot write the self-signed certificate to \(path): \(error)")
                http.shutdown(gracePeriod: .zero)
                recordFile?.close()
                return ExitCode.ioError
            }
        }

        let signals = SignalWaiter([SIGINT, SIGTERM], watchingStandardInput: stopOnStandardInputEOF)
        let scheme = tls == nil ? "http" : "https"
        var ready = "pushproof serve: ready \(scheme)://\(HostPort(host: main.host, port: main.port).description) "
        ready += tls == nil ? "(h2c prior knowledge, http/1.1)" : "(h2, http/1.1)"
        if bound.count > 1 { ready += " admin http://\(HostPort(host: bound[1].host, port: bound[1].port).description)" }
        ready += certificateNote
        if let recordPath { ready += " record \(recordPath)" }
        if let specs { ready += " specs \(specs.path)" }
        printNow(ready)
        if !quiet {
            if let specs { printError("pushproof serve: \(specs.description)") }
            if let mismatch = tokenURLMismatch(configuration.fcm.tokenURL, listening: HostPort(host: main.host, port: main.port)) {
                printError("pushproof serve: warning: \(mismatch)")
            }
            printError("pushproof serve: APNs token auth \(gateway.apnsTokenAuthEnabled ? "on" : "off (any bearer token)"), "
                       + "FCM auth \(gateway.fcmAuthEnabled ? "on" : "off (any access token)"), "
                       + "\(Format.counted(threads, "thread")); SIGINT or SIGTERM to stop")
        }

        let signal = await signals.next()
        if !quiet {
            let cause = switch signal {
            case SIGINT: "SIGINT"
            case SignalWaiter.standardInputClosed: "standard input closed"
            default: "SIGTERM"
            }
            printError("pushproof serve: \(cause), stopping")
        }
        http.shutdown(gracePeriod: .seconds(5))
        recordFile?.close()
        if !quiet {
            var summary = "pushproof serve: stopped after \(gateway.answeredCount) requests"
            if let recordFile { summary += "; \(recordFile.writtenLines) lines in \(recordFile.path)" }
            if let recordFile, recordFile.failedWrites > 0 {
                summary += " (\(recordFile.failedWrites) writes FAILED, \(recordFile.lostLines) lines LOST)"
            }
            printError(summary)
        }
        return recordFile.map { $0.failedWrites > 0 ? ExitCode.ioError : ExitCode.success } ?? ExitCode.success
    }
}

/// `out/record.jsonl` works without creating `out/` first.
func createParentDirectory(of path: String) throws {
    let parent = (path as NSString).deletingLastPathComponent
    guard !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) else { return }
    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
}

/// A JSON object file of spec configuration overrides.
func loadSpecConfig(_ path: String) throws -> JSONObject {
    let text = try readText(path)
    guard let object = try JSONParser.parse(text).objectValue else {
        throw FileError(path: path, reason: "expected a JSON object like {\"poolse\": {\"bundle_ids\": [\"com.acme.app\"]}}")
    }
    return object
}

private func isLiteralAddress(_ host: String) -> Bool {
    host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." } || host == "localhost"
}

/// Holds the server once started, so the admin API (created before it) can read its counters.
final class ServerBox: Sendable {
    private let server = Mutex<HTTPServer?>(nil)

    func set(_ server: HTTPServer) { self.server.withLock { $0 = server } }

    /// `facts` plus the addresses actually bound (port 0 becomes the chosen port).
    func describe(_ facts: JSONObject) -> JSONObject {
        var out = facts
        let bound = server.withLock { $0?.boundListeners } ?? []
        if let main = bound.first { out["listen"] = .string(HostPort(host: main.host, port: main.port).description) }
        if bound.count > 1 { out["admin"] = .string(HostPort(host: bound[1].host, port: bound[1].port).description) }
        return out
    }

    var statistics: AdminAPI.Statistics {
        guard let server = server.withLock({ $0 }) else {
            return .init(openConnections: 0, acceptedConnections: 0, requestsServed: 0)
        }
        return .init(openConnections: server.openConnections, acceptedConnections: server.acceptedConnections,
                     requestsServed: server.requestsServed, rapidResetCloses: server.rapidResetCloses)
    }
}

/// The write end of `SignalWaiter`'s self-pipe, for the signal handler (which can capture
/// nothing). Set once, before the handler is installed; only read afterwards.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Turns SIGINT/SIGTERM into an awaitable event, and optionally the end of standard input,
/// reported as `standardInputClosed`.
///
/// The handler is installed with `signal(2)` before `init` returns, so a signal sent as soon as
/// the ready line is out is never lost: it writes the signal's number to a self-pipe (write(2)
/// is async-signal-safe) that a thread of ours reads. A Dispatch signal source was used before,
/// with the default action set to SIG_IGN first: libdispatch installs its own handler only
/// later, on its manager thread, and a SIGTERM in between was ignored, leaving the gateway
/// running (about 1 start in 40 when stopped right after its ready line).
final class SignalWaiter {
    /// Not a signal number: standard input reached its end.
    static let standardInputClosed: Int32 = 0
    private let stream: AsyncStream<Int32>

    init(_ signals: [Int32], watchingStandardInput: Bool = false) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            signalPipeWriteEnd = ends[1]
            let readEnd = ends[0]
            let reader = Thread {
                var byte: UInt8 = 0
                while (try? blockingSystemCall("read", { read(readEnd, &byte, 1) })) == 1 {
                    continuation.yield(Int32(byte))
                }
            }
            reader.name = "pushproof.serve.signals"
            reader.start()
            for number in signals {
                _ = Glibc.signal(number) { number in
                    var byte = UInt8(truncatingIfNeeded: number)
                    _ = write(signalPipeWriteEnd, &byte, 1)
                }
            }
        } else {
            // No pipe (descriptors exhausted at start): keep the default action, termination,
            // rather than ignoring the signal.
            printError("pushproof serve: warning: cannot create the signal pipe (\(String(cString: strerror(errno)))); SIGTERM will end the gateway without a flush")
        }
        if watchingStandardInput {
            // A blocking read on its own thread: it ends only at EOF or an error, which both
            // mean whoever held the other end is gone.
            let reader = Thread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while (try? buffer.withUnsafeMutableBytes { raw in
                    try blockingSystemCall("read", { read(STDIN_FILENO, raw.baseAddress, raw.count) })
                }) ?? 0 > 0 {}
                continuation.yield(Self.standardInputClosed)
            }
            reader.name = "pushproof.serve.stdin"
            reader.start()
        }
    }

    func next() async -> Int32 {
        for await signal in stream { return signal }
        return SIGTERM
    }
}
