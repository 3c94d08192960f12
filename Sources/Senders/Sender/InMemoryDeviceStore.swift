import PushModel
import Synchronization

/// Devices by user, as a store keeps them: registering the same token again replaces the
/// earlier record ("Re-registering is idempotent", Yama seed); a token belongs to one user at a
/// time, so registering it for another user moves it. A value, not thread-safe: the stores
/// lock around it.
public struct DeviceRegistrations: Sendable {
    private var userOfToken: [String: String] = [:]
    /// Each user's devices in registration order, so fan-out is deterministic and a
    /// lookup costs one hash, not a scan of every device.
    private var devicesByUser: [String: [Device]] = [:]
    /// Users in the order they first registered a device.
    public private(set) var userOrder: [String] = []

    public init() {}

    public mutating func register(_ device: Device) {
        if let owner = userOfToken[device.token], owner == device.userID,
           let index = devicesByUser[owner]?.firstIndex(where: { $0.token == device.token }) {
            devicesByUser[owner]?[index] = device
            return
        }
        _ = remove(token: device.token)
        userOfToken[device.token] = device.userID
        if devicesByUser[device.userID] == nil { userOrder.append(device.userID) }
        devicesByUser[device.userID, default: []].append(device)
    }

    /// Removes the device with this token; returns whether one was there.
    public mutating func remove(token: String) -> Bool {
        guard let userID = userOfToken.removeValue(forKey: token) else { return false }
        devicesByUser[userID]?.removeAll { $0.token == token }
        return true
    }

    public func devices(of userID: String) -> [Device] { devicesByUser[userID] ?? [] }

    public var allDevices: [Device] { userOrder.flatMap { devicesByUser[$0] ?? [] } }

    public var count: Int { userOfToken.count }
}

/// A `DeviceStore` in memory, for tests and load runs (`DeviceRegistrations` under a lock).
public final class InMemoryDeviceStore: DeviceStore {
    private let state = Mutex(DeviceRegistrations())

    public init(_ devices: [Device] = []) {
        for device in devices { register(device) }
    }

    public func register(_ device: Device) {
        state.withLock { $0.register(device) }
    }

    @discardableResult
    public func remove(token: String) -> Bool {
        state.withLock { $0.remove(token: token) }
    }

    public func devices(of userID: String) -> [Device] {
        state.withLock { $0.devices(of: userID) }
    }

    public func allDevices() -> [Device] {
        state.withLock { $0.allDevices }
    }

    public var count: Int { state.withLock { $0.count } }
}
