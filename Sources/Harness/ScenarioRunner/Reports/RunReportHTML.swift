import Reports

/// `pushproof run --html`: one self-contained page (inline CSS, no scripts; the drive report's
/// page and verdict cells) with, per scenario, the per-event table and a token-cleanup
/// timeline: which tokens each event's answers made dead, and each cleanup rule's verdict.
public enum RunReportHTML {
    public static func html(_ reports: [ScenarioReport]) -> String {
        let passed = reports.filter(\.passed).count
        var body = "<p>\(Format.counted(reports.count, "scenario")), \(passed) passed</p>\n"
        for report in reports { body += section(report) }
        return HTMLPage.page(title: "pushproof run", body: body)
    }

    static func section(_ report: ScenarioReport) -> String {
        var out = "<section>\n<h2>\(XML.escape(report.name)) <span class=\"\(report.passed ? "pass" : "fail")\">"
        out += "\(report.passed ? "PASSED" : "FAILED")</span></h2>\n"
        out += "<p>sender \(XML.escape(report.sender)), oracle: \(XML.escape(report.oracle))"
        if let description = report.description { out += "; \(XML.escape(description))" }
        out += "</p>\n"
        if let aborted = report.aborted { out += "<p class=\"fail\">stopped: \(XML.escape(aborted))</p>\n" }

        out += "<h3>Events</h3>\n<table>\n<tr><th>event</th><th>expected</th><th>delivered</th><th>verdict</th><th>problems</th></tr>\n"
        for event in report.events {
            // A sentence behind several problems in a row (seven pushes missing for one cause)
            // is quoted once, after the last of them.
            let problems = event.problems.indices.map { index in
                let problem = event.problems[index]
                let repeats = index + 1 < event.problems.count && event.problems[index + 1].source == problem.source
                return XML.escape(problem.message) + (repeats ? "" : problem.source.map { "<br/><i>\u{201C}\(XML.escape($0))\u{201D}</i>" } ?? "")
            }
            out += "<tr><td>\(event.index) \(XML.escape(event.type))</td><td>\(event.expected.count)</td><td>\(event.delivered.count)</td>"
            out += HTMLPage.verdictCell(event.passed, event.passed ? "every expected delivery, nothing else" : Format.counted(event.problems.count, "problem"))
            out += "<td style=\"text-align: left\">\(problems.joined(separator: "<br/>"))</td></tr>\n"
        }
        out += "</table>\n"

        out += "<h3>Token cleanup</h3>\n<table>\n<tr><th>event</th><th>tokens answered dead</th><th>cleanup problems</th></tr>\n"
        for event in report.events {
            let problems = event.problems.filter { $0.cleanupRule != nil }
            guard !event.tokensDied.isEmpty || !problems.isEmpty else { continue }
            // A 10,000-person call can kill hundreds of tokens in one event: name the first few.
            let shown = 20
            var died = event.tokensDied.prefix(shown).map { "\(XML.escape($0.device)) (\($0.answer.rawValue))" }.joined(separator: ", ")
            if event.tokensDied.count > shown { died += " and \(event.tokensDied.count - shown) more" }
            out += "<tr><td>\(event.index) \(XML.escape(event.type))</td><td style=\"text-align: left\">\(died)</td>"
            out += "<td style=\"text-align: left\" class=\"\(problems.isEmpty ? "" : "fail")\">"
            out += problems.map { XML.escape($0.message) }.joined(separator: "<br/>") + "</td></tr>\n"
        }
        out += "</table>\n<table>\n<tr><th>cleanup rule</th><th>verdict</th><th>problems</th></tr>\n"
        for rule in report.cleanupRules {
            out += "<tr><td>\(XML.escape(rule.rule))</td>"
            out += HTMLPage.verdictCell(rule.problems.isEmpty, rule.problems.isEmpty ? "holds" : Format.counted(rule.problems.count, "problem"))
            out += "<td>\(rule.problems.count)</td></tr>\n"
        }
        out += "</table>\n</section>\n"
        return out
    }
}
