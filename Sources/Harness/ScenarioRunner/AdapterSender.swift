// A sender in any language behind `run --sender-cmd`: the adapter protocol
// (docs/adapter-protocol.md) over an adapter process's stdin and stdout.
import Foundation
import JSON
import Scenario
import Synchronization

/// How to start an adapter.
public struct AdapterLaunch: Sendable {
    /// Run through `/bin/sh -c`.
    public var command: String
    /// The adapter's working directory (`run`: the scenario's folder unless `--sender-dir`).
    public var directory: String
    /// The longest wait for any reply (`--sender-timeout`).
    public var timeout: Duration
    /// What each forwarded stderr line starts with.
    public var stderrPrefix: String

    public init(command: String, directory: String, timeout: Duration = .seconds(10), stderrPrefix: String = "[sender] ") {
        self.command = command
        self.directory = directory
        self.timeout = timeout
        self.stderrPrefix = stderrPrefix
    }
}

/// The sender under test as an adapter process, one per scenario: `setUp` starts it and
/// sends `hello` and `setup`, `handle` one `event` each, `devices` where the adapter
/// announced it, `tearDown` `shutdown`. Every failure (no reply in time, a line that is not
/// JSON, a wrong id, `"ok": false`, the process gone) is a `SenderError` naming the request
/// and quoting the adapter's last stderr lines; after one, the adapter is stopped and nothing
/// more is sent.
public final class AdapterSender: ScenarioSender {
    private struct State {
        var conversation = AdapterConversation()
        var process: AdapterProcess?
        var hello: AdapterHello?
        /// A request failed: the conversation is over.
        var broken = false
    }
    private let launch: AdapterLaunch
    // `run` calls one method at a time; the lock makes the one outstanding request a fact.
    private let state = Mutex(State())

    public init(_ launch: AdapterLaunch) { self.launch = launch }

    /// The hello's name and version once it answered; "adapter" before.
    public var name: String { state.withLock { $0.hello?.displayName } ?? "adapter" }

    /// What the adapter said in its hello (nil before `setUp`).
    public var hello: AdapterHello? { state.withLock { $0.hello } }

    public func setUp(_ setup: SenderSetup) async throws(SenderError) {
        let process = try AdapterProcess(command: launch.command, directory: launch.directory, stderrPrefix: launch.stderrPrefix)
        state.withLock { $0.process = process }
        let reply = try await exchange { $0.hello(setup.gateway, segment: setup.share.map { ($0.index, $0.count) }) }
        let hello: AdapterHello
        do {
            hello = try AdapterConversation.hello(from: reply)
        } catch {
            throw await fail("hello: \(error)", process: process)
        }
        state.withLock { $0.hello = hello }
        let product = setup.scenario.product.rawValue
        guard hello.products.contains(product) else {
            throw await fail("hello: \(hello.displayName) handles \(hello.products.joined(separator: ", ")), not \(product)",
                             process: process)
        }
        let document = setup.scenario.setupDocument(bundleID: setup.bundleID, fcmProject: setup.fcmProject)
        _ = try await exchange { $0.setup(document) }
    }

    public func handle(_ event: ScenarioEvent, index: Int) async throws(SenderError) {
        _ = try await exchange { $0.event(index: index, type: event.type, event.adapterDocument) }
    }

    public func devices() async throws(SenderError) -> [ListedDevice]? {
        guard state.withLock({ $0.hello?.capabilities.contains("devices") ?? false }) else { return nil }
        let reply = try await exchange { $0.devices() }
        do {
            return try AdapterConversation.devices(from: reply)
        } catch {
            throw await fail("devices: \(error)", process: state.withLock { $0.process })
        }
    }

    /// `shutdown`, then the process must exit within the timeout. After a failure the process
    /// is only stopped: the error that broke the conversation has been reported.
    public func tearDown() async throws(SenderError) {
        let (process, broken) = state.withLock { ($0.process, $0.broken) }
        guard let process else { return }
        defer { state.withLock { $0.process = nil } }
        if broken {
            await process.stop()
            return
        }
        _ = try await exchange { $0.shutdown() }
        process.closePipes()
        if await process.waitForExit(timeout: launch.timeout) == nil {
            await process.stop()
            throw await fail("the adapter answered shutdown but had not exited \(Self.seconds(launch.timeout)) later", process: process)
        }
        // What it started in the background and left running is stopped with it.
        await process.stop()
    }

    /// Sends one request and reads its reply, every failure turned into an error naming it.
    private func exchange(_ request: (inout AdapterConversation) -> [UInt8]) async throws(SenderError) -> JSONObject {
        let deadline = ContinuousClock.now + launch.timeout
        // The blocking write and read happen here, on the caller's task: the runner has nothing
        // else to do until the reply, and the gateway runs on threads of its own.
        let outcome = state.withLock { state -> Result<JSONObject, Failure> in
            guard let process = state.process, !state.broken else { return .failure(.notRunning) }
            let line = request(&state.conversation)
            let label = state.conversation.pending?.label ?? "request"
            do throws(AdapterIOFailure) {
                try process.write(line, deadline: deadline)
            } catch {
                return .failure(.io(error, label: label, writing: true))
            }
            let reply: [UInt8]
            do throws(AdapterIOFailure) {
                reply = try process.readLine(deadline: deadline)
            } catch {
                return .failure(.io(error, label: label, writing: false))
            }
            do throws(AdapterProtocolError) {
                return .success(try state.conversation.reply(reply))
            } catch {
                return .failure(.protocolRule(error))
            }
        }
        switch outcome {
        case .success(let reply):
            return reply
        case .failure(let failure):
            let process = state.withLock { $0.process }
            throw await fail(await describe(failure, process: process), process: process)
        }
    }

    private enum Failure: Error {
        case notRunning
        case io(AdapterIOFailure, label: String, writing: Bool)
        case protocolRule(AdapterProtocolError)
    }

    private func describe(_ failure: Failure, process: AdapterProcess?) async -> String {
        switch failure {
        case .notRunning:
            return "the adapter is not running (an earlier request failed)"
        case .protocolRule(let error):
            return error.description
        case .io(.timedOut, let label, let writing):
            return writing ? "the adapter did not read \(label) within \(Self.seconds(launch.timeout)) (--sender-timeout)"
                : "no reply to \(label) within \(Self.seconds(launch.timeout)) (--sender-timeout)"
        case .io(.closed, let label, let writing):
            let status = await process?.waitForExit(timeout: .seconds(1))
            let how = status.map { "exited with status \($0)" } ?? "closed its \(writing ? "stdin" : "stdout")"
            return "the adapter \(how) \(writing ? "before reading" : "before answering") \(label)"
        case .io(.failed(let reason), let label, _):
            return "\(label): \(reason)"
        }
    }

    /// Marks the conversation over, stops the process, and builds the error: the message,
    /// the command, and the adapter's last stderr lines.
    private func fail(_ message: String, process: AdapterProcess?) async -> SenderError {
        state.withLock { $0.broken = true }
        var text = "adapter: \(message) (sh -c '\(launch.command)')"
        if let process {
            let lines = await process.lastStderrLines()
            await process.stop()
            // A line can be a 64 KiB piece of output that had no newline: quoted in part.
            func quoted(_ line: String) -> String {
                line.utf8.count <= Self.quotedLineLimit ? line
                    : String(decoding: line.utf8.prefix(Self.quotedLineLimit), as: UTF8.self) + "… (\(line.utf8.count) bytes)"
            }
            text += lines.isEmpty ? "; it wrote nothing to stderr"
                : "; its last stderr lines:\n" + lines.map { "    \(launch.stderrPrefix)\(quoted($0))" }.joined(separator: "\n")
        }
        return SenderError(text)
    }

    /// How much of one stderr line an error quotes.
    static let quotedLineLimit = 300

    static func seconds(_ duration: Duration) -> String {
        let seconds = duration.inSeconds
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%.3g s", seconds)
    }
}
