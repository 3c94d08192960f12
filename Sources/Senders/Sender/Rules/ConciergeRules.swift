import PushModel

/// Concierge's push rule (Concierge seed, "Push notifications").
public struct ConciergeRules: Sendable {
    public var app: ConciergeApp
    public var devices: any DeviceStore

    public init(app: ConciergeApp, devices: any DeviceStore) {
        self.app = app
        self.devices = devices
    }

    /// "Every team or AI reply is pushed to each of the customer's devices that has a push
    /// token." iOS: an APNs alert to the regular token; Android: an FCM notification message
    /// with a string data map.
    public func reply(_ reply: ConciergeReply, toCustomer customerID: String) throws -> [PushRequest] {
        let customerDevices = try devices.devices(of: customerID)
        let headers = APNSHeaders.make(pushType: .alert, topic: app.iosBundleID, priority: .immediate)
        var requests: [PushRequest] = []
        var apnsBody: [UInt8]?
        for device in customerDevices where !device.token.isEmpty {
            switch device.platform {
            case .ios:
                guard device.kind == .alert else { continue }
                let body = apnsBody ?? ConciergePayloads.replyAPNS(app: app, reply: reply)
                apnsBody = body
                requests.append(PushRequest(device: device, kind: PushKind.conciergeReply, headers: headers, body: body))
            case .android:
                requests.append(PushRequest(
                    device: device, kind: PushKind.conciergeReply,
                    body: ConciergePayloads.replyFCM(token: device.token, app: app, reply: reply)))
            }
        }
        return requests
    }
}
