// A scenario: who exists, what happens, and which deliveries each event must cause
// (Specs/scenarios/README.md). Plain values only: the runner maps them onto a sender.
import JSON
import PushModel

public enum Product: String, Sendable, CaseIterable {
    case poolse
    case yama
    case concierge
}

public struct Scenario: Sendable {
    /// Where it came from (the file path), for reports.
    public var name: String
    public var description: String?
    public var product: Product
    /// nil: the spec set's configuration for the product (specset.json `config`).
    public var bundleID: String?
    public var fcmProject: String?
    /// Unix milliseconds of `at_ms: 0` (default 1793952000000, the seed's `sent_at`).
    public var startMs: Int64
    public var workspace: PoolseWorkspace
    public var tenant: String
    public var conciergeApp: ConciergeAppSettings
    public var people: ScenarioPeople
    public var conversations: [ScenarioConversation]
    public var rooms: [Room]
    /// Token states at the start, by device id.
    public var tokenStates: [(device: String, state: TokenState)]
    /// The gateway's faults, as `pushproof serve --config`'s `faults` object.
    public var faults: JSONValue?
    /// The gateway's answer rules, as `pushproof serve --config`'s `answer_rules` array (a
    /// rule's `match.device` already made the device's `token`).
    public var answerRules: JSONValue?
    public var events: [ScenarioEvent]
    /// nil: the reference rules are the oracle.
    public var expectations: [EventExpectation]?

    public init(name: String, product: Product) {
        self.name = name
        self.product = product
        description = nil
        bundleID = nil
        fcmProject = nil
        startMs = 1_793_952_000_000
        workspace = PoolseWorkspace()
        tenant = "acme"
        conciergeApp = ConciergeAppSettings()
        people = []
        conversations = []
        rooms = []
        tokenStates = []
        faults = nil
        answerRules = nil
        events = []
        expectations = nil
    }

    /// Every device of every person, in file order, then the new ones events register.
    public var devices: [ScenarioDevice] {
        people.devices + events.compactMap { event -> ScenarioDevice? in
            guard case .deviceRegistered(_, let device, isNew: true) = event.kind else { return nil }
            return device
        }
    }

    public func device(_ id: String) -> ScenarioDevice? { devices.first { $0.id == id } }
    public func person(_ id: String) -> Person? { people.index(ofID: id).map { people[$0] } }
}

/// poolse dashboard settings (poolse seed, "Push payloads").
public struct PoolseWorkspace: Sendable, Equatable {
    /// "Send chat notifications".
    public var chatNotifications = true
    /// "Group conversations": every message, or "Only @mentions".
    public var onlyMentionsInGroups = false
    /// "What a notification shows" (`preview`): false is `hidden`.
    public var fullPreview = true
    /// "Missed-call notifications" (`missed_calls`).
    public var missedCalls = true
    public init() {}
}

/// Concierge's app settings (Concierge seed, "Push notifications").
public struct ConciergeAppSettings: Sendable, Equatable {
    /// "otherwise your app's name".
    public var name = "Shop"
    /// "Show team names".
    public var showTeamNames = true
    public init() {}
}

public struct Person: Sendable, Equatable {
    public var id: String
    public var name: String
    public var externalID: String
    /// Yama: `dnd` mutes every push ("muted ... their account").
    public var doNotDisturb: Bool
    public var devices: [ScenarioDevice]

    public init(id: String, name: String, externalID: String, doNotDisturb: Bool = false, devices: [ScenarioDevice] = []) {
        self.id = id
        self.name = name
        self.externalID = externalID
        self.doNotDisturb = doNotDisturb
        self.devices = devices
    }
}

public enum ScenarioPlatform: String, Sendable, Equatable {
    case ios
    case android
}

public struct ScenarioDevice: Sendable, Equatable {
    public var id: String
    public var platform: ScenarioPlatform
    /// iOS only: `voip` (PushKit) or `alert` (the regular APNs token).
    public var voip: Bool
    public var token: String

    public init(id: String, platform: ScenarioPlatform, voip: Bool = false, token: String? = nil) {
        self.id = id
        self.platform = platform
        self.voip = platform == .ios && voip
        self.token = token ?? ScenarioTokens.token(forDevice: id, platform: platform)
    }

    /// "iOS PushKit", "iOS alert", "Android": what a report calls the token.
    public var kindName: String { platform == .android ? "Android" : voip ? "iOS PushKit" : "iOS alert" }
}

/// A poolse conversation, or a Concierge customer's conversation (`customer` set).
public struct ScenarioConversation: Sendable, Equatable {
    public var id: String
    public var kind: ConversationKind
    public var name: String?
    public var members: [String]
    public var mutedBy: [String]
    /// Concierge: whose conversation it is.
    public var customer: String?

    public init(id: String, kind: ConversationKind, name: String? = nil, members: [String] = [], mutedBy: [String] = [],
                customer: String? = nil) {
        self.id = id
        self.kind = kind
        self.name = name
        self.members = members
        self.mutedBy = mutedBy
        self.customer = customer
    }
}

/// A Yama room.
public struct Room: Sendable, Equatable {
    public var id: String
    public var name: String
    public var members: [String]
    public var mutedBy: [String]

    public init(id: String, name: String, members: [String], mutedBy: [String] = []) {
        self.id = id
        self.name = name
        self.members = members
        self.mutedBy = mutedBy
    }
}

/// How the gateway answers a device's token.
public enum TokenState: Sendable, Equatable {
    case valid
    /// APNs 410 Unregistered, FCM 404 UNREGISTERED.
    case gone(sinceMs: Int64?)
    /// APNs 410 ExpiredToken, FCM 404 UNREGISTERED.
    case expired
    /// APNs 400 BadDeviceToken, FCM 400 INVALID_ARGUMENT about the token.
    case bad
    /// APNs 400 DeviceTokenNotForTopic, FCM 403 SENDER_ID_MISMATCH.
    case otherSender

    public var name: String {
        switch self {
        case .valid: "valid"
        case .gone: "gone"
        case .expired: "expired"
        case .bad: "bad"
        case .otherSender: "other_sender"
        }
    }
}

/// Who wrote a Concierge reply.
public enum ReplyAuthor: Sendable, Equatable {
    case teamMember(name: String)
    case ai(name: String?)
}

public struct ScenarioEvent: Sendable {
    public enum Kind: Sendable, Equatable {
        // poolse calls and rooms
        case callPlaced(call: String, conversation: String, caller: String, media: CallMedia)
        case roomStarted(call: String, conversation: String, by: String, media: CallMedia)
        case callAnswered(call: String, user: String, device: String)
        case callDeclined(call: String, user: String, device: String?)
        case callBusy(call: String, user: String)
        case peopleAdded(call: String, by: String, people: [String])
        case callJoined(call: String, user: String, device: String?)
        case callEnded(call: String, reason: CallEndReason)
        // poolse messages
        case messageSent(conversation: String, message: String, sender: String, text: String, kind: MessageKind, mentions: [String])
        case conversationRead(conversation: String, reader: String, through: String)
        // Yama
        case yamaMessage(room: String, message: String, author: String, text: String)
        case userStatus(user: String, doNotDisturb: Bool)
        case roomMuted(room: String, user: String, muted: Bool)
        // Concierge
        case replySent(conversation: String, message: String, author: ReplyAuthor, text: String, unread: Int?)
        case customerMessage(conversation: String, text: String)
        // any product
        /// `isNew`: a device the file introduces here; else a known device registered again.
        case deviceRegistered(person: String, device: ScenarioDevice, isNew: Bool)
        case deviceUnregistered(device: String)
        case gatewayToken(device: String, state: TokenState)
    }

    public var kind: Kind
    /// Milliseconds after the scenario's start; nil: the previous event's time.
    public var atMs: Int64?
    /// The event's object as written, for senders that take the file's own words (a process
    /// speaking JSON lines gets exactly this).
    public var json: JSONValue
    /// `type` as written, e.g. "call.placed".
    public var type: String

    public init(kind: Kind, type: String, atMs: Int64? = nil, json: JSONValue = .null) {
        self.kind = kind
        self.type = type
        self.atMs = atMs
        self.json = json
    }
}

/// The exact deliveries one event must cause.
public struct EventExpectation: Sendable {
    public var event: Int
    /// The seed sentence the expectation is derived from.
    public var source: String?
    public var deliveries: [ExpectedDelivery]

    public init(event: Int, source: String? = nil, deliveries: [ExpectedDelivery]) {
        self.event = event
        self.source = source
        self.deliveries = deliveries
    }
}

public struct ExpectedDelivery: Sendable {
    public var device: String
    public var spec: String
    /// Body values that must hold, by JSON Pointer into the request body.
    public var fields: [(pointer: JSONPointer, value: JSONValue)]
    /// Request headers that must hold, by lowercase name (`apns-collapse-id`): the value, or
    /// nil for "absent".
    public var headers: [(name: String, value: String?)]
    public var source: String?

    public init(device: String, spec: String, fields: [(pointer: JSONPointer, value: JSONValue)] = [],
                headers: [(name: String, value: String?)] = [], source: String? = nil) {
        self.device = device
        self.spec = spec
        self.fields = fields
        self.headers = headers
        self.source = source
    }
}
