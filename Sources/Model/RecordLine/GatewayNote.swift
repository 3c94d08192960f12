/// Something the gateway noticed about a request besides the answer it gave, kept in the
/// record's verdict (`RecordedVerdict.gatewayWarnings` and `gatewayNotes`). Two kinds, kept apart by type because they are judged apart:
/// - `warning`: the request breaks a rule a real gateway or an RFC states, though the answer
///   was a success (an APNs push over HTTP/1.1, a digit-string `iat`): `check` fails the push;
/// - `informational`: something the RFCs allow and a reader may still want to know (a float
///   `iat`, which RFC 7519's NumericDate permits and some JWT libraries refuse): shown and
///   counted, never a failure.
public struct GatewayNote: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case warning
        case informational
    }

    public var kind: Kind
    public var text: String

    public init(_ kind: Kind, _ text: String) {
        self.kind = kind
        self.text = text
    }

    public static func warning(_ text: String) -> GatewayNote { GatewayNote(.warning, text) }
    public static func informational(_ text: String) -> GatewayNote { GatewayNote(.informational, text) }

    public var description: String { text }
}
