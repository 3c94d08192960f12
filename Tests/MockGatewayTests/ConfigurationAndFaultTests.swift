import Crypto
import Foundation
import HTTPCore
import JSON
import PushModel
import Testing
@testable import MockGateway

@Suite struct GatewayConfigurationTests {
    static func exampleConfiguration() throws -> String {
        let apnsPEM = try TestKeys.apnsKey.publicKey.spkiPEM
        let rsaPEM = try TestKeys.serviceAccountKey.publicKey.spkiPEM
        return """
        {
          "apns": {
            "keys": [{"key_id": "KEY1234567", "team_id": "TEAM123456", "public_key_pem": \(JSONValue.string(apnsPEM).serialized()),
                      "environment": "production"}],
            "bundle_ids": ["com.example.app"],
            "token_hex_length": 64,
            "max_token_hex_length": 200,
            "max_concurrent_streams": 500,
            "environment": "development"
          },
          "fcm": {
            "project_id": "demo-project",
            "project_number": "1234567890",
            "token_url": "https://127.0.0.1:8443/token",
            "service_accounts": [{"client_email": "pusher@demo-project.iam.gserviceaccount.com",
                                  "private_key_id": "abc", "public_key_pem": \(JSONValue.string(rsaPEM).serialized())}],
            "access_token_lifetime_seconds": 1800
          },
          "tokens": {
            "default": "refuse",
            "valid": ["\(deviceToken)"],
            "gone": ["gone1", {"token": "gone2", "since_ms": 1700000000000}],
            "bad": ["bad1"]
          },
          "faults": {
            "seed": 42,
            "max_concurrent_streams": 250,
            "apns": {"latency": {"fixed_ms": 5}, "error_rates": {"429": 0.01, "500": 0.001, "503": 0.002},
                     "retry_after_seconds": 10, "goaway_after_streams": 1000, "reset_rate": 0.0005, "close_rate": 0.0001},
            "fcm": {"latency": {"distribution": {"kind": "normal", "mean_ms": 20, "stddev_ms": 5}}},
            "oauth": {"latency": {"distribution": {"kind": "uniform", "min_ms": 1, "max_ms": 3}}}
          }
        }
        """
    }

    @Test func fullExampleParses() throws {
        let configuration = try GatewayConfiguration.parse(json: Array(try Self.exampleConfiguration().utf8))
        #expect(configuration.apns.keys.first?.teamID == "TEAM123456")
        #expect(configuration.apns.keys.first?.environment == .production)
        #expect(configuration.apns.bundleIDs == ["com.example.app"])
        #expect(configuration.apns.maxTokenHexLength == 200)
        #expect(configuration.apns.maxConcurrentStreams == 500)
        #expect(configuration.apns.environment == .development)
        #expect(configuration.fcm.projectNumber == "1234567890")
        #expect(configuration.fcm.serviceAccounts.first?.privateKeyID == "abc")
        #expect(configuration.fcm.accessTokenLifetimeSeconds == 1800)
        #expect(configuration.tokens.unknownTokens == .refuse)
        #expect(configuration.tokens.gone.map(\.token) == ["gone1", "gone2"])
        #expect(configuration.tokens.gone.last?.sinceMillis == 1_700_000_000_000)
        #expect(configuration.faults.seed == 42)
        #expect(configuration.faults.maxConcurrentStreams == 250)
        #expect(configuration.faults.routes[.apns]?.errorRates == [429: 0.01, 500: 0.001, 503: 0.002])
        #expect(configuration.faults.routes[.apns]?.goAwayAfterStreams == 1000)
        #expect(configuration.faults.routes[.fcm]?.latency == .normal(meanMilliseconds: 20, standardDeviationMilliseconds: 5))
        let gateway = try MockGateway(configuration: configuration)
        #expect(gateway.apnsTokenAuthEnabled)
        #expect(gateway.fcmAuthEnabled)
        #expect(gateway.configuredMaxConcurrentStreams == 250)
        #expect(gateway.tokens.state(of: "unknown") == .bad)
        #expect(gateway.tokens.state(of: deviceToken) == .valid)
    }

    @Test func emptyObjectIsZeroConfig() throws {
        let configuration = try GatewayConfiguration.parse(json: Array("{}".utf8))
        let gateway = try MockGateway(configuration: configuration)
        #expect(!gateway.apnsTokenAuthEnabled)
        #expect(!gateway.fcmAuthEnabled)
        #expect(gateway.initialMaxConcurrentStreams() == 1000)
    }

    @Test(arguments: [
        (#"{"apns":{"keyz":[]}}"#, "apns.keyz"),
        (#"{"apns":{"keys":[{"team_id":"T","public_key_pem":"x"}]}}"#, "apns.keys[0].key_id"),
        (#"{"apns":{"keys":[{"key_id":"K","team_id":"T"}]}}"#, "apns.keys[0]"),
        (#"{"apns":{"token_hex_length":"64"}}"#, "apns.token_hex_length"),
        (#"{"apns":{"token_hex_length":64,"max_token_hex_length":32}}"#, "apns.max_token_hex_length"),
        (#"{"apns":{"environment":"staging"}}"#, "apns.environment"),
        (#"{"fcm":{"service_accounts":[{"client_email":"a","private_key_id":"b"}]}}"#, "fcm.service_accounts[0]"),
        (#"{"fcm":{"service_accounts":[{"client_email":"a","private_key_id":"b","public_key_pem":"x","send_to_projects":"p"}]}}"#,
         "fcm.service_accounts[0].send_to_projects"),
        (#"{"tokens":{"default":"maybe"}}"#, "tokens.default"),
        (#"{"tokens":{"gone":[5]}}"#, "tokens.gone[0]"),
        (#"{"faults":{"apns":{"error_rates":{"404":0.1}}}}"#, "faults.apns.error_rates.404"),
        (#"{"faults":{"apns":{"error_rates":{"503":1.5}}}}"#, "faults.apns.error_rates.503"),
        (#"{"faults":{"fcm":{"latency":{"distribution":{"kind":"pareto","mean_ms":1}}}}}"#, "faults.fcm.latency.distribution.kind"),
        (#"{"faults":{"fcm":{"latency":{"distribution":{"kind":"uniform","min_ms":5,"max_ms":1}}}}}"#, "faults.fcm.latency.distribution.max_ms"),
        (#"{"faults":{"apns":{"reset_rate":-1}}}"#, "faults.apns.reset_rate"),
        (#"[1]"#, ""),
        (#"{"apns":{},"apns":{}}"#, ""),
    ])
    func errorsNameTheKeyPath(json: String, keyPath: String) {
        #expect {
            _ = try GatewayConfiguration.parse(json: Array(json.utf8))
        } throws: { error in
            (error as? GatewayConfigurationError)?.keyPath == keyPath
        }
    }

    @Test func unreadableKeyIsAConfigurationError() {
        var configuration = GatewayConfiguration()
        configuration.apns.keys = [.init(keyID: "K", teamID: "T", publicKeyPEM: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----")]
        #expect {
            _ = try MockGateway(configuration: configuration)
        } throws: { error in
            (error as? GatewayConfigurationError)?.keyPath == "apns.keys[0].public_key_pem"
        }
    }

    @Test func keyFilesResolveAgainstTheConfigDirectory() throws {
        let directory = NSTemporaryDirectory() + "pushproof-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try TestKeys.apnsKey.publicKey.spkiPEM.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        let generated = try GoogleServiceAccount.generate(projectID: "demo-project", clientEmail: serviceAccountEmail,
                                                          tokenURI: "https://127.0.0.1/token")
        try generated.json.write(toFile: directory + "/sa.json", atomically: true, encoding: .utf8)
        let text = #"{"apns":{"keys":[{"key_id":"K","team_id":"T","public_key_file":"key.pem"}]},"fcm":{"service_accounts":[{"service_account_file":"sa.json"}]}}"#
        try text.write(toFile: directory + "/gateway.json", atomically: true, encoding: .utf8)
        let configuration = try GatewayConfiguration.load(path: directory + "/gateway.json")
        #expect(configuration.apns.keys.first?.publicKeyPEM.contains("BEGIN PUBLIC KEY") == true)
        #expect(configuration.fcm.serviceAccounts.first?.clientEmail == serviceAccountEmail)
        #expect(configuration.fcm.serviceAccounts.first?.privateKeyID == generated.account.privateKeyID)
        // the private key from the file verifies the account's assertions
        let h = try Harness(configuration)
        let assertion = try generated.account.assertion(scopes: ["https://www.googleapis.com/auth/firebase.messaging"],
                                                        audience: "https://oauth2.googleapis.com/token", issuedAt: Int(h.clock.nowSeconds))
        #expect(OAuthTests.token(h, body: OAuthTests.form(assertion)).status == 200)
        #expect {
            _ = try GatewayConfiguration.load(path: directory + "/missing.json")
        } throws: { error in (error as? GatewayConfigurationError) != nil }
    }
}

@Suite struct FaultTests {
    static func harness(_ faults: RouteFaults, route: GatewayRoute = .apns, seed: UInt64 = 7) throws -> Harness {
        var configuration = GatewayConfiguration()
        configuration.faults = FaultConfiguration(seed: seed, routes: [route: faults])
        return try Harness(configuration)
    }

    @Test func errorRatesAreObservedWithinTolerance() throws {
        let h = try Self.harness(RouteFaults(errorRates: [429: 0.05, 500: 0.02, 503: 0.10], retryAfterSeconds: 17))
        let n = 20_000
        var counts: [Int: Int] = [:]
        for _ in 0..<n {
            let response = h.push()
            counts[response.status, default: 0] += 1
            if response.status == 429 || response.status == 503 { #expect(header(response, "retry-after") == "17") }
        }
        // binomial: 5 standard deviations either side
        for (status, rate) in [(429, 0.05), (500, 0.02), (503, 0.10)] {
            let expected = Double(n) * rate, sd = (Double(n) * rate * (1 - rate)).squareRoot()
            let observed = Double(counts[status] ?? 0)
            #expect(abs(observed - expected) < 5 * sd, "\(status): \(observed) vs \(expected)")
        }
        let tooMany = h.observer.exchanges.first { $0.response.status == 429 }
        #expect(tooMany?.reason == "TooManyRequests")
        #expect(tooMany?.fault == "status:429")
        #expect(h.observer.exchanges.first { $0.response.status == 503 }?.reason == "ServiceUnavailable")
        #expect(h.observer.exchanges.first { $0.response.status == 500 }?.reason == "InternalServerError")
    }

    @Test func sameSeedSameFaults() throws {
        let plan = RouteFaults(errorRates: [503: 0.2], resetRate: 0.05)
        let a = try Self.harness(plan, seed: 99), b = try Self.harness(plan, seed: 99), c = try Self.harness(plan, seed: 100)
        let runA = (0..<500).map { _ in a.push().status }
        let runB = (0..<500).map { _ in b.push().status }
        let runC = (0..<500).map { _ in c.push().status }
        #expect(runA == runB)
        #expect(runA != runC)
    }

    @Test func resetsAndClosesReplaceTheAnswer() throws {
        let h = try Self.harness(RouteFaults(resetRate: 0.3, closeRate: 0.1))
        let n = 5000
        var resets = 0, closes = 0
        for _ in 0..<n {
            let response = h.push()
            if response.actions.contains(.resetStream(errorCode: HTTP2ErrorCode.refusedStream)) { resets += 1 }
            if response.actions.contains(.closeConnection) { closes += 1 }
        }
        // close is rolled first (10%), reset on the rest (30% of 90%)
        #expect(abs(Double(closes) - 500) < 5 * (5000 * 0.1 * 0.9).squareRoot())
        #expect(abs(Double(resets) - 1350) < 5 * (5000 * 0.27 * 0.73).squareRoot())
        #expect(h.observer.exchanges.filter { $0.fault == "reset" }.count == resets)
    }

    @Test func goAwayAfterNStreamsPerConnection() throws {
        let h = try Self.harness(RouteFaults(goAwayAfterStreams: 3))
        let actions = (0..<5).map { _ in h.push().actions }
        let goAway = ConnectionAction.goAway(errorCode: HTTP2ErrorCode.noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        #expect(actions.map { $0.contains(goAway) } == [false, false, true, false, false])
        h.newConnection()
        #expect((0..<3).map { _ in h.push().actions.contains(goAway) } == [false, false, true])
    }

    @Test func latencyDistributions() throws {
        let fixed = try Self.harness(RouteFaults(latency: .fixed(milliseconds: 12)))
        #expect(fixed.push().delayNanos == 12_000_000)
        #expect(fixed.observer.last?.fault == "latency")

        let uniform = try Self.harness(RouteFaults(latency: .uniform(minMilliseconds: 10, maxMilliseconds: 20)))
        let samples = (0..<2000).map { _ in Double(uniform.push().delayNanos) / 1e6 }
        #expect(samples.allSatisfy { $0 >= 10 && $0 <= 20 })
        #expect(abs(samples.reduce(0, +) / 2000 - 15) < 0.5)

        let exponential = try Self.harness(RouteFaults(latency: .exponential(meanMilliseconds: 4)))
        let mean = (0..<4000).map { _ in Double(exponential.push().delayNanos) / 1e6 }.reduce(0, +) / 4000
        #expect(abs(mean - 4) < 0.4)

        let normal = try Self.harness(RouteFaults(latency: .normal(meanMilliseconds: 50, standardDeviationMilliseconds: 5)))
        let normalSamples = (0..<4000).map { _ in Double(normal.push().delayNanos) / 1e6 }
        let normalMean = normalSamples.reduce(0, +) / 4000
        let variance = normalSamples.map { ($0 - normalMean) * ($0 - normalMean) }.reduce(0, +) / 4000
        #expect(abs(normalMean - 50) < 0.5)
        #expect(abs(variance.squareRoot() - 5) < 0.5)
    }

    @Test func faultsAreChangeableAtRuntimeAndPerRoute() throws {
        let h = try Harness()
        #expect(h.push().status == 200)
        h.gateway.faults.setFaults(RouteFaults(errorRates: [503: 1]), for: .apns)
        #expect(h.push().status == 503)
        // FCM is untouched
        #expect(h.fcmMessage(#"{"topic":"a"}"#).status == 200)
        h.gateway.faults.setFaults(RouteFaults(errorRates: [429: 1], retryAfterSeconds: 60), for: .fcm)
        let quota = h.fcmMessage(#"{"topic":"a"}"#)
        #expect(quota.status == 429)
        #expect(GoogleErrorBody(quota).fcmErrorCode == "QUOTA_EXCEEDED")
        #expect(GoogleErrorBody(quota).status == "RESOURCE_EXHAUSTED")
        #expect(header(quota, "retry-after") == "60")
        h.gateway.faults.clearAll()
        #expect(h.push().status == 200)
        #expect(h.fcmMessage(#"{"topic":"a"}"#).status == 200)
    }

    @Test func everyAnswerIsObserved() throws {
        let h = try Self.harness(RouteFaults(errorRates: [500: 0.3], resetRate: 0.1))
        for _ in 0..<100 { h.push() }
        h.fcmMessage(#"{"topic":"a"}"#)
        h.send(path: "/nowhere", headers: [], body: [], version: .http1_1)
        #expect(h.observer.exchanges.count == 102)
        #expect(h.observer.last?.route == .unknown)
        #expect(h.observer.last?.response.status == 404)
        #expect(h.gateway.answeredCount == 102)
    }
}

@Suite struct DeviceTokenRegistryTests {
    @Test func holdsManyTokens() {
        let registry = DeviceTokenRegistry(unknownTokens: .refuse)
        let tokens = (0..<100_000).map { String(format: "%064x", $0) }
        registry.set(tokens, to: .valid)
        #expect(registry.count == 100_000)
        #expect(registry.state(of: tokens[99_999]) == .valid)
        #expect(registry.state(of: tokens[99_999].uppercased()) == .valid)
        #expect(registry.state(of: "nope") == .bad)
        #expect(registry.recordedState(of: "nope") == nil)
        registry.set(tokens[0], to: .gone(sinceMillis: 5))
        #expect(registry.counts().gone == 1)
        registry.reset()
        #expect(registry.count == 0)
    }

    @Test func fcmTokensKeepTheirCase() {
        let registry = DeviceTokenRegistry()
        registry.set("AbC:xyz", to: .bad)
        #expect(registry.state(of: "AbC:xyz") == .bad)
        #expect(registry.state(of: "abc:xyz") == .valid)
    }
}

@Suite struct RoutingAndRobustnessTests {
    @Test func routes() {
        func route(_ path: String, _ headers: [HTTPHeader] = [], _ version: HTTPVersion = .http2) -> GatewayRoute {
            MockGateway.route(of: HTTPRequest(method: "POST", path: path, headers: HTTPFields(headers), version: version))
        }
        #expect(route("/3/device/abc") == .apns)
        #expect(route("/v1/projects/p/messages:send") == .fcm)
        #expect(route("/token") == .oauth)
        #expect(route("/token?x=1") == .oauth)
        #expect(route("/metrics") == .unknown)
        #expect(route("/metrics", [HTTPHeader("apns-topic", "x")]) == .apns)
        #expect(route("/metrics", [HTTPHeader("apns-topic", "x")], .http1_1) == .unknown)
    }

    @Test func unknownPathOnAPNSLookingRequestIsBadPath() throws {
        let h = try Harness()
        let response = h.send(path: "/4/device/x", headers: [HTTPHeader("apns-topic", "com.example.app")], body: [])
        #expect(response.status == 404)
        #expect(reason(response) == "BadPath")
    }

    @Test func injectedAPNsErrorsEchoTheApnsID() throws {
        let h = try FaultTests.harness(RouteFaults(errorRates: [503: 1]))
        let response = h.push(headers: ["apns-id": validAPNSID])
        #expect(response.status == 503)
        #expect(header(response, "apns-id") == validAPNSID)
        #expect(reason(response) == "ServiceUnavailable")
    }

    @Test func fcmWarnsAboutMissingJSONContentType() throws {
        let h = try Harness()
        let response = h.send(path: "/v1/projects/p/messages:send",
                              headers: [HTTPHeader("authorization", "Bearer x"), HTTPHeader("content-type", "text/plain")],
                              body: Array(#"{"message":{"topic":"a"}}"#.utf8))
        #expect(response.status == 200)
        let warnings = h.observer.last?.verdict?.gatewayWarnings ?? []
        #expect(warnings.count == 1)
    }

    /// Random JSON documents in every FCM and APNs field position never crash the gateway and
    /// always get a well-formed answer.
    @Test func randomStructuredBodiesNeverCrash() throws {
        let h = try Harness()
        var seed: UInt64 = 12345
        func next(_ n: UInt64) -> Int { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return Int((seed >> 33) % n) }
        let keys = ["message", "token", "topic", "data", "android", "ttl", "priority", "notification", "title", "apns",
                    "payload", "aps", "validate_only", "fcm_options", "light_settings", "color", "vibrate_timings", "x"]
        func value(_ depth: Int) -> JSONValue {
            switch next(depth > 3 ? 5 : 7) {
            case 0: return .null
            case 1: return .bool(next(2) == 0)
            case 2: return .number(Double(next(1000)) - 500)
            case 3: return .string(["", "high", "60s", "a", "2419200s", "/topics/x"][next(6)])
            case 4: return .string(String(repeating: "z", count: next(50)))
            case 5: return .array((0..<next(3)).map { _ in value(depth + 1) })
            default: return .object(JSONObject((0..<next(4)).map { _ in (key: keys[next(UInt64(keys.count))], value: value(depth + 1)) }))
            }
        }
        for i in 0..<500 {
            let body = value(0).bytes()
            let response = i % 2 == 0
                ? h.send(path: "/v1/projects/p/messages:send", headers: [HTTPHeader("authorization", "Bearer x")], body: body)
                : h.send(path: "/3/device/\(deviceToken)", headers: [HTTPHeader("apns-topic", "com.example.app"),
                                                                  HTTPHeader("authorization", zeroConfigAuthorization)], body: body)
            #expect([200, 400, 404, 413].contains(response.status))
            if response.status != 200 { #expect(json(response) != nil) }
        }
    }
}

@Suite struct ThrottleTests {
    @Test func apnsDeviceRateLimitIsTooManyRequests() throws {
        var configuration = GatewayConfiguration()
        configuration.apns.deviceRateLimit = RateLimit(maximum: 3, perSeconds: 1)
        let h = try Harness(configuration)
        #expect((0..<3).map { _ in h.push().status } == [200, 200, 200])
        let limited = h.push()
        #expect(limited.status == 429)
        #expect(reason(limited) == "TooManyRequests")
        // another device is not affected
        #expect(h.push(token: String(repeating: "0", count: 64)).status == 200)
        h.clock.advance(seconds: 1)
        #expect(h.push().status == 200)
    }

    @Test func fcmProjectQuota() throws {
        var configuration = GatewayConfiguration()
        configuration.fcm.quotaPerMinute = 5
        let h = try Harness(configuration)
        // client errors count against the quota too
        #expect(h.fcmMessage(#"{"bogus":1}"#).status == 400)
        #expect((0..<4).map { _ in h.fcmMessage(#"{"topic":"a"}"#).status } == [200, 200, 200, 200])
        let limited = h.fcmMessage(#"{"topic":"a"}"#)
        #expect(limited.status == 429)
        let error = GoogleErrorBody(limited)
        #expect(error.fcmErrorCode == "QUOTA_EXCEEDED")
        #expect(error.status == "RESOURCE_EXHAUSTED")
        #expect(Int(header(limited, "retry-after") ?? "") == 12) // one message refills in 60/5 s
        h.clock.advance(seconds: 12)
        #expect(h.fcmMessage(#"{"topic":"a"}"#).status == 200)
    }

    @Test func fcmDeviceRateLimit() throws {
        var configuration = GatewayConfiguration()
        configuration.fcm.deviceRateLimit = RateLimit(maximum: 2, perSeconds: 60)
        let h = try Harness(configuration)
        let message = #"{"token":"\#(fcmToken)"}"#
        let statuses: [Int] = [h.fcmMessage(message).status, h.fcmMessage(message).status]
        #expect(statuses == [200, 200])
        let limited = h.fcmMessage(message)
        #expect(limited.status == 429)
        #expect(GoogleErrorBody(limited).fcmErrorCode == "QUOTA_EXCEEDED")
        #expect(h.fcmMessage(#"{"topic":"a"}"#).status == 200)
    }

    @Test func expiredTokens() throws {
        let expiredAPNs = String(repeating: "ee", count: 32)
        let configuration = try GatewayConfiguration.parse(json: Array("""
            {"tokens": {"expired": [{"token": "\(expiredAPNs)", "since_ms": 77}, "fcm_expired"]},
             "apns": {"device_rate_limit": {"max": 5, "per_seconds": 2}},
             "fcm": {"quota_per_minute": 600000, "device_rate_limit": {"max": 240, "per_seconds": 60}}}
            """.utf8))
        #expect(configuration.apns.deviceRateLimit == RateLimit(maximum: 5, perSeconds: 2))
        #expect(configuration.fcm.quotaPerMinute == 600_000)
        #expect(configuration.fcm.deviceRateLimit == RateLimit(maximum: 240, perSeconds: 60))
        let h = try Harness(configuration)
        let response = h.push(token: expiredAPNs)
        #expect(response.status == 410)
        #expect(reason(response) == "ExpiredToken")
        #expect(json(response)?["timestamp"] == 77)
        #expect(GoogleErrorBody(h.fcmMessage(#"{"token":"fcm_expired"}"#)).fcmErrorCode == "UNREGISTERED")
        #expect {
            _ = try GatewayConfiguration.parse(json: Array(#"{"apns":{"device_rate_limit":{"max":0,"per_seconds":1}}}"#.utf8))
        } throws: { ($0 as? GatewayConfigurationError)?.keyPath == "apns.device_rate_limit.max" }
    }
}
