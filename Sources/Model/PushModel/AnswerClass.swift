// How a gateway's answer to one push bears on its token: the classes `run`'s verdicts, a load
// run's matcher and `check`'s cross-replica rules all judge by.

/// What became of one push, as the gateway answered it.
public enum AnswerClass: String, Sendable, Equatable {
    case accepted
    /// APNs 410 (Unregistered, ExpiredToken) or FCM 404 UNREGISTERED.
    case gone
    /// APNs 400 BadDeviceToken, FCM 400 INVALID_ARGUMENT about the token.
    case bad
    /// 429, 500, 503, a reset or a dropped connection: try again later.
    case transient
    /// The token belongs to another app or project (DeviceTokenNotForTopic, SENDER_ID_MISMATCH).
    case otherSender
    /// Anything else the gateway refused: the request, not the token, was wrong.
    case payloadError

    /// `tokenIsBad`: whether the gateway held this token as bad, which tells an FCM
    /// INVALID_ARGUMENT about the token from one about the payload (both carry that code).
    public static func of(status: Int, reason: String?, tokenIsBad: Bool) -> AnswerClass {
        if (200..<300).contains(status) { return .accepted }
        switch reason {
        case "Unregistered", "ExpiredToken", "UNREGISTERED": return .gone
        case "BadDeviceToken": return .bad
        case "INVALID_ARGUMENT" where tokenIsBad: return .bad
        case "DeviceTokenNotForTopic", "SENDER_ID_MISMATCH": return .otherSender
        default: break
        }
        if status == 410 { return .gone }
        if status == 0 || status == 429 || status == 500 || status == 503 { return .transient }
        return .payloadError
    }

    public var killsToken: Bool { self == .gone || self == .bad }
}
