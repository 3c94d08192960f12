// One segment of a scenario load run split over machines (docs/scale-out.md): the devices are
// split, the schedule is shared, each event is triggered once.
import Driver
import PushModel
import Scenario
import ScenarioRunner

/// What segment `segment` of a run of `scenario` owns: the devices (by id, the stable partition
/// of `ExecutionSegment.devices(of:)`, computed alike on every machine) whose arrivals it
/// matches, times and judges, and, for a sender that fans out itself, the events it hands over.
public struct ScenarioSegment: Sendable {
    public let segment: ExecutionSegment
    public let ownedTokens: Set<DeviceToken>
    public let ownedDevices: Int
    public let totalDevices: Int

    public init(_ segment: ExecutionSegment, scenario: Scenario) {
        self.segment = segment
        let devices = scenario.devices
        let owned = Set(segment.devices(of: devices.map(\.id)))
        ownedTokens = Set(devices.filter { owned.contains($0.id) }.map { DeviceToken($0.token) })
        ownedDevices = owned.count
        totalDevices = devices.count
    }

    /// The segment matches the arrivals for `token` (any form). A push with no token (not one
    /// any device has) is segment 0's to count, so the merge counts it once.
    public func owns(token: DeviceToken?) -> Bool {
        guard let token else { return segment.index == 0 }
        return ownedTokens.contains(token)
    }

    /// Whether this segment hands event `index` to `sender`: a sender that sends to the owned
    /// devices alone gets every event (every segment plays them all, each for its own devices);
    /// one that fans out itself gets the events striped over the segments, each exactly once.
    public func handsOver(event index: Int, to sender: any ScenarioSender) -> Bool {
        sender.restrictsToOwnedDevices || segment.owns(index: index)
    }

    /// What the sender is told of it.
    public var senderShare: SenderShare {
        SenderShare(index: segment.index, count: segment.segmentCount, ownedTokens: ownedTokens)
    }

    /// "segment 1/3 (1/3:2/3): 300 of 900 devices".
    public var note: String {
        "segment \(segment.index)/\(segment.segmentCount) (\(segment)): \(ownedDevices) of \(totalDevices) devices"
    }
}
