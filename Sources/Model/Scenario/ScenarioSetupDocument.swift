// The scenario as an out-of-process sender sees it (docs/adapter-protocol.md): `setup` carries
// the population, and the events follow one `event` request at a time.
import JSON

extension Scenario {
    /// The adapter protocol's `setup` scenario: format 1 with `generate` expanded into people,
    /// conversations and rooms, every device with its token, and the app ids the run resolved
    /// (`app`). Nothing of what happens or of what the gateway holds: no `events`, `expect` or
    /// `gateway` (a sender learns token states from the gateway's answers, as in production).
    /// `Scenario(setupDocument:name:)` reads it back.
    public func setupDocument(bundleID: String, fcmProject: String) -> JSONValue {
        var root: JSONObject = ["format": 1]
        if let description { root["description"] = .string(description) }
        root["product"] = .string(product.rawValue)
        root["app"] = ["bundle_id": .string(bundleID), "fcm_project": .string(fcmProject)]
        root["start_ms"] = .number(Double(startMs))
        switch product {
        case .poolse:
            root["workspace"] = [
                "chat_notifications": .bool(workspace.chatNotifications),
                "group_conversations": .string(workspace.onlyMentionsInGroups ? "mentions" : "all"),
                "preview": .string(workspace.fullPreview ? "full" : "hidden"),
                "missed_calls": .bool(workspace.missedCalls),
            ]
        case .yama:
            root["tenant"] = ["id": .string(tenant)]
        case .concierge:
            root["concierge"] = ["name": .string(conciergeApp.name), "show_team_names": .bool(conciergeApp.showTeamNames)]
        }
        root["people"] = .array(people.map { person in
            var object: JSONObject = ["id": .string(person.id), "name": .string(person.name), "external_id": .string(person.externalID)]
            if product == .yama { object["status"] = .string(person.doNotDisturb ? "dnd" : "available") }
            object["devices"] = .array(person.devices.map(Self.deviceDocument))
            return .object(object)
        })
        switch product {
        case .poolse:
            root["conversations"] = .array(conversations.map { conversation in
                var object: JSONObject = ["id": .string(conversation.id), "kind": .string(conversation.kind.rawValue)]
                if let name = conversation.name { object["name"] = .string(name) }
                object["members"] = .array(conversation.members.map(JSONValue.string))
                object["muted_by"] = .array(conversation.mutedBy.map(JSONValue.string))
                return .object(object)
            })
        case .concierge:
            root["conversations"] = .array(conversations.map { conversation in
                ["id": .string(conversation.id), "customer": .string(conversation.customer ?? "")]
            })
        case .yama:
            root["rooms"] = .array(rooms.map { room in
                ["id": .string(room.id), "name": .string(room.name), "members": .array(room.members.map(JSONValue.string)),
                 "muted_by": .array(room.mutedBy.map(JSONValue.string))]
            })
        }
        return .object(root)
    }

    /// A device as the file format writes it, token always spelled out.
    public static func deviceDocument(_ device: ScenarioDevice) -> JSONValue {
        var object: JSONObject = ["id": .string(device.id), "platform": .string(device.platform.rawValue)]
        if device.platform == .ios { object["kind"] = .string(device.voip ? "voip" : "alert") }
        object["token"] = .string(device.token)
        return .object(object)
    }
}

/// Reads a scenario's events one at a time, as the adapter protocol's `event` requests bring
/// them, with every check the file decoder makes (ids declared, calls placed, messages sent
/// before they are read), against the population `setup` gave.
public struct ScenarioEventDecoder: Sendable {
    private var reader: ScenarioReader

    public init(population scenario: Scenario) {
        reader = ScenarioReader(product: scenario.product)
        reader.know(people: scenario.people, conversations: scenario.conversations, rooms: scenario.rooms)
    }

    /// `index` is the event's position in the scenario: error paths and default message ids
    /// (`msg-<index>`) are the file decoder's.
    public mutating func event(_ value: JSONValue, index: Int) throws(JSONFieldError) -> ScenarioEvent {
        reader.eventIndex = index
        return try reader.event(try JSONFields(value, path: "events[\(index)]"))
    }
}
