// What a read of the gateway's exchanges is charged in the run's `judging`: its wall time when
// it runs alone, the CPU time it used when it runs beside the sender (RunTiming.judging).
import Foundation
import JSON
import PushModel
import RecordLine
import Scenario
@testable import ScenarioRunner
import Testing

/// A gateway whose reads take `delay` of wall time and no CPU (the thread sleeps), as a read
/// beside the sender does while the sender's threads have the cores.
private struct SlowGateway: ScenarioGateway {
    let delay: TimeInterval
    var access: GatewayAccess {
        GatewayAccess(apnsURL: "https://127.0.0.1:1", fcmURL: "https://127.0.0.1:1", tokenURL: "https://127.0.0.1:1/token",
                      caFile: "", apnsKeyFile: "", apnsKeyID: "", apnsTeamID: "", serviceAccountFile: "")
    }
    func setToken(_ token: String, _ state: TokenState, nowMs: Int64) {}
    func mark() -> GatewayMark { GatewayMark(position: 0) }
    func settle(after mark: GatewayMark, expectedAccepted: Int, options: RunOptions) {}
    func exchanges(after mark: GatewayMark) -> [RecordedExchange] {
        Thread.sleep(forTimeInterval: delay)
        return [RecordedExchange(sequence: mark.position + 1, route: .apns, path: "/3/device/" + String(repeating: "ab", count: 32),
                                 body: Array(#"{"aps":{"alert":"hi"}}"#.utf8), status: 200)]
    }
    func stop() {}
}

@Suite struct JudgingTimeTests {
    private func arriving() -> ArrivingExchanges {
        let judgement = EventJudgement(index: 0, type: "message.created", oracle: "expect", source: nil, expected: [],
                                       cleanup: CleanupState(), deviceName: { $0 })
        return ArrivingExchanges(judgement, cleanup: CleanupState(), badTokens: [], from: GatewayMark(position: 0))
    }

    @Test func aReadBesideTheSenderIsChargedItsCPUTimeAndAloneItsWallTime() async throws {
        let gateway = SlowGateway(delay: 0.060)
        let beside = arriving()
        try await beside.read(from: gateway, besideSending: true)
        let (_, _, besideSpent, besideWall) = beside.finish()
        // 60 ms asleep: the wall time says so, the CPU time does not (a read of one exchange
        // takes microseconds of CPU; 30 ms is far above it and far below the sleep).
        #expect(besideWall >= .milliseconds(60))
        #expect(besideSpent < .milliseconds(30), "charged \(besideSpent) for a read that slept 60 ms")

        let alone = arriving()
        try await alone.read(from: gateway)
        let (verdict, _, aloneSpent, aloneWall) = alone.finish()
        #expect(aloneSpent >= .milliseconds(60), "alone, a read is charged its wall time")
        #expect(aloneWall == .zero, "no read ran beside the sender")
        // The read was judged all the same: one accepted push nobody expected.
        #expect(verdict.problems.map(\.kind) == [.unexpected])
    }
}
