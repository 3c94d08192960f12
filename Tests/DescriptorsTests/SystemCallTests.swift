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
