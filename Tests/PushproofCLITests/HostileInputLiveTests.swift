// Live tests of issue 9's bounds: a hostile body or spec pattern costs one request, not the
// event loop that carries everyone else's.
import Foundation
import JSON
import PushproofTestSupport
import Synchronization
import Testing

@Suite(.serialized) struct HostileInputLiveTests {
    static let specsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Specs").path

    /// `{"k0":0,…}` of ~950 KB: 95,000 distinct keys.
    static func manyKeyBody() -> String {
        var text = #"{"message":{"token":"t","data":{"#
        for i in 0..<95_000 { text += (i == 0 ? "" : ",") + "\"k\(i)\":0" }
        return text + "}}}"
    }

    /// One event loop, so a request that held it would hold the normal one too.
    @Test func aNormalPushIsAnsweredWhileManyKeyBodiesArrive() throws {
        let directory = try TemporaryDirectory("hostile")
        let body = try directory.write("many-keys.json", Self.manyKeyBody())
        let serve = try ServeProcess(["--h2c", "--threads", "1", "--specs", Self.specsDirectory], directory: directory.path)
        defer { serve.stop() }
        let url = "\(serve.baseURL)/v1/projects/poolse-test/messages:send"
        let attacks = DispatchGroup()
        let answers = Mutex<[String]>([])
        for _ in 0..<4 {
            DispatchQueue.global().async(group: attacks) {
                let result = try? curl(["--http2-prior-knowledge", "-H", "authorization: Bearer x", "-H", "content-type: application/json",
                                        "--data-binary", "@" + body, url])
                answers.withLock { $0.append(result?.output ?? "") }
            }
        }
        Thread.sleep(forTimeInterval: 0.5)  // the bodies are on their way (loopback: ~ms each)
        let started = Date()
        let normal = try curl(["--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-H", "authorization: bearer x",
                               "-H", "apns-push-type: alert", "-H", "apns-topic: com.example.loop",
                               "-d", #"{"aps":{"alert":"hi"}}"#, "\(serve.baseURL)/3/device/\(String(repeating: "ab", count: 32))"])
        let waited = Date().timeIntervalSince(started)
        #expect(normal.output == "200", "\(normal.error)")
        #expect(waited < 3, "the normal push waited \(waited) s")
        attacks.wait()
        for answer in answers.withLock({ $0 }) {
            #expect(answer.contains("Request payload size exceeds the limit"), "\(answer.prefix(300))")
        }
    }

    /// A spec whose pattern nests quantifiers, and strings that make it backtrack: each such
    /// check gives up within the match limit, the gateway keeps answering, and `check` reports
    /// the check as failed with the reason.
    @Test func aCatastrophicPatternCostsOneCheckNotTheLoop() throws {
        let directory = try TemporaryDirectory("hostile-pattern")
        let specs = directory.file("specs")
        try FileManager.default.copyItem(atPath: Self.specsDirectory, toPath: specs)
        let ring = specs + "/poolse/ring.apns.json"
        let original = try String(contentsOfFile: ring, encoding: .utf8)
        let plain = "\"caller_name\": {\n        \"type\": \"string\"\n      }"
        #expect(original.contains(plain))
        try original.replacingOccurrences(of: plain, with: "\"caller_name\": {\n        \"type\": \"string\", \"pattern\": \"^(?=(a+)+$)\"\n      }")
            .write(toFile: ring, atomically: true, encoding: .utf8)
        let lint = try pushproof(["specs", "lint", specs])
        #expect(lint.output.contains("nests quantifiers"), "\(lint.output) \(lint.error)")

        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--threads", "1", "--specs", specs, "--record", record], directory: directory.path)
        let hostileBody = ringBody.replacingOccurrences(of: "\"Alice\"", with: "\"" + String(repeating: "a", count: 40) + "!\"")
        let url = "\(serve.baseURL)/3/device/\(deviceToken)"
        let started = Date()
        let attacks = DispatchGroup()
        for _ in 0..<4 {
            DispatchQueue.global().async(group: attacks) {
                _ = try? curl(["--http2-prior-knowledge", "-o", "/dev/null", "-H", "authorization: bearer x"] + voipHeaders + ["-d", hostileBody, url])
            }
        }
        let normal = try curl(["--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-H", "authorization: bearer x"]
                              + voipHeaders + ["-d", ringBody, url])
        #expect(normal.output == "200", "\(normal.error)")
        #expect(attacks.wait(timeout: .now() + 10) == .success, "the hostile pushes were answered")
        #expect(Date().timeIntervalSince(started) < 5)
        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")

        let checked = try pushproof(["check", "--specs", specs, record])
        #expect(checked.status == 1)
        #expect((checked.output + checked.error).contains("gave up"), "\(checked.output) \(checked.error)")
    }
}
