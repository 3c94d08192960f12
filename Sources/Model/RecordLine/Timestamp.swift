/// UTC timestamps without Foundation or String building (this runs once per request).
public enum Timestamp {
    /// `2026-11-29T20:01:02.123456Z` (microseconds).
    public static func iso8601(nanos: UInt64) -> String {
        String(decoding: iso8601Bytes(nanos: nanos), as: UTF8.self)
    }

    public static func iso8601Bytes(nanos: UInt64) -> [UInt8] {
        withISO8601Bytes(nanos: nanos) { Array($0) }
    }

    /// The 27 bytes of `iso8601(nanos:)` in a stack buffer, for `body` to copy: the record
    /// line writes one a request, and an Array each time was an allocation.
    public static func withISO8601Bytes<R>(nanos: UInt64, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: iso8601Length) { out in
            writeISO8601(nanos: nanos, to: out.baseAddress!)
            return body(UnsafeBufferPointer(out))
        }
    }

    /// The length of `iso8601(nanos:)`.
    public static let iso8601Length = 27

    /// The `iso8601Length` bytes of `iso8601(nanos:)` at `out`.
    @inline(__always)
    public static func writeISO8601(nanos: UInt64, to out: UnsafeMutablePointer<UInt8>) {
        let seconds = Int64(nanos / 1_000_000_000)
        let micros = Int((nanos / 1000) % 1_000_000)
        var days = seconds / 86_400
        let secondOfDay = Int(seconds % 86_400)
        // Howard Hinnant's days-to-civil algorithm.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        var year = yearOfEra + era * 400
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        if month <= 2 { year += 1 }
        // Two digits a step, straight-line: the loop a field was ~0.7% of the server's time.
        func put2(_ value: Int, at offset: Int) {
            let tens = value / 10
            out[offset] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: tens)
            out[offset + 1] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value - tens * 10)
        }
        let yearValue = Int(year)
        put2(yearValue / 100 % 100, at: 0); put2(yearValue % 100, at: 2); out[4] = UInt8(ascii: "-")
        put2(month, at: 5); out[7] = UInt8(ascii: "-")
        put2(day, at: 8); out[10] = UInt8(ascii: "T")
        put2(secondOfDay / 3600, at: 11); out[13] = UInt8(ascii: ":")
        put2(secondOfDay / 60 % 60, at: 14); out[16] = UInt8(ascii: ":")
        put2(secondOfDay % 60, at: 17); out[19] = UInt8(ascii: ".")
        put2(micros / 10_000, at: 20); put2(micros / 100 % 100, at: 22); put2(micros % 100, at: 24)
        out[26] = UInt8(ascii: "Z")
    }
}
