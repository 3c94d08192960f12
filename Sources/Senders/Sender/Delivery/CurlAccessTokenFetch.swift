// The delivery loop's FCM OAuth2 access-token fetch: Google's JWT-bearer grant, its answer,
// and what becomes of the pushes that waited for it.
import Clocks

extension CurlLoop {
    /// The FCM OAuth2 access token, and the one fetch of the next that may be in flight.
    struct AccessTokenFetch {
        var cache: AccessTokenCache
        /// FCM pushes waiting for an access token.
        var waiting: [DeliveryJob] = []
        var requestInFlight = false
        /// When the last fetch failed (monotonic nanoseconds): a refresh is not retried within 10 s of it.
        var lastFailure: UInt64?
    }

    /// Google's JWT-bearer grant: POST the RS256 assertion, form-encoded, to the token URL.
    func requestAccessToken() {
        guard !accessTokenFetch.requestInFlight else { return }
        guard let source = shared.credentials.fcm else {
            failAccessTokenWaiters(verdict: .fail(reason: "MissingFCMCredentials", status: 0))
            return
        }
        let tokenURL = configuration.oauthTokenURL ?? source.tokenURI
        let assertion: String
        do {
            assertion = try source.makeAssertion(audience: tokenURL, issuedAt: Int(SystemClock.wallClockSeconds()), lifetime: 3600)
        } catch {
            failAccessTokenWaiters(verdict: .fail(reason: "OAuthAssertionFailed: \(error)", status: 0))
            return
        }
        let body = "grant_type=" + formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer")
            + "&assertion=" + formEncoded(assertion)
        accessTokenFetch.requestInFlight = true
        startTransfer(
            url: tokenURL, origin: Self.origin(of: tokenURL),
            headers: CurlTransfer.HeaderSet(id: 0, lines: ["content-type: application/x-www-form-urlencoded", "Accept:", "Expect:"]),
            body: Array(body.utf8), purpose: .accessToken)
    }

    func handleAccessTokenAnswer(_ answer: CurlTransfer.Answer, status: Int) {
        if answer.transportError == nil, status == 200, let token = GatewayResponseBodies.oauthToken(answer.body) {
            accessTokenFetch.cache.store(token.accessToken, expiresIn: token.expiresIn, now: Int(SystemClock.wallClockSeconds()))
            accessTokenFetch.lastFailure = nil
            shared.metrics.accessTokensFetched.add(1, ordering: .relaxed)
            let waiting = accessTokenFetch.waiting
            accessTokenFetch.waiting.removeAll()
            for job in waiting { sendFCM(job, accessToken: token.accessToken) }
            return
        }
        accessTokenFetch.lastFailure = SystemClock.monotonicNanoseconds()
        let verdict: DeliveryVerdict
        if case .retry(let reason, _, _)? = answer.transportError {
            verdict = .retry(reason: "OAuthTokenUnavailable: " + reason, status: 0, retryAfter: nil)
        } else {
            let detail = GatewayResponseBodies.oauthError(answer.body) ?? "HTTP \(status)"
            let reason = "OAuthTokenUnavailable: " + detail
            verdict = ResponseClassifier.retryableStatuses.contains(status)
                ? .retry(reason: reason, status: status, retryAfter: answer.retryAfter)
                : .fail(reason: reason, status: status)
        }
        failAccessTokenWaiters(verdict: verdict)
    }

    /// The token fetch failed: each waiting push counts it as a failed attempt.
    func failAccessTokenWaiters(verdict: DeliveryVerdict) {
        let waiting = accessTokenFetch.waiting
        accessTokenFetch.waiting.removeAll()
        let now = SystemClock.monotonicNanoseconds()
        for var job in waiting {
            job.attempts += 1
            handle(verdict, for: job, answeredAt: now)
        }
    }
}
