// `pushproof check` on recordings that are themselves wrong: another record version, malformed
// members, nothing recorded, lost lines (seq gaps), verdicts stored by an older spec set.
import Foundation
import JSON
import PushproofTestSupport
import RecordCheck
@testable import PushproofCLI
import Testing

@Suite struct CheckRecordingTests {
    /// A push no shipped product claims (its topic is nobody's): it passes without --require-spec.
    static func line(seq: Int, verdict: String? = nil) -> String {
        #"{"v":1,"seq":\#(seq),"route":"apns","method":"POST","path":"/3/device/abcd","#
            + #""headers":[["apns-topic","com.nobody.app"],["apns-push-type","alert"]],"body":"{\"aps\":{\"alert\":\"hi\"}}","#
            + #""response":{"status":200,"reason":null,"headers":[],"body":""}"# + (verdict.map { #","verdict":"# + $0 } ?? "") + "}\n"
    }

    static func check(_ text: String, _ extra: [String] = []) throws -> ToolResult {
        let directory = try TemporaryDirectory("check-recording")
        let path = try directory.write("record.jsonl", text)
        return try pushproof(["check", path, "--specs", specsDirectory] + extra)
    }

    @Test func aGoodRecordingPasses() throws {
        let result = try Self.check((1...3).map { Self.line(seq: $0) }.joined())
        #expect(result.status == 0, "\(result.output)\(result.error)")
        #expect(!result.output.contains("seq"))
        #expect(!result.error.contains("warning"))
    }

    @Test func anotherRecordVersionAndMalformedHeadersExit2Listed() throws {
        let text = Self.line(seq: 1)
            + #"{"v":99,"seq":2,"route":"apns","method":"POST","path":"/3/device/abcd"}"# + "\n"
            + #"{"v":1,"seq":3,"route":"apns","method":"POST","path":"/3/device/abcd","headers":5}"# + "\n"
        let result = try Self.check(text)
        #expect(result.status == 2)
        #expect(result.output.contains("line 2: unsupported record version 99 (this pushproof reads versions 1 and 2)"), "\(result.output)")
        #expect(result.output.contains("line 3: malformed record: headers must be an array of [name, value] pairs"), "\(result.output)")
        #expect(result.output.contains("2 unreadable lines"))
    }

    /// A hostile recording: every unreadable line and seq gap is counted exactly, 20 of each
    /// named, and what is kept does not grow with them.
    @Test func manyUnreadableLinesAndGapsAreCountedExactlyAndTwentyNamed() throws {
        var text = ""
        for index in 0..<1000 { text += Self.line(seq: 2 * index + 1) + "not json \(index)\n" }
        let directory = try TemporaryDirectory("check-hostile")
        let path = try directory.write("record.jsonl", text)
        let json = directory.file("report.json")
        let result = try pushproof(["check", path, "--specs", specsDirectory, "--json", json])
        #expect(result.status == 2)
        #expect(result.output.contains("1000 unreadable lines"), "\(result.output.suffix(500))")
        #expect(result.output.contains("… and 980 more unreadable lines"), "\(result.output.suffix(500))")
        #expect(result.output.contains("999 seq gaps (999 lines missing)"), "\(result.output.suffix(500))")
        let report = try JSONParser.parse(String(contentsOfFile: json, encoding: .utf8))
        #expect(report["unreadable_count"] == 1000)
        #expect(report["unreadable_lines"]?.arrayValue?.count == 20)
        #expect(report["seq_gap_count"] == 999)
        #expect(report["seq_gaps"]?.arrayValue?.count == 20)
    }

    /// A line longer than a record line can be is skipped to its newline without being held,
    /// and reported by its length; the lines after it are read.
    @Test func aLineOverTheLimitIsSkippedAndTheNextOnesRead() throws {
        let directory = try TemporaryDirectory("line-reader")
        let long = String(repeating: "x", count: 300_000)
        let path = try directory.write("lines.txt", "first\n" + long + "\nthird\n" + long + "last")
        let reader = try LineReader(path: path, maxLineBytes: 100_000)
        var read: [String] = []
        while let line = reader.next() {
            switch line {
            case .text(let bytes): read.append(String(decoding: bytes, as: UTF8.self))
            case .tooLong(let bytes): read.append("too long: \(bytes)")
            }
        }
        #expect(read == ["first", "too long: 300000", "third", "too long: 300004"])
    }

    @Test func anEmptyRecordingWarnsAndMinRequestsFailsIt() throws {
        let empty = try Self.check("")
        #expect(empty.status == 0)
        #expect(empty.error.contains("warning:") && empty.error.contains("holds no requests"), "\(empty.error)")
        let gated = try Self.check("", ["--min-requests", "1"])
        #expect(gated.status == 1)
        #expect(gated.output.contains("only 0 requests recorded, --min-requests 1"), "\(gated.output)")
        let few = try Self.check(Self.line(seq: 1) + Self.line(seq: 2), ["--min-requests", "3"])
        #expect(few.status == 1)
        #expect(few.output.contains("only 2 requests recorded, --min-requests 3"), "\(few.output)")
        let enough = try Self.check(Self.line(seq: 1) + Self.line(seq: 2), ["--min-requests", "2"])
        #expect(enough.status == 0, "\(enough.output)")
    }

    @Test func aSeqGapFailsAndAnAppendedRunRestartingAtOneDoesNot() throws {
        let gap = try Self.check(Self.line(seq: 164) + Self.line(seq: 165) + Self.line(seq: 302) + Self.line(seq: 303), ["--json", "/dev/stdout"])
        #expect(gap.status == 1)
        #expect(gap.output.contains("seq jumps from 165 to 302: 136 lines missing (the gateway lost them, e.g. on a full disk)"), "\(gap.output)")
        #expect(gap.output.contains("1 seq gap (136 lines missing)"))
        let appended = try Self.check(Self.line(seq: 1) + Self.line(seq: 2) + Self.line(seq: 1) + Self.line(seq: 2) + Self.line(seq: 3))
        #expect(appended.status == 0, "\(appended.output)")
        #expect(!appended.output.contains("seq"))
        let backwards = try Self.check(Self.line(seq: 1) + Self.line(seq: 2) + Self.line(seq: 3) + Self.line(seq: 2))
        #expect(backwards.status == 1)
        #expect(backwards.output.contains("seq goes back from 3 to 2"))
    }

    @Test func storedVerdictsThatDifferFromTodaysAreCountedNotFailed() throws {
        // Claimed then (judged unmatched), not claimed today: the verdict differs, today's counts.
        let stale = #"{"spec":null,"ok":false,"violations":[]}"#
        let sameAsToday = #"{"spec":null,"ok":true,"covered":false,"violations":[]}"#
        let warningsOnly = #"{"gateway_warnings":[]}"#
        let text = (1...7).map { Self.line(seq: $0, verdict: $0 == 6 ? sameAsToday : $0 == 7 ? warningsOnly : stale) }.joined()
        let result = try Self.check(text)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("stored verdicts differ on 5 requests (#1, #2, #3, #4, #5): the specs changed since the recording"),
                "\(result.output)")
        let agreeing = try Self.check(Self.line(seq: 1, verdict: sameAsToday))
        #expect(!agreeing.output.contains("stored verdicts"))
    }

    /// A push a spec judged when it was recorded, which today's specs do not claim: checking it
    /// would pass with nothing judged, so check says which app and what to pass, and exits 2.
    @Test func aPushJudgedThenAndNotClaimedTodayExits2NamingTheApp() throws {
        let judged = #"{"spec":"poolse.ring.apns","ok":true,"violations":[]}"#
        let result = try Self.check(Self.line(seq: 1, verdict: judged) + Self.line(seq: 2, verdict: judged))
        #expect(result.status == 2, "\(result.output)\(result.error)")
        #expect(result.error.contains("the recording was judged with specs that claimed com.nobody.app for poolse (2 pushes)"), "\(result.error)")
        #expect(result.error.contains(#"{"poolse":{"bundle_ids":["com.example.loop","com.nobody.app"]}}"#), "\(result.error)")
    }

    /// `show` prints rows as it reads them; `--last N` keeps N, printed oldest first.
    @Test func showLastKeepsTheLastRowsInOrder() throws {
        let directory = try TemporaryDirectory("show-last")
        let path = try directory.write("record.jsonl", (1...50).map { Self.line(seq: $0) }.joined())
        let result = try pushproof(["show", path, "--last", "3"])
        #expect(result.status == 0)
        let seqs = result.output.split(separator: "\n").dropFirst().compactMap { Int($0.prefix(6).trimmingCharacters(in: .whitespaces)) }
        #expect(seqs == [48, 49, 50], "\(result.output)")
        let all = try pushproof(["show", path])
        #expect(all.output.split(separator: "\n").dropFirst().compactMap { Int($0.prefix(6).trimmingCharacters(in: .whitespaces)) } == Array(1...50))
    }

    @Test func showNamesUnreadableLinesAndExits2() throws {
        let directory = try TemporaryDirectory("show-recording")
        let path = try directory.write("record.jsonl", Self.line(seq: 1) + #"{"v":99,"seq":2}"# + "\n")
        let result = try pushproof(["show", path])
        #expect(result.status == 2)
        #expect(result.output.contains("/3/device/abcd"))
        #expect(result.error.contains("line 2: unsupported record version 99 (this pushproof reads versions 1 and 2)"), "\(result.error)")
    }
}
