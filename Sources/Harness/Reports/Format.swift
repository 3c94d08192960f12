import Foundation

/// Number formatting for people: reports, and the CLI's progress lines (`send`, `plan`,
/// `drive`). Cold path: Foundation's printf is fine here.
public enum Format {
    /// Up to 3 decimals, trailing zeros dropped: 5000, 12.5, 0.333.
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value > 0 ? "inf" : "-inf") }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        var text = String(format: "%.3f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// Three significant digits, trailing zeros dropped: 0.0123, 1.2, 123, 12346.
    public static func significant(_ value: Double) -> String {
        guard value.isFinite else { return number(value) }
        if value == 0 { return "0" }
        let magnitude = Int(floor(log10(abs(value))))
        let decimals = Swift.max(0, 2 - magnitude)
        var text = String(format: "%.\(decimals)f", value)
        if decimals > 0 {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// Nanoseconds as milliseconds to 3 significant digits: "0.0521", "12.3", "250".
    public static func milliseconds(_ nanoseconds: UInt64) -> String {
        significant(Double(nanoseconds) / 1e6)
    }

    public static func milliseconds(_ nanoseconds: Double) -> String {
        significant(nanoseconds / 1e6)
    }

    /// "30s", "1.5s".
    public static func seconds(_ value: Double) -> String { number(value) + "s" }

    /// A whole number with thousands separated by commas: 257600 -> "257,600".
    public static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return value < 0 ? "-" + text : text
    }

    /// A count and its noun, the noun plural unless the count is 1: "1 event", "0 events",
    /// "3 unreadable lines" (the noun's plural is its singular with an s).
    public static func counted(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    /// A ratio as a percentage: 0.0123 -> "1.23%".
    public static func percent(_ ratio: Double) -> String { significant(ratio * 100) + "%" }
}

/// Columns of the text tables (`check`, `show`, `send`, the command list).
extension String {
    /// Left-aligned in `width` columns; a longer text keeps one space after it.
    public func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }

    /// Right-aligned in `width` columns.
    public func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
