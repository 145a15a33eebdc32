"""Benchmark the on-call commands on a ~1.3 GB store written by the real broker (run by hand, never in CI).

    python bench/bench_oncall.py STORE [--repeat 3]

STORE: a store the oracle wrote (`tests/oracle/run.sh make-big DIR`: 1.6 M messages through the real
DefaultMessageStore, 1 GiB commitlog files, ~1.39 GB). Its broker.conf is written beside the run
(mappedFileSizeConsumeQueue and the index geometry of make-big). Times, in the same run, each as a whole
command in a new process (imports included, their bytecode cached as an installed mqtool's is; the store's
files in the page cache after the first run), median of --repeat, goal <= 2 s each:

- `mqtool retention --disk-used 0.5 --format json`
- `mqtool verify --startup --format json`
- `mqtool info --format json` (which carries the start-up verdict)
- `mqtool bundle -o FILE --force --format json` (info, startup, verify, retention, inventory, last records:
  one pass over the commitlog, verify's, in byte ranges over the cores)
- `mqtool verify --format json` alone, for comparison (the bundle holds its document)

The machine is shared: the load average is printed before and after (wall time counts the wait for a core;
CPU time, user + system of the command and its workers, hardly depends on the load).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 2.0


def run(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child) of one command."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached (the warm-up writes it)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args], capture_output=True, text=True, env=env
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    files = list((opts.store / "commitlog").iterdir())
    size = sum(f.stat().st_size for f in files)
    written = sum(f.stat().st_blocks * 512 for f in files)  # preallocated files are sparse
    work = Path(tempfile.mkdtemp(prefix="mqtool-bench-oncall-"))
    conf = work / "broker.conf"
    conf.write_text(
        "mappedFileSizeCommitLog=1073741824\nmappedFileSizeConsumeQueue=6000000\n"
        "maxHashSlotNum=500000\nmaxIndexNum=2000000\n",
        encoding="utf-8",
    )
    common = ["-s", str(opts.store), "--broker-config", str(conf), "--format", "json"]
    commands = {
        "retention": ["retention", "--disk-used", "0.5", *common],
        "verify --startup": ["verify", "--startup", *common],
        "info": ["info", "-s", str(opts.store), "--format", "json"],
        "bundle": ["bundle", "-o", str(work / "b.tar.gz"), "--force", *common],
        "verify (for comparison)": ["verify", *common],
    }
    print(
        f"store {opts.store}: {size / 1e9:.2f} GB of commitlog files, {written / 1e9:.2f} GB written; "
        f"median of {opts.repeat} runs after one warm-up"
    )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: "
        "wall time counts the wait for a core"
    )
    for name, args in commands.items():
        run(args)  # warm-up: page cache, numba's cache
        runs = [run(args) for _ in range(opts.repeat)]
        wall = statistics.median(t for t, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        mark = (
            "" if "comparison" in name else ("  ok" if wall <= GOAL_S else f"  wall OVER the {GOAL_S} s goal")
        )
        print(f"{name:26s} wall {wall:6.2f} s  cpu {cpu:6.2f} s{mark}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
