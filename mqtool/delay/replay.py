"""`delay replay`: delivering what is due exactly as ScheduleMessageService's
`DeliverDelayedMessageTimerTask.executeOnTimeUp` does, offline.

`plan_replay` gives the exact records `executeOnTimeUp` would write now (`messageTimeUp`: properties
re-serialised in the broker's Java `HashMap` order, with the 4.9.x or 5.x separator style), and the new
progress; `execute_replay` appends and dispatches them and advances `delayOffset.json`, under the write
safety rules. A second run finds nothing due that was already delivered (`CopyFinder`), so nothing is
delivered twice. Timer-wheel messages are counted here and replayed by `mqtool.delay.timer_replay`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from formats.message.properties import (
    CRC32_RESERVED_LEN,
    split_crc32_trailer,
)
from formats.names import SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC
from mqtool.delay.timer import TIMER_REPLAY_HINT
from mqtool.safety import refuse_unsupported_layout
from mqtool.timeparse import human_duration, now_ms
from store.broker.messagerebuild import (
    broker_major,
    planned_json,
    queue_max_offset,
    read_message_or_none,
    refuse_unclean,
    store_writer,
    units_after,
)
from store.broker.schedule import (
    DELAY_OFFSET,
    DelayError,
    correct_deliver_timestamp,
    delay_levels,
    deliver_time,
    effective_start,
    iter_pending_units,
    load_delay_progress,
    message_time_up,
    schedule_levels,
)
from store.io.filewrites import crash_point
from store.layout import DelayLevelTable as DelayLevels
from store.storedir import Store
from store.version import BrokerVersion

Action = Literal["deliver", "done", "skip", "drop", "stop"]


@dataclass
class Delivery:
    """One unit the replay looks at, and what `executeOnTimeUp` does with it."""

    level: int
    queue_offset: int  # in SCHEDULE_TOPIC_XXXX queue level-1
    phy_offset: int
    size: int
    deliver_timestamp: int
    action: Action
    reason: str | None = None
    source: Message | None = None
    record: Message | None = None  # the record to write (deliver)
    written: Message | None = None  # what was written (after execute)

    def to_json(self) -> dict[str, Any]:
        rec = self.written or self.record
        return {
            "level": self.level,
            "queueOffset": self.queue_offset,
            "phyOffset": self.phy_offset,
            "deliverTimestamp": self.deliver_timestamp,
            "action": self.action,
            "reason": self.reason,
            "realTopic": None if rec is None else rec.topic,
            "realQueueId": None if rec is None else rec.queue_id,
            "uniqKey": None if self.source is None else self.source.uniq_key,
            "keys": None if self.source is None else self.source.keys,
            "newQueueOffset": None if rec is None else rec.queue_offset,
            "newPhyOffset": None if self.written is None else self.written.physical_offset,
            "newStoreTimestamp": None if self.written is None else self.written.store_timestamp,
            "record": None if rec is None else planned_json(rec, written=self.written is not None),
        }


@dataclass
class ReplayPlan:
    broker: BrokerVersion
    now: int
    levels: DelayLevels
    deliveries: list[Delivery]
    progress_before: dict[int, int]  # delayOffset.json as loaded
    progress_after: dict[int, int]  # what it will hold
    timer_messages: int = 0
    notes: list[str] = field(default_factory=list)
    level: int | None = None  # the --level asked for

    @property
    def to_deliver(self) -> list[Delivery]:
        return [d for d in self.deliveries if d.action == "deliver"]

    @property
    def progress_changes(self) -> list[tuple[int, int | None, int]]:
        return [
            (lv, self.progress_before.get(lv), new)
            for lv, new in sorted(self.progress_after.items())
            if self.progress_before.get(lv) != new
        ]

    @property
    def changes_anything(self) -> bool:
        return bool(self.to_deliver or self.progress_changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerVersion": self.broker.major,
            "brokerVersionReason": self.broker.reason,
            "now": self.now,
            "deliveries": [d.to_json() for d in self.deliveries],
            "delayOffset": [{"level": lv, "from": old, "to": new} for lv, old, new in self.progress_changes],
            "timerMessages": self.timer_messages,
            "timerReplay": TIMER_REPLAY_HINT if self.timer_messages else None,
            "notes": self.notes,
        }


def plan_replay(
    store: Store, *, now: int, level: int | None = None, broker_version: int | None = None
) -> ReplayPlan:
    """What `executeOnTimeUp` of every level (or just `level`) would do at `now`, record by record.

    Per level, from its progress moved into the queue's [min, max]: a due unit is delivered (a unit
    whose record is missing is skipped; one whose real topic is RMQ_SYS_TRANS_HALF_TOPIC is dropped), the
    first unit not yet due stops the level. New progress: after the last delivered unit, and on 5.x also
    the offset of the unit the level stopped at (`updateOffset(currOffset)`); 5.x also keeps the
    `correctDelayOffset` clamp. Queue offsets of the new records are planned from the real queues' max
    offsets; physical offset and store time are the append's.
    """
    refuse_unsupported_layout(store)
    broker = broker_major(store, broker_version)
    levels = delay_levels(store)
    progress = load_delay_progress(store)
    plan = ReplayPlan(
        broker,
        now,
        levels,
        [],
        dict(progress.table),
        dict(progress.table),
        notes=list(progress.notes),
        level=level,
    )
    present = schedule_levels(store)
    if level is not None:
        if level < 1:
            raise DelayError(f"delay levels start at 1, not {level}")
        present = [lv for lv in present if lv == level]
    for lv in present:
        delay = levels.delay_ms(lv)
        cq = store.consume_queue(SCHEDULE_TOPIC, lv - 1)
        stored = progress.table.get(lv)
        start = effective_start(stored, cq.min_offset, cq.max_offset)
        if delay is None:
            if start < cq.max_offset:
                plan.notes.append(
                    f"level {lv} is not in messageDelayLevel: the broker has no task for it, "
                    "nothing is delivered"
                )
            continue
        if broker.major >= 5 and stored is not None and stored != start:
            plan.progress_after[lv] = start  # correctDelayOffset at load
        for q, phy, size, tags in iter_pending_units(store, lv, start, cq.max_offset):
            deliver, _ = deliver_time(store, lv, delay, phy, size, tags)
            if correct_deliver_timestamp(now, deliver, delay) > now:
                plan.deliveries.append(Delivery(lv, q, phy, size, deliver, "stop", "not due yet"))
                if broker.major >= 5:
                    plan.progress_after[lv] = q
                break
            msg = read_message_or_none(store, phy, size)
            if msg is None:
                plan.deliveries.append(
                    Delivery(
                        lv,
                        q,
                        phy,
                        size,
                        deliver,
                        "skip",
                        "no message at this offset (lookMessageByOffset null)",
                    )
                )
                continue
            try:
                record = message_time_up(msg, broker.major, store_timestamp=now)
            except DelayError as exc:
                plan.deliveries.append(Delivery(lv, q, phy, size, deliver, "stop", str(exc), msg))
                plan.notes.append(
                    f"level {lv} stops at queue offset {q}: {exc}; nothing after it is delivered"
                )
                break
            if record.topic == TRANS_HALF_TOPIC:
                plan.deliveries.append(
                    Delivery(
                        lv,
                        q,
                        phy,
                        size,
                        deliver,
                        "drop",
                        "real topic is RMQ_SYS_TRANS_HALF_TOPIC: discarded",
                        msg,
                    )
                )
                continue
            plan.deliveries.append(Delivery(lv, q, phy, size, deliver, "deliver", None, msg, record))
            plan.progress_after[lv] = q + 1
    _recognise_delivered(store, plan.deliveries)
    next_queue_offset: dict[tuple[str, int], int] = {}
    for d in plan.to_deliver:
        key = (d.record.topic, d.record.queue_id)
        if key not in next_queue_offset:
            next_queue_offset[key] = queue_max_offset(store, *key)
        d.record = replace(d.record, queue_offset=next_queue_offset[key])
        next_queue_offset[key] += 1
    plan.notes.extend(destination_notes(store, [d.record for d in plan.to_deliver]))
    clock = now_ms()
    if now > clock and plan.to_deliver:
        plan.notes.append(
            f"--now is {human_duration(now - clock)} ahead of the clock: messages due by then are delivered "
            "early, with store times before their delivery times"
        )
    plan.timer_messages = sum(1 for _ in _timer_units(store))
    if plan.timer_messages:
        plan.notes.append(f"{plan.timer_messages} message(s) in rmq_sys_wheel_timer: {TIMER_REPLAY_HINT}")
    return plan


def _timer_units(store: Store) -> Iterator[int]:
    for queue_id in store.consume_queues.queue_ids(TIMER_TOPIC):
        cq = store.consume_queue(TIMER_TOPIC, queue_id)
        yield from range(cq.min_offset, cq.max_offset)


def same_delivery(found: Message, planned: Message) -> bool:
    """Is `found` the record `planned` describes, but for STORETIMESTAMP, QUEUEOFFSET, PHYSICALOFFSET
    (and a 5.2+ property CRC trailer, which covers those)?"""
    return (
        found.topic == planned.topic
        and found.queue_id == planned.queue_id
        and found.body == planned.body
        and found.flag == planned.flag
        and found.sys_flag == planned.sys_flag
        and found.born_timestamp == planned.born_timestamp
        and found.born_host == planned.born_host
        and found.born_port == planned.born_port
        and found.store_host == planned.store_host
        and found.store_port == planned.store_port
        and found.reconsume_times == planned.reconsume_times
        and found.prepared_transaction_offset == planned.prepared_transaction_offset
        and split_crc32_trailer(found.properties_raw)[0] == split_crc32_trailer(planned.properties_raw)[0]
    )


class CopyFinder:
    """Finds records already in a real queue that equal planned ones (written by the broker, or by an
    earlier run that stopped before it could record its progress), each found record used once."""

    def __init__(self, store: Store, bounds: dict[tuple[str, int], int]) -> None:
        self.store = store
        self.units = {key: units_after(store, key[0], key[1], phy) for key, phy in bounds.items()}
        self.used: set[int] = set()

    def find(self, planned: Message, after_phy: int, match=same_delivery) -> Message | None:
        units = self.units.get((planned.topic, planned.queue_id))
        if units is None or not len(units):
            return None
        tags = planned.tags_code()
        sizes = {planned.total_size, planned.total_size + CRC32_RESERVED_LEN}
        hits = units[
            (units["phyOffset"] > after_phy)
            & (units["tagsCode"] == tags)
            & np.isin(units["size"], list(sizes))
        ]
        for phy, size in zip(hits["phyOffset"].tolist(), hits["size"].tolist(), strict=True):
            if phy in self.used:
                continue
            found = read_message_or_none(self.store, phy, size)
            if found is not None and match(found, planned):
                self.used.add(phy)
                return found
        return None


def _recognise_delivered(store: Store, deliveries: list[Delivery]) -> None:
    """Mark deliveries whose record is already in the real queue after the schedule record as `done`."""
    todo = [d for d in deliveries if d.action == "deliver"]
    bounds: dict[tuple[str, int], int] = {}
    for d in todo:
        key = (d.record.topic, d.record.queue_id)
        bounds[key] = min(bounds.get(key, d.phy_offset), d.phy_offset)
    finder = CopyFinder(store, bounds)
    for d in todo:
        found = finder.find(d.record, d.phy_offset)
        if found is not None:
            d.action = "done"
            d.written = found
            d.reason = (
                f"already delivered: {found.topic} queue {found.queue_id} offset {found.queue_offset} "
                f"(phy {found.physical_offset}) is this record; only the progress moves"
            )


def destination_notes(store: Store, records: list[Message]) -> list[str]:
    """Notes where a real queue is not readable by consumers (not in topics.json or past readQueueNums)."""
    try:
        topics = store.config("topics.json").load().model.topic_config_table
    except MqtoolError:
        return []
    notes: list[str] = []
    for key in dict.fromkeys((r.topic, r.queue_id) for r in records):
        config = topics.get(key[0])
        if config is None:
            notes.append(f"{key[0]} is not in topics.json: consumers will not find queue {key[1]}")
        elif key[1] >= config.read_queue_nums:
            notes.append(f"{key[0]} queue {key[1]} is past readQueueNums {config.read_queue_nums}")
    return notes


# ---------------------------------------------------------------------------------------------------
# delay replay: execution


@dataclass
class ReplayResult:
    executed: bool
    written: list[Message] = field(default_factory=list)
    delay_offset_written: bool = False
    notes: list[str] = field(default_factory=list)


def execute_replay(store: Store, plan: ReplayPlan, execute: bool) -> ReplayResult:
    """Write the plan: append + dispatch the delivered records, then advance delayOffset.json.

    Dry run unless `execute`; with it, the write safety rules of `mqtool.safety` (no broker may hold the
    store lock; we hold it while writing). The order makes a crash harmless: records first, progress
    last, and the progress is re-derived at the next run from the queues (a record already delivered is
    recognised by its UNIQ_KEY in the real queue after the schedule record, so it is not delivered twice).
    """
    from mqtool.safety import write_guard

    result = ReplayResult(executed=False)
    with write_guard(store, execute) as writable:
        if not writable or not plan.changes_anything:
            return result
        refuse_unclean(store)
        writer = store_writer(store, plan.broker.major)
        with Store(store.root, store.broker_config) as again:  # fresh views, under the lock
            fresh = plan_replay(again, now=plan.now, level=plan.level, broker_version=plan.broker.major)
        if [(d.level, d.queue_offset, d.action) for d in fresh.deliveries] != [
            (d.level, d.queue_offset, d.action) for d in plan.deliveries
        ]:
            raise DelayError("the store changed since the plan was made; run the command again")
        records = [d.record for d in plan.to_deliver]
        written = writer.append(records) if records else []
        for d, w in zip(plan.to_deliver, written, strict=True):
            d.written = w
        result.written = written
        result.notes.extend(writer.warnings)
        crash_point("delay-appended")
        if plan.progress_changes:
            model = load_delay_progress(store).model
            for lv, _old, new in plan.progress_changes:
                model.offset_table[lv] = new
            store.config(DELAY_OFFSET).save(model)
            result.delay_offset_written = True
        result.executed = True
    return result
