// What a sender hands to a transport: one HTTP request to one gateway for one device.
import JSON

/// The gateway a push goes through.
public enum PushTransport: String, Sendable, Codable, CaseIterable {
    case apns
    case fcm
}

/// Which of the gateway's services a request was for: the record line's `route`, the spec
/// files' `match.route`, the key of `/metrics`' counters and of the journal's filters.
public enum GatewayRoute: String, Sendable, CaseIterable {
    /// `POST /3/device/{token}` (and every other path on an HTTP/2 APNs-looking request).
    case apns
    /// `POST /v1/projects/{project}/messages:send`.
    case fcm
    /// `POST /token` (Google OAuth2 JWT-bearer grant).
    case oauth
    /// Anything else: answered 404.
    case unknown

    /// The route a push of `transport` goes to.
    public init(_ transport: PushTransport) {
        switch transport {
        case .apns: self = .apns
        case .fcm: self = .fcm
        }
    }

    /// The push transport of this route; nil for the routes that carry no push (`oauth`, `unknown`).
    public var transport: PushTransport? {
        switch self {
        case .apns: .apns
        case .fcm: .fcm
        case .oauth, .unknown: nil
        }
    }

    /// A push send (APNs or FCM), not a token grant or an unknown path.
    public var carriesPushes: Bool { transport != nil }
}

public enum DevicePlatform: String, Sendable, Codable, CaseIterable {
    case ios
    case android
}

/// On iOS an app holds two tokens: the PushKit (`voip`) token for incoming calls and the
/// regular APNs (`alert`) token for everything else (poolse seed, "Overview").
public enum IOSTokenKind: String, Sendable, Codable, CaseIterable {
    case voip
    case alert
}

/// A registered device: one push token of one user.
public struct Device: Sendable, Hashable, Codable {
    public var userID: String
    public var platform: DevicePlatform
    /// iOS only; `nil` on Android.
    public var kind: IOSTokenKind?
    public var token: String

    public init(userID: String, platform: DevicePlatform, kind: IOSTokenKind? = nil, token: String) {
        self.userID = userID
        self.platform = platform
        self.kind = platform == .ios ? (kind ?? .alert) : nil
        self.token = token
    }

    public var transport: PushTransport { platform == .ios ? .apns : .fcm }
}

/// One push ready to go on the wire.
/// APNs: `POST /3/device/<device.token>` with `headers` (apns-*) and `body` (the payload).
/// FCM: `POST /v1/projects/<project>/messages:send` with `body` = `{"message": {...}}`
/// that already names `device.token`.
public struct PushRequest: Sendable {
    public var device: Device
    /// Which seed push this is, e.g. "poolse.ring", "yama.message", "concierge.reply".
    public var kind: String
    /// Lowercase names. APNs: apns-push-type, apns-topic, apns-priority, apns-expiration,
    /// apns-collapse-id as the rule needs. Transports add authorization and content-type.
    public var headers: [(name: String, value: String)]
    /// The body, or for a push made from a template, the body without the device's token.
    private var storedBody: [UInt8]
    /// Where the device's token goes in `storedBody`; nil: `storedBody` is the body.
    private var tokenOffset: Int?

    public init(device: Device, kind: String, headers: [(name: String, value: String)] = [], body: [UInt8]) {
        self.device = device
        self.kind = kind
        self.headers = headers
        storedBody = body
    }

    /// A push whose body is `template` with the device's token, as written, at `tokenOffset`
    /// (inside a JSON string: the token must need no escaping). One template serves a fan-out
    /// of FCM messages that differ only by their token: a 50,000-phone ring holds one body
    /// until each push is sent, not 50,000 of ~600 bytes.
    public init(device: Device, kind: String, headers: [(name: String, value: String)] = [], template: [UInt8], tokenOffset: Int) {
        self.init(device: device, kind: kind, headers: headers, body: template)
        self.tokenOffset = tokenOffset
    }

    /// The bytes to send (made from the template when there is one).
    public var body: [UInt8] {
        get {
            guard let offset = tokenOffset else { return storedBody }
            var whole: [UInt8] = []
            whole.reserveCapacity(storedBody.count + device.token.utf8.count)
            whole.append(contentsOf: storedBody[..<offset])
            whole.append(contentsOf: device.token.utf8)
            whole.append(contentsOf: storedBody[offset...])
            return whole
        }
        set {
            storedBody = newValue
            tokenOffset = nil
        }
    }

    /// The template and where the token goes, for a push made from one.
    public var template: (bytes: [UInt8], tokenOffset: Int)? { tokenOffset.map { (storedBody, $0) } }

    public var transport: PushTransport { device.transport }
}

/// The push the reference rules decided for a device, and the scenario time they decided it at
/// (their clock: times in it, such as an expiration, are relative to that).
public struct ContentReference: Sendable {
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var decidedAtMs: Int64
    /// Where the device's token was cut out of `body`, if it was (`cuttingToken`): then one
    /// body serves a whole fan-out of FCM messages that differ only by their token.
    public private(set) var tokenOffset: Int? {
        get { storedTokenOffset.map(Int.init) }
        set { storedTokenOffset = newValue.map(Int32.init) }
    }
    // Four bytes, not nine: a fan-out holds one reference per push, and an `Int?` made every
    // `ExpectedPush` of a 100,000-person call 8 bytes longer. A body is far below 2 GiB.
    private var storedTokenOffset: Int32?

    public init(headers: [(name: String, value: String)], body: [UInt8], decidedAtMs: Int64) {
        self.headers = headers
        self.body = body
        self.decidedAtMs = decidedAtMs
    }

    /// The reference of `push` with its token cut out of the body when it can be: at once for
    /// a push made from a template, else found in the body (`cuttingToken`). nil: not cut.
    public static func cut(of push: PushRequest, decidedAtMs: Int64) -> ContentReference? {
        if let template = push.template {
            var reference = ContentReference(headers: push.headers, body: template.bytes, decidedAtMs: decidedAtMs)
            reference.tokenOffset = template.tokenOffset
            return reference
        }
        return ContentReference(headers: push.headers, body: push.body, decidedAtMs: decidedAtMs).cuttingToken(push.device.token)
    }

    /// `body` without `token`'s first occurrence as a JSON string value (`"token":"…"`); nil
    /// when it holds none.
    public func cuttingToken(_ token: String) -> ContentReference? {
        guard tokenOffset == nil else { return nil }
        let key = Self.tokenKey
        let token = token.utf8
        let quote = UInt8(ascii: "\"")
        return body.withUnsafeBufferPointer { bytes -> ContentReference? in
            guard bytes.count > key.count + token.count else { return nil }
            var found: Int?
            for index in 0...(bytes.count - key.count) where bytes[index] == quote && bytes[index..<(index + key.count)].elementsEqual(key) {
                found = index + key.count
                break
            }
            guard let start = found, start + token.count < bytes.count,
                  bytes[start..<(start + token.count)].elementsEqual(token), bytes[start + token.count] == quote else { return nil }
            var cut = self
            var rest: [UInt8] = []
            rest.reserveCapacity(bytes.count - token.count)
            rest.append(contentsOf: bytes[..<start])
            rest.append(contentsOf: bytes[(start + token.count)...])
            cut.body = rest
            cut.tokenOffset = start
            return cut
        }
    }

    private static let tokenKey = Array(#""token":""#.utf8)

    /// Whether `body` is this reference's body with `token` where it was cut out: the whole
    /// reference is not built to find that out (a fan-out's pushes mostly say exactly it).
    public func bodyEquals(_ sent: [UInt8], token: String) -> Bool {
        guard let offset = tokenOffset else { return sent == body }
        var token = token
        return token.withUTF8 { token in
            sent.withUnsafeBufferPointer { sent in
                body.withUnsafeBufferPointer { body in
                    sent.count == body.count + token.count
                        && bytesEqual(UnsafeBufferPointer(rebasing: sent[..<offset]), UnsafeBufferPointer(rebasing: body[..<offset]))
                        && bytesEqual(UnsafeBufferPointer(rebasing: sent[offset..<(offset + token.count)]), token)
                        && bytesEqual(UnsafeBufferPointer(rebasing: sent[(offset + token.count)...]),
                                      UnsafeBufferPointer(rebasing: body[offset...]))
                }
            }
        }
    }

    /// The reference whole again, with `token` where it was cut out.
    public func withToken(_ token: String) -> ContentReference {
        guard let offset = tokenOffset else { return self }
        var whole = self
        whole.body = Array(body[..<offset]) + Array(token.utf8) + body[offset...]
        whole.tokenOffset = nil
        return whole
    }
}

/// Where devices live. Registering is idempotent; a removed device gets no later push.
public protocol DeviceStore: Sendable {
    func register(_ device: Device) throws
    /// Removes the device with this token; returns whether one was there.
    @discardableResult func remove(token: String) throws -> Bool
    func devices(of userID: String) throws -> [Device]
    func allDevices() throws -> [Device]
}
