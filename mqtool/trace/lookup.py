"""What one store knows about a message: the per-store half of `mqtool trace` (and the unit a Spark task
or a worker process runs). Everything returned is plain data (picklable, JSON-ready).

* `resolve_ids`: the UNIQ_KEYs a query names in this store (an id is a UNIQ_KEY, or an offsetMsgId whose
  record carries one; a key of a topic names the messages `query key` finds), and those the store's trace
  records name.
* `store_findings`: for UNIQ_KEYs, every record carrying them under every topic (`mqtool.query.msgid`: the
  original, its SCHEDULE_TOPIC_XXXX and timer-wheel copies, retry copies in `%RETRY%group` and the POP retry
  topics, the DLQ copy, a transaction's half and commit copy, a recall tombstone), each with what the store
  says of it: a delay copy's level, deliver time and whether the level's progress passed it
  (`store.broker.schedule`), a timer record's state (`store.timer.messages`), a half's transaction state
  (`mqtool.transactions.listing`), POP checkpoints and acks on its queue offset (`store.pop.revive`), and
  for each consumer group with a committed offset on its queue whether that offset has passed it
  (`mqtool.offsets.progress`); plus the trace records about them (`mqtool.trace.records`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from formats.message.msgid import looks_like_offset_msg_id
from formats.message.properties import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DEQUEUE_MS,
)
from formats.names import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC
from formats.structs import TRANSACTION_COMMIT_TYPE, TRANSACTION_TYPE_MASK
from formats.trace import PUB
from mqtool.offsets.progress import committed_offsets
from mqtool.query.key import query_by_key
from mqtool.query.msgid import query_by_id
from mqtool.query.topics import UnknownTopicError
from mqtool.trace.records import TraceRecordRow, store_label, trace_hits, trace_topics
from store.broker.transaction import CHECK_MAX_TIME_TOPIC, PROPERTY_PRODUCER_GROUP
from store.pop.revive import PROPERTY_FIRST_POP_TIME, REVIVE_TOPIC_PREFIX
from store.storedir import Store

PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"  # MessageConst.PROPERTY_RETRY_TOPIC
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"  # MessageConst.PROPERTY_ORIGIN_MESSAGE_ID
# topics whose records no consumer group reads (their queues are the broker's own)
_INTERNAL = (
    SCHEDULE_TOPIC,
    TIMER_TOPIC,
    TRANS_HALF_TOPIC,
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    CHECK_MAX_TIME_TOPIC,
)

ROLES = (
    "stored",
    "delivered",
    "delay",
    "timer",
    "recall",
    "retry",
    "pop-retry",
    "dlq",
    "half",
    "commit",
    "discard",
)


@dataclass
class StoreRecord:
    """One record of a traced message in one store, and what the store says of it."""

    store: str
    role: str  # one of ROLES
    uniq_key: str
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    offset_msg_id: str
    store_host: str
    born_host: str
    born_timestamp: int
    store_timestamp: int
    reconsume_times: int
    sys_flag: int
    keys: str | None
    tags: str | None
    real_topic: str | None = None  # REAL_TOPIC / RETRY_TOPIC: the topic the message belongs to
    real_queue_id: int | None = None
    origin_message_id: str | None = None
    producer_group: str | None = None
    state: str | None = None  # delay: delivered|pending; timer: its TimerMessageStore state; half: txn state
    deliver_timestamp: int | None = None
    delay_level: int | None = None
    consumed: dict[str, bool] = field(default_factory=dict)  # group -> committed offset past this record
    pop: list[dict[str, Any]] = field(default_factory=list)  # POP checkpoints/acks on this queue offset
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "role": self.role,
            "uniqKey": self.uniq_key,
            "topic": self.topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "physicalOffset": self.physical_offset,
            "offsetMsgId": self.offset_msg_id,
            "storeHost": self.store_host,
            "bornHost": self.born_host,
            "bornTimestamp": self.born_timestamp,
            "storeTimestamp": self.store_timestamp,
            "reconsumeTimes": self.reconsume_times,
            "sysFlag": self.sys_flag,
            "keys": self.keys,
            "tags": self.tags,
            "realTopic": self.real_topic,
            "realQueueId": self.real_queue_id,
            "originMessageId": self.origin_message_id,
            "producerGroup": self.producer_group,
            "state": self.state,
            "deliverTimestamp": self.deliver_timestamp,
            "delayLevel": self.delay_level,
            "consumedBy": dict(self.consumed),
            "pop": list(self.pop),
            "notes": list(self.notes),
        }


@dataclass
class StoreFindings:
    """Everything one store says about the messages of a query (or why it could not be read)."""

    store: str
    ids: list[str] = field(default_factory=list)  # the UNIQ_KEYs looked up
    records: list[StoreRecord] = field(default_factory=list)
    traces: list[TraceRecordRow] = field(default_factory=list)
    trace_topics: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def classify(msg: Message) -> str:
    """The role of a record that carries a message's UNIQ_KEY."""
    topic, props = msg.topic, msg.properties
    if topic == SCHEDULE_TOPIC:
        return "delay"
    if topic == TIMER_TOPIC:
        return "recall" if PROPERTY_TIMER_DEL_UNIQKEY in props else "timer"
    if topic == TRANS_HALF_TOPIC:
        return "half"
    if topic == CHECK_MAX_TIME_TOPIC:
        return "discard"
    if topic.startswith(DLQ_PREFIX):
        return "dlq"
    if topic.startswith(RETRY_PREFIX):
        return "pop-retry" if PROPERTY_FIRST_POP_TIME in props else "retry"
    if (
        msg.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
        and msg.prepared_transaction_offset > 0
    ):
        return "commit"
    if PROPERTY_TIMER_DEQUEUE_MS in props or PROPERTY_REAL_TOPIC in props and "DELAY" in props:
        return "delivered"  # a timer-wheel or ScheduleMessageService copy in the real topic
    return "stored"


def _record(label: str, msg: Message) -> StoreRecord:
    props = msg.properties
    real_topic = props.get(PROPERTY_REAL_TOPIC) or props.get(PROPERTY_RETRY_TOPIC)
    qid = props.get(PROPERTY_REAL_QUEUE_ID)
    return StoreRecord(
        label,
        classify(msg),
        msg.uniq_key or "",
        msg.topic,
        msg.queue_id,
        msg.queue_offset,
        msg.physical_offset,
        msg.offset_msg_id,
        msg.store_host_str,
        msg.born_host_str,
        msg.born_timestamp,
        msg.store_timestamp,
        msg.reconsume_times,
        msg.sys_flag,
        msg.keys,
        msg.tags,
        real_topic,
        int(qid) if qid is not None and qid.isascii() and qid.isdigit() else None,
        props.get(PROPERTY_ORIGIN_MESSAGE_ID),
        props.get(PROPERTY_PRODUCER_GROUP),
    )


def resolve_ids(
    store: Store,
    *,
    msg_id: str | None = None,
    key: str | None = None,
    topic: str | None = None,
    extra_topics: tuple[str, ...] = (),
) -> tuple[list[str], list[str]]:
    """The UNIQ_KEYs a query names in this store, and notes. An id stands for itself (the trace records'
    msgId) and, when it reads as this store's offsetMsgId, for the UNIQ_KEY of the record there; a key of a
    topic for the UNIQ_KEYs of the messages it finds and of the Pub records that carry it."""
    ids: list[str] = []
    notes: list[str] = []
    if msg_id is not None:
        ids.append(msg_id)
        if looks_like_offset_msg_id(msg_id):
            found = query_by_id(store, msg_id)
            if found.kind == "offsetMsgId" and found.messages and found.messages[0].uniq_key:
                uniq = found.messages[0].uniq_key
                if uniq != msg_id:
                    notes.append(f"{msg_id} is the offsetMsgId of a record whose UNIQ_KEY is {uniq}")
                    ids.append(uniq)
        return ids, notes
    assert key is not None and topic is not None
    try:
        result = query_by_key(store, topic, key)
    except UnknownTopicError:
        result = None
    if result is not None:
        ids += [m.uniq_key for m in result.messages if m.uniq_key]
        notes += [n for n in result.notes() if not _noise(n)]
    hits, hit_notes = trace_hits(
        store, trace_topics(store, extra_topics), key, by_key=True, message_topic=topic
    )
    notes += [n for n in hit_notes if not _noise(n)]
    ids += [r.context.bean.msg_id for r in hits if r.context is not None and r.context.trace_type == PUB]
    return list(dict.fromkeys(i for i in ids if i)), notes


class _Lazy:
    """Store-wide facts read at most once per lookup, and only when a record needs them (their modules too:
    a lookup that meets no delay, timer, transaction or POP record does not import them)."""

    def __init__(self, store: Store, now: int) -> None:
        self.store, self.now = store, now
        self._timer: dict[int, Any] | None = None
        self._txn = None
        self._pop: list[Any] | None = None
        self._delay = None

    def timer_state(self, phy: int) -> str | None:
        if self._timer is None:
            from store.timer.messages import timer_messages
            from store.timer.timerstore import TimerStore

            rows = timer_messages(self.store, TimerStore.open(self.store), now=self.now)
            self._timer = {r.phy_offset: r for r in rows}
        row = self._timer.get(phy)
        return None if row is None else row.state

    def transaction(self, msg: Message):
        if self._txn is None:
            from mqtool.transactions.listing import list_transactions

            self._txn = list_transactions(self.store, now=self.now)
        return self._txn.find(msg.queue_offset, msg.queue_id)

    def popped(self, topic: str, queue_id: int, queue_offset: int) -> list[dict[str, Any]]:
        if self._pop is None:
            from store.pop.revive import pop_state, revive_topics

            self._pop = pop_state(self.store, now=self.now).messages if revive_topics(self.store) else []
        return [
            p.to_json()
            for p in self._pop
            if p.topic == topic and p.queue_id == queue_id and p.queue_offset == queue_offset
        ]

    def delay(self):
        if self._delay is None:
            from store.broker.schedule import delay_levels, load_delay_progress

            self._delay = (delay_levels(self.store), load_delay_progress(self.store))
        return self._delay


def store_findings(
    store: Store,
    ids: list[str],
    *,
    now: int,
    extra_topics: tuple[str, ...] = (),
    version: str = "5.3.3",
) -> StoreFindings:
    """Every record carrying one of `ids` (UNIQ_KEYs) under every topic of the store, with the store's facts
    about each, and the trace records about them."""
    started = time.perf_counter()
    label = store_label(store)
    out = StoreFindings(label, list(ids))
    out.trace_topics = trace_topics(store, extra_topics)
    committed = committed_offsets(store)
    out.notes += committed.notes
    lazy = _Lazy(store, now)
    seen: set[int] = set()
    for uniq in ids:
        found = query_by_id(store, uniq)
        if found.kind == "uniqKey":  # the index's notes (collisions, coverage), not the offsetMsgId reading's
            out.notes += [n for n in found.notes() if not _noise(n)]
        for msg in found.messages:
            if msg.physical_offset in seen or msg.topic in out.trace_topics:
                continue
            seen.add(msg.physical_offset)
            out.records.append(_facts(_record(label, msg), msg, lazy, committed))
        rows, notes = trace_hits(store, out.trace_topics, uniq, version=version)
        out.traces += rows
        out.notes += [n for n in notes if not _noise(n)]
    out.records.sort(key=lambda r: (r.store_timestamp, r.physical_offset))
    out.seconds = time.perf_counter() - started
    return out


def _noise(note: str) -> bool:
    """Index notes a trace lookup leaves out: how the id was looked up, and hash collisions (a trace topic's
    keys collide often, and the dropped hits are not the message's)."""
    return note.startswith(("looked up as a UNIQ_KEY", "as an offsetMsgId")) or "hash collision" in note


def _facts(rec: StoreRecord, msg: Message, lazy: _Lazy, committed) -> StoreRecord:
    try:
        if rec.role == "delay":
            levels, progress = lazy.delay()
            level = msg.queue_id + 1
            rec.delay_level = level
            rec.deliver_timestamp = msg.tags_code(levels.ms)
            done = progress.table.get(level)
            rec.state = "delivered" if done is not None and done > msg.queue_offset else "pending"
        elif rec.role in ("timer", "recall"):
            rec.state = lazy.timer_state(msg.physical_offset)
            from store.timer.timerstore import message_deliver_ms

            rec.deliver_timestamp = message_deliver_ms(msg)
        elif rec.role == "half":
            txn = lazy.transaction(msg)
            rec.state = None if txn is None else txn.state
    except MqtoolError as exc:
        rec.notes.append(f"cannot tell its state: {exc}")
    if msg.topic not in _INTERNAL and not msg.topic.startswith(REVIVE_TOPIC_PREFIX):
        rec.consumed = committed.consumed_by(msg.topic, msg.queue_id, msg.queue_offset)
        try:
            rec.pop = lazy.popped(msg.topic, msg.queue_id, msg.queue_offset)
        except MqtoolError as exc:
            rec.notes.append(f"POP state unknown: {exc}")
    return rec


def lookup_store(
    store: Store,
    *,
    msg_id: str | None = None,
    key: str | None = None,
    topic: str | None = None,
    ids: list[str] | None = None,
    now: int | None = None,
    extra_topics: tuple[str, ...] = (),
    version: str = "5.3.3",
) -> StoreFindings:
    """`resolve_ids` then `store_findings` on one store (or `ids` given: the second pass of a fleet)."""
    now = int(time.time() * 1000) if now is None else now
    notes: list[str] = []
    if ids is None:
        ids, notes = resolve_ids(store, msg_id=msg_id, key=key, topic=topic, extra_topics=extra_topics)
    out = store_findings(store, ids, now=now, extra_topics=extra_topics, version=version)
    out.notes = notes + out.notes
    return out
