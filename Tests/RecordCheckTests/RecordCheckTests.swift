// `RecordCheck` in-process, on the shipped specs: the check `pushproof check` prints.
import Foundation
import JSON
import RecordCheck
import SpecValidator
import Testing

@Suite struct RecordCheckTests {
    static let specs: SpecSet = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try! SpecSet.load(directory: root.appendingPathComponent("Specs").path)
    }()

    /// A push no shipped product claims (its topic is nobody's).
    static func line(seq: Int) -> String {
        #"{"v":1,"seq":\#(seq),"route":"apns","method":"POST","path":"/3/device/abcd","#
            + #""headers":[["apns-topic","com.nobody.app"],["apns-push-type","alert"]],"body":"{\"aps\":{\"alert\":\"hi\"}}","#
            + #""response":{"status":200,"reason":null,"headers":[],"body":""}}"# + "\n"
    }

    static func run(_ text: String, minRequests: Int = 0, requireSpec: Bool = false, timing: Bool = false,
                    judged: inout [Int]) throws -> RecordCheckReport {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("record-check-\(UUID().uuidString).jsonl").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let check = RecordCheck(specs: specs, maxFailures: 5, minRequests: minRequests, requireSpec: requireSpec, timing: timing)
        var sequences: [Int] = []
        let report = check.run(try LineReader(path: path)) { _, _, sequence in sequences.append(sequence) }
        judged = sequences
        return report
    }

    @Test func aCompleteRecordingPassesAndEveryRequestIsHandedOn() throws {
        var judged: [Int] = []
        let report = try Self.run((1...3).map { Self.line(seq: $0) }.joined(), judged: &judged)
        #expect(judged == [1, 2, 3])
        #expect(!report.failed && !report.hasUnreadableLines && !report.isEmpty)
        #expect(report.result.notCoveredCount == 3)
        #expect(report.costs == nil)
        #expect(report.json(recording: "r", specsDirectory: "s", deliveries: nil)["ok"] == .bool(true))
    }

    /// A version-2 line's `json` is judged as the bytes received, repeated key and number
    /// spellings included, as the version-1 line of the same push is; both read in one recording.
    @Test func versionTwoLinesAreJudgedOnTheirExactBytesBesideVersionOneLines() throws {
        let payload = #"{"aps":{"alert":"hi","badge":1.0},"k":1,"k":2e0}"#
        let escaped = payload.replacingOccurrences(of: "\"", with: "\\\"")
        let head = #""route":"apns","method":"POST","path":"/3/device/abcd","headers":[["apns-topic","com.nobody.app"],["apns-push-type","alert"]],"#
        let answer = #","response":{"status":200,"reason":null,"headers":[],"body":""}}"# + "\n"
        let v1 = #"{"v":1,"seq":1,"# + head + #""body":""# + escaped + #"""# + answer
        let v2 = #"{"v":2,"seq":2,"# + head + #""json":"# + payload + answer
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("record-check-\(UUID().uuidString).jsonl").path
        try (v1 + v2).write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var judged: [(body: [UInt8], verdict: SpecVerdict)] = []
        let report = RecordCheck(specs: Self.specs, maxFailures: 5, minRequests: 0, requireSpec: false, timing: false)
            .run(try LineReader(path: path)) { request, verdict, _ in judged.append((request.body, verdict)) }
        #expect(!report.hasUnreadableLines && !report.failed)
        #expect(judged.map(\.body) == [Array(payload.utf8), Array(payload.utf8)])
        #expect(judged.count == 2 && judged[0].verdict == judged[1].verdict)
    }

    @Test func aSeqGapFailsAndAnAppendedRunDoesNot() throws {
        var judged: [Int] = []
        let gap = try Self.run(Self.line(seq: 1) + Self.line(seq: 4), judged: &judged)
        #expect(gap.failed)
        #expect(gap.result.missingLines == 2)
        let appended = try Self.run(Self.line(seq: 1) + Self.line(seq: 2) + Self.line(seq: 1), judged: &judged)
        #expect(!appended.failed)
    }

    @Test func unreadableLinesAreCountedAndTheRestJudged() throws {
        var judged: [Int] = []
        let report = try Self.run(Self.line(seq: 1) + "not json\n" + Self.line(seq: 2), timing: true, judged: &judged)
        #expect(report.hasUnreadableLines)
        #expect(report.result.unreadable.first.map(\.line) == [2])
        #expect(judged == [1, 2])
        #expect(report.costs?.all.totalCount == 2)
        let json = report.json(recording: "r", specsDirectory: "s", deliveries: (["ok": false], false))
        #expect(json["ok"] == .bool(false))
        #expect(json["deliveries"]?["ok"] == .bool(false))
        #expect(json["timing"]?["all"]?["requests"] == 2)
    }

    @Test func tooFewRequestsAndUnclaimedPushesUnderRequireSpecFail() throws {
        var judged: [Int] = []
        #expect(try Self.run("", minRequests: 1, judged: &judged).isEmpty)
        #expect(try Self.run(Self.line(seq: 1), minRequests: 2, judged: &judged).failed)
        let required = try Self.run(Self.line(seq: 1), requireSpec: true, judged: &judged)
        #expect(required.failed && required.result.failedCount == 1)
    }
}
