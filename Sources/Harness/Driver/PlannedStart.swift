// The wall-clock time every segment of a run starts at (`drive --start-at`): the one barrier that
// needs no coordinator, as gatling-operator's start time (docs/scale-out.md). Intended times count
// from it, so a machine that starts late shows its lateness as latency.
import Clocks
import Foundation

/// A run's planned start, in Unix milliseconds.
public struct PlannedStart: Sendable, Equatable, CustomStringConvertible {
    /// Further in the past than this, a start time is a mistake (a stale script, a wrong zone).
    public static let largestPast: Int64 = 10 * 60 * 1000
    /// Further in the future than this, too.
    public static let largestFuture: Int64 = 24 * 60 * 60 * 1000

    public let unixMilliseconds: Int64

    public init(unixMilliseconds: Int64) {
        self.unixMilliseconds = unixMilliseconds
    }

    /// RFC 3339 with a zone (`2026-12-03T14:40:00Z`, `2026-12-03T15:40:00.250+01:00`) or Unix
    /// milliseconds (`1764772800000`); refused when more than 10 minutes past `now` (Unix ms) or a
    /// day ahead of it.
    public init(parsing text: String, now: Int64) throws(PlannedStartError) {
        if !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
            guard let milliseconds = Int64(text) else { throw .malformed(text) }
            unixMilliseconds = milliseconds
        } else {
            guard let date = Self.rfc3339(text) else { throw .malformed(text) }
            unixMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        }
        if unixMilliseconds < now - Self.largestPast { throw .tooFarPast(text, secondsAgo: (now - unixMilliseconds) / 1000) }
        if unixMilliseconds > now + Self.largestFuture { throw .tooFarAhead(text) }
    }

    private static func rfc3339(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// `2026-12-03T14:40:00.000Z`.
    public var description: String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(unixMilliseconds) / 1000))
    }

    /// Sleeps until the planned time on `wall` (now if it has passed), then gives the monotonic
    /// instant it corresponds to (in the past by the lateness) and how late the wake-up was, in
    /// nanoseconds (negative: early, by the clock's granularity).
    public func wait(wall: WallClock = .system) async -> (start: MonotonicClock.Instant, offsetNanoseconds: Int64) {
        let planned = Int64(unixMilliseconds) * 1_000_000
        while true {
            let remaining = planned - Int64(wall.nowNanoseconds)
            guard remaining > 0 else { break }
            // Two steps: a long sleep that may overshoot by a timer slack, then the last 2 ms.
            let step = remaining > 5_000_000 ? remaining - 2_000_000 : remaining
            try? await Task.sleep(nanoseconds: UInt64(step))
            if remaining <= 5_000_000 { break }
        }
        let monotonic = SystemClock.monotonicNanoseconds()
        let offset = Int64(wall.nowNanoseconds) - planned
        let start = offset >= 0 ? monotonic &- UInt64(offset) : monotonic &+ UInt64(-offset)
        return (MonotonicClock.Instant(nanoseconds: start), offset)
    }
}

public enum PlannedStartError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case tooFarPast(String, secondsAgo: Int64)
    case tooFarAhead(String)

    public var description: String {
        switch self {
        case .malformed(let text):
            return "--start-at \"\(text)\": expected an RFC 3339 time with a zone (2026-12-03T14:40:00Z) or Unix milliseconds"
        case .tooFarPast(let text, let seconds):
            return "--start-at \(text) was \(seconds) s ago: more than 10 minutes in the past; give every segment a time still to come"
        case .tooFarAhead(let text):
            return "--start-at \(text) is more than a day ahead"
        }
    }
}
