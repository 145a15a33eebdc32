"""Where each message of `rmq_sys_wheel_timer` stands, as columns: the fast twin of
`store.timer.messages.timer_messages` (same states, same rules; see that module's doc) for wheels of
millions of messages.

The records come from one columnar walk per commitlog file (`store.log.scan.records_at`), their timer
properties from `formats.columnar.properties`, their timerlog units by a sorted search of the walk's units,
and the delivered copies of the read slots from the real topics' ConsumeQueues, decoded the same way and
joined on (topic, UNIQ_KEY). No Python object is made per message: callers build rows for what they
select. The copy is the newest record in the real topic's ConsumeQueues with the message's UNIQ_KEY and
TIMER_DEQUEUE_MS (without an index: after the oldest read message), as `timer_messages` finds it: by the
index where the store has one (the same where the index and the ConsumeQueues agree, as the broker's
dispatch writes them), else by walking those queues.
tests/test_timer_columns.py checks the two against each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.message.commitlog import java_parse_int
from formats.message.properties import (
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_TIMER_ROLL_TIMES,
)
from formats.names import TIMER_TOPIC
from formats.timer import MAGIC_DELETE, MAGIC_ROLL
from store.log.scan import records_at
from store.timer.messages import STATES, enqueue_position, parse_roll_times
from store.timer.timerstore import TimerStore, timer_out_ms

if TYPE_CHECKING:
    from store.storedir import Store

from formats.message.properties import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC

STRINGS = (PROPERTY_REAL_TOPIC, PROPERTY_TIMER_DEL_UNIQKEY)
NUMBERS = (PROPERTY_TIMER_OUT_MS, PROPERTY_REAL_QUEUE_ID, PROPERTY_TIMER_ROLL_TIMES)
STATE_CODE = {s: i for i, s in enumerate(STATES)}
NONE = np.iinfo(np.int64).min  # an absent number (masks say which)


@dataclass
class TimerColumns:
    """Every record of `rmq_sys_wheel_timer` in queue order (queue by queue), one array per field of
    `TimerMessage`; numbers absent where their `has_*` mask is False, strings null when absent."""

    queue_id: np.ndarray
    queue_offset: np.ndarray
    phy_offset: np.ndarray
    size: np.ndarray
    found: np.ndarray  # a message is there (read_message_or_none is not None)
    store_timestamp: np.ndarray
    deliver_ms: np.ndarray
    has_deliver: np.ndarray
    real_topic: pa.Array
    real_queue_id: np.ndarray
    has_real_queue_id: np.ndarray
    uniq_key: pa.Array
    keys: pa.Array
    roll_times: np.ndarray
    has_roll_times: np.ndarray
    delete_key: pa.Array
    has_unit: np.ndarray
    slot_ms: np.ndarray
    timer_log_position: np.ndarray
    roll: np.ndarray
    state: np.ndarray  # index into STATES
    due: np.ndarray
    copy_phy_offset: np.ndarray  # -1: none
    enqueue_again: np.ndarray

    def __len__(self) -> int:
        return len(self.queue_offset)

    @property
    def pending(self) -> np.ndarray:
        """Messages the broker will still deliver (waiting or not enqueued, not a tombstone)."""
        states = (self.state == STATE_CODE["waiting"]) | (self.state == STATE_CODE["not-enqueued"])
        return states & _mask(self.delete_key.is_null())


def _numbers(number: tuple[np.ndarray, np.ndarray, pa.Array], plain_rule, text_rule):
    """A property's numbers and where present: `plain_rule(numbers, signed)` on the plain digit strings,
    vectorised; every other value through `text_rule(text)` (the reference path's parser)."""
    numbers, plain, texts = number
    numbers = numbers.copy()
    present = (plain > 0) & plain_rule(numbers, plain == 2)
    other = np.flatnonzero(_mask(texts.is_valid()))
    for i, text in zip(other.tolist(), texts.take(pa.array(other)).to_pylist(), strict=True):
        v = text_rule(text)
        numbers[i], present[i] = (NONE, False) if v is None else (v, True)
    return numbers, present


def _deliver(numbers: np.ndarray, signed: np.ndarray) -> np.ndarray:
    return np.ones(len(numbers), bool)


def _queue_id(numbers: np.ndarray, signed: np.ndarray) -> np.ndarray:
    return (numbers >= -(2**31)) & (numbers < 2**31)  # Integer.parseInt's range


def _rolls(numbers: np.ndarray, signed: np.ndarray) -> np.ndarray:
    return ~signed  # digits only


def _mask(arr: pa.Array) -> np.ndarray:
    """A null-free boolean Arrow array as numpy."""
    return np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little")[
        arr.offset : arr.offset + len(arr)
    ].astype(bool)


def _units(store: Store) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """queue ids, queue offsets, positions and sizes of every ConsumeQueue unit of the timer topic."""
    parts = []
    for queue_id in store.consume_queues.queue_ids(TIMER_TOPIC):
        units = store.consume_queue(TIMER_TOPIC, queue_id).units()
        parts.append((np.full(len(units), queue_id, np.int64), units))
    if not parts:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, empty
    qids = np.concatenate([q for q, _ in parts])
    units = np.concatenate([u for _, u in parts])
    return (
        qids,
        units["queueOffset"].astype(np.int64),
        units["phyOffset"].astype(np.int64),
        units["size"].astype(np.int64),
    )


def timer_columns(store: Store, timer: TimerStore | None, *, now: int, copies: bool = True) -> TimerColumns:
    """`timer_messages(store, timer, now=now)` as columns (`copies` False: the delivered copies are not
    looked for, so read messages show as passed, never delivered; the other states are the same)."""
    qids, qoffs, phys, sizes = _units(store)
    n = len(phys)
    rec = records_at(store.commitlog, phys, sizes, STRINGS, numbers=NUMBERS)
    props, nums = rec.properties, rec.numbers
    deliver, has_deliver = _numbers(nums[PROPERTY_TIMER_OUT_MS], _deliver, timer_out_ms)
    real_qid, has_qid = _numbers(nums[PROPERTY_REAL_QUEUE_ID], _queue_id, java_parse_int)
    rolls, has_rolls = _numbers(nums[PROPERTY_TIMER_ROLL_TIMES], _rolls, parse_roll_times)
    real_topic, uniq, delete_key = props[PROPERTY_REAL_TOPIC], rec.uniq_key, props[PROPERTY_TIMER_DEL_UNIQKEY]
    has_delete = _mask(delete_key.is_valid())
    cols = TimerColumns(
        qids, qoffs, phys, sizes, rec.found, rec.store_timestamp, deliver, has_deliver, real_topic,
        real_qid, has_qid, uniq, rec.keys, rolls, has_rolls, delete_key,
        np.zeros(n, bool), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool),
        np.full(n, STATE_CODE["unknown"], np.int8), np.zeros(n, bool), np.full(n, -1, np.int64),
        np.zeros(n, bool),
    )  # fmt: skip
    if timer is None:
        cols.due = has_deliver & (deliver <= now)
        return cols
    # the newest unit of each message (a rolled one has one per roll), as units_by_offset_py keeps it
    units = timer.walk.units
    order = np.argsort(units["offsetPy"], kind="stable")
    sorted_py = units["offsetPy"][order]
    at = np.searchsorted(sorted_py, phys, side="right") - 1
    has_unit = (at >= 0) & (sorted_py[np.maximum(at, 0)] == phys) if len(units) else np.zeros(n, bool)
    unit = np.where(has_unit, order[np.maximum(at, 0)] if len(units) else 0, 0)
    units = units if len(units) else np.zeros(1, units.dtype)

    def field(name: str) -> np.ndarray:
        return units[name][unit]  # one field at a time: cheaper than whole structured rows

    slot = field("currWriteTimeMs").astype(np.int64) + field("delayedTime")
    magic = field("magic")
    roll = has_unit & ((magic & MAGIC_ROLL) != 0)
    delete = has_unit & ((magic & MAGIC_DELETE) != 0)
    cols.has_unit, cols.slot_ms, cols.timer_log_position, cols.roll = has_unit, slot, field("position"), roll
    position = enqueue_position(store, timer)
    check = timer.check
    read = has_unit & (check is not None) & (slot < (check.last_read_time_ms if check else 0))
    has_key = cols.found & _mask(real_topic.is_valid())
    has_key &= _mask(uniq.is_valid())
    tombstone = has_unit & delete & ~roll & has_delete
    recalled = _recalled(cols, tombstone, has_unit & ~roll & ~has_delete & has_key)
    normal = read & ~roll & ~has_delete
    # the index look-up of `timer_messages` sees copies anywhere, its ConsumeQueue walk only later ones
    after = -1 if store.index_service.files else int(phys[normal].min()) if normal.any() else 0
    copy = _copies(store, cols, normal & has_key, after) if copies else np.full(n, -1, np.int64)
    no_unit_state = np.where(
        (qids != 0) | (position is None) | (qoffs >= (position if position is not None else 0)),
        STATE_CODE["not-enqueued"],
        STATE_CODE["lost"],
    )
    read_state = np.select(
        [has_delete, roll, recalled, copy >= 0],
        [STATE_CODE["recall"], STATE_CODE["rolled"], STATE_CODE["recalled"], STATE_CODE["delivered"]],
        STATE_CODE["passed"],
    )
    waiting_state = np.where(recalled, STATE_CODE["recalled"], STATE_CODE["waiting"])
    cols.state = np.where(~has_unit, no_unit_state, np.where(read, read_state, waiting_state)).astype(np.int8)
    cols.copy_phy_offset = np.where(read & (cols.state == STATE_CODE["delivered"]), copy, -1)
    cols.enqueue_again = has_unit & (qids == 0) & (position is not None)
    if position is not None:
        cols.enqueue_again &= qoffs >= position
    cols.due = cols.pending & has_deliver & (deliver <= now)
    return cols


def _recalled(cols: TimerColumns, tombstone: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Messages whose slot holds a recall tombstone naming them (REAL_TOPIC + "+" + UNIQ_KEY): a Python
    set per slot, built from the tombstones only and probed by the messages sharing their slots."""
    out = np.zeros(len(cols), bool)
    if not tombstone.any():
        return out
    marks = np.flatnonzero(tombstone)
    by_slot: dict[int, set[str]] = {}
    for slot, key in zip(
        cols.slot_ms[marks].tolist(), cols.delete_key.take(pa.array(marks)).to_pylist(), strict=True
    ):
        by_slot.setdefault(slot, set()).add(key)
    probe = np.flatnonzero(candidate & np.isin(cols.slot_ms, list(by_slot)))
    topics = cols.real_topic.take(pa.array(probe)).to_pylist()
    uniqs = cols.uniq_key.take(pa.array(probe)).to_pylist()
    for i, slot, topic, uniq in zip(probe.tolist(), cols.slot_ms[probe].tolist(), topics, uniqs, strict=True):
        out[i] = f"{topic}+{uniq}" in by_slot[slot]
    return out


def _copies(store: Store, cols: TimerColumns, wanted: np.ndarray, after_phy: int) -> np.ndarray:
    """Per message (where `wanted`): the position of its delivered copy, -1 when none (`after_phy` -1:
    looked up as in the index, anywhere in the queues)."""
    out = np.full(len(cols), -1, np.int64)
    rows = np.flatnonzero(wanted)
    if not len(rows):
        return out
    want_topic = cols.real_topic.take(pa.array(rows))
    want_key = pc.binary_join_element_wise(want_topic, cols.uniq_key.take(pa.array(rows)), "\x01")
    topics, phys, sizes = [], [], []
    for topic in pc.unique(want_topic).to_pylist():
        for queue_id in store.consume_queues.queue_ids(topic):
            units = store.consume_queue(topic, queue_id).units()
            units = units[units["phyOffset"] > after_phy]
            phys.append(units["phyOffset"].astype(np.int64))
            sizes.append(units["size"].astype(np.int64))
            topics.append(pa.array([topic] * len(units), pa.string()))
    if not phys:
        return out
    phy = np.concatenate(phys)
    rec = records_at(store.commitlog, phy, np.concatenate(sizes), (PROPERTY_TIMER_DEQUEUE_MS,))
    topic = pa.concat_arrays(topics)
    is_copy = rec.found & _mask(pc.equal(rec.topic, topic).fill_null(False))
    is_copy &= _mask(rec.properties[PROPERTY_TIMER_DEQUEUE_MS].is_valid())
    is_copy &= _mask(rec.uniq_key.is_valid())
    found = np.flatnonzero(is_copy)
    # the copy `timer_messages` keeps first: the index's newest, or the queue walk's last
    rank = -phy[found] if after_phy < 0 else -found
    found = found[np.argsort(rank, kind="stable")]
    take = pa.array(found)
    keys = pc.binary_join_element_wise(topic.take(take), rec.uniq_key.take(take), "\x01")
    hit = pc.index_in(want_key, value_set=keys).fill_null(-1).to_numpy()
    out[rows] = np.where(hit >= 0, phy[found][np.maximum(hit, 0)] if len(found) else -1, -1)
    return out


__all__ = ["TimerColumns", "timer_columns"]
