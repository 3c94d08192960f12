import CLinux

/// Blocks of at least 1 MiB come from mmap and go back to the system when freed. glibc's
/// threshold otherwise starts at 128 KiB and grows, as large blocks are freed, up to 32 MiB:
/// after the first big fan-out, an event's multi-megabyte arrays (its pushes, their
/// expectations, a judgement's index) come from the heap and stay there as its fragments
/// once freed. Measured on a 100,000-person `run`: peak RSS 260 MB with glibc's default,
/// 228 MB with this (Benchmarks/run-scenario.sh). Process-wide: `main.swift` calls it first.
public func returnLargeFreedBlocksToTheSystem() {
    _ = mallopt(M_MMAP_THRESHOLD, 1 << 20)
}
