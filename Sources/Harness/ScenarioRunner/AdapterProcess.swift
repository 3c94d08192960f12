// An adapter's process: `/bin/sh -c CMD`, its standard input and output the protocol's two
// pipes, its standard error forwarded to ours line by line with a prefix, the last lines kept
// for error messages. Reads and writes are bounded by a deadline, so a silent or stuck
// adapter becomes an error, never a hang.
import Descriptors
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
    private let closed = Atomic<Bool>(false)

    /// A reply line longer than this is an error (a devices list of a million tokens is about
    /// 100 MB).
    static let lineLimit = 256 << 20

    /// Starts `/bin/sh -c command` in `directory`. stderr lines go to ours as `prefix` + line.
    /// posix_spawn rather than Foundation's Process: its termination handler is delivered late
    /// (seconds) in a process whose main thread runs no run loop, and `run` needs an exit seen
    /// at once; here the status is reaped with waitpid.
    init(command: String, directory: String, stderrPrefix: String = "[sender] ") throws(SenderError) {
        // A write to an adapter that has exited must be an EPIPE error here, not our death.
        ignoreBrokenPipeSignal()
        self.command = command
        var pipes: [(read: Int32, write: Int32)] = []
        for _ in 0..<3 {
            var ends: [Int32] = [0, 0]
            // pipe2(O_CLOEXEC) is not in Swift's Glibc module: pipe, then the flag on each end.
            guard pipe(&ends) == 0 else {
                for (read, write) in pipes { Glibc.close(read); Glibc.close(write) }
                throw SenderError("cannot start the adapter: pipe: \(String(cString: strerror(errno)))")
            }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            pipes.append((ends[0], ends[1]))
        }
        let (stdinPipe, stdoutPipe, stderrPipe) = (pipes[0], pipes[1], pipes[2])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy: the child keeps exactly these three.
        posix_spawn_file_actions_adddup2(&actions, stdinPipe.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe.write, 2)
        let spawned: Int32
        var child: pid_t = 0
        if let addChdir = Self.addChdir {
            _ = directory.withCString { addChdir(&actions, $0) }
            spawned = Self.spawn(&child, &actions, ["/bin/sh", "-c", command])
        } else {
            // glibc before 2.29: the shell changes directory itself, then runs the command.
            spawned = Self.spawn(&child, &actions, ["/bin/sh", "-c", "cd -- \"$1\" && exec /bin/sh -c \"$2\"", "sh", directory, command])
        }
        Glibc.close(stdinPipe.read)
        Glibc.close(stdoutPipe.write)
        Glibc.close(stderrPipe.write)
        guard spawned == 0 else {
            for fd in [stdinPipe.write, stdoutPipe.read, stderrPipe.read] { Glibc.close(fd) }
            throw SenderError("cannot start the adapter (sh -c '\(command)' in \(directory)): \(String(cString: strerror(spawned)))")
        }
        pid = child
        input = stdinPipe.write
        output = stdoutPipe.read
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
        stderrTail = StderrTail(fd: stderrPipe.read, prefix: stderrPrefix)
    }

    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    /// glibc's posix_spawn_file_actions_addchdir_np (2.29+), which Swift's Glibc module does
    /// not declare.
    private static let addChdir: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: AddChdir.self)
    }

    private static func spawn(_ child: inout pid_t, _ actions: inout posix_spawn_file_actions_t, _ arguments: [String]) -> Int32 {
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // A process group of its own: stopping the adapter stops what its shell started too
        // (a wrapper script's sender, a `tee` in a pipeline), not only the shell.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        ChildSignals.reset(&attributes)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return posix_spawn(&child, "/bin/sh", &actions, &attributes, &argv, environ)
    }

    deinit { close() }

    /// The exit status once it has exited (128 + N for signal N), reaped once.
    var exitStatus: Int32? {
        status.code.withLock { code in
            if code == nil {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid {
                    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
                    code = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                }
            }
            return code
        }
    }

    /// Writes all of `bytes` before `deadline`.
    func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(AdapterIOFailure) {
        var offset = 0
        while offset < bytes.count {
            let start = offset
            let outcome = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemCallError) in try systemCall("write") { Glibc.write(input, raw.baseAddress! + start, raw.count - start) } }
            }
            switch outcome {
            case .success(.done(let written)): offset += written
            case .success(.wouldBlock): try wait(for: input, events: Int16(POLLOUT), deadline: deadline)
            case .failure(let error) where error.code == EPIPE: throw .closed
            case .failure(let error): throw .failed(String(cString: strerror(error.code)))
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
                let filled: IOOutcome<Int>
                do throws(SystemCallError) { filled = try buffer.fill(from: output) } catch { throw .failed(String(cString: strerror(error.code))) }
                if filled == .done(0) { throw .closed }
            }
        }
    }

    /// Waits until `fd` is ready, the deadline passes, or the process (the shell, the group's
    /// leader) has exited with nothing left to read: a child it left holding the pipe open must
    /// not hide the exit until the timeout, losing its status and message.
    private func wait(for fd: Int32, events: Int16, deadline: ContinuousClock.Instant) throws(AdapterIOFailure) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timedOut }
            let milliseconds = Int32(min(left.clampedNanoseconds / 1_000_000 + 1, UInt64(Self.exitCheckMilliseconds)))
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready: Int32
            do throws(SystemCallError) {
                ready = try blockingSystemCall("poll") { poll(&entry, 1, milliseconds) }
            } catch {
                throw .failed(String(cString: strerror(error.code)))
            }
            if ready > 0 { return }  // readable, or hung up: the read or write says which
            if exitStatus != nil { throw .closed }
        }
    }

    /// How often a wait looks whether the process has exited.
    static let exitCheckMilliseconds: Int64 = 20

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

    /// SIGTERM to its process group, then SIGKILL to what is left of it after a second. The
    /// group, not the shell: once the shell has exited, what it started in the background (a
    /// worker, the team's backend) still runs in it and is ours to stop.
    func stop() async {
        closePipes()
        guard groupRuns else { return }
        kill(-pid, SIGTERM)
        if await waitForGroupExit(timeout: .seconds(1)) { return }
        kill(-pid, SIGKILL)
        _ = await waitForGroupExit(timeout: .seconds(1))
    }

    /// Some process of its group still runs (the shell is reaped first, so its own zombie does
    /// not count). A group whose processes have all exited is gone: kill(2) says ESRCH. Orphans
    /// are reaped by PID 1, and some (a container's or a VM's init) never do: a group of
    /// zombies only has exited too, which /proc tells.
    var groupRuns: Bool {
        _ = exitStatus
        guard kill(-pid, 0) == 0 || errno == EPERM else { return false }
        return Self.liveMembers(ofGroup: pid)
    }

    /// Whether /proc lists a process of group `group` that is not a zombie (true when /proc
    /// cannot be read: kill(2) said the group is there).
    static func liveMembers(ofGroup group: pid_t) -> Bool {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return true }
        for entry in entries where entry.utf8.first.map({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) == true {
            // /proc/<pid>/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces and ')'.
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, Int32(fields[2]) == group else { continue }
            if fields[0] != "Z", fields[0] != "X" { return true }
        }
        return false
    }

    private func waitForGroupExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while groupRuns {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    private func close() {
        closePipes()
        if groupRuns { kill(-pid, SIGKILL) }
        _ = exitStatus
    }
}

/// A child starts with the signals a plain shell would give it: none blocked, every one at its
/// default disposition. Without this it inherits, through posix_spawn:
/// - the mask of the thread that spawns it: a Swift concurrency (Dispatch) worker, which blocks
///   nearly every signal, SIGTERM and SIGHUP included. The shell unblocks for itself, but what it
///   starts in the background keeps the mask, and the SIGTERM `stop()` sends never arrives;
/// - SIGPIPE ignored (we ignore it, and an ignored signal survives exec);
/// - glibc's two internal real-time signals (32 and 33: thread cancellation, set*id) ignored:
///   glibc's spawn sets them to SIG_IGN in the child unless they are in the "default" set.
enum ChildSignals {
    static func reset(_ attributes: inout posix_spawnattr_t) {
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        // Every signal, the internal ones too: glibc's sigfillset and sigaddset leave out 32
        // and 33, so the set's bytes are filled directly (setsigdefault copies the set as
        // given). The child's sigaction refuses SIGKILL and SIGSTOP in it, harmlessly.
        var all = sigset_t()
        withUnsafeMutableBytes(of: &all) { $0.initializeMemory(as: UInt8.self, repeating: 0xff) }
        posix_spawnattr_setsigdefault(&attributes, &all)
    }
}

/// The child's status once reaped.
final class ExitStatus: Sendable {
    let code = Mutex<Int32?>(nil)
}

/// Bytes read and not yet handed out as lines.
struct LineBuffer {
    private var bytes: [UInt8] = []
    /// Where the next line starts; bytes before it are dropped in bulk, not per line: when
    /// the buffer empties (the protocol's usual case, one reply at a time), or before a read
    /// once they pass 64 KiB.
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
    /// Reads what `fd` has (one read, EINTR retried): `.done(0)` at end of file.
    mutating func fill(from fd: Int32) throws(SystemCallError) -> IOOutcome<Int> {
        let chunk = 64 << 10
        if start >= chunk {
            bytes.removeFirst(start)
            scanned -= start
            start = 0
        }
        let old = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: chunk))
        let outcome = bytes.withUnsafeMutableBytes { raw in
            Result { () throws(SystemCallError) in try systemCall("read") { Glibc.read(fd, raw.baseAddress! + old, chunk) } }
        }
        var read = 0
        if case .success(.done(let count)) = outcome { read = count }
        bytes.removeLast(chunk - read)
        return try outcome.get()
    }

    /// Appends bytes already read (tests, and callers reading by other means).
    mutating func append(_ more: [UInt8]) { bytes += more }

    /// Everything not yet handed out, as one piece (a line too long to wait for its newline).
    mutating func takeRest() -> [UInt8] {
        let rest = Array(bytes[start...])
        bytes.removeAll(keepingCapacity: true)
        (start, scanned) = (0, 0)
        return rest
    }
}

/// Forwards an adapter's stderr to ours, line by line with a prefix, on a thread of its own
/// (the adapter must never block on a full stderr pipe), and keeps the last lines.
final class StderrTail: Sendable {
    static let kept = 20
    /// A stderr line longer than this is forwarded (and kept) in pieces of this size: an adapter
    /// that writes without a newline must not grow our memory (Benchmarks/README.md, "Figures behind code comments").
    static let pieceLimit = 64 << 10
    private struct State {
        var lines: [String] = []
        var finished = false
    }
    private let state = Mutex(State())

    /// `output`: where the lines go (our stderr; tests give another descriptor).
    init(fd: Int32, prefix: String, output: Int32 = 2) {
        // On a terminal the CLI's progress line may stand where this line goes: it is cleared
        // first (carriage return, erase to the end of the line), and redrawn at its next tick.
        let clearLine = isatty(output) == 1 ? "\r\u{1B}[K" : ""
        let thread = Thread { [self] in
            var buffer = LineBuffer()
            func emit(_ line: [UInt8]) {
                let text = String(decoding: line, as: UTF8.self)
                var out = Array((clearLine + prefix + text + "\n").utf8)
                _ = out.withUnsafeMutableBytes { Glibc.write(output, $0.baseAddress!, $0.count) }
                state.withLock { state in
                    state.lines.append(text)
                    if state.lines.count > Self.kept { state.lines.removeFirst(state.lines.count - Self.kept) }
                }
            }
            while true {
                guard case .done(let read)? = try? buffer.fill(from: fd), read > 0 else { break }
                while let line = buffer.nextLine() { emit(line) }
                if buffer.count >= Self.pieceLimit { emit(buffer.takeRest()) }
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
