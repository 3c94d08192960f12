// APNs wire vocabulary, shared by the mock gateway, the spec validator and the sender.
// Source for every rule: shared/reference/apns.md (Apple, "Sending notification requests to
// APNs" and "Handling notification responses from APNs").

/// `apns-push-type`. An unknown value is answered 400 `InvalidPushType`.
public enum APNSPushType: String, Sendable, CaseIterable {
    case alert, background, voip, complication, fileprovider, location, liveactivity
    case pushtotalk, widgets, controls, mdm

    /// The suffix `apns-topic` must carry for this push type (`voip` -> `<bundle>.voip`).
    /// `mdm` topics are the MDM certificate's UID and carry no suffix rule.
    public var requiredTopicSuffix: String? {
        switch self {
        case .alert, .background, .mdm: return nil
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .location: return ".location-query"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        }
    }

    /// The largest payload APNs accepts: 5120 bytes for VoIP, 4096 otherwise.
    public var maxPayloadBytes: Int { self == .voip ? 5120 : 4096 }
}

/// `apns-priority`: 10 (immediate, the default), 5 (power-aware; required for background),
/// 1 (lowest). Anything else is 400 `BadPriority`.
public enum APNSPriority: Int, Sendable, CaseIterable {
    case immediate = 10
    case powerConsiderate = 5
    case low = 1
}

/// The `reason` of an APNs error response, with its HTTP status.
public enum APNSReason: RawRepresentable, Sendable, Hashable, CaseIterable {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType
    case missingDeviceToken, missingTopic, payloadEmpty, topicDisallowed
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden
    case invalidProviderToken, missingProviderToken, unrelatedKeyIdInToken, badEnvironmentKeyIdInToken
    case badPath
    case methodNotAllowed
    case unregistered, expiredToken
    case payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests
    case internalServerError
    case serviceUnavailable, shutdown
    /// A reason this version does not know; kept verbatim so nothing is lost.
    case unknown(String)

    public static let allCases: [APNSReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType,
        .missingDeviceToken, .missingTopic, .payloadEmpty, .topicDisallowed,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
        .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken,
        .badPath, .methodNotAllowed, .unregistered, .expiredToken, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError,
        .serviceUnavailable, .shutdown,
    ]

    public init(rawValue: String) {
        self = Self.allCases.first { $0.rawValue == rawValue } ?? .unknown(rawValue)
    }

    /// The wire string, exactly as Apple spells it.
    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: "BadEnvironmentKeyIdInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .unregistered: "Unregistered"
        case .expiredToken: "ExpiredToken"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let raw): raw
        }
    }

    /// The HTTP status APNs answers with this reason.
    public var status: Int {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority,
             .badTopic, .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType,
             .missingDeviceToken, .missingTopic, .payloadEmpty, .topicDisallowed:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
             .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken,
             .badEnvironmentKeyIdInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .unregistered, .expiredToken: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: 400
        }
    }

    /// The token is gone or was never valid: the sender deletes the device.
    /// (410 Unregistered / ExpiredToken, 400 BadDeviceToken.)
    public var meansTokenIsGone: Bool {
        switch self {
        case .unregistered, .expiredToken, .badDeviceToken: true
        default: false
        }
    }

    /// Apple: "may be retried later" for 5xx; 429 after backing off. Everything else is permanent.
    public var isRetryable: Bool {
        switch self {
        case .internalServerError, .serviceUnavailable, .shutdown, .tooManyRequests: true
        default: false
        }
    }
}
