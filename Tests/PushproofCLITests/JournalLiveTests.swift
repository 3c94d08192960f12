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
        #expect(timedOut.body == ["requests": [], "count": 0, "dropped": 0, "timed_out": true])
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

/// `count` VoIP pushes of ~1.1 KB record lines (a 600-byte pad), with h2load.
private func fillJournal(_ serve: ServeProcess, count: Int, in directory: TemporaryDirectory) throws {
    let body = try directory.write("padded.json", #"{"aps":{},"pad":"\#(String(repeating: "p", count: 600))"}"#)
    let load = try runTool("/usr/bin/h2load", ["-n", "\(count)", "-c", "2", "-m", "20", "-d", body,
                                               "-H", "authorization: bearer any", "-H", "apns-push-type: voip",
                                               "-H", "apns-topic: com.example.loop.voip", "\(serve.baseURL)/3/device/\(deviceToken)"])
    #expect(load.output.contains("\(count) succeeded"), "\(load.output)")
}

/// Starts `count` long polls, each on a connection of its own that is kept open (the poll
/// waits whether or not its client reads), and waits until the journal says they all wait.
/// The connections close when the returned clients are released.
private func startPolls(_ serve: ServeProcess, _ pathAndQuery: String, count: Int) throws -> [RawClient] {
    let port = try #require(serve.adminPort)
    let clients = try (0..<count).map { _ in try RawClient(port: port) }
    for client in clients { client.send("GET \(pathAndQuery) HTTP/1.1\r\nHost: x\r\n\r\n") }
    var waiting = 0
    for _ in 0..<500 where waiting < count {
        waiting = try admin(serve, "/status").body["journal"]?["waiting"]?.intValue ?? 0
        if waiting < count { usleep(10_000) }
    }
    #expect(waiting == count, "\(waiting) of \(count) polls wait")
    return clients
}

/// Issue 19's rows 1-3: what the control API's askers cost the gateway stays bounded however
/// they ask. Each test fails on the code before (noted beside its bound).
@Suite(.serialized) struct JournalBoundsLiveTests {
    // Row 1: polls that wait for more than will come keep a count, not copies of the lines.
    @Test func pollsThatAreNeverMetKeepNoCopiesOfTheLinesTheyMatch() throws {
        let directory = try TemporaryDirectory("journal-never-met")
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        defer { serve.stop() }
        let tooMany = try admin(serve, "/requests?wait_ms=60000&min=1000000000")
        #expect(tooMany.status == 400, "an answer could never carry more than the journal holds")
        #expect(tooMany.body["error"]?.stringValue?.contains("/requests/count") == true)
        #expect(try admin(serve, "/requests/count?wait_ms=50&min=1000000000").body == ["count": 0, "timed_out": true])

        let polls = try startPolls(serve, "/requests?wait_ms=60000&min=100000", count: 8)
        let before = serve.residentBytes
        try fillJournal(serve, count: 30_000, in: directory)  // ~39 MB of lines; the journal keeps 16 MiB
        let growth = serve.residentBytes - before
        // The ring's 16 MiB and its slots; before, each poll copied every line: ~310 MB here.
        #expect(growth < 64 << 20, "RSS grew \(growth >> 20) MB")
        let journal = try admin(serve, "/status").body["journal"]
        #expect(journal?["waiting"] == 8 && (journal?["bytes"]?.intValue ?? 0) > 12 << 20)
        withExtendedLifetime(polls) {}
    }

    // Row 2: polls waiting on a token cost each push a look at its slot, off the push's thread,
    // not a parse of its line per poll.
    @Test func waitingTokenPollsCostThePushesLittleCPU() throws {
        let directory = try TemporaryDirectory("journal-token-polls")
        let serve = try ServeProcess(["--h2c", "--threads", "1"], directory: directory.path)
        defer { serve.stop() }
        try fillJournal(serve, count: 5000, in: directory)
        let baseStart = serve.cpuSeconds
        try fillJournal(serve, count: 20_000, in: directory)
        let base = serve.cpuSeconds - baseStart
        let polls = try startPolls(serve, "/requests?token=\(goneToken)&wait_ms=60000", count: 100)
        let pollsStart = serve.cpuSeconds
        try fillJournal(serve, count: 20_000, in: directory)
        let withPolls = serve.cpuSeconds - pollsStart
        // Before: 100 line parses a push, ~6 CPU s for these 20000.
        #expect(withPolls < 2 * base + 0.5, "\(withPolls) CPU s with 100 polls waiting, \(base) without")
        withExtendedLifetime(polls) {}
    }

    // Row 3: answers nobody reads, over HTTP/1.1 and over HTTP/2 with a window of 0, hold a
    // piece each; a client that reads gets every line, on both.
    @Test func answersNobodyReadsHoldAPieceEachNotTheWholeAnswer() throws {
        let directory = try TemporaryDirectory("journal-unread")
        let serve = try ServeProcess(["--h2c"], directory: directory.path)
        defer { serve.stop() }
        let adminPort = try #require(serve.adminPort)
        try fillJournal(serve, count: 20_000, in: directory)
        let held = try #require(try admin(serve, "/status").body["journal"]?["requests"]?.intValue)
        let before = serve.residentBytes
        var clients: [RawClient] = []
        for _ in 0..<60 {
            let client = try RawClient(port: adminPort)
            client.send("GET /requests HTTP/1.1\r\nHost: x\r\n\r\n")
            clients.append(client)
        }
        let stalled = try RawClient(port: adminPort)
        var frames = clientPreface + http2Frame(type: 0x4, flags: 0, streamID: 0, [0, 0x4, 0, 0, 0, 0])  // INITIAL_WINDOW_SIZE 0
        let path = Array("/requests".utf8)
        for index in 0..<60 {  // GET, http, :path literal, :authority x; END_STREAM | END_HEADERS
            frames += http2Frame(type: 0x1, flags: 0x5, streamID: UInt32(1 + 2 * index),
                                 [0x82, 0x86, 0x04, UInt8(path.count)] + path + [0x01, 0x01, UInt8(ascii: "x")])
        }
        stalled.send(frames)
        clients.append(stalled)
        usleep(1_500_000)
        let growth = serve.residentBytes - before
        // Before: each answer was built whole, ~16 MiB: 120 of them ~1.9 GB.
        #expect(growth < 64 << 20, "RSS grew \(growth >> 20) MB")

        for version in ["--http1.1", "--http2-prior-knowledge"] {
            let whole = try curl(["-s", version, "\(serve.adminURL)/requests"])
            #expect(sequences(try JSONParser.parse(whole.output)).count == held, "\(version): every line held")
        }
        let http10 = try curl(["-s", "--http1.0", "\(serve.adminURL)/requests?limit=3"])
        #expect(sequences(try JSONParser.parse(http10.output)).count == 3, "HTTP/1.0: delimited by the close")
        withExtendedLifetime(clients) {}
    }
}
