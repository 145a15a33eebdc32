"""5.x timer-wheel messages (`rmq_sys_wheel_timer`, TimerMessageStore): listed with their TIMER_* properties
and where config/timercheck says the timer store is, but never replayed offline (`TIMER_NOT_REPLAYED`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from formats.commitlog import java_parse_int
from store.messagerebuild import read_message_or_none
from store.schedule import real_queue
from store.storedir import Store
from store.timer import (
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_TIMER_ROLL_TIMES,
    TIMER_TOPIC,
    read_timercheck,
)

TIMER_NOT_REPLAYED = (
    "5.x timer-wheel messages are not replayed offline: their delivery state lives in timerlog, "
    "timerwheel and config/timercheck, which mqtool does not write (the timer store's recovery after "
    "offline edits is not established yet), so a copy appended to the real topic would be "
    "delivered a second time when the broker's TimerMessageStore reaches its slot"
)


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
    state: str  # not-enqueued / waiting / passed / unknown
    due: bool

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
        }


@dataclass
class TimerSummary:
    messages: int
    not_enqueued: int
    waiting: int
    due: int
    last_read_time_ms: int | None
    last_timer_queue_offset: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "notEnqueued": self.not_enqueued,
            "waiting": self.waiting,
            "due": self.due,
            "lastReadTimeMs": self.last_read_time_ms,
            "lastTimerQueueOffset": self.last_timer_queue_offset,
            "replay": TIMER_NOT_REPLAYED,
        }


def list_timer_messages(store: Store, *, now: int) -> list[TimerRow]:
    """Messages of `rmq_sys_wheel_timer` (every queue), with TIMER_OUT_MS and where the timer store is.

    `state`: `not-enqueued` (at or after timercheck's lastTimerQueueOffset: the timer store has not read
    it yet), `passed` (its slot time is before lastReadTimeMs: delivered or rolled), `waiting` (in the
    wheel), `unknown` (no timercheck file).
    """
    check = read_timercheck(store)
    rows: list[TimerRow] = []
    for queue_id in store.consume_queues.queue_ids(TIMER_TOPIC):
        cq = store.consume_queue(TIMER_TOPIC, queue_id)
        for q, phy, size, _tags in cq.units().tolist():
            msg = read_message_or_none(store, phy, size)
            props = msg.properties if msg is not None else {}
            out_ms = (
                java_parse_int(props.get(PROPERTY_TIMER_OUT_MS, "x"))
                if PROPERTY_TIMER_OUT_MS in props
                else None
            )
            if out_ms is None and PROPERTY_TIMER_OUT_MS in props and props[PROPERTY_TIMER_OUT_MS].isdigit():
                out_ms = int(props[PROPERTY_TIMER_OUT_MS])  # a long beyond int range
            real_topic, real_qid = real_queue(msg) if msg is not None else (None, None)
            roll = props.get(PROPERTY_TIMER_ROLL_TIMES)
            if check is None:
                state = "unknown"
            elif q >= check.last_timer_queue_offset:
                state = "not-enqueued"
            elif out_ms is not None and out_ms < check.last_read_time_ms:
                state = "passed"
            else:
                state = "waiting"
            rows.append(
                TimerRow(
                    q,
                    phy,
                    size,
                    out_ms,
                    real_topic,
                    real_qid,
                    None if msg is None else msg.uniq_key,
                    None if msg is None else msg.keys,
                    None if msg is None else msg.store_timestamp,
                    None if roll is None else java_parse_int(roll),
                    props.get(PROPERTY_TIMER_DEL_UNIQKEY),
                    state,
                    state != "passed" and out_ms is not None and out_ms <= now,
                )
            )
    return rows


def timer_summary(store: Store, *, now: int) -> TimerSummary | None:
    if not store.consume_queues.queue_ids(TIMER_TOPIC):
        return None
    rows = list_timer_messages(store, now=now)
    check = read_timercheck(store)
    return TimerSummary(
        len(rows),
        sum(r.state == "not-enqueued" for r in rows),
        sum(r.state == "waiting" for r in rows),
        sum(r.due for r in rows),
        None if check is None else check.last_read_time_ms,
        None if check is None else check.last_timer_queue_offset,
    )
