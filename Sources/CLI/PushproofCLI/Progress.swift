// The progress line of `run`, `drive` and `plan` on a terminal (k6, h2load): the Driver's
// `ProgressLine` formats it; this file feeds its counters and writes it to standard error,
// only when that is a TTY and the command is not `--quiet`.
#if canImport(Glibc)
import Glibc
#endif
import Clocks
import Descriptors
import Driver
import Reports
import Synchronization
import MockGateway
import PushModel
import Scenario
import ScenarioRunner

/// Rewrites the progress line in place on standard error while a run works.
final class TerminalProgress: Sendable {
    private let task: Task<Void, Never>

    /// Starts drawing, or nil when `quiet` or standard error is not a terminal: then nothing
    /// of it is written at all.
    static func start(_ counters: ProgressCounters, unit: String, quiet: Bool,
                      isTerminal: Bool = isatty(2) == 1) -> TerminalProgress? {
        guard !quiet, isTerminal else { return nil }
        return TerminalProgress(counters, unit: unit)
    }

    private init(_ counters: ProgressCounters, unit: String) {
        let started = SystemClock.monotonicNanoseconds()
        task = Task {
            var line = ProgressLine(unit: unit)
            while !Task.isCancelled {
                let elapsed = SystemClock.monotonicNanoseconds() &- started
                if let text = line.line(for: counters.snapshot(elapsedNanoseconds: elapsed)) {
                    // Carriage return, the line, erase to the end: one line, redrawn.
                    writeAll(2, "\r" + text + "\u{1B}[K")
                }
                try? await Task.sleep(for: .nanoseconds(Int64(ProgressLine.defaultIntervalNanoseconds)))
            }
        }
    }

    /// Erases the line, so a report printed now starts on a clean line.
    func clear() { writeAll(2, "\r\u{1B}[K") }

    /// Stops drawing and erases the line.
    func stop() async {
        task.cancel()
        await task.value
        clear()
    }
}

/// `--metrics-out FILE`: a JSON line of the run's figures every second (`MetricsLine`), written
/// and flushed as the run goes, and a last one when it ends.
final class MetricsStream: Sendable {
    private let task: Task<Void, Never>
    private let finish: @Sendable () -> Void

    static let intervalNanoseconds: UInt64 = 1_000_000_000

    /// Opens (creating its folder) and truncates `path`; throws a message naming it.
    init(path: String, counters: ProgressCounters) throws {
        try createParentDirectory(of: path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: path, reason: String(cString: strerror(errno))) }
        let started = SystemClock.monotonicNanoseconds()
        let line = Mutex(MetricsLine())
        let write: @Sendable (Bool) -> Void = { final in
            let snapshot = counters.snapshot(elapsedNanoseconds: SystemClock.monotonicNanoseconds() &- started)
            let bytes = line.withLock { $0.line(for: snapshot, interval: counters.takeInterval(), final: final) }
            try? Descriptors.writeAll(fd, bytes)
        }
        task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .nanoseconds(Int64(Self.intervalNanoseconds)))
                if Task.isCancelled { break }
                write(false)
            }
        }
        finish = {
            write(true)
            close(fd)
        }
    }

    /// Stops the ticks and writes the final line.
    func stop() async {
        task.cancel()
        await task.value
        finish()
    }
}

/// The built-in load's target, counting each push's outcome (and its service time) for the
/// progress line and `--metrics-out`. Only used while one of them is on: it takes a lock per push.
struct ProgressTarget: PushTarget {
    let target: any PushTarget
    let counters: ProgressCounters

    func send(_ push: PushRequest) async -> PushOutcome {
        let started = SystemClock.monotonicNanoseconds()
        let outcome = await target.send(push)
        counters.pushArrived(latencyNanoseconds: SystemClock.monotonicNanoseconds() &- started)
        return outcome
    }

    /// Forwarded whole, so a fan-out keeps the wrapped target's batched path while it is counted.
    func send(contentsOf pushes: [PushRequest], finished: @escaping @Sendable (Int, PushOutcome) -> Void) async {
        let started = SystemClock.monotonicNanoseconds()
        await target.send(contentsOf: pushes) { [counters] index, outcome in
            counters.pushArrived(latencyNanoseconds: SystemClock.monotonicNanoseconds() &- started)
            finished(index, outcome)
        }
    }
}

/// Counts the pushes the embedded gateway answers during `run`.
struct ProgressObserver: GatewayObserver {
    let counters: ProgressCounters

    func observe(_ exchange: GatewayExchange) {
        if exchange.route == .apns || exchange.route == .fcm { counters.pushArrived(latencyNanoseconds: nil) }
    }
}

/// A scenario sender that counts the events it was handed during `run`.
struct ProgressSender: ScenarioSender {
    let sender: any ScenarioSender
    let counters: ProgressCounters

    var name: String { sender.name }
    func setUp(_ setup: SenderSetup) async throws(SenderError) { try await sender.setUp(setup) }
    func handle(_ event: ScenarioEvent, index: Int) async throws(SenderError) {
        try await sender.handle(event, index: index)
        counters.played.add(1, ordering: .relaxed)
    }
    func devices() async throws(SenderError) -> [ListedDevice]? { try await sender.devices() }
    func tearDown() async throws(SenderError) { try await sender.tearDown() }
}

/// `--abort-on-fail`: runs `body` while checking `live`'s thresholds against `counters` four
/// times a second, and cancels it at the first that fails for good. Returns what `body`
/// returned (a cancelled run returns its figures so far) and the breach, with the run's time.
func runAbortingOnFail<Result: Sendable>(_ live: LiveThresholds?, counters: ProgressCounters,
                                         _ body: @escaping @Sendable () async throws -> Result) async throws -> (Result, String?) {
    guard let live, !live.watched.isEmpty else { return (try await body(), nil) }
    let run = Task { try await body() }
    let started = SystemClock.monotonicNanoseconds()
    let breach = Mutex<String?>(nil)
    let watcher = Task {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            if let message = live.firstBreach(counters) {
                let seconds = Double(SystemClock.monotonicNanoseconds() &- started) / 1e9
                breach.withLock { $0 = "aborted after \(Format.significant(seconds)) s (--abort-on-fail): \(message)" }
                run.cancel()
                return
            }
        }
    }
    let result: Result
    do {
        result = try await run.value
    } catch {
        watcher.cancel()
        throw error
    }
    watcher.cancel()
    return (result, breach.withLock { $0 })
}
