// Calls and rooms (poolse seed, "Ring", "Ring ended", "Call finished", "Missed call").
import PushModel

/// A call rings people; a room is joined at will. "Rooms never ring" and "Rooms never
/// produce" a missed call (poolse seed).
public enum CallKind: String, Sendable, Hashable {
    case call
    case room
}

/// What stopped someone's phone from ringing.
public enum RingStop: Sendable, Hashable {
    /// `userID` answered on `deviceToken`: their other Android devices stop.
    case answeredElsewhere(userID: String, deviceToken: String)
    /// `userID` declined on `deviceToken` (when known): their other Android devices stop.
    case declined(userID: String, deviceToken: String?)
    /// The whole call ended while phones were ringing: everyone still ringing stops.
    case callEnded(CallEndReason)

    public var reason: RingEndedReason {
        switch self {
        case .answeredElsewhere: .answeredElsewhere
        case .declined: .declined
        case .callEnded(let end): end.ringEndedReason
        }
    }
}

/// The state of a call or room as the rules see it.
public struct Call: Sendable, Hashable {
    public var id: String
    public var kind: CallKind
    public var conversation: Conversation
    public var caller: User
    public var media: CallMedia
    /// People rung when the call was placed, each once (kept so: the fan-outs at the call's
    /// end walk it, and a set to drop repeats there was 4 MB of a 100,000-member call's peak).
    public var rung: [String] {
        didSet { rung = Self.withoutRepeats(rung) }
    }
    /// People added later with "Add people" (they were rung too).
    public var added: [String]
    public var joined: Set<String>
    public var declined: Set<String>
    /// People whose phone refused the ring because they were on another call.
    public var busy: Set<String>
    /// Unix milliseconds when the ring gives up (`ring_deadline`).
    public var ringDeadline: Int64

    public init(
        id: String, kind: CallKind = .call, conversation: Conversation, caller: User, media: CallMedia,
        rung: [String] = [], added: [String] = [], joined: Set<String> = [], declined: Set<String> = [],
        busy: Set<String> = [], ringDeadline: Int64 = 0
    ) {
        self.id = id
        self.kind = kind
        self.conversation = conversation
        self.caller = caller
        self.media = media
        self.rung = Self.withoutRepeats(rung)
        self.added = added
        self.joined = joined
        self.declined = declined
        self.busy = busy
        self.ringDeadline = ringDeadline
    }

    /// "everyone else in the conversation when a call is placed" (poolse seed, "Ring").
    public static func placed(
        id: String, conversation: Conversation, caller: User, media: CallMedia, ringDeadline: Int64
    ) -> Call {
        // At its exact size: `filter` grows its result by doubling, and a 100,000-member
        // call's list took 131,072 slots (in the oracle's world and the sender's).
        var rung: [String] = []
        rung.reserveCapacity(conversation.members.count)
        for member in conversation.members where member != caller.id { rung.append(member) }
        return Call(id: id, kind: .call, conversation: conversation, caller: caller, media: media, rung: rung,
                    ringDeadline: ringDeadline)
    }

    /// Everyone ever rung, placed first then added, without repeats.
    public var everyoneRung: [String] {
        guard !added.isEmpty else { return rung }
        var seen = Set(rung)
        return rung + added.filter { seen.insert($0).inserted }
    }

    /// `ids` in order, each at its first place.
    private static func withoutRepeats(_ ids: [String]) -> [String] {
        // Sized once: a 100,000-member ring grew its set through every power of two (perf:
        // half of the time was `resize`).
        var seen = Set<String>(minimumCapacity: ids.count)
        let unique = ids.filter { seen.insert($0).inserted }
        return unique.count == ids.count ? ids : unique
    }

    /// Rung people whose phone is still ringing: not joined, declined or busy.
    public var stillRinging: [String] { everyoneRung.filter(isStillRinging) }

    /// Whether a rung person's phone is still ringing (`stillRinging` without the list: a
    /// fan-out walks `everyoneRung` with it, a 100,000-member list not made per slice).
    public func isStillRinging(_ userID: String) -> Bool {
        !joined.contains(userID) && !declined.contains(userID) && !busy.contains(userID)
    }

    /// "the caller, everyone rung, and everyone who joined" (poolse seed, "Call finished").
    /// Joiners not otherwise listed follow in id order so the fan-out is deterministic.
    public var everyoneInvolved: [String] {
        var people: [String] = []
        people.reserveCapacity(1 + rung.count + added.count + joined.count)
        forEachInvolved { people.append($0) }
        return people
    }

    /// `everyoneInvolved`, one at a time: a fan-out walks them without the list (1.6 MB a
    /// slice of a 100,000-member call's end). Everyone rung is listed once already; only the
    /// caller and the joiners can repeat, so no set of everyone is made either.
    public func forEachInvolved(_ body: (String) throws -> Void) rethrows {
        var joinersNotListed = joined
        joinersNotListed.remove(caller.id)
        try body(caller.id)
        for id in everyoneRung where id != caller.id {
            try body(id)
            if !joinersNotListed.isEmpty { joinersNotListed.remove(id) }
        }
        for id in joinersNotListed.sorted() { try body(id) }
    }

    /// "each person rung who never joined ..., except people who declined. People whose phone
    /// refused the ring because they were on another call (busy) do get it."
    public var missedBy: [String] { everyoneRung.filter(missed) }

    /// Whether a rung person missed the call (`missedBy` without the list).
    public func missed(_ userID: String) -> Bool {
        !joined.contains(userID) && !declined.contains(userID) && userID != caller.id
    }
}
