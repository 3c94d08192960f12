// `drive --scenario --segment` against one live `pushproof serve`: three segments, started
// together, merged with `pushproof merge`, against the same run unsplit. Through the reference
// sender every segment plays every event for its own devices; through an adapter (which fans
// out itself) each event is handed over by one segment and every segment times its devices.
import Foundation
import JSON
import PushproofTestSupport
import Testing

/// 60 people, PushKit, alert and (half) Android tokens, 10% gone: two calls and two messages.
private let callsAndMessages = """
{"format": 1, "product": "poolse",
 "generate": {"people": 60, "seed": 4, "devices": {"voip": 1, "alert": 1, "android": 0.5}, "gone": 0.1, "name": "Split"},
 "events": [
  {"type": "call.placed", "call": "k1", "conversation": "c0", "caller": "p0", "media": "audio"},
  {"type": "message.sent", "conversation": "c0", "message": "m1", "sender": "p1", "text": "hi"},
  {"type": "call.ended", "call": "k1", "reason": "cancelled"},
  {"type": "call.placed", "call": "k2", "conversation": "c0", "caller": "p2", "media": "video"},
  {"type": "message.sent", "conversation": "c0", "message": "m2", "sender": "p3", "text": "again"},
  {"type": "call.ended", "call": "k2", "reason": "cancelled"}
 ]}
"""

/// The same people, no token gone, six messages: events a sender decides each alone. Behind an
/// adapter every segment's sender is its own backend here (the reference adapter), where a
/// team's adapters front one shared backend: a call's end handed to another backend than its
/// ring would be decided without the call, and a token one backend cleaned up would still be
/// pushed to by the others.
private let messages = """
{"format": 1, "product": "poolse",
 "generate": {"people": 60, "seed": 4, "devices": {"voip": 1, "alert": 1, "android": 0.5}, "gone": 0, "name": "Split"},
 "events": [
""" + (1...6).map { #"  {"type": "message.sent", "conversation": "c0", "message": "m\#($0)", "sender": "p\#($0)", "text": "hi"}"# }
    .joined(separator: ",\n") + "\n ]}\n"

@Suite(.serialized) struct DriveScenarioSegmentLiveTests {
    @Test(arguments: ["reference", "adapter"])
    func threeScenarioSegmentsMergeToTheUnsplitRun(sender: String) throws {
        let directory = try TemporaryDirectory("drive-scenario-segments")
        let scenario = try directory.write("split.json", sender == "adapter" ? messages : callsAndMessages)
        let (serve, credentials) = try serveTrustingCredentials(in: directory, ["--h2c", "--specs", specsDirectory])
        defer { serve.stop() }
        let senderArguments = sender == "adapter" ? ["--sender-cmd", "'\(pushproofExecutable())' adapter"] : []
        // One event at a time: a call's end must not overtake the cleanup of its ring's gone tokens.
        let common = ["drive", "--scenario", scenario, "--rate", "4", "--events-in-flight", "1", "--specs", specsDirectory,
                      "--gateway", serve.baseURL, "--admin", serve.adminURL, "--quiet"]
            + credentialArguments(credentials, gateway: serve.baseURL) + senderArguments

        let whole = directory.file("whole.json")
        let unsplit = try pushproof(common + ["--json", whole])
        try #require(unsplit.status == 0, "\(unsplit.output)\n\(unsplit.error)")
        let wholeReport = try readJSON(whole)

        let startAt = String(Int64(Date().timeIntervalSince1970 * 1000) + 4000)
        let results = (0..<3).map { directory.file("seg-\($0).json") }
        let outcomes = runConcurrently((0..<3).map { index in
            { try pushproof(common + ["--segment", "\(index)/3", "--start-at", startAt, "--result", results[index]]) }
        })
        for (index, outcome) in outcomes.enumerated() {
            let run = try outcome.get()
            #expect(run.status == 0, "segment \(index): \(run.output)\n\(run.error)")
        }
        var owned = 0, total = 0
        for path in results {
            let result = try readJSON(path)
            owned += result["devices"]?["owned"]?.intValue ?? 0
            total = result["devices"]?["total"]?.intValue ?? 0
            #expect(result["load"]?["scenario_sha256"]?.stringValue?.count == 64)
        }
        #expect(owned == total && total > 100, "the segments' devices cover the scenario's once: \(owned) of \(total)")

        let merged = directory.file("merged.json")
        let merge = try pushproof(["merge"] + results + ["--json", merged, "--max-start-skew", "2000"])
        #expect(merge.status == 0, "\(merge.output)\n\(merge.error)")
        let mergedReport = try readJSON(merged)
        for key in ["sent", "completed", "delivered", "tokens_removed", "unexpected", "iterations"] {
            #expect(mergedReport["counts"]?[key] == wholeReport["counts"]?[key], "\(sender): \(key)")
        }
        #expect((wholeReport["counts"]?["sent"]?.intValue ?? 0) > 100)
        #expect(mergedReport["latency_ns"]?["count"] == wholeReport["latency_ns"]?["count"])
        let notes = mergedReport["notes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let striped = notes.filter { $0.contains("events (striped: the sender fans out itself)") }
        #expect(striped.count == (sender == "adapter" ? 3 : 0), "\(notes)")
    }
}
