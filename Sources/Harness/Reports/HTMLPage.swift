/// The page every HTML report is written in: the house style inline, no scripts, no external
/// assets, well-formed XML (XHTML) so tools can parse it.
public enum HTMLPage {
    /// The page around a report's sections: the title as heading, the house style inline.
    /// `pushproof drive --html` and `pushproof run --html` both use it, so their reports look alike.
    public static func page(title: String, body: String) -> String {
        var out = "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
        out += "<meta charset=\"utf-8\"/>\n<title>\(XML.escape(title))</title>\n<style>\n\(style)</style>\n</head>\n<body>\n"
        out += "<h1>\(XML.escape(title))</h1>\n" + body
        out += "</body>\n</html>\n"
        return out
    }

    static let style = """
        body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 70em; }
        h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
        table { border-collapse: collapse; margin: 0.5em 0 1em; }
        th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
        th:first-child, td:first-child { text-align: left; }
        .pass { color: #17702e; font-weight: bold; }
        .fail { color: #b3261e; font-weight: bold; }
        .note { color: #8a5a00; }
        .verdict { padding: 0.6em 0.9em; border-radius: 4px; margin: 0.5em 0 1em; }
        .verdict.failed { background: #fbe9e7; border: 1px solid #b3261e; color: #7a1a14; }
        .verdict.passed { background: #e8f5ec; border: 1px solid #17702e; color: #0f4d20; }
        .verdict ul { margin: 0.3em 0 0; }
        td.finding { text-align: left; }
        svg { display: block; margin: 0.5em 0 1.5em; background: #fcfcfc; border: 1px solid #eee; }
        svg text { font-size: 11px; fill: #333; }

        """

    /// A table cell saying pass or FAIL, with `message` as its tooltip.
    public static func verdictCell(_ passed: Bool, _ message: String) -> String {
        "<td class=\"\(passed ? "pass" : "fail")\" title=\"\(XML.escape(message))\">\(passed ? "pass" : "FAIL")</td>"
    }
}
