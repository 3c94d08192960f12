// A scenario's world as the reference rules (Sources/Senders/Sender) see it: the device store, calls
// in progress, messages and read cursors. Each event goes in; the pushes the rules decide come
// out. The reference sender sends them; the oracle only lists them.
import Clocks
import PushModel
import Scenario
import Sender

/// Plays a scenario's events through PoolseRules, YamaRules or ConciergeRules.
/// Not thread-safe: one caller at a time (the runner plays events in order).
final class ReferenceWorld {
    let scenario: Scenario
    /// The scenario's devices, shared with the rest of the run; `store` and the two maps
    /// below keep what this world changed of them.
    let devices: ScenarioDeviceIndex
    let store: ScenarioDeviceStore
    let bundleID: String
    let fcmProject: String
    /// The scenario time of the event decided last (the rules' clock).
    private(set) var nowMs: Int64
    private var calls: [String: Call] = [:]
    /// poolse: each conversation's messages in order, and each reader's position in it.
    private var messages: [String: [(id: String, sender: String)]] = [:]
    private var cursors: [String: [String: Int]] = [:]
    private var mutes: [String: Set<String>] = [:]
    private var dnd: Set<String>
    /// Concierge: replies the customer has not read, per conversation.
    private var conciergeUnread: [String: Int] = [:]
    /// Devices events registered that the index does not know (an adapter's world learns
    /// them one event at a time: its scenario has no events), both ways.
    private var tokenOfRegisteredDevice: [String: String] = [:]
    private var registeredDeviceOfToken: [String: String] = [:]

    static let grants = FixedGrants(call: "eyJhbGciOiJFUzI1NiJ9.scenario-call", reply: "eyJhbGciOiJFUzI1NiJ9.scenario-reply")

    init(scenario: Scenario, devices: ScenarioDeviceIndex, bundleID: String, fcmProject: String, store: ScenarioDeviceStore? = nil) {
        self.scenario = scenario
        self.devices = devices
        self.bundleID = bundleID
        self.fcmProject = fcmProject
        self.store = store ?? ScenarioDeviceStore(devices)
        nowMs = scenario.startMs
        dnd = Set(scenario.people.indices.filter(scenario.people.isDoNotDisturb(at:)).map(scenario.people.id(at:)))
        for room in scenario.rooms { mutes[room.id] = Set(room.mutedBy) }
    }

    private var clock: WallClock { .fixed(milliseconds: nowMs) }

    private var poolse: PoolseRules {
        var settings = WorkspaceSettings()
        settings.chatNotifications = scenario.workspace.chatNotifications
        settings.groupConversations = scenario.workspace.onlyMentionsInGroups ? .onlyMentions : .allMessages
        settings.preview = scenario.workspace.fullPreview ? .full : .hidden
        settings.missedCalls = scenario.workspace.missedCalls
        return PoolseRules(app: AppConfig(iosBundleID: bundleID, fcmProjectID: fcmProject), settings: settings,
                           devices: store, grants: Self.grants, clock: clock)
    }

    private func user(_ id: String) -> User {
        let person = scenario.person(id)
        return User(id: id, externalID: person?.externalID ?? id, displayName: person?.name ?? id)
    }

    private func conversation(_ id: String) -> Conversation {
        let c = scenario.conversations.first { $0.id == id }!
        return Conversation(id: c.id, kind: c.kind, name: c.name, members: c.members,
                            mutedBy: Set(c.mutedBy))
    }

    private func token(_ deviceID: String) -> String {
        tokenOfRegisteredDevice[deviceID] ?? devices.token(ofDevice: deviceID) ?? deviceID
    }

    private func know(_ device: ScenarioDevice) {
        guard devices.token(ofDevice: device.id) != device.token else { return }
        tokenOfRegisteredDevice[device.id] = device.token
        registeredDeviceOfToken[device.token] = device.id
    }

    /// The scenario's id for a device the store holds.
    func deviceID(ofToken token: String) -> String? {
        if let id = registeredDeviceOfToken[token] { return id }
        return devices.position(ofToken: DeviceToken(token)).map { devices.entries[$0] }.flatMap { $0.device.token == token ? $0.device.id : nil }
    }

    /// Applies one event and returns the pushes the rules decide for it.
    func decide(_ event: ScenarioEvent) throws -> [PushRequest] { try plan(event)() }

    /// The rules' decision for one event, to be made now or later. The event is applied now
    /// (calls, messages, cursors, registrations); the closure holds what the rules were given,
    /// so it decides as of this event even after the world moves on, except for the device
    /// store, which it reads when called: called once per slice of the population with the
    /// store narrowed to it (`ScenarioDeviceStore.narrowed`), a fan-out is decided a slice at
    /// a time. Call it before the next event changes the store.
    typealias Decision = () throws -> [PushRequest]

    func plan(_ event: ScenarioEvent) throws -> Decision {
        if let at = event.atMs { nowMs = scenario.startMs + at }
        let poolse = self.poolse
        switch event.kind {
        case .callPlaced(let id, let conversationID, let caller, let media):
            let call = Call.placed(id: id, conversation: conversation(conversationID), caller: user(caller),
                                   media: media, ringDeadline: nowMs + 45_000)
            calls[id] = call
            return { try poolse.callPlaced(call) }
        case .roomStarted(let id, let conversationID, let by, let media):
            var call = Call(id: id, kind: .room, conversation: conversation(conversationID), caller: user(by),
                            media: media)
            call.joined.insert(by)
            calls[id] = call
            return { [] }
        case .callAnswered(let id, let userID, let deviceID):
            guard var call = calls[id] else { return { [] } }
            call.joined.insert(userID)
            calls[id] = call
            let stop = RingStop.answeredElsewhere(userID: userID, deviceToken: token(deviceID))
            return { [call] in try poolse.ringEnded(call, stop: stop) }
        case .callDeclined(let id, let userID, let deviceID):
            guard var call = calls[id] else { return { [] } }
            call.declined.insert(userID)
            calls[id] = call
            let stop = RingStop.declined(userID: userID, deviceToken: deviceID.map(token))
            return { [call] in try poolse.ringEnded(call, stop: stop) }
        case .callBusy(let id, let userID):
            calls[id]?.busy.insert(userID)
            return { [] }
        case .peopleAdded(let id, _, let people):
            guard var call = calls[id] else { return { [] } }
            let ringing = call
            call.added += people.filter { $0 != call.caller.id && !call.joined.contains($0) }
            calls[id] = call
            return { try poolse.peopleAdded(people, to: ringing) }
        case .callJoined(let id, let userID, _):
            calls[id]?.joined.insert(userID)
            return { [] }
        case .callEnded(let id, let reason):
            guard let call = calls.removeValue(forKey: id) else { return { [] } }
            return { try poolse.callEnded(call, reason: reason) }
        case .messageSent(let conversationID, let id, let sender, let text, let kind, let mentions):
            messages[conversationID, default: []].append((id, sender))
            let position = messages[conversationID]!.count
            cursors[conversationID, default: [:]][sender] = position
            let message = Message(id: id, conversationID: conversationID, sender: user(sender),
                                  kind: kind, text: text, mentions: Set(mentions), sentAt: nowMs)
            let conversation = conversation(conversationID)
            let totals = UnreadTotals(Dictionary(uniqueKeysWithValues: conversation.members.map { ($0, unreadTotal(of: $0)) }))
            return { try poolse.messageSent(message, in: conversation, unread: totals) }
        case .conversationRead(let conversationID, let reader, let through):
            let list = messages[conversationID] ?? []
            guard let index = list.firstIndex(where: { $0.id == through }) else { return { [] } }
            let previous = cursors[conversationID]?[reader] ?? 0
            let next = max(previous, index + 1)
            let passed = list[min(previous, next)..<next].filter { $0.sender != reader }.count
            cursors[conversationID, default: [:]][reader] = next
            let move = ReadCursorMove(readerID: reader, conversationID: conversationID, previousPosition: Int64(previous),
                                      newPosition: Int64(next), unreadMessagesPassed: passed, unreadTotal: unreadTotal(of: reader))
            return { try poolse.readCursorMoved(move) }
        case .yamaMessage(let roomID, let id, let author, let text):
            let room = scenario.rooms.first { $0.id == roomID }!
            let members = room.members.map { YamaMember(userID: $0, displayName: user($0).displayName,
                                                         status: dnd.contains($0) ? .doNotDisturb : .available) }
            let yamaRoom = YamaRoom(slug: room.id, name: room.name, members: members, mutedBy: mutes[roomID] ?? [])
            let rules = YamaRules(tenant: YamaTenant(id: scenario.tenant, iosBundleID: bundleID), devices: store)
            let message = YamaMessage(id: id, authorID: author, authorName: user(author).displayName, text: text)
            return { try rules.messageCreated(message, in: yamaRoom) }
        case .userStatus(let userID, let doNotDisturb):
            if doNotDisturb { dnd.insert(userID) } else { dnd.remove(userID) }
            return { [] }
        case .roomMuted(let roomID, let userID, let muted):
            if muted { mutes[roomID, default: []].insert(userID) } else { mutes[roomID]?.remove(userID) }
            return { [] }
        case .replySent(let conversationID, let id, let author, let text, let unread):
            let conversation = scenario.conversations.first { $0.id == conversationID }!
            let count = unread ?? (conciergeUnread[conversationID, default: 0] + 1)
            conciergeUnread[conversationID] = count
            let app = ConciergeApp(name: scenario.conciergeApp.name, iosBundleID: bundleID, fcmProjectID: fcmProject,
                                   showTeamNames: scenario.conciergeApp.showTeamNames)
            let replyAuthor: ConciergeReplyAuthor = switch author {
            case .teamMember(let name): .teamMember(name: name)
            case .ai: .ai
            }
            let rules = ConciergeRules(app: app, devices: store)
            let reply = ConciergeReply(conversationID: conversationID, messageID: id, author: replyAuthor, text: text, unread: count)
            let customer = conversation.customer!
            return { try rules.reply(reply, toCustomer: customer) }
        case .customerMessage(let conversationID, _):
            // The customer writes in the chat, so they have read every reply.
            conciergeUnread[conversationID] = 0
            return { [] }
        case .deviceRegistered(let person, let device, _):
            know(device)
            store.register(ScenarioDeviceIndex.Entry(person: person, device: device).storedDevice)
            return { [] }
        case .deviceUnregistered(let deviceID):
            store.remove(token: token(deviceID))
            return { [] }
        case .gatewayToken:
            return { [] }
        }
    }

    /// poolse: the person's messages from others not yet passed by their read cursor, over
    /// every conversation they are in ("the unread totals follow from the messages sent and read").
    func unreadTotal(of userID: String) -> Int {
        var total = 0
        for (conversationID, list) in messages {
            guard conversation(conversationID).members.contains(userID) else { continue }
            let position = cursors[conversationID]?[userID] ?? 0
            total += list[min(position, list.count)...].filter { $0.sender != userID }.count
        }
        return total
    }
}
