import Descriptors
import Glibc
import Testing

@Suite struct SystemCallTests {
    @Test func wouldBlockIsAnOutcomeAndOtherFailuresKeepTheirErrno() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        let reader = FileDescriptor(taking: ends[0])
        let writer = FileDescriptor(taking: ends[1])
        var byte: UInt8 = 0
        #expect(try systemCall("read") { read(reader.raw, &byte, 1) } == .wouldBlock)
        byte = 7
        #expect(try systemCall("write") { write(writer.raw, &byte, 1) } == .done(1))
        byte = 0
        #expect(try systemCall("read") { read(reader.raw, &byte, 1) } == .done(1) && byte == 7)
        #expect(throws: SystemCallError(call: "read", code: EBADF)) { try systemCall("read") { read(-1, &byte, 1) } }
        #expect(SystemCallError(call: "read", code: EBADF).description.contains("errno 9"))
    }

    /// Reserved space is allocated and the size unchanged; a descriptor that is not a file's
    /// is an error naming the call.
    @Test func preallocatingReservesSpaceWithoutChangingTheSize() throws {
        let path = "/tmp/pushproof-preallocate-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        defer { close(fd); unlink(path) }
        var byte: UInt8 = 7
        #expect(write(fd, &byte, 1) == 1)
        let outcome = Result { () throws(SystemCallError) in try preallocate(fd, offset: 1, length: 1 << 20) }
        // A file system without fallocate: nothing to check here.
        if case .failure(let error) = outcome, error.code == EOPNOTSUPP { return }
        try outcome.get()
        var status = stat()
        #expect(fstat(fd, &status) == 0)
        #expect(status.st_size == 1)
        #expect(Int(status.st_blocks) * 512 >= 1 << 20)
        #expect(throws: SystemCallError(call: "fallocate", code: EBADF)) { try preallocate(-1, offset: 0, length: 4096) }
    }

    @Test func aSignalDuringACallIsRetriedNotReported() throws {
        var calls = 0
        let result = try blockingSystemCall("fake") { () -> Int in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 42
        }
        #expect(result == 42 && calls == 3)
    }

    @Test func theOwnerClosesItsDescriptorOnceWhenItEnds() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        do { _ = FileDescriptor(taking: ends[0]) }
        #expect(fcntl(ends[0], F_GETFD) == -1 && errno == EBADF, "closed when the owner ended")
        let released = FileDescriptor(taking: ends[1]).release()
        #expect(fcntl(released, F_GETFD) != -1, "released: still open")
        FileDescriptor(taking: released).close()
        #expect(fcntl(released, F_GETFD) == -1)
    }
}
