"""Benchmark `mqtool trace ID` over 20 broker stores of ~1 GB each (run by hand, never in CI).

    python bench/bench_trace.py [--dir /work/bigstores/trace] [--messages 1200000] [--stores 20] [--repeat 5]
        [--workers N] [--keep]

Builds once (cached under --dir) ONE store of about 1 GB with `mqtool sample create` at the broker's real
file sizes (1 GiB commitlog files, 6,000,000-byte ConsumeQueue files, 5,000,000 hash slots and 20,000,000
entries per index file: the index files are 420 MB each), then appends trace messages to it with
`CommitLogAppender` (which dispatches their ConsumeQueue units and index entries): for every 500th
TopicTest message a Pub, a SubBefore and a SubAfter record (formats.trace encodes them as the client
does), ten contexts to a trace message in `RMQ_SYS_TRACE_TOPIC`, KEYS as the dispatcher sets them.

The 20 stores are 20 roots whose files are hard links to the one store's files: the same bytes on disk and
in the page cache, which is what a warm lookup reads (each root is opened, its config loaded, its index
files mapped, on its own). Then, for the id of a traced message, with the stores warm in the page cache:

- the library call `trace(TraceQuery(20 roots, id))` with worker processes (--workers, default one per
  core), first call in the process and the median of --repeat more (wall seconds);
- the same with one process (`--workers 1`: every store in turn);
- the whole command `mqtool trace ID --store ROOTS --format json > /dev/null` in a new process, median of
  --repeat (its imports included).

Without --keep the 20 roots and the store are deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from formats.indexfile import IndexGeometry  # noqa: E402
from formats.message.properties import PROPERTY_KEYS  # noqa: E402
from formats.trace import TRACE_TOPIC, TraceBean, TraceContext, encode_body, trace_message_keys  # noqa: E402
from store.appender import CommitLogAppender, NewMessage  # noqa: E402
from store.storedir import Store  # noqa: E402

GEOMETRY = [
    "--file-size", "1073741824", "--cq-file-size", "6000000",
    "--max-hash-slot-num", "5000000", "--max-index-num", "20000000",
]  # fmt: skip


def build(base: Path, messages: int) -> str:
    """The one store (skipped when it is there); returns the UNIQ_KEY of a traced message."""
    marker = base / "traced-id"
    if marker.exists():
        return marker.read_text().strip()
    if base.exists():
        shutil.rmtree(base)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "sample", "create", str(base), "-n", str(messages), *GEOMETRY,
         "-f", "plain"],
        check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    print(f"sample create: {time.perf_counter() - started:.0f} s", flush=True)
    with Store.open(base) as store:
        cq = store.consume_queue("TopicTest", 0)
        units = cq.units().tolist()
        traced = []
        for _q, phy, size, _tags in units[::500]:
            msg = store.commitlog.read_message_at(phy, size)
            traced.append(msg)
        last_time = max(m.store_timestamp for m in traced)
    appender = CommitLogAppender(
        base,
        file_size=1073741824,
        cq_file_size=6000000,
        index_geometry=IndexGeometry(5000000, 20000000),
        store_host=(bytes([10, 0, 3, 17]), 10911),
        now=lambda: last_time + 1000,
        copy_on_write_index=False,
    )
    contexts = []
    for m in traced:
        bean = TraceBean(
            topic=m.topic, msg_id=m.uniq_key, offset_msg_id=m.offset_msg_id, tags=m.tags or "",
            keys=m.keys or "", store_host="10.0.3.17:10911", body_length=len(m.body), msg_type="Normal_Msg",
        )  # fmt: skip
        contexts.append(
            TraceContext("Pub", m.born_timestamp, "DefaultRegion", "PG_bench", 3, True, trace_beans=(bean,))
        )
        sub = TraceBean(msg_id=m.uniq_key, retry_times=0, keys=m.keys or "")
        req = f"REQ{m.physical_offset:016X}"
        before = TraceContext(
            "SubBefore", m.store_timestamp + 50, "DefaultRegion", "GID_bench", None, None, req
        )
        contexts.append(replace(before, trace_beans=(sub,)))
        contexts.append(
            TraceContext("SubAfter", m.store_timestamp + 60, None, "GID_bench", 10, True, req, 0, (sub,))
        )
    for k in range(0, len(contexts), 10):
        batch = contexts[k : k + 10]
        props = {PROPERTY_KEYS: trace_message_keys(batch), "UNIQ_KEY": f"TRACE{k:027d}"}
        appender.append(
            NewMessage(TRACE_TOPIC, encode_body(batch), props, born_host=(bytes([192, 168, 1, 100]), 40001))
        )
    appender.close()
    uniq = traced[len(traced) // 2].uniq_key
    marker.write_text(uniq)
    return uniq


def link_roots(base: Path, fleet: Path, count: int) -> list[Path]:
    """`count` roots whose files are hard links to the base store's."""
    roots = []
    for n in range(count):
        root = fleet / f"store-{n:02d}"
        roots.append(root)
        if root.exists():
            continue
        for dirpath, _dirs, files in os.walk(base):
            rel = Path(dirpath).relative_to(base)
            (root / rel).mkdir(parents=True, exist_ok=True)
            for name in files:
                os.link(Path(dirpath) / name, root / rel / name)
    return roots


def warm(base: Path) -> None:
    """Read every file once so the lookups below find them in the page cache."""
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            with open(Path(dirpath) / name, "rb") as f:
                while f.read(16 << 20):
                    pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/work/bigstores/trace"))
    ap.add_argument("--messages", type=int, default=1_200_000)
    ap.add_argument("--stores", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    from mqtool.trace.fleet import TraceQuery, trace

    base = args.dir / "base"
    uniq = build(base, args.messages)
    size = sum(f.stat().st_size for f in (base / "commitlog").iterdir())
    used = sum(f.stat().st_blocks * 512 for f in base.rglob("*") if f.is_file())
    roots = link_roots(base, args.dir / "fleet", args.stores)
    warm(base)
    print(f"store: {size / 1e9:.2f} GB of commitlog files, {used / 1e9:.2f} GB on disk; {args.stores} roots "
          f"of hard links; traced id {uniq}", flush=True)  # fmt: skip

    def lookup(workers: int | None) -> tuple[float, object]:
        started = time.perf_counter()
        report = trace(TraceQuery(list(roots), msg_id=uniq, workers=workers))
        return time.perf_counter() - started, report

    first, report = lookup(args.workers)
    m = report.messages[0]
    found = sum(s.records > 0 for s in report.stores), sum(s.traces > 0 for s in report.stores)
    assert not report.failed and found == (args.stores, args.stores), found
    runs = [lookup(args.workers)[0] for _ in range(args.repeat)]
    single = [lookup(1)[0] for _ in range(max(1, args.repeat // 2))]
    per_store = statistics.median(s.seconds for s in report.stores)
    cli = []
    for _ in range(args.repeat):
        cmd = [sys.executable, "-m", "mqtool.cli", "trace", uniq, "--format", "json"]
        for r in roots:
            cmd += ["--store", str(r)]
        started = time.perf_counter()
        subprocess.run(
            cmd, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL
        )
        cli.append(time.perf_counter() - started)
    workers = args.workers or os.cpu_count()
    print(
        f"events per answer: {len(m.events)} ({len(m.records)} records, {len(m.traces)} trace records, "
        f"from {args.stores} stores)"
    )
    print(f"{'what':58} seconds")
    print(f"{'library, ' + str(workers) + ' worker processes, first call':58} {first:.3f}")
    print(
        f"{'library, ' + str(workers) + ' worker processes, warm (median)':58} {statistics.median(runs):.3f}"
    )
    print(f"{'library, one process, warm (median)':58} {statistics.median(single):.3f}")
    print(f"{'one store lookup inside it (median over stores)':58} {per_store:.3f}")
    print(f"{'mqtool trace in a new process, warm (median)':58} {statistics.median(cli):.3f}")
    if not args.keep:
        shutil.rmtree(args.dir)


if __name__ == "__main__":
    main()
