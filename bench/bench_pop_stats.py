"""Benchmark `pop stats` over a revive topic of 1 M records (run by hand, never in CI).

    python bench/bench_pop_stats.py [--dir /tmp/mqtool-bench-pop-stats] [--records 100000] [--repeat 3]
        [--slow] [--fixture-files]

Builds once (cached under --dir, reused by later runs) a store with the config files of tests/data/store-
pop (written by the real 5.3.3 POP classes) and the broker's default file sizes (1 GiB commitlog files;
with --fixture-files: a copy of the whole fixture, its records, timer wheel and 1 MiB commitlog files, so
a 1 M-record revive topic spans ~470 files), and --records ck / ack / bAck records in its revive topic
`rmq_sys_REVIVE_LOG_DefaultCluster` (8 queues), appended with `CommitLogAppender` (which dispatches the
ConsumeQueues and the index) as the timer delivers them there: the properties the timer's dequeue leaves
(TIMER_OUT_MS, TIMER_DELIVER_MS, UNIQ_KEY in genCkUniqueId / genAckUniqueId form, TIMER_ENQUEUE_MS, TAGS,
TIMER_DEQUEUE_MS, REAL_TOPIC, REAL_QID) and the bodies `formats.pop.bodies`'s byte-exact writers give
(toJSONString of PopCheckPoint / AckMsg / BatchAckMsg). The traffic: six POP groups popping 1-8 messages
at a time from PopTopicA / PopTopicB, each pop a checkpoint in the revive queue of its pop; most are
acked (one `ack` per message, or one `bAck` for the whole pop), some in part, some not at all; the revive
group's offset (consumerOffset.json) covers the first 60 % of each revive queue (revived), and --now
falls so that the rest is partly past due (overdue) and partly still invisible (in flight).

Then times, cold (first call in the process) and warm (median of --repeat), wall and CPU seconds:

- the library call `pop_stats(store, now=...)`;
- with --slow, once, the sums of `pop_state(...)`: the per-record reference path (what `pop stats` ran
  before the columnar path), and checks the two agree;
- the whole command `mqtool pop stats --now ... --format json > /dev/null` once in a new process.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_timer_list import _fmt, timed  # noqa: E402
from formats.config.offsets import offset_key  # noqa: E402
from formats.pop.bodies import AckMsg, PopCheckPoint  # noqa: E402
from store.appender import CommitLogAppender, NewMessage  # noqa: E402
from store.pop.revive import REVIVE_GROUP  # noqa: E402
from store.storedir import Store  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "store-pop"
REVIVE_TOPIC = "rmq_sys_REVIVE_LOG_DefaultCluster"
REVIVE_QUEUES = 8
BROKER = "broker-a"
GROUPS = ("GID_ORDERS", "GID_PAYMENTS", "GID_AUDIT", "GID_MAIL", "GID_SEARCH", "GID_BILLING")
TOPICS = (("PopTopicA", 2), ("PopTopicB", 2))
START_MS = 1_800_000_000_000
INVISIBLE_MS = 60_000
REVIVED = 0.60  # share of each revive queue at or before the revive group's offset
SEED = 16


def _props(tag: str, uniq: str, deliver: int, queue: int) -> list[tuple[str, str]]:
    out = deliver // 1000 * 1000
    return [
        ("TIMER_OUT_MS", str(out)),
        ("TIMER_DELIVER_MS", str(deliver)),
        ("UNIQ_KEY", uniq),
        ("TIMER_ENQUEUE_MS", str((deliver - INVISIBLE_MS) // 1000 * 1000)),
        ("TAGS", tag),
        ("TIMER_DEQUEUE_MS", str(out + 40)),
        ("REAL_TOPIC", REVIVE_TOPIC),
        ("REAL_QID", str(queue)),
    ]


def traffic(n: int) -> tuple[list[tuple[int, str, str, bytes, int]], int]:
    """(revive queue, tag, UNIQ_KEY, body, deliver ms) of about `n` records, and the last pop time."""
    rng = random.Random(SEED)
    next_offset: dict[tuple[str, str, int], int] = {}
    out: list[tuple[int, str, str, bytes, int]] = []
    pop_time = START_MS
    step = max(1, 1_000_000 // n)  # about an hour of pops, whatever the size
    while len(out) < n:
        pop_time += rng.randint(1, 20) * step
        group = rng.choice(GROUPS)
        topic, queues = rng.choice(TOPICS)
        qid = rng.randrange(queues)
        num = rng.randint(1, 8)
        start = next_offset.get((group, topic, qid), 0)
        diffs = sorted(rng.sample(range(num + 3), num))  # a filtered pop skips some offsets
        diffs = [d - diffs[0] for d in diffs]
        next_offset[(group, topic, qid)] = start + diffs[-1] + 1
        revive_queue = rng.randrange(REVIVE_QUEUES)
        ck = PopCheckPoint(start, pop_time, INVISIBLE_MS, 0, num, qid, topic, group, 0, diffs, BROKER)
        head = f"{topic}@{qid}@{start}@{group}@{pop_time}@{BROKER}"
        out.append((revive_queue, "ck", f"{head}@ck", ck.to_body(), ck.revive_time - 1000))
        roll = rng.random()
        acked = diffs if roll < 0.80 else rng.sample(diffs, num // 2) if roll < 0.90 else []
        if acked and rng.random() < 0.3:
            ack = AckMsg(-1, start, group, topic, qid, pop_time, BROKER, [start + d for d in acked])
            uniq = f"{topic}@{qid}@-1@{group}@{pop_time}@{BROKER}@ack"
            out.append((revive_queue, "bAck", uniq, ack.to_body(), ck.revive_time))
            continue
        for d in acked:
            ack = AckMsg(start + d, start, group, topic, qid, pop_time, BROKER)
            uniq = f"{topic}@{qid}@{start + d}@{group}@{pop_time}@{BROKER}@ack"
            out.append((revive_queue, "ack", uniq, ack.to_body(), ck.revive_time))
    return out, pop_time


def build(root: Path, n: int, fixture_files: bool = False) -> int:
    """The store described in the module doc (skipped when --dir already holds it); gives --now."""
    if (root / "built").exists():
        return int((root / "built").read_text().split()[-1])
    records, last_pop = traffic(n)
    now = START_MS + (last_pop - START_MS) * 9 // 10  # the last tenth of the pops is not due yet
    if root.exists():
        shutil.rmtree(root)
    if fixture_files:
        shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("expect.json", "README.md"))
    else:
        (root / "config").mkdir(parents=True)
        for name in ("consumerOffset.json", "topics.json", "subscriptionGroup.json"):
            shutil.copy(FIXTURE / "config" / name, root / "config" / name)
    clock = [START_MS * 10]

    def tick() -> int:
        clock[0] += 1
        return clock[0] // 10

    with CommitLogAppender(root, now=tick, version=5) as app:
        for queue, tag, uniq, body, deliver in records:
            app.append(NewMessage(REVIVE_TOPIC, body, _props(tag, uniq, deliver, queue), queue_id=queue))
    with Store.open(root) as store:
        config = store.config("consumerOffset.json")
        model = config.load().model
        for queue in store.consume_queues.queue_ids(REVIVE_TOPIC):
            cq = store.consume_queue(REVIVE_TOPIC, queue)
            offset = cq.min_offset + int((cq.max_offset - cq.min_offset) * REVIVED)
            model.set_offset(REVIVE_TOPIC, REVIVE_GROUP, queue, offset)
        assert offset_key(REVIVE_TOPIC, REVIVE_GROUP) in model.offset_table
        config.save(model)
    (root / "built").write_text(f"{n} records, now {now}\n")
    return now


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mqtool-bench-pop-stats"))
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--slow", action="store_true", help="1 M records, and the per-record reference path")
    ap.add_argument("--fixture-files", action="store_true", help="the whole fixture, its 1 MiB files")
    args = ap.parse_args()
    n = 1_000_000 if args.slow and args.records == 100_000 else args.records
    root = args.dir / f"store-{n}{'-fixture' if args.fixture_files else ''}"
    t = time.perf_counter()
    now = build(root, n, args.fixture_files)
    size = sum(f.stat().st_size for f in (root / "commitlog").iterdir())
    print(f"store: {n:,} more revive records, commitlog {size / 1e6:,.0f} MB (made or reused in "
          f"{time.perf_counter() - t:.1f} s); --now {now}")  # fmt: skip

    from mqtool.pop import PopStats, pop_stats, summarize
    from store.pop.columns import PopColumns
    from store.pop.revive import pop_state

    def fast() -> PopStats:
        with Store.open(root) as store:
            return pop_stats(store, now=now)

    cold, warm, stats = timed(fast, args.repeat)
    totals = {
        k: sum(getattr(g, k) for g in stats.groups) for k in ("popped", "acked", "in_flight", "overdue")
    }
    print(f"pop_stats: {len(stats.groups)} groups, {totals}; cold {_fmt(cold)}, warm {_fmt(warm)}")

    if args.slow:

        def slow() -> PopStats:
            with Store.open(root) as store:
                return summarize(PopColumns.of_state(pop_state(store, now=now)))

        cold_s, _, stats_s = timed(slow, 0)
        assert stats_s.to_json() == stats.to_json(), "the reference path sums otherwise"
        print(
            f"per-record reference (before): {_fmt(cold_s)}, {cold_s[1] / warm[1]:.0f}x the columnar "
            "path's warm CPU"
        )

    cmd = [sys.executable, "-m", "mqtool.cli", "--store", str(root), "--format", "json", "pop", "stats",
           "--now", str(now)]  # fmt: skip
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"mqtool pop stats --format json > /dev/null: {_fmt((time.perf_counter() - t, cpu))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
