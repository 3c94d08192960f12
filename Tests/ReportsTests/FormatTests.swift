import Reports
import Testing

/// One "3 significant digits" for reports and the CLI's progress lines. `send` had its own,
/// which disagreed on the cases below (its answers in the comments).
@Suite struct FormatTests {
    @Test(arguments: [
        (0.0521, "0.0521"),   // send: "0.052" (three decimals, not three digits)
        (0.5, "0.5"),         // send: "0.500" (trailing zeros kept)
        (1.2, "1.2"),         // send: "1.20"
        (12.0, "12"),         // send: "12.0"
        (9.996, "10"),        // send: "10.00" (rounding up a magnitude)
        (123.4, "123"),
        (12345.6, "12346"),
        (0, "0"),
        (1e20, "100000000000000000000"),  // send: trapped converting to Int
        (-1.25, "-1.25"),
    ])
    func threeSignificantDigits(value: Double, text: String) {
        #expect(Format.significant(value) == text)
    }

    @Test func thousandsAreGrouped() {
        #expect(Format.grouped(0) == "0" && Format.grouped(999) == "999" && Format.grouped(1000) == "1,000")
        #expect(Format.grouped(257_600) == "257,600" && Format.grouped(-1_234_567) == "-1,234,567")
        #expect(Format.counted(1, "event") == "1 event" && Format.counted(0, "event") == "0 events")
        #expect(Format.counted(3, "unreadable line") == "3 unreadable lines")
    }

    @Test func millisecondsFromNanoseconds() {
        #expect(Format.milliseconds(52_100 as UInt64) == "0.0521")
        #expect(Format.milliseconds(1_200_000 as UInt64) == "1.2")
        #expect(Format.milliseconds(250_000_000 as UInt64) == "250")
    }
}
