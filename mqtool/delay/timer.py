"""5.x timer-wheel messages (`rmq_sys_wheel_timer`, TimerMessageStore): each with its state in the timer
store (`store.timer.messages`: not-enqueued, waiting, delivered, rolled, recalled, ...), and the wheel's
backlog for `delay stats`. `delay replay --timer` replays them (`mqtool.delay.timer_replay`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from formats.names import TIMER_TOPIC
from formats.timer import TIMER_BLANK_SLOTS, TIMER_WHEEL_SLOTS
from store.storedir import Store
from store.timer.columns import TimerColumns, timer_columns
from store.timer.messages import STATES, TimerMessage
from store.timer.timerstore import TimerStore

TIMER_REPLAY_HINT = (
    "5.x timer-wheel messages are delivered by the broker's TimerMessageStore from its wheel: "
    "replay them with `mqtool delay replay --timer`, which also moves timercheck's read time"
)
PENDING = ("waiting", "not-enqueued")  # states the broker will still deliver from
STUCK_AFTER_MS = 5 * 60_000  # the wheel's read time this far behind now, with messages due: stuck
HOUR_MS, DAY_MS = 3_600_000, 86_400_000


@contextmanager
def _paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class TimerRow:
    queue_offset: int
    phy_offset: int
    size: int
    deliver_timestamp: int | None  # TIMER_OUT_MS
    real_topic: str | None
    real_queue_id: int | None
    uniq_key: str | None
    keys: str | None
    store_timestamp: int | None
    roll_times: int | None
    delete_marker: str | None
    state: str  # one of store.timer_messages.STATES
    due: bool
    slot_timestamp: int | None = None  # the wheel slot its timerlog unit sits in
    timer_log_position: int | None = None
    copy_phy_offset: int | None = None  # the delivered copy in the real topic
    enqueue_again: bool = False  # the broker's recovery resumes below it: a second unit, a second delivery

    @classmethod
    def of(cls, m: TimerMessage) -> TimerRow:
        msg = m.message
        real_topic, real_qid = m.real
        return cls(
            m.queue_offset,
            m.phy_offset,
            m.size,
            m.deliver_ms,
            real_topic,
            real_qid,
            None if msg is None else msg.uniq_key,
            None if msg is None else msg.keys,
            None if msg is None else msg.store_timestamp,
            m.roll_times,
            m.delete_key,
            m.state,
            m.due,
            m.slot_ms,
            None if m.unit is None else m.unit.position,
            m.copy_phy_offset,
            m.enqueue_again,
        )

    @classmethod
    def rows_of(cls, c: TimerColumns, select: np.ndarray) -> list[TimerRow]:
        """The rows `select` (indexes) of the columnar states, as `of` makes them from TimerMessages."""
        take = pa.array(select)

        def numbers(values: np.ndarray, present: np.ndarray) -> list[int | None]:
            pairs = zip(values[select].tolist(), present[select].tolist(), strict=True)
            return [v if p else None for v, p in pairs]

        unit = c.has_unit
        columns = (
            c.queue_offset[select].tolist(),
            c.phy_offset[select].tolist(),
            c.size[select].tolist(),
            numbers(c.deliver_ms, c.has_deliver),
            c.real_topic.take(take).to_pylist(),
            numbers(c.real_queue_id, c.has_real_queue_id),
            c.uniq_key.take(take).to_pylist(),
            c.keys.take(take).to_pylist(),
            numbers(c.store_timestamp, c.found),
            numbers(c.roll_times, c.has_roll_times),
            c.delete_key.take(take).to_pylist(),
            [STATES[s] for s in c.state[select].tolist()],
            c.due[select].tolist(),
            numbers(c.slot_ms, unit),
            numbers(c.timer_log_position, unit),
            numbers(c.copy_phy_offset, c.copy_phy_offset >= 0),
            c.enqueue_again[select].tolist(),
        )
        with _paused_gc():  # hundreds of thousands of acyclic rows: collections would only re-scan them
            return [cls(*row) for row in zip(*columns, strict=True)]

    def to_json(self) -> dict[str, Any]:
        return {
            "level": None,
            "queueOffset": self.queue_offset,
            "phyOffset": self.phy_offset,
            "deliverTimestamp": self.deliver_timestamp,
            "realTopic": self.real_topic,
            "realQueueId": self.real_queue_id,
            "due": self.due,
            "uniqKey": self.uniq_key,
            "keys": self.keys,
            "topic": TIMER_TOPIC,
            "storeTimestamp": self.store_timestamp,
            "rollTimes": self.roll_times,
            "deleteUniqKey": self.delete_marker,
            "timerState": self.state,
            "slotTimestamp": self.slot_timestamp,
            "timerLogPosition": self.timer_log_position,
            "copyPhyOffset": self.copy_phy_offset,
            "enqueueAgain": self.enqueue_again,
        }


@dataclass
class TimerSummary:
    """The wheel at `now`: messages by state, the backlog by deliver time, and whether it is stuck."""

    messages: int
    not_enqueued: int
    waiting: int
    due: int
    last_read_time_ms: int | None
    last_timer_queue_offset: int | None
    states: dict[str, int] = field(default_factory=dict)
    backlog: dict[str, int] = field(default_factory=dict)  # overdue, nextHour, nextDay, later
    oldest_overdue_ms: int | None = None
    read_behind_ms: int | None = None
    stuck: bool = False
    skipped_on_restart: int = 0
    now_ms: int = 0

    @property
    def late_ms(self) -> int | None:
        """How late the oldest overdue message is at `now_ms`."""
        return None if self.oldest_overdue_ms is None else self.now_ms - self.oldest_overdue_ms

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "notEnqueued": self.not_enqueued,
            "waiting": self.waiting,
            "due": self.due,
            "lastReadTimeMs": self.last_read_time_ms,
            "lastTimerQueueOffset": self.last_timer_queue_offset,
            "states": self.states,
            "backlog": self.backlog,
            "oldestOverdueMs": self.oldest_overdue_ms,
            "lateMs": self.late_ms,
            "readBehindMs": self.read_behind_ms,
            "stuck": self.stuck,
            "skippedOnRestart": self.skipped_on_restart,
            "replay": TIMER_REPLAY_HINT,
        }


def list_timer_messages(
    store: Store, *, now: int, only: Literal["due", "pending"] | None = None
) -> list[TimerRow]:
    """Messages of `rmq_sys_wheel_timer` (every queue) with their state in the timer store (see
    `store.timer.messages`; `unknown` when the store has no timer files) and whether they are due;
    `only` "due" keeps the due ones, "pending" those the broker will still deliver that are not due yet.
    Rows are made for the kept messages only (the states come as columns, `store.timer.columns`)."""
    c = timer_columns(store, TimerStore.open(store), now=now)
    keep = c.due if only == "due" else c.pending & ~c.due if only == "pending" else np.ones(len(c), bool)
    return TimerRow.rows_of(c, np.flatnonzero(keep))


def timer_summary(store: Store, *, now: int) -> TimerSummary | None:
    """None when the store has no timer topic."""
    if not store.consume_queues.queue_ids(TIMER_TOPIC):
        return None
    timer = TimerStore.open(store)
    c = timer_columns(store, timer, now=now)
    check = None if timer is None else timer.check
    counts = np.bincount(c.state, minlength=len(STATES))
    states = dict(zip(STATES, counts.tolist(), strict=True))
    pending = c.pending & c.has_deliver
    ahead = c.deliver_ms[pending] - now
    backlog = {
        "overdue": int((ahead <= 0).sum()),
        "nextHour": int(((ahead > 0) & (ahead <= HOUR_MS)).sum()),
        "nextDay": int(((ahead > HOUR_MS) & (ahead <= DAY_MS)).sum()),
        "later": int((ahead > DAY_MS).sum()),
    }
    overdue = c.deliver_ms[pending][ahead <= 0]
    read_behind = None if check is None else now - check.last_read_time_ms
    # TimerMessageStore.recover moves the read time up to now less the wheel (7 days) plus 60 slots:
    # messages in slots before that are never read when the broker starts at `now`
    skipped = 0
    if timer is not None:
        horizon = now - (TIMER_WHEEL_SLOTS - TIMER_BLANK_SLOTS) * timer.precision_ms
        waiting = c.state == STATES.index("waiting")
        skipped = int((waiting & c.has_unit & (c.slot_ms < horizon)).sum())
    return TimerSummary(
        len(c),
        states["not-enqueued"],
        states["waiting"],
        int(c.due.sum()),
        None if check is None else check.last_read_time_ms,
        None if check is None else check.last_timer_queue_offset,
        states={s: states[s] for s in STATES if states[s]},
        backlog=backlog,
        oldest_overdue_ms=int(overdue.min()) if len(overdue) else None,
        read_behind_ms=read_behind,
        stuck=bool(len(overdue)) and read_behind is not None and read_behind > STUCK_AFTER_MS,
        skipped_on_restart=skipped,
        now_ms=now,
    )


__all__ = ["TIMER_REPLAY_HINT", "TimerRow", "TimerSummary", "list_timer_messages", "timer_summary"]
