// Concierge's domain (Concierge seed, "Push notifications").

/// The customer's app as Concierge knows it.
public struct ConciergeApp: Sendable, Hashable {
    /// The alert title when "Show team names" is off: "otherwise your app's name".
    public var name: String
    public var iosBundleID: String
    public var fcmProjectID: String
    /// "Show team names": title a push with the team member's name.
    public var showTeamNames: Bool

    public init(name: String, iosBundleID: String, fcmProjectID: String, showTeamNames: Bool) {
        self.name = name
        self.iosBundleID = iosBundleID
        self.fcmProjectID = fcmProjectID
        self.showTeamNames = showTeamNames
    }
}

/// Who wrote a reply: "Every team or AI reply is pushed".
public enum ConciergeReplyAuthor: Sendable, Hashable {
    case teamMember(name: String)
    /// An AI reply has no team member, so it is titled with the app's name.
    case ai
}

public struct ConciergeReply: Sendable, Hashable {
    /// `conversationId`, "cnv_...".
    public var conversationID: String
    /// `messageId`, "msg_...".
    public var messageID: String
    public var author: ConciergeReplyAuthor
    public var text: String
    /// "Messages this customer hasn't read yet", counting this reply: `unread` and the badge.
    public var unread: Int

    public init(conversationID: String, messageID: String, author: ConciergeReplyAuthor, text: String, unread: Int) {
        self.conversationID = conversationID
        self.messageID = messageID
        self.author = author
        self.text = text
        self.unread = unread
    }
}
