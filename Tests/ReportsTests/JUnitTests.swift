import Reports
import Testing

/// The one JUnit writer (check, drive, plan): counts come from the cases, text is escaped.
@Suite struct JUnitTests {
    @Test func countsAndElementsFollowTheCases() {
        let xml = JUnit.document(name: "pushproof check", suites: [JUnit.Suite(name: "s", cases: [
            JUnit.TestCase(classname: "poolse", name: "poolse.ring.fcm", assertions: 2,
                           result: .failed(type: "SpecViolation", message: "1 of 2 <bad>", text: "request #3")),
            JUnit.TestCase(classname: "poolse", name: "quiet", assertions: 0, result: .skipped(message: "none matched")),
            JUnit.TestCase(classname: "plan", name: "ok", time: 0.25, systemOut: "fine & well"),
            JUnit.TestCase(classname: "plan", name: "bare"),
        ])])
        #expect(xml.contains(#"<testsuites name="pushproof check" tests="4" failures="1" errors="0" skipped="1">"#))
        #expect(xml.contains(#"<testsuite name="s" tests="4" failures="1" errors="0" skipped="1">"#))
        #expect(xml.contains(#"<testcase classname="poolse" name="poolse.ring.fcm" assertions="2">"#))
        #expect(xml.contains(#"<failure type="SpecViolation" message="1 of 2 &lt;bad&gt;">request #3</failure>"#))
        #expect(xml.contains(#"<skipped message="none matched"/>"#))
        #expect(xml.contains(#"<testcase classname="plan" name="ok" time="0.25">"#))
        #expect(xml.contains("<system-out>fine &amp; well</system-out>"))
        #expect(xml.contains(#"<testcase classname="plan" name="bare"/>"#))
    }

    @Test func aFailureWithoutTextClosesItself() {
        let xml = JUnit.document(name: "p", suites: [JUnit.Suite(name: "p", cases: [
            JUnit.TestCase(classname: "plan", name: "capacity", result: .failed(type: "capacity", message: "no set-up")),
        ])])
        #expect(xml.contains(#"<failure type="capacity" message="no set-up"/>"#))
    }
}
