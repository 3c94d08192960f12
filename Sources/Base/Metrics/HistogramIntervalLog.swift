// HdrHistogram's interval log, in the dialect of its Java HistogramLogWriter (format 1.3), which
// Java's HistogramLogProcessor and PyPI's hdrhistogram read. Not HdrHistogram_c's dialect: that
// writer puts the interval's end in the second field and an unscaled max in the third.
import Encoding
import Glibc

/// An interval log: a start time, an optional base time, and tagged interval histograms.
///
/// Written as
/// ```
/// #[Histogram log format version 1.3]
/// #[StartTime: 1764770913.000 (seconds since epoch), Thu Dec 03 14:08:33 UTC 2026]
/// #[BaseTime: 1764770913.000 (seconds since epoch)]
/// "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
/// Tag=segment-0,0.000,10.000,12.583,HISTFAAA...
/// ```
/// Adding intervals is exact: every histogram has pushproof's one shape, and a line of any other
/// shape is refused as it is read (``HistogramDecodingError/differentSettings(setting:found:expected:)``).
public struct HistogramIntervalLog: Sendable, Equatable {
    /// One line of the log: `[Tag=<tag>,]<start s>,<length s>,<max ms>,<base64>`.
    public struct Interval: Sendable, Equatable {
        public var tag: String?
        /// Seconds since the base time (or since the epoch, with none).
        public var startSeconds: Double
        public var lengthSeconds: Double
        /// The third field as written (the interval's max in milliseconds); informative only.
        public var maxMilliseconds: Double
        public var histogram: HDRHistogram

        public init(tag: String? = nil, startSeconds: Double, lengthSeconds: Double, histogram: HDRHistogram) {
            self.tag = tag
            self.startSeconds = startSeconds
            self.lengthSeconds = lengthSeconds
            self.maxMilliseconds = HistogramIntervalLog.maxMilliseconds(of: histogram)
            self.histogram = histogram
        }

        init(tag: String?, startSeconds: Double, lengthSeconds: Double, maxMilliseconds: Double, histogram: HDRHistogram) {
            self.tag = tag
            self.startSeconds = startSeconds
            self.lengthSeconds = lengthSeconds
            self.maxMilliseconds = maxMilliseconds
            self.histogram = histogram
        }
    }

    /// Seconds since the epoch, as the `#[StartTime: …]` line gives it.
    public var startTime: Double?
    /// Seconds since the epoch that interval starts count from (`#[BaseTime: …]`), if written.
    public var baseTime: Double?
    public var intervals: [Interval]

    public init(startTime: Double?, baseTime: Double? = nil, intervals: [Interval] = []) {
        self.startTime = startTime
        self.baseTime = baseTime
        self.intervals = intervals
    }

    /// The histograms' unit is nanoseconds and the log's max column is in milliseconds, so the
    /// max-value unit ratio is 1,000,000, the default of Java's `outputIntervalHistogram`. Like
    /// Java, which divides `getMaxValue()` (the top of the max's counter, `highestEquivalentValue`),
    /// pushproof writes the top of the counter the maximum falls in, not the exact maximum.
    public static let maxValueUnitRatio = 1_000_000.0

    static func maxMilliseconds(of histogram: HDRHistogram) -> Double {
        histogram.isEmpty ? 0 : Double(HDRHistogram.highestEquivalentValue(histogram.max)) / maxValueUnitRatio
    }

    // MARK: - Writing

    public static let formatVersionLine = "#[Histogram log format version 1.3]"
    public static let legendLine = "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""

    /// The log as text, one interval a line (Java's `%.3f` for every number, US decimals).
    public func text() throws(HistogramLogError) -> String {
        var lines = [Self.formatVersionLine]
        if let startTime {
            lines.append("#[StartTime: \(Self.threeDecimals(startTime)) (seconds since epoch), \(Self.javaDate(startTime))]")
        }
        if let baseTime {
            lines.append("#[BaseTime: \(Self.threeDecimals(baseTime)) (seconds since epoch)]")
        }
        lines.append(Self.legendLine)
        for interval in intervals {
            var fields: [String] = []
            if let tag = interval.tag {
                // Java's writer refuses the same characters: its reader splits on them.
                guard !tag.isEmpty, !tag.contains(where: { $0 == "," || $0 == " " || $0 == "\r" || $0 == "\n" }) else {
                    throw .badTag(tag)
                }
                fields.append("Tag=\(tag)")
            }
            fields.append(Self.threeDecimals(interval.startSeconds))
            fields.append(Self.threeDecimals(interval.lengthSeconds))
            fields.append(Self.threeDecimals(interval.maxMilliseconds))
            fields.append(Base64.standard.encode(interval.histogram.encodedCompressedV2()))
            lines.append(fields.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: - Reading

    /// Reads a log in the Java writer's dialect: comment lines (`#`), the legend, interval lines.
    public init(reading text: String) throws(HistogramLogError) {
        self.init(startTime: nil)
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let lineNumber = offset + 1
            if line.isEmpty || line.hasPrefix("\"StartTimestamp\"") { continue }
            if line.hasPrefix("#") {
                if let value = Self.seconds(after: "#[StartTime: ", in: line) { startTime = value }
                if let value = Self.seconds(after: "#[BaseTime: ", in: line) { baseTime = value }
                continue
            }
            var fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            var tag: String?
            if let first = fields.first, first.hasPrefix("Tag=") {
                tag = String(first.dropFirst(4))
                fields.removeFirst()
            }
            guard fields.count == 4 else {
                throw .malformedLine(lineNumber, "\(fields.count) fields after the tag, expected start, length, max and histogram")
            }
            guard let start = Double(fields[0]), let length = Double(fields[1]), let max = Double(fields[2]) else {
                throw .malformedLine(lineNumber, "start, length or max is not a number")
            }
            guard let blob = Base64.standard.decode(fields[3]) else {
                throw .malformedLine(lineNumber, "the histogram is not base64")
            }
            let histogram: HDRHistogram
            do { histogram = try HDRHistogram(decodingCompressedV2: blob) } catch {
                throw .badHistogram(lineNumber, error)
            }
            intervals.append(Interval(tag: tag, startSeconds: start, lengthSeconds: length, maxMilliseconds: max, histogram: histogram))
        }
    }

    /// Every interval's histogram added, element by element (those of `tag` only, when given).
    public func sum(tag: String? = nil) -> HDRHistogram {
        var total = HDRHistogram()
        for interval in intervals where tag == nil || interval.tag == tag { total.merge(interval.histogram) }
        return total
    }

    /// The tags of the intervals, in order of first appearance (untagged intervals not counted).
    public var tags: [String] {
        var seen: [String] = []
        for interval in intervals { if let tag = interval.tag, !seen.contains(tag) { seen.append(tag) } }
        return seen
    }

    // MARK: - Text helpers

    /// Java's `%.3f` (round half up on the decimal value, which rounding the scaled double matches
    /// for the magnitudes of a log: seconds since the epoch and milliseconds).
    static func threeDecimals(_ value: Double) -> String {
        let thousandths = (value.magnitude * 1000).rounded()
        let whole = UInt64(thousandths / 1000)
        let fraction = UInt64(thousandths) - whole * 1000
        let digits = String(fraction)
        return (value < 0 && thousandths > 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// `java.util.Date.toString()` in UTC: `Thu Dec 03 14:08:33 UTC 2026`.
    static func javaDate(_ secondsSinceEpoch: Double) -> String {
        var seconds = time_t(secondsSinceEpoch.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%a %b %d %H:%M:%S UTC %Y", &parts)
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func seconds(after prefix: String, in line: Substring) -> Double? {
        guard line.hasPrefix(prefix) else { return nil }
        return Double(line.dropFirst(prefix.count).prefix { $0 != " " && $0 != "]" })
    }
}

/// Why an interval log cannot be written or read.
public enum HistogramLogError: Error, Equatable, CustomStringConvertible {
    /// A tag that is empty or holds a comma, a space or a line break.
    case badTag(String)
    case malformedLine(Int, String)
    case badHistogram(Int, HistogramDecodingError)

    public var description: String {
        switch self {
        case .badTag(let tag): return "interval log tag \"\(tag)\" is empty or contains a comma, space or line break"
        case .malformedLine(let line, let why): return "interval log line \(line): \(why)"
        case .badHistogram(let line, let error): return "interval log line \(line): \(error)"
        }
    }
}
