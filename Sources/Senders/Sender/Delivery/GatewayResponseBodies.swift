// The bodies the gateways answer with, read into small structs. Only the fields the sender
// acts on are kept.
import JSON

/// APNs error body: `{"reason": "BadDeviceToken"}`; a 410 adds `"timestamp": <ms>` (apns.md).
public struct APNSErrorBody: Sendable, Equatable {
    public var reason: String?
    public var timestamp: Int?

    public init(reason: String?, timestamp: Int? = nil) {
        self.reason = reason
        self.timestamp = timestamp
    }
}

/// FCM error body: `{"error": {"code", "message", "status", "details": [...]}}` with an
/// `FcmError` detail carrying `errorCode` and possibly a `google.rpc.BadRequest` detail
/// whose `fieldViolations` point at the offending field (fcm.md, "Responses").
public struct FCMErrorBody: Sendable, Equatable {
    public var code: Int?
    public var message: String?
    public var status: String?
    /// `errorCode` of the `type.googleapis.com/google.firebase.fcm.v1.FcmError` detail.
    public var errorCode: String?
    /// `field` of every BadRequest field violation, in order.
    public var violatedFields: [String]

    public init(code: Int? = nil, message: String? = nil, status: String? = nil, errorCode: String? = nil, violatedFields: [String] = []) {
        self.code = code
        self.message = message
        self.status = status
        self.errorCode = errorCode
        self.violatedFields = violatedFields
    }
}

/// A Google OAuth2 token endpoint answer: `{"access_token", "expires_in", "token_type"}`.
public struct OAuthTokenResponse: Sendable, Equatable {
    public var accessToken: String
    public var expiresIn: Int
}

enum GatewayResponseBodies {
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    static func apnsError(_ body: [UInt8]) -> APNSErrorBody? {
        guard let object = jsonObject(body) else { return nil }
        return APNSErrorBody(reason: object["reason"]?.stringValue, timestamp: object["timestamp"]?.intValue)
    }

    static func fcmMessageName(_ body: [UInt8]) -> String? {
        jsonObject(body)?["name"]?.stringValue
    }

    static func fcmError(_ body: [UInt8]) -> FCMErrorBody? {
        guard let error = jsonObject(body)?["error"]?.objectValue else { return nil }
        var parsed = FCMErrorBody(code: error["code"]?.intValue, message: error["message"]?.stringValue, status: error["status"]?.stringValue)
        for detail in error["details"]?.arrayValue ?? [] {
            guard let type = detail["@type"]?.stringValue else { continue }
            if type == fcmErrorType, parsed.errorCode == nil {
                parsed.errorCode = detail["errorCode"]?.stringValue
            } else if type == badRequestType {
                for violation in detail["fieldViolations"]?.arrayValue ?? [] {
                    if let field = violation["field"]?.stringValue { parsed.violatedFields.append(field) }
                }
            }
        }
        return parsed
    }

    static func oauthToken(_ body: [UInt8]) -> OAuthTokenResponse? {
        guard let object = jsonObject(body), let token = object["access_token"]?.stringValue, !token.isEmpty else { return nil }
        return OAuthTokenResponse(accessToken: token, expiresIn: object["expires_in"]?.intValue ?? 3600)
    }

    /// `{"error": "invalid_grant", "error_description": "..."}` as one string.
    static func oauthError(_ body: [UInt8]) -> String? {
        guard let object = jsonObject(body), let error = object["error"]?.stringValue else { return nil }
        if let description = object["error_description"]?.stringValue { return "\(error): \(description)" }
        return error
    }

    /// Gateway answers are small and untrusted: a shallow depth limit, and anything that is
    /// not a JSON object reads as "no body".
    private static func jsonObject(_ body: [UInt8]) -> JSONObject? {
        guard !body.isEmpty else { return nil }
        return (try? JSONParser.parse(body, options: .init(maxDepth: 32)))?.objectValue
    }
}
