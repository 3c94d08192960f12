import RecordLine
import JSON

/// What was wrong with a refused credential, as a small fixed set: the `detail` label of
/// `pushproof_auth_failures_total` (a label takes only these values, never free text, so the
/// metric's series stay bounded). The free-text explanation goes in the record line's
/// `response.detail`.
public enum AuthFailureKind: String, Sendable, CaseIterable {
    /// No credential at all: no `authorization` header (and, for APNs, no client certificate).
    case missing
    /// Not `bearer <token>`, not a JWT, or a JWT without the claims it needs.
    case malformed
    /// A JWT whose `alg` is not the one the protocol uses (ES256 for APNs, RS256 for Google).
    case wrongAlgorithm = "wrong_algorithm"
    /// A `kid` (APNs key, service-account key) or `iss` (service account) that is not configured.
    case unknownKey = "unknown_key"
    case badSignature = "bad_signature"
    /// The token's team is not the key's, or not the team the connection is bound to.
    case wrongTeam = "wrong_team"
    /// A key or certificate for the other APNs environment.
    case wrongEnvironment = "wrong_environment"
    /// An OAuth assertion whose `aud` is not a token endpoint this gateway answers for.
    case wrongAudience = "wrong_audience"
    case expired
    case issuedInFuture = "issued_in_future"
    /// An OAuth assertion asking for a token that lives longer than an hour.
    case tooLongLived = "too_long_lived"
    /// An APNs team that changed its provider token more often than every 20 minutes.
    case tooManyUpdates = "too_many_updates"
    /// An FCM access token this gateway's `/token` never issued.
    case notIssued = "not_issued"
    /// An FCM access token of a service account that may not send to the request's project.
    case wrongProject = "wrong_project"
    /// A token or assertion without a scope that allows sending.
    case insufficientScope = "insufficient_scope"
    /// A client certificate no configured authority issued (or not a push certificate).
    case untrustedCertificate = "untrusted_certificate"
    /// A client certificate outside its validity period.
    case expiredCertificate = "expired_certificate"
    /// A client certificate that does not cover the request's topic.
    case certificateTopic = "certificate_topic"
}

/// A refused credential: its kind (counted) and the gateway's own explanation (recorded as
/// `response.detail`, never sent: Apple's and Google's answer bodies stay theirs).
struct AuthFailure: Error, Sendable, Equatable {
    var kind: AuthFailureKind
    var detail: String

    init(_ kind: AuthFailureKind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }
}

/// A JWT `iat`/`exp` read as whole seconds since the epoch, and how it was written.
///
/// RFC 7519 §2: a NumericDate is a JSON numeric value, "non-integer values can be
/// represented". Senders differ: most write an integer, Python's apns2 writes `time.time()`
/// (a float), kalyke-apns and older APNSwift write a string of digits, which is not a
/// NumericDate at all but which Apple accepts too.
enum NumericDate: Equatable {
    case integer(Int64)
    /// A non-integer number: its whole seconds (rounded down) and the value as written.
    case fraction(Int64, Double)
    /// A JSON string of decimal digits (optionally with a fraction), not a number.
    case digitString(Int64, String)

    /// Whole seconds, rounded down.
    var seconds: Int64 {
        switch self {
        case .integer(let s), .fraction(let s, _), .digitString(let s, _): s
        }
    }

    /// Far beyond any real date (the year ~285 million), and well inside Int64 and exact Doubles.
    private static let limit: Double = 9_007_199_254_740_991

    /// nil when `value` is neither a number nor a string of digits (or absurdly large).
    init?(_ value: JSONValue?, acceptingStrings: Bool) {
        switch value {
        case .number(let number)?:
            guard number.isFinite, abs(number) <= Self.limit else { return nil }
            let whole = number.rounded(.down)
            self = whole == number ? .integer(Int64(whole)) : .fraction(Int64(whole), number)
        case .string(let text)? where acceptingStrings:
            let parts = text.utf8.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
            let isDigits = { (part: Substring.UTF8View) in !part.isEmpty && part.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
            guard let integerPart = parts.first, isDigits(integerPart), integerPart.count <= 15,
                  parts.count == 1 || isDigits(parts[1]),
                  let seconds = Int64(Substring(integerPart)) else { return nil }
            self = .digitString(seconds, text)
        default:
            return nil
        }
    }

    /// A note for `gateway_warnings` when the value is accepted but not an integer NumericDate;
    /// nil for an integer. `claim` is the claim's name (`iat`, `exp`), `acceptedBy` who accepts it.
    /// A fraction is what RFC 7519 allows: informational. A string of digits breaks it: a warning.
    func warning(claim: String, acceptedBy: String) -> GatewayNote? {
        switch self {
        case .integer: nil
        case .fraction(_, let number):
            .informational("\(claim) is \(number), not an integer: RFC 7519 allows a non-integer NumericDate and \(acceptedBy) accepts it, but some JWT libraries refuse it")
        case .digitString(_, let text):
            .warning("\(claim) is the string \"\(text)\", not a JSON number: this breaks RFC 7519 §2 (a NumericDate is a JSON numeric value); \(acceptedBy) accepts it anyway")
        }
    }
}
