// `run --sender-cmd` through the binary: the adapter starts in the scenario's folder, and a run
// the adapter stops still writes its JSON, JUnit and recording with the reason, and exits 1.
import Foundation
import JSON
import PushproofTestSupport
import Testing

/// Passes every request to `pushproof adapter` and its replies back, but refuses the event
/// whose index is its first argument: a sender that works until it does not.
private let refusingProxy = #"""
import json, subprocess, sys
refuse = int(sys.argv[1])
reference = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "event" and request["index"] == refuse:
        sys.stderr.write("the database is read-only\n")
        sys.stderr.flush()
        print(json.dumps({"id": request["id"], "ok": False, "error": "cannot store the message"}), flush=True)
        continue
    reference.stdin.write(line)
    reference.stdin.flush()
    print(reference.stdout.readline().strip(), flush=True)
    if request["type"] == "shutdown":
        break
"""#

@Suite(.serialized) struct RunAdapterTests {
    @Test func aStoppedRunKeepsItsReportsAndRecordingWithTheReason() throws {
        let directory = try TemporaryDirectory("run-adapter")
        let scenarios = directory.file("scenarios")
        try FileManager.default.createDirectory(atPath: scenarios, withIntermediateDirectories: true)
        // In name order: a (three events, the second refused), then b, never played.
        for (golden, name) in [("poolse-02-answered-elsewhere.json", "a.json"), ("poolse-01-ring-group.json", "b.json")] {
            try FileManager.default.copyItem(atPath: specsDirectory + "/scenarios/" + golden, toPath: scenarios + "/" + name)
        }
        // Beside the scenarios, named relatively: the adapter runs in the scenario's folder.
        try directory.write("scenarios/proxy.py", refusingProxy)
        let json = directory.file("report.json"), junit = directory.file("report.xml"), record = directory.file("record.jsonl")
        let result = try pushproof(["run", scenarios, "--specs", specsDirectory,
                                    "--sender-cmd", "python3 proxy.py 1 '\(pushproofExecutable())' adapter",
                                    "--json", json, "--junit", junit, "--record", record], directory: directory.path)
        #expect(result.status == 1, "\(result.output)\(result.error)")
        #expect(result.error.contains("[sender] the database is read-only"), "stderr forwarded, prefixed: \(result.error)")
        #expect(result.output.contains("stopped after 1 of 2 scenarios"), "\(result.output)")

        let report = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: json))))
        let scenario = try #require(report["scenarios"]?.arrayValue?.first)
        #expect(report["scenarios"]?.arrayValue?.count == 1, "a stopped the run")
        #expect(scenario["sender"]?.stringValue?.hasPrefix("pushproof reference ") == true)
        let aborted = scenario["aborted"]?.stringValue ?? ""
        #expect(aborted.contains("the adapter refused event 1 (call.answered): cannot store the message"), "\(aborted)")
        #expect(aborted.contains("the database is read-only"), "\(aborted)")
        #expect(scenario["events"]?.arrayValue?.map { $0["passed"]?.boolValue } == [true, false])

        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"name="sender""#) && xml.contains("SenderStopped"), "\(xml)")
        // Event 0's ring reached the gateway before the stop, and the recording kept it.
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.contains("\"apns\"") || $0.contains("/3/device/") }, "\(lines.count) record lines")
    }

    @Test func adapterOptionsGoWithSenderCmd() throws {
        let result = try pushproof(["run", specsDirectory + "/scenarios", "--sender-dir", "/tmp"])
        #expect(result.status == 64)
        #expect(result.error.contains("--sender-dir goes with --sender-cmd"), "\(result.error)")
        let both = try pushproof(["run", specsDirectory + "/scenarios", "--sender", "reference", "--sender-cmd", "true"])
        #expect(both.status == 64)
    }
}
