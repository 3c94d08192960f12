#if canImport(Glibc)
import JSON
import Descriptors
import Glibc
#endif
import Dispatch
import Synchronization
import Foundation

/// An append-only file that many event-loop threads write whole lines to.
///
/// Producers append to a shared buffer under a short lock; a flusher thread writes it out
/// once it holds `flushBytes`, and every `flushInterval` whatever it holds. Memory stays
/// bounded: when the buffer passes `highWater`, the producer that crossed it writes the buffer
/// out itself (back-pressure on the loop instead of unbounded growth when the disk is slower
/// than the traffic). `close()` writes whatever
/// is left and fsyncs, so every line handed to `append` before it is on disk.
///
/// A write that fails part way (the disk full, then space back) leaves no half line: the file
/// is cut back to its last whole line, and the lines that did not make it are counted
/// (`lostLines`), so a reader sees whole lines with a gap in `seq` and the summary says how
/// many are missing (without it the record once held a spliced half line).
///
/// The file's space is reserved ahead of the writes, `reservationBytes` at a time
/// (`fallocate(2)`, the size unchanged), as journald does for its journals: a write into
/// reserved space skips ext4's per-block delayed allocation, and the kernel's side of the
/// write costs about a quarter less (Benchmarks/README.md, "Round 5").
/// `close()` gives back what was not used; a gateway killed outright leaves it allocated past
/// the file's end (`du` counts it; truncating the file to its own size frees it).
public final class RecordFile: Sendable {
    /// `write(2)`'s shape, so tests can fail writes part way.
    typealias WriteFunction = @Sendable (Int32, UnsafeRawPointer, Int) -> Int
    public struct OpenError: Error, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "cannot open record file \(path): \(reason)" }
    }

    private struct Pending {
        var buffer: [UInt8] = []
        /// The buffer last written out, emptied with its capacity kept: swapped in on the next
        /// flush so producers never append into a freshly allocated (page-faulting) buffer.
        var spare: [UInt8] = []
        var sequence: UInt64 = 0
        var closed = false
        /// The flusher has been woken for the buffer's size and has not yet taken it.
        var flusherWoken = false
    }

    public let path: String
    private let descriptor: Int32
    private let highWater: Int
    private let flushBytes: Int
    private let pending = Mutex(Pending())
    /// Wakes the flusher before its interval is up when the buffer reaches `flushBytes`.
    private let flusherWake = DispatchSemaphore(value: 0)
    /// Where the file's lines end, and how far its space is reserved.
    private struct FileSpace {
        /// The file's size up to its last whole line.
        var wholeLinesEnd: Int
        /// Space is reserved up to here (past `wholeLinesEnd` while a reservation lasts).
        var reservedEnd: Int
        /// False once the file system refused a reservation (full, or no fallocate): the
        /// writes go on without one.
        var reserving = true
    }

    /// Serialises "take the buffer, write it" so buffers reach the file in the order taken;
    /// holds where the lines end and how far the space is reserved.
    private let writeOrder: Mutex<FileSpace>
    private let writeErrors = Atomic<Int>(0)
    private let linesLost = Atomic<Int>(0)
    private let writeBytes: WriteFunction
    private let flusherStop = Atomic<Bool>(false)
    private let flusherDone = Atomic<Bool>(false)

    /// - Parameters:
    ///   - append: keep an existing file's lines (default: start the file afresh).
    ///   - flushBytes: the buffer is written out once it holds this much. Two buffers of it (the
    ///     one filling, the one being written) stay in a core's cache: with only the 10 ms
    ///     interval the buffer was ~1.7 MB at 150,000 lines/s, and the event loop's appends
    ///     and the kernel's copy into the page cache both missed the cache (a recorded request
    ///     cost ~15% more CPU; Benchmarks/README.md, "The record's buffer in the cache").
    ///   - flushIntervalMillis: the most a line waits in the buffer when traffic is light. With
    ///     100 ms (and no size trigger) the event loop crossed `highWater` and wrote 8 MB itself.
    public convenience init(path: String, append: Bool = false, highWater: Int = 8 << 20,
                            flushBytes: Int = RecordFile.defaultFlushBytes, flushIntervalMillis: Int = 10) throws(OpenError) {
        try self.init(path: path, append: append, highWater: highWater, flushBytes: flushBytes,
                      flushIntervalMillis: flushIntervalMillis, write: { Glibc.write($0, $1, $2) })
    }

    public static let defaultFlushBytes = 128 << 10

    /// Space reserved a step at a time. Steps of 4, 16 and 64 MB cost the kernel's writes
    /// alike (0.75-0.80x of none, `Benchmarks/record-reservation.sh` on ext4); 16 MB is a
    /// fallocate every ~0.1 s of a busy gateway's record, and no more unused space than that
    /// (on tmpfs a reservation is memory).
    static let reservationBytes = 16 << 20

    init(path: String, append: Bool = false, highWater: Int = 8 << 20, flushBytes: Int = RecordFile.defaultFlushBytes,
         flushIntervalMillis: Int = 10, write: @escaping WriteFunction) throws(OpenError) {
        self.path = path
        self.highWater = highWater
        self.flushBytes = min(flushBytes, highWater)
        self.writeBytes = write
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw OpenError(path: path, reason: String(cString: strerror(errno))) }
        descriptor = fd
        // Appending: the existing lines are whole (a torn tail from a crash is not ours to judge).
        let end = Int(lseek(fd, 0, SEEK_END))
        writeOrder = Mutex(FileSpace(wholeLinesEnd: end, reservedEnd: end))
        let interval = max(1, flushIntervalMillis)
        let thread = Thread { [self] in self.runFlusher(intervalMillis: interval) }
        thread.start()
    }

    /// Appends one line. `body` writes the line's bytes after the sequence number has been
    /// assigned; the sequence numbers in the file are therefore strictly increasing.
    /// Returns the sequence number (1-based).
    @discardableResult
    public func appendLine(prefix: [UInt8], suffix: [UInt8]) -> UInt64 {
        var overflow = false
        var wakeFlusher = false
        let sequence = pending.withLock { state -> UInt64 in
            state.sequence += 1
            guard !state.closed else { return state.sequence }
            // Through buffer pointers: appending the arrays themselves retained and released
            // each (perf: ~1.3% of a request, the release after the line's copy).
            prefix.withUnsafeBufferPointer { state.buffer.append(contentsOf: $0) }
            appendDecimal(state.sequence, to: &state.buffer)
            suffix.withUnsafeBufferPointer { state.buffer.append(contentsOf: $0) }
            overflow = state.buffer.count >= highWater
            if state.buffer.count >= flushBytes, !state.flusherWoken {
                state.flusherWoken = true
                wakeFlusher = true
            }
            return state.sequence
        }
        if overflow {
            flush()
        } else if wakeFlusher {
            flusherWake.signal()
        }
        return sequence
    }

    /// Writes everything appended so far to the file (not fsynced).
    public func flush() {
        writeOrder.withLock { space in
            var chunk = pending.withLock { state -> [UInt8] in
                var taken: [UInt8] = []
                swap(&taken, &state.spare)
                swap(&taken, &state.buffer)
                state.flusherWoken = false
                return taken
            }
            reserve(through: space.wholeLinesEnd + chunk.count, in: &space)
            if !writeWholeLines(chunk, fileEnd: &space.wholeLinesEnd) {
                // The file was cut back to its last whole line, and its reservation with it.
                space.reservedEnd = space.wholeLinesEnd
            }
            chunk.removeAll(keepingCapacity: true)
            pending.withLock { state in
                if chunk.capacity > state.spare.capacity { swap(&state.spare, &chunk) }
            }
        }
    }

    /// Lines appended so far.
    public var lineCount: UInt64 { pending.withLock { $0.sequence } }

    /// Writes that failed (disk full, I/O error): surfaced in status and metrics.
    public var failedWrites: Int { writeErrors.load(ordering: .relaxed) }

    /// Lines appended but not in the file because a write failed (their `seq` numbers are the
    /// gap a reader sees).
    public var lostLines: Int { linesLost.load(ordering: .relaxed) }

    /// Lines appended and not lost: after `close()`, the lines in the file (this run's).
    public var writtenLines: UInt64 { lineCount - UInt64(lostLines) }

    /// Writes the rest, fsyncs and closes. Lines appended afterwards are counted but dropped.
    public func close() {
        flusherStop.store(true, ordering: .releasing)
        flusherWake.signal()
        while !flusherDone.load(ordering: .acquiring) { usleep(1000) }
        flush()
        pending.withLock { $0.closed = true }
        flush()
        giveBackReservation()
        fsync(descriptor)
        Glibc.close(descriptor)
    }

    /// Reserves space up to `end`, a step past it, unless the file system refused before.
    private func reserve(through end: Int, in space: inout FileSpace) {
        guard space.reserving, end > space.reservedEnd else { return }
        let start = max(space.reservedEnd, space.wholeLinesEnd)
        let length = max(Self.reservationBytes, end - start)
        do {
            try preallocate(descriptor, offset: start, length: length)
            space.reservedEnd = start + length
        } catch {
            // ENOSPC or EOPNOTSUPP: the write itself says whether the disk is full.
            space.reserving = false
        }
    }

    /// Frees the reserved space past the last line: truncating a file to its own size drops
    /// what is allocated beyond it.
    private func giveBackReservation() {
        writeOrder.withLock { space in
            guard space.reservedEnd > space.wholeLinesEnd else { return }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { return }
            if ftruncate(descriptor, status.st_size) == 0 { space.reservedEnd = Int(status.st_size) }
        }
    }

    private func runFlusher(intervalMillis: Int) {
        while !flusherStop.load(ordering: .acquiring) {
            _ = flusherWake.wait(timeout: .now() + .milliseconds(intervalMillis))
            flush()
        }
        flusherDone.store(true, ordering: .releasing)
    }

    /// Writes `bytes` (whole lines) at `fileEnd`. When a write fails part way, the file is cut
    /// back to the last whole line written and the rest of the chunk is counted lost; the next
    /// flush starts on a line boundary, so space coming back yields whole lines again.
    /// Returns false when a write failed.
    private func writeWholeLines(_ bytes: [UInt8], fileEnd: inout Int) -> Bool {
        guard !bytes.isEmpty else { return true }
        return bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                guard let n = try? blockingSystemCall("write", { writeBytes(descriptor, raw.baseAddress! + offset, raw.count - offset) }) else {
                    writeErrors.add(1, ordering: .relaxed)
                    let written = raw[..<offset]
                    let kept = (written.lastIndex(of: UInt8(ascii: "\n")) ?? -1) + 1
                    let lost = raw[kept...].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
                    linesLost.add(lost, ordering: .relaxed)
                    fileEnd += kept
                    // O_APPEND writes go to the end, so cutting the file is all it takes; a
                    // failed cut is another failed write (the half line stays: nothing better).
                    if ftruncate(descriptor, off_t(fileEnd)) != 0 { writeErrors.add(1, ordering: .relaxed) }
                    _ = lseek(descriptor, off_t(fileEnd), SEEK_SET)
                    return false
                }
                offset += n
            }
            fileEnd += raw.count
            return true
        }
    }
}
