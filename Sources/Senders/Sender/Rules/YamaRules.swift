import PushModel

/// Yama's push rule (Yama seed, "Push notifications guide").
public struct YamaRules: Sendable {
    public var tenant: YamaTenant
    public var devices: any DeviceStore

    public init(tenant: YamaTenant, devices: any DeviceStore) {
        self.tenant = tenant
        self.devices = devices
    }

    /// The members a message notifies: "every member of the room except the author", "unless the
    /// recipient has muted the conversation or their account" (room mute, or Do Not Disturb).
    public func recipients(of message: YamaMessage, in room: YamaRoom) -> [YamaMember] {
        var seen = Set<String>()
        return room.members.filter { member in
            member.userID != message.authorID
                && member.status != .doNotDisturb
                && !room.mutedBy.contains(member.userID)
                && seen.insert(member.userID).inserted
        }
    }

    /// "A push is delivered on message_created": an APNs alert to each recipient's iOS devices
    /// (Android "is reserved for a future FCM channel", so Android devices get nothing).
    public func messageCreated(_ message: YamaMessage, in room: YamaRoom) throws -> [PushRequest] {
        let headers = APNSHeaders.make(pushType: .alert, topic: tenant.iosBundleID, priority: .immediate)
        var fanout = Fanout()
        var body: [UInt8]?
        for member in recipients(of: message, in: room) {
            fanout.apple(try devices.devices(of: member.userID), tokenKind: .alert, kind: PushKind.yamaMessage, headers: headers) {
                if let body { return body }
                let built = YamaPayloads.messageCreatedAPNS(room: room, message: message)
                body = built
                return built
            }
        }
        return fanout.requests
    }
}
