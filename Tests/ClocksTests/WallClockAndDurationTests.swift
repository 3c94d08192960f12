import Clocks
import Testing

@Suite struct DurationConversionTests {
    @Test func nanosecondsAreExactAndClamped() {
        #expect(Duration.nanoseconds(1).clampedNanoseconds == 1)
        #expect(Duration.milliseconds(1500).clampedNanoseconds == 1_500_000_000)
        // The attoseconds below a nanosecond are dropped, not rounded.
        #expect((Duration.nanoseconds(7) + .init(secondsComponent: 0, attosecondsComponent: 999_999_999)).clampedNanoseconds == 7)
        #expect(Duration.seconds(-3).clampedNanoseconds == 0)
        #expect(Duration.nanoseconds(-1).clampedNanoseconds == 0)
        #expect(Duration.zero.clampedNanoseconds == 0)
        // 2^64 ns is about 584 years: longer saturates instead of wrapping.
        #expect(Duration.seconds(Int64.max).clampedNanoseconds == .max)
        #expect(Duration.seconds(18_446_744_073).clampedNanoseconds == 18_446_744_073_000_000_000)
        #expect(Duration.seconds(18_446_744_074).clampedNanoseconds == .max)
    }

    @Test func secondsAsADouble() {
        #expect(Duration.milliseconds(250).inSeconds == 0.25)
        #expect(Duration.seconds(-2).inSeconds == -2)
        #expect(Duration.zero.inSeconds == 0)
    }

    @Test func theMonotonicInstantMovesByExactNanoseconds() {
        let start = MonotonicClock.Instant(nanoseconds: 1_000)
        #expect(start.advanced(by: .nanoseconds(5)).nanoseconds == 1_005)
        #expect(start.advanced(by: .nanoseconds(-400)).nanoseconds == 600)
        #expect(start.advanced(by: .seconds(-1)).nanoseconds == 0)
        #expect(MonotonicClock.Instant(nanoseconds: .max - 1).advanced(by: .seconds(1)).nanoseconds == .max)
    }
}

@Suite struct WallClockTests {
    @Test func aManualClockMovesTheWallClockItGives() {
        let manual = ManualClock(epochSeconds: 1_800_000_000)
        let wall = manual.wallClock
        #expect(wall.nowSeconds == 1_800_000_000)
        #expect(wall.nowMilliseconds == 1_800_000_000_000)
        manual.advance(seconds: 90)
        #expect(wall.nowSeconds == 1_800_000_090)
        #expect(wall.nowNanoseconds == 1_800_000_090_000_000_000)
    }

    @Test func aFixedClockStaysPut() {
        let fixed = WallClock.fixed(milliseconds: 1_700_000_000_123)
        #expect(fixed.nowMilliseconds == 1_700_000_000_123)
        #expect(fixed.nowSeconds == 1_700_000_000)
        #expect(fixed.nowNanoseconds == 1_700_000_000_123_000_000)
    }

    @Test func theSystemClockReadsTheWallClock() {
        let before = SystemClock.wallClockNanoseconds()
        let read = WallClock.system.nowNanoseconds
        #expect(read >= before)
        #expect(read - before < 60_000_000_000)
    }
}
