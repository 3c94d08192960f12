// The gateway's configuration file. Cold path: Foundation is used to read key files.
import Crypto
import Foundation
import JSON
import PushModel

extension GatewayConfiguration {
    /// Reads a configuration file; relative key file paths resolve against its directory.
    public static func load(path: String) throws(GatewayConfigurationError) -> GatewayConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw GatewayConfigurationError(keyPath: "", problem: "cannot read configuration file \(path)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        return try parse(json: [UInt8](data), baseDirectory: directory.isEmpty ? "." : directory)
    }

    /// Parses configuration JSON. `baseDirectory` resolves relative `*_file` keys.
    public static func parse(json: [UInt8], baseDirectory: String = ".") throws(GatewayConfigurationError) -> GatewayConfiguration {
        let document: JSONValue
        do {
            document = try JSONParser.parse(json, options: .init(duplicateKeys: .reject))
        } catch {
            throw GatewayConfigurationError(keyPath: "", problem: "not valid JSON: \(error)")
        }
        var reader = ConfigReader(baseDirectory: baseDirectory)
        return try reader.configuration(document)
    }
}

/// Walks the configuration document with ``JSONFields``, which keeps the key path for error
/// messages; this adds what only the configuration has (key files, rate limits, faults).
struct ConfigReader {
    let baseDirectory: String

    func fail(_ path: String, _ problem: String) -> GatewayConfigurationError {
        GatewayConfigurationError(keyPath: path, problem: problem)
    }

    /// A gone or expired token's `since_ms`: whole milliseconds since 1970, not negative. Shared
    /// by the configuration file and the control API's `PUT /tokens/<t>`.
    func sinceMillis(_ o: JSONFields) throws(GatewayConfigurationError) -> UInt64? {
        try o.int("since_ms", range: 0...Int(Int64.max)).map { UInt64($0) }
    }

    func rateLimit(_ o: JSONFields, _ key: String) throws(GatewayConfigurationError) -> RateLimit? {
        guard let limit = try o.object(key, allowed: ["max", "per_seconds"]) else { return nil }
        guard let maximum = try limit.int("max", range: 1...Int(Int32.max)) else {
            throw limit.fail("max", "required (a positive integer)")
        }
        guard let seconds = try limit.number("per_seconds", range: 0.001...86_400) else {
            throw limit.fail("per_seconds", "required (seconds, a positive number)")
        }
        return RateLimit(maximum: maximum, perSeconds: seconds)
    }

    func readFile(_ file: String, _ path: String) throws(GatewayConfigurationError) -> String {
        let full = file.hasPrefix("/") ? file : baseDirectory + "/" + file
        guard let data = FileManager.default.contents(atPath: full) else { throw fail(path, "cannot read file \(full)") }
        return String(decoding: data, as: UTF8.self)
    }

    mutating func configuration(_ document: JSONValue) throws(GatewayConfigurationError) -> GatewayConfiguration {
        let root = try JSONFields(document, allowed: ["apns", "fcm", "tokens", "faults", "answer_rules"])
        var configuration = GatewayConfiguration()
        if let apns = root.object["apns"] { configuration.apns = try apnsConfiguration(apns, "apns") }
        if let fcm = root.object["fcm"] { configuration.fcm = try fcmConfiguration(fcm, "fcm") }
        if let tokens = root.object["tokens"] { configuration.tokens = try tokenConfiguration(tokens, "tokens") }
        if let faults = root.object["faults"] { configuration.faults = try faultConfiguration(faults, "faults") }
        if let rules = root.value("answer_rules") { configuration.answerRules = try answerRules(rules, "answer_rules") }
        return configuration
    }

    func environment(_ o: JSONFields, _ key: String) throws(GatewayConfigurationError) -> APNSEnvironment? {
        guard let text = try o.string(key) else { return nil }
        switch text {
        case "production": return .production
        case "development", "sandbox": return .development
        default: throw o.fail(key, "expected \"production\" or \"development\", found \"\(text)\"")
        }
    }

    func apnsConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> APNSConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["keys", "bundle_ids", "token_hex_length", "max_token_hex_length",
                                                            "max_concurrent_streams", "environment", "accept_der_signatures",
                                                            "device_rate_limit", "certificate_authorities"])
        var keys: [APNSConfiguration.SigningKey] = []
        for k in try o.objects("keys", allowed: ["key_id", "team_id", "public_key_pem", "public_key_file", "environment"]) {
            let keyID = try k.requiredString("key_id")
            let teamID = try k.requiredString("team_id")
            let pem: String
            if let inline = try k.string("public_key_pem") {
                pem = inline
            } else if let file = try k.string("public_key_file") {
                pem = try readFile(file, k.path("public_key_file"))
            } else {
                throw fail(k.path, "needs public_key_pem or public_key_file")
            }
            if keys.contains(where: { $0.keyID == keyID }) { throw k.fail("key_id", "duplicate key id \(keyID)") }
            keys.append(.init(keyID: keyID, teamID: teamID, publicKeyPEM: pem, environment: try environment(k, "environment")))
        }
        // Present (even null) means a list: `"bundle_ids": null` allows no bundle, as before.
        let bundles = o.object["bundle_ids"] == nil ? nil : Set(try o.strings("bundle_ids") ?? [])
        let minLength = try o.int("token_hex_length", range: 8...1024) ?? 64
        let maxLength = try o.int("max_token_hex_length", range: 8...1024) ?? minLength
        guard maxLength >= minLength else {
            throw o.fail("max_token_hex_length", "must not be less than token_hex_length (\(minLength))")
        }
        let streams = try o.int("max_concurrent_streams", range: 1...Int(Int32.max)) ?? 1000
        return APNSConfiguration(keys: keys, bundleIDs: bundles, tokenHexLength: minLength, maxTokenHexLength: maxLength,
                                 maxConcurrentStreams: UInt32(streams),
                                 environment: try environment(o, "environment") ?? .production,
                                 acceptDERSignatures: try o.bool("accept_der_signatures") ?? false,
                                 deviceRateLimit: try rateLimit(o, "device_rate_limit"),
                                 certificateAuthorities: try certificateAuthorities(o))
    }

    func certificateAuthorities(_ o: JSONFields) throws(GatewayConfigurationError) -> ProviderCertificateAuthorities? {
        guard o.object["certificate_authorities"] != nil else { return nil }
        var pems: [String] = []
        for item in try o.objects("certificate_authorities", allowed: ["pem", "file"]) {
            if let inline = try item.string("pem") {
                pems.append(inline)
            } else if let file = try item.string("file") {
                pems.append(try readFile(file, item.path("file")))
            } else {
                throw fail(item.path, "needs pem or file")
            }
        }
        guard !pems.isEmpty else { throw o.fail("certificate_authorities", "lists no authority; leave it out to turn certificate auth off") }
        do {
            return try ProviderCertificateAuthorities(pems: pems)
        } catch {
            throw o.fail("certificate_authorities", "\(error)")
        }
    }

    func fcmConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> FCMConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["project_id", "project_number", "token_url", "service_accounts",
                                                            "access_token_lifetime_seconds", "quota_per_minute", "device_rate_limit"])
        var accounts: [FCMConfiguration.ServiceAccount] = []
        for a in try o.objects("service_accounts", allowed: ["client_email", "private_key_id", "public_key_pem",
                                                             "private_key_pem", "service_account_file", "send_to_projects"]) {
            var email = try a.string("client_email")
            var keyID = try a.string("private_key_id")
            var pem = try a.string("public_key_pem")
            if pem == nil { pem = try a.string("private_key_pem") }
            if let file = try a.string("service_account_file") {
                let filePath = a.path("service_account_file")
                let text = try readFile(file, filePath)
                guard case .object(let sa)? = try? JSONParser.parse(text) else {
                    throw fail(filePath, "\(file) is not a service-account JSON object")
                }
                email = email ?? sa["client_email"]?.stringValue
                keyID = keyID ?? sa["private_key_id"]?.stringValue
                pem = pem ?? sa["private_key"]?.stringValue
            }
            guard let email, !email.isEmpty else { throw a.fail("client_email", "required (a non-empty string)") }
            guard let keyID, !keyID.isEmpty else { throw a.fail("private_key_id", "required (a non-empty string)") }
            guard let pem, !pem.isEmpty else {
                throw fail(a.path, "needs public_key_pem, private_key_pem or service_account_file")
            }
            accounts.append(.init(clientEmail: email, privateKeyID: keyID, keyPEM: pem,
                                  grantedProjects: try a.strings("send_to_projects") ?? []))
        }
        let lifetime = try o.int("access_token_lifetime_seconds", range: 1...86_400) ?? 3600
        return FCMConfiguration(projectID: try o.string("project_id"), projectNumber: try o.string("project_number"),
                                serviceAccounts: accounts, tokenURL: try o.string("token_url"),
                                accessTokenLifetimeSeconds: lifetime,
                                quotaPerMinute: try o.int("quota_per_minute", range: 1...Int(Int32.max)),
                                deviceRateLimit: try rateLimit(o, "device_rate_limit"))
    }

    func tokenConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> TokenConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["default", "valid", "gone", "expired", "bad", "other_sender"])
        var policy = UnknownTokenPolicy.accept
        if let text = try o.string("default") {
            guard let p = UnknownTokenPolicy(rawValue: text) else {
                throw o.fail("default", "expected \"valid\" or \"refuse\", found \"\(text)\"")
            }
            policy = p
        }
        func datedTokens(_ key: String) throws(GatewayConfigurationError) -> [(token: String, sinceMillis: UInt64?)] {
            var tokens: [(token: String, sinceMillis: UInt64?)] = []
            for (i, element) in (try o.array(key) ?? []).enumerated() {
                let elementPath = o.path(key, i)
                switch element {
                case .string(let token) where !token.isEmpty:
                    tokens.append((token, nil))
                case .object:
                    let g = try JSONFields(element, path: elementPath, allowed: ["token", "since_ms"])
                    let since = try sinceMillis(g)
                    tokens.append((try g.requiredString("token"), since))
                default:
                    throw fail(elementPath, "expected a token string or {\"token\", \"since_ms\"}")
                }
            }
            return tokens
        }
        let gone = try datedTokens("gone")
        let expired = try datedTokens("expired")
        return TokenConfiguration(unknownTokens: policy, valid: try o.strings("valid") ?? [], gone: gone,
                                  expired: expired, bad: try o.strings("bad") ?? [],
                                  otherSender: try o.strings("other_sender") ?? [])
    }

    func faultConfiguration(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> FaultConfiguration {
        let o = try JSONFields(value, path: path, allowed: ["seed", "max_concurrent_streams", "apns", "fcm", "oauth"])
        var faults = FaultConfiguration()
        if let seed = try o.int("seed", range: 0...Int.max) { faults.seed = UInt64(seed) }
        faults.maxConcurrentStreams = try o.int("max_concurrent_streams", range: 1...Int(Int32.max)).map { UInt32($0) }
        for route in [GatewayRoute.apns, .fcm, .oauth] {
            if let routeValue = o.object[route.rawValue] {
                faults.routes[route] = try routeFaults(routeValue, o.path(route.rawValue))
            }
        }
        return faults
    }

    func routeFaults(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> RouteFaults {
        let o = try JSONFields(value, path: path, allowed: ["latency", "error_rates", "retry_after_seconds", "goaway_after_streams",
                                                            "reset_rate", "close_rate"])
        var faults = RouteFaults()
        if let latency = o.value("latency") { faults.latency = try latencyDistribution(latency, o.path("latency")) }
        if let rates = o.value("error_rates") {
            let ratesPath = o.path("error_rates")
            guard case .object = rates else { throw fail(ratesPath, "expected an object like {\"503\": 0.01}") }
            let r = try JSONFields(rates, path: ratesPath)
            for (key, _) in r.object.entries {
                guard let status = Int(key), [429, 500, 503].contains(status) else {
                    throw r.fail(key, "status must be one of 429, 500, 503")
                }
                faults.errorRates[status] = try r.number(key, range: 0...1)
            }
            guard faults.errorRates.values.reduce(0, +) <= 1 else { throw fail(ratesPath, "rates add up to more than 1") }
        }
        faults.retryAfterSeconds = try o.int("retry_after_seconds", range: 0...86_400) ?? 30
        faults.goAwayAfterStreams = try o.int("goaway_after_streams", range: 1...Int(Int32.max))
        faults.resetRate = try o.number("reset_rate", range: 0...1) ?? 0
        faults.closeRate = try o.number("close_rate", range: 0...1) ?? 0
        return faults
    }

    func latencyDistribution(_ value: JSONValue, _ path: String) throws(GatewayConfigurationError) -> LatencyDistribution {
        let o = try JSONFields(value, path: path, allowed: ["fixed_ms", "distribution"])
        let limit = 600_000.0
        if let fixed = try o.number("fixed_ms", range: 0...limit) {
            guard o.object["distribution"] == nil else { throw fail(path, "give fixed_ms or distribution, not both") }
            return .fixed(milliseconds: fixed)
        }
        guard let d = o.object["distribution"] else { throw fail(path, "needs fixed_ms or distribution") }
        let dist = try JSONFields(d, path: o.path("distribution"), allowed: ["kind", "min_ms", "max_ms", "mean_ms", "stddev_ms"])
        func need(_ key: String) throws(GatewayConfigurationError) -> Double {
            guard let v = try dist.number(key, range: 0...limit) else { throw dist.fail(key, "required for this kind") }
            return v
        }
        switch try dist.requiredString("kind") {
        case "uniform":
            let low = try need("min_ms"), high = try need("max_ms")
            guard high >= low else { throw dist.fail("max_ms", "must not be less than min_ms") }
            return .uniform(minMilliseconds: low, maxMilliseconds: high)
        case "normal":
            return .normal(meanMilliseconds: try need("mean_ms"), standardDeviationMilliseconds: try need("stddev_ms"))
        case "exponential":
            return .exponential(meanMilliseconds: try need("mean_ms"))
        case let other:
            throw dist.fail("kind", "expected uniform, normal or exponential, found \"\(other)\"")
        }
    }
}
