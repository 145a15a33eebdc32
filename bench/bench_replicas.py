"""Benchmark `replicas diff`'s commitlog comparison on two ~1 GB copies: identical, and diverged near the end.

    python bench/bench_replicas.py DIR [--create] [--size BYTES] [--repeat N]

With --create, bench/gen_store.py writes DIR/a (1 GiB commitlog files, --size record bytes, default 1 GiB);
DIR/same is a byte copy of it, DIR/diverged a copy whose last record's BORNTIMESTAMP is changed (a header
field no check reads, so both logs keep the same valid end; the first difference sits in the last
record). Then, in one run, for both pairs (median of --repeat, warm page cache - the machine is shared, so
its cache is not dropped):

* the valid ends (`CommitLog.max_offset`: the broker's recovery walk of the last three files, per side);
* the block comparison (`mqtool.replicas.logdiff.first_difference`): wall seconds and MB/s over the bytes
  read (both sides);
* `compare_commitlogs` end to end (both of the above, the record there, messages past the prefix).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mqtool.replicas.logdiff import compare_commitlogs, first_difference  # noqa: E402
from store.log.commitlog import CommitLog  # noqa: E402

BORN_AT = (
    4 + 4 + 4 + 4 + 4 + 8 + 8 + 4
)  # TOTALSIZE MAGIC BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSICALOFFSET SYSFLAG


def create(directory: Path, size: int) -> None:
    a = directory / "a"
    if not a.exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "gen_store.py"), str(a), "--size", str(size)],
                       check=True)  # fmt: skip
    for name in ("same", "diverged"):
        if not (directory / name).exists():
            shutil.copytree(a, directory / name)
    with CommitLog.open(directory / "diverged") as log:
        last = log.last_record()
        assert last is not None
        path, pos = log.locate(last.physical_offset)
    with open(path, "r+b") as f:
        f.seek(pos + BORN_AT)
        born = struct.unpack(">q", f.read(8))[0]
        f.seek(pos + BORN_AT)
        f.write(struct.pack(">q", born + 1))


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def bench_pair(a: Path, b: Path, name: str, repeat: int) -> None:
    def ends() -> tuple[int, int]:
        with CommitLog.open(a) as x, CommitLog.open(b) as y:
            return x.max_offset, y.max_offset

    t_ends, (end_a, end_b) = timed(ends, repeat)

    def compare() -> tuple[int | None, int]:
        with CommitLog.open(a) as x, CommitLog.open(b) as y:
            return first_difference(x, y, max(x.min_offset, y.min_offset), min(end_a, end_b))

    t_cmp, (diff, read) = timed(compare, repeat)

    def whole():
        with CommitLog.open(a) as x, CommitLog.open(b) as y:
            return compare_commitlogs(x, y)

    t_all, result = timed(whole, repeat)
    assert result.first_difference == diff
    print(f"{name:<10} {t_ends:>12.2f} {t_cmp:>10.2f} {read / t_cmp / 1e6:>8.0f} {t_all:>13.2f}  {diff}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--create", action="store_true")
    ap.add_argument("--size", type=int, default=1 << 30)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if args.create:
        args.dir.mkdir(parents=True, exist_ok=True)
        create(args.dir, args.size)
    print(f"{'pair':<10} {'valid ends s':>12} {'compare s':>10} {'MB/s':>8} {'end to end s':>13}  first diff")
    for name in ("same", "diverged"):
        bench_pair(args.dir / "a", args.dir / name, name, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
