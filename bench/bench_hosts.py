"""Benchmark the scan against the number of distinct born hosts (run by hand, never in CI).

    python bench/bench_hosts.py [--dir /tmp/mqtool-bench-hosts] [--sizes 100MB,1GB] [--repeat 3]

For each size, two stores are made by `mqtool sample create` with the broker's real geometry (1 GiB
commitlog files, so a whole file is one walk): one whose messages come from 200 producer connections
(`--producers 200`) and one where every message comes from a new connection (`--producers 0`: a new
ephemeral port per message, as producers created per request give). Stores are kept in --dir and reused.
Prints, side by side in one run, the columnar decode of every commitlog file (warm, median of --repeat;
messages/s, wall and CPU seconds) and `mqtool verify` end to end (wall and CPU of the process), for both
stores of each size, and the ratio one-host-per-message / 200 hosts (the goal: at most 1.3x). Creating a
store also prints the rate of `mqtool sample create` (it should make a ~1 GB store in minutes).
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from formats.columnar.decoder import decode_range  # noqa: E402

BROKER_GEOMETRY = [
    *("--file-size", "1073741824", "--cq-file-size", "6000000"),
    *("--max-hash-slot-num", "5000000", "--max-index-num", "20000000"),
]
BYTES_PER_MESSAGE = 840  # what `sample create` averages (records of the schedule/txn traffic included)


def parse_size(text: str) -> int:
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
    for unit, factor in units.items():
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def make_store(path: Path, size: int, producers: int) -> None:
    if (path / "commitlog").is_dir():
        return
    messages = max(1000, size // BYTES_PER_MESSAGE)
    print(f"creating {path} ({messages:,} messages, --producers {producers}) ...", flush=True)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "sample", "create", str(path), "-n", str(messages)]
        + ["--producers", str(producers), *BROKER_GEOMETRY, "--format", "json"],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - started
    print(f"  sample create: {elapsed:.1f} s, {messages / elapsed:,.0f} messages/s", flush=True)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def decode_store(path: Path) -> tuple[int, int, float, float]:
    """(messages, distinct born hosts, wall s, cpu s) of decoding every commitlog file once."""
    rows = hosts = 0
    t, c = time.perf_counter(), cpu()
    for p in sorted((path / "commitlog").iterdir()):
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            batch = decode_range(memoryview(buf), int(p.name))
            rows += batch.num_rows
            hosts += len(batch.column("bornHost").dictionary)
            del batch
    return rows, hosts, time.perf_counter() - t, cpu() - c


def verify(path: Path) -> tuple[float, float]:
    """(wall s, cpu s) of `mqtool verify` as a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "verify", "--store", str(path), "--format", "json"],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - t, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mqtool-bench-hosts"))
    ap.add_argument("--sizes", default="100MB,1GB")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for size_text in args.sizes.split(","):
        size = parse_size(size_text)
        figures = {}
        for producers in (200, 0):
            path = args.dir / f"{size_text.lower()}-producers{producers}"
            make_store(path, size, producers)
            decode_store(path)  # warm: page cache and numba's cached code
            runs = [decode_store(path) for _ in range(args.repeat)]
            messages, hosts = runs[0][0], runs[0][1]
            wall = statistics.median(r[2] for r in runs)
            cpu_s = statistics.median(r[3] for r in runs)
            verify(path)
            checks = [verify(path) for _ in range(args.repeat)]
            v_wall = statistics.median(c[0] for c in checks)
            v_cpu = statistics.median(c[1] for c in checks)
            figures[producers] = (wall, cpu_s, v_wall, v_cpu)
            rows.append(
                f"| {size_text} | {'1 per message' if producers == 0 else producers} | {messages:,} | "
                f"{hosts:,} | {messages / wall / 1e6:.2f} M/s | {wall:.3f} | {cpu_s:.3f} | {v_wall:.2f} | "
                f"{v_cpu:.2f} |"
            )
        many, few = figures[0], figures[200]
        rows.append(
            f"| {size_text} | ratio | | | | {many[0] / few[0]:.2f}x | {many[1] / few[1]:.2f}x | "
            f"{many[2] / few[2]:.2f}x | {many[3] / few[3]:.2f}x |"
        )
    print(f"\nmachine: {os.cpu_count()} cores; medians of {args.repeat} warm runs")
    print("| size | producers | messages | distinct born hosts | decode rate | decode wall s | decode CPU s "
          "| verify wall s | verify CPU s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
