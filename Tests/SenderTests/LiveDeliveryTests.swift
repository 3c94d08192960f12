import Foundation
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

/// `nghttpd` (Debian nghttp2-server) as a plain h2c peer on 127.0.0.1: it answers a POST to
/// a file's path with 200 and the file's content, and anything else with 404.
final class NGHTTPDServer {
    let port: Int
    let root: TemporaryDirectory
    private let process: Process

    static let executable = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let caFile: String?

    /// `tls`: serve HTTP/2 over TLS with a fresh self-signed certificate for 127.0.0.1
    /// (made with the openssl tool); otherwise h2c.
    init(files: [String: String], tls: Bool) throws {
        let root = try TemporaryDirectory()
        var tlsArguments: [String] = []
        if tls {
            let key = root.file("key.pem"), certificate = root.file("cert.pem")
            try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                             "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=127.0.0.1",
                                             "-addext", "subjectAltName=IP:127.0.0.1"])
            tlsArguments = [key, certificate]
            caFile = certificate
        } else {
            caFile = nil
        }
        let documents = root.file("htdocs")
        for (path, content) in files {
            let url = URL(fileURLWithPath: documents + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(content.utf8).write(to: url)
        }
        self.root = root
        guard let executable = Self.executable else { throw LiveTestError.missing("nghttpd") }
        // nghttpd cannot report a port it picked, so borrow a free one from the kernel.
        var lastError: Error = LiveTestError.missing("a free port")
        for _ in 0..<5 {
            let candidate = try freeLoopbackPort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = (tls ? [] : ["--no-tls"]) + ["-a", "127.0.0.1", "-d", documents, String(candidate)] + tlsArguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if waitUntilAccepting(port: candidate, while: process) {
                self.process = process
                port = candidate
                return
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            lastError = LiveTestError.missing("nghttpd listening on \(candidate)")
        }
        throw lastError
    }

    var baseURL: String { (caFile == nil ? "http" : "https") + "://127.0.0.1:\(port)" }

    deinit {
        // nghttpd does not stop on SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

enum LiveTestError: Error { case missing(String), toolFailed(String) }

func runTool(_ path: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw LiveTestError.toolFailed(([path] + arguments).joined(separator: " ")) }
}

func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LiveTestError.missing("socket") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw LiveTestError.missing("bind") }
    return Int(UInt16(bigEndian: address.sin_port))
}

func waitUntilAccepting(port: Int, while process: Process) -> Bool {
    for _ in 0..<200 {
        guard process.isRunning else { return false }
        if (try? RawClient(port: port)) != nil { return true }
        usleep(25_000)
    }
    return false
}

@Suite(.serialized) struct LiveDeliveryTests {
    static let project = "demo-project"

    func iosDevice(_ index: Int) -> Device {
        Device(userID: "user\(index % 7)", platform: .ios, kind: .alert, token: String(format: "%064x", index + 1))
    }

    func apnsPush(to device: Device) -> PushRequest {
        PushRequest(device: device, kind: "yama.message",
                    headers: [("apns-push-type", "alert"), ("apns-topic", "com.example.yama"), ("apns-priority", "10")],
                    body: Array(#"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#.utf8))
    }

    /// Every push shares the one connection allowed, over TLS and over h2c (where libcurl
    /// before 8.0 needs the probe-then-reuse workaround of `CurlTransfer.HTTPMode`).
    @Test(.enabled(if: NGHTTPDServer.executable != nil), arguments: [true, false])
    func manyPushesOverHTTP2(tls: Bool) async throws {
        let deliveredCount = 200
        let androidCount = 40
        var files = ["/v1/projects/\(Self.project)/messages:send": #"{"name": "projects/demo-project/messages/42"}"#,
                     "/oauth/token": #"{"access_token": "ya29.live", "expires_in": 3600, "token_type": "Bearer"}"#]
        for index in 0..<deliveredCount { files["/3/device/" + iosDevice(index).token] = "" }
        let server = try NGHTTPDServer(files: files, tls: tls)
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        let configuration = DeliveryConfiguration(
            apnsBaseURL: server.baseURL, fcmBaseURL: server.baseURL + "/", oauthTokenURL: server.baseURL + "/oauth/token",
            connectionsPerGateway: 1, maxInFlight: 64,
            tls: server.caFile.map(TLSTrust.caFile) ?? .systemRoots,
            retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.05, maxAttempts: 3))
        let tokenSource = CountingTokenSource()
        let deliverer = try PushDeliverer(
            configuration: configuration,
            credentials: DeliveryCredentials(apns: tokenSource, fcm: FixedAssertionSource(tokenURI: "https://oauth2.googleapis.com/token")),
            deviceStore: store, log: { _ in })

        let collector = Task {
            var results: [PushResult] = []
            for await result in deliverer.outcomes { results.append(result) }
            return results
        }
        var tickets: Set<UInt64> = []
        for index in 0..<deliveredCount { tickets.insert(await deliverer.send(apnsPush(to: iosDevice(index)))) }
        for index in 0..<androidCount {
            let device = Device(userID: "android\(index)", platform: .android, token: "fcm-\(index)")
            tickets.insert(await deliverer.send(PushRequest(device: device, kind: "yama.message", body: Array(#"{"message":{"token":"fcm-\#(index)"}}"#.utf8))))
        }
        await deliverer.shutdown()
        let results = await collector.value

        #expect(results.count == deliveredCount + androidCount)
        #expect(Set(results.map(\.ticket)) == tickets)
        let apnsDelivered = results.filter { $0.device.platform == .ios && $0.outcome == .delivered(id: nil) }
        let fcmDelivered = results.filter { $0.outcome == .delivered(id: "projects/demo-project/messages/42") }
        #expect(apnsDelivered.count == deliveredCount)
        #expect(fcmDelivered.count == androidCount)

        let statistics = deliverer.metrics.snapshot
        #expect(statistics.connectionsOpened == 1)
        #expect(statistics.attemptsSent == deliveredCount + androidCount)
        #expect(statistics.retriesScheduled == 0)
        #expect(statistics.providerTokensSigned == 1)
        #expect(tokenSource.signings.load(ordering: .relaxed) == 1)
        #expect(statistics.accessTokensFetched == 1)
        #expect(statistics.delivered == deliveredCount + androidCount)
        #expect(statistics.failed == 0)
    }

    @Test func unreachableGatewayIsRetriedThenFailsOnce() async throws {
        let port = try freeLoopbackPort()  // closed again: nothing listens there
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        let deliverer = try PushDeliverer(
            configuration: DeliveryConfiguration(
                apnsBaseURL: "http://127.0.0.1:\(port)",
                retry: RetryPolicy(baseDelay: 0.001, maxDelay: 0.005, maxAttempts: 3)),
            credentials: DeliveryCredentials(apns: CountingTokenSource()), deviceStore: store, log: { _ in })
        let result = await deliverer.deliver(apnsPush(to: iosDevice(0)))
        await deliverer.shutdown()

        guard case .failed(let reason, let status) = result.outcome else {
            Issue.record("expected failure, got \(result.outcome)")
            return
        }
        #expect(reason.hasPrefix("NetworkError"))
        #expect(status == 0)
        #expect(result.attempts == 3)
        let statistics = deliverer.metrics.snapshot
        #expect(statistics.attemptsSent == 3)
        #expect(statistics.retriesScheduled == 2)
        #expect(statistics.finished == 1)
    }

    @Test func sendAfterShutdownStillEndsWithOneOutcome() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        let deliverer = try PushDeliverer(
            configuration: DeliveryConfiguration(apnsBaseURL: "http://127.0.0.1:9"),
            credentials: DeliveryCredentials(apns: CountingTokenSource()), deviceStore: store, log: { _ in })
        await deliverer.shutdown()
        let result = await deliverer.deliver(apnsPush(to: iosDevice(1)))
        #expect(result.outcome == .failed(reason: "DelivererShutDown", status: 0))
        #expect(deliverer.metrics.snapshot.failed == 1)
    }
}
