import Encoding
import Foundation
import JSON
import PushModel
import RecordLine

/// A bad parameter of `GET /requests` or `/requests/count`: answered 400 `{"error": …}`.
public struct JournalQueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The parameter at fault, as written in the query string.
    public var parameter: String
    public var message: String
    public var description: String { "\(parameter): \(message)" }
}

/// What `GET /requests?…` and `GET /requests/count?…` ask of the journal: filters (every one
/// optional, all of them must hold), a cursor (`since`), a page size (`limit`) and, for a long
/// poll, how many matches to wait for (`min`) and for how long (`wait_ms`).
public struct JournalQuery: Sendable, Equatable {
    /// `route=apns|fcm|oauth|unknown`.
    public var route: GatewayRoute?
    /// `token=T`, in its comparable form (`AddressedDevice.comparable`): the device token of an
    /// APNs path or an FCM `message.token`, as `pushproof check --expect` compares it.
    public var token: String? {
        didSet { tokenHash = token.map { JournalToken.hash($0.utf8) } }
    }
    /// `token` as the journal's slots keep it (`JournalToken`), worked out once.
    private(set) var tokenHash: UInt64?
    /// `spec=ID`: the verdict's spec id (with `serve --specs`).
    public var spec: String?
    /// `status=N`: the answer's HTTP status (0: reset or dropped by an injected fault).
    public var status: Int?
    /// `reason=R`: APNs reason, FCM errorCode or OAuth error.
    public var reason: String?
    /// `since=SEQ`: only requests with `seq > SEQ` (pass the last `seq` seen to page on).
    public var since: UInt64 = 0
    /// `limit=N`: at most the N oldest matches (`/requests` only).
    public var limit: Int?
    /// `wait_ms=N`: answer once `minimum` requests match, or after N ms with what there is.
    public var waitMillis: Int?
    /// `min=N` (with `wait_ms`; default 1).
    public var minimum = 1

    /// Longest long poll: five minutes, longer than any test should wait for one push.
    public static let maxWaitMillis = 300_000

    public init() {}

    /// Parses the query string (after `?`, form-encoded: `%XX` and `+` for space). `counting`:
    /// for `/requests/count`, where `limit` means nothing and is refused.
    public init(queryString: Substring, counting: Bool) throws(JournalQueryError) {
        var seen = Set<String>()
        var minimum: Int?
        for field in queryString.split(separator: "&") {
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decoded(parts[0])
            let value = parts.count > 1 ? Self.decoded(parts[1]) : ""
            guard seen.insert(name).inserted else { throw JournalQueryError(parameter: name, message: "given twice") }
            guard !value.isEmpty else { throw JournalQueryError(parameter: name, message: "needs a value (\(name)=…)") }
            switch name {
            case "route":
                guard let route = GatewayRoute(rawValue: value) else {
                    throw JournalQueryError(parameter: name, message: "\"\(value)\" is not a route (apns, fcm, oauth or unknown)")
                }
                self.route = route
            case "token":
                token = AddressedDevice.comparable(value)
                tokenHash = token.map { JournalToken.hash($0.utf8) }  // an initializer runs no didSet
            case "spec": spec = value
            case "reason": reason = value
            case "status": status = try Self.integer(value, name, in: 0...999)
            case "since":
                guard let since = UInt64(value) else {
                    throw JournalQueryError(parameter: name, message: "\"\(value)\" is not a sequence number (0 or more)")
                }
                self.since = since
            case "limit":
                guard !counting else { throw JournalQueryError(parameter: name, message: "only /requests takes a limit, not /requests/count") }
                limit = try Self.integer(value, name, in: 1...Int.max)
            case "wait_ms": waitMillis = try Self.integer(value, name, in: 0...Self.maxWaitMillis)
            case "min": minimum = try Self.integer(value, name, in: 1...Int.max)
            default:
                throw JournalQueryError(parameter: name, message: "unknown parameter (route, token, spec, status, reason, since, "
                                        + (counting ? "" : "limit, ") + "wait_ms, min)")
            }
        }
        if let minimum {
            guard waitMillis != nil else { throw JournalQueryError(parameter: "min", message: "needs wait_ms (how long to wait for it)") }
            if let limit, limit < minimum {
                throw JournalQueryError(parameter: "limit", message: "\(limit) is below min=\(minimum): the wait could never be met")
            }
            self.minimum = minimum
        }
    }

    /// For a candidate the journal could not decide for certain from its slot: `token=` (the
    /// slot's hash picked it, `JournalToken`; the line's path or body confirms it) and, once the
    /// journal has more distinct reasons or spec ids than it lists (`JournalStrings`), `reason=`
    /// and `spec=`. Runs outside the journal's lock.
    func matchesLine(_ line: RequestJournal.Line) -> Bool {
        let bytes = line.bytes
        if reason != nil || spec != nil {
            // The body is not needed here: its `json` is only validated, not built.
            guard let value = try? JSONParser.parse(bytes, leavingRaw: RecordLine.name(RecordLine.Field.json)).value else { return false }
            if let reason, value[RecordLine.name(RecordLine.Field.response)]?[RecordLine.name(RecordLine.Field.reason)]?.stringValue != reason { return false }
            if let spec, value[RecordLine.name(RecordLine.Field.verdict)]?[RecordLine.name(RecordLine.Field.spec)]?.stringValue != spec { return false }
        }
        guard let token else { return true }
        let addressed: String?
        switch line.route {
        case .apns:
            // Only the member needed is built (the rest of the line is only validated).
            guard case .found(let path)? = try? JSONParser.member(RecordLine.name(RecordLine.Field.path), ofTopLevelObjectIn: bytes) else { return false }
            addressed = path.stringValue.flatMap { AddressedDevice.token(route: .apns, path: $0, body: []) }
        case .fcm:
            // The line is one this build wrote: the body is the `json` member's bytes, or a `body` string.
            guard let exchange = try? RecordedExchange(decoding: bytes) else { return false }
            addressed = AddressedDevice.token(route: .fcm, path: "", body: exchange.body)
        case .oauth, .unknown: addressed = nil
        }
        return addressed.map(AddressedDevice.comparable) == token
    }

    private static func integer(_ text: String, _ name: String, in range: ClosedRange<Int>) throws(JournalQueryError) -> Int {
        guard let value = Int(text), range.contains(value) else {
            let bounds = range.upperBound == Int.max ? "of \(range.lowerBound) or more" : "in \(range.lowerBound)…\(range.upperBound)"
            throw JournalQueryError(parameter: name, message: "\"\(text)\" is not a whole number \(bounds)")
        }
        return value
    }

    /// Form-decoded (`+` a space, `%XX`); a bad escape leaves the text as written.
    private static func decoded(_ text: Substring) -> String {
        PercentEncoding.decode(text.utf8, plusIsSpace: true).flatMap { String(validating: $0, as: UTF8.self) }
            ?? text.replacingOccurrences(of: "+", with: " ")
    }
}
