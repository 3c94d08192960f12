import JSON

/// The device a recorded push addressed, and the form in which two tokens are compared.
/// One place for `pushproof check --expect` and the control API's request journal
/// (`GET /requests?token=`), so both find the same pushes for a token.
public enum AddressedDevice {
    /// The device token of a request: APNs `/3/device/<token>` (apns.md: the token is the
    /// last path segment, a query string is not part of it), FCM `message.token` in the JSON
    /// body (fcm.md, `messages:send`). Nil for other routes and for requests that name none.
    public static func token(route: GatewayRoute, path: String, body: [UInt8]) -> String? {
        switch route {
        case .apns:
            let prefix = "/3/device/"
            guard path.hasPrefix(prefix) else { return nil }
            let token = path.dropFirst(prefix.count).prefix { $0 != "?" }
            return token.isEmpty ? nil : String(token)
        case .fcm:
            return (try? JSONParser.parse(body))?["message"]?["token"]?.stringValue
        case .oauth, .unknown:
            return nil
        }
    }

    /// The token as compared: APNs tokens are hex, and Apple treats them case-insensitively,
    /// so an all-hex token is lowercased; FCM tokens are case-sensitive and kept as they are.
    public static func comparable(_ token: String) -> String {
        var hasUppercase = false
        for byte in token.utf8 {
            switch byte {
            case 0x30...0x39, 0x61...0x66: continue
            case 0x41...0x46: hasUppercase = true
            default: return token
            }
        }
        // Already lowercase (as senders mostly send them): no copy.
        return hasUppercase ? token.lowercased() : token
    }
}

/// A device token in the form two are compared (`AddressedDevice.comparable`): the key wherever
/// pushes, deaths, registrations and a sender's store are matched by device. Made from the
/// token in any form (as a sender wrote it, or as a scenario lists it); `comparable` is the
/// form reports print. A literal is a token as written.
public struct DeviceToken: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let comparable: String

    public init(_ token: String) { comparable = AddressedDevice.comparable(token) }
    public init(stringLiteral token: String) { self.init(token) }

    public var description: String { comparable }

    public static func < (lhs: DeviceToken, rhs: DeviceToken) -> Bool { lhs.comparable < rhs.comparable }
}
