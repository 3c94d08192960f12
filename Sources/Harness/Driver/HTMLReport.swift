import Foundation
import Metrics
import Reports

/// A self-contained HTML page for one or more runs: figures, verdicts and three inline SVG
/// charts (latency by percentile on a log axis, throughput per second, outcomes). No scripts,
/// no external assets; the markup is well-formed XML (XHTML) so tools can parse it.
public enum HTMLReport {
    public static func html(_ reports: [RunReport], title: String = "pushproof load report") -> String {
        HTMLPage.page(title: title, body: reports.map(section).joined())
    }

    public static func html(_ report: RunReport) -> String {
        html([report], title: "pushproof load report: \(report.summary.scenario)")
    }


    static func section(_ report: RunReport) -> String {
        let s = report.summary
        let c = s.counts
        var out = "<section>\n<h2>\(XML.escape(s.scenario)) <span class=\"\(report.passed ? "pass" : "fail")\">"
        out += "\(report.passed ? "PASSED" : "FAILED")</span></h2>\n"
        // The verdict first, in colour: a failed run says why before any figure.
        if report.passed {
            out += "<div class=\"verdict passed\">PASSED: every threshold and baseline bound held, no finding.</div>\n"
        } else {
            out += "<div class=\"verdict failed\"><strong>FAILED</strong>\n<ul>\n"
            for message in report.failureMessages { out += "<li>\(XML.escape(message))</li>\n" }
            out += "</ul></div>\n"
        }
        out += "<p>\(XML.escape(s.modelDescription))"
        if s.warmUpSeconds > 0 { out += ", warm-up \(Format.seconds(s.warmUpSeconds))" }
        out += "; \(s.environment.cores) cores, \(XML.escape(s.environment.hostname)), \(XML.escape(s.environment.date))</p>\n"
        if let sender = s.sender { out += "<p>sender: \(XML.escape(sender.text))</p>\n" }
        for note in s.notes { out += "<p class=\"note\">\(XML.escape(note))</p>\n" }

        out += "<table>\n<tr><th>figure</th><th>value</th></tr>\n"
        var rows: [(String, String)] = [
            ("pushes sent", String(c.sent)), ("completed", String(c.completed)), ("delivered", String(c.delivered)),
            ("failed", String(c.failed)), ("tokens removed", String(c.tokensRemoved)), ("abandoned", String(c.abandoned)),
            ("iterations", String(c.iterations)), ("late iterations", String(c.lateIterations)),
            ("dropped iterations", String(c.droppedIterations)),
        ]
        rows.append(("throughput (pushes/s)", Format.significant(s.throughput)))
        rows.append(("delivered/s", Format.significant(s.deliveredThroughput)))
        rows.append(("error rate", Format.percent(s.errorRate)))
        rows.append(("measured span (s)", Format.significant(s.measuredSeconds)))
        if c.fanOuts > 0 {
            rows.append(("fan-outs complete", String(c.fanOuts)))
            rows.append(("fan-outs fully delivered", String(c.fanOutsFullyDelivered)))
        }
        if let violations = s.violations { rows.append(("conformance violations", String(violations))) }
        for (name, value) in rows { out += "<tr><td>\(name)</td><td>\(value)</td></tr>\n" }
        out += "</table>\n"

        out += "<table>\n<tr><th>latency (ms)</th><th>n</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th></tr>\n"
        var latencyRows = [("from intended send (corrected)", s.latency), ("from actual send", s.serviceTime),
                           ("send lag behind schedule", s.sendLag)]
        if s.timeToRingAll.count > 0 { latencyRows.append(("time to ring all (per fan-out)", s.timeToRingAll)) }
        for (name, l) in latencyRows {
            out += "<tr><td>\(name)</td><td>\(l.count)</td><td>\(Format.milliseconds(l.min))</td><td>\(Format.milliseconds(l.p50))</td>"
            out += "<td>\(Format.milliseconds(l.p90))</td><td>\(Format.milliseconds(l.p99))</td><td>\(Format.milliseconds(l.p999))</td>"
            out += "<td>\(Format.milliseconds(l.max))</td><td>\(Format.milliseconds(l.mean))</td></tr>\n"
        }
        out += "</table>\n"

        if !report.findings.isEmpty {
            out += "<h3>Findings</h3>\n<table>\n<tr><th>finding</th></tr>\n"
            for finding in report.findings { out += "<tr><td class=\"finding fail\">\(XML.escape(finding))</td></tr>\n" }
            out += "</table>\n"
        }
        if let thresholds = report.thresholds {
            out += "<h3>Thresholds</h3>\n<table>\n<tr><th>threshold</th><th>actual</th><th>verdict</th></tr>\n"
            for outcome in thresholds.outcomes {
                out += "<tr><td>\(XML.escape(outcome.threshold.description))</td>"
                out += "<td>\(outcome.actual.map(Format.significant) ?? "not measured")</td>"
                out += HTMLPage.verdictCell(outcome.passed, outcome.message) + "</tr>\n"
            }
            out += "</table>\n"
        }
        if let baseline = report.baseline {
            out += "<h3>Baseline: \(XML.escape(baseline.baselineScenario)) of \(XML.escape(baseline.baselineDate))</h3>\n"
            for caveat in baseline.caveats { out += "<p class=\"note\">\(XML.escape(caveat))</p>\n" }
            out += "<table>\n<tr><th>bound</th><th>baseline</th><th>this run</th><th>ratio</th><th>verdict</th></tr>\n"
            for entry in baseline.entries {
                out += "<tr><td>\(XML.escape(entry.rule.description))</td>"
                out += "<td>\(entry.baseline.map(Format.significant) ?? "-")</td><td>\(entry.current.map(Format.significant) ?? "-")</td>"
                out += "<td>\(entry.ratio.map(Format.ratio) ?? "-")</td>" + HTMLPage.verdictCell(entry.passed, entry.message) + "</tr>\n"
            }
            out += "</table>\n"
        }

        out += "<h3>Latency by percentile</h3>\n" + percentileChart(s)
        out += "<h3>Latency over time</h3>\n" + latencyOverTimeChart(s)
        out += "<h3>Offered and served per second</h3>\n" + throughputChart(s)
        out += "<h3>Outcomes</h3>\n" + outcomeChart(s)
        out += "</section>\n"
        return out
    }


    // MARK: - Charts

    static let width = 720.0, height = 300.0
    static let left = 60.0, right = 20.0, top = 32.0, bottom = 40.0
    static var plotWidth: Double { width - left - right }
    static var plotHeight: Double { height - top - bottom }

    static func open(_ label: String) -> String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(XML.escape(label))\">\n"
    }

    static func text(_ x: Double, _ y: Double, _ content: String, anchor: String = "middle", extra: String = "") -> String {
        "<text x=\"\(c(x))\" y=\"\(c(y))\" text-anchor=\"\(anchor)\"\(extra)>\(XML.escape(content))</text>\n"
    }

    static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String = "#ccc") -> String {
        "<line x1=\"\(c(x1))\" y1=\"\(c(y1))\" x2=\"\(c(x2))\" y2=\"\(c(y2))\" stroke=\"\(stroke)\" stroke-width=\"1\"/>\n"
    }

    /// A coordinate with at most two decimals.
    static func c(_ value: Double) -> String { Format.number((value * 100).rounded() / 100) }

    /// A round axis maximum at or above `value`: 1, 2, 5 x 10^k.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        let power = pow(10, floor(log10(value)))
        for step in [1.0, 1.5, 2, 3, 4, 5, 6, 8, 10] where step * power >= value { return step * power }
        return 10 * power
    }

    static func yAxis(maximum: Double, unit: String) -> String {
        var out = ""
        for i in 0...4 {
            let value = maximum * Double(i) / 4
            let y = top + plotHeight - plotHeight * Double(i) / 4
            out += line(left, y, left + plotWidth, y, stroke: "#e4e4e4")
            out += text(left - 6, y + 4, Format.significant(value), anchor: "end")
        }
        out += text(14, top + plotHeight / 2, unit, extra: " transform=\"rotate(-90 14 \(c(top + plotHeight / 2)))\"")
        return out
    }

    /// Latency (ms, linear) against percentile on a log axis of 1 / (1 - p): the HdrHistogram plot,
    /// where 90 %, 99 %, 99.9 % are evenly spaced and the tail is visible.
    static func percentileChart(_ s: RunSummary) -> String {
        var out = open("latency by percentile")
        let series: [(String, String, [PercentilePoint])] = [
            ("from intended send (corrected)", "#1f5fbf", s.latencyTable),
            ("from actual send", "#e07b00", s.serviceTimeTable),
        ]
        let finite = series.flatMap { $0.2 }.filter { $0.percentile < 100 }
        guard !finite.isEmpty else {
            return out + text(width / 2, height / 2, "no latency samples") + "</svg>\n"
        }
        let nines = finite.map { log10(1 / (1 - $0.percentile / 100)) }
        let xMax = Swift.max(1, ceil(nines.max() ?? 1))
        let yMax = niceCeiling(Double(series.flatMap { $0.2 }.map(\.value).max() ?? 1) / 1e6)
        out += yAxis(maximum: yMax, unit: "ms")
        for tick in 0...Int(xMax) {
            let x = left + plotWidth * Double(tick) / xMax
            out += line(x, top, x, top + plotHeight, stroke: "#e4e4e4")
            let label = tick == 0 ? "0%" : Format.number(100 - 100 / pow(10, Double(tick))) + "%"
            // The last label ends at the plot's edge, so "99.999%" is never cut off.
            out += text(x, top + plotHeight + 16, label, anchor: tick == Int(xMax) ? "end" : "middle")
        }
        out += text(left + plotWidth / 2, height - 6, "percentile (log scale of 1/(1-p))")
        for (index, (name, colour, points)) in series.enumerated() {
            let coordinates = points.map { point -> String in
                let nine = point.percentile >= 100 ? xMax : Swift.min(xMax, log10(1 / (1 - point.percentile / 100)))
                let x = left + plotWidth * nine / xMax
                let y = top + plotHeight - plotHeight * Swift.min(1, Double(point.value) / 1e6 / yMax)
                return "\(c(x)),\(c(y))"
            }
            if !coordinates.isEmpty {
                out += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" points=\"\(coordinates.joined(separator: " "))\"/>\n"
            }
            out += legend(index, name, colour)
        }
        return out + "</svg>\n"
    }

    /// A legend entry in the margin above the plot, never on a curve: entries side by side.
    static func legend(_ index: Int, _ name: String, _ colour: String, dashed: Bool = false) -> String {
        let x = left + Double(index) * 230
        let y = top - 8
        var out = "<line x1=\"\(c(x))\" y1=\"\(c(y))\" x2=\"\(c(x + 16))\" y2=\"\(c(y))\" stroke=\"\(colour)\" stroke-width=\"3\""
        out += dashed ? " stroke-dasharray=\"4 3\"/>\n" : "/>\n"
        return out + text(x + 22, y + 4, name, anchor: "start")
    }

    /// Mean and longest latency from the intended time of the pushes completed each second: a
    /// backlog that grows through the run shows as a rising line, which the percentiles hide.
    static func latencyOverTimeChart(_ s: RunSummary) -> String {
        var out = open("latency over time")
        let counts = s.perSecond.latencyCount
        guard counts.contains(where: { $0 > 0 }) else {
            return out + text(width / 2, height / 2, "no latency samples over time") + "</svg>\n"
        }
        let means = s.perSecond.latencyMean, maxima = s.perSecond.latencyMax
        let yMax = niceCeiling(Double(maxima.max() ?? 1) / 1e6)
        out += yAxis(maximum: yMax, unit: "ms")
        let slot = plotWidth / Double(counts.count)
        for (index, (name, colour, values)) in [("max", "#c8453b", maxima), ("mean", "#1f5fbf", means)].enumerated() {
            let points = values.indices.filter { counts[$0] > 0 }.map { second in
                "\(c(left + slot * (Double(second) + 0.5))),\(c(top + plotHeight - plotHeight * Swift.min(1, Double(values[second]) / 1e6 / yMax)))"
            }
            out += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>\n"
            out += legend(index, "\(name) latency", colour)
        }
        out += secondLabels(count: counts.count, slot: slot)
        out += text(left + plotWidth / 2, height - 6, "seconds after warm-up (latency of the pushes completed in each second)")
        return out + "</svg>\n"
    }

    static func secondLabels(count: Int, slot: Double) -> String {
        var out = ""
        let labelEvery = Swift.max(1, count / 10)
        for second in stride(from: 0, to: count, by: labelEvery) {
            out += text(left + slot * (Double(second) + 0.5), top + plotHeight + 16, String(second))
        }
        return out
    }

    /// Served (completed pushes per second after warm-up, bars; delivered, a line) against
    /// offered (the pushes due in each second, dashed): a sender short of its schedule shows
    /// as bars below the dashed line.
    static func throughputChart(_ s: RunSummary) -> String {
        var out = open("offered and served per second")
        let completed = s.completedPerSecond
        let offered = s.perSecond.offered
        guard !completed.isEmpty || !offered.isEmpty else {
            return out + text(width / 2, height / 2, "no completions") + "</svg>\n"
        }
        let seconds = Swift.max(completed.count, offered.count)
        let yMax = niceCeiling(Double(Swift.max(completed.max() ?? 1, offered.max() ?? 1)))
        out += yAxis(maximum: yMax, unit: "pushes/s")
        let slot = plotWidth / Double(seconds)
        for (second, count) in completed.enumerated() {
            let h = plotHeight * Double(count) / yMax
            out += "<rect x=\"\(c(left + slot * Double(second) + slot * 0.1))\" y=\"\(c(top + plotHeight - h))\" width=\"\(c(slot * 0.8))\" height=\"\(c(h))\" fill=\"#9bbbe8\"><title>second \(second): \(count) completed, \(second < offered.count ? offered[second] : 0) offered</title></rect>\n"
        }
        func polyline(_ values: [Int], colour: String, dashed: Bool) -> String {
            guard !values.isEmpty else { return "" }
            let points = values.enumerated().map { second, count in
                "\(c(left + slot * (Double(second) + 0.5))),\(c(top + plotHeight - plotHeight * Double(count) / yMax))"
            }
            return "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"\(dashed ? " stroke-dasharray=\"4 3\"" : "") points=\"\(points.joined(separator: " "))\"/>\n"
        }
        out += polyline(offered, colour: "#555", dashed: true) + legend(0, "offered (due that second)", "#555", dashed: true)
        out += polyline(s.deliveredPerSecond, colour: "#17702e", dashed: false) + legend(1, "delivered", "#17702e")
        out += "<rect x=\"\(c(left + 460))\" y=\"\(c(top - 12))\" width=\"16\" height=\"8\" fill=\"#9bbbe8\"/>\n"
        out += text(left + 482, top - 4, "completed (bars)", anchor: "start")
        out += secondLabels(count: seconds, slot: slot)
        out += text(left + plotWidth / 2, height - 6, "seconds after warm-up")
        return out + "</svg>\n"
    }

    /// One horizontal bar per outcome (kind and reason).
    static func outcomeChart(_ s: RunSummary) -> String {
        let outcomes = s.outcomes
        let rowHeight = 24.0
        let chartHeight = Swift.max(60, top + rowHeight * Double(outcomes.count) + 20)
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(chartHeight))\" viewBox=\"0 0 \(Int(width)) \(Int(chartHeight))\" role=\"img\" aria-label=\"outcomes\">\n"
        guard let largest = outcomes.map(\.count).max(), largest > 0 else {
            return out + text(width / 2, 30, "no outcomes") + "</svg>\n"
        }
        let labelWidth = 230.0
        let barSpace = width - labelWidth - 90
        for (index, outcome) in outcomes.enumerated() {
            let y = top + rowHeight * Double(index)
            let colour = switch outcome.kind {
            case "delivered": "#3a9d5d"
            case "token_removed": "#d9a400"
            default: "#c8453b"
            }
            let w = Swift.max(1, barSpace * Double(outcome.count) / Double(largest))
            out += text(labelWidth - 8, y + 15, RunReport.outcomeLabel(outcome), anchor: "end")
            out += "<rect x=\"\(c(labelWidth))\" y=\"\(c(y + 3))\" width=\"\(c(w))\" height=\"\(c(rowHeight - 6))\" fill=\"\(colour)\"/>\n"
            out += text(labelWidth + w + 6, y + 15, String(outcome.count), anchor: "start")
        }
        return out + "</svg>\n"
    }
}
