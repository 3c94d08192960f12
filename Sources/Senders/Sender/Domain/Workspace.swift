// Workspace settings and app configuration for the poolse rules.
// Source: poolse seed ("Push payloads"), every setting named there.
#if canImport(Glibc)
import Clocks
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Dashboard settings of a poolse workspace that decide who gets a push and what it shows.
public struct WorkspaceSettings: Sendable, Hashable {
    /// "Send chat notifications": when off, no new-message push is sent at all.
    public var chatNotifications: Bool
    /// "Group conversations": all messages, or only the people @mentioned.
    public var groupConversations: GroupNotificationMode
    /// "What a notification shows" (`preview`): the message text, or a neutral "New message".
    public var preview: PreviewMode
    /// "Missed-call notifications" (`missed_calls`): when off, no missed-call push is sent.
    public var missedCalls: Bool

    public init(
        chatNotifications: Bool = true,
        groupConversations: GroupNotificationMode = .allMessages,
        preview: PreviewMode = .full,
        missedCalls: Bool = true
    ) {
        self.chatNotifications = chatNotifications
        self.groupConversations = groupConversations
        self.preview = preview
        self.missedCalls = missedCalls
    }
}

/// Which messages of a group conversation notify its members.
public enum GroupNotificationMode: String, Sendable, Hashable, CaseIterable {
    case allMessages = "all"
    /// "a group conversation notifies only the people mentioned" (poolse seed).
    case onlyMentions = "mentions"
}

/// What a message notification shows.
public enum PreviewMode: String, Sendable, Hashable, CaseIterable {
    case full
    /// "hidden: no title, and the body is "New message"." (poolse seed)
    case hidden
}

/// The app a sender pushes to: where APNs topics and the FCM send URL come from.
public struct AppConfig: Sendable, Hashable {
    /// The iOS bundle id: the `apns-topic` of alert and background pushes; VoIP pushes use
    /// `<bundle id>.voip` (poolse seed, "Ring").
    public var iosBundleID: String
    /// The Firebase project: `POST /v1/projects/<id>/messages:send`.
    public var fcmProjectID: String

    public init(iosBundleID: String, fcmProjectID: String) {
        self.iosBundleID = iosBundleID
        self.fcmProjectID = fcmProjectID
    }

    /// `apns-topic` for VoIP pushes.
    public var voipTopic: String { iosBundleID + ".voip" }
}
