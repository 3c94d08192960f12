// Yama's domain (Yama seed, "Push notifications guide").

/// A Yama tenant ships its own iOS app, so it brings its own bundle id (the `apns-topic`).
public struct YamaTenant: Sendable, Hashable {
    public var id: String
    public var iosBundleID: String

    public init(id: String, iosBundleID: String) {
        self.id = id
        self.iosBundleID = iosBundleID
    }
}

/// A user's availability status; `doNotDisturb` mutes every push ("muted ... their account").
public enum YamaStatus: String, Sendable, Hashable {
    case available
    case doNotDisturb = "dnd"
}

public struct YamaMember: Sendable, Hashable {
    public var userID: String
    public var displayName: String
    public var status: YamaStatus

    public init(userID: String, displayName: String, status: YamaStatus = .available) {
        self.userID = userID
        self.displayName = displayName
        self.status = status
    }
}

/// A room ("group") with its members and who muted it (`PUT /api/v1/rooms/:slug/mute`).
public struct YamaRoom: Sendable, Hashable {
    public var slug: String
    /// The alert title: "<group name>".
    public var name: String
    public var members: [YamaMember]
    public var mutedBy: Set<String>

    public init(slug: String, name: String, members: [YamaMember], mutedBy: Set<String> = []) {
        self.slug = slug
        self.name = name
        self.members = members
        self.mutedBy = mutedBy
    }
}

/// A `message_created` event.
public struct YamaMessage: Sendable, Hashable {
    public var id: String
    public var authorID: String
    public var authorName: String
    public var text: String

    public init(id: String, authorID: String, authorName: String, text: String) {
        self.id = id
        self.authorID = authorID
        self.authorName = authorName
        self.text = text
    }
}
