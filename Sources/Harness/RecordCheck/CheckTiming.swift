// `check --timing`: the validation cost per request.
import Clocks
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import Reports
import SpecValidator

/// Time spent in `SpecSet.judge`, per request (`check --timing`): the issue-3 figure.
public struct ValidationCosts {
    public private(set) var all = HDRHistogram()
    public private(set) var bySpec: [String: HDRHistogram] = [:]

    /// `spec` nil for out-of-scope requests: they count in the total only.
    public mutating func add(_ nanos: UInt64, spec: String?) {
        all.record(nanos)
        if let spec { bySpec[spec, default: HDRHistogram()].record(nanos) }
    }

    public struct Summary {
        public var count: Int
        public var meanMicros: Double
        public var p50Micros: Double
        public var p99Micros: Double
    }

    /// Nearest-rank percentiles (within 0.1 %: the histogram's precision).
    public static func summarize(_ nanos: HDRHistogram) -> Summary {
        Summary(count: Int(nanos.totalCount), meanMicros: nanos.mean / 1000,
                p50Micros: Double(nanos.value(atPercentile: 50)) / 1000, p99Micros: Double(nanos.value(atPercentile: 99)) / 1000)
    }

    public func text() -> String {
        func line(_ label: String, _ s: Summary) -> String {
            label.padding(to: 32) + String(s.count).leftPadded(9) + micros(s.meanMicros).leftPadded(10)
                + micros(s.p50Micros).leftPadded(10) + micros(s.p99Micros).leftPadded(10) + "\n"
        }
        var out = "\nvalidation cost per request (µs, SpecSet.judge only; reading the recording excluded)\n"
        out += "spec".padding(to: 32) + "requests".leftPadded(9) + "mean".leftPadded(10) + "p50".leftPadded(10) + "p99".leftPadded(10) + "\n"
        for spec in bySpec.keys.sorted() { out += line(spec, Self.summarize(bySpec[spec] ?? HDRHistogram())) }
        let total = Self.summarize(all)
        out += line("(all)", total)
        out += "validation cost: mean \(micros(total.meanMicros)) µs, p50 \(micros(total.p50Micros)) µs, p99 \(micros(total.p99Micros)) µs over \(total.count) requests\n"
        return out
    }

    public func json() -> JSONValue {
        func summary(_ s: Summary) -> JSONValue {
            ["requests": .number(Double(s.count)), "mean_us": .number(s.meanMicros),
             "p50_us": .number(s.p50Micros), "p99_us": .number(s.p99Micros)]
        }
        var specs = JSONObject()
        for spec in bySpec.keys.sorted() { specs[spec] = summary(Self.summarize(bySpec[spec] ?? HDRHistogram())) }
        return ["all": summary(Self.summarize(all)), "specs": .object(specs)]
    }

    private func micros(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
