import PushModel
import Synchronization

/// A `DeviceStore` in memory, for tests and load runs. Registering the same token again
/// replaces the earlier record ("Re-registering is idempotent", Yama seed); a token belongs to
/// one user at a time, so registering it for another user moves it.
public final class InMemoryDeviceStore: DeviceStore {
    private struct State {
        var userOfToken: [String: String] = [:]
        /// Each user's devices in registration order, so fan-out is deterministic and a
        /// lookup costs one hash, not a scan of every device.
        var devicesByUser: [String: [Device]] = [:]
        var userOrder: [String] = []

        mutating func remove(token: String) -> Bool {
            guard let userID = userOfToken.removeValue(forKey: token) else { return false }
            devicesByUser[userID]?.removeAll { $0.token == token }
            return true
        }
    }

    private let state = Mutex(State())

    public init(_ devices: [Device] = []) {
        for device in devices { register(device) }
    }

    public func register(_ device: Device) {
        state.withLock { state in
            if let owner = state.userOfToken[device.token], owner == device.userID,
               let index = state.devicesByUser[owner]?.firstIndex(where: { $0.token == device.token }) {
                state.devicesByUser[owner]?[index] = device
                return
            }
            _ = state.remove(token: device.token)
            state.userOfToken[device.token] = device.userID
            if state.devicesByUser[device.userID] == nil { state.userOrder.append(device.userID) }
            state.devicesByUser[device.userID, default: []].append(device)
        }
    }

    @discardableResult
    public func remove(token: String) -> Bool {
        state.withLock { $0.remove(token: token) }
    }

    public func devices(of userID: String) -> [Device] {
        state.withLock { $0.devicesByUser[userID] ?? [] }
    }

    public func allDevices() -> [Device] {
        state.withLock { state in state.userOrder.flatMap { state.devicesByUser[$0] ?? [] } }
    }

    /// How many devices are registered.
    public var count: Int { state.withLock { $0.userOfToken.count } }
}
