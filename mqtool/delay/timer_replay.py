"""`delay replay --timer`: delivering what the 5.x timer wheel has due, as TimerMessageStore's dequeue
does (`store.timer.dequeue`), offline.

`plan_timer_replay` gives the records the broker's dequeue would write from the slots between its start
read time and the slot of `now` (the delivered copies, and roll units put back into the timer topic), and
the new timercheck read time; `execute_timer_replay` appends and dispatches them, then moves
lastReadTimeMs, under the write safety rules. The broker then starts reading after those slots, so it
does not deliver them again. A record already written (a run that stopped before it moved the read
time) is recognised in its queue and not written twice. Messages not yet in the timerlog are left to the
broker's enqueue, which delivers the due ones as soon as it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from formats.message.commitlog import Message
from formats.message.properties import PROPERTY_TIMER_DEQUEUE_MS, decode_properties, split_crc32_trailer
from mqtool.delay.replay import CopyFinder, ReplayResult, destination_notes, same_delivery
from mqtool.safety import refuse_unsupported_layout
from mqtool.timeparse import human_duration, now_ms
from store.broker.messagerebuild import queue_max_offset, refuse_unclean, store_writer
from store.broker.schedule import DelayError, real_queue
from store.io.filewrites import crash_point
from store.storedir import Store
from store.timer.columns import STATE_CODE, timer_columns
from store.timer.dequeue import DequeuePlan, TimerDelivery, plan_dequeue, write_read_time
from store.timer.timerstore import TimerStore, timercheck_path


@dataclass
class TimerReplayPlan:
    dequeue: DequeuePlan
    real_topic: str | None = None  # --real-topic asked for
    not_enqueued_due: int = 0  # due, but not in the timerlog yet: the broker's enqueue delivers them
    enqueue_again: int = 0  # in the timerlog, but the broker's recovery enqueues them a second time
    notes: list[str] = field(default_factory=list)

    @property
    def now(self) -> int:
        return self.dequeue.now

    @property
    def deliveries(self) -> list[TimerDelivery]:
        return self.dequeue.deliveries

    @property
    def to_write(self) -> list[TimerDelivery]:
        return self.dequeue.to_write

    @property
    def changes_anything(self) -> bool:
        """Records to write, or slots read (their recalled, skipped or already written units): a read
        time moved only across empty slots changes nothing the broker would do."""
        return bool(self.to_write) or (self.dequeue.slots_read > 0 and self.dequeue.moves_read_time)

    def to_json(self) -> dict[str, Any]:
        d = self.dequeue
        return {
            "now": d.now,
            "realTopic": self.real_topic,
            "readTimeFrom": d.stored_read_time,
            "readTimeStart": d.read_from,
            "readTimeTo": d.read_to,
            "slotsRead": d.slots_read,
            "deliveries": [x.to_json() for x in d.deliveries],
            "notEnqueuedDue": self.not_enqueued_due,
            "enqueueAgain": self.enqueue_again,
            "notes": [*d.notes, *self.notes],
        }


def _real_topic_of(d: TimerDelivery) -> str | None:
    return None if d.source is None else real_queue(d.source)[0]


def _limit_to_topic(plan: DequeuePlan, topic: str) -> None:
    """Keep the slots before the first one that writes anything for another real topic; the read time
    stops there (the broker reads that slot and the rest itself)."""
    for i, d in enumerate(plan.deliveries):
        if d.action in ("deliver", "roll") and _real_topic_of(d) != topic:
            first_other = d.slot_ms
            kept = [x for x in plan.deliveries[:i] if x.slot_ms < first_other]
            plan.slots_read = len({x.slot_ms for x in kept})
            plan.deliveries = kept
            plan.read_to = max(plan.read_from, first_other)
            plan.notes.append(
                f"--real-topic {topic}: the slot of {first_other} holds messages for other topics; the read "
                "time stops there and the broker delivers the rest"
            )
            return


def same_timer_delivery(found: Message, planned: Message) -> bool:
    """`same_delivery`, but for TIMER_DEQUEUE_MS (the time of the put, different at each run)."""

    def props(m: Message) -> dict[str, str]:
        out = decode_properties(split_crc32_trailer(m.properties_raw)[0])
        out.pop(PROPERTY_TIMER_DEQUEUE_MS, None)
        return out

    return props(found) == props(planned) and same_delivery(
        found, replace(planned, properties_raw=found.properties_raw)
    )


def _recognise_written(store: Store, plan: DequeuePlan) -> None:
    """Deliveries whose record is already in its queue after the timer record: `done`."""
    todo = plan.to_write
    bounds: dict[tuple[str, int], int] = {}
    for d in todo:
        key = (d.record.topic, d.record.queue_id)
        bounds[key] = min(bounds.get(key, d.unit.offset_py), d.unit.offset_py)
    finder = CopyFinder(store, bounds)
    for d in todo:
        found = finder.find(d.record, d.unit.offset_py, match=same_timer_delivery)
        if found is not None:
            d.action = "done"
            d.written = found
            d.reason = (
                f"already written: {found.topic} queue {found.queue_id} offset {found.queue_offset} "
                f"(phy {found.physical_offset}); only the read time moves"
            )


def plan_timer_replay(store: Store, *, now: int, real_topic: str | None = None) -> TimerReplayPlan:
    """What the broker's timer dequeue writes when it next runs at `now` (see the module doc)."""
    refuse_unsupported_layout(store)
    timer = TimerStore.open(store)
    if timer is None:
        raise DelayError(
            "no timer files (timerlog, timerwheel, config/timercheck): nothing to replay from the wheel"
        )
    if timer.check is None:
        raise DelayError(
            "missing or short: the broker would start reading the wheel 7 days back; mqtool does not make "
            "a timercheck up",
            str(timercheck_path(store)),
        )
    dequeue = plan_dequeue(store, timer, now=now)
    if real_topic is not None:
        _limit_to_topic(dequeue, real_topic)
    _recognise_written(store, dequeue)
    next_offset: dict[tuple[str, int], int] = {}
    for d in dequeue.to_write:
        key = (d.record.topic, d.record.queue_id)
        if key not in next_offset:
            next_offset[key] = queue_max_offset(store, *key)
        d.record = replace(d.record, queue_offset=next_offset[key])
        next_offset[key] += 1
    plan = TimerReplayPlan(dequeue, real_topic)
    plan.notes.extend(destination_notes(store, [d.record for d in dequeue.to_write if d.action == "deliver"]))
    cols = timer_columns(store, timer, now=now)
    plan.not_enqueued_due = int(np.count_nonzero((cols.state == STATE_CODE["not-enqueued"]) & cols.due))
    plan.enqueue_again = int(np.count_nonzero(cols.enqueue_again))
    if plan.not_enqueued_due:
        plan.notes.append(
            f"{plan.not_enqueued_due} due message(s) are not in the timerlog yet: the broker's enqueue "
            "delivers them as soon as it starts"
        )
    if plan.enqueue_again:
        plan.notes.append(
            f"{plan.enqueue_again} message(s) past timercheck's last flush are enqueued a second time when "
            "the broker recovers (and delivered twice, with or without this replay)"
        )
    clock = now_ms()
    if now > clock and dequeue.to_write:
        plan.notes.append(
            f"--now is {human_duration(now - clock)} ahead of the clock: messages due by then are delivered "
            "early, with store times before their delivery times"
        )
    return plan


def execute_timer_replay(store: Store, plan: TimerReplayPlan, execute: bool) -> ReplayResult:
    """Write the plan: append + dispatch the records, then move timercheck's read time.

    Dry run unless `execute`; with it, the write safety rules of `mqtool.safety`. Records first, the read
    time last: a crash between leaves records the next run recognises (and does not write again).
    """
    from mqtool.safety import write_guard

    result = ReplayResult(executed=False)
    with write_guard(store, execute) as writable:
        if not writable or not plan.changes_anything:
            return result
        refuse_unclean(store)
        with Store(store.root, store.broker_config) as again:  # fresh views, under the lock
            fresh = plan_timer_replay(again, now=plan.now, real_topic=plan.real_topic)
        if [(d.unit.position, d.action) for d in fresh.deliveries] != [
            (d.unit.position, d.action) for d in plan.deliveries
        ]:
            raise DelayError("the store changed since the plan was made; run the command again")
        writer = store_writer(store, 5)
        todo = plan.to_write
        written = writer.append([d.record for d in todo]) if todo else []
        for d, w in zip(todo, written, strict=True):
            d.written = w
        result.written = written
        result.notes.extend(writer.warnings)
        crash_point("timer-appended")
        if plan.dequeue.moves_read_time:
            write_read_time(store, plan.dequeue.read_to, now_ms())
            result.delay_offset_written = True
        result.executed = True
    return result


__all__ = ["TimerReplayPlan", "execute_timer_replay", "plan_timer_replay", "same_timer_delivery"]
