import PushModel

/// The `PushRequest.kind` of every seed push.
public enum PushKind {
    public static let ring = "poolse.ring"
    public static let ringEnded = "poolse.ring_ended"
    public static let callFinished = "poolse.finished"
    public static let missedCall = "poolse.missed"
    public static let newMessage = "poolse.message"
    public static let conversationRead = "poolse.read"
    public static let yamaMessage = "yama.message"
    public static let conciergeReply = "concierge.reply"
}

/// Collects the pushes of one event. Payloads are built lazily, at most once per recipient
/// and platform, and shared by that recipient's devices (arrays are copy-on-write).
struct Fanout {
    var requests: [PushRequest] = []
    /// The last APNs body built: a recipient whose body has the same bytes shares its storage
    /// (with one grant issuer for all, a ring to 100,000 people is one body, not 100,000).
    private var lastAppleBody: [UInt8] = []

    /// The last FCM message template built, shared alike.
    private var lastAndroidTemplate: [UInt8] = []

    /// One FCM data message per Android device in `devices` (skipping `skipToken`), made from
    /// one template with the token left out (`PushRequest(template:tokenOffset:)`).
    mutating func android(
        _ devices: [Device], kind: String, ttl: FCMTimeToLive, skipToken: String? = nil,
        data: () -> [UInt8]
    ) {
        var built: (payload: [UInt8], template: [UInt8], tokenOffset: Int)?
        for device in devices where device.platform == .android && !device.token.isEmpty && device.token != skipToken {
            if built == nil {
                let payload = data()
                var (template, offset) = FCMEnvelope.dataMessageTemplate(data: payload, ttl: ttl)
                if template == lastAndroidTemplate { template = lastAndroidTemplate } else { lastAndroidTemplate = template }
                built = (payload, template, offset)
            }
            guard let built else { continue }
            requests.append(FCMEnvelope.fitsTemplate(device.token)
                ? PushRequest(device: device, kind: kind, template: built.template, tokenOffset: built.tokenOffset)
                : PushRequest(device: device, kind: kind, body: FCMEnvelope.dataMessage(token: device.token, data: built.payload, ttl: ttl)))
        }
    }

    /// One APNs push per iOS device in `devices` holding a `tokenKind` token.
    mutating func apple(
        _ devices: [Device], tokenKind: IOSTokenKind, kind: String,
        headers: [(name: String, value: String)], body: () -> [UInt8]
    ) {
        var built: [UInt8]?
        for device in devices where device.platform == .ios && device.kind == tokenKind && !device.token.isEmpty {
            var payload = built ?? body()
            if built == nil {
                if payload == lastAppleBody { payload = lastAppleBody } else { lastAppleBody = payload }
            }
            built = payload
            requests.append(PushRequest(device: device, kind: kind, headers: headers, body: payload))
        }
    }
}
