// An adapter's process: `/bin/sh -c CMD`, its standard input and output the protocol's two
// pipes, its standard error forwarded to ours line by line with a prefix, the last lines kept
// for error messages. Reads and writes are bounded by a deadline, so a silent or stuck
// adapter becomes an error, never a hang.
import Foundation
import Glibc
import Synchronization

/// What an exchange of lines with the process can end in besides a line.
enum AdapterIOFailure: Error, Sendable, Equatable {
    /// Nothing came (or could be written) before the deadline.
    case timedOut
    /// The process closed the pipe: it exited, or closed its stdout or stdin.
    case closed
    /// A read or write failed otherwise (errno's text), or a line grew past the limit.
    case failed(String)
}

final class AdapterProcess: Sendable {
    /// The shell command, for messages.
    let command: String
    let pid: Int32
    private let input: Int32
    private let output: Int32
    /// Bytes read from the adapter's stdout not yet returned as a line. Only the sender's
    /// one outstanding request reads; the lock makes that a fact.
    private let pending = Mutex(LineBuffer())
    private let status = ExitStatus()
    private let stderrTail: StderrTail
    /// Kept to read its state and to stop it; Foundation reaps it (the termination handler).
    private let process: Mutex<Process>
    private let closed = Atomic<Bool>(false)

    /// A reply line longer than this is an error (a devices list of a million tokens is ~100 MB
    /// less than it).
    static let lineLimit = 256 << 20

    /// Starts `/bin/sh -c command` in `directory`. stderr lines go to ours as `prefix` + line.
    init(command: String, directory: String, stderrPrefix: String = "[sender] ") throws(SenderError) {
        // A write to an adapter that has exited must be an EPIPE error here, not our death.
        signal(SIGPIPE, SIG_IGN)
        self.command = command
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let stdinPipe = Pipe(), stdoutPipe = Pipe(), stderrPipe = Pipe()
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        let status = self.status
        process.terminationHandler = { finished in
            let code = finished.terminationReason == .uncaughtSignal ? 128 + finished.terminationStatus : finished.terminationStatus
            status.code.withLock { $0 = code }
        }
        do {
            try process.run()
        } catch {
            throw SenderError("cannot start the adapter (sh -c '\(command)' in \(directory)): \(error)")
        }
        pid = process.processIdentifier
        // Our own copies of the parent's ends: the Pipe objects close theirs when released.
        input = dup(stdinPipe.fileHandleForWriting.fileDescriptor)
        output = dup(stdoutPipe.fileHandleForReading.fileDescriptor)
        let errors = dup(stderrPipe.fileHandleForReading.fileDescriptor)
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
        stderrTail = StderrTail(fd: errors, prefix: stderrPrefix)
        self.process = Mutex(process)
    }

    deinit { close() }

    /// The exit status once it has exited (128 + N for signal N).
    var exitStatus: Int32? { status.code.withLock { $0 } }

    /// Writes all of `bytes` before `deadline`.
    func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(AdapterIOFailure) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(input, $0.baseAddress! + offset, $0.count - offset) }
            if written >= 0 {
                offset += written
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN: try wait(for: input, events: Int16(POLLOUT), deadline: deadline)
            case EPIPE: throw .closed
            default: throw .failed(String(cString: strerror(errno)))
            }
        }
    }

    /// The next line from the adapter's stdout (without its newline), before `deadline`.
    func readLine(deadline: ContinuousClock.Instant) throws(AdapterIOFailure) -> [UInt8] {
        try pending.withLock { (buffer: inout LineBuffer) throws(AdapterIOFailure) -> [UInt8] in
            while true {
                if let line = buffer.nextLine() { return line }
                guard buffer.count < Self.lineLimit else { throw .failed("a line longer than \(Self.lineLimit >> 20) MiB") }
                try wait(for: output, events: Int16(POLLIN), deadline: deadline)
                let read = buffer.fill(from: output)
                if read == 0 { throw .closed }
                if read < 0, errno != EINTR, errno != EAGAIN { throw .failed(String(cString: strerror(errno))) }
            }
        }
    }

    private func wait(for fd: Int32, events: Int16, deadline: ContinuousClock.Instant) throws(AdapterIOFailure) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timedOut }
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1,
                                         Int64(Int32.max)))
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return }  // readable, or hung up: the read or write says which
            if ready < 0, errno != EINTR { throw .failed(String(cString: strerror(errno))) }
        }
    }

    /// Waits up to `timeout` for the process to exit; its status, or nil if it still runs.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let code = exitStatus { return code }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return exitStatus
    }

    /// The adapter's last stderr lines, once what it wrote before failing has been read:
    /// until its stderr closes, or a short while when it still runs.
    func lastStderrLines() async -> [String] {
        let deadline = ContinuousClock.now + .milliseconds(exitStatus == nil ? 100 : 1000)
        while !stderrTail.finished, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return stderrTail.lines
    }

    /// Closes our ends of stdin (the adapter reads EOF) and stdout.
    func closePipes() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(input)
        Glibc.close(output)
    }

    /// SIGTERM, then SIGKILL if it has not gone within a second.
    func stop() async {
        closePipes()
        guard exitStatus == nil else { return }
        kill(pid, SIGTERM)
        if await waitForExit(timeout: .seconds(1)) == nil {
            kill(pid, SIGKILL)
            _ = await waitForExit(timeout: .seconds(1))
        }
    }

    private func close() {
        closePipes()
        if exitStatus == nil { kill(pid, SIGKILL) }
    }
}

/// Set by Foundation's termination handler, on its own thread.
final class ExitStatus: Sendable {
    let code = Mutex<Int32?>(nil)
}

/// Bytes read and not yet handed out as lines.
struct LineBuffer {
    private var bytes: [UInt8] = []
    /// Where the next line starts; bytes before it are dropped in bulk, not per line.
    private var start = 0
    /// Where the search for a newline resumes.
    private var scanned = 0

    var count: Int { bytes.count - start }

    mutating func nextLine() -> [UInt8]? {
        guard let newline = bytes[scanned...].firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = bytes.count
            return nil
        }
        var line = Array(bytes[start..<newline])
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        start = newline + 1
        scanned = start
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
            scanned = 0
        }
        return line
    }

    /// One read(2) of up to 64 KiB appended; its result.
    mutating func fill(from fd: Int32) -> Int {
        let chunk = 64 << 10
        let old = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: chunk))
        let read = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + old, chunk) }
        bytes.removeLast(chunk - max(read, 0))
        return read
    }

    /// Appends bytes already read (tests, and callers reading by other means).
    mutating func append(_ more: [UInt8]) { bytes += more }
}

/// Forwards an adapter's stderr to ours, line by line with a prefix, on a thread of its own
/// (the adapter must never block on a full stderr pipe), and keeps the last lines.
final class StderrTail: Sendable {
    static let kept = 20
    private struct State {
        var lines: [String] = []
        var finished = false
    }
    private let state = Mutex(State())

    init(fd: Int32, prefix: String) {
        let thread = Thread { [self] in
            var buffer = LineBuffer()
            func emit(_ line: [UInt8]) {
                let text = String(decoding: line, as: UTF8.self)
                var out = Array((prefix + text + "\n").utf8)
                _ = out.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress!, $0.count) }
                state.withLock { state in
                    state.lines.append(text)
                    if state.lines.count > Self.kept { state.lines.removeFirst(state.lines.count - Self.kept) }
                }
            }
            while true {
                let read = buffer.fill(from: fd)
                if read < 0, errno == EINTR { continue }
                if read <= 0 { break }
                while let line = buffer.nextLine() { emit(line) }
            }
            if buffer.count > 0 {
                buffer.append([UInt8(ascii: "\n")])
                if let line = buffer.nextLine() { emit(line) }
            }
            Glibc.close(fd)
            state.withLock { $0.finished = true }
        }
        thread.name = "pushproof adapter stderr"
        thread.start()
    }

    var lines: [String] { state.withLock { $0.lines } }
    /// The adapter's stderr has closed and every line is in.
    var finished: Bool { state.withLock { $0.finished } }
}
