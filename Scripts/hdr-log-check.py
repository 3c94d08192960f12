#!/usr/bin/env python3
"""Reads an HdrHistogram interval log with PyPI's hdrhistogram (a third-party reader), for
Tests/MetricsTests/HistogramInteropTests.swift: decodes every interval line with
HdrHistogram.decode, adds them, and prints one JSON object: the total count, p50/p90/p99/p99.9
(get_value_at_percentile), the max (get_max_value), the histogram's shape (bucket count, counts
length), the counts-array index of each value given after the log's path, and the sum encoded
by this library (base64 of its compressed V2, for pushproof to decode in turn).

Usage: PYTHONPATH=<unpacked hdrhistogram wheel> hdr-log-check.py LOG [VALUE ...]
"""
import json
import sys

from hdrh.histogram import HdrHistogram


def main():
    path, probes = sys.argv[1], [int(v) for v in sys.argv[2:]]
    total = None
    lines = 0
    with open(path, encoding="ascii") as log:
        for line in log:
            line = line.strip()
            if not line or line.startswith("#") or line.startswith('"StartTimestamp"'):
                continue
            interval = HdrHistogram.decode(line.split(",")[-1])
            lines += 1
            if total is None:
                total = interval
            else:
                total.add(interval)
    if total is None:
        total = HdrHistogram(1, 3_600_000_000_000, 3)
    print(json.dumps({
        "lines": lines,
        "count": total.get_total_count(),
        "p50": total.get_value_at_percentile(50),
        "p90": total.get_value_at_percentile(90),
        "p99": total.get_value_at_percentile(99),
        "p999": total.get_value_at_percentile(99.9),
        "max": total.get_max_value(),
        "bucket_count": total.bucket_count,
        "counts_len": total.counts_len,
        "indices": [total.get_counts_array_index(v) for v in probes],
        "encoded": total.encode().decode("ascii"),
    }))


if __name__ == "__main__":
    main()
