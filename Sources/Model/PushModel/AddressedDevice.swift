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
        // On the string's own bytes where it has them (a native string does): the byte view's
        // iterator and a compare chain a byte were a tenth of judging a 100,000-person call.
        let classes = token.utf8.withContiguousStorageIfAvailable(TokenBytes.classes) ?? Array(token.utf8).withUnsafeBufferPointer(TokenBytes.classes)
        // Already lowercase (as senders mostly send them), or not hex at all: no copy.
        return classes & (TokenBytes.other | TokenBytes.slash) == 0 && classes & TokenBytes.upperHex != 0 ? token.lowercased() : token
    }
}

/// What the bytes of a device token are, one bit a class, OR-ed over the token: one table load
/// a byte, where a chain of compares and branches a byte was ~1.7% of a gateway's request
/// (perf). The gateway's path check and `AddressedDevice.comparable` read tokens this way.
public enum TokenBytes {
    /// 0-9, a-f.
    public static let lowerHex: UInt8 = 1
    /// A-F.
    public static let upperHex: UInt8 = 2
    public static let slash: UInt8 = 4
    public static let other: UInt8 = 8

    private static let table: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
        switch byte {
        case 0x30...0x39, 0x61...0x66: lowerHex
        case 0x41...0x46: upperHex
        case 0x2F: slash
        default: other
        }
    }

    /// The classes of `bytes`, OR-ed.
    public static func classes(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt8 {
        var classes: UInt8 = 0
        table.withUnsafeBufferPointer { table in
            for byte in bytes { classes |= table[Int(byte)] }
        }
        return classes
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
