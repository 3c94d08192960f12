import Driver
import JSON
import PushModel
import Synchronization
import Testing

/// A sender on a fake clock: each call's pushes end `nanosPerPush x pushes / connections` after
/// the call's start, so more connections ring faster. Tokens starting "fail-" are not delivered.
/// The plan's clock and what its senders did.
final class PlanWorld: Sendable {
    let now = Mutex<UInt64>(1_000)
    let shutdowns = Atomic<Int>(0)
}

struct TimedCapacitySender: CapacitySender {
    let connections: Int
    let nanosPerPush: UInt64
    let world: PlanWorld

    func deliver(call pushes: [PushRequest]) async -> [(outcome: PushOutcome, finishedAt: UInt64)] {
        let ended = world.now.withLock { now in
            now += nanosPerPush * UInt64(pushes.count) / UInt64(connections)
            return now
        }
        return pushes.map { push in
            (push.device.token.hasPrefix("fail-") ? .failed(reason: "TooManyRequests", status: 429) : .delivered(id: nil), ended)
        }
    }
    var connectionsOpened: Int { connections }
    func shutdown() async { world.shutdowns.add(1, ordering: .relaxed) }
}

@Suite struct CapacityPlanTests {
    static func group(_ size: Int, failing: Int = 0) -> [PushRequest] {
        (0..<size).map { push(token: $0 < failing ? "fail-\($0)" : "phone-\($0)") }
    }

    /// 100 pushes at 1 ms each: 1 connection rings all in 100 ms, 2 in 50, 4 in 25.
    func measured(withinMilliseconds: Int, failing: Int = 0) async throws -> (CapacityPlan, [CapacityPlan.Measurement], Int) {
        let plan = CapacityPlan(members: 101, withinMilliseconds: withinMilliseconds, calls: 2,
                                setups: CapacityPlan.setups(senders: [1], connections: [1, 2, 4]))
        let world = PlanWorld()
        let callNumbers = Mutex<[Int]>([])
        let measurements = try await plan.measure(sender: { setup in
            TimedCapacitySender(connections: setup.connections, nanosPerPush: 1_000_000, world: world)
        }, ring: { number in
            callNumbers.withLock { $0.append(number) }
            return Self.group(100, failing: failing)
        }, clock: { world.now.withLock { $0 } })
        // A warm-up call and two measured ones per set-up, numbered across set-ups.
        #expect(callNumbers.withLock { $0 } == Array(1...9))
        return (plan, measurements, world.shutdowns.load(ordering: .relaxed))
    }

    @Test func eachSetupIsMeasuredAfterItsWarmUpCall() async throws {
        let (_, measurements, shutdowns) = try await measured(withinMilliseconds: 60)
        #expect(shutdowns == 3)
        #expect(measurements.map(\.setup.connections) == [1, 2, 4])
        #expect(measurements.map(\.ringAllNanoseconds) == [[100_000_000, 100_000_000], [50_000_000, 50_000_000], [25_000_000, 25_000_000]])
        #expect(measurements.map(\.pushesPerCall) == [100, 100, 100])
        #expect(measurements.map(\.connectionsOpened) == [1, 2, 4])
        #expect(measurements[1].rate == 2000)
    }

    @Test func theRecommendationMeetsTheTargetWithTheFewestConnections() async throws {
        let (plan, measurements, _) = try await measured(withinMilliseconds: 60)
        let verdict = plan.verdict(measurements)
        #expect(verdict.recommended?.setup == CapacityPlan.Setup(senders: 1, connections: 2))
        #expect(verdict.machines == nil)
        #expect(verdict.text(withinMilliseconds: 60) == "plan: 1 thread x 2 connections per machine rings all 100 phones within 60 ms (worst call 50 ms)")
        #expect(plan.line(for: measurements[0])
                == "1 thread x 1 connection: 100 pushes a call, all rung in 100 ms median, 100 ms worst (1000 pushes/s) -> misses the target")
        let json = plan.json(measurements, verdict: verdict, sender: SenderIdentity(name: "fake", version: "1", gatewaySharesMachine: true),
                             transport: "APNs and FCM", streams: 100)
        #expect(json["plan"]?["setup"]?["connections_per_origin"]?.intValue == 2)
        #expect(json["setups"]?[2]?["meets_target"]?.boolValue == true)
    }

    @Test func withoutASetupInTimeTheFastestRateSaysHowManyMachines() async throws {
        // The fastest reaches 4000 pushes/s: 40 pushes in 10 ms a machine, so 3 machines for 100.
        let (plan, measurements, _) = try await measured(withinMilliseconds: 10)
        let verdict = plan.verdict(measurements)
        #expect(verdict.recommended == nil)
        #expect(verdict.fastest?.setup.connections == 4)
        #expect(verdict.machines == 3)
        #expect(plan.junit(measurements, verdict: verdict).contains(#"<failure type="capacity""#))
    }

    @Test func undeliveredPushesMissTheTargetAndFailTheirTestcase() async throws {
        let (plan, measurements, _) = try await measured(withinMilliseconds: 1000, failing: 1)
        #expect(measurements.map(\.undelivered) == [2, 2, 2])
        let verdict = plan.verdict(measurements)
        #expect(verdict.recommended == nil && verdict.fastest == nil)
        #expect(verdict.text(withinMilliseconds: 1000) == "plan: no set-up delivered every push; no plan can be made from this run")
        #expect(plan.junit(measurements, verdict: verdict).contains(#"<failure type="undelivered""#))
    }

    @Test func aRingThatFailsStopsThePlanAndShutsItsSenderDown() async {
        struct RulesFailed: Error {}
        let plan = CapacityPlan(members: 2, withinMilliseconds: 10, calls: 1, setups: [CapacityPlan.Setup(senders: 1, connections: 1)])
        let world = PlanWorld()
        do {
            _ = try await plan.measure(sender: { _ in
                TimedCapacitySender(connections: 1, nanosPerPush: 1, world: world)
            }, ring: { _ in throw RulesFailed() })
            Issue.record("the plan went on")
        } catch {
            guard case .ringFailed = error else { Issue.record("\(error)"); return }
        }
        #expect(world.shutdowns.load(ordering: .relaxed) == 1)
    }

    /// The process at 1.5 cores while a call rings; building a call's pushes costs the driver 5 µs.
    @Test func theCPUOfMeasuredCallsIsTheSegmentsCost() async throws {
        let plan = CapacityPlan(members: 101, withinMilliseconds: 1000, calls: 2, setups: [CapacityPlan.Setup(senders: 1, connections: 2)])
        let world = PlanWorld()
        let driverCPU = Mutex<UInt64>(0)
        let measurements = try await plan.measure(sender: { setup in
            TimedCapacitySender(connections: setup.connections, nanosPerPush: 1_000_000, world: world)
        }, ring: { _ in
            driverCPU.withLock { $0 += 5_000 }
            return Self.group(100)
        }, clock: { world.now.withLock { $0 } }, processCPU: { world.now.withLock { $0 } * 3 / 2 },
           threadCPU: { driverCPU.withLock { $0 } })
        let m = try #require(measurements.first)
        // Two measured calls of 50 ms each (the warm-up's left out).
        #expect(m.wallNanoseconds == 100_000_000 && m.cpuNanoseconds == 150_000_000)
        #expect(m.cores == 1.5)
        #expect(m.cpuNanosecondsPerPush == 750_000 && m.driverCPUNanosecondsPerPush == 50)
        #expect(m.firstRingNanoseconds == 50_000_000)
        let json = plan.json(measurements, verdict: plan.verdict(measurements), sender: SenderIdentity(name: "fake", version: "1", gatewaySharesMachine: nil),
                             transport: "APNs", streams: 1)
        #expect(json["setups"]?[0]?["cores"]?.doubleValue == 1.5)
        #expect(json["setups"]?[0]?["cpu_us_per_push"]?.doubleValue == 750)
    }

    @Test func h2cWithoutConnectionReuseTriesOnlyOneConnection() {
        let plan = CapacityPlan(members: 2, withinMilliseconds: 10, calls: 1, setups: CapacityPlan.setups(senders: [1, 2], connections: [2, 4]))
        #expect(plan.setups.count == 4)
        #expect(plan.limitedToOneConnection().setups == [CapacityPlan.Setup(senders: 1, connections: 1)])
        let withOne = CapacityPlan(members: 2, withinMilliseconds: 10, calls: 1, setups: CapacityPlan.setups(senders: [1, 2], connections: [1, 2]))
        #expect(withOne.limitedToOneConnection().setups.map(\.senders) == [1, 2])
    }
}
