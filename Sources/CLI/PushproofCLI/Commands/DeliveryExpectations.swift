import Driver
import Foundation
import JSON
import PushModel
import Reports
import Scenario
import RecordLine

/// `pushproof check --expect FILE`: did the pushes reach exactly the right devices? The file
/// lists the deliveries a scenario must produce; the recording is compared with it:
/// every listed (device token, spec) pair must have been accepted exactly `count` times, and
/// no other device may have been pushed to.
///
/// ```
/// {"deliveries": [
///    {"token": "7f3c…", "spec": "poolse.ring.apns"},
///    {"token": "fcm-token-1", "spec": "poolse.ring.fcm"},
///    {"token": "fcm-token-2", "count": 2}              // any spec, twice
/// ]}
/// ```
///
/// A push counts as delivered when the gateway accepted it (2xx): a retried 503 followed by a
/// 200 is one delivery, and a push the gateway refused (a gone token's 410) reached no device.
struct DeliveryExpectations {
    let path: String
    let expected: [ExpectedPush]

    /// Reads and checks the file; the error names the entry that is wrong.
    init(path: String) throws(FileError) {
        self.path = path
        let text = try readText(path)
        let document: JSONValue
        do {
            document = try JSONParser.parse(text, options: .init(duplicateKeys: .reject))
        } catch {
            throw FileError(path: path, reason: "not valid JSON: \(error)")
        }
        guard let entries = document["deliveries"]?.arrayValue else {
            throw FileError(path: path, reason: #"expected {"deliveries": [{"token": …, "spec": …}, …]}"#)
        }
        var expected: [ExpectedPush] = []
        var seen: Set<String> = []
        do throws(JSONFieldError) {
            for (index, entry) in entries.enumerated() {
                let fields = try JSONFields(entry, path: "deliveries[\(index)]", allowed: ["token", "spec", "count"])
                let token = try fields.requiredString("token")
                // Present means given: `"spec": null` or `"count": null` is an error, not a default.
                let spec = try fields.object["spec"] == nil ? nil : fields.requiredString("spec")
                let count = try fields.object["count"] == nil ? 1 : fields.requiredInt("count", range: 1...Int.max)
                let key = Self.normalized(token) + "\u{0}" + (spec ?? "")
                guard seen.insert(key).inserted else {
                    throw JSONFieldError(keyPath: fields.path, problem: "\(token) \(spec ?? "(any spec)") is listed twice; use count")
                }
                expected.append(ExpectedPush(token: token, spec: spec, count: count))
            }
        } catch {
            throw FileError(path: path, reason: error.description)
        }
        self.expected = expected
    }

    static func normalized(_ token: String) -> String { DeviceToken(token).comparable }
}

extension DeliveryTally {
    /// Notes one recorded request: counted only if it was a push the gateway accepted.
    mutating func add(_ request: RecordedExchange, spec: String?, sequence: Int) {
        add(token: request.token, status: request.status, spec: spec, sequence: sequence)
    }

    func compare(with expectations: DeliveryExpectations) -> DeliveryComparison {
        compare(with: expectations.expected)
    }
}

extension DeliveryComparison {
    func text(path: String, maxListed: Int) -> String {
        var out = "\ndeliveries (\(path)): \(expectedCount) expected, \(asExpected) as expected; \(missing.count) missing, "
            + "\(unexpected.count) unexpected, \(repeated.count) repeated\n"
        let all = problems
        for problem in all.prefix(maxListed) { out += "  \(problem)\n" }
        if all.count > maxListed { out += "  … and \(all.count - maxListed) more (all in --json)\n" }
        return out
    }

    func json(path: String) -> JSONValue {
        [
            "file": .string(path), "ok": .bool(passed), "expected": .number(Double(expectedCount)),
            "as_expected": .number(Double(asExpected)),
            "missing": .array(missing.map {
                ["token": .string($0.entry.token), "spec": $0.entry.spec.map(JSONValue.string) ?? .null,
                 "expected": .number(Double($0.entry.count)), "accepted": .number(Double($0.got))]
            }),
            "repeated": .array(repeated.map {
                ["token": .string($0.entry.token), "spec": $0.entry.spec.map(JSONValue.string) ?? .null,
                 "expected": .number(Double($0.entry.count)), "accepted": .number(Double($0.got)),
                 "extra_seqs": .array($0.extraSequences.map { .number(Double($0)) })]
            }),
            "unexpected": .array(unexpected.map {
                ["token": .string($0.token), "spec": $0.spec.map(JSONValue.string) ?? .null, "seq": .number(Double($0.sequence))]
            }),
        ]
    }

    /// One testcase, failing with every problem listed.
    func junitTestcase(path: String) -> JUnit.TestCase {
        JUnit.TestCase(classname: "pushproof", name: "deliveries match \(path)", assertions: expectedCount,
                       result: passed ? .passed : .failed(type: "DeliveryMismatch",
                                                          message: "\(missing.count) missing, \(unexpected.count) unexpected, \(repeated.count) repeated",
                                                          text: problems.joined(separator: "\n")))
    }
}
