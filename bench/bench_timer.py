"""Benchmark reading the 5.x timer wheel (run by hand, never in CI).

    python bench/bench_timer.py [--dir /tmp/mqtool-bench-timer] [--units 10000000] [--repeat 3]

Writes a timerlog of --units units (10 M units = 520 MB) the way `TimerLog.append` lays them out: 100 MiB
files (mappedFileSizeTimerLog's default), each ending in the 16-byte blank once the next unit does not fit,
units chained backwards per slot through prevPos, one slot per second over a day. Then times, side by side
in one run (cold = first, warm = median of --repeat):

- `walk_timerlog`: every unit as TimerMessageStore's recovery accepts it (goal: <= 2 s warm on one core);
- the chains of every non-empty slot the units fill (`chain`, as the dequeue walks them);
- the construct declaration (`TimerLogUnit.parse`) on the first 100,000 units, for the ratio of the fast
  path to the declared one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from formats.structs import TIMER_LOG_UNIT_SIZE, TimerLogUnit  # noqa: E402
from formats.timer import (  # noqa: E402
    DEFAULT_TIMER_LOG_FILE_SIZE,
    MAGIC_DEFAULT,
    TIMER_LOG_BLANK_MAGIC,
    TIMER_LOG_MIN_BLANK_LEN,
    timer_log_unit_dtype,
)
from store.log.mappedfile import MappedFileQueue  # noqa: E402
from store.timer.timerstore import chain, walk_timerlog  # noqa: E402

SLOTS = 86_400  # one slot per second over a day
WRITE_MS = 1_800_000_000_000


def make_timerlog(directory: Path, units: int) -> None:
    """`units` units in 100 MiB files, each closed by a blank, chained per slot (unit i in slot i % SLOTS)."""
    if directory.is_dir() and any(directory.iterdir()):
        return
    directory.mkdir(parents=True, exist_ok=True)
    per_file = (DEFAULT_TIMER_LOG_FILE_SIZE - TIMER_LOG_MIN_BLANK_LEN) // TIMER_LOG_UNIT_SIZE
    dtype = timer_log_unit_dtype()
    file_start, i = 0, 0
    while i < units:
        n = min(per_file, units - i)
        idx = np.arange(i, i + n, dtype=np.int64)
        file_index = idx // per_file
        position = file_index * DEFAULT_TIMER_LOG_FILE_SIZE + (idx % per_file) * TIMER_LOG_UNIT_SIZE
        prev_idx = idx - SLOTS
        prev_pos = (prev_idx // per_file) * DEFAULT_TIMER_LOG_FILE_SIZE + (
            prev_idx % per_file
        ) * TIMER_LOG_UNIT_SIZE
        a = np.zeros(n, dtype)
        a["size"] = TIMER_LOG_UNIT_SIZE
        a["prevPos"] = np.where(prev_idx < 0, -1, prev_pos)
        a["magic"] = MAGIC_DEFAULT
        a["currWriteTimeMs"] = WRITE_MS
        a["delayedTime"] = (idx % SLOTS) * 1000 + 1000
        a["offsetPy"] = idx * 300
        a["sizePy"] = 300
        body = a.tobytes()
        blank = b""
        if i + n < units:  # the next unit does not fit: TimerLog.append writes a blank first
            rest = DEFAULT_TIMER_LOG_FILE_SIZE - len(body)
            blank = rest.to_bytes(4, "big") + bytes(8) + TIMER_LOG_BLANK_MAGIC.to_bytes(4, "big", signed=True)
        with open(directory / f"{file_start:020d}", "wb") as fh:
            fh.write(body + blank)
            fh.truncate(DEFAULT_TIMER_LOG_FILE_SIZE)
        assert int(position[0]) == file_start
        file_start += DEFAULT_TIMER_LOG_FILE_SIZE
        i += n


def timed(fn, repeat: int) -> tuple[float, float]:
    t = time.perf_counter()
    fn()
    cold = time.perf_counter() - t
    warm = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t)
    return cold, statistics.median(warm)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mqtool-bench-timer"))
    ap.add_argument("--units", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    log_dir = args.dir / f"timerlog-{args.units}"
    t = time.perf_counter()
    make_timerlog(log_dir, args.units)
    size = sum(f.stat().st_size for f in log_dir.iterdir())
    print(f"timerlog: {args.units:,} units in {len(list(log_dir.iterdir()))} files, {size / 1e6:,.0f} MB"
          f" (made or reused in {time.perf_counter() - t:.1f} s)")  # fmt: skip

    walk = None

    def do_walk() -> None:
        nonlocal walk
        queue = MappedFileQueue.open(log_dir)
        walk = walk_timerlog(queue)
        queue.close()

    cold, warm = timed(do_walk, args.repeat)
    assert walk is not None and len(walk) == args.units, (len(walk), walk.stop)
    print(f"walk_timerlog: cold {cold:.2f} s, warm {warm:.2f} s ({args.units / warm / 1e6:.1f} M units/s)")

    def gather() -> None:
        walk.__dict__.pop("units", None)  # the cached array: gather again
        assert len(walk.units) == args.units

    _, warm_u = timed(gather, args.repeat)
    print(f"all units into one native array (walk.units, for vectorised checks): warm {warm_u:.2f} s")
    last = walk.units["position"][-SLOTS:].tolist()

    def do_chains() -> None:
        for pos in last[:1000]:
            positions, broken = chain(walk, int(pos))
            assert broken is None

    cold_c, warm_c = timed(do_chains, args.repeat)
    per_chain = args.units / SLOTS
    print(f"chains of 1,000 slots (~{per_chain:.0f} units each): cold {cold_c:.2f} s, warm {warm_c:.2f} s"
          f" ({1000 * per_chain / warm_c / 1e6:.2f} M units/s)")  # fmt: skip

    first = (log_dir / f"{0:020d}").read_bytes()[: 100_000 * TIMER_LOG_UNIT_SIZE]
    t = time.perf_counter()
    for k in range(100_000):
        TimerLogUnit.parse(first[k * TIMER_LOG_UNIT_SIZE : (k + 1) * TIMER_LOG_UNIT_SIZE])
    declared = (time.perf_counter() - t) / 100_000
    fast = warm / args.units
    print(
        f"construct TimerLogUnit.parse: {1 / declared / 1e3:.0f} K units/s; the walk: {declared / fast:.0f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
