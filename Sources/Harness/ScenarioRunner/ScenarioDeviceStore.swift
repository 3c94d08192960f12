// The reference rules' device store for a scenario: the people's devices as the shared index
// holds them, less those removed, plus those registered since. The oracle and the in-process
// reference sender each have one; what differs between them (the few tokens each removed or
// registered) is all a store keeps of its own, where an `InMemoryDeviceStore` filled with the
// population held its own dictionaries of every device (~26 MB each at 150,000 devices).
import PushModel
import Scenario
import Sender
import Synchronization

/// A `DeviceStore` starting with a scenario's people's devices. Behaves as an
/// `InMemoryDeviceStore` into which those were registered in order (tested side by side).
public final class ScenarioDeviceStore: DeviceStore {
    private struct State {
        /// Initial devices no longer held (removed, or registered again for someone else).
        var removed: Set<Int> = []
        /// Initial devices registered again for their own person: replaced where they stand.
        var replaced: [Int: Device] = [:]
        /// Devices registered since, as an `InMemoryDeviceStore` keeps them.
        var later = DeviceRegistrations()
        /// While a fan-out is decided a slice at a time: the positions whose people
        /// `devices(of:)` answers for.
        var slice: Range<Int>?
    }

    private let index: ScenarioDeviceIndex
    private let state = Mutex(State())

    public init(_ index: ScenarioDeviceIndex) { self.index = index }

    /// The position of the initial device with `token` the store still holds.
    private func heldInitial(_ token: String, in state: State) -> Int? {
        guard let position = index.position(ofToken: DeviceToken(token)), position < index.initialCount,
              index.entries[position].device.token == token, !state.removed.contains(position) else { return nil }
        return position
    }

    public func register(_ device: Device) {
        state.withLock { state in
            if let position = heldInitial(device.token, in: state) {
                if index.entries[position].person == device.userID {
                    state.replaced[position] = device
                    return
                }
                state.removed.insert(position)
                state.replaced[position] = nil
            }
            state.later.register(device)
        }
    }

    @discardableResult
    public func remove(token: String) -> Bool {
        state.withLock { state in
            if state.later.remove(token: token) { return true }
            guard let position = heldInitial(token, in: state) else { return false }
            state.removed.insert(position)
            state.replaced[position] = nil
            return true
        }
    }

    public func devices(of userID: String) -> [Device] {
        state.withLock { state in
            if let slice = state.slice, !slice.contains(index.initialPositions(of: userID).lowerBound) { return [] }
            return initialDevices(of: userID, in: state) + state.later.devices(of: userID)
        }
    }

    /// Runs `body` (the rules deciding an event) with `devices(of:)` answering only for the
    /// people whose devices start in `slice` of the index's positions (someone the index does
    /// not know, in the first slice); nil: everyone. Called for each of `slices(of:)` in turn,
    /// the rules decide every push once, a slice of the population at a time.
    public func narrowed<Result>(to slice: Range<Int>?, _ body: () throws -> Result) rethrows -> Result {
        state.withLock { $0.slice = slice }
        defer { state.withLock { $0.slice = nil } }
        return try body()
    }

    /// The slices of `narrowed(to:)` covering everyone, `size` devices at a time: one (nil)
    /// for a population that small, then the last one open-ended.
    public func slices(ofSize size: Int) -> [Range<Int>?] {
        guard index.initialCount > size else { return [nil] }
        return stride(from: 0, to: index.initialCount, by: size).map { start in
            start..<(start + size >= index.initialCount ? Int.max : start + size)
        }
    }

    private func initialDevices(of userID: String, in state: State) -> [Device] {
        index.initialPositions(of: userID).compactMap { position in
            state.removed.contains(position) ? nil : state.replaced[position] ?? index.entries[position].storedDevice
        }
    }

    public func allDevices() -> [Device] {
        var devices: [Device] = []
        devices.reserveCapacity(count)
        forEachDevice { device, _ in devices.append(device) }
        return devices
    }

    /// Every device held, in `allDevices`' order, with its position in the index when it is
    /// one of the people's initial devices (nil: registered since). No list is made: a store
    /// dump of 150,000 devices is one array, not three. `body` runs under the store's lock:
    /// it must not call the store.
    func forEachDevice(_ body: (Device, Int?) -> Void) {
        state.withLock { state in
            // The index holds each person's devices together: a person's later ones follow
            // their initial ones, then come those of people with none at the start, in the
            // order they registered (an `InMemoryDeviceStore`'s order).
            let entries = index.entries
            for position in 0..<index.initialCount {
                if !state.removed.contains(position) { body(state.replaced[position] ?? entries[position].storedDevice, position) }
                let person = entries[position].person
                if position + 1 == index.initialCount || entries[position + 1].person != person {
                    for device in state.later.devices(of: person) { body(device, nil) }
                }
            }
            for user in state.later.userOrder where index.initialPositions(of: user).isEmpty {
                for device in state.later.devices(of: user) { body(device, nil) }
            }
        }
    }

    public var count: Int { state.withLock { index.initialCount - $0.removed.count + $0.later.count } }
}
