"""Where each message of `rmq_sys_wheel_timer` stands in the broker's TimerMessageStore.

States, as the 5.3.3 code would see the store when it starts (`TimerMessageStore.recover`, `enqueue`,
`dequeue` and its get/put services):

- `not-enqueued`: no timerlog unit for it, and it is at or past the enqueue position (the queue offset
  `recover` derives: the last unit's message's queue offset + 1, else timercheck's lastTimerQueueOffset,
  capped by masterTimerQueueOffset and clamped into the ConsumeQueue): the broker will enqueue it.
- `lost`: no unit, but the enqueue position is past it (the timerlog lost its unit): never delivered.
- `waiting`: its unit sits in a slot the dequeue has not read (slot time >= timercheck's lastReadTimeMs).
  `due` when its deliver time (TIMER_OUT_MS) is at or before `now`.
- `delivered`: the slot was read and its copy is in the real topic (same UNIQ_KEY, TIMER_DEQUEUE_MS).
- `passed`: the slot was read but no copy was found (its commitlog file deleted, or the put failed).
- `rolled`: a roll unit (delay past the roll window) whose slot was read: re-put into the timer topic
  with TIMER_ROLL_TIMES + 1 (that newer record carries on).
- `recalled`: a recall tombstone for it (TIMER_DEL_UNIQKEY = REAL_TOPIC + "+" + UNIQ_KEY) sits in the
  same slot: the dequeue dropped it, or drops it when it reads the slot.
- `recall`: the record is a tombstone itself (it is never delivered).
- `unknown`: the store has no timer files (the wheel never ran here, or they were not copied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from formats.message.commitlog import Message
from formats.message.properties import (
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_ROLL_TIMES,
)
from formats.names import TIMER_TOPIC
from formats.structs import TIMER_LOG_UNIT_SIZE
from store.broker.messagerebuild import read_message_or_none
from store.broker.schedule import real_queue
from store.timer.timerstore import TimerLogUnit, TimerStore, message_deliver_ms

if TYPE_CHECKING:
    from store.storedir import Store

STATES = ("not-enqueued", "lost", "waiting", "delivered", "passed", "rolled", "recalled", "recall", "unknown")
REVISE_MAX_STEPS = 20000  # reviseQueueOffset looks back at most this many ConsumeQueue units


@dataclass
class TimerMessage:
    """One record of `rmq_sys_wheel_timer` and its place in the timer store."""

    queue_id: int
    queue_offset: int
    phy_offset: int
    size: int
    message: Message | None
    unit: TimerLogUnit | None
    state: str
    due: bool
    copy_phy_offset: int | None = None
    enqueue_again: bool = False  # in the timerlog, but at or past where recover() resumes the enqueue

    @property
    def deliver_ms(self) -> int | None:
        return None if self.message is None else message_deliver_ms(self.message)

    @property
    def slot_ms(self) -> int | None:
        return None if self.unit is None else self.unit.delayed_time_ms

    @property
    def real(self) -> tuple[str | None, int | None]:
        return (None, None) if self.message is None else real_queue(self.message)

    @property
    def roll_times(self) -> int | None:
        m = self.message
        return parse_roll_times(None if m is None else m.properties.get(PROPERTY_TIMER_ROLL_TIMES))

    @property
    def delete_key(self) -> str | None:
        return None if self.message is None else self.message.properties.get(PROPERTY_TIMER_DEL_UNIQKEY)

    def to_json(self) -> dict[str, Any]:
        m = self.message
        real_topic, real_qid = self.real
        return {
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "phyOffset": self.phy_offset,
            "deliverTimestamp": self.deliver_ms,
            "slotTimestamp": self.slot_ms,
            "realTopic": real_topic,
            "realQueueId": real_qid,
            "uniqKey": None if m is None else m.uniq_key,
            "keys": None if m is None else m.keys,
            "storeTimestamp": None if m is None else m.store_timestamp,
            "rollTimes": self.roll_times,
            "deleteUniqKey": self.delete_key,
            "timerLogPosition": None if self.unit is None else self.unit.position,
            "roll": None if self.unit is None else self.unit.roll,
            "timerState": self.state,
            "due": self.due,
            "copyPhyOffset": self.copy_phy_offset,
            "enqueueAgain": self.enqueue_again,
        }


def parse_roll_times(text: str | None) -> int | None:
    """A TIMER_ROLL_TIMES value as a number (None when absent or not digits)."""
    return None if text is None or not (text.isascii() and text.isdigit()) else int(text)


def enqueue_position(store: Store, timer: TimerStore) -> int | None:
    """The queue offset the broker's enqueue resumes from after `recover` (None without timercheck)."""
    check = timer.check
    walk = timer.walk
    revised: int | None = None
    last = walk.unit(len(walk) - 1) if len(walk) else None
    if last is not None and last.position + TIMER_LOG_UNIT_SIZE == walk.end:
        msg = read_message_or_none(store, last.offset_py, last.size_py)
        if msg is not None:
            revised = _revise_queue_offset(store, msg, last.offset_py, last.size_py) + 1
    if revised is None:
        if check is None:
            return None
        revised = check.last_timer_queue_offset
    if check is not None:
        revised = min(revised, check.master_timer_queue_offset)
    if 0 in store.consume_queues.queue_ids(TIMER_TOPIC):
        cq = store.consume_queue(TIMER_TOPIC, 0)
        revised = min(max(revised, cq.min_offset), cq.max_offset)
    return revised


def _revise_queue_offset(store: Store, msg: Message, offset_py: int, size_py: int) -> int:
    """`reviseQueueOffset`: the message's queue offset, or the ConsumeQueue unit below it that holds it."""
    if msg.queue_id not in store.consume_queues.queue_ids(TIMER_TOPIC):
        return msg.queue_offset
    cq = store.consume_queue(TIMER_TOPIC, msg.queue_id)
    offset = msg.queue_offset
    for _ in range(REVISE_MAX_STEPS):
        if offset < 0:
            break
        unit = cq.unit(offset)
        if unit is not None and (unit.phy_offset, unit.size) == (offset_py, size_py):
            return offset
        offset -= 1
    return msg.queue_offset


def _copies(store: Store, wanted: set[tuple[str, str]], after_phy: int) -> dict[tuple[str, str], int]:
    """Delivered copies: (real topic, UNIQ_KEY) -> position of the record in the real topic that carries
    TIMER_DEQUEUE_MS. Looked up in the index when the store has one, else in the real queues."""
    found: dict[tuple[str, str], int] = {}
    service = store.index_service
    if service.files:
        for topic, uniq in wanted:
            for phy in service.query_offset(topic, uniq).phy_offsets:
                msg = read_message_or_none(store, phy, None)
                if _is_copy(msg, topic, uniq):
                    found[(topic, uniq)] = phy
                    break
        return found
    topics = {t for t, _ in wanted}
    for topic in topics:
        for queue_id in store.consume_queues.queue_ids(topic):
            for _q, phy, size, _tags in store.consume_queue(topic, queue_id).units().tolist():
                if phy <= after_phy:
                    continue
                msg = read_message_or_none(store, phy, size)
                if (
                    msg is not None
                    and (topic, msg.uniq_key or "") in wanted
                    and _is_copy(msg, topic, msg.uniq_key)
                ):
                    found[(topic, msg.uniq_key or "")] = phy
    return found


def _is_copy(msg: Message | None, topic: str, uniq: str | None) -> bool:
    return (
        msg is not None
        and msg.topic == topic
        and msg.uniq_key == uniq
        and PROPERTY_TIMER_DEQUEUE_MS in msg.properties
    )


def timer_messages(store: Store, timer: TimerStore | None, *, now: int) -> list[TimerMessage]:
    """Every record of `rmq_sys_wheel_timer`, in queue order, with its state (see the module doc);
    `timer` None (no timer files): every state `unknown`."""
    rows: list[TimerMessage] = []
    for queue_id in store.consume_queues.queue_ids(TIMER_TOPIC):
        for q, phy, size, _tags in store.consume_queue(TIMER_TOPIC, queue_id).units().tolist():
            msg = read_message_or_none(store, phy, size)
            indexes = None if timer is None else timer.units_by_offset_py.get(phy)
            unit = None if not indexes or timer is None else timer.walk.unit(indexes[-1])
            rows.append(TimerMessage(queue_id, q, phy, size, msg, unit, "", False))
    if timer is None:
        for r in rows:
            r.state = "unknown"
            r.due = r.deliver_ms is not None and r.deliver_ms <= now
        return rows
    position = enqueue_position(store, timer)
    # recall tombstones by slot: the dequeue of a slot drops the messages they name
    tombstones: dict[int, set[str]] = {}
    for r in rows:
        if r.unit is not None and r.unit.delete and not r.unit.roll and r.delete_key is not None:
            tombstones.setdefault(r.unit.delayed_time_ms, set()).add(r.delete_key)
    read_normal = [
        r
        for r in rows
        if r.unit is not None
        and timer.slot_read(r.unit.delayed_time_ms)
        and not r.unit.roll
        and r.delete_key is None
    ]
    wanted = {
        (r.real[0], r.message.uniq_key) for r in read_normal if r.message and r.real[0] and r.message.uniq_key
    }
    copies = _copies(store, wanted, min((r.phy_offset for r in read_normal), default=0)) if wanted else {}
    for r in rows:
        r.state = _state(r, timer, position, tombstones, copies)
        r.enqueue_again = (
            r.unit is not None and r.queue_id == 0 and position is not None and r.queue_offset >= position
        )
        r.due = (
            r.state in ("waiting", "not-enqueued")
            and r.delete_key is None  # a recall tombstone delivers nothing
            and r.deliver_ms is not None
            and r.deliver_ms <= now
        )
    return rows


def _state(
    r: TimerMessage,
    timer: TimerStore,
    position: int | None,
    tombstones: dict[int, set[str]],
    copies: dict[tuple[str, str], int],
) -> str:
    if r.unit is None:
        if r.queue_id != 0 or position is None or r.queue_offset >= position:
            return "not-enqueued"
        return "lost"
    real_topic = r.real[0]
    uniq = None if r.message is None else r.message.uniq_key
    recalled = (
        r.delete_key is None
        and not r.unit.roll
        and bool(real_topic and uniq)
        and f"{real_topic}+{uniq}" in tombstones.get(r.unit.delayed_time_ms, set())
    )
    if not timer.slot_read(r.unit.delayed_time_ms):
        return "recalled" if recalled else "waiting"  # a tombstone in its slot: dropped when read
    if r.delete_key is not None:
        return "recall"
    if r.unit.roll:
        return "rolled"
    if recalled:
        return "recalled"
    if real_topic and uniq and (real_topic, uniq) in copies:
        r.copy_phy_offset = copies[(real_topic, uniq)]
        return "delivered"
    return "passed"


__all__ = ["STATES", "TimerMessage", "enqueue_position", "parse_roll_times", "timer_messages"]
