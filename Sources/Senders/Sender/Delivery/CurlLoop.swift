// The delivery thread: sole owner of the CURLM handle and of every easy handle.
import Descriptors
import CCurl
import Clocks
import Foundation
import PushModel

/// curl_global_init is not thread-safe in older libcurl: run it once, lazily, before any handle.
private let curlGlobalInitResult: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

/// Runs on the delivery thread only; nothing here is shared.
final class CurlLoop {
    let shared: DeliveryShared
    let configuration: DeliveryConfiguration
    private let multi: UnsafeMutableRawPointer
    private var idleTransfers: [CurlTransfer] = []
    private var allTransfers: [CurlTransfer] = []
    private let sockets = ConnectionSockets()
    private var activeTransfers = 0
    /// Pushes waiting for their backoff, soonest last (so the next due pops off the end).
    private var retryQueue: [(due: UInt64, job: DeliveryJob)] = []
    private let providerTokens: SharedProviderTokens?
    /// The FCM access token and its fetch (`requestAccessToken`).
    var accessTokenFetch: AccessTokenFetch
    private var random = SystemRandomNumberGenerator()
    /// The gateways' origins (two or three, so a linear search beats hashing the name).
    private var origins: [Origin] = []
    /// Streams libcurl may run per origin: connections x streams. More would queue inside
    /// libcurl, which rescans its whole pending list on every event (Debian's 7.88 fell from
    /// ~28k to ~7k pushes/s with twice as many transfers as streams).
    private let transfersPerOrigin: Int

    private enum OriginState { case cold, connecting, connected }

    /// One origin: no connection yet, one being opened by a lone first request (the others
    /// wait until it answers), or one up that requests multiplex onto, up to `transfersPerOrigin`.
    private struct Origin {
        let name: String
        var state = OriginState.cold
        var running = 0
        /// Requests waiting for the probe's answer or for a free stream, oldest from `waitingHead`.
        var waiting: [ParkedRequest] = []
        var waitingHead = 0
        var hasWaiting: Bool { waitingHead < waiting.count }

        init(name: String) { self.name = name }

        mutating func popWaiting() -> ParkedRequest {
            defer {
                waitingHead += 1
                if waitingHead == waiting.count {
                    waiting.removeAll(keepingCapacity: true)
                    waitingHead = 0
                }
            }
            return waiting[waitingHead]
        }
    }

    private struct ParkedRequest {
        var url: String
        var origin: String
        var headers: CurlTransfer.HeaderSet
        var body: [UInt8]
        var purpose: CurlTransfer.Purpose
    }

    private var apnsHeaderCache = HeaderSetCache()
    private var fcmHeaderCache = HeaderSetCache()
    private var lastHeaderSetID = 0
    /// "<apns base>/3/device/" and the APNs and FCM origins, worked out once.
    private let apnsDevicePathPrefix: String
    private let apnsOrigin: String
    private let fcmOrigin: String

    init(shared: DeliveryShared) throws(DeliveryError) {
        guard curlGlobalInitResult == CURLE_OK else { throw .setupFailed("curl_global_init failed") }
        guard let multi = curl_multi_init() else { throw .setupFailed("curl_multi_init failed") }
        self.shared = shared
        configuration = shared.configuration
        self.multi = multi
        apnsDevicePathPrefix = configuration.apnsBaseURL + "/3/device/"
        apnsOrigin = Self.origin(of: configuration.apnsBaseURL)
        fcmOrigin = Self.origin(of: configuration.fcmBaseURL)
        transfersPerOrigin = Self.effectiveConnectionsPerHost(configuration) * configuration.streamsPerConnection
        providerTokens = shared.credentials.sharedProviderTokens(refreshSeconds: shared.configuration.apnsTokenRefreshSeconds)
        accessTokenFetch = AccessTokenFetch(cache: AccessTokenCache(refreshMarginSeconds: shared.configuration.accessTokenRefreshMarginSeconds))
        // HTTP/2 multiplexing: many streams per connection, at most N connections per host.
        _ = cshim_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        _ = cshim_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, Self.effectiveConnectionsPerHost(configuration))
        _ = cshim_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.streamsPerConnection)
        _ = cshim_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.connectionsPerGateway * 3)
    }

    /// `connectionsPerGateway`, except with h2c on a libcurl that cannot reuse prior-knowledge
    /// connections: there a second connection would be opened by a plain-HTTP/2 request and
    /// so speak HTTP/1.1, so one connection it is.
    static func effectiveConnectionsPerHost(_ configuration: DeliveryConfiguration) -> Int {
        let urls = [configuration.apnsBaseURL, configuration.fcmBaseURL, configuration.oauthTokenURL ?? ""]
        if CurlTransfer.priorKnowledgeReuseIsBroken, urls.contains(where: { $0.hasPrefix("http://") }) { return 1 }
        return configuration.connectionsPerGateway
    }

    deinit {
        for transfer in allTransfers {
            curl_multi_remove_handle(multi, transfer.easy)
            transfer.release()
        }
        curl_multi_cleanup(multi)
    }

    // MARK: - The loop

    func run() {
        var wakeWait = curl_waitfd(fd: shared.wakeEvent.raw, events: Int16(CURL_WAIT_POLLIN), revents: 0)
        while true {
            let intake = shared.takeSubmissions(loopIsIdle: isIdle)
            if intake.exit { return }
            for job in intake.jobs { begin(job) }
            startDueRetries()
            var running: Int32 = 0
            // Corked, the requests this perform writes leave in a few full segments rather
            // than one loopback TCP send per stream (Benchmarks/SENDER.md: "corking").
            sockets.cork()
            curl_multi_perform(multi, &running)
            sockets.uncork()
            collectFinishedTransfers()
            // A stop asked for while pushes were in flight finds the loop idle only here: its
            // wake-up byte was drained long ago, so look again now rather than after a poll
            // that nothing would end before its timeout (shutdown would take up to a second).
            if isIdle, shared.stopRequested { continue }
            if shared.loopWillWait(activeTransfers: activeTransfers) { continue }
            wakeWait.revents = 0
            curl_multi_poll(multi, &wakeWait, 1, pollTimeoutMilliseconds(), nil)
            if wakeWait.revents != 0 { drainWakeEvent(shared.wakeEvent.raw) }
        }
    }

    private var isIdle: Bool {
        activeTransfers == 0 && retryQueue.isEmpty && accessTokenFetch.waiting.isEmpty && !origins.contains { $0.hasWaiting }
    }

    private func pollTimeoutMilliseconds() -> Int32 {
        Self.pollTimeoutMilliseconds(transfersRunning: activeTransfers > 0 || origins.contains { $0.hasWaiting },
                                     nextRetryDue: retryQueue.last?.due, now: SystemClock.monotonicNanoseconds())
    }

    /// The longest wait in curl_multi_poll while transfers run. libcurl (7.88 at least) starts
    /// a transfer it queued for a multiplexed connection only when the loop performs again, and
    /// nothing it polls may wake the loop for it: uncapped, such a push waited out the idle
    /// timeout, a second.
    static let busyPollMilliseconds: Int32 = 10

    /// How long the loop may wait for a socket or a wake-up: until the next retry is due, at
    /// most `busyPollMilliseconds` while transfers run, at most a second when idle.
    static func pollTimeoutMilliseconds(transfersRunning: Bool, nextRetryDue: UInt64?, now: UInt64) -> Int32 {
        let cap: Int32 = transfersRunning ? busyPollMilliseconds : 1000
        guard let next = nextRetryDue else { return cap }
        guard next > now else { return 0 }
        return Int32(min(UInt64(cap), (next - now) / 1_000_000 + 1))
    }

    private func startDueRetries() {
        guard !retryQueue.isEmpty else { return }
        let now = SystemClock.monotonicNanoseconds()
        while let next = retryQueue.last, next.due <= now {
            retryQueue.removeLast()
            begin(next.job)
        }
    }

    // MARK: - Starting pushes

    private func begin(_ job: DeliveryJob) {
        // Headers equal to the cached set's were checked when it was built.
        let checked = switch job.push.transport {
        case .apns: apnsHeaderCache.sourceMatches(job.push.headers)
        case .fcm: fcmHeaderCache.sourceMatches(job.push.headers)
        }
        if !checked, let invalid = firstInvalidHeader(in: job.push) {
            shared.finish(job, .failed(reason: "InvalidHeader: \(invalid)", status: 0))
            return
        }
        switch job.push.transport {
        case .apns: beginAPNs(job)
        case .fcm: beginFCM(job)
        }
    }

    private func beginAPNs(_ job: DeliveryJob) {
        var job = job
        let jwt: String
        do {
            guard let current = try providerTokens?.token(now: Int(SystemClock.wallClockSeconds())) else {
                shared.finish(job, .failed(reason: "MissingAPNsCredentials", status: 0))
                return
            }
            jwt = current.token
            job.credentialGeneration = current.generation
            if current.signed { shared.metrics.providerTokensSigned.add(1, ordering: .relaxed) }
        } catch {
            shared.finish(job, .failed(reason: "ProviderTokenUnavailable: \(error)", status: 0))
            return
        }
        let url = apnsDevicePathPrefix + percentEncodedPathSegment(job.push.device.token)
        if !apnsHeaderCache.matches(job.push.headers, credential: jwt) {
            var lines: [String] = []
            lines.reserveCapacity(job.push.headers.count + 4)
            var hasContentType = false
            for header in job.push.headers where !header.name.isEmpty {
                let name = header.name.lowercased()
                if name == "authorization" { continue }
                if name == "content-type" { hasContentType = true }
                lines.append(header.name + ": " + header.value)
            }
            lines.append("authorization: bearer " + jwt)
            // libcurl would add a form content-type and Accept: */*; APNs wants neither.
            if !hasContentType { lines.append("Content-Type:") }
            lines.append("Accept:")
            lines.append("Expect:")
            apnsHeaderCache = HeaderSetCache(source: job.push.headers, credential: jwt, set: newHeaderSet(lines))
        }
        startTransfer(url: url, origin: apnsOrigin, headers: apnsHeaderCache.set, body: job.push.body, purpose: .push(job))
    }

    private func newHeaderSet(_ lines: [String]) -> CurlTransfer.HeaderSet {
        lastHeaderSetID += 1
        return CurlTransfer.HeaderSet(id: lastHeaderSetID, lines: lines)
    }

    private func beginFCM(_ job: DeliveryJob) {
        switch accessTokenFetch.cache.state(now: Int(SystemClock.wallClockSeconds())) {
        case .fresh(let token):
            sendFCM(job, accessToken: token)
        case .refreshSoon(let token):
            sendFCM(job, accessToken: token)
            // Keep using the valid token; fetch the next one alongside, at most every 10 s after a failure.
            if let failedAt = accessTokenFetch.lastFailure, SystemClock.monotonicNanoseconds() - failedAt < 10_000_000_000 { return }
            requestAccessToken()
        case .missing:
            accessTokenFetch.waiting.append(job)
            requestAccessToken()
        }
    }

    func sendFCM(_ job: DeliveryJob, accessToken: String) {
        var job = job
        job.credentialGeneration = accessTokenFetch.cache.generation
        guard let source = shared.credentials.fcm else {
            shared.finish(job, .failed(reason: "MissingFCMCredentials", status: 0))
            return
        }
        let project = configuration.fcmProjectID ?? source.projectID
        let url = configuration.fcmBaseURL + "/v1/projects/" + percentEncodedPathSegment(project) + "/messages:send"
        if !fcmHeaderCache.matches(job.push.headers, credential: accessToken) {
            var lines: [String] = []
            lines.reserveCapacity(job.push.headers.count + 4)
            for header in job.push.headers where !header.name.isEmpty {
                let name = header.name.lowercased()
                if name == "authorization" || name == "content-type" { continue }
                lines.append(header.name + ": " + header.value)
            }
            lines.append("authorization: Bearer " + accessToken)
            lines.append("content-type: application/json")
            lines.append("Accept:")
            lines.append("Expect:")
            fcmHeaderCache = HeaderSetCache(source: job.push.headers, credential: accessToken, set: newHeaderSet(lines))
        }
        startTransfer(url: url, origin: fcmOrigin, headers: fcmHeaderCache.set, body: job.push.body, purpose: .push(job))
    }

    /// Starts one request, or queues it behind its origin. The first request to an origin goes
    /// alone and the rest wait for its answer: APNs lets a new connection carry one stream
    /// until a request with a valid provider token succeeds (apns.md, "Transport"), so a burst
    /// on a fresh connection is refused or answered with GOAWAY; and on libcurl before 8.0
    /// only that first h2c request may use prior knowledge (`CurlTransfer.priorKnowledgeReuseIsBroken`).
    func startTransfer(url: String, origin: String, headers: CurlTransfer.HeaderSet, body: [UInt8], purpose: CurlTransfer.Purpose) {
        let request = ParkedRequest(url: url, origin: origin, headers: headers, body: body, purpose: purpose)
        let index = originIndex(origin)
        switch origins[index].state {
        case .cold:
            origins[index].state = .connecting
            if !start(request, originIndex: index, isProbe: true) {
                origins[index].state = .cold
                startWaiting(on: index)
            }
        case .connecting:
            origins[index].waiting.append(request)
        case .connected:
            if origins[index].running >= transfersPerOrigin || origins[index].hasWaiting {
                origins[index].waiting.append(request)
            } else {
                start(request, originIndex: index, isProbe: false)
            }
        }
    }

    private func originIndex(_ name: String) -> Int {
        if let index = origins.firstIndex(where: { $0.name == name }) { return index }
        origins.append(Origin(name: name))
        return origins.count - 1
    }

    /// Hands one request to libcurl. False when libcurl could not take it; the request has
    /// then ended (failed, or queued for a retry).
    @discardableResult
    private func start(_ request: ParkedRequest, originIndex index: Int, isProbe: Bool) -> Bool {
        let cleartext = request.origin.utf8.starts(with: "http://".utf8)
        let version: CurlTransfer.HTTPMode.Version
        if !cleartext {
            version = .tls
        } else if isProbe || !CurlTransfer.priorKnowledgeReuseIsBroken {
            version = .priorKnowledge
        } else {
            version = .plainHTTP2
        }
        let mode = CurlTransfer.HTTPMode(version: version, origin: request.origin, isProbe: isProbe)
        let transfer: CurlTransfer
        if let idle = idleTransfers.popLast() {
            transfer = idle
        } else if let created = CurlTransfer(configuration: configuration, sockets: sockets) {
            transfer = created
            allTransfers.append(transfer)
        } else {
            fail(request.purpose, verdict: .fail(reason: "NetworkError: curl_easy_init failed", status: 0))
            return false
        }
        let prepared = transfer.prepare(url: request.url, headers: request.headers, body: request.body, purpose: request.purpose, mode: mode)
        guard prepared, curl_multi_add_handle(multi, transfer.easy) == CURLM_OK else {
            transfer.reset()
            idleTransfers.append(transfer)
            fail(request.purpose, verdict: .fail(reason: "NetworkError: could not set up the request for \(request.url)", status: 0))
            return false
        }
        activeTransfers += 1
        origins[index].running += 1
        if case .push = request.purpose { shared.metrics.attemptsSent.add(1, ordering: .relaxed) }
        return true
    }

    /// A request on the origin ended. A probe's answer opens the origin to the requests waiting
    /// behind it (or, if it failed, the first of them probes). A later request that had to open
    /// a connection itself (the last one was closed or sent GOAWAY) or fell back to HTTP/1.1
    /// makes the next request probe again.
    private func originFinished(_ mode: CurlTransfer.HTTPMode, originIndex index: Int, connectionIsUp: Bool) {
        if mode.isProbe {
            origins[index].state = connectionIsUp ? .connected : .cold
        } else if !connectionIsUp, origins[index].state == .connected {
            origins[index].state = .cold
        }
        startWaiting(on: index)
    }

    /// Waiting requests take the origin's free streams, or the first of them probes a cold
    /// origin. A loop, not recursion: a long queue of requests that fail to start must not
    /// grow the stack.
    private func startWaiting(on index: Int) {
        while origins[index].hasWaiting {
            switch origins[index].state {
            case .connecting:
                return
            case .cold:
                origins[index].state = .connecting
                if !start(origins[index].popWaiting(), originIndex: index, isProbe: true) { origins[index].state = .cold }
            case .connected:
                guard origins[index].running < transfersPerOrigin else { return }
                start(origins[index].popWaiting(), originIndex: index, isProbe: false)
            }
        }
    }

    /// "http://host:port" of a URL: libcurl shares connections per host and port.
    static func origin(of url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[colon...].starts(with: "://".utf8) else { return url }
        let authorityStart = colon + 3
        let authorityEnd = bytes[authorityStart...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        return String(decoding: bytes[..<authorityEnd], as: UTF8.self)
    }

    private func fail(_ purpose: CurlTransfer.Purpose, verdict: DeliveryVerdict) {
        switch purpose {
        case .push(var job):
            job.attempts += 1
            handle(verdict, for: job, answeredAt: SystemClock.monotonicNanoseconds())
        case .accessToken:
            accessTokenFetch.requestInFlight = false
            failAccessTokenWaiters(verdict: verdict)
        case .idle:
            break
        }
    }

    // MARK: - Answers

    private func collectFinishedTransfers() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            let answeredAt = SystemClock.monotonicNanoseconds()
            var privateData: UnsafeMutableRawPointer?
            _ = cshim_easy_getinfo_ptr(easy, CURLINFO_PRIVATE, &privateData)
            curl_multi_remove_handle(multi, easy)
            activeTransfers -= 1
            guard let privateData else { continue }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(privateData).takeUnretainedValue()
            var status = 0
            var newConnections = 0
            _ = cshim_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            _ = cshim_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &newConnections)
            shared.metrics.connectionsOpened.add(newConnections, ordering: .relaxed)
            let answer = transfer.finish(result: result, status: status)
            idleTransfers.append(transfer)
            let index = originIndex(answer.mode.origin)
            origins[index].running -= 1
            if answer.mode.isProbe {
                originFinished(answer.mode, originIndex: index, connectionIsUp: result == CURLE_OK)
            } else {
                var httpVersion = 0
                _ = cshim_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &httpVersion)
                let fellBackToHTTP1 = answer.mode.version == .plainHTTP2 && result == CURLE_OK
                    && httpVersion != Int(CURL_HTTP_VERSION_2_0)
                originFinished(answer.mode, originIndex: index, connectionIsUp: newConnections == 0 && !fellBackToHTTP1)
            }
            switch answer.purpose {
            case .push(var job):
                job.attempts += 1
                let verdict: DeliveryVerdict
                if let transportError = answer.transportError {
                    verdict = transportError
                } else if job.push.transport == .apns {
                    verdict = ResponseClassifier.classifyAPNs(status: status, body: answer.body, apnsID: answer.apnsID, retryAfter: answer.retryAfter)
                } else {
                    verdict = ResponseClassifier.classifyFCM(status: status, body: answer.body, retryAfter: answer.retryAfter)
                }
                handle(verdict, for: job, answeredAt: answeredAt)
            case .accessToken:
                accessTokenFetch.requestInFlight = false
                handleAccessTokenAnswer(answer, status: status)
            case .idle:
                break
            }
        }
    }

    func handle(_ verdict: DeliveryVerdict, for job: DeliveryJob, answeredAt: UInt64) {
        switch verdict {
        case .delivered(let id):
            shared.finish(job, .delivered(id: id))
        case .fail(let reason, let status):
            shared.finish(job, .failed(reason: reason, status: status))
        case .removeToken(let reason, let status):
            shared.removeToken(of: job, reason: reason, status: status, answeredAtNanoseconds: answeredAt)
        case .retry(let reason, let status, let retryAfter):
            guard configuration.retry.allowsRetry(afterAttempts: job.attempts) else {
                shared.finish(job, .failed(reason: reason, status: status))
                return
            }
            let seconds = configuration.retry.delay(
                afterAttempt: job.attempts, retryAfter: retryAfter,
                unitRandom: Double.random(in: 0..<1, using: &random))
            schedule(job, afterSeconds: seconds)
        case .refreshCredentialsAndRetry(let reason, let status):
            guard configuration.retry.allowsRetry(afterAttempts: job.attempts) else {
                shared.finish(job, .failed(reason: reason, status: status))
                return
            }
            switch job.push.transport {
            case .apns: providerTokens?.invalidate(generation: job.credentialGeneration)
            case .fcm: accessTokenFetch.cache.invalidate(generation: job.credentialGeneration)
            }
            schedule(job, afterSeconds: 0)
        }
    }

    private func schedule(_ job: DeliveryJob, afterSeconds seconds: Double) {
        shared.metrics.retriesScheduled.add(1, ordering: .relaxed)
        let delay = UInt64(min(max(seconds, 0), 86_400) * 1_000_000_000)
        let due = SystemClock.monotonicNanoseconds() + delay
        // Keep soonest last; retries are few, so a linear insert is fine.
        let index = retryQueue.firstIndex { $0.due <= due } ?? retryQueue.endIndex
        retryQueue.insert((due, job), at: index)
    }

    /// Header names and values go into the request verbatim: a CR, LF or NUL would let one
    /// header smuggle in another.
    private func firstInvalidHeader(in push: PushRequest) -> String? {
        for header in push.headers {
            for byte in header.name.utf8 where byte == 0x0D || byte == 0x0A || byte == 0 || byte == UInt8(ascii: ":") {
                return header.name
            }
            for byte in header.value.utf8 where byte == 0x0D || byte == 0x0A || byte == 0 {
                return header.name
            }
        }
        return nil
    }
}
