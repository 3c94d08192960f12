// Calls, conversations and messages as the poolse seed names them: the values both the
// sender's rules and the scenario files speak of, defined once.

public enum ConversationKind: String, Sendable, Hashable {
    case direct
    case group
}

public enum MessageKind: String, Sendable, Hashable {
    /// The only kind that sends a chat notification.
    case text
    /// "custom and system messages never send one." (poolse seed)
    case custom
    case system
}

/// `media` on the wire.
public enum CallMedia: String, Sendable, Hashable {
    case audio
    case video

    /// Word used in missed-call text: "Missed voice call" / "Missed video call".
    public var spokenName: String { self == .audio ? "voice" : "video" }
}

/// `reason` of a `ring_ended` push.
public enum RingEndedReason: String, Sendable, Hashable, CaseIterable {
    /// The user answered on another device; "the device that answered is skipped".
    case answeredElsewhere = "answered_elsewhere"
    /// The user declined on another device.
    case declined
    /// The caller hung up.
    case cancelled
    /// The call rang out.
    case timeout
    case finished
}

/// `reason` of a `finished` push ("see Calls & rooms").
public enum CallEndReason: String, Sendable, Hashable, CaseIterable {
    case finished
    case cancelled
    case noAnswer = "no_answer"
    case declinedAll = "declined_all"
    case busyAll = "busy_all"

    /// The `ring_ended` reason a phone still ringing at the end gets: "the call ends while
    /// their phone is still ringing (cancelled, timeout or finished)".
    public var ringEndedReason: RingEndedReason {
        switch self {
        case .cancelled: .cancelled
        case .noAnswer: .timeout
        case .finished, .declinedAll, .busyAll: .finished
        }
    }
}
