"""Benchmark `info`, `verify` and `rebuild` (dry run) on a store with 100,000 LMQ queues (run by hand).

    python bench/bench_lmq.py [--dir /tmp/mqtool-bench-lmq] [--queues 100000] [--records 60000] [--repeat 1]

Builds once (cached under --dir, reused by later runs) a store as an LMQ broker leaves it, with mqtool's
own writers: --records messages to TopicA (4 queues), each naming 1 to 5 of --queues LMQ queues
(`%LMQ%q000000`...) in INNER_MULTI_DISPATCH, with INNER_MULTI_QUEUE_OFFSET filled as the broker's put path
fills it (each queue's next offset), appended by `CommitLogAppender`; then config/lmqConsumerOffset.json
(an LMQ group's offset on every 100th queue), which tells mqtool the broker runs with enableLmq; every
LMQ ConsumeQueue is written by `store.dispatch.Dispatcher` with LMQ on (what `rebuild --execute` runs,
here without its fsyncs). The ConsumeQueue file size is the broker's default (6,000,000 bytes, sparse).

Each command runs in a new process (`python -m mqtool.cli ... --format json > /dev/null`); wall time and
the child's peak RSS (`os.wait4`'s rusage) are printed as a Markdown table, medians of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "round-robin"  # the generator's version: a store cached by another one is written again
sys.path.insert(0, str(ROOT))


def generate(store: Path, queues: int, records: int) -> None:
    from formats.config.offsets import LmqConsumerOffsetTable
    from store.appender import CommitLogAppender, NewMessage
    from store.config.brokerconf import BrokerConfig
    from store.dispatch import Dispatcher, DispatchRequest, iter_dispatch
    from store.log.commitlog import CommitLog
    from store.queue.lmq import LmqSettings
    from store.storedir import Store

    if store.exists():
        shutil.rmtree(store)
    (store / "commitlog").mkdir(parents=True)
    next_offset = [0] * queues
    cursor = 0  # queues are named round-robin, so every one gets units once records * 3 >= queues
    t0 = time.perf_counter()
    # no LMQ markers yet: the appender writes the records, TopicA's units and the index
    with CommitLogAppender(Store(store, BrokerConfig())) as app:
        app.keep_results = False
        for i in range(records):
            names = list(dict.fromkeys((cursor + k) % queues for k in range(1 + i % 5)))
            cursor += len(names)
            props = {
                "TAGS": f"tag{i % 3}",
                "KEYS": f"key-{i}",
                "UNIQ_KEY": f"{i:032X}",
                "INNER_MULTI_DISPATCH": ",".join(f"%LMQ%q{q:06d}" for q in names),
                "INNER_MULTI_QUEUE_OFFSET": ",".join(str(next_offset[q]) for q in names),
            }
            for q in names:
                next_offset[q] += 1
            app.append(NewMessage("TopicA", b"x" * (100 + i % 200), props, queue_id=i % 4))
    # then the LMQ units, as an enableLmq broker's dispatch writes them (no fsync: bench input)
    dispatcher = Dispatcher(
        store / "consumequeue",
        None,
        now_ms=lambda: int(time.time() * 1000),
        scratch=store,
        lmq=LmqSettings(True, True, "bench"),
        durable=False,
    )
    commitlog = CommitLog.open(store)
    try:
        for item in iter_dispatch(commitlog):
            if isinstance(item, DispatchRequest):
                dispatcher.dispatch(item, index=False)
    finally:
        commitlog.close()
    dispatcher.commit()
    with Store.open(store) as st:
        table = LmqConsumerOffsetTable(with_group_topic_map=True)
        for q in range(0, queues, 100):
            table.set_offset(f"%LMQ%q{q:06d}", f"%LMQ%GID_{q}", 0, next_offset[q] // 2)
        st.config("lmqConsumerOffset.json").save(table, pretty=True)
    print(f"generated {records} records, {dispatcher.lmq_units} LMQ units in {queues} queues in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
    (store / ".complete").write_text(f"{queues} {records} {MARK}\n")


def run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one CLI process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqtool.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):  # verify exits 1 when it finds problems
        raise SystemExit(f"mqtool {' '.join(args)} failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mqtool-bench-lmq"))
    ap.add_argument("--queues", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--repeat", type=int, default=1)
    opts = ap.parse_args()
    store = opts.dir / "store"
    marker = store / ".complete"
    if not marker.exists() or marker.read_text().split() != [str(opts.queues), str(opts.records), MARK]:
        generate(store, opts.queues, opts.records)
    lmq_dirs = sum(1 for e in os.scandir(store / "consumequeue") if e.name.startswith("%LMQ%"))
    print(f"store {store}: {lmq_dirs} LMQ queues, {opts.records} records", flush=True)
    rows = []
    for name, args in (
        ("info", ["info"]),
        ("verify", ["verify"]),
        ("rebuild (dry run)", ["rebuild", "cq"]),
    ):
        runs = [run(["--store", str(store), *args, "--format", "json"]) for _ in range(opts.repeat)]
        wall = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        rows.append((name, wall, rss))
        print(f"{name}: {wall:.1f} s, peak RSS {rss:.0f} MiB", flush=True)
    print("\n| command | wall (s) | peak RSS (MiB) |\n|---|---|---|")
    for name, wall, rss in rows:
        print(f"| mqtool {name} | {wall:.1f} | {rss:.0f} |")


if __name__ == "__main__":
    main()
