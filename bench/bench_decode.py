"""Benchmark the columnar CommitLog decoder against page-cache reads and the construct decoder.

    python bench/bench_decode.py STORE_DIR [--sample N] [--repeat N]

STORE_DIR holds commitlog/ (e.g. written by bench/gen_store.py, under /tmp). Prints, for the same files:
a plain `cat` (page-cache limit), the columnar decode in a cold process (interpreter start, imports and
loading the cached numba code included) and warm in this process (default columns; with body CRC
check; with bodies; every file cut into one byte range per CPU decoded by threads), the struct-read
recovery walk (`CommitLog.walk_end`, what `info` and the recovery end use; with and without CRC), and the
construct decoder over the first N records, extrapolated to the store; last, the dictionary of a million
distinct born hosts (the compiled formatter against one Python call per host). Wall and CPU seconds are both
shown: on a busy machine CPU time is the better per-core figure.
Not run by the tests.
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLD = """
import mmap, sys
from formats.columnar.decoder import decode_range
from pathlib import Path
rows = 0
for p in sorted(Path(sys.argv[1]).iterdir()):
    with open(p, "rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    batch = decode_range(buf, int(p.name))
    rows += batch.num_rows
    if batch.column("status")[batch.num_rows - 1].as_py() != "blank":
        break
print(rows)
"""


def commitlog_files(store: Path) -> list[Path]:
    return sorted((store / "commitlog").iterdir())


def mapped(path: Path) -> mmap.mmap:
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def values(arr) -> np.ndarray:
    """A null-free numeric Arrow array as numpy, without pyarrow's to_numpy (which imports pandas)."""
    dtype = np.dtype(arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def decode_store(files: list[Path], **options) -> tuple[int, int]:
    """(messages, bytes of records) of a whole-store walk."""
    from formats.columnar.decoder import decode_range

    messages = 0
    data = 0
    for path in files:
        batch = decode_range(mapped(path), int(path.name), **options)
        status = values(batch.column("status").indices)
        ok = status == 0
        messages += int(ok.sum())
        data += int(values(batch.column("totalSize"))[ok].sum())
        if batch.num_rows and status[-1] != 1:
            break
    return messages, data


def _cpu() -> float:
    """CPU seconds of this process and its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """Median wall seconds, median CPU seconds and the last result of `repeat` runs."""
    walls, cpus = [], []
    result = None
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return statistics.median(walls), statistics.median(cpus), result


HEADER = f"{'':<50} {'wall s':>8} {'CPU s':>8} {'M msg/s wall':>13} {'CPU':>6} {'MB/s wall':>10} {'CPU':>6}"


def line(label: str, wall: float, cpu: float, messages: int, data: int) -> None:
    print(
        f"{label:<50} {wall:8.3f} {cpu:8.3f} {messages / wall / 1e6:13.2f} {messages / cpu / 1e6:6.2f}"
        f" {data / wall / 1e6:10.0f} {data / cpu / 1e6:6.0f}"
    )


def decode_threaded(files: list[Path], threads: int) -> tuple[int, int]:
    """The store's files cut into `threads` byte ranges each, decoded by a thread pool (join_splits)."""
    from concurrent.futures import ThreadPoolExecutor

    from formats.columnar.decoder import decode_resync, join_splits

    messages = data = 0
    with ThreadPoolExecutor(threads) as pool:
        for path in files:
            buf = mapped(path)
            size = len(buf)
            edges = [size * k // threads for k in range(threads + 1)]
            base = int(path.name)
            ranges = list(zip(edges, edges[1:], strict=False))
            parts = pool.map(lambda r, buf=buf, base=base: decode_resync(buf, base, *r), ranges)
            table = join_splits(list(parts))
            status = values(table.column("status").combine_chunks().indices)
            ok = status == 0
            messages += int(ok.sum())
            data += int(values(table.column("totalSize").combine_chunks())[ok].sum())
            if table.num_rows and status[-1] != 1:
                break
    return messages, data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--sample", type=int, default=20000, help="records for the construct decoder")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    files = commitlog_files(args.store)
    file_bytes = sum(p.stat().st_size for p in files)

    cat = ["cat", *map(str, files)]
    subprocess.run(cat, stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    messages, data = decode_store(files)
    print(
        f"{len(files)} files, {file_bytes / 1e6:.0f} MB; {messages} messages, {data / 1e6:.0f} MB of records"
    )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times suffer when it is high)"
    )
    print(HEADER)
    t_cat, c_cat, _ = timed(lambda: subprocess.run(cat, stdout=subprocess.DEVNULL, check=True), args.repeat)
    print(
        f"{'cat of all files (page cache)':<50} {t_cat:8.3f} {c_cat:8.3f} {'':>13} {'':>6}"
        f" {file_bytes / t_cat / 1e6:10.0f} {file_bytes / c_cat / 1e6:6.0f}"
    )

    def cold():
        out = subprocess.run(
            [sys.executable, "-c", COLD, str(args.store / "commitlog")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.split()

    t_cold, c_cold, _ = timed(cold, args.repeat)
    line("columnar, cold process (start+import+decode)", t_cold, c_cold, messages, data)
    for label, options in (
        ("columnar, warm", {}),
        ("columnar, warm, check_crc", {"check_crc": True}),
        ("columnar, warm, with_body", {"with_body": True}),
    ):
        t, c, (m, d) = timed(lambda options=options: decode_store(files, **options), args.repeat)
        line(label, t, c, m, d)
    threads = os.cpu_count() or 1
    t, c, (m, d) = timed(lambda: decode_threaded(files, threads), args.repeat)
    assert (m, d) == (messages, data), "split decode differs from the whole-file decode"
    line(f"columnar, warm, {threads} threads over byte-range splits", t, c, m, d)

    from store.log.commitlog import CommitLog

    commitlog = CommitLog.open(args.store)
    first = commitlog.files[0].start_offset
    for label, crc in (
        ("recordcheck walk (CommitLog.walk_end)", False),
        ("recordcheck walk, check_crc", True),
    ):
        t, c, _ = timed(lambda crc=crc: commitlog.walk_end(first, check_crc=crc), args.repeat)
        line(label, t, c, messages, data)

    from formats.message.commitlog import Message, decode_record

    buf = mapped(files[0])
    base = int(files[0].name)
    c0, t0 = _cpu(), time.perf_counter()
    pos = count = 0
    while count < args.sample:
        rec = decode_record(buf, pos, base, check_crc=False)
        if not isinstance(rec, Message):
            break
        pos += rec.total_size
        count += 1
    scale = messages / count
    t_construct, c_construct = (time.perf_counter() - t0) * scale, (_cpu() - c0) * scale
    line(f"construct decoder ({count} records, extrapolated)", t_construct, c_construct, messages, data)
    host_dictionary(args.repeat)
    return 0


def host_dictionary(repeat: int, hosts: int = 1_000_000, ipv6_share: float = 0.005) -> None:
    """A store whose producers connect briefly has about one born host (address and port) per message:
    the dictionary of distinct hosts (`ipv6_share` of them IPv6), formatted by the compiled kernel and by
    one Python call per host."""
    from formats.columnar.decoder import _hosts, _strings
    from formats.message.msgid import host_str

    rng = np.random.default_rng(1)
    lengths = np.where(rng.random(hosts) < ipv6_share, 20, 8).astype(np.int64)
    reps = np.zeros((hosts, 3), dtype=np.int64)
    reps[1:, 0] = np.cumsum(lengths)[:-1]
    reps[:, 1] = lengths
    raw = rng.integers(0, 256, size=int(lengths.sum()), dtype=np.uint8)

    def one_by_one():
        texts = []
        for o, n, _ in reps:
            h = raw[o : o + n].tobytes()
            texts.append(host_str(h[:-4], int.from_bytes(h[-4:], "big", signed=True)))
        return _strings(texts)

    t_fast, c_fast, fast = timed(lambda: _hosts(raw, reps), repeat)
    t_py, c_py, slow = timed(one_by_one, repeat)
    assert fast.equals(slow)
    print(
        f"host dictionary of {hosts:,} distinct hosts ({ipv6_share:.1%} IPv6): compiled {t_fast:.3f} s wall"
        f" ({c_fast:.3f} CPU),"
    )
    print(f"  one Python call per host {t_py:.3f} s wall ({c_py:.3f} CPU): {t_py / t_fast:.1f}x")


if __name__ == "__main__":
    raise SystemExit(main())
