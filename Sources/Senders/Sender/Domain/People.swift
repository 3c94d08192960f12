// Users and the per-user credentials a push carries.

/// A user of the customer's app as poolse knows them.
public struct User: Sendable, Hashable {
    public var id: String
    /// The customer's own id for this user (`caller_external_id`, `sender_external_id`).
    public var externalID: String
    public var displayName: String

    public init(id: String, externalID: String, displayName: String) {
        self.id = id
        self.externalID = externalID
        self.displayName = displayName
    }
}

/// Issues the short-lived tokens a push carries so the app can act without a round trip:
/// `grant` on a ring (join the call) and `reply_grant` on a new message (Reply action).
public protocol GrantIssuer: Sendable {
    func callGrant(callID: String, userID: String) -> String
    func replyGrant(conversationID: String, userID: String) -> String
}

/// Hands out the same opaque strings every time: for tests, workloads and local runs.
public struct FixedGrants: GrantIssuer {
    public var call: String
    public var reply: String

    public init(call: String = "", reply: String = "") {
        self.call = call
        self.reply = reply
    }

    public func callGrant(callID: String, userID: String) -> String { call }
    public func replyGrant(conversationID: String, userID: String) -> String { reply }
}
