import Clocks
import Testing

@Suite struct SystemClockTests {
    @Test func theMonotonicClockNeverGoesBack() {
        var previous = SystemClock.monotonicNanoseconds()
        for _ in 0..<1000 {
            let now = SystemClock.monotonicNanoseconds()
            #expect(now >= previous)
            previous = now
        }
    }

    @Test func theWallClockUnitsAgree() {
        let seconds = SystemClock.wallClockSeconds()
        let milliseconds = SystemClock.wallClockMilliseconds()
        let nanoseconds = SystemClock.wallClockNanoseconds()
        // Read in that order, each at least the one before in its own unit; after 2020.
        #expect(seconds > 1_577_836_800)
        #expect(milliseconds / 1000 >= seconds)
        #expect(Int64(nanoseconds / 1_000_000) >= milliseconds)
    }
}
