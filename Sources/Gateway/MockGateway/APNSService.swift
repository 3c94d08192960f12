#if canImport(Glibc)
import RecordLine
import Glibc
#endif
import Clocks
import Crypto
import HTTPCore
import JSON
import PushModel

/// The answer a service decided, before faults and observers.
struct ServiceOutcome {
    var response: HTTPResponse
    /// APNs reason / FCM errorCode / OAuth error; nil on success.
    var reason: String?
    /// Things a real gateway would accept but a conformance run should see
    /// (e.g. a background push with an alert in `aps`). Reported in the exchange's verdict.
    var warnings: [GatewayNote] = []
    /// The request carried valid credentials (raises the stream limit).
    var authenticated = false
    /// The gateway's own explanation of the answer (why a credential was refused), for the
    /// record's `response.detail`; never sent to the client.
    var detail: String? = nil
    /// What kind of credential failure answered, for `pushproof_auth_failures_total`.
    var authFailure: AuthFailureKind? = nil
    /// The tape of the body the service read, when it was asked to keep it: the judge reads
    /// it instead of scanning the body again.
    var payloadTape: JSONTape? = nil
    /// The FCM message's `token`, once the service has read the body (the journal's `token=`);
    /// the APNs path's token (lowercase) once the request has passed every check before its own.
    var deviceToken: String? = nil
    /// The request passed every check before its device's own (the device's rate, its token's
    /// state): where the answer rules may answer instead (`MockGateway.answerByRules`).
    var reachedDevice = false
    /// The service parsed the request's body as JSON (at most `RecordLine.jsonBodyMaxDepth`
    /// deep): the record line holds it as `json` without checking it again.
    var bodyParsedAsJSON = false
}

/// `POST /3/device/{token}`: every rule of apns.md, answered as Apple answers.
///
/// Checks, in order (the first failing one answers):
/// 1. an `apns-*` or `authorization` header given twice: 400 DuplicateHeaders
/// 2. method other than POST: 405 MethodNotAllowed
/// 3. path: not `/3/device/...` 404 BadPath; no token 400 MissingDeviceToken; token not hex of
///    the configured length 400 BadDeviceToken
/// 4. `apns-id` not a canonical UUID: 400 BadMessageId (a valid one is echoed on every answer,
///    else one is generated)
/// 5. `apns-push-type` unknown: 400 InvalidPushType (absent: alert, as Apple assumes)
/// 6. `apns-topic` absent or empty: 400 MissingTopic; malformed or only a suffix: 400 BadTopic;
///    missing the suffix its push type needs (or carrying another type's suffix): 400
///    DeviceTokenNotForTopic (the device registered for `<bundle>.voip`, not `<bundle>`);
///    bundle not among the configured ones: 400 TopicDisallowed
/// 7. `apns-priority` not 10, 5 or 1, or not 5 on a background push: 400 BadPriority
/// 8. `apns-expiration` not an integer: 400 BadExpirationDate
/// 9. `apns-collapse-id` over 64 bytes: 400 BadCollapseId
/// 10. a client certificate (when certificate authorities are configured): not issued by one of
///     them, expired or not yet valid 403 BadCertificate; not for the gateway's environment 403
///     BadCertificateEnvironment; a topic it does not cover 400 TopicDisallowed. A trusted
///     certificate authenticates the request (without apns-topic, a certificate naming at most
///     one topic pushes to its subject). With no authorities configured (zero config) any
///     certificate authenticates, its issuer, validity and environment unchecked; one with a
///     UID (the bundle id) still covers only its topics.
///     Otherwise the provider token (when keys are configured): 403 MissingProviderToken,
///     InvalidProviderToken, BadEnvironmentKeyIdInToken, UnrelatedKeyIdInToken,
///     ExpiredProviderToken; 429 TooManyProviderTokenUpdates. With no keys configured (the
///     zero-config default) any `bearer <token>` passes; a header that is not a bearer token is
///     403 InvalidProviderToken, an empty one 403 MissingProviderToken. With neither a
///     certificate nor an `authorization` header: 403 MissingProviderToken, as Apple answers,
///     in zero config too. Each refusal carries the gateway's explanation (`detail`).
/// 11. payload: empty 400 PayloadEmpty; over 4096 bytes (5120 VoIP) 413 PayloadTooLarge; not a
///     JSON object: 400 PayloadEmpty (Apple documents no reason for a malformed payload;
///     "nothing deliverable" is the closest, and a warning names the cause). A missing or
///     malformed `aps` is only a warning: PushKit payloads (VoIP) carry none.
/// 12. pushes to one device token over `device_rate_limit` (when configured): 429 TooManyRequests
/// 13. the token's state: gone 410 Unregistered, expired 410 ExpiredToken (both with
///     `timestamp`); bad 400 BadDeviceToken; other_sender (a token of another app) 400
///     DeviceTokenNotForTopic
///
/// A background push whose `aps` holds anything but `content-available` is not rejected by
/// Apple (it is delivered or silently dropped), so it is accepted with a warning.
final class APNSService: Sendable {
    let configuration: APNSConfiguration
    let authority: APNSProviderTokenAuthority
    let registry: DeviceTokenRegistry
    let identifiers: IdentifierSource
    let clock: WallClock
    let deviceRateLimiter: RateLimiter?

    init(configuration: APNSConfiguration, authority: APNSProviderTokenAuthority, registry: DeviceTokenRegistry,
         identifiers: IdentifierSource, clock: WallClock) {
        self.deviceRateLimiter = configuration.deviceRateLimit.map(RateLimiter.init)
        self.configuration = configuration
        self.authority = authority
        self.registry = registry
        self.identifiers = identifiers
        self.clock = clock
    }

    /// The `apns-*` and `authorization` headers of one request, with duplicates noticed, read
    /// from the request's bytes: the values a rule compares or parses (push type, priority,
    /// expiration, collapse id) never become text; those the answer or a later rule needs as
    /// text (apns-id, topic, authorization) are made once, and the topic and the authorization
    /// are reused from the connection's previous request while they repeat (`RepeatedText`).
    struct Headers {
        var authorization: String?
        var id: String?
        /// `apns-push-type`: nil when absent; `.unknown` when not a push type APNs knows.
        var pushType: PushTypeField?
        var topic: String?
        /// `apns-priority` as Swift's `Int(_:)` reads it: nil absent, `.some(nil)` not an integer.
        var priority: Int??
        /// `apns-expiration` is present and not an integer.
        var expirationIsMalformed = false
        var collapseIDBytes: Int?
        var duplicate = false

        enum PushTypeField: Equatable {
            case known(APNSPushType)
            case unknown
        }

        private enum Field: UInt8 { case authorization, id, pushType, topic, priority, expiration, collapseID }

        /// The field a (lowercase) header name is, by its length first.
        private static func field(named name: UnsafeBufferPointer<UInt8>) -> Field? {
            switch name.count {
            case 7: bytesEqual(name, "apns-id") ? .id : nil
            case 10: bytesEqual(name, "apns-topic") ? .topic : nil
            case 13: bytesEqual(name, "authorization") ? .authorization : bytesEqual(name, "apns-priority") ? .priority : nil
            case 14: bytesEqual(name, "apns-push-type") ? .pushType : nil
            case 15: bytesEqual(name, "apns-expiration") ? .expiration : nil
            case 16: bytesEqual(name, "apns-collapse-id") ? .collapseID : nil
            default: nil
            }
        }

        /// Each push type's name as bytes, to read `apns-push-type` without making it text.
        private static let pushTypeNames: [(name: [UInt8], type: APNSPushType)] = APNSPushType.allCases.map { (Array($0.rawValue.utf8), $0) }

        private static func pushType(_ value: UnsafeBufferPointer<UInt8>) -> PushTypeField {
            for entry in pushTypeNames where entry.name.count == value.count {
                if entry.name.withUnsafeBufferPointer({ bytesEqual($0.baseAddress!, value.baseAddress!, count: value.count) }) {
                    return .known(entry.type)
                }
            }
            return .unknown
        }
    }

}

extension APNSService.Headers {
    /// Here, not in the type's body, so the type keeps its memberwise initializer, which this
    /// one calls with what it read: setting the members one by one built the value aside and
    /// copied it whole (a retain and a release of each String, perf).
    init(_ fields: HTTPFields, texts: inout APNSService.HeaderTexts) {
        var authorization: String?
        var id: String?
        var pushType: PushTypeField?
        var topic: String?
        var priority: Int??
        var expirationIsMalformed = false
        var collapseIDBytes: Int?
        var duplicate = false
        var seen: UInt8 = 0  // one bit a `Field`
        fields.withUnsafeFields { fields in
            for index in 0..<fields.count {
                let name = fields.name(at: index)
                guard let field = Self.field(named: name) else {
                    // Other apns-* headers (apns-unique-id, future ones) count too.
                    if fields.name(at: index, hasPrefix: "apns-"), fields.nameRepeatsEarlier(index) { duplicate = true }
                    continue
                }
                let bit: UInt8 = 1 << field.rawValue
                guard seen & bit == 0 else {
                    duplicate = true
                    continue
                }
                seen |= bit
                let value = fields.value(at: index)
                switch field {
                case .authorization: authorization = texts.authorization.string(value)
                case .id: id = String(decoding: value, as: UTF8.self)
                case .pushType: pushType = Self.pushType(value)
                case .topic: topic = texts.topic.string(value)
                case .priority: priority = .some(decimalInteger(value))
                case .expiration: expirationIsMalformed = !isInteger(value)
                case .collapseID: collapseIDBytes = value.count
                }
            }
        }
        self.init(authorization: authorization, id: id, pushType: pushType, topic: topic, priority: priority,
                  expirationIsMalformed: expirationIsMalformed, collapseIDBytes: collapseIDBytes, duplicate: duplicate)
    }
}

extension APNSService {
    /// The connection's previous topic and authorization, as text (`Headers`).
    struct HeaderTexts {
        var topic = RepeatedText()
        var authorization = RepeatedText()
    }

    /// `keepPayloadTape`: read the payload on a tape and return it in the outcome (someone
    /// downstream, the judge, reads the body too); otherwise only `aps` is built.
    func handle(_ request: HTTPRequest, connection: GatewayConnectionState, keepPayloadTape: Bool = false) -> ServiceOutcome {
        let headers = Headers(request.headers, texts: &connection.apnsHeaderTexts)
        let givenIDIsValid = headers.id.map(isCanonicalUUID) ?? true
        let apnsID = givenIDIsValid ? headers.id ?? identifiers.uuid() : identifiers.uuid()
        var warnings: [GatewayNote] = []
        if request.version == .http1_1 { warnings.append(.warning("APNs speaks HTTP/2 only; this request came over HTTP/1.1")) }
        var payloadTape: JSONTape?
        var checkedToken: String?  // set once every check before the token's own has passed
        var payloadIsJSON = false

        func reject(_ reason: APNSReason, timestamp: UInt64? = nil, authenticated: Bool = false,
                    because failure: AuthFailure? = nil) -> ServiceOutcome {
            ServiceOutcome(response: errorResponse(reason, apnsID: apnsID, timestamp: timestamp), reason: reason.rawValue,
                           warnings: warnings, authenticated: authenticated, detail: failure?.detail, authFailure: failure?.kind,
                           payloadTape: payloadTape, deviceToken: checkedToken, reachedDevice: checkedToken != nil,
                           bodyParsedAsJSON: payloadIsJSON)
        }

        if headers.duplicate { return reject(.duplicateHeaders) }
        guard request.method == "POST" else { return reject(.methodNotAllowed) }

        let token: String
        switch deviceToken(in: request.path) {
        case .rejected(let reason): return reject(reason)
        case .token(let t): token = t
        }

        if !givenIDIsValid { return reject(.badMessageId) }

        let pushType: APNSPushType
        switch headers.pushType {
        case .known(let known)?: pushType = known
        case .unknown?: return reject(.invalidPushType)
        case nil: pushType = .alert
        }

        let certificate: APNsProviderCertificate?
        switch connection.providerCertificate {
        case .trusted(let trusted)?, .unverified(let trusted?)?: certificate = trusted
        default: certificate = nil
        }
        var topic = headers.topic
        if topic?.isEmpty ?? true, let certificate, certificate.topics.count <= 1 {
            // Apple: without apns-topic, a certificate that names no more than one topic
            // pushes to its subject.
            topic = certificate.topics.first ?? certificate.bundleID
        }
        if let reason = checkTopic(topic, pushType: pushType) { return reject(reason) }

        if let given = headers.priority {
            guard let priority = given.flatMap(APNSPriority.init(rawValue:)) else { return reject(.badPriority) }
            if pushType == .background, priority != .powerConsiderate { return reject(.badPriority) }
        } else if pushType == .background {
            warnings.append(.warning("background push without apns-priority: Apple requires 5 (the default is 10)"))
        }

        if headers.expirationIsMalformed { return reject(.badExpirationDate) }
        if let length = headers.collapseIDBytes, length > 64 { return reject(.badCollapseId) }

        var authenticated = false
        var coveringCertificate: APNsProviderCertificate?
        switch connection.providerCertificate {
        case .refused(let reason, let failure)?:
            return reject(reason, because: failure)
        case .trusted(let certificate)?:
            coveringCertificate = certificate
        case .unverified(let certificate)?:
            // Zero config: any certificate authenticates; one shaped like Apple's still says
            // which topics it covers.
            coveringCertificate = certificate
        case .absent?, nil:
            let noCredential = request.isTLS
                ? "no authorization header and no client certificate on the connection"
                : "no authorization header (and no client certificate: the connection is cleartext)"
            if authority.isEnabled {
                switch authority.authenticate(headers.authorization, connection: connection) {
                case .failure(let rejection) where headers.authorization == nil:
                    return reject(rejection.reason, because: AuthFailure(rejection.failure.kind, noCredential))
                case .failure(let rejection): return reject(rejection.reason, because: rejection.failure)
                case .success(let verified):
                    if let warning = verified.issuedAtWarning { warnings.append(warning) }
                }
            } else if let authorization = headers.authorization {
                // Token auth off: any bearer token passes, but a header that is not a bearer
                // token is still wrong.
                let utf8 = Substring(authorization).utf8
                if !hasPrefixIgnoringASCIICase(utf8, "bearer ") {
                    if authorization.isEmpty {
                        return reject(.missingProviderToken, because: AuthFailure(.missing, "the authorization header is empty"))
                    }
                    return reject(.invalidProviderToken, because: AuthFailure(.malformed, "the authorization header is not \"bearer <token>\""))
                }
                if Self.holdsOnlySpaces(utf8.dropFirst(7)) ?? authorization.dropFirst(7).allSatisfy({ $0 == " " }) {
                    return reject(.missingProviderToken, because: AuthFailure(.missing, "the authorization header holds no token after bearer"))
                }
            } else {
                // Neither a certificate nor a token: Apple's answer, in zero config too.
                return reject(.missingProviderToken, because: AuthFailure(.missing, noCredential))
            }
        }
        if let certificate = coveringCertificate {
            // Certificate-based trust: the certificate, not a token, says what may be pushed.
            if let topic, !certificate.allows(topic: topic, bundle: bundle(ofTopic: topic, pushType: pushType)) {
                return reject(.topicDisallowed, because: AuthFailure(
                    .certificateTopic, "the client certificate (\(certificate.bundleID)) does not cover topic \(topic)"))
            }
        }
        authenticated = true

        let body = request.body
        if body.isEmpty { return reject(.payloadEmpty, authenticated: authenticated) }
        if body.count > pushType.maxPayloadBytes { return reject(.payloadTooLarge, authenticated: authenticated) }
        if keepPayloadTape {
            // At the payload check's depth limit: a tape that holds is what the judge would read.
            payloadTape = JSONParser.tape(body, options: .init(maxDepth: Self.payloadMaxDepth))
        }
        if let problem = payloadProblem(body, pushType: pushType, warnings: &warnings, tape: payloadTape) {
            warnings.append(.warning(problem))
            return reject(.payloadEmpty, authenticated: authenticated)
        }
        // An object, parsed no deeper than a record line's `json` may be.
        payloadIsJSON = Self.payloadMaxDepth <= RecordLine.jsonBodyMaxDepth

        checkedToken = token
        let state = registry.state(ofNormalized: token)
        if state == .valid, let limiter = deviceRateLimiter, limiter.take(token, nowNanos: clock.nowNanoseconds) != nil {
            return reject(.tooManyRequests, authenticated: authenticated)
        }
        switch state {
        case .valid: break
        case .bad: return reject(.badDeviceToken, authenticated: authenticated)
        case .gone(let since): return reject(.unregistered, timestamp: since, authenticated: authenticated)
        case .expired(let since): return reject(.expiredToken, timestamp: since, authenticated: authenticated)
        case .otherSender: return reject(.deviceTokenNotForTopic, authenticated: authenticated)
        }

        var responseHeaders = [HTTPHeader("apns-id", apnsID)]
        if configuration.environment == .development { responseHeaders.append(HTTPHeader("apns-unique-id", identifiers.uuid())) }
        return ServiceOutcome(response: HTTPResponse(status: 200, headers: responseHeaders), reason: nil,
                              warnings: warnings, authenticated: authenticated, payloadTape: payloadTape, deviceToken: token,
                              reachedDevice: true, bodyParsedAsJSON: payloadIsJSON)
    }

    /// Whether the bytes after an ASCII prefix are all spaces, as their Characters say: an ASCII
    /// byte other than a space settles it (no), a non-ASCII one before it leaves it to the
    /// Characters (nil: a combining mark joins the space before it into one Character).
    /// Over the Characters, a `dropFirst(7)` and its grapheme breaking were ~1% of a push (perf).
    private static func holdsOnlySpaces(_ bytes: Substring.UTF8View.SubSequence) -> Bool? {
        for b in bytes {
            if b >= 0x80 { return nil }
            if b != UInt8(ascii: " ") { return false }
        }
        return true
    }

    /// `{"reason":"…"}`, plus `timestamp` on a 410 (apns.md, Responses).
    func errorResponse(_ reason: APNSReason, apnsID: String, timestamp: UInt64? = nil, retryAfter: Int? = nil) -> HTTPResponse {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("reason")
        writer.string(reason.rawValue)
        if let timestamp {
            writer.key("timestamp")
            writer.uint(timestamp)
        }
        writer.endObject()
        var headers = [HTTPHeader("apns-id", apnsID), HTTPHeader("content-type", "application/json")]
        if let retryAfter { headers.append(HTTPHeader("retry-after", String(retryAfter))) }
        return HTTPResponse(status: reason.status, headers: headers, body: writer.bytes)
    }

    /// The device token of `/3/device/{token}`, lowercased.
    enum PathToken {
        case token(String)
        case rejected(APNSReason)
    }

    func deviceToken(in fullPath: String) -> PathToken {
        if let parsed = fullPath.utf8.withContiguousStorageIfAvailable({ deviceToken(inPath: $0) }) { return parsed }
        return Array(fullPath.utf8).withUnsafeBufferPointer { deviceToken(inPath: $0) }
    }

    private static let devicePrefix: StaticString = "/3/device"

    /// One pass over the path bytes: query cut, prefix, separator, hex digits, then a copy
    /// (lowercased only when an uppercase digit was seen: the registry's key for hex tokens).
    private func deviceToken(inPath bytes: UnsafeBufferPointer<UInt8>) -> PathToken {
        let prefix = Self.devicePrefix
        guard let base = bytes.baseAddress else { return .rejected(.badPath) }
        var end = bytes.count
        if let query = memchr(base, Int32(UInt8(ascii: "?")), bytes.count) { end = UnsafeRawPointer(query) - UnsafeRawPointer(base) }
        guard end >= prefix.utf8CodeUnitCount, memcmp(base, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0 else {
            return .rejected(.badPath)
        }
        var start = prefix.utf8CodeUnitCount
        if start == end { return .rejected(.missingDeviceToken) }
        guard base[start] == UInt8(ascii: "/") else { return .rejected(.badPath) }
        start += 1
        if start == end { return .rejected(.missingDeviceToken) }
        let classes = TokenBytes.classes(UnsafeBufferPointer(start: base + start, count: end - start))
        if classes & TokenBytes.slash != 0 { return .rejected(.badPath) }
        let allHex = classes & TokenBytes.other == 0
        let hasUpper = classes & TokenBytes.upperHex != 0
        let length = end - start
        guard allHex, length >= configuration.tokenHexLength, length <= configuration.maxTokenHexLength else {
            return .rejected(.badDeviceToken)
        }
        let token = UnsafeBufferPointer(start: base + start, count: length)
        guard hasUpper else { return .token(String(decoding: token, as: UTF8.self)) }
        return .token(String(unsafeUninitializedCapacity: length) { out in
            for i in 0..<length {
                let b = token[i]
                out[i] = b >= 0x41 && b <= 0x46 ? b + 0x20 : b
            }
            return length
        })
    }

    private static let suffixes: [(suffix: String, type: APNSPushType)] = APNSPushType.allCases
        .compactMap { type in type.requiredTopicSuffix.map { ($0, type) } }
        .sorted { $0.suffix.utf8.count > $1.suffix.utf8.count }

    /// The topic's rules, on its bytes (a `Substring` and `dropLast` a request were ~2% of the
    /// server's time, perf); the bundle becomes text only when bundle ids are configured.
    func checkTopic(_ topic: String?, pushType: APNSPushType) -> APNSReason? {
        guard let topic, !topic.isEmpty else { return .missingTopic }
        var contiguous = topic
        return contiguous.withUTF8 { bytes in checkTopic(bytes, topic: topic, pushType: pushType) }
    }

    private func checkTopic(_ bytes: UnsafeBufferPointer<UInt8>, topic: String, pushType: APNSPushType) -> APNSReason? {
        // A bundle id is letters, digits, '-' and '.'; MDM topics (com.apple.mgmt.…) also fit.
        guard bytes.allSatisfy({ b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_")
        }), bytes.first != UInt8(ascii: "."), bytes.last != UInt8(ascii: ".") else { return .badTopic }
        if pushType == .mdm { return nil }
        // The topic is ASCII from here: its first `bundleLength` bytes are the bundle.
        let bundleLength: Int
        if let required = pushType.requiredTopicSuffix {
            guard let length = Self.length(of: bytes, withoutSuffix: required) else { return .deviceTokenNotForTopic }
            if length == 0 { return .badTopic }
            bundleLength = length
        } else {
            // alert/background go to the bare bundle; a topic carrying a PushKit suffix names
            // a different topic than the one the device registered for.
            if let bundleIDs = configuration.bundleIDs, !bundleIDs.contains(topic),
               Self.suffixes.contains(where: { entry in
                   Self.length(of: bytes, withoutSuffix: entry.suffix).map { bundleIDs.contains(Self.text(bytes, prefix: $0)) } ?? false
               }) {
                return .deviceTokenNotForTopic
            }
            bundleLength = bytes.count
        }
        if let bundleIDs = configuration.bundleIDs,
           !bundleIDs.contains(bundleLength == bytes.count ? topic : Self.text(bytes, prefix: bundleLength)) {
            return .topicDisallowed
        }
        return nil
    }

    /// How many bytes `bytes` has before `suffix`, when it ends with it.
    private static func length(of bytes: UnsafeBufferPointer<UInt8>, withoutSuffix suffix: String) -> Int? {
        var suffix = suffix
        return suffix.withUTF8 { tail in
            guard bytes.count >= tail.count else { return nil }
            let start = bytes.count - tail.count
            return tail.isEmpty || memcmp(bytes.baseAddress! + start, tail.baseAddress!, tail.count) == 0 ? start : nil
        }
    }

    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, prefix length: Int) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[..<length]), as: UTF8.self)
    }

    /// The bundle a topic names: the topic without the suffix its push type adds.
    func bundle(ofTopic topic: String, pushType: APNSPushType) -> Substring {
        guard let suffix = pushType.requiredTopicSuffix, utf8HasSuffix(Substring(topic).utf8, suffix) else { return Substring(topic) }
        return Substring(Substring(topic).utf8.dropLast(suffix.utf8.count))
    }

    /// The top-level member `name` of an object tape, as a tree (`aps` is small).
    /// Read through buffer pointers: the checked array reads and the generic slice comparison
    /// were ~0.4% of a judged push, a ring's fourteen keys each (perf, `serve --specs`).
    static func member(_ name: StaticString, in tape: JSONTape) -> JSONValue? {
        let found = tape.entries.withUnsafeBufferPointer { entries -> Int? in
            tape.bytes.withUnsafeBufferPointer { bytes -> Int? in
                var key = 1
                for _ in 0..<entries[0].count {
                    let entry = entries[key]
                    // Keys on a tape carry no escapes: their bytes are their content.
                    if bytesEqual(UnsafeBufferPointer(rebasing: bytes[Int(entry.start)..<Int(entry.end)]), name) { return key + 1 }
                    key = Int(entries[key + 1].next)
                }
                return nil
            }
        }
        return found.map { tape.value(at: $0) }
    }


    /// Nesting limit of a payload: deeper is "not JSON".
    static let payloadMaxDepth = 64

    /// nil when the payload is a JSON object; else why not. Observations about `aps` go to
    /// `warnings`: APNs delivers an object without `aps` (PushKit payloads such as VoIP never
    /// carry one; an alert without `aps` simply shows nothing), so they are not rejections.
    /// `tape`: `JSONParser.tape(body, options: .init(maxDepth: payloadMaxDepth))`, when the
    /// caller has it; nil scans `body` here for `aps` alone.
    func payloadProblem(_ body: [UInt8], pushType: APNSPushType, warnings: inout [GatewayNote], tape: JSONTape? = nil) -> String? {
        let found: JSONValue?
        if let tape {
            // The tape holds a valid document within the depth limit, with no repeated key.
            guard tape.entries[0].kind == .object else { return "payload is a JSON \(tape.value(at: 0).typeName), not an object" }
            found = Self.member("aps", in: tape)
        } else {
            do {
                // Only `aps` is built: the rest of the payload is validated without a tree (perf:
                // the full parse was ~10% of a recorded request's time).
                switch try JSONParser.member("aps", ofTopLevelObjectIn: body, options: .init(maxDepth: Self.payloadMaxDepth)) {
                case .found(let value): found = value
                case .absent: found = nil
                case .notAnObject:
                    let document = try JSONParser.parse(body, options: .init(maxDepth: Self.payloadMaxDepth))
                    return "payload is a JSON \(document.typeName), not an object"
                }
            } catch {
                return "payload is not JSON: \(error)"
            }
        }
        let displaysFromAps = pushType == .alert || pushType == .background || pushType == .liveactivity
        guard let aps = found else {
            if displaysFromAps { warnings.append(.warning("\(pushType.rawValue) push without an \"aps\" dictionary: the device shows nothing")) }
            return nil
        }
        guard case .object(let apsObject) = aps else {
            warnings.append(.warning("\"aps\" is a \(aps.typeName), not a dictionary"))
            return nil
        }
        if pushType == .background {
            let extra = apsObject.keys.filter { $0 != "content-available" }
            if !extra.isEmpty {
                warnings.append(.warning("background push: aps holds \(extra.joined(separator: ", ")) besides content-available (Apple may not deliver it)"))
            }
            if apsObject["content-available"]?.intValue != 1 {
                warnings.append(.warning("background push without \"content-available\": 1"))
            }
        }
        return nil
    }
}
