// What the sender does with each gateway answer: the rules of apns.md and fcm.md in one place,
// pure functions so every reason can be tested without a socket.
import PushModel

/// The sender's decision about one attempt.
public enum DeliveryVerdict: Sendable, Equatable {
    case delivered(id: String?)
    /// Transient: try again after backoff (or `retryAfter` seconds) if attempts remain.
    case retry(reason: String, status: Int, retryAfter: Double?)
    /// Our credential was refused as expired: drop the cached token and try again.
    case refreshCredentialsAndRetry(reason: String, status: Int)
    /// The device token is gone: delete it from the store. Never retried.
    case removeToken(reason: String, status: Int)
    /// Permanent: never retried.
    case fail(reason: String, status: Int)
}

public enum ResponseClassifier {
    /// Statuses both gateways ask senders to retry with backoff.
    static let retryableStatuses: Set<Int> = [429, 500, 503]

    /// APNs: 200 is delivered (id from `apns-id`). 410 Unregistered / ExpiredToken and
    /// 400 BadDeviceToken delete the token; 429, 500 and 503 are retried; 403
    /// ExpiredProviderToken re-signs the JWT and retries; everything else is final
    /// (Apple: do not retry BadDeviceToken, DeviceTokenNotForTopic, Forbidden, ExpiredToken,
    /// Unregistered, PayloadTooLarge).
    public static func classifyAPNs(status: Int, body: [UInt8], apnsID: String?, retryAfter: Double?) -> DeliveryVerdict {
        if status == 200 { return .delivered(id: apnsID) }
        let parsedReason = GatewayResponseBodies.apnsError(body)?.reason
        guard let parsedReason, !parsedReason.isEmpty else {
            let reason = "HTTP \(status)"
            return retryableStatuses.contains(status)
                ? .retry(reason: reason, status: status, retryAfter: retryAfter)
                : .fail(reason: reason, status: status)
        }
        let reason = APNSReason(rawValue: parsedReason)
        if reason.meansTokenIsGone { return .removeToken(reason: reason.rawValue, status: status) }
        if reason == .expiredProviderToken { return .refreshCredentialsAndRetry(reason: reason.rawValue, status: status) }
        if reason.isRetryable || retryableStatuses.contains(status) {
            return .retry(reason: reason.rawValue, status: status, retryAfter: retryAfter)
        }
        return .fail(reason: reason.rawValue, status: status)
    }

    /// FCM: 200 is delivered (id = message `name`). UNREGISTERED deletes the token;
    /// INVALID_ARGUMENT deletes it only when the message says the registration token is
    /// invalid and no BadRequest field violation points at something other than the token
    /// (a payload error must never cost a user their device). QUOTA_EXCEEDED, UNAVAILABLE,
    /// INTERNAL (429/500/503) are retried. 401 without THIRD_PARTY_AUTH_ERROR means our
    /// access token was refused: fetch a new one and retry.
    public static func classifyFCM(status: Int, body: [UInt8], retryAfter: Double?) -> DeliveryVerdict {
        if status == 200 { return .delivered(id: GatewayResponseBodies.fcmMessageName(body)) }
        let error = GatewayResponseBodies.fcmError(body)
        let code = error?.errorCode.map(FCMErrorCode.init(rawValue:))
        let reason = code?.rawValue ?? error?.status ?? "HTTP \(status)"
        switch code {
        case .unregistered?:
            return .removeToken(reason: reason, status: status)
        case .invalidArgument?:
            if let error, isAboutTheToken(error) { return .removeToken(reason: reason, status: status) }
            return .fail(reason: reason, status: status)
        case .thirdPartyAuthError?:
            return .fail(reason: reason, status: status)
        default:
            break
        }
        if code?.isRetryable == true || retryableStatuses.contains(status) {
            return .retry(reason: reason, status: status, retryAfter: retryAfter)
        }
        if status == 401 { return .refreshCredentialsAndRetry(reason: reason, status: status) }
        return .fail(reason: reason, status: status)
    }

    static func isAboutTheToken(_ error: FCMErrorBody) -> Bool {
        guard let message = error.message, message.contains(fcmInvalidTokenMessage) else { return false }
        return error.violatedFields.allSatisfy { $0 == "message.token" || $0 == "token" }
    }

    /// No HTTP answer. Connection-level failures are retried; misconfiguration (bad URL,
    /// unusable CA file, unsupported protocol) is not, since trying again cannot help.
    static func classifyTransportError(code: Int, message: String, permanent: Bool) -> DeliveryVerdict {
        let reason = "NetworkError: \(message) (curl \(code))"
        return permanent ? .fail(reason: reason, status: 0) : .retry(reason: reason, status: 0, retryAfter: nil)
    }
}
