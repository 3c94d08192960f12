// FCM HTTP v1 wire vocabulary. Source: shared/reference/fcm.md (Google, FCM HTTP v1
// reference: projects.messages.send, ErrorCode).

/// `FcmError.errorCode` in an FCM error's `details`, with the HTTP status and canonical
/// `google.rpc` status it comes with.
public enum FCMErrorCode: RawRepresentable, Sendable, Hashable, CaseIterable {
    case invalidArgument, unregistered, senderIdMismatch, quotaExceeded, unavailable, internalError
    case thirdPartyAuthError
    case unknown(String)

    public static let allCases: [FCMErrorCode] = [
        .invalidArgument, .unregistered, .senderIdMismatch, .quotaExceeded, .unavailable,
        .internalError, .thirdPartyAuthError,
    ]

    public init(rawValue: String) {
        self = Self.allCases.first { $0.rawValue == rawValue } ?? .unknown(rawValue)
    }

    public var rawValue: String {
        switch self {
        case .invalidArgument: "INVALID_ARGUMENT"
        case .unregistered: "UNREGISTERED"
        case .senderIdMismatch: "SENDER_ID_MISMATCH"
        case .quotaExceeded: "QUOTA_EXCEEDED"
        case .unavailable: "UNAVAILABLE"
        case .internalError: "INTERNAL"
        case .thirdPartyAuthError: "THIRD_PARTY_AUTH_ERROR"
        case .unknown(let raw): raw
        }
    }

    public var status: Int {
        switch self {
        case .invalidArgument: 400
        case .unregistered: 404
        case .senderIdMismatch: 403
        case .quotaExceeded: 429
        case .unavailable: 503
        case .internalError: 500
        case .thirdPartyAuthError: 401
        case .unknown: 500
        }
    }

    /// The `error.status` string (google.rpc.Code) that goes with this code.
    public var canonicalStatus: String {
        switch self {
        case .invalidArgument: "INVALID_ARGUMENT"
        case .unregistered: "NOT_FOUND"
        case .senderIdMismatch: "PERMISSION_DENIED"
        case .quotaExceeded: "RESOURCE_EXHAUSTED"
        case .unavailable: "UNAVAILABLE"
        case .internalError: "INTERNAL"
        case .thirdPartyAuthError: "UNAUTHENTICATED"
        case .unknown: "UNKNOWN"
        }
    }

    /// 429, 500 and 503 are retried with backoff (honouring Retry-After); the rest are final.
    public var isRetryable: Bool {
        switch self {
        case .quotaExceeded, .unavailable, .internalError: true
        default: false
        }
    }
}

/// The message FCM puts in an INVALID_ARGUMENT error about the registration token itself.
/// Senders delete the token only for this one, never for a payload error (fcm.md).
public let fcmInvalidTokenMessage = "The registration token is not a valid FCM registration token"

/// `android.priority` (SDKs send lowercase; FCM accepts both cases).
public enum FCMAndroidPriority: String, Sendable {
    case normal = "NORMAL"
    case high = "HIGH"
}
