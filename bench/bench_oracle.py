"""mqtool's decode and verify against RocketMQ's own MessageDecoder, on the same files in one run (by hand).

    make oracle-build && python bench/bench_oracle.py [--store /tmp/mqtool-oracle-big] [--repeat 3]

The store is written once (and reused) by the oracle's `make-big` through the real 5.3.3 put path:
1.6 M messages, ~1.3 GB, 1 GiB commitlog files. Then, side by side: the real `MessageDecoder.decode` over
every record (tests/oracle/run.sh bench: one thread, a first cold pass and the median of warm passes),
mqtool's columnar decode of every commitlog file (one thread: a cold process with its imports, and the
median of warm passes in this process) and `mqtool verify` end to end (a new process: wall and CPU).
Prints the figures and the ratios mqtool / MessageDecoder. Not run by the tests; needs the oracle build.
"""

from __future__ import annotations

import argparse
import json
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
ORACLE = ROOT / "tests" / "oracle" / "run.sh"

from formats.columnar.decoder import decode_range  # noqa: E402

COLD = """
import mmap, sys, time
t = time.perf_counter()
from formats.columnar.decoder import decode_range
from pathlib import Path
rows = 0
for p in sorted(Path(sys.argv[1], "commitlog").iterdir()):
    with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        batch = decode_range(memoryview(buf), int(p.name))
        rows += batch.num_rows
        del batch
print(rows, time.perf_counter() - t)
"""


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def decode_store(store: Path) -> tuple[int, float, float]:
    """(rows, wall s, cpu s) of mqtool's columnar decode of every commitlog file, one thread."""
    rows = 0
    t, c = time.perf_counter(), cpu()
    for p in sorted((store / "commitlog").iterdir()):
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            batch = decode_range(memoryview(buf), int(p.name))
            rows += batch.num_rows
            del batch
    return rows, time.perf_counter() - t, cpu() - c


def child(args: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, time.perf_counter() - t, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", type=Path, default=Path("/tmp/mqtool-oracle-big"))
    ap.add_argument("--messages", type=int, default=1_600_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not (args.store / "commitlog").is_dir():
        print(f"writing {args.store} through the real put path ...", flush=True)
        made = subprocess.run([str(ORACLE), "make-big", str(args.store), str(args.messages)], check=True,
                              capture_output=True, text=True)  # fmt: skip
        print(made.stdout, flush=True)

    real, _, _ = child([str(ORACLE), "bench", str(args.store), str(args.repeat)])
    java = json.loads(real.stdout)

    cold, cold_wall, cold_cpu = child([sys.executable, "-c", COLD, str(args.store)])
    cold_rows, cold_inner = cold.stdout.split()
    decode_store(args.store)  # warm: page cache and the compiled kernels
    runs = [decode_store(args.store) for _ in range(args.repeat)]
    rows = runs[0][0]
    wall = statistics.median(r[1] for r in runs)
    cpu_s = statistics.median(r[2] for r in runs)

    child([sys.executable, "-m", "mqtool.cli", "verify", "--store", str(args.store), "--format", "json"])
    checks = [
        child([sys.executable, "-m", "mqtool.cli", "verify", "--store", str(args.store), "--format", "json"])
        for _ in range(args.repeat)
    ]
    print(f"mqtool verify exit code {checks[0][0].returncode}", flush=True)
    v_wall = statistics.median(c[1] for c in checks)
    v_cpu = statistics.median(c[2] for c in checks)

    n = java["messages"]
    print(
        f"\nstore {args.store}: {n:,} messages, {java['bytes'] / 1e9:.2f} GB of records;"
        f" machine {os.cpu_count()} cores"
    )
    print(f"mqtool rows {rows:,} (cold process: {int(cold_rows):,}); medians of {args.repeat}")
    print("| what | wall s | CPU s | messages/s | vs MessageDecoder warm |")
    print("|---|---|---|---|---|")
    jw = java["warmSecondsMedian"]
    print(f"| MessageDecoder.decode, warm | {jw:.3f} | | {n / jw / 1e6:.2f} M | 1.00x |")
    print(f"| MessageDecoder.decode, once (cold JIT) | {java['onceSeconds']:.3f} | | "
          f"{n / java['onceSeconds'] / 1e6:.2f} M | {java['onceSeconds'] / jw:.2f}x |")  # fmt: skip
    print(
        f"| mqtool columnar decode, warm | {wall:.3f} | {cpu_s:.3f} | {n / wall / 1e6:.2f} M"
        f" | {wall / jw:.2f}x |"
    )
    print(f"| mqtool columnar decode, cold process | {cold_wall:.3f} | {cold_cpu:.3f} | "
          f"{n / cold_wall / 1e6:.2f} M | {cold_wall / jw:.2f}x |")  # fmt: skip
    print(
        f"| mqtool verify (new process) | {v_wall:.2f} | {v_cpu:.2f} | {n / v_wall / 1e6:.2f} M"
        f" | {v_wall / jw:.2f}x |"
    )
    print(
        f"\nMessageDecoder warm runs: {java['warmRuns']};"
        f" mqtool cold process, import + decode {float(cold_inner):.3f} s"
    )


if __name__ == "__main__":
    main()
