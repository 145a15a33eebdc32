"""5.x timer-wheel messages (`rmq_sys_wheel_timer`, TimerMessageStore): each with its state in the timer
store (`store.timer_messages`: not-enqueued, waiting, delivered, rolled, recalled, ...), and the wheel's
backlog for `delay stats`. `delay replay --timer` replays them (`mqtool.delay.timer_replay`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from formats.timer import TIMER_BLANK_SLOTS, TIMER_WHEEL_SLOTS
from store.storedir import Store
from store.timer import TIMER_TOPIC, TimerStore
from store.timer_messages import STATES, TimerMessage, timer_messages

TIMER_REPLAY_HINT = (
    "5.x timer-wheel messages are delivered by the broker's TimerMessageStore from its wheel: "
    "replay them with `mqtool delay replay --timer`, which also moves timercheck's read time"
)
PENDING = ("waiting", "not-enqueued")  # states the broker will still deliver from
STUCK_AFTER_MS = 5 * 60_000  # the wheel's read time this far behind now, with messages due: stuck
HOUR_MS, DAY_MS = 3_600_000, 86_400_000


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


def list_timer_messages(store: Store, *, now: int) -> list[TimerRow]:
    """Messages of `rmq_sys_wheel_timer` (every queue) with their state in the timer store (see
    `store.timer_messages`; `unknown` when the store has no timer files) and whether they are due."""
    return [TimerRow.of(m) for m in timer_messages(store, TimerStore.open(store), now=now)]


def timer_summary(store: Store, *, now: int) -> TimerSummary | None:
    """None when the store has no timer topic."""
    if not store.consume_queues.queue_ids(TIMER_TOPIC):
        return None
    timer = TimerStore.open(store)
    messages = timer_messages(store, timer, now=now)
    check = None if timer is None else timer.check
    states = Counter(m.state for m in messages)
    backlog = Counter()
    overdue: list[int] = []
    for m in messages:
        if m.state not in PENDING or m.deliver_ms is None or m.delete_key is not None:
            continue
        ahead = m.deliver_ms - now
        bucket = (
            "overdue"
            if ahead <= 0
            else "nextHour"
            if ahead <= HOUR_MS
            else "nextDay"
            if ahead <= DAY_MS
            else "later"
        )
        backlog[bucket] += 1
        if ahead <= 0:
            overdue.append(m.deliver_ms)
    read_behind = None if check is None else now - check.last_read_time_ms
    # TimerMessageStore.recover moves the read time up to now less the wheel (7 days) plus 60 slots:
    # messages in slots before that are never read when the broker starts at `now`
    skipped = 0
    if timer is not None:
        horizon = now - (TIMER_WHEEL_SLOTS - TIMER_BLANK_SLOTS) * timer.precision_ms
        skipped = sum(
            m.state == "waiting" and m.slot_ms is not None and m.slot_ms < horizon for m in messages
        )
    return TimerSummary(
        len(messages),
        states["not-enqueued"],
        states["waiting"],
        sum(m.due for m in messages),
        None if check is None else check.last_read_time_ms,
        None if check is None else check.last_timer_queue_offset,
        states={s: states[s] for s in STATES if states[s]},
        backlog={b: backlog[b] for b in ("overdue", "nextHour", "nextDay", "later")},
        oldest_overdue_ms=min(overdue) if overdue else None,
        read_behind_ms=read_behind,
        stuck=bool(overdue) and read_behind is not None and read_behind > STUCK_AFTER_MS,
        skipped_on_restart=skipped,
        now_ms=now,
    )


__all__ = ["TIMER_REPLAY_HINT", "TimerRow", "TimerSummary", "list_timer_messages", "timer_summary"]
