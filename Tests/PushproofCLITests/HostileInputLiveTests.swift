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
                               "-H", "apns-push-type: alert", "-H", "apns-topic: com.poolse.app",
                               "-d", #"{"aps":{"alert":"hi"}}"#, "\(serve.baseURL)/3/device/\(String(repeating: "ab", count: 32))"])
        let waited = Date().timeIntervalSince(started)
        #expect(normal.output == "200", "\(normal.error)")
        #expect(waited < 3, "the normal push waited \(waited) s")
        attacks.wait()
        for answer in answers.withLock({ $0 }) {
            #expect(answer.contains("Request payload size exceeds the limit"), "\(answer.prefix(300))")
        }
    }
}
