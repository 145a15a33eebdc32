"""`delay list` and `delay stats`: what waits in SCHEDULE_TOPIC_XXXX, level by level, as the broker's
ScheduleMessageService sees it.

`list_delayed` gives every unit at or after its level's progress in delayOffset.json, with its delivery time
(the ConsumeQueue tags code, `computeDeliverTimestamp`) and whether it is due at a given time;
`delay_stats` per level the backlog, oldest due time, lateness, and progress against the queue's min and max
(with the 5.x timer-wheel summary of `mqtool.delay.timer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from formats.names import SCHEDULE_TOPIC
from mqtool.delay.timer import TimerSummary, timer_summary
from store.broker.messagerebuild import read_message_or_none
from store.broker.schedule import (
    DelayError,
    correct_deliver_timestamp,
    delay_levels,
    deliver_time,
    deliver_times,
    effective_start,
    iter_pending_units,
    load_delay_progress,
    real_queue,
    schedule_levels,
)
from store.layout import DelayLevelTable as DelayLevels
from store.storedir import Store

DEFAULT_STUCK_AFTER_MS = 60_000


# ---------------------------------------------------------------------------------------------------
# delay list


@dataclass
class DelayRow:
    """One not-yet-delivered unit of SCHEDULE_TOPIC_XXXX (JSON names of notes/json-output.md)."""

    level: int
    delay_ms: int | None
    queue_offset: int
    phy_offset: int
    size: int
    deliver_timestamp: int
    due: bool
    real_topic: str | None = None
    real_queue_id: int | None = None
    uniq_key: str | None = None
    keys: str | None = None
    tags: str | None = None
    store_timestamp: int | None = None
    born_timestamp: int | None = None
    reconsume_times: int | None = None
    late_ms: int | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "queueOffset": self.queue_offset,
            "phyOffset": self.phy_offset,
            "deliverTimestamp": self.deliver_timestamp,
            "realTopic": self.real_topic,
            "realQueueId": self.real_queue_id,
            "due": self.due,
            "uniqKey": self.uniq_key,
            "keys": self.keys,
            "delayMs": self.delay_ms,
            "size": self.size,
            "tags": self.tags,
            "storeTimestamp": self.store_timestamp,
            "bornTimestamp": self.born_timestamp,
            "reconsumeTimes": self.reconsume_times,
            "lateMs": self.late_ms,
            "note": self.note,
        }


@dataclass
class DelayListing:
    rows: list[DelayRow]
    now: int
    levels: DelayLevels
    notes: list[str] = field(default_factory=list)


def list_delayed(
    store: Store,
    *,
    now: int,
    level: int | None = None,
    only: Literal["due", "pending"] | None = None,
) -> DelayListing:
    """Every unit of SCHEDULE_TOPIC_XXXX at or after its level's progress (not yet delivered)."""
    levels = delay_levels(store)
    progress = load_delay_progress(store)
    listing = DelayListing([], now, levels, list(progress.notes))
    present = schedule_levels(store)
    if level is not None:
        if level < 1:
            raise DelayError(f"delay levels start at 1, not {level}")
        present = [lv for lv in present if lv == level]
    for lv in present:
        cq = store.consume_queue(SCHEDULE_TOPIC, lv - 1)
        delay = levels.delay_ms(lv)
        start = effective_start(progress.table.get(lv), cq.min_offset, cq.max_offset)
        if delay is None and start < cq.max_offset:
            listing.notes.append(
                f"level {lv} is not in messageDelayLevel ({levels.max_level} levels): the broker runs no "
                "delivery task for it, its messages are never delivered"
            )
        for q, phy, size, tags in iter_pending_units(store, lv, start, cq.max_offset):
            deliver, note = deliver_time(store, lv, delay, phy, size, tags)
            effective = deliver if delay is None else correct_deliver_timestamp(now, deliver, delay)
            if delay is not None and effective != deliver:
                note = "delivery time beyond now + delay: the broker delivers it at once"
            due = delay is not None and effective <= now
            if only == "due" and not due:
                continue
            if only == "pending" and due:
                continue
            row = DelayRow(
                lv, delay, q, phy, size, deliver, due, late_ms=(now - deliver) if due else None, note=note
            )
            msg = read_message_or_none(store, phy, size)
            if msg is None:
                row.note = "no message at this unit's offset: the broker skips it"
            else:
                row.real_topic, row.real_queue_id = real_queue(msg)
                row.uniq_key, row.keys, row.tags = msg.uniq_key, msg.keys, msg.tags
                row.store_timestamp, row.born_timestamp = msg.store_timestamp, msg.born_timestamp
                row.reconsume_times = msg.reconsume_times
            listing.rows.append(row)
    return listing


# ---------------------------------------------------------------------------------------------------
# delay stats


@dataclass
class LevelStats:
    level: int
    delay_ms: int | None
    queue_id: int
    min_offset: int
    max_offset: int
    progress: int | None  # as stored in delayOffset.json (None: absent)
    start: int  # where the broker's task starts (progress moved into [min, max])
    backlog: int
    due: int
    oldest_deliver_timestamp: int | None
    late_ms: int | None
    stuck: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "delayMs": self.delay_ms,
            "queueId": self.queue_id,
            "minOffset": self.min_offset,
            "maxOffset": self.max_offset,
            "delayOffset": self.progress,
            "startOffset": self.start,
            "delivered": self.start - self.min_offset,
            "backlog": self.backlog,
            "due": self.due,
            "oldestDeliverTimestamp": self.oldest_deliver_timestamp,
            "lateMs": self.late_ms,
            "stuck": self.stuck,
        }


@dataclass
class DelayStats:
    now: int
    levels: DelayLevels
    rows: list[LevelStats]
    progress_source: str
    timer: TimerSummary | None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "messageDelayLevel": self.levels.text,
            "messageDelayLevelSource": self.levels.source,
            "delayLevelTable": {str(k): v for k, v in self.levels.table.items()},
            "delayOffsetSource": self.progress_source,
            "levels": [r.to_json() for r in self.rows],
            "timer": None if self.timer is None else self.timer.to_json(),
            "notes": self.notes,
        }


def delay_stats(
    store: Store, *, now: int, stuck_after_ms: int = DEFAULT_STUCK_AFTER_MS, with_timer: bool = True
) -> DelayStats:
    """Per level: queue min/max, stored progress, backlog, due count, oldest due time, lateness; and the
    5.x timer wheel's summary unless `with_timer` is False (a caller that computes it on its own)."""
    levels = delay_levels(store)
    progress = load_delay_progress(store)
    notes = list(progress.notes)
    rows: list[LevelStats] = []
    present = set(schedule_levels(store))
    for lv in sorted(present | set(progress.table)):
        delay = levels.delay_ms(lv)
        if lv in present:
            cq = store.consume_queue(SCHEDULE_TOPIC, lv - 1)
            cq_min, cq_max = cq.min_offset, cq.max_offset
        else:
            cq_min = cq_max = 0
        stored = progress.table.get(lv)
        start = effective_start(stored, cq_min, cq_max)
        if stored is not None and stored != start:
            notes.append(
                f"level {lv}: delayOffset.json says {stored}, outside the queue's [{cq_min}, {cq_max}]; "
                f"the broker starts at {start}"
            )
        due = 0
        oldest: int | None = None
        if lv in present and start < cq_max:
            deliver = deliver_times(store, lv, delay, cq.units(start, cq_max))
            if len(deliver):
                oldest = int(deliver.min())
            if delay is not None:
                # correct_deliver_timestamp: a time further ahead than now + delay counts as now
                due = int(((deliver <= now) | (deliver > now + delay)).sum())
        late = None if oldest is None or oldest > now else now - oldest
        stuck = late is not None and (late > stuck_after_ms or delay is None)
        rows.append(
            LevelStats(
                lv, delay, lv - 1, cq_min, cq_max, stored, start, cq_max - start, due, oldest, late, stuck
            )
        )
        if delay is None and cq_max > start:
            notes.append(
                f"level {lv} is not in messageDelayLevel: its {cq_max - start} messages are never delivered"
            )
    timer = timer_summary(store, now=now) if with_timer else None
    return DelayStats(now, levels, rows, progress.source, timer, notes)
