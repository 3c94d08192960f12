import PushModel
import Scenario
import Testing
@testable import ScenarioRunner

/// The reference sender decides a big fan-out a slice of the population at a time; every
/// slice together must be exactly the pushes the rules decide at once.
@Suite struct SlicedDecisionTests {
    /// 24,000 people, a PushKit token each, an alert token for 30% and an Android phone for
    /// half: ~43,000 devices, two slices.
    static let scenario = try! Scenario(json: Array("""
        {"format": 1, "product": "poolse",
         "generate": {"people": 24000, "seed": 3, "devices": {"voip": 1, "alert": 0.3, "android": 0.5}, "gone": 0.02, "name": "All"},
         "events": [
          {"type": "call.placed", "call": "k1", "conversation": "c0", "caller": "p0", "media": "video"},
          {"type": "call.declined", "call": "k1", "user": "p23999"},
          {"type": "call.answered", "call": "k1", "user": "p1", "device": "p1-voip", "at_ms": 4000},
          {"type": "call.ended", "call": "k1", "reason": "finished", "at_ms": 60000},
          {"type": "message.sent", "conversation": "c0", "sender": "p2", "text": "hello", "at_ms": 61000}
         ]}
        """.utf8), name: "sliced")

    /// A push as compared: device, kind, headers and bytes.
    static func key(_ push: PushRequest) -> String {
        push.device.token + " " + push.kind + " " + push.headers.map { $0.name + "=" + $0.value }.joined(separator: ",") + " "
            + String(decoding: push.body, as: UTF8.self)
    }

    @Test func everySliceTogetherIsTheWholeDecision() throws {
        let index = ScenarioDeviceIndex(Self.scenario)
        let whole = ReferenceWorld(scenario: Self.scenario, devices: index, bundleID: "com.example.loop", fcmProject: "p")
        let sliced = ReferenceWorld(scenario: Self.scenario, devices: index, bundleID: "com.example.loop", fcmProject: "p")
        let slices = sliced.store.slices(ofSize: ReferenceSender.sliceDevices)
        #expect(slices.count == 2, "~43,000 devices in slices of \(ReferenceSender.sliceDevices)")
        var total = 0
        for event in Self.scenario.events {
            let expected = try whole.decide(event).map(Self.key).sorted()
            let decision = try sliced.plan(event)
            var parts: [[String]] = []
            for slice in slices { parts.append(try sliced.store.narrowed(to: slice, decision).map(Self.key)) }
            #expect(parts.joined().sorted() == expected, "\(event.type)")
            if expected.count > 1000 { #expect(parts.allSatisfy { !$0.isEmpty }, "\(event.type): each slice has its share") }
            total += expected.count
        }
        #expect(total > 10_000)
    }

    /// `run`'s oracle decides by slices too: each event lists exactly the pushes the rules
    /// decide at once, each with its device's position.
    @Test func theOracleListsTheWholeDecisionSliceBySlice() throws {
        let index = ScenarioDeviceIndex(Self.scenario)
        let whole = ReferenceWorld(scenario: Self.scenario, devices: index, bundleID: "com.example.loop", fcmProject: "p")
        // The sender's slices, so this population is two of them (the oracle's own are larger).
        let oracle = ScenarioOracle(Self.scenario, app: ScenarioApp(bundleID: "com.example.loop", fcmProject: "p"), devices: index,
                                    namingDevices: true, sliceDevices: ReferenceSender.sliceDevices)
        var total = 0
        for (number, event) in Self.scenario.events.enumerated() {
            let decided = try whole.decide(event).map { $0.device.token + " " + $0.kind + "." + $0.transport.rawValue }.sorted()
            let listed = oracle.expected(for: event, index: number)
            #expect(listed.map { $0.token + " " + ($0.spec ?? "-") }.sorted() == decided, "\(event.type)")
            #expect(listed.allSatisfy { $0.devicePosition.map { index.entries[Int($0)].device.token } == $0.token })
            total += listed.count
        }
        #expect(total > 10_000)
    }

    @Test func aSmallPopulationIsOneSliceAndItsOrderIsTheRules() throws {
        var scenario = Self.scenario
        scenario.people = ScenarioPeople(scenario.people.prefix(50))
        let index = ScenarioDeviceIndex(scenario)
        let store = ScenarioDeviceStore(index)
        #expect(store.slices(ofSize: ReferenceSender.sliceDevices) == [nil])
        #expect(store.narrowed(to: 0..<1) { store.devices(of: "p1") }.isEmpty, "p1's devices start after position 0")
        #expect(!store.narrowed(to: 0..<1) { store.devices(of: "p0") }.isEmpty)
        #expect(!store.devices(of: "p1").isEmpty, "narrowing ends with the call")
    }
}
