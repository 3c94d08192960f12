// Live tests of the request journal on the control API (`GET /requests`, `/requests/count`,
// `DELETE /requests`): a real `pushproof serve --h2c` on loopback, driven by curl.
import Foundation
import JSON
import PushproofTestSupport
import Synchronization
import Testing

private let fcmToken = "fcm-Token-1"
private let goneToken = String(repeating: "cd", count: 32)

/// Sends `count` VoIP rings to `token` over h2c, one curl each (curl 7.88 fails with "Error in
/// the HTTP2 framing layer" when it reuses the connection for a second POST).
private func sendAPNs(_ serve: ServeProcess, to token: String = deviceToken, count: Int = 1) throws {
    for _ in 0..<count {
        let result = try curl(["--http2-prior-knowledge", "-o", "/dev/null", "-H", "authorization: bearer any"] + voipHeaders
                              + ["-d", ringBody, "\(serve.baseURL)/3/device/\(token)"])
        #expect(result.status == 0, "\(result.error)")
    }
}

private func sendFCM(_ serve: ServeProcess, to token: String) throws {
    let result = try curl(["--http2-prior-knowledge", "-o", "/dev/null", "-H", "authorization: Bearer any",
                           "-H", "content-type: application/json", "-d", #"{"message":{"token":"\#(token)","data":{"k":"v"}}}"#,
                           "\(serve.baseURL)/v1/projects/poolse-test/messages:send"])
    #expect(result.status == 0, "\(result.error)")
}

/// `GET` on the admin API: the status and the parsed body.
private func admin(_ serve: ServeProcess, _ pathAndQuery: String, method: String = "GET") throws -> (status: Int, body: JSONValue) {
    let result = try curl(["-X", method, "-w", "\n%{http_code}", "\(serve.adminURL)\(pathAndQuery)"])
    let text = result.output
    let newline = try #require(text.lastIndex(of: "\n"))
    return (Int(text[text.index(after: newline)...]) ?? 0, try JSONParser.parse(String(text[..<newline])))
}

private func sequences(_ value: JSONValue?) -> [Int] {
    (value?.arrayValue ?? []).compactMap { $0["seq"]?.intValue }
}

@Suite(.serialized) struct JournalLiveTests {
    @Test func everyFilterSelectsTheRecordedLinesWithTheRecordFilesSequence() throws {
        let directory = try TemporaryDirectory("journal")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record, "--specs", specsDirectory], directory: directory.path)
        defer { serve.stop() }
        _ = try curl(["-X", "PUT", "-d", #"{"state":"gone"}"#, "\(serve.adminURL)/tokens/\(goneToken)"])
        try sendAPNs(serve)                       // seq 1: 200, poolse.ring.apns
        try sendFCM(serve, to: fcmToken)          // seq 2: 200
        try sendAPNs(serve, to: goneToken)        // seq 3: 410 Unregistered
        try sendAPNs(serve)                       // seq 4
        _ = try curl(["-X", "POST", "\(serve.adminURL)/recording/flush"])

        // The plain form is the record file, line for line, verdicts and sequence numbers included.
        let all = try admin(serve, "/requests")
        #expect(all.status == 200)
        #expect(all.body.arrayValue == (try lines(of: record)))
        #expect(sequences(all.body) == [1, 2, 3, 4])
        #expect(all.body[0]?["verdict"]?["spec"]?.stringValue == "poolse.ring.apns")

        #expect(sequences(try admin(serve, "/requests?route=fcm").body) == [2])
        #expect(sequences(try admin(serve, "/requests?route=apns").body) == [1, 3, 4])
        // APNs tokens are hex and compared without case; FCM tokens as they are.
        #expect(sequences(try admin(serve, "/requests?token=\(deviceToken.uppercased())").body) == [1, 4])
        #expect(sequences(try admin(serve, "/requests?token=\(fcmToken)").body) == [2])
        #expect(sequences(try admin(serve, "/requests?token=\(fcmToken.lowercased())").body) == [])
        #expect(sequences(try admin(serve, "/requests?spec=poolse.ring.apns").body) == [1, 3, 4])
        #expect(sequences(try admin(serve, "/requests?status=410").body) == [3])
        #expect(sequences(try admin(serve, "/requests?reason=Unregistered").body) == [3])
        #expect(sequences(try admin(serve, "/requests?since=2").body) == [3, 4])
        #expect(sequences(try admin(serve, "/requests?since=1&limit=2").body) == [2, 3])
        #expect(sequences(try admin(serve, "/requests?route=apns&status=200&token=\(deviceToken)&limit=1").body) == [1])
        #expect(try admin(serve, "/requests/count?route=apns&status=200").body == ["count": 2])
        #expect(try admin(serve, "/requests/count?token=\(goneToken)").body == ["count": 1])
        #expect(try admin(serve, "/requests/count").body == ["count": 4])
    }

    @Test func longPollIsAnsweredWhenAPushArrivesAndTimesOutOtherwise() throws {
        let directory = try TemporaryDirectory("journal-wait")
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        defer { serve.stop() }
        try sendAPNs(serve)

        // Nothing matches: the poll answers at its deadline with what there is.
        let timedOut = try admin(serve, "/requests?token=\(goneToken)&wait_ms=300")
        #expect(timedOut.body == ["requests": [], "count": 0, "timed_out": true])
        // Already enough: answered at once, in the waiting form.
        let ready = try admin(serve, "/requests/count?wait_ms=60000&min=1")
        #expect(ready.body == ["count": 1, "timed_out": false])

        // Two pushes to wait for; they are sent while the poll waits.
        let answer = Mutex<(status: Int, body: JSONValue)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = Date()
        Thread {
            let result = try? admin(serve, "/requests?since=1&route=apns&wait_ms=30000&min=2")
            answer.withLock { $0 = result }
            done.signal()
        }.start()
        var registered = false
        for _ in 0..<200 where !registered {
            registered = try admin(serve, "/status").body["journal"]?["waiting"]?.intValue == 1
            if !registered { usleep(10_000) }
        }
        #expect(registered, "the poll waits in the journal")
        try sendAPNs(serve, count: 2)
        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect(Date().timeIntervalSince(started) < 20, "answered when the pushes came, not at the 30 s deadline")
        let body = try #require(answer.withLock { $0 }).body
        #expect(body["timed_out"] == false)
        #expect(body["count"] == 2)
        #expect(sequences(body["requests"]) == [2, 3])
        #expect(try admin(serve, "/status").body["journal"]?["waiting"] == 0)
    }

    @Test func clearingForgetsTheHeldRequestsButNotTheRecordOrTheSequence() throws {
        let directory = try TemporaryDirectory("journal-clear")
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--record", record], directory: directory.path)
        defer { serve.stop() }
        try sendAPNs(serve, count: 3)
        let cleared = try admin(serve, "/requests", method: "DELETE")
        #expect(cleared.status == 200)
        #expect(cleared.body["requests"] == 0)
        #expect(try admin(serve, "/requests").body == [])
        try sendAPNs(serve)
        #expect(sequences(try admin(serve, "/requests").body) == [4])
        _ = try curl(["-X", "POST", "\(serve.adminURL)/recording/flush"])
        #expect(try lines(of: record).count == 4)
    }

    @Test func journalKeepsOnlyTheNewestAndCountsWhatItDropped() throws {
        let directory = try TemporaryDirectory("journal-size")
        let serve = try ServeProcess(["--h2c", "--journal-size", "5", "--journal-mib", "1"], directory: directory.path)
        defer { serve.stop() }
        try sendAPNs(serve, count: 8)
        #expect(sequences(try admin(serve, "/requests").body) == [4, 5, 6, 7, 8])
        let journal = try admin(serve, "/status").body["journal"]
        #expect(journal?["requests"] == 5)
        #expect(journal?["dropped"] == 3)
        #expect(journal?["size"] == 5)
        #expect(journal?["max_bytes"] == 1_048_576)
        #expect((journal?["bytes"]?.intValue ?? 0) > 5 * 200, "five lines held, each well over 200 bytes")
        let metrics = try curl(["\(serve.adminURL)/metrics"]).output
        #expect(metrics.contains("\npushproof_journal_requests 5.0\n"))
        #expect(metrics.contains("\npushproof_journal_dropped_total 3.0\n"))
    }

    @Test func badParametersAreRefusedNamingTheParameter() throws {
        let directory = try TemporaryDirectory("journal-bad")
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        defer { serve.stop() }
        let cases = [
            ("/requests?status=abc", "status"), ("/requests?limit=-1", "limit"), ("/requests?limit=0", "limit"),
            ("/requests?colour=red", "colour"), ("/requests?since=-3", "since"), ("/requests?route=mqtt", "route"),
            ("/requests?min=2", "min"), ("/requests?wait_ms=999999999", "wait_ms"), ("/requests/count?limit=3", "limit"),
            ("/requests?status=200&status=410", "status"), ("/requests?token=", "token"),
            ("/requests?wait_ms=100&min=5&limit=2", "limit"),
        ]
        for (query, parameter) in cases {
            let answer = try admin(serve, query)
            #expect(answer.status == 400, "\(query)")
            #expect(answer.body["error"]?.stringValue?.hasPrefix(parameter + ":") == true, "\(query): \(answer.body)")
        }
        #expect(try admin(serve, "/requests", method: "PUT").status == 405)
    }

    @Test func journalSizeZeroTurnsItOff() throws {
        let directory = try TemporaryDirectory("journal-off")
        let serve = try ServeProcess(["--h2c", "--journal-size", "0"], directory: directory.path)
        defer { serve.stop() }
        try sendAPNs(serve)
        #expect(try admin(serve, "/requests").status == 404)
        #expect(try admin(serve, "/status").body["journal"] == ["enabled": false])
        #expect(!(try curl(["\(serve.adminURL)/metrics"]).output.contains("pushproof_journal")))
    }
}
