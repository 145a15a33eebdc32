"""TimerMessageStore's dequeue, offline: what the 5.x broker delivers from the wheel when it next runs.

`plan_dequeue` reads the wheel as `TimerMessageStore.dequeue` does — the wheel as `recover()` revises it
from the timerlog (`recovered_wheel`) — slot by slot from the read time
`recover()` settles (timercheck's lastReadTimeMs, or now - 7 days + 60 slots when that is older) up to
the current slot (`currReadTimeMs < currWriteTimeMs`: the slot of `now` itself is read in the next tick).
A slot counts only when its stored time is its own (`TimerWheel.getSlot`). Its chain is read newest
first; recall tombstones (MAGIC_DELETE without MAGIC_ROLL) are read before the rest and name the messages
the slot drops (`REAL_TOPIC + "+" + UNIQ_KEY`); the others go out oldest first
(TimerDequeueGetMessageService, TimerDequeuePutMessageService):

- `deliver`: `convert` + `convertMessage` — TIMER_ENQUEUE_MS (the unit's enqueue time) and
  TIMER_DEQUEUE_MS put into the record's property map (Java `HashMap(128)` order, so REAL_TOPIC and
  REAL_QID stay in the stored string), topic and queue from REAL_TOPIC / REAL_QID, body, flag, sysflag,
  born time and host, store host, reconsume times copied;
- `roll`: a roll unit (its delay was past the roll window) is put back into rmq_sys_wheel_timer, same
  queue, TIMER_ROLL_TIMES + 1; the broker enqueues that record again (a recall tombstone rolls too);
- `recalled`: a tombstone in the same slot names it: dropped;
- `skip`: no message at the unit's position (`getMessageByCommitOffset` null), or a tombstone whose unit
  lost its roll bit (`doPut` refuses a delete message that is not rolled): nothing is written;
- `stop`: the broker cannot finish this slot (a cycle in its chain; REAL_QID or TIMER_ROLL_TIMES that
  `Integer.parseInt` rejects, or no REAL_TOPIC: the put service retries such a message forever). The
  read time stays at this slot and nothing of it is delivered.

`write_read_time` moves timercheck's lastReadTimeMs as `prepareTimerCheckPoint` + `flush` do (the data
version's timestamp and counter move with it), so the broker starts reading after what was delivered.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from formats.errors import FormatError
from formats.message.commitlog import Message, java_parse_int
from formats.message.properties import (
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_ENQUEUE_MS,
    PROPERTY_TIMER_ROLL_TIMES,
    decode_properties,
    encode_properties,
)
from formats.structs import TimerCheckpoint
from formats.timer import TIMER_BLANK_SLOTS, TIMER_WHEEL_SLOTS, slot_index
from store.broker.messagerebuild import (
    DECODER_MAP_CAPACITY,
    copied_record,
    java_hashmap_order,
    read_message_or_none,
)
from store.broker.schedule import real_queue
from store.io.filewrites import pwrite_all
from store.storedir import Store
from store.timer.timerstore import (
    TimerFileError,
    TimerLogUnit,
    TimerStore,
    TimerWheel,
    chain,
    timercheck_path,
    timerlog_queue,
)

Action = Literal["deliver", "roll", "recalled", "skip", "done", "stop"]


@dataclass
class TimerDelivery:
    """One timerlog unit of a slot the dequeue reads, and what the broker does with it."""

    slot_ms: int
    unit: TimerLogUnit
    action: Action
    reason: str | None = None
    source: Message | None = None  # the rmq_sys_wheel_timer record the unit points at
    record: Message | None = None  # what the broker writes (deliver, roll)
    written: Message | None = None  # what was written, or the copy found already written (done)

    @property
    def rolled(self) -> bool:
        return self.unit.roll

    def to_json(self) -> dict[str, Any]:
        from store.broker.messagerebuild import planned_json

        src, rec = self.source, self.written or self.record
        real_topic, real_qid = (None, None) if src is None else real_queue(src)
        return {
            "slotTimestamp": self.slot_ms,
            "timerLogPosition": self.unit.position,
            "phyOffset": self.unit.offset_py,
            "queueOffset": None if src is None else src.queue_offset,
            "deliverTimestamp": self.unit.delayed_time_ms,
            "action": self.action,
            "reason": self.reason,
            "roll": self.unit.roll,
            "realTopic": real_topic,
            "realQueueId": real_qid,
            "uniqKey": None if src is None else src.uniq_key,
            "keys": None if src is None else src.keys,
            "newTopic": None if rec is None else rec.topic,
            "newQueueId": None if rec is None else rec.queue_id,
            "newQueueOffset": None if rec is None else rec.queue_offset,
            "newPhyOffset": None if self.written is None else self.written.physical_offset,
            "newStoreTimestamp": None if self.written is None else self.written.store_timestamp,
            "record": None if rec is None else planned_json(rec, written=self.written is not None),
        }


@dataclass
class DequeuePlan:
    """The slots the broker's dequeue reads next and what it writes; `read_to` is its new read time."""

    now: int
    stored_read_time: int | None  # timercheck's lastReadTimeMs as stored
    read_from: int  # where the broker's dequeue starts (after recover's clamp)
    read_to: int  # lastReadTimeMs once these slots are read
    slots_read: int = 0  # slots with a matching time between read_from and read_to
    deliveries: list[TimerDelivery] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def to_write(self) -> list[TimerDelivery]:
        return [d for d in self.deliveries if d.action in ("deliver", "roll")]

    @property
    def moves_read_time(self) -> bool:
        return self.stored_read_time != self.read_to


def format_time_ms(time_ms: int, precision_ms: int) -> int:
    """`formatTimeMs`: down to the precision tick."""
    return time_ms // precision_ms * precision_ms


def dequeue_start(timer: TimerStore, now: int) -> int:
    """`recover()`: timercheck's read time, moved up to now - 7 days + 60 slots when older (the slots
    between are never read: `delay stats` counts their messages as skipped on restart)."""
    stored = 0 if timer.check is None else timer.check.last_read_time_ms
    floor = (
        format_time_ms(now, timer.precision_ms) - (TIMER_WHEEL_SLOTS - TIMER_BLANK_SLOTS) * timer.precision_ms
    )
    return max(stored, floor)


def recovered_wheel(timer: TimerStore) -> TimerWheel:
    """The wheel as `recover()` leaves it in memory: the file's slots (flushed now and then, so behind the
    timerlog after a crash) revised by every unit from the start of the timerlog file holding
    lastTimerLogFlushPos - the file size (`recoverAndRevise` -> `TimerWheel.reviseSlot(delayedTime, IGNORE,
    position, force)`: a slot holding another time is taken over, first = last = the unit; otherwise its
    last position moves to the unit)."""
    assert timer.wheel is not None
    slots = np.array(timer.wheel.slots, copy=True)
    files = list(timerlog_queue(timer.root))
    units = timer.walk.units
    if files and len(units):
        flushed = 0 if timer.check is None else timer.check.last_timer_log_flush_pos
        begin = max(0, flushed - files[-1].size)
        starts = [f.start_offset for f in files if f.start_offset <= begin]
        units = units[units["position"] >= (starts[-1] if starts else files[0].start_offset)]
    if len(units):
        p = timer.precision_ms
        ticks = (units["currWriteTimeMs"].astype(np.int64) + units["delayedTime"]) // p
        index = ticks % (TIMER_WHEEL_SLOTS * 2)
        positions = units["position"]
        order = np.lexsort((np.arange(len(units)), index))  # by slot, in log order within a slot
        index, ticks, positions = index[order], ticks[order], positions[order]
        ends = np.flatnonzero(np.r_[index[1:] != index[:-1], True])
        starts_ = np.r_[0, ends[:-1] + 1]
        final = ticks[ends]
        group = np.repeat(np.arange(len(ends)), ends - starts_ + 1)
        other = np.where(ticks != final[group], np.arange(len(ticks)), -1)
        last_other = np.maximum.reduceat(other, starts_)
        run_start = np.where(last_other >= 0, last_other + 1, starts_)
        slot = index[ends]
        taken = (last_other >= 0) | (slots["timeSecs"][slot] != final)
        slots["timeSecs"][slot] = final
        slots["lastPos"][slot] = positions[ends]
        slots["firstPos"][slot[taken]] = positions[run_start[taken]]
    wheel = copy.copy(timer.wheel)
    wheel.slots = slots
    return wheel


def _matching_slots(wheel: TimerWheel, precision_ms: int, start: int, end: int) -> np.ndarray:
    """Times in [start, end) (precision steps) whose wheel slot holds that very time."""
    if end <= start:
        return np.empty(0, dtype=np.int64)
    p = precision_ms
    first = start // p
    ticks = np.arange(first, first + (end - start + p - 1) // p, dtype=np.int64)
    stored = wheel.slots["timeSecs"][ticks % (TIMER_WHEEL_SLOTS * 2)]
    return ticks[stored == ticks] * p


def timer_time_up(msg: Message, unit: TimerLogUnit, *, dequeue_ms: int, store_timestamp: int = 0) -> Message:
    """`convert` + `convertMessage`: the record the put service writes for timer record `msg` read through
    `unit`. Raises FormatError where the broker's put cannot finish (it retries such a message forever)."""
    props = decode_properties(msg.properties_raw)
    order = list(props)
    props[PROPERTY_TIMER_ENQUEUE_MS] = str(unit.curr_write_time_ms)
    if unit.roll:
        text = props.get(PROPERTY_TIMER_ROLL_TIMES)
        times = 0 if text is None else java_parse_int(text)
        if times is None:
            raise FormatError(f"TIMER_ROLL_TIMES {text!r} is not an int (Integer.parseInt fails)")
        props[PROPERTY_TIMER_ROLL_TIMES] = str((times + 1 + 2**31) % 2**32 - 2**31)  # int arithmetic
    props[PROPERTY_TIMER_DEQUEUE_MS] = str(dequeue_ms)
    order += [k for k in props if k not in order]
    properties = encode_properties(
        [(k, props[k]) for k in java_hashmap_order(order, DECODER_MAP_CAPACITY[5])]
    )
    if unit.roll:
        topic, queue_id = msg.topic, msg.queue_id
    else:
        topic, queue_id = real_queue(msg)
        if not topic:
            raise FormatError("no REAL_TOPIC property")
        if queue_id is None:
            raise FormatError(
                f"REAL_QID {msg.properties.get('REAL_QID')!r} is not an int (Integer.parseInt fails)"
            )
    return copied_record(
        msg, topic=topic, queue_id=queue_id, properties=properties, store_timestamp=store_timestamp
    )


def _read_slot(
    store: Store, timer: TimerStore, wheel: TimerWheel, slot_ms: int, now: int
) -> list[TimerDelivery] | str:
    """What the dequeue does with one slot, unit by unit; a string says why the broker cannot finish it."""
    slot = wheel.get_slot(slot_ms)
    assert slot is not None
    positions, ended = chain(timer.walk, slot.last_pos)
    if ended is not None and ended.startswith("cycle"):
        return f"its chain of timerlog units has a {ended}: the broker's dequeue never leaves this slot"
    units = [u for u in (timer.walk.at(p) for p in positions) if u is not None]
    deletes: set[str] = set()
    out: list[TimerDelivery] = []
    for u in units:  # newest first, as read; tombstones are handled before the rest
        if u.delete and not u.roll:
            msg = read_message_or_none(store, u.offset_py, u.size_py)
            key = None if msg is None else msg.properties.get(PROPERTY_TIMER_DEL_UNIQKEY)
            if key is not None:
                deletes.add(key)
    for u in reversed(units):  # oldest first, as the normal stack is built
        if u.delete and not u.roll:
            continue
        msg = read_message_or_none(store, u.offset_py, u.size_py)
        if msg is None:
            out.append(
                TimerDelivery(
                    slot_ms, u, "skip", "no message at this position (getMessageByCommitOffset null)"
                )
            )
            continue
        if not u.roll:
            real_topic, _ = real_queue(msg)
            if msg.uniq_key and f"{real_topic}+{msg.uniq_key}" in deletes:
                out.append(
                    TimerDelivery(slot_ms, u, "recalled", "a recall tombstone in this slot names it", msg)
                )
                continue
            if msg.properties.get(PROPERTY_TIMER_DEL_UNIQKEY) is not None:
                out.append(
                    TimerDelivery(slot_ms, u, "skip", "a recall tombstone is never delivered (doPut)", msg)
                )
                continue
        try:
            record = timer_time_up(msg, u, dequeue_ms=now, store_timestamp=now)
        except FormatError as exc:
            return f"record at {u.offset_py}: {exc.message}; the broker's put retries it forever"
        out.append(TimerDelivery(slot_ms, u, "roll" if u.roll else "deliver", None, msg, record))
    if ended is not None:
        out_note = f"chain ends early ({ended}): the units before it are not read"
        for d in out:
            d.reason = d.reason or out_note
    return out


def plan_dequeue(store: Store, timer: TimerStore, *, now: int) -> DequeuePlan:
    """The dequeue from the broker's start read time up to the slot of `now` (see the module doc)."""
    if timer.wheel is None:
        raise TimerFileError(
            "no timerwheel file: the broker's timer store has nothing to read", str(timer.root)
        )
    stored = None if timer.check is None else timer.check.last_read_time_ms
    start = dequeue_start(timer, now)
    end = format_time_ms(now, timer.precision_ms)
    plan = DequeuePlan(now, stored, start, max(start, end))
    if stored is not None and stored < start:
        plan.notes.append(
            f"timercheck's read time is more than 7 days old: the broker starts at {start}, "
            "the slots before are never read"
        )
    wheel = recovered_wheel(timer)
    for slot_ms in _matching_slots(wheel, timer.precision_ms, start, end).tolist():
        read = _read_slot(store, timer, wheel, slot_ms, now)
        if isinstance(read, str):
            plan.read_to = slot_ms
            plan.notes.append(f"slot {slot_ms} (index {slot_index(slot_ms, timer.precision_ms)}): {read}")
            break
        plan.slots_read += 1
        plan.deliveries.extend(read)
    return plan


def write_read_time(store: Store, read_time_ms: int, clock_ms: int) -> None:
    """Set timercheck's lastReadTimeMs in place (one 56-byte write inside the first page, fsynced), with
    the data version moved as `updateDateVersion` does (timestamp = now, counter + 1)."""
    path = timercheck_path(store)
    size = TimerCheckpoint.sizeof()
    fd = os.open(path, os.O_RDWR)
    try:
        data = os.pread(fd, size, 0)
        if len(data) < size:
            raise TimerFileError(f"timercheck is {len(data)} bytes, shorter than {size}", str(path))
        c = TimerCheckpoint.parse(data)
        new = TimerCheckpoint.build(
            dict(
                c,
                lastReadTimeMs=read_time_ms,
                dataVersionTimestamp=clock_ms,
                dataVersionCounter=c.dataVersionCounter + 1,
            )
        )
        pwrite_all(fd, new, 0)
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = [
    "DequeuePlan",
    "TimerDelivery",
    "dequeue_start",
    "format_time_ms",
    "plan_dequeue",
    "recovered_wheel",
    "timer_time_up",
    "write_read_time",
]
