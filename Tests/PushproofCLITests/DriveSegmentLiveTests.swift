// A drive run split into 3 segments against one live `pushproof serve` (run one after another,
// the one machine standing in for three), merged with `pushproof merge`, and compared with the
// same run unsegmented: the segments together send its pushes once.
import Foundation
import JSON
import PushproofTestSupport
import Testing

@Suite(.serialized) struct DriveSegmentLiveTests {
    @Test func threeSegmentsMergeToTheUnsegmentedRunsPushesAndBadSetsAreRefused() throws {
        let directory = try TemporaryDirectory("drive-segments")
        let credentials = try writeCredentials(in: directory)
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--config", credentials + "/gateway.json", "--record", record], directory: directory.path)
        defer { serve.stop() }
        let common = ["drive", "ring-fanout", "--members", "300", "--count", "4", "--h2c", "--gateway", serve.baseURL]
            + credentialArguments(credentials, gateway: serve.baseURL)

        let whole = directory.file("whole.json")
        let unsegmented = try pushproof(common + ["--json", whole, "--quiet"])
        #expect(unsegmented.status == 0, "\(unsegmented.error)")
        let wholeReport = try readJSON(whole)
        #expect(wholeReport["counts"]?["sent"] == 2392, "4 calls ring 299 callees on PushKit and Android")

        // A start a few seconds ahead: the segments run one after another, so only the first
        // starts on time; the others' lateness is allowed by --max-start-skew below.
        let startAt = String(Int64(Date().timeIntervalSince1970 * 1000) + 3000)
        var results: [String] = []
        var owned: [Int] = []
        for index in 0..<3 {
            let path = directory.file("seg-\(index).json")
            let run = try pushproof(common + ["--segment", "\(index)/3", "--start-at", startAt, "--result", path])
            #expect(run.status == 0, "\(run.output)\n\(run.error)")
            #expect(run.output.contains("segment \(index)/3 ("), "the report names the segment")
            let result = try readJSON(path)
            #expect(result["pushproof_result"] == 1)
            #expect(result["histograms"]?.stringValue?.contains("Tag=latency,") == true)
            owned.append(result["devices"]?["owned"]?.intValue ?? -1)
            results.append(path)
        }
        #expect(owned.reduce(0, +) == 900, "the segments' devices cover the group's 900 once: \(owned)")

        let merged = directory.file("merged.json")
        let merge = try pushproof(["merge"] + results + ["--max-start-skew", "600000", "--json", merged, "--threshold", "error_rate<=0"])
        #expect(merge.status == 0, "\(merge.output)\n\(merge.error)")
        #expect(merge.output.contains("segment 2/3 (2/3:1) "), "one line a segment")
        let mergedReport = try readJSON(merged)
        for key in ["sent", "completed", "delivered", "fan_outs", "fan_outs_fully_delivered", "iterations"] {
            #expect(mergedReport["counts"]?[key] == wholeReport["counts"]?[key], "\(key)")
        }
        #expect(mergedReport["latency_ns"]?["count"] == 2392)
        #expect(mergedReport["time_to_ring_all_ns"]?["count"] == 4, "each call's parts are one fan-out")
        #expect(try lines(of: record).filter { $0["route"] == "apns" || $0["route"] == "fcm" }.count == 2 * 2392)

        let twice = try pushproof(["merge", results[0], results[1], results[1], "--max-start-skew", "600000"])
        #expect(twice.status == 2)
        #expect(twice.error.contains("segment 1/3 is given twice: \(results[1]) and \(results[1])"), "\(twice.error)")
        let missing = try pushproof(["merge", results[0], results[2], "--max-start-skew", "600000"])
        #expect(missing.status == 2)
        #expect(missing.error.contains("segment 1/3 missing"), "\(missing.error)")
        let late = try pushproof(["merge"] + results)
        #expect(late.status == 2, "the later segments started seconds after the planned start")
        #expect(late.error.contains("after the planned start, more than --max-start-skew 100 ms"), "\(late.error)")
    }

    @Test func segmentAndStartOptionsAreRefusedWhenMalformed() throws {
        for (arguments, message) in [
            (["--segment", "3/3"], "--segment 3/3: the index must be from 0 to 2"),
            (["--segment-weights", "1/2,1/2"], "--segment-weights goes with --segment"),
            (["--start-at", "2020-01-01T00:00:00Z"], "more than 10 minutes in the past"),
            (["--start-at", "tomorrow"], "expected an RFC 3339 time with a zone"),
        ] {
            let result = try pushproof(["drive", "ring-fanout", "--apns-key", "k.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"]
                                       + arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.error.contains(message), "\(result.error)")
        }
    }
}
