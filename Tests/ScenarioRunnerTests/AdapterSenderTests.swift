// Every way an adapter can fail the protocol stops the scenario with an error naming the
// request and quoting the adapter's last stderr lines: tiny python3 and sh adapters, written
// here, against the embedded gateway.
import Foundation
import JSON
import MockGateway
import PushproofTestSupport
import Scenario
@testable import ScenarioRunner
import Glibc
import Testing

private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
private let specs = repository.appendingPathComponent("Specs").path

/// One adapter, its misbehaviour chosen by its first argument. It says on stderr what it got,
/// so each error can be checked to quote it.
private let misbehavingAdapter = #"""
import json, sys, time
mode = sys.argv[1]
def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    kind = request["type"]
    sys.stderr.write("got %s %d\n" % (kind, request["id"]))
    sys.stderr.flush()
    if kind == "hello":
        products = ["yama"] if mode == "product" else ["poolse"]
        answer = {"id": request["id"], "ok": True, "sender": {"name": "tiny", "version": mode}, "products": products}
        if mode == "protocol":
            answer["protocol"] = 2
        reply(answer)
    elif kind == "event" and mode == "silent":
        time.sleep(30)
    elif kind == "event" and mode == "garbage":
        sys.stdout.write("Traceback (most recent call last):\n")
        sys.stdout.flush()
    elif kind == "event" and mode == "wrong-id":
        reply({"id": request["id"] + 1, "ok": True})
    elif kind == "event" and mode == "exit":
        sys.stderr.write("crashing now\n")
        sys.exit(3)
    elif kind == "event" and mode == "refuse":
        reply({"id": request["id"], "ok": False, "error": "no such conversation in our database"})
    elif kind == "shutdown":
        reply({"id": request["id"], "ok": True})
        if mode == "linger":
            time.sleep(30)
        sys.exit(0)
    else:
        reply({"id": request["id"], "ok": True})
"""#

@Suite(.serialized) struct AdapterSenderTests {
    let directory: TemporaryDirectory
    let scenario: Scenario
    let judge: SpecJudge

    init() throws {
        directory = try TemporaryDirectory("adapter")
        try directory.write("adapter.py", misbehavingAdapter)
        let path = specs + "/scenarios/poolse-01-ring-group.json"
        scenario = try Scenario(json: Array(try Data(contentsOf: URL(fileURLWithPath: path))), name: "poolse-01")
        judge = try SpecJudge(directory: specs)
    }

    private func run(_ command: String, timeout: Duration = .seconds(10)) async throws -> ScenarioReport {
        let sender = AdapterSender(AdapterLaunch(command: command, directory: directory.path, timeout: timeout))
        // These adapters push nothing: waiting the default 10 s for the event's four pushes
        // would only slow the test.
        var options = RunOptions()
        options.eventTimeoutMilliseconds = 300
        return try await ScenarioRunner.run(scenario, judge: judge, sender: sender, options: options)
    }

    /// The run stopped, and its reason holds every one of `parts`.
    private func expectStopped(_ report: ScenarioReport, _ parts: [String]) {
        let reason = report.aborted ?? ""
        #expect(!report.passed)
        for part in parts { #expect(reason.contains(part), "\(part) in: \(reason)") }
    }

    @Test func aWellBehavedAdapterRunsAndIsNamedByItsHello() async throws {
        let report = try await run("python3 adapter.py ok")
        #expect(report.aborted == nil)
        #expect(report.sender == "tiny ok")
        // It sends nothing: the event fails on its deliveries, not on the protocol.
        #expect(report.events.count == 1)
        #expect(!report.events[0].passed)
    }

    @Test func noReplyWithinTheTimeout() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        // Long enough for python3 to start on a loaded machine (the timeout covers hello too).
        let report = try await run("python3 adapter.py silent", timeout: .seconds(2))
        expectStopped(report, ["no reply to event 0 (call.placed) within 2 s", "[sender] got event 3"])
        #expect(clock.now - started < .seconds(20), "the adapter sleeping 30 s is stopped, not waited for")
    }

    @Test func aLineThatIsNotJSON() async throws {
        expectStopped(try await run("python3 adapter.py garbage"),
                      ["the reply to event 0 (call.placed) is not JSON", "Traceback", "[sender] got event 3"])
    }

    @Test func aWrongID() async throws {
        expectStopped(try await run("python3 adapter.py wrong-id"), ["the reply to event 0 (call.placed) carries id 4, expected 3"])
    }

    @Test func anExitMidRun() async throws {
        expectStopped(try await run("python3 adapter.py exit"),
                      ["the adapter exited with status 3 before answering event 0 (call.placed)", "[sender] crashing now"])
    }

    @Test func okFalse() async throws {
        expectStopped(try await run("python3 adapter.py refuse"),
                      ["the adapter refused event 0 (call.placed): no such conversation in our database", "[sender] got event 3"])
    }

    @Test func aHelloOfAnotherProtocol() async throws {
        expectStopped(try await run("python3 adapter.py protocol"), ["sender setup", "speaks protocol 2; this pushproof speaks 1"])
    }

    @Test func aHelloWithoutTheScenariosProduct() async throws {
        expectStopped(try await run("python3 adapter.py product"), ["tiny product handles yama, not poolse"])
    }

    @Test func anAdapterThatDoesNotExitAfterShutdown() async throws {
        let report = try await run("python3 adapter.py linger", timeout: .seconds(2))
        expectStopped(report, ["sender shutdown", "had not exited"])
    }

    @Test func anAdapterThatExitsAtOnceQuotesWhatItSaid() async throws {
        expectStopped(try await run("echo 'cannot load config.yml' >&2; exit 7"),
                      ["exited with status 7", "hello", "[sender] cannot load config.yml"])
    }

    @Test func aCommandThatIsNotThere() async throws {
        expectStopped(try await run("./no-such-adapter"), ["exited with status 127", "hello", "not found"])
    }

    /// `--time-limit`: a scenario whose events take longer stops after the event in progress,
    /// failed, and says why.
    @Test func aScenarioPastItsTimeLimitStopsAndSaysSo() async throws {
        var options = RunOptions()
        options.eventTimeoutMilliseconds = 300
        options.timeLimit = .milliseconds(100)
        let sender = AdapterSender(AdapterLaunch(command: "python3 adapter.py ok", directory: directory.path, timeout: .seconds(10)))
        var long = scenario
        long.events = Array(repeating: scenario.events[0], count: 20)
        let report = try await ScenarioRunner.run(long, judge: judge, sender: sender, options: options)
        #expect(report.events.count < 20)
        expectStopped(report, ["the time limit of 0.1 s passed after", "of 20 events (--time-limit)"])
    }

    /// What the adapter starts in the background gets the signals a plain `sh -c 'cmd &'`
    /// gives it: nothing blocked, nothing ignored but SIGINT and SIGQUIT (POSIX: a
    /// non-interactive shell ignores those for background jobs). Not the spawning thread's mask
    /// (a concurrency worker blocks nearly everything), nor our ignored SIGPIPE, nor glibc's
    /// internal signals 32 and 33, which its posix_spawn leaves ignored unless told otherwise.
    @Test func aBackgroundChildStartsWithThePlainShellsSignals() async throws {
        let report = try await run("cat /proc/self/status > child-status & exec python3 adapter.py ok")
        #expect(report.aborted == nil)
        let status = try waitForFile("child-status")
        let fields = Dictionary(status.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }, uniquingKeysWith: { first, _ in first })
        #expect(UInt64(fields["SigBlk"] ?? "", radix: 16) == 0, "blocked: \(fields["SigBlk"] ?? "?")")
        // Bit N-1 is signal N: 2 (SIGINT) and 3 (SIGQUIT).
        #expect(UInt64(fields["SigIgn"] ?? "", radix: 16) == 0b110, "ignored: \(fields["SigIgn"] ?? "?")")
    }

    /// A background child with a SIGTERM handler is stopped through it when the run ends, even
    /// though the adapter's shell exited normally first: the whole process group gets SIGTERM,
    /// and nothing the run started is left running.
    @Test func aBackgroundChildIsStoppedThroughItsSIGTERMHandler() async throws {
        try directory.write("worker.py", """
            import os, signal, sys, time
            def stop(*_):
                open("worker-stopped", "w").write("SIGTERM")
                sys.exit(0)
            signal.signal(signal.SIGTERM, stop)
            open("worker-pid", "w").write(str(os.getpid()))
            time.sleep(300)
            """)
        let report = try await run("python3 worker.py </dev/null >/dev/null 2>&1 & python3 adapter.py ok")
        #expect(report.aborted == nil)
        let pid = try #require(Int32(try waitForFile("worker-pid")))
        #expect(try waitForFile("worker-stopped") == "SIGTERM", "the worker's own handler ran")
        var gone = false
        for _ in 0..<200 where !gone {
            gone = kill(pid, 0) != 0 && errno == ESRCH
            if !gone { usleep(10_000) }
        }
        #expect(gone, "the background worker \(pid) still runs after the run ended")
        if !gone { kill(pid, SIGKILL) }
    }

    /// A shell that exits while a child it started keeps the protocol's stdout open: the exit
    /// and its status are noticed at once, not at the 10 s timeout.
    @Test func anExitIsNoticedAtOnceWhenAChildHoldsStdoutOpen() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let report = try await run("sleep 30 & echo 'cannot reach the queue' >&2; exit 3")
        expectStopped(report, ["exited with status 3", "hello", "[sender] cannot reach the queue"])
        #expect(clock.now - started < .seconds(5), "noticed at once, not at --sender-timeout")
    }

    /// An adapter writing stderr without a newline is forwarded in pieces of at most 64 KiB:
    /// what is kept stays bounded (20 pieces), and the error quotes what it wrote.
    @Test func stderrWithoutANewlineIsForwardedInBoundedPieces() async throws {
        let report = try await run("head -c 300000 /dev/zero | tr '\\0' x >&2; exit 4")
        expectStopped(report, ["exited with status 4", "its last stderr lines", "bytes)"])
        #expect(!(report.aborted ?? "").contains("wrote nothing"))
        #expect((report.aborted ?? "").utf8.count < 20 * 400, "quoted in part: \((report.aborted ?? "").utf8.count) bytes")

        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let sink = open("/dev/null", O_WRONLY)
        defer { Glibc.close(sink) }
        let tail = StderrTail(fd: ends[0], prefix: "", output: sink)
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        for _ in 0..<4 { _ = chunk.withUnsafeBytes { write(ends[1], $0.baseAddress!, $0.count) } }
        Glibc.close(ends[1])
        for _ in 0..<500 where !tail.finished { usleep(10_000) }
        #expect(tail.finished)
        #expect(tail.lines.count == StderrTail.kept)
        #expect(tail.lines.allSatisfy { $0.utf8.count <= StderrTail.pieceLimit }, "\(tail.lines.map(\.utf8.count).max() ?? 0)")
    }

    /// The text of the file `name` in the adapter's folder, once it exists and is not empty
    /// (a child process writes it): at most 5 s.
    private func waitForFile(_ name: String) throws -> String {
        for _ in 0..<500 {
            if let text = try? String(contentsOfFile: directory.file(name), encoding: .utf8), !text.isEmpty { return text }
            usleep(10_000)
        }
        throw CocoaError(.fileNoSuchFile)
    }
}
