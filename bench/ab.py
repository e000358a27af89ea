#!/usr/bin/env python3
"""Paired A/B of the mosaiq benchmark rows of two builds of the benchmarks.

Shared VMs drift by 10-30% between runs of the same binary minutes apart, so running all of A and
then all of B measures the drift. Here every row runs alternately in A and B (A B, B A, A B, ...),
each run a fresh process on that row alone, so both sides see the same drift. Per row it reports
B/A of the minimum and of the median over the runs, and lists the rows whose both ratios exceed the
threshold. Standard library only. --clock cpu_time compares the benchmarks' CPU time instead of real time: on a
loaded machine a run's real time includes the time other processes held its core.

usage: ab.py A_BENCH_DIR B_BENCH_DIR [--pairs N] [--min-time S] [--threshold R] [--filter REGEX]
             [--clock real_time|cpu_time] [--json OUT] [bench_name ...]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def list_rows(exe, pattern):
    names = subprocess.run([exe, "--benchmark_list_tests"], capture_output=True, text=True, check=True).stdout.split()
    return [n for n in names if "/mosaiq/" in n and re.search(pattern, n)]


def time_row(exe, row, min_time, clock):
    """`clock` (real_time or cpu_time) of one run of `row` (the benchmark's own unit), or None when it did not run."""
    result = subprocess.run([exe, f"--benchmark_filter=^{re.escape(row)}$", f"--benchmark_min_time={min_time}",
                             "--benchmark_format=json"], capture_output=True, text=True)
    if result.returncode != 0:
        return None
    runs = [b for b in json.loads(result.stdout)["benchmarks"] if b["run_name"] == row and "error_occurred" not in b]
    return runs[0][clock] if runs else None


def paired_times(a_exe, b_exe, row, pairs, min_time, clock):
    times = {"a": [], "b": []}
    for k in range(pairs):
        order = (("a", a_exe), ("b", b_exe)) if k % 2 == 0 else (("b", b_exe), ("a", a_exe))
        for side, exe in order:
            t = time_row(exe, row, min_time, clock)
            if t is not None:
                times[side].append(t)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a_dir")
    parser.add_argument("b_dir")
    parser.add_argument("benches", nargs="*", help="bench binaries (default: every bench_* in both directories)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--min-time", default="0.1")
    parser.add_argument("--threshold", type=float, default=1.02)
    parser.add_argument("--filter", default="")
    parser.add_argument("--clock", choices=("real_time", "cpu_time"), default="real_time")
    parser.add_argument("--json")
    args = parser.parse_args()

    benches = args.benches or sorted(
        n for n in os.listdir(args.a_dir) if n.startswith("bench_") and os.path.isfile(os.path.join(args.b_dir, n)))
    results = {}
    for bench in benches:
        a_exe, b_exe = os.path.join(args.a_dir, bench), os.path.join(args.b_dir, bench)
        b_rows = set(list_rows(b_exe, args.filter))
        for row in (r for r in list_rows(a_exe, args.filter) if r in b_rows):
            t = paired_times(a_exe, b_exe, row, args.pairs, args.min_time, args.clock)
            if not t["a"] or not t["b"]:
                print(f"   n/a    n/a  {row} (did not run in both)", flush=True)
                continue
            results[row] = t
            by_min = min(t["b"]) / min(t["a"])
            by_median = statistics.median(t["b"]) / statistics.median(t["a"])
            print(f"{by_min:6.3f} {by_median:6.3f}  {row}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f)
    if not results:
        sys.exit("ab.py: no row ran in both builds")
    ratios = {row: (min(t["b"]) / min(t["a"]), statistics.median(t["b"]) / statistics.median(t["a"]))
              for row, t in results.items()}
    print(f"\n{len(ratios)} rows, B/A geometric mean: by minimum "
          f"{statistics.geometric_mean(r[0] for r in ratios.values()):.3f}, by median "
          f"{statistics.geometric_mean(r[1] for r in ratios.values()):.3f}")
    slower = sorted((r for r in ratios.items() if min(r[1]) > args.threshold), key=lambda r: -r[1][1])
    print(f"rows slower than {args.threshold} by both minimum and median: {len(slower)}")
    for row, (by_min, by_median) in slower:
        print(f"{by_min:6.3f} {by_median:6.3f}  {row}")


if __name__ == "__main__":
    main()
