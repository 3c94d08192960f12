#!/usr/bin/env bash
# What reserving a record file's space ahead saves the kernel (RecordFile.reservationBytes):
# the writes `RecordFile` makes (128 KB each, appended) of SIZE_MB into a file in DIR, with no
# reservation and with fallocate(FALLOC_FL_KEEP_SIZE) a STEP at a time, alternated, ROUNDS
# times; prints the median system CPU of each setting and its ratio to no reservation, and
# the whole machine's busy time from the first write to the file's fsync (/proc/stat: the
# kernel's writeback threads included, and anything else running), so a saving that only
# moved the work to writeback would show. The file system is DIR's: the record's own (ext4,
# xfs, tmpfs) is the one to measure.
#
#   Benchmarks/record-reservation.sh [DIR=/tmp] [SIZE_MB=400] [ROUNDS=5] [STEPS_MB="0 4 16 64"]
set -euo pipefail
DIR="${1:-/tmp}"; SIZE_MB="${2:-400}"; ROUNDS="${3:-5}"; STEPS_MB="${4:-0 4 16 64}"
python3 - "$DIR" "$SIZE_MB" "$ROUNDS" "$STEPS_MB" <<'PY'
import ctypes, os, resource, statistics, sys, tempfile
directory, size_mb, rounds, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(s) for s in sys.argv[4].split()]
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
FALLOC_FL_KEEP_SIZE = 1
chunk = b"x" * (128 << 10)
total = size_mb << 20

def system_seconds():
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime

def machine_busy_seconds():
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    # user, nice, system, irq, softirq: busy; idle and iowait are not.
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / os.sysconf("SC_CLK_TCK")

def write_file(step_mb):
    fd, path = tempfile.mkstemp(dir=directory, prefix="pushproof-reservation-")
    try:
        reserved, written = 0, 0
        os.sync()
        busy = machine_busy_seconds()
        start = system_seconds()
        while written < total:
            if step_mb and written + len(chunk) > reserved:
                if libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, reserved, step_mb << 20) != 0:
                    sys.exit(f"fallocate failed in {directory}: {os.strerror(ctypes.get_errno())}")
                reserved += step_mb << 20
            written += os.write(fd, chunk)
        own = system_seconds() - start
        os.fsync(fd)
        return own, machine_busy_seconds() - busy
    finally:
        os.close(fd)
        os.unlink(path)
        os.sync()

seconds = {step: [] for step in steps}
machine = {step: [] for step in steps}
for _ in range(rounds):
    for step in steps:
        own, busy = write_file(step)
        seconds[step].append(own)
        machine[step].append(busy)
none = statistics.median(seconds[steps[0]])
print(f"{size_mb} MB in 128 KB writes into {directory}, {rounds} rounds, medians:")
print(f"  {'':<22} {'system CPU':>10}   {'ratio':>5}   {'machine busy to fsync':>21}")
for step in steps:
    median = statistics.median(seconds[step])
    label = "no reservation" if step == 0 else f"reserved {step} MB ahead"
    ratio = median / none if none else float("nan")
    print(f"  {label:<22} {1000 * median:7.1f} ms   {ratio:5.2f}   {1000 * statistics.median(machine[step]):18.0f} ms")
PY
