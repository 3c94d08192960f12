// Reads a scenario file (format 1, Specs/scenarios/README.md). Every problem is a
// `JSONFieldError` naming its key path (`events[3].caller: unknown person "zed"`).
import JSON
import PushModel

extension Scenario {
    static let topKeys = ["format", "description", "product", "app", "start_ms", "workspace", "tenant", "concierge",
                          "people", "conversations", "rooms", "generate", "gateway", "events", "expect"]
    /// What a `setup` scenario may hold: the population spelled out, nothing of what happens.
    static let setupKeys = topKeys.filter { !["generate", "gateway", "events", "expect"].contains($0) }

    /// Parses and checks a scenario document. `name` is what reports call it (the file path).
    public init(json text: [UInt8], name: String) throws(JSONFieldError) {
        let document: JSONValue
        do {
            document = try JSONParser.parse(text, options: .init(duplicateKeys: .reject))
        } catch {
            throw JSONFieldError(keyPath: "", problem: "not valid JSON: \(error)")
        }
        try self.init(document: document, name: name)
    }

    public init(document: JSONValue, name: String) throws(JSONFieldError) {
        try self.init(document: document, name: name, setup: false)
    }

    /// Reads the adapter protocol's `setup` scenario (`setupDocument(bundleID:fcmProject:)`):
    /// a scenario without `generate`, `gateway`, `events` and `expect`. Its events come one at
    /// a time, through `ScenarioEventDecoder`.
    public init(setupDocument document: JSONValue, name: String) throws(JSONFieldError) {
        try self.init(document: document, name: name, setup: true)
    }

    private init(document: JSONValue, name: String, setup: Bool) throws(JSONFieldError) {
        let root = try JSONFields(document, allowed: setup ? Self.setupKeys : Self.topKeys)
        guard let format = try root.int("format", range: 0...Int.max) else {
            throw root.fail("format", "required (1)")
        }
        guard format == 1 else { throw root.fail("format", "this pushproof reads format 1, found \(format)") }
        let product = Product(rawValue: try root.requiredChoice("product", Product.allCases.map(\.rawValue)))!
        self.init(name: name, product: product)
        description = try root.string("description")
        if let app = try root.object("app", allowed: ["bundle_id", "fcm_project"]) {
            bundleID = try app.string("bundle_id")
            fcmProject = try app.string("fcm_project")
        }
        if let start = try root.int("start_ms", range: 0...4_102_444_800_000) { startMs = Int64(start) }
        try readSettings(root)

        var reader = ScenarioReader(product: product)
        var generator: ScenarioGenerator?
        if let generate = try root.object("generate", allowed: ScenarioGenerator.keys) {
            for key in ["people", "conversations", "rooms"] where root.has(key) {
                throw root.fail(key, "give either generate or people, conversations and rooms, not both")
            }
            let made = try ScenarioGenerator(generate, product: product)
            generator = made
            let generated = made.population()
            people = generated.people
            conversations = generated.conversations
            rooms = generated.rooms
            tokenStates = generated.tokenStates
        } else {
            for fields in try root.objects("people", allowed: ["id", "name", "external_id", "status", "devices"]) {
                people.append(try reader.person(fields))
            }
            conversations = try root.objects("conversations", allowed: ["id", "kind", "name", "members", "muted_by", "customer"])
                .map { fields throws(JSONFieldError) in try reader.conversation(fields) }
            rooms = try root.objects("rooms", allowed: ["id", "name", "members", "muted_by"])
                .map { fields throws(JSONFieldError) in try reader.room(fields) }
        }
        reader.know(people: people, conversations: conversations, rooms: rooms)
        if product == .yama, root.has("conversations") { throw root.fail("conversations", "Yama has rooms, not conversations") }
        if product != .yama, root.has("rooms") { throw root.fail("rooms", "rooms are Yama's; \(product.rawValue) has conversations") }

        if let gateway = try root.object("gateway", allowed: ["tokens", "faults", "answer_rules"]) {
            if let tokens = try gateway.object("tokens") {
                for (deviceID, value) in tokens.object {
                    let at = tokens.path(deviceID)
                    guard reader.knownDevices[deviceID] != nil else {
                        throw JSONFieldError(keyPath: at, problem: "unknown device \"\(deviceID)\"")
                    }
                    tokenStates.removeAll { $0.device == deviceID }
                    tokenStates.append((deviceID, try ScenarioReader.tokenState(value, at: at)))
                }
            }
            if let faults = gateway.value("faults") {
                guard faults.objectValue != nil else {
                    throw gateway.fail("faults", "expected an object in serve's configuration shape ({\"apns\": {...}, \"fcm\": {...}})")
                }
                self.faults = faults
            }
            if gateway.has("answer_rules") { answerRules = try reader.answerRules(gateway, people: people) }
        }

        if setup { return }
        events = try root.objects("events").map { fields throws(JSONFieldError) in try reader.event(fields) }
        if let generator, let storm = generator.messages {
            // After the written events; the same checks as theirs.
            let at = "generate.messages"
            let taken = reader.messages.keys.compactMap { id in
                id.first == "m" ? Int(id.dropFirst()).flatMap { "m\($0)" == id && $0 < storm.count ? $0 : nil } : nil
            }.min()
            if let taken {
                throw JSONFieldError(keyPath: at, problem: "message \"m\(taken)\" is in events already; generated messages are m0 to m\(storm.count - 1)")
            }
            for (index, event) in generator.messageEvents(conversations: conversations, rooms: rooms).enumerated() {
                events.append(try reader.event(try JSONFields(event, path: "\(at)[\(index)]")))
            }
        }
        if events.isEmpty { throw JSONFieldError(keyPath: "events", problem: "required (at least one event)") }
        if let expect = try root.array("expect") {
            var covered: Set<Int> = []
            expectations = try expect.enumerated().map { index, value throws(JSONFieldError) in
                let expectation = try reader.expectation(value, at: "expect[\(index)]", eventCount: events.count)
                guard covered.insert(expectation.event).inserted else {
                    throw JSONFieldError(keyPath: "expect[\(index)].event", problem: "event \(expectation.event) has an expectation already")
                }
                return expectation
            }
        }
    }

    private mutating func readSettings(_ root: JSONFields) throws(JSONFieldError) {
        if let settings = try root.object("workspace", allowed: ["chat_notifications", "group_conversations", "preview", "missed_calls"]) {
            guard product == .poolse else { throw root.fail("workspace", "workspace settings are poolse's") }
            workspace.chatNotifications = try settings.bool("chat_notifications") ?? true
            workspace.onlyMentionsInGroups = try settings.choice("group_conversations", ["all", "mentions"]) == "mentions"
            workspace.fullPreview = try settings.choice("preview", ["full", "hidden"]) != "hidden"
            workspace.missedCalls = try settings.bool("missed_calls") ?? true
        }
        if let tenant = try root.object("tenant", allowed: ["id"]) {
            guard product == .yama else { throw root.fail("tenant", "the tenant is Yama's") }
            self.tenant = try tenant.string("id") ?? self.tenant
        }
        if let app = try root.object("concierge", allowed: ["name", "show_team_names"]) {
            guard product == .concierge else { throw root.fail("concierge", "these are Concierge's app settings") }
            conciergeApp.name = try app.string("name") ?? conciergeApp.name
            conciergeApp.showTeamNames = try app.bool("show_team_names") ?? true
        }
    }
}

/// The decoder's memory of the ids declared so far, so every reference can be checked.
struct ScenarioReader {
    let product: Product
    var personIDs: Set<String> = []
    /// Every device declared, with its person: one table (three with the same keys were 37 MB
    /// while a 100,000-person population was read, heaptrack, the largest moment of its run).
    var knownDevices: [String: (owner: String, device: ScenarioDevice)] = [:]
    var conversationIDs: [String: ScenarioConversation] = [:]
    var roomIDs: Set<String> = []
    /// Calls placed so far, and whether each is a room.
    var calls: [String: Bool] = [:]
    var messages: [String: String] = [:]
    var eventIndex = 0

    init(product: Product) { self.product = product }

    mutating func know(people: ScenarioPeople, conversations: [ScenarioConversation], rooms: [Room]) {
        // Sized once: grown by doubling, each table passed through twice its size.
        personIDs.reserveCapacity(personIDs.count + people.count)
        knownDevices.reserveCapacity(knownDevices.count + people.devices.count)
        for index in people.indices {
            let id = people.id(at: index)
            personIDs.insert(id)
            for device in people.devices(at: index) { knownDevices[device.id] = (id, device) }
        }
        for conversation in conversations { conversationIDs[conversation.id] = conversation }
        roomIDs = Set(rooms.map(\.id))
    }

    // MARK: Population

    mutating func person(_ fields: JSONFields) throws(JSONFieldError) -> Person {
        let id = try fields.requiredString("id")
        guard personIDs.insert(id).inserted else { throw fields.fail("id", "person \"\(id)\" is declared twice") }
        let status = try fields.choice("status", ["available", "dnd"])
        if status != nil, product != .yama { throw fields.fail("status", "status (Do Not Disturb) is Yama's") }
        var person = Person(id: id, name: try fields.string("name") ?? id,
                            externalID: try fields.string("external_id") ?? "ext-" + id, doNotDisturb: status == "dnd")
        for device in try fields.objects("devices", allowed: Self.deviceKeys) {
            person.devices.append(try self.device(device, owner: id))
        }
        return person
    }

    static let deviceKeys = ["id", "platform", "kind", "token"]

    mutating func device(_ fields: JSONFields, owner: String) throws(JSONFieldError) -> ScenarioDevice {
        let id = try fields.requiredString("id")
        guard knownDevices[id] == nil else { throw fields.fail("id", "device \"\(id)\" is declared twice") }
        let platform = ScenarioPlatform(rawValue: try fields.requiredChoice("platform", ["ios", "android"]))!
        let kind = try fields.choice("kind", ["voip", "alert"])
        if platform == .android, kind != nil { throw fields.fail("kind", "kind (voip or alert) is for iOS devices") }
        let token = try fields.string("token")
        if let token, token.isEmpty { throw fields.fail("token", "must not be empty (leave it out for a derived token)") }
        let device = ScenarioDevice(id: id, platform: platform, voip: kind == "voip", token: token)
        knownDevices[id] = (owner, device)
        return device
    }

    func conversation(_ fields: JSONFields) throws(JSONFieldError) -> ScenarioConversation {
        let id = try fields.requiredString("id")
        guard product != .yama else { throw JSONFieldError(keyPath: fields.path, problem: "Yama has rooms") }
        if product == .concierge {
            let customer = try fields.requiredString("customer")
            guard personIDs.contains(customer) else { throw fields.fail("customer", "unknown person \"\(customer)\"") }
            for key in ["kind", "members", "muted_by", "name"] where fields.has(key) {
                throw fields.fail(key, "a Concierge conversation has an id and a customer only")
            }
            return ScenarioConversation(id: id, kind: .direct, members: [customer], customer: customer)
        }
        let kind = ConversationKind(rawValue: try fields.requiredChoice("kind", ["group", "direct"]))!
        let members = try people(fields, "members") ?? []
        if members.count < 2 { throw fields.fail("members", "a conversation needs at least two members") }
        if kind == .direct, members.count != 2 { throw fields.fail("members", "a direct conversation has exactly two members") }
        let muted = try people(fields, "muted_by") ?? []
        for (index, person) in muted.enumerated() where !members.contains(person) {
            throw JSONFieldError(keyPath: "\(fields.path("muted_by"))[\(index)]", problem: "\"\(person)\" is not a member")
        }
        return ScenarioConversation(id: id, kind: kind, name: try fields.string("name"), members: members, mutedBy: muted)
    }

    func room(_ fields: JSONFields) throws(JSONFieldError) -> Room {
        let members = try people(fields, "members") ?? []
        if members.count < 2 { throw fields.fail("members", "a room needs at least two members") }
        let muted = try people(fields, "muted_by") ?? []
        return Room(id: try fields.requiredString("id"), name: try fields.requiredString("name"), members: members, mutedBy: muted)
    }

    /// A list of person ids, each checked.
    func people(_ fields: JSONFields, _ key: String) throws(JSONFieldError) -> [String]? {
        guard let ids = try fields.strings(key) else { return nil }
        for (index, id) in ids.enumerated() where !personIDs.contains(id) {
            throw JSONFieldError(keyPath: "\(fields.path(key))[\(index)]", problem: "unknown person \"\(id)\"")
        }
        return ids
    }

    static func tokenState(_ value: JSONValue, at path: String) throws(JSONFieldError) -> TokenState {
        let states = ["valid", "gone", "expired", "bad", "other_sender"]
        var name: String
        var since: Int64?
        if let text = value.stringValue {
            name = text
        } else {
            let fields = try JSONFields(value, path: path, allowed: ["state", "since_ms"])
            name = try fields.requiredChoice("state", states)
            since = try fields.int("since_ms", range: 0...4_102_444_800_000).map(Int64.init)
            if since != nil, name != "gone" { throw fields.fail("since_ms", "since_ms goes with \"gone\"") }
        }
        switch name {
        case "valid": return .valid
        case "gone": return .gone(sinceMs: since)
        case "expired": return .expired
        case "bad": return .bad
        case "other_sender": return .otherSender
        default:
            throw JSONFieldError(keyPath: path, problem: "expected one of \(states.joined(separator: ", ")), found \(value.serialized())")
        }
    }

    // MARK: Events

    /// Each event type, the product it belongs to (nil: any), and the keys it takes besides
    /// `type` and `at_ms`.
    static let eventTypes: [String: (product: Product?, keys: [String])] = [
        "call.placed": (.poolse, ["call", "conversation", "caller", "media"]),
        "room.started": (.poolse, ["call", "conversation", "by", "media"]),
        "call.answered": (.poolse, ["call", "user", "device"]),
        "call.declined": (.poolse, ["call", "user", "device"]),
        "call.busy": (.poolse, ["call", "user"]),
        "call.people_added": (.poolse, ["call", "by", "people"]),
        "call.joined": (.poolse, ["call", "user", "device"]),
        "call.ended": (.poolse, ["call", "reason"]),
        "message.sent": (.poolse, ["conversation", "message", "sender", "text", "kind", "mentions"]),
        "conversation.read": (.poolse, ["conversation", "reader", "through"]),
        "message.created": (.yama, ["room", "message", "author", "text"]),
        "user.status": (.yama, ["user", "status"]),
        "room.muted": (.yama, ["room", "user"]),
        "room.unmuted": (.yama, ["room", "user"]),
        "reply.sent": (.concierge, ["conversation", "message", "author", "text", "unread"]),
        "customer.message": (.concierge, ["conversation", "text"]),
        "device.registered": (nil, ["person", "device"]),
        "device.unregistered": (nil, ["device"]),
        "gateway.token": (nil, ["device", "state", "since_ms"]),
    ]

    mutating func event(_ entry: JSONFields) throws(JSONFieldError) -> ScenarioEvent {
        defer { eventIndex += 1 }
        let type = try entry.requiredString("type")
        guard let shape = Self.eventTypes[type] else {
            throw entry.fail("type", "unknown event \"\(type)\" (one of \(Self.eventTypes.keys.sorted().joined(separator: ", ")))")
        }
        if let owner = shape.product, owner != product {
            throw entry.fail("type", "\"\(type)\" is a \(owner.rawValue) event; this scenario's product is \(product.rawValue)")
        }
        let fields = try JSONFields(.object(entry.object), path: entry.path, allowed: ["type", "at_ms"] + shape.keys)
        let atMs = try fields.int("at_ms", range: 0...(366 * 86_400_000)).map(Int64.init)
        let kind = try eventKind(type, fields)
        return ScenarioEvent(kind: kind, type: type, atMs: atMs, json: .object(entry.object))
    }

    private mutating func eventKind(_ type: String, _ f: JSONFields) throws(JSONFieldError) -> ScenarioEvent.Kind {
        switch type {
        case "call.placed", "room.started":
            let call = try f.requiredString("call")
            guard calls[call] == nil else { throw f.fail("call", "call \"\(call)\" was already placed") }
            let conversation = try conversationRef(f, "conversation")
            let person = try member(f, type == "call.placed" ? "caller" : "by", of: conversation)
            let media = CallMedia(rawValue: try f.choice("media", ["audio", "video"]) ?? "audio")!
            calls[call] = type == "room.started"
            return type == "call.placed"
                ? .callPlaced(call: call, conversation: conversation.id, caller: person, media: media)
                : .roomStarted(call: call, conversation: conversation.id, by: person, media: media)
        case "call.answered":
            let call = try callRef(f)
            let user = try personRef(f, "user")
            return .callAnswered(call: call, user: user, device: try deviceRef(f, "device", of: user))
        case "call.declined":
            let call = try callRef(f)
            let user = try personRef(f, "user")
            return .callDeclined(call: call, user: user, device: f.has("device") ? try deviceRef(f, "device", of: user) : nil)
        case "call.busy":
            return .callBusy(call: try callRef(f), user: try personRef(f, "user"))
        case "call.people_added":
            let call = try callRef(f)
            guard let people = try people(f, "people"), !people.isEmpty else { throw f.fail("people", "required (person ids)") }
            return .peopleAdded(call: call, by: try personRef(f, "by"), people: people)
        case "call.joined":
            let call = try callRef(f)
            let user = try personRef(f, "user")
            return .callJoined(call: call, user: user, device: f.has("device") ? try deviceRef(f, "device", of: user) : nil)
        case "call.ended":
            let reason = CallEndReason(rawValue: try f.choice("reason", CallEndReason.allCases.map(\.rawValue)) ?? "finished")!
            return .callEnded(call: try callRef(f), reason: reason)
        case "message.sent":
            let conversation = try conversationRef(f, "conversation")
            let sender = try member(f, "sender", of: conversation)
            let message = try f.string("message") ?? "msg-\(eventIndex)"
            guard messages[message] == nil else { throw f.fail("message", "message \"\(message)\" was already sent") }
            messages[message] = conversation.id
            let kind = MessageKind(rawValue: try f.choice("kind", ["text", "custom", "system"]) ?? "text")!
            let mentions = try people(f, "mentions") ?? []
            return .messageSent(conversation: conversation.id, message: message, sender: sender,
                                text: try f.string("text") ?? "", kind: kind, mentions: mentions)
        case "conversation.read":
            let conversation = try conversationRef(f, "conversation")
            let reader = try member(f, "reader", of: conversation)
            let through = try f.requiredString("through")
            guard messages[through] == conversation.id else {
                throw f.fail("through", "no message \"\(through)\" was sent in \(conversation.id) before this event")
            }
            return .conversationRead(conversation: conversation.id, reader: reader, through: through)
        case "message.created":
            let room = try roomRef(f)
            return .yamaMessage(room: room, message: try f.string("message") ?? "m_\(eventIndex)",
                                author: try personRef(f, "author"), text: try f.string("text") ?? "")
        case "user.status":
            return .userStatus(user: try personRef(f, "user"), doNotDisturb: try f.requiredChoice("status", ["available", "dnd"]) == "dnd")
        case "room.muted", "room.unmuted":
            return .roomMuted(room: try roomRef(f), user: try personRef(f, "user"), muted: type == "room.muted")
        case "reply.sent":
            let conversation = try conversationRef(f, "conversation")
            guard let authorFields = try f.object("author", allowed: ["team_member", "ai"]) else {
                throw f.fail("author", #"required ({"team_member": NAME} or {"ai": NAME})"#)
            }
            let author: ReplyAuthor
            if let name = try authorFields.string("team_member") {
                if authorFields.has("ai") { throw authorFields.fail("ai", "a reply has one author") }
                author = .teamMember(name: name)
            } else if authorFields.has("ai") {
                author = .ai(name: try authorFields.string("ai"))
            } else {
                throw f.fail("author", #"required ({"team_member": NAME} or {"ai": NAME})"#)
            }
            return .replySent(conversation: conversation.id, message: try f.string("message") ?? "msg_\(eventIndex)", author: author,
                              text: try f.string("text") ?? "", unread: try f.int("unread", range: 0...1_000_000))
        case "customer.message":
            return .customerMessage(conversation: try conversationRef(f, "conversation").id, text: try f.string("text") ?? "")
        case "device.registered":
            if case .string(let id)? = f.value("device") {
                guard let (owner, known) = knownDevices[id] else {
                    throw f.fail("device", "unknown device \"\(id)\" (give an object for a new one)")
                }
                if f.has("person") { throw f.fail("person", "a known device registers again for its own person") }
                return .deviceRegistered(person: owner, device: known, isNew: false)
            }
            let person = try personRef(f, "person")
            guard let deviceFields = try f.object("device", allowed: Self.deviceKeys) else {
                throw f.fail("device", "required (a device id, or a new device object)")
            }
            return .deviceRegistered(person: person, device: try device(deviceFields, owner: person), isNew: true)
        case "device.unregistered":
            return .deviceUnregistered(device: try deviceRef(f, "device", of: nil))
        case "gateway.token":
            let device = try deviceRef(f, "device", of: nil)
            var state = try Self.tokenState(.string(try f.requiredChoice("state", ["valid", "gone", "expired", "bad", "other_sender"])),
                                            at: f.path("state"))
            if let since = try f.int("since_ms", range: 0...4_102_444_800_000) {
                guard case .gone = state else { throw f.fail("since_ms", "since_ms goes with \"gone\"") }
                state = .gone(sinceMs: Int64(since))
            }
            return .gatewayToken(device: device, state: state)
        default:
            throw f.fail("type", "unknown event \"\(type)\"")
        }
    }

    private func personRef(_ f: JSONFields, _ key: String) throws(JSONFieldError) -> String {
        let id = try f.requiredString(key)
        guard personIDs.contains(id) else { throw f.fail(key, "unknown person \"\(id)\"") }
        return id
    }

    private func member(_ f: JSONFields, _ key: String, of conversation: ScenarioConversation) throws(JSONFieldError) -> String {
        let id = try personRef(f, key)
        guard conversation.members.contains(id) else { throw f.fail(key, "\"\(id)\" is not a member of \(conversation.id)") }
        return id
    }

    private func deviceRef(_ f: JSONFields, _ key: String, of person: String?) throws(JSONFieldError) -> String {
        let id = try f.requiredString(key)
        guard let known = knownDevices[id] else { throw f.fail(key, "unknown device \"\(id)\"") }
        if let person, known.owner != person { throw f.fail(key, "device \"\(id)\" is not \(person)'s") }
        return id
    }

    private func conversationRef(_ f: JSONFields, _ key: String) throws(JSONFieldError) -> ScenarioConversation {
        let id = try f.requiredString(key)
        guard let conversation = conversationIDs[id] else { throw f.fail(key, "unknown conversation \"\(id)\"") }
        return conversation
    }

    private func roomRef(_ f: JSONFields) throws(JSONFieldError) -> String {
        let id = try f.requiredString("room")
        guard roomIDs.contains(id) else { throw f.fail("room", "unknown room \"\(id)\"") }
        return id
    }

    private func callRef(_ f: JSONFields) throws(JSONFieldError) -> String {
        let id = try f.requiredString("call")
        guard calls[id] != nil else { throw f.fail("call", "no call \"\(id)\" was placed or started before this event") }
        return id
    }

    // MARK: Expectations

    func expectation(_ value: JSONValue, at path: String, eventCount: Int) throws(JSONFieldError) -> EventExpectation {
        let fields = try JSONFields(value, path: path, allowed: ["event", "source", "deliveries"])
        let event = try fields.requiredInt("event", range: 0...Int.max)
        guard event < eventCount else { throw fields.fail("event", "there are \(eventCount) events (0 to \(eventCount - 1))") }
        guard fields.has("deliveries") else { throw fields.fail("deliveries", "required (an array; [] for none)") }
        var deliveries: [ExpectedDelivery] = []
        var seen: Set<String> = []
        for delivery in try fields.objects("deliveries", allowed: ["device", "spec", "fields", "headers", "source"]) {
            let device = try delivery.requiredString("device")
            guard knownDevices[device] != nil else { throw delivery.fail("device", "unknown device \"\(device)\"") }
            let spec = try delivery.requiredString("spec")
            guard seen.insert(device + "\u{0}" + spec).inserted else {
                throw JSONFieldError(keyPath: delivery.path, problem: "\(device) \(spec) is listed twice for this event")
            }
            var pinned: [(JSONPointer, JSONValue)] = []
            if let fieldMap = try delivery.object("fields") {
                for (text, expected) in fieldMap.object {
                    guard let pointer = JSONPointer(text), !text.isEmpty else {
                        throw fieldMap.fail(text, "not a JSON Pointer (like /aps/alert/title)")
                    }
                    pinned.append((pointer, expected))
                }
            }
            var pinnedHeaders: [(name: String, value: String?)] = []
            if let headerMap = try delivery.object("headers") {
                for (name, expected) in headerMap.object {
                    switch expected {
                    case .string(let value): pinnedHeaders.append((name.lowercased(), value))
                    case .null: pinnedHeaders.append((name.lowercased(), nil))
                    default: throw headerMap.fail(name, "a header's value is a string (null: the header must be absent)")
                    }
                }
            }
            deliveries.append(ExpectedDelivery(device: device, spec: spec, fields: pinned, headers: pinnedHeaders,
                                               source: try delivery.string("source")))
        }
        return EventExpectation(event: event, source: try fields.string("source"), deliveries: deliveries)
    }
}

extension ScenarioReader {
    /// `gateway.answer_rules`: serve's `answer_rules` array, checked by the gateway when it
    /// starts (as `gateway.faults` is); here only a rule's `match.device`, which names a device
    /// of the population, is made that device's `token`.
    func answerRules(_ gateway: JSONFields, people: ScenarioPeople) throws(JSONFieldError) -> JSONValue {
        let rules = try gateway.requiredArray("answer_rules")
        var rewritten: [JSONValue] = []
        for (index, rule) in rules.enumerated() {
            guard case .object(var object) = rule, case .object(var match)? = object["match"], let device = match["device"] else {
                rewritten.append(rule)
                continue
            }
            let at = gateway.path("answer_rules", index) + ".match.device"
            guard let id = device.stringValue else { throw JSONFieldError(keyPath: at, problem: "expected a device id") }
            guard let found = people.devices.first(where: { $0.id == id }) else {
                throw JSONFieldError(keyPath: at, problem: "unknown device \"\(id)\"")
            }
            guard match["token"] == nil, match["token_prefix"] == nil else {
                throw JSONFieldError(keyPath: at, problem: "give device, token or token_prefix, one of them")
            }
            match["device"] = nil
            match["token"] = .string(found.token)
            object["match"] = .object(match)
            rewritten.append(.object(object))
        }
        return .array(rewritten)
    }
}
