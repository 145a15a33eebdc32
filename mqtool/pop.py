"""POP consumption offline (`mqtool pop ...`): what POP consumers hold, per group — in flight and invisible
until when, overdue and waiting for the revive service, revived into the retry topic, acked.

`pop_list` gives every popped message the revive topic knows (store.pop.pop_state) with filters;
`pop_stats` sums it per group and per revive queue: in flight, the oldest invisible-until, the revive
backlog (overdue messages, the revive queue's records after the revive group's offset) and how late it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from formats.errors import UsageError
from store.pop.columns import PopColumns, pop_columns
from store.pop.revive import STATES, PoppedMessage, pop_state
from store.storedir import Store


@dataclass
class PopListing:
    now: int
    revive_topic: str | None
    rows: list[PoppedMessage]
    notes: list[str] = field(default_factory=list)


def pop_list(
    store: Store,
    *,
    now: int,
    group: str | None = None,
    topic: str | None = None,
    states: Iterable[str] | None = None,
) -> PopListing:
    """Popped messages (not acked ones unless `states` asks for `acked`), oldest pop first."""
    wanted = set(states) if states is not None else {"in-flight", "overdue", "revived"}
    unknown = wanted - set(STATES)
    if unknown:
        raise UsageError(f"unknown POP state {sorted(unknown)[0]!r} (one of {', '.join(STATES)})")
    state = pop_state(store, now=now)
    rows = [
        m
        for m in state.messages
        if m.state in wanted and (group is None or m.group == group) and (topic is None or m.topic == topic)
    ]
    rows.sort(key=lambda m: (m.pop_time, m.group, m.topic, m.queue_id, m.queue_offset))
    notes = list(state.notes)
    if state.revive_topic is None:
        notes.append("no revive topic (rmq_sys_REVIVE_LOG_*) in this store: no POP checkpoint was written")
    return PopListing(now, state.revive_topic, rows, notes)


def late_ms(now: int, oldest_overdue: int | None) -> int | None:
    """How late the oldest overdue message is: `now` minus its revive time."""
    return None if oldest_overdue is None else now - oldest_overdue


@dataclass
class GroupPopStats:
    group: str
    popped: int = 0
    acked: int = 0
    in_flight: int = 0
    overdue: int = 0
    revived: int = 0
    oldest_invisible_until: int | None = None  # of the in-flight ones
    oldest_overdue: int | None = None  # revive time of the oldest overdue one
    now: int = 0

    @property
    def late_ms(self) -> int | None:
        return late_ms(self.now, self.oldest_overdue)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "popped": self.popped,
            "acked": self.acked,
            "inFlight": self.in_flight,
            "overdue": self.overdue,
            "revived": self.revived,
            "oldestInvisibleUntil": self.oldest_invisible_until,
            "oldestOverdue": self.oldest_overdue,
            "lateMs": self.late_ms,
        }


@dataclass
class ReviveQueueStats:
    queue_id: int
    min_offset: int
    max_offset: int
    revive_offset: int | None
    backlog: int  # records after the revive offset
    in_timer: int  # ck / ack records still in the timer wheel
    overdue: int  # overdue messages whose checkpoint is in this queue
    oldest_overdue: int | None
    now: int = 0

    @property
    def late_ms(self) -> int | None:
        return late_ms(self.now, self.oldest_overdue)

    def to_json(self) -> dict[str, Any]:
        return {
            "reviveQueue": self.queue_id,
            "minOffset": self.min_offset,
            "maxOffset": self.max_offset,
            "reviveOffset": self.revive_offset,
            "backlog": self.backlog,
            "inTimer": self.in_timer,
            "overdue": self.overdue,
            "oldestOverdue": self.oldest_overdue,
            "lateMs": self.late_ms,
        }


@dataclass
class PopStats:
    now: int
    revive_topic: str | None
    groups: list[GroupPopStats]
    queues: list[ReviveQueueStats]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "reviveTopic": self.revive_topic,
            "groups": [g.to_json() for g in self.groups],
            "reviveQueues": [q.to_json() for q in self.queues],
            "notes": self.notes,
        }


def _oldest(values: np.ndarray, where: np.ndarray) -> int | None:
    return int(values[where].min()) if where.any() else None


def summarize(cols: PopColumns) -> PopStats:
    """Per group and per revive queue sums of the checkpoints' columns (store.pop_columns): a
    checkpoint's unacked messages are all revived, in flight (before its revive time) or overdue."""
    now = cols.now
    unacked = cols.unacked
    in_flight = ~cols.revived & np.asarray(np.asarray(cols.revive_time) > now, bool)
    overdue = ~cols.revived & ~in_flight
    held = unacked > 0
    times = np.asarray(cols.revive_time)
    groups = []
    names = np.array(cols.group, object)
    for name in sorted(cols.groups()):
        mine = names == name
        groups.append(
            GroupPopStats(
                name,
                int(cols.messages[mine].sum()),
                int(cols.acked[mine].sum()),
                int(unacked[mine & in_flight].sum()),
                int(unacked[mine & overdue].sum()),
                int(unacked[mine & cols.revived].sum()),
                _oldest(times, mine & in_flight & held),
                _oldest(times, mine & overdue & held),
                now,
            )
        )
    queues = []
    for q in cols.queues:
        after = q.min_offset if q.revive_offset is None else max(q.min_offset, q.revive_offset + 1)
        mine = (cols.revive_queue == q.queue_id) & overdue & held
        queues.append(
            ReviveQueueStats(
                q.queue_id,
                q.min_offset,
                q.max_offset,
                q.revive_offset,
                max(0, q.max_offset - after),
                q.in_timer,
                int(unacked[mine].sum()),
                _oldest(times, mine),
                now,
            )
        )
    return PopStats(now, cols.revive_topic, groups, queues, list(cols.notes))


def pop_stats(store: Store, *, now: int) -> PopStats:
    """`pop stats`: the sums of the checkpoints' columns (`store.pop.columns`, the fast twin of
    `pop_state`)."""
    return summarize(pop_columns(store, now=now))


__all__ = [
    "GroupPopStats",
    "PopListing",
    "PopStats",
    "ReviveQueueStats",
    "pop_list",
    "pop_stats",
    "late_ms",
    "summarize",
]
