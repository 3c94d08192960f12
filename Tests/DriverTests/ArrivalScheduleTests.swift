import Testing
import Clocks
import PushModel
import Synchronization
@testable import Driver

@Suite struct ArrivalScheduleTests {
    private static let second: UInt64 = 1_000_000_000

    @Test(arguments: [(3.0, 1.0), (200, 0.5), (0.5, 10), (7, 3), (1000, 2)])
    func aConstantRateIsEvenlySpaced(rate: Double, seconds: Double) throws {
        let schedule = ArrivalSchedule.constant(rate, for: .milliseconds(Int64(seconds * 1000)))
        try schedule.validate()
        let expectedCount = Int((rate * seconds).rounded(.up))
        #expect(schedule.iterationCount == expectedCount)
        #expect(schedule.isConstant)
        for index in 0..<expectedCount {
            let due = try #require(schedule.dueTime(of: index))
            // The spacing the open model always had: i / rate, to the nanosecond.
            #expect(due == UInt64((Double(index) * 1e9 / rate).rounded()), "iteration \(index)")
        }
        #expect(schedule.dueTime(of: expectedCount) == nil)
    }

    @Test func aLinearRampIsDueWhereItsIntegralReachesEachIteration() throws {
        // 0 -> 100/s over 10 s: 500 iterations; the integral is 5·t², so iteration i is due at sqrt(i/5) s.
        let schedule = try ArrivalSchedule.parse(stages: "10s:100", startRate: 0)
        #expect(schedule.iterationCount == 500)
        #expect(schedule.dueTime(of: 0) == 0)
        #expect(schedule.dueTime(of: 5) == Self.second)
        #expect(schedule.dueTime(of: 125) == 5 * Self.second)
        let last = try #require(schedule.dueTime(of: 499))
        #expect(abs(Double(last) - (499.0 / 5).squareRoot() * 1e9) < 2)
        #expect(schedule.dueTime(of: 500) == nil)
        #expect(schedule.peakRate == 100)
        #expect(!schedule.isConstant)
    }

    @Test func kSixStagesRampUpHoldAndDown() throws {
        let schedule = try ArrivalSchedule.parse(stages: "30s:100,2m:1000,30s:0", startRate: 0)
        #expect(schedule.stages.map(\.duration) == [.seconds(30), .seconds(120), .seconds(30)])
        #expect(schedule.duration == .seconds(180))
        // 100·30/2 + (100+1000)/2·120 + 1000·30/2.
        #expect(schedule.iterationCount == 1_500 + 66_000 + 15_000)
        // Iteration 1,500 starts the second stage; the last is due just before the end.
        #expect(schedule.dueTime(of: 1_500) == 30 * Self.second)
        let last = try #require(schedule.dueTime(of: schedule.iterationCount - 1))
        #expect(last < 180 * Self.second && last > 179 * Self.second)
        var previous: UInt64 = 0
        for index in stride(from: 0, to: schedule.iterationCount, by: 97) {
            let due = try #require(schedule.dueTime(of: index))
            #expect(due >= previous)
            previous = due
        }
        #expect(schedule.description == "ramping 0/s, 100/s over 30s, 1000/s over 120s, 0/s over 30s")
    }

    @Test func iterationsDueBeforeAnOffsetAgreeWithTheDueTimes() throws {
        let schedule = try ArrivalSchedule.parse(stages: "2s:40,1s:40,3s:5", startRate: 10)
        for offset in stride(from: UInt64(0), through: 7 * Self.second, by: 37_000_000) {
            let counted = (0..<schedule.iterationCount + 1).filter { index in
                schedule.dueTime(of: index).map { $0 < offset } ?? false
            }.count
            #expect(schedule.iterationsDue(before: offset) == counted, "before \(offset) ns")
        }
    }

    @Test func aStageAtRateZeroWaitsForTheNextRise() throws {
        // Nothing for 5 s, then 0 -> 10/s over 1 s: 5 iterations, the first at 5 s.
        let schedule = try ArrivalSchedule.parse(stages: "5s:0,1s:10", startRate: 0)
        #expect(schedule.iterationCount == 5)
        #expect(schedule.dueTime(of: 0) == 5 * Self.second)
        let due = try (0..<5).map { try #require(schedule.dueTime(of: $0)) }
        #expect(due.allSatisfy { $0 >= 5 * Self.second && $0 < 6 * Self.second })
    }

    @Test func stageDurationsInK6Spelling() {
        #expect(ArrivalSchedule.parseDuration("500ms") == .milliseconds(500))
        #expect(ArrivalSchedule.parseDuration("1m30s") == .seconds(90))
        #expect(ArrivalSchedule.parseDuration("2h") == .seconds(7200))
        #expect(ArrivalSchedule.parseDuration("45") == .seconds(45))
        for bad in ["", "s", "30x", "1m30", "-5", "30s5", "1e9h", "nan"] {
            #expect(ArrivalSchedule.parseDuration(bad) == nil, "\(bad)")
        }
    }

    @Test(arguments: [
        ("30s", "write DURATION:RATE"), ("30x:5", "is not a duration"), ("30s:-1", "is not a rate"),
        ("30s:abc", "is not a rate"), ("10s:0", "the rate is 0 throughout"), ("30s:5,", "write DURATION:RATE"),
        ("0s:5", "duration must be positive"), ("240h:10000000", "too large"),
    ])
    func badStagesAreNamed(text: String, message: String) {
        #expect {
            try ArrivalSchedule.parse(stages: text, startRate: 0)
        } throws: { error in
            (error as? LoadPlanError)?.message.contains(message) == true
        }
    }

    @Test func theRunnerStartsEachIterationWhenTheRampSaysSo() async throws {
        // 100/s down to 0 over 1 s after a 200 ms warm-up at 100/s: 20 warm-up and 50 measured.
        let schedule = try ArrivalSchedule.parse(stages: "1s:0", startRate: 100)
        let plan = LoadPlan(scenario: "ramp", model: .open(schedule), warmUp: .milliseconds(200), maxInFlight: 8)
        let clock = TestClock()
        let target = SendTimes(clock: clock)
        let result = try await runOnTestClock(plan, on: clock, target: target) { .push(push(token: "ok-\($0)")) }
        #expect(result.summary.counts.warmUpIterations == 20)
        #expect(result.summary.counts.iterations == 50)
        #expect(result.summary.counts.droppedIterations == 0)
        #expect(result.summary.targetRate == 100)
        #expect(result.summary.modelDescription == "open ramping 100/s, 0/s over 1s")
        let whole = schedule.preceded(by: .milliseconds(200))
        let sent = target.times
        #expect(sent.count == 70)
        for (index, at) in sent { #expect(at == whole.dueTime(of: index), "iteration \(index)") }
    }
}

/// Records when each push (token "ok-<iteration>") was handed over, on the run's test clock.
private final class SendTimes: PushTarget {
    let clock: TestClock
    private let start: TestClock.Instant
    private let sent = Mutex<[Int: UInt64]>([:])

    init(clock: TestClock) {
        self.clock = clock
        start = clock.now
    }

    var times: [Int: UInt64] { sent.withLock { $0 } }

    func send(_ push: PushRequest) async -> PushOutcome {
        let at = start.duration(to: clock.now)
        let iteration = Int(push.device.token.dropFirst(3))!
        sent.withLock { $0[iteration] = UInt64(at.components.seconds) * 1_000_000_000 + UInt64(at.components.attoseconds / 1_000_000_000) }
        return .delivered(id: nil)
    }
}
