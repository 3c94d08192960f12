// The rules `check` judges over the whole traffic, not one request: they span connections and,
// with several recordings (gateway replicas with one configuration), replicas. Each observes the
// requests in arrival order (`ArrivalOrderMerge`) and keeps its first findings.
import Encoding
import JSON
import Metrics
import PushModel
import RecordLine
import Reports

/// Where a recorded request is: its recording (a replica) and its `seq`.
public struct RecordPlace: Hashable, Sendable, CustomStringConvertible {
    /// The replica's name; nil when one recording is checked (findings then say only `#seq`,
    /// as they always did).
    public var replica: String?
    public var sequence: Int

    public init(replica: String? = nil, sequence: Int) {
        self.replica = replica
        self.sequence = sequence
    }

    /// `#12`, or `gw-b #12` with several recordings.
    public var description: String { replica.map { "\($0) #\(sequence)" } ?? "#\(sequence)" }

    /// `seq` (and `replica`, when named) under `prefix` (`gone_seq`, `gone_replica`).
    func add(to object: inout JSONObject, prefix: String = "") {
        object[prefix + "seq"] = .number(Double(sequence))
        if let replica { object[prefix + "replica"] = .string(replica) }
    }
}

/// No push to a token a gateway answered gone (APNs 410 Unregistered or ExpiredToken, FCM 404
/// UNREGISTERED: `AnswerClass.gone`), whichever replica answered it: a sender's token store is
/// one, so a gone answer from any replica ends the token for all of them.
///
/// A push counts when it arrived after the gone answer was decided (`answered_ns` against
/// `arrival_ns`): one already on its way while the answer was being decided could not have
/// known. Without those times (a hand-made line) the order of the lines decides. A 2xx from
/// the replica that answered the token gone means that gateway holds it live again (registered
/// again through its control API): that push passes, and the token is live from then on.
public struct GoneTokenPushes {
    public struct Finding: Sendable, CustomStringConvertible {
        public var token: DeviceToken
        public var push: RecordPlace
        public var gone: RecordPlace
        /// How the token was answered gone: `410 Unregistered`.
        public var goneAnswer: String
        /// From the gone answer to the push's arrival; nil without times.
        public var afterNanos: UInt64?

        public var description: String {
            let when = afterNanos.map { " \(Format.milliseconds($0)) ms" } ?? ""
            return "push \(push) to \(token) arrived\(when) after \(gone) was answered \(goneAnswer): the token is gone for every replica"
        }

        func json() -> JSONValue {
            var object: JSONObject = ["token": .string(token.comparable), "gone_answer": .string(goneAnswer)]
            push.add(to: &object)
            gone.add(to: &object, prefix: "gone_")
            if let afterNanos { object["after_ms"] = .number(Double(afterNanos) / 1e6) }
            return .object(object)
        }
    }

    public static let name = "no push to a token answered gone"

    private var gone: [DeviceToken: (place: RecordPlace, answer: String, answeredNanos: UInt64?)] = [:]
    /// Pushes judged.
    public private(set) var judged = 0
    public private(set) var findings = FirstExamples<Finding>()

    public init() {}

    /// `arrivalNanos`: when the push arrived (nil when the line does not say).
    public mutating func observe(_ exchange: RecordedExchange, at place: RecordPlace, arrivalNanos: UInt64?) {
        guard exchange.isPush, let token = exchange.deviceToken else { return }
        judged += 1
        let answer = AnswerClass.of(status: exchange.status ?? 0, reason: exchange.reason, tokenIsBad: false)
        if let dead = gone[token] {
            if answer == .accepted, dead.place.replica == place.replica {
                gone[token] = nil
                return
            }
            let after: UInt64?? = switch (arrivalNanos, dead.answeredNanos) {
            case let (arrived?, answered?): arrived > answered ? .some(arrived - answered) : nil
            default: .some(nil)
            }
            if let after {
                findings.add(Finding(token: token, push: place, gone: dead.place, goneAnswer: dead.answer, afterNanos: after))
            }
        }
        guard answer == .gone else { return }
        let answered = exchange.answeredNanos ?? arrivalNanos
        // The earliest answer counts: lines merge by arrival, and one answered later may come first.
        if let dead = gone[token], !(answered.map { answered in dead.answeredNanos.map { answered < $0 } ?? false } ?? false) { return }
        gone[token] = (place, "\(exchange.status ?? 0)" + (exchange.reason.map { " " + $0 } ?? ""), answered)
    }
}

/// A provider token as its record line keeps it: `Redaction.authorization` leaves a JWT's
/// header and claims and replaces only the signature, so `kid`, `iss` (the team) and `iat` tell
/// two tokens apart (two signings of the same header and claims are one token here).
public struct RecordedProviderToken: Hashable, Sendable, CustomStringConvertible {
    public var keyID: String
    public var teamID: String
    /// `iat` as written (a number, or a string of digits some senders send).
    public var issuedAt: String

    public init(keyID: String, teamID: String, issuedAt: String) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }

    /// From a recorded `authorization` value, `bearer <header>.<claims>.<redacted>`; nil for
    /// anything else (a certificate connection has none, a malformed token is not one).
    public init?(authorization: String) {
        let utf8 = authorization.utf8
        guard utf8.count > 7, String(decoding: utf8.prefix(7), as: UTF8.self).lowercased() == "bearer " else { return nil }
        let segments = authorization.dropFirst(7).drop { $0 == " " }.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return nil }
        func object(_ segment: Substring) -> JSONValue? {
            guard let bytes = Base64URL.decode(segment), let value = try? JSONParser.parse(bytes),
                  value.objectValue != nil else { return nil }
            return value
        }
        guard let header = object(segments[0]), let claims = object(segments[1]),
              let keyID = header["kid"]?.stringValue, let teamID = claims["iss"]?.stringValue, let issuedAt = claims["iat"] else { return nil }
        self.init(keyID: keyID, teamID: teamID, issuedAt: issuedAt.stringValue ?? issuedAt.serialized())
    }

    /// `kid K, iat 1700000000`.
    public var description: String { "kid \(keyID), iat \(issuedAt)" }
}

/// Apple's TooManyProviderTokenUpdates over every recording at once (`ProviderTokenUpdates`,
/// the rule the gateway answers by): per team, across every connection of every replica. A
/// sender scaled out to replicas that each mint their own token trips it, though each replica
/// alone saw one token and accepted it.
///
/// What one gateway could see it judged itself, and its answers stand: a finding is a new token
/// within 20 minutes of the team's previous new one *on another replica*. A gateway's own 429
/// TooManyProviderTokenUpdates is left to it (the sender was told), and a new token it accepted
/// after one of its own (its updates forgotten, `DELETE /provider-tokens`) is the team's new
/// one; so one recording alone never fails this rule. Judged on APNs requests carrying a
/// provider token the gateway did not refuse as a token (a forged, expired or unknown one is
/// refused before Apple counts it), at their arrival.
public struct ProviderTokenUpdatesAcrossReplicas {
    public struct Finding: Sendable, CustomStringConvertible {
        public var token: RecordedProviderToken
        public var place: RecordPlace
        /// The request that brought the team's previous new token.
        public var previous: RecordPlace
        public var sinceSeconds: Int64

        public var description: String {
            "\(place): team \(token.teamID)'s new provider token (\(token)) \(sinceSeconds) s after its previous new one "
                + "(\(previous)): Apple answers 429 TooManyProviderTokenUpdates (a team may change tokens no more often than every "
                + "\(ProviderTokenUpdates.minimumRefreshIntervalSeconds / 60) minutes, across all its connections: share one token)"
        }

        func json() -> JSONValue {
            var object: JSONObject = ["team": .string(token.teamID), "kid": .string(token.keyID), "iat": .string(token.issuedAt),
                                      "since_seconds": .number(Double(sinceSeconds))]
            place.add(to: &object)
            previous.add(to: &object, prefix: "previous_")
            return .object(object)
        }
    }

    public static let name = "provider-token updates per team (TooManyProviderTokenUpdates)"

    /// Answers that refuse the token itself: Apple checks it before counting an update.
    private static let tokenRefusals: Set<String> = Set([
        APNSReason.missingProviderToken, .invalidProviderToken, .expiredProviderToken, .badEnvironmentKeyIdInToken,
        .unrelatedKeyIdInToken,
    ].map(\.rawValue))

    private var updates = ProviderTokenUpdates()
    /// Recorded authorization values read already: a token repeats on thousands of requests,
    /// and reading one is two base64 decodes and two JSON parses. Emptied when full.
    private var read: [String: RecordedProviderToken?] = [:]
    private static let readCapacity = 256
    /// Per team, where its last admitted new token came from.
    private var lastNew: [String: RecordPlace] = [:]
    /// Requests with a provider token judged.
    public private(set) var judged = 0
    public private(set) var findings = FirstExamples<Finding>()

    public init() {}

    public mutating func observe(_ exchange: RecordedExchange, at place: RecordPlace, arrivalNanos: UInt64?) {
        guard exchange.route == .apns, let arrivalNanos,
              let authorization = exchange.headers.first(where: { $0.name.lowercased() == "authorization" })?.value,
              let token = token(authorization),
              !(exchange.status == 403 && exchange.reason.map(Self.tokenRefusals.contains) == true),
              exchange.reason != APNSReason.tooManyProviderTokenUpdates.rawValue else { return }
        judged += 1
        let team = token.teamID, identity = "\(token.keyID).\(token.issuedAt)", now = Int64(arrivalNanos / 1_000_000_000)
        switch updates.admit(identity, team: team, nowSeconds: now) {
        case .known: break
        case .new: lastNew[team] = place
        case .tooSoon where lastNew[team]?.replica == place.replica:
            updates.introduce(identity, team: team, nowSeconds: now)
            lastNew[team] = place
        case .tooSoon(let since):
            findings.add(Finding(token: token, place: place, previous: lastNew[team] ?? place, sinceSeconds: since))
        }
    }

    private mutating func token(_ authorization: String) -> RecordedProviderToken? {
        if let known = read[authorization] { return known }
        if read.count >= Self.readCapacity { read.removeAll(keepingCapacity: true) }
        let token = RecordedProviderToken(authorization: authorization)
        read[authorization] = .some(token)
        return token
    }
}
