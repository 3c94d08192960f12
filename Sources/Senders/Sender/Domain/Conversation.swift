// Conversations, messages and read cursors (poolse seed, "New message", "Conversation read").
import PushModel

public struct Conversation: Sendable, Hashable {
    public var id: String
    public var kind: ConversationKind
    /// `nil` when the conversation has no name; pushes then carry `conversation_name: ""`.
    public var name: String?
    /// Member user ids, in the order pushes go out.
    public var members: [String]
    /// Members who muted this conversation: they get a message push only when mentioned.
    public var mutedBy: Set<String>

    public init(id: String, kind: ConversationKind, name: String? = nil, members: [String], mutedBy: Set<String> = []) {
        self.id = id
        self.kind = kind
        self.name = name
        self.members = members
        self.mutedBy = mutedBy
    }

    public var isGroup: Bool { kind == .group }

    /// `conversation_name` on the wire: "the conversation's name, or "" if it has none".
    public var wireName: String { name ?? "" }

    /// The name when it is set and not empty: "A group with a name" in the preview rules.
    public var displayName: String? {
        guard let name, !name.isEmpty else { return nil }
        return name
    }

    public func hasMuted(_ userID: String) -> Bool { mutedBy.contains(userID) }
}

public struct Message: Sendable, Hashable {
    public var id: String
    public var conversationID: String
    public var sender: User
    public var kind: MessageKind
    public var text: String
    /// User ids the message @mentions.
    public var mentions: Set<String>
    /// Unix milliseconds.
    public var sentAt: Int64

    public init(id: String, conversationID: String, sender: User, kind: MessageKind = .text, text: String, mentions: Set<String> = [], sentAt: Int64) {
        self.id = id
        self.conversationID = conversationID
        self.sender = sender
        self.kind = kind
        self.text = text
        self.mentions = mentions
        self.sentAt = sentAt
    }

    public func mentions(_ userID: String) -> Bool { mentions.contains(userID) }
}

/// A reader's read cursor moving in one conversation.
public struct ReadCursorMove: Sendable, Hashable {
    public var readerID: String
    public var conversationID: String
    /// Position (message sequence) before and after the move.
    public var previousPosition: Int64
    public var newPosition: Int64
    /// Messages the cursor passed that the reader had not read yet.
    public var unreadMessagesPassed: Int
    /// The reader's unread count across all conversations after the move (the badge).
    public var unreadTotal: Int

    public init(readerID: String, conversationID: String, previousPosition: Int64, newPosition: Int64, unreadMessagesPassed: Int, unreadTotal: Int) {
        self.readerID = readerID
        self.conversationID = conversationID
        self.previousPosition = previousPosition
        self.newPosition = newPosition
        self.unreadMessagesPassed = unreadMessagesPassed
        self.unreadTotal = unreadTotal
    }

    /// "when their read cursor moves forward past unread messages" (poolse seed).
    public var movesPastUnread: Bool { newPosition > previousPosition && unreadMessagesPassed > 0 }
}

/// Where the per-recipient badge count of a new message comes from.
public protocol UnreadCounter: Sendable {
    /// The user's unread total, counting the message being sent.
    func unreadTotal(of userID: String) -> Int
}

/// Unread totals from a dictionary; unknown users count 0.
public struct UnreadTotals: UnreadCounter {
    public var totals: [String: Int]
    public init(_ totals: [String: Int] = [:]) { self.totals = totals }
    public func unreadTotal(of userID: String) -> Int { totals[userID] ?? 0 }
}
