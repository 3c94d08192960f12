import CLinux
import Glibc

/// Reserves the file's space for `[offset, offset + length)` without changing its size
/// (`fallocate(2)` with `FALLOC_FL_KEEP_SIZE`): writes into reserved space skip the file
/// system's per-block allocation. Throws when the file system cannot (ENOSPC, EOPNOTSUPP on
/// one without fallocate). Space past the size stays the file's until it is truncated.
public func preallocate(_ fd: Int32, offset: Int, length: Int) throws(SystemCallError) {
    _ = try blockingSystemCall("fallocate") { pushproof_preallocate(fd, off_t(offset), off_t(length)) }
}
