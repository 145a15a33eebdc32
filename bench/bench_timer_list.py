"""Benchmark `delay list --timer --due` on a 5.x timer wheel of 1 M messages (run by hand, never in CI).

    python bench/bench_timer_list.py [--dir /tmp/mqtool-bench-timer-list] [--messages 1000000] [--repeat 3]
        [--slow]

Builds once (cached under --dir, reused by later runs) a store laid out as a 5.x broker leaves it:

- --messages records in `rmq_sys_wheel_timer` queue 0 with the properties the broker's timer hook writes,
  in its stored order (TIMER_OUT_MS, TIMER_DELIVER_MS, UNIQ_KEY, CLUSTER, TAGS, KEYS, REAL_TOPIC,
  REAL_QID), appended with `CommitLogAppender` (which dispatches the ConsumeQueue and the index);
  deliver times spread over a day;
- a timerlog and timerwheel as `TimerMessageStore.doEnqueue` writes them (one unit per enqueued message,
  chained backwards per slot through prevPos; each slot's time, first and last unit, count), and
  `config/timercheck`: the first 90 % enqueued, the last 10 % not yet (at or past lastTimerQueueOffset);
  the first 25 % in slots before lastReadTimeMs (read), their copies (TIMER_ENQUEUE_MS, TIMER_DEQUEUE_MS)
  appended to the real topics except every 50th (passed); the rest waiting.

Then times, cold (first call in the process) and warm (median of --repeat), wall and CPU seconds:

- the library call `list_timer_messages(store, now=..., only="due")`, at a --now that makes about half
  of the waiting messages due;
- with --slow, once, the same through the per-message reference (`store.timer.messages.timer_messages`,
  what `delay list --timer` ran before the columnar path);
- the whole command `mqtool delay list --timer --due --format jsonl > /dev/null` once in a new process
  (cold: its own imports, numba's cached kernels, the store's files maybe in the page cache).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from formats.java.hash import java_string_hash  # noqa: E402
from formats.names import TIMER_TOPIC  # noqa: E402
from formats.structs import TIMER_LOG_UNIT_SIZE, TimerCheckpoint  # noqa: E402
from formats.timer import (  # noqa: E402
    MAGIC_DEFAULT,
    TIMER_WHEEL_FILE_SIZE,
    slot_index,
    timer_log_unit_dtype,
    timer_wheel_slot_dtype,
)
from store.appender import CommitLogAppender, NewMessage  # noqa: E402
from store.storedir import Store  # noqa: E402

STORE_MS = 1_800_000_000_000  # when the producers sent them
DAY_MS = 86_400_000
PRECISION_MS = 1000
REAL_TOPICS = [("TimerTopic", 4), ("OrderTimeouts", 4), ("PaymentRetry", 8)]
ENQUEUED, READ, PASSED_EVERY = 0.90, 0.25, 50


def deliver_ms(i: int, n: int) -> int:
    """TIMER_DELIVER_MS of message i: spread over a day after the store time."""
    return STORE_MS + 60_000 + i * DAY_MS // n + 123


def timer_out_ms(deliver: int) -> int:
    """`HookUtils.transformTimerMessage`: rounded down to the precision, one tick earlier when exact."""
    out = deliver // PRECISION_MS * PRECISION_MS
    return out - PRECISION_MS if out == deliver else out


def build(root: Path, n: int) -> None:
    """The store described in the module doc (skipped when --dir already holds it)."""
    if (root / "config" / "timercheck").exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    clock = [STORE_MS]

    def now() -> int:
        clock[0] += 1
        return clock[0] // 10  # ~10 appends per ms, like a busy producer

    clock[0] = STORE_MS * 10
    enqueued, read = int(n * ENQUEUED), int(n * READ)
    offsets = np.zeros(n, np.int64)
    sizes = np.zeros(n, np.int32)
    store_times = np.zeros(n, np.int64)
    with CommitLogAppender(root, now=now, version=5) as app:
        for i in range(n):
            topic, queues = REAL_TOPICS[i % len(REAL_TOPICS)]
            deliver = deliver_ms(i, n)
            props = [
                ("TIMER_OUT_MS", str(timer_out_ms(deliver))),
                ("TIMER_DELIVER_MS", str(deliver)),
                ("UNIQ_KEY", f"7F000001{i:024X}"),
                ("CLUSTER", "DefaultCluster"),
                ("TAGS", f"tag{i % 5}"),
                ("KEYS", f"order-{i}"),
                ("REAL_TOPIC", topic),
                ("REAL_QID", str(i % queues)),
            ]
            r = app.append(NewMessage(TIMER_TOPIC, b"%08d" % i * 12, props, queue_id=0))
            offsets[i], sizes[i], store_times[i] = r.physical_offset, r.total_size, r.store_timestamp
        for i in range(read):  # the dequeue's copies, in the real topics
            if i % PASSED_EVERY == 0:
                continue
            topic, queues = REAL_TOPICS[i % len(REAL_TOPICS)]
            deliver = deliver_ms(i, n)
            props = [
                ("TIMER_OUT_MS", str(timer_out_ms(deliver))),
                ("TIMER_DELIVER_MS", str(deliver)),
                ("UNIQ_KEY", f"7F000001{i:024X}"),
                ("CLUSTER", "DefaultCluster"),
                ("TIMER_ENQUEUE_MS", str(int(store_times[i]) // PRECISION_MS * PRECISION_MS)),
                ("TAGS", f"tag{i % 5}"),
                ("KEYS", f"order-{i}"),
                ("TIMER_DEQUEUE_MS", str(timer_out_ms(deliver) + 40)),
                ("REAL_TOPIC", topic),
                ("REAL_QID", str(i % queues)),
            ]
            app.append(NewMessage(topic, b"%08d" % i * 12, props, queue_id=i % queues))
    write_timer_files(root, offsets[:enqueued], sizes[:enqueued], store_times[:enqueued], n, read)


def write_timer_files(root: Path, offsets, sizes, store_times, n: int, read: int) -> None:
    """timerlog, timerwheel and timercheck for the enqueued messages, as doEnqueue leaves them."""
    count = len(offsets)
    deliver = np.array([timer_out_ms(deliver_ms(i, n)) for i in range(count)], np.int64)
    write_ms = store_times // PRECISION_MS * PRECISION_MS
    slot_ms = deliver // PRECISION_MS * PRECISION_MS
    positions = np.arange(count, dtype=np.int64) * TIMER_LOG_UNIT_SIZE
    # prevPos: the slot's lastPos when the unit was appended (the previous unit of the same slot)
    order = np.lexsort((positions, slot_ms))
    same = np.r_[False, slot_ms[order][1:] == slot_ms[order][:-1]]
    prev = np.full(count, -1, np.int64)
    prev[order[same]] = positions[order[:-1][same[1:]]]
    units = np.zeros(count, timer_log_unit_dtype())
    units["size"] = TIMER_LOG_UNIT_SIZE
    units["prevPos"] = prev
    units["magic"] = MAGIC_DEFAULT
    units["currWriteTimeMs"] = write_ms
    units["delayedTime"] = slot_ms - write_ms
    units["offsetPy"] = offsets
    units["sizePy"] = sizes
    hashes = {t: java_string_hash(t) for t, _ in REAL_TOPICS}
    units["hashCodeOfRealTopic"] = [hashes[REAL_TOPICS[i % len(REAL_TOPICS)][0]] for i in range(count)]
    (root / "timerlog").mkdir(exist_ok=True)
    with open(root / "timerlog" / f"{0:020d}", "wb") as fh:
        fh.write(units.tobytes())
        fh.truncate(max(100 * 1024 * 1024, count * TIMER_LOG_UNIT_SIZE + 16))
    wheel = np.zeros(TIMER_WHEEL_FILE_SIZE // 32, timer_wheel_slot_dtype())
    times, first = np.unique(slot_ms[order], return_index=True)
    last = np.r_[first[1:], count] - 1
    index = np.array([slot_index(int(t), PRECISION_MS) for t in times], np.int64)
    wheel["timeSecs"][index] = times // PRECISION_MS
    wheel["firstPos"][index] = positions[order[first]]
    wheel["lastPos"][index] = positions[order[last]]
    wheel["num"][index] = last - first + 1
    wheel.tofile(root / "timerwheel")
    check = TimerCheckpoint.build(
        {
            "lastReadTimeMs": int(slot_ms[read]),
            "lastTimerLogFlushPos": count * TIMER_LOG_UNIT_SIZE,
            "lastTimerQueueOffset": count,
            "masterTimerQueueOffset": count,
            "dataVersionStateVersion": 0,
            "dataVersionTimestamp": int(store_times[-1]),
            "dataVersionCounter": 1,
        }
    )
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "timercheck").write_bytes(check.ljust(4096, b"\0"))


def timed(fn, repeat: int) -> tuple[tuple[float, float], tuple[float, float], object]:
    """(wall, CPU) seconds of the first call and the median of `repeat` more, and the result: CPU
    seconds too, since the machines this runs on are often shared."""

    def once() -> tuple[float, float, object]:
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        return time.perf_counter() - wall, time.process_time() - cpu, result

    cold_wall, cold_cpu, result = once()
    warm = [once()[:2] for _ in range(repeat)] or [(cold_wall, cold_cpu)]
    median = (statistics.median(w for w, _ in warm), statistics.median(c for _, c in warm))
    return (cold_wall, cold_cpu), median, result


def _fmt(seconds: tuple[float, float]) -> str:
    return f"{seconds[0]:.2f} s (CPU {seconds[1]:.2f} s)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mqtool-bench-timer-list"))
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--slow", action="store_true", help="also time the per-message reference path")
    args = ap.parse_args()
    root = args.dir / f"store-{args.messages}"
    t = time.perf_counter()
    build(root, args.messages)
    size = sum(f.stat().st_size for f in (root / "commitlog").iterdir())
    print(f"store: {args.messages:,} timer messages, commitlog {size / 1e6:,.0f} MB (made or reused in "
          f"{time.perf_counter() - t:.1f} s)")  # fmt: skip
    # about half of the waiting messages are due at `now`
    n = args.messages
    now = timer_out_ms(deliver_ms(int(n * (READ + (ENQUEUED - READ) / 2)), n))

    from mqtool.delay.timer import TimerRow, list_timer_messages
    from store.timer.messages import timer_messages
    from store.timer.timerstore import TimerStore

    def fast() -> list[TimerRow]:
        with Store.open(root) as store:
            return list_timer_messages(store, now=now, only="due")

    cold, warm, rows = timed(fast, args.repeat)
    print(f"list_timer_messages(only='due'): {len(rows):,} due rows; cold {_fmt(cold)}, warm {_fmt(warm)}")

    if args.slow:

        def slow() -> list[TimerRow]:
            with Store.open(root) as store:
                messages = timer_messages(store, TimerStore.open(store), now=now)
                return [TimerRow.of(m) for m in messages if m.due]

        cold_s, _, rows_s = timed(slow, 0)
        assert rows_s == rows, "the reference path lists other rows"
        print(
            f"per-message reference (before): {_fmt(cold_s)}, {cold_s[1] / warm[1]:.0f}x the columnar "
            "path's warm CPU"
        )

    cmd = [sys.executable, "-m", "mqtool.cli", "--store", str(root), "delay", "list", "--timer", "--due",
           "--now", str(now), "--format", "jsonl"]  # fmt: skip
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    wall = time.perf_counter() - t
    print(f"mqtool delay list --timer --due --format jsonl > /dev/null: {_fmt((wall, cpu))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
