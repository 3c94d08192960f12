/// JUnit XML, the one writer behind `check`, `drive` and `plan`: the de-facto schema CI systems
/// read (Jenkins, GitLab, GitHub annotations): `<testsuites>` > `<testsuite>` > `<testcase>`,
/// a testcase failing with `<failure type message>` or skipped with `<skipped message>`.
/// Counts (`tests`, `failures`, `skipped`) are derived from the cases, never passed in.
public enum JUnit {
    public struct TestCase: Sendable {
        public enum Result: Sendable {
            case passed
            /// `text` is the failure element's body; empty writes `<failure …/>`.
            case failed(type: String, message: String, text: String = "")
            case skipped(message: String)
        }

        public var classname: String
        public var name: String
        /// Seconds; the attribute is left out when nil.
        public var time: Double?
        /// How many checks the case made (`check`: requests judged against the spec).
        public var assertions: Int?
        public var result: Result
        public var systemOut: String?

        public init(classname: String, name: String, time: Double? = nil, assertions: Int? = nil,
                    result: Result = .passed, systemOut: String? = nil) {
            self.classname = classname
            self.name = name
            self.time = time
            self.assertions = assertions
            self.result = result
            self.systemOut = systemOut
        }

        var failed: Bool { if case .failed = result { true } else { false } }
        var skipped: Bool { if case .skipped = result { true } else { false } }
    }

    public struct Suite: Sendable {
        public var name: String
        public var time: Double?
        /// Further `<testsuite>` attributes, in order (`timestamp`, `hostname`).
        public var attributes: [(name: String, value: String)]
        public var properties: [(name: String, value: String)]
        public var cases: [TestCase]
        public var systemOut: String?

        public init(name: String, time: Double? = nil, attributes: [(name: String, value: String)] = [],
                    properties: [(name: String, value: String)] = [], cases: [TestCase], systemOut: String? = nil) {
            self.name = name
            self.time = time
            self.attributes = attributes
            self.properties = properties
            self.cases = cases
            self.systemOut = systemOut
        }

        var failures: Int { cases.filter(\.failed).count }
        var skipped: Int { cases.filter(\.skipped).count }
    }

    /// The whole document. `time` (seconds) goes on `<testsuites>` when given.
    public static func document(name: String, suites: [Suite], time: Double? = nil) -> String {
        let tests = suites.reduce(0) { $0 + $1.cases.count }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"\(XML.escape(name))\" tests=\"\(tests)\" failures=\"\(suites.reduce(0) { $0 + $1.failures })\""
        out += " errors=\"0\" skipped=\"\(suites.reduce(0) { $0 + $1.skipped })\"\(timeAttribute(time))>\n"
        for suite in suites {
            out += "  <testsuite name=\"\(XML.escape(suite.name))\" tests=\"\(suite.cases.count)\" failures=\"\(suite.failures)\""
            out += " errors=\"0\" skipped=\"\(suite.skipped)\"\(timeAttribute(suite.time))"
            for attribute in suite.attributes { out += " \(attribute.name)=\"\(XML.escape(attribute.value))\"" }
            out += ">\n"
            if !suite.properties.isEmpty {
                out += "    <properties>\n"
                for property in suite.properties {
                    out += "      <property name=\"\(XML.escape(property.name))\" value=\"\(XML.escape(property.value))\"/>\n"
                }
                out += "    </properties>\n"
            }
            for testCase in suite.cases { out += element(testCase) }
            if let systemOut = suite.systemOut { out += "    <system-out>\(XML.escape(systemOut))</system-out>\n" }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }

    static func element(_ testCase: TestCase) -> String {
        var out = "    <testcase classname=\"\(XML.escape(testCase.classname))\" name=\"\(XML.escape(testCase.name))\""
        out += timeAttribute(testCase.time)
        if let assertions = testCase.assertions { out += " assertions=\"\(assertions)\"" }
        var body = ""
        switch testCase.result {
        case .passed:
            break
        case .failed(let type, let message, let text):
            body += "      <failure type=\"\(XML.escape(type))\" message=\"\(XML.escape(message))\""
            body += text.isEmpty ? "/>\n" : ">\(XML.escape(text))</failure>\n"
        case .skipped(let message):
            body += "      <skipped message=\"\(XML.escape(message))\"/>\n"
        }
        if let systemOut = testCase.systemOut { body += "      <system-out>\(XML.escape(systemOut))</system-out>\n" }
        return out + (body.isEmpty ? "/>\n" : ">\n" + body + "    </testcase>\n")
    }

    private static func timeAttribute(_ seconds: Double?) -> String {
        seconds.map { " time=\"\(Format.number($0))\"" } ?? ""
    }
}
