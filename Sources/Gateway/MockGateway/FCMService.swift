import Clocks
import RecordLine
import HTTPCore
import JSON
import PushModel

/// `POST /v1/projects/{project}/messages:send`: FCM HTTP v1 as Google answers it (fcm.md).
///
/// Checks, in order: method POST (else 405); path (else 404 NOT_FOUND); `authorization: Bearer`
/// with an access token this gateway issued and that has not expired (when service accounts are
/// configured; else any non-empty bearer token) -> 401 UNAUTHENTICATED, and a token without a
/// messaging scope -> 403 PERMISSION_DENIED; the project in the path (when configured) -> 403
/// PERMISSION_DENIED; the project quota (`quota_per_minute`, counted before validation since
/// client errors count too) -> 429 QUOTA_EXCEEDED with Retry-After; the body: JSON (else 400 "Invalid JSON payload received. …"), only known
/// fields (snake_case or lowerCamelCase, as Google's JSON mapping accepts) with the right
/// types (400 with a google.rpc.BadRequest detail, no FcmError: these fail before FCM sees the
/// message), exactly one target (`token`, `topic`, `condition` or the newer `fid`), reserved data keys, `android.ttl` at most 4 weeks, the size
/// limit (4096 bytes, 2048 for topics) -> 400 INVALID_ARGUMENT with an FcmError detail; then
/// the per-token rate (`device_rate_limit`) -> 429 QUOTA_EXCEEDED; the token's state: gone or
/// expired -> 404 UNREGISTERED, bad -> 400 INVALID_ARGUMENT with
/// `fcmInvalidTokenMessage`, other_sender (the token belongs to another Firebase project) ->
/// 403 PERMISSION_DENIED "SenderId mismatch" with FcmError SENDER_ID_MISMATCH.
/// `validate_only` checks everything (the token included) and answers
/// `projects/{p}/messages/fake_message_id`.
///
/// Message texts: "Unknown name … Cannot find field.", "Invalid value at '…' (TYPE_STRING), …",
/// "Recipient of the message is not set.", "Requested entity was not found.", "SenderId
/// mismatch" and the authentication texts are Google's; the texts for reserved keys, ttl range, size and topic
/// names are this gateway's wording (Google's status and detail shape, not verified wording).
final class FCMService: Sendable {
    let configuration: FCMConfiguration
    let registry: DeviceTokenRegistry
    let store: AccessTokenStore
    let identifiers: IdentifierSource
    let clock: WallClock
    let authEnabled: Bool
    let projectQuota: RateLimiter?
    let deviceRateLimiter: RateLimiter?

    init(configuration: FCMConfiguration, registry: DeviceTokenRegistry, store: AccessTokenStore,
         identifiers: IdentifierSource, clock: WallClock) {
        self.projectQuota = configuration.quotaPerMinute.map { RateLimiter(RateLimit(maximum: $0, perSeconds: 60)) }
        self.deviceRateLimiter = configuration.deviceRateLimit.map(RateLimiter.init)
        self.configuration = configuration
        self.registry = registry
        self.store = store
        self.identifiers = identifiers
        self.clock = clock
        self.authEnabled = !configuration.serviceAccounts.isEmpty
    }

    static let maxTTLSeconds = 2_419_200
    /// Nesting limit of a message: deeper is "Invalid JSON payload received".
    static let bodyMaxDepth = 64
    static let missingCredentialMessage = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
    static let invalidCredentialMessage = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

    func handle(_ request: HTTPRequest, connection: GatewayConnectionState) -> ServiceOutcome {
        var warnings: [GatewayNote] = []
        var deviceToken: String?
        var reachedDevice = false
        var bodyIsJSON = false
        func fail(_ error: GoogleError, authenticated: Bool = false, because failure: AuthFailure? = nil) -> ServiceOutcome {
            ServiceOutcome(response: error.response, reason: error.reason, warnings: warnings, authenticated: authenticated,
                           detail: failure?.detail, authFailure: failure?.kind, deviceToken: deviceToken, reachedDevice: reachedDevice,
                           bodyParsedAsJSON: bodyIsJSON)
        }
        guard let project = Self.project(in: request.path) else {
            return fail(GoogleError(code: 404, status: "NOT_FOUND", message: "Requested entity was not found."))
        }
        guard request.method == "POST" else {
            return fail(GoogleError(code: 405, status: "METHOD_NOT_ALLOWED", message: "Method \(request.method) is not allowed on \(request.path); use POST."))
        }
        if let refused = authenticate(request.header("authorization"), connection: connection) {
            return fail(refused.error, because: refused.failure)
        }
        let denied = GoogleError(code: 403, status: "PERMISSION_DENIED",
                                 message: "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
        if let expected = configuration.projectID, project != expected, project != configuration.projectNumber {
            return fail(denied, authenticated: true)
        }
        // Google: an access token sends for its service account's project, or one that granted
        // the account the messaging role (`send_to_projects`), not for any project.
        let allowed = connection.lastAccessTokenProjects
        let named = project == configuration.projectNumber ? (configuration.projectID ?? project) : project
        if authEnabled, !allowed.isEmpty, !allowed.contains(named) {
            return fail(denied, authenticated: true, because: AuthFailure(
                .wrongProject, "the access token is for a service account of project \(allowed[0]); it may send to \(allowed.joined(separator: ", ")), "
                    + "not \(project) (grant it with send_to_projects)"))
        }
        if let quota = projectQuota, let wait = quota.take(project, nowNanos: clock.nowNanoseconds) {
            return fail(Self.quotaExceeded(project: project, retryAfter: wait,
                                           "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com' for consumer 'project_number:\(project)'."),
                        authenticated: true)
        }
        if let type = request.header("content-type"), !hasPrefixIgnoringASCIICase(Substring(type).utf8, "application/json") {
            warnings.append(.warning("content-type is \(type), not application/json"))
        }

        if let limit = GatewayRoute.fcm.maxBodyBytes, request.body.count > limit {
            return fail(.invalidPayload(field: "", GatewayRoute.payloadSizeExceeded(limit: limit)), authenticated: true)
        }
        let document: JSONValue
        do {
            document = try JSONParser.parse(request.body, options: .init(maxDepth: Self.bodyMaxDepth))
        } catch {
            return fail(.invalidPayload(field: "", "Invalid JSON payload received. \(error.message) at byte \(error.offset)."),
                        authenticated: true)
        }
        // Parsed no deeper than a record line's `json` may be.
        bodyIsJSON = Self.bodyMaxDepth <= RecordLine.jsonBodyMaxDepth
        deviceToken = document["message"]?["token"]?.stringValue
        var validator = MessageValidator()
        guard let message = validator.validateRequest(document) else {
            return fail(validator.error ?? .invalidPayload(field: "", "Invalid JSON payload received."), authenticated: true)
        }
        if let error = semanticError(message, validator: validator) { return fail(error, authenticated: true) }
        reachedDevice = true

        // A dry run checks the token too (senders use it to probe tokens), but sends nothing,
        // so it does not count against the per-device rate.
        if let token = message["token"]?.stringValue {
            let state = registry.state(of: token)
            if state == .valid, !validator.validateOnly, let limiter = deviceRateLimiter,
               let wait = limiter.take(token, nowNanos: clock.nowNanoseconds) {
                return fail(Self.quotaExceeded(project: project, retryAfter: wait, "Sending limit exceeded for the message target."),
                            authenticated: true)
            }
            switch state {
            case .valid: break
            case .gone, .expired:
                return fail(Self.error(.unregistered, project: project, retryAfter: nil), authenticated: true)
            case .bad:
                return fail(Self.invalidTokenError(), authenticated: true)
            case .otherSender:
                return fail(Self.senderIDMismatchError(), authenticated: true)
            }
        }
        var delivered = success(project: project, id: validator.validateOnly ? "fake_message_id" : identifiers.messageID(),
                                warnings: warnings, deviceToken: deviceToken)
        delivered.reachedDevice = true
        delivered.bodyParsedAsJSON = bodyIsJSON
        return delivered
    }

    static func quotaExceeded(project: String, retryAfter: Int, _ message: String) -> GoogleError {
        var error = GoogleError(.quotaExceeded, message: message)
        error.quotaViolation = ("project_number:\(project)", message)
        error.retryAfterSeconds = retryAfter
        return error
    }

    /// Google's answer with this error code, as this gateway gives it elsewhere (a token's
    /// state, the per-device rate, an injected fault): the answer rules' FCM errors.
    static func error(_ code: FCMErrorCode, project: String, retryAfter: Int?) -> GoogleError {
        var error: GoogleError
        switch code {
        case .invalidArgument: error = invalidTokenError()
        case .senderIdMismatch: error = senderIDMismatchError()
        case .unregistered: error = GoogleError(.unregistered, message: "Requested entity was not found.")
        case .quotaExceeded: error = quotaExceeded(project: project, retryAfter: 0, "Sending limit exceeded for the message target.")
        case .internalError: error = GoogleError(.internalError, message: "Internal error encountered.")
        default: error = GoogleError(.unavailable, message: "The service is currently unavailable.")
        }
        error.retryAfterSeconds = retryAfter
        return error
    }

    static func invalidTokenError() -> GoogleError {
        GoogleError(.invalidArgument, message: fcmInvalidTokenMessage,
                    fieldViolations: [("message.token", "Invalid registration token")])
    }

    /// What Google answers a send to a token registered to another sender (project): 403,
    /// PERMISSION_DENIED, "SenderId mismatch", an FcmError detail and nothing else.
    static func senderIDMismatchError() -> GoogleError {
        GoogleError(.senderIdMismatch, message: "SenderId mismatch")
    }

    func success(project: String, id: String, warnings: [GatewayNote], deviceToken: String?) -> ServiceOutcome {
        var w = JSONWriter(capacity: 96)
        w.beginObject()
        w.key("name"); w.string("projects/\(project)/messages/\(id)")
        w.endObject()
        let response = HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "application/json; charset=UTF-8")], body: w.bytes)
        return ServiceOutcome(response: response, reason: nil, warnings: warnings, authenticated: true, deviceToken: deviceToken)
    }

    /// `{project}` of `/v1/projects/{project}/messages:send`, nil for any other path.
    static func project(in fullPath: String) -> String? {
        var path = Substring(fullPath).utf8
        if let query = path.firstIndex(of: UInt8(ascii: "?")) { path = path[..<query] }
        let prefix = "/v1/projects/", suffix = "/messages:send"
        guard path.starts(with: prefix.utf8), utf8HasSuffix(path, suffix) else { return nil }
        let project = path.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count)
        guard !project.isEmpty, !project.contains(UInt8(ascii: "/")) else { return nil }
        return String(Substring(project))
    }

    /// A refused access token: Google's answer and the gateway's own explanation.
    struct AuthRejection {
        var error: GoogleError
        var failure: AuthFailure
    }

    /// nil when the bearer token is acceptable.
    func authenticate(_ authorization: String?, connection: GatewayConnectionState) -> AuthRejection? {
        let unauthenticated = { (message: String, info: String?, failure: AuthFailure) -> AuthRejection in
            var error = GoogleError(code: 401, status: "UNAUTHENTICATED", message: message)
            error.errorInfoReason = info
            error.extraHeaders = [HTTPHeader("www-authenticate", "Bearer realm=\"https://accounts.google.com/\"")]
            return AuthRejection(error: error, failure: failure)
        }
        guard let authorization, !authorization.isEmpty else {
            let detail = authorization == nil ? "no authorization header" : "the authorization header is empty"
            return unauthenticated(Self.missingCredentialMessage, "CREDENTIALS_MISSING", AuthFailure(.missing, detail))
        }
        guard hasPrefixIgnoringASCIICase(Substring(authorization).utf8, "bearer ") else {
            return unauthenticated(Self.invalidCredentialMessage, "ACCESS_TOKEN_TYPE_UNSUPPORTED",
                                   AuthFailure(.malformed, "the authorization header is not \"Bearer <access token>\""))
        }
        var tokenBytes = Substring(authorization).utf8.dropFirst(7)
        while tokenBytes.first == UInt8(ascii: " ") { tokenBytes = tokenBytes.dropFirst() }
        guard !tokenBytes.isEmpty else {
            return unauthenticated(Self.missingCredentialMessage, "CREDENTIALS_MISSING",
                                   AuthFailure(.missing, "the authorization header holds no token after Bearer"))
        }
        guard authEnabled else { return nil }

        let now = clock.nowSeconds
        func expired(_ expiresAt: Int64) -> AuthRejection {
            unauthenticated(Self.invalidCredentialMessage, "ACCESS_TOKEN_EXPIRED",
                            AuthFailure(.expired, "the access token expired \(now - expiresAt) s ago (this gateway issues them for \(configuration.accessTokenLifetimeSeconds) s)"))
        }
        let hasScope: Bool
        if let last = connection.lastAccessToken, utf8Equal(tokenBytes, last) {
            guard now < connection.lastAccessTokenExpiresAtSeconds else { return expired(connection.lastAccessTokenExpiresAtSeconds) }
            hasScope = connection.lastAccessTokenHasMessagingScope
        } else {
            let text = String(Substring(tokenBytes))
            guard let issued = store.lookup(text) else {
                return unauthenticated(Self.invalidCredentialMessage, nil, AuthFailure(
                    .notIssued, "the access token was not issued by this gateway (service accounts are configured: get one at its /token)"))
            }
            guard now < issued.expiresAtSeconds else { return expired(issued.expiresAtSeconds) }
            connection.lastAccessToken = text
            connection.lastAccessTokenExpiresAtSeconds = issued.expiresAtSeconds
            connection.lastAccessTokenHasMessagingScope = issued.hasMessagingScope
            connection.lastAccessTokenProjects = issued.projects
            hasScope = issued.hasMessagingScope
        }
        guard hasScope else {
            var error = GoogleError(code: 403, status: "PERMISSION_DENIED", message: "Request had insufficient authentication scopes.")
            error.errorInfoReason = "ACCESS_TOKEN_SCOPE_INSUFFICIENT"
            return AuthRejection(error: error, failure: AuthFailure(
                .insufficientScope, "the access token's assertion asked for neither firebase.messaging nor cloud-platform"))
        }
        return nil
    }

    /// FCM's own checks on a well-typed message: these carry an FcmError detail.
    func semanticError(_ message: JSONObject, validator: MessageValidator) -> GoogleError? {
        let targets = ["token", "topic", "condition", "fid"].filter { message[$0] != nil && message[$0]?.isNull == false }
        if targets.isEmpty {
            return GoogleError(.invalidArgument, message: "Recipient of the message is not set.")
        }
        if targets.count > 1 {
            let text = "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '\(targets[1])'"
            return .invalidPayload(field: "message", text)
        }
        if let token = message["token"]?.stringValue {
            let wellFormed = !token.isEmpty && token.utf8.count <= 4096 && token.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ":")
            }
            if !wellFormed { return Self.invalidTokenError() }
        }
        if let topic = message["topic"]?.stringValue {
            var name = Substring(topic)
            if name.hasPrefix("/topics/") { name = name.dropFirst(8) }
            let valid = !name.isEmpty && name.utf8.count <= 900 && name.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
                    || b == UInt8(ascii: "~") || b == UInt8(ascii: "%")
            }
            if !valid {
                return GoogleError(.invalidArgument, message: "Invalid topic name: \"\(topic)\"; topics match [a-zA-Z0-9-_.~%]+",
                                   fieldViolations: [("message.topic", "Invalid topic name")])
            }
        }
        if let condition = message["condition"]?.stringValue, condition.isEmpty {
            return GoogleError(.invalidArgument, message: "Invalid condition expression provided.",
                               fieldViolations: [("message.condition", "Invalid condition expression")])
        }
        if let (field, key) = validator.reservedDataKeys.first {
            return GoogleError(.invalidArgument, message: "Invalid data payload key: \"\(key)\" is reserved (from, message_type, google.*, gcm.*)",
                               fieldViolations: [(field, "Reserved data key \"\(key)\"")])
        }
        if let ttl = validator.ttlSeconds, ttl > Double(Self.maxTTLSeconds) {
            return GoogleError(.invalidArgument, message: "The ttl of an Android message must not exceed 4 weeks (2419200s).",
                               fieldViolations: [("message.android.ttl", "TTL exceeds 2419200s")])
        }
        let limit = message["topic"] != nil ? 2048 : 4096
        if validator.payloadBytes > limit {
            return GoogleError(.invalidArgument, message: "Message is too big: \(validator.payloadBytes) bytes of data and notification, the limit is \(limit).",
                               fieldViolations: [("message", "Message is too big")])
        }
        return nil
    }

    /// fcm.md: `from`, `message_type`, and keys starting `google.` or `gcm.`.
    static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.utf8.starts(with: "google.".utf8) || key.utf8.starts(with: "gcm.".utf8)
    }
}

// MARK: - The message schema

/// The FCM v1 `Message` as JSON (the proto3 JSON mapping): which fields exist and their types.
indirect enum FieldKind: Sendable {
    case string, bool, int32, number, duration, timestamp
    /// `android.ttl`: a duration FCM also range-checks.
    case ttl
    /// A notification text that counts toward the size limit.
    case countedString
    case stringMap
    /// `data` maps: string values, reserved keys, counted toward the size limit.
    case dataMap
    case freeStruct
    case list(FieldKind)
    case enumeration(typeName: String, values: Set<String>, ignoringCase: Bool)
    case message(typeName: String, fields: [String: FieldKind])

    static let androidPriority = FieldKind.enumeration(
        typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority", values: ["NORMAL", "HIGH"], ignoringCase: true)

    static let color = FieldKind.message(typeName: "type.googleapis.com/google.type.Color", fields: [
        "red": .number, "green": .number, "blue": .number, "alpha": .number,
    ])

    static let androidNotification = FieldKind.message(typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidNotification", fields: [
        "title": .string, "body": .string, "icon": .string, "color": .string, "sound": .string, "tag": .string,
        "click_action": .string, "body_loc_key": .string, "body_loc_args": .list(.string), "title_loc_key": .string,
        "title_loc_args": .list(.string), "channel_id": .string, "ticker": .string, "sticky": .bool,
        "event_time": .timestamp, "local_only": .bool,
        "notification_priority": .enumeration(typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidNotification.NotificationPriority",
                                              values: ["PRIORITY_UNSPECIFIED", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_MAX"],
                                              ignoringCase: false),
        "default_sound": .bool, "default_vibrate_timings": .bool, "default_light_settings": .bool,
        "vibrate_timings": .list(.duration),
        "visibility": .enumeration(typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidNotification.Visibility",
                                   values: ["VISIBILITY_UNSPECIFIED", "PRIVATE", "PUBLIC", "SECRET"], ignoringCase: false),
        "notification_count": .int32,
        "light_settings": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.LightSettings", fields: [
            "color": color, "light_on_duration": .duration, "light_off_duration": .duration,
        ]),
        "image": .string, "bypass_proxy_notification": .bool,
        "proxy": .enumeration(typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidNotification.Proxy",
                              values: ["PROXY_UNSPECIFIED", "ALLOW", "DENY", "IF_PRIORITY_LOWERED"], ignoringCase: false),
    ])

    static let messageSchema = FieldKind.message(typeName: "type.googleapis.com/google.firebase.fcm.v1.Message", fields: [
        "name": .string,
        "data": .dataMap,
        "notification": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.Notification", fields: [
            "title": .countedString, "body": .countedString, "image": .string,
        ]),
        "android": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidConfig", fields: [
            "collapse_key": .string, "priority": androidPriority, "ttl": .ttl, "restricted_package_name": .string,
            "data": .dataMap, "notification": androidNotification,
            "fcm_options": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.AndroidFcmOptions", fields: ["analytics_label": .string]),
            "direct_boot_ok": .bool, "bandwidth_constrained_ok": .bool, "restricted_satellite_ok": .bool,
        ]),
        "webpush": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.WebpushConfig", fields: [
            "headers": .stringMap, "data": .stringMap, "notification": .freeStruct,
            "fcm_options": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.WebpushFcmOptions", fields: [
                "link": .string, "analytics_label": .string,
            ]),
        ]),
        "apns": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.ApnsConfig", fields: [
            "headers": .stringMap, "payload": .freeStruct, "live_activity_token": .string,
            "fcm_options": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.ApnsFcmOptions", fields: [
                "analytics_label": .string, "image": .string,
            ]),
        ]),
        "fcm_options": .message(typeName: "type.googleapis.com/google.firebase.fcm.v1.FcmOptions", fields: ["analytics_label": .string]),
        "token": .string, "topic": .string, "condition": .string, "fid": .string,
    ])
}

/// Walks a send request against `FieldKind.messageSchema`, stopping at the first error, and
/// collects what FCM's own checks need (data keys, ttl, payload size). Field paths for error
/// messages are kept as a stack of names and joined only when an error is reported.
struct MessageValidator {
    var error: GoogleError?
    var validateOnly = false
    /// (field path, key) of data entries with reserved keys (`message.data`, `message.android.data`).
    var reservedDataKeys: [(String, String)] = []
    var ttlSeconds: Double?
    /// Bytes of data keys and values and notification texts (fcm.md: "keys and values counted").
    var payloadBytes = 0
    private var path: [String] = []

    /// The `message` object, or nil with `error` set.
    mutating func validateRequest(_ document: JSONValue) -> JSONObject? {
        guard case .object(let body) = document else {
            error = .invalidPayload(field: "", "Invalid JSON payload received. Expected an object, found \(document.typeName).")
            return nil
        }
        var message: JSONObject?
        for (key, value) in body.entries {
            switch Self.snakeCase(key) {
            case "validate_only":
                guard case .bool(let flag) = value else {
                    fail(field: "validate_only", "Invalid value at 'validate_only' (TYPE_BOOL), \(Self.render(value))")
                    return nil
                }
                validateOnly = flag
            case "message":
                guard case .object(let object) = value else {
                    fail(field: "message", "Invalid value at 'message' (type.googleapis.com/google.firebase.fcm.v1.Message), \(Self.render(value))")
                    return nil
                }
                message = object
            default:
                fail(field: "", "Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
                return nil
            }
        }
        guard let message else {
            error = GoogleError(.invalidArgument, message: "Request contains an invalid argument.",
                                fieldViolations: [("message", "Message must be set")])
            return nil
        }
        path = ["message"]
        guard case .message(_, let fields) = FieldKind.messageSchema, check(message, fields: fields) else { return nil }
        return message
    }

    private var currentPath: String { path.joined(separator: ".") }

    private mutating func fail(field: String, _ description: String) {
        error = .invalidPayload(field: field, description)
    }

    /// Checks an object's members; false (with `error`) at the first problem.
    private mutating func check(_ object: JSONObject, fields: [String: FieldKind]) -> Bool {
        for (key, value) in object.entries {
            let name = Self.snakeCase(key)
            guard let kind = fields[name] else {
                let here = currentPath
                fail(field: here, "Invalid JSON payload received. Unknown name \"\(key)\" at '\(here)': Cannot find field.")
                return false
            }
            if value.isNull { continue } // proto3 JSON: null means the default
            path.append(name)
            defer { path.removeLast() }
            guard check(value, kind: kind) else { return false }
        }
        return true
    }

    private mutating func check(_ value: JSONValue, kind: FieldKind) -> Bool {
        func invalid(_ type: String) -> Bool {
            let here = currentPath
            fail(field: here, "Invalid value at '\(here)' (\(type)), \(Self.render(value))")
            return false
        }
        switch kind {
        case .string:
            guard case .string = value else { return invalid("TYPE_STRING") }
        case .countedString:
            guard case .string(let s) = value else { return invalid("TYPE_STRING") }
            payloadBytes += s.utf8.count
        case .bool:
            guard case .bool = value else { return invalid("TYPE_BOOL") }
        case .int32:
            // proto3 JSON accepts numbers and numeric strings for integers.
            let number = value.intValue ?? value.stringValue.flatMap { Int($0) }
            guard let number, number >= Int(Int32.min), number <= Int(Int32.max) else { return invalid("TYPE_INT32") }
        case .number:
            guard case .number = value else { return invalid("TYPE_FLOAT") }
        case .duration, .ttl:
            guard case .string(let s) = value, let seconds = Self.durationSeconds(s) else {
                return invalid("type.googleapis.com/google.protobuf.Duration")
            }
            if case .ttl = kind { ttlSeconds = seconds }
        case .timestamp:
            guard case .string(let s) = value, s.utf8.count >= 20, s.utf8.contains(UInt8(ascii: "T")) else {
                return invalid("type.googleapis.com/google.protobuf.Timestamp")
            }
        case .stringMap, .dataMap:
            guard case .object(let map) = value else { return invalid("type.googleapis.com/google.protobuf.Map") }
            for (index, entry) in map.entries.enumerated() {
                guard case .string(let s) = entry.value else {
                    let field = "\(currentPath)[\(index)].value"
                    fail(field: field, "Invalid value at '\(field)' (TYPE_STRING), \(Self.render(entry.value))")
                    return false
                }
                if case .dataMap = kind {
                    if FCMService.isReservedDataKey(entry.key) { reservedDataKeys.append(("\(currentPath)[\(index)].key", entry.key)) }
                    payloadBytes += entry.key.utf8.count + s.utf8.count
                }
            }
        case .freeStruct:
            guard case .object = value else { return invalid("type.googleapis.com/google.protobuf.Struct") }
        case .list(let element):
            guard case .array(let elements) = value else { return invalid("TYPE_LIST") }
            for (index, item) in elements.enumerated() {
                let name = path.removeLast()
                path.append("\(name)[\(index)]")
                let ok = check(item, kind: element)
                path[path.count - 1] = name
                guard ok else { return false }
            }
        case .enumeration(let typeName, let values, let ignoringCase):
            guard case .string(let s) = value, values.contains(ignoringCase ? s.uppercased() : s) else { return invalid(typeName) }
        case .message(let typeName, let fields):
            guard case .object(let object) = value else { return invalid(typeName) }
            return check(object, fields: fields)
        }
        return true
    }

    /// proto3 JSON Duration as FCM takes it: `^\d+(\.\d{1,9})?s$` (fcm.md: "60s", "3.5s").
    static func durationSeconds(_ text: String) -> Double? {
        let utf8 = Substring(text).utf8
        guard utf8.count >= 2, utf8.last == UInt8(ascii: "s") else { return nil }
        let number = utf8.dropLast()
        var sawDot = false, integerDigits = 0, fractionDigits = 0
        for b in number {
            if b == UInt8(ascii: ".") {
                guard !sawDot, integerDigits > 0 else { return nil }
                sawDot = true
            } else if b >= 0x30 && b <= 0x39 {
                if sawDot { fractionDigits += 1 } else { integerDigits += 1 }
            } else {
                return nil
            }
        }
        guard integerDigits > 0, integerDigits <= 12, !sawDot || (1...9).contains(fractionDigits) else { return nil }
        return Double(Substring(number))
    }

    /// Google's JSON mapping accepts lowerCamelCase and the proto (snake_case) names.
    static func snakeCase(_ key: String) -> String {
        guard key.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return key }
        var out = [UInt8]()
        out.reserveCapacity(key.utf8.count + 4)
        for b in key.utf8 {
            if b >= 0x41 && b <= 0x5A {
                out.append(UInt8(ascii: "_"))
                out.append(b + 0x20)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A value as Google quotes it in "Invalid value" messages: numbers bare, strings quoted.
    static func render(_ value: JSONValue) -> String {
        switch value {
        case .object: "{…}"
        case .array: "[…]"
        default: value.serialized()
        }
    }
}
