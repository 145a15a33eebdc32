"""PopReviveService's reading side: what POP consumers hold, offline.

A POP hands messages out and advances the group's consumerOffset.json entry at once; the broker
remembers the hand-out as a checkpoint (`ck`, formats.pop.PopCheckPoint) and each ack as an `ack` /
`bAck`. Those not settled in memory (PopBufferMergeService) are written to the revive topic
`rmq_sys_REVIVE_LOG_<cluster>` as timer messages: a ck due at its revive time (pop time + invisible time)
minus `ackTimeInterval` (1 s), an ack at the revive time; until then they wait in rmq_sys_wheel_timer.
PopReviveService reads each revive queue after the revive group's offset (CID_RMQ_SYS_REVIVE_GROUP, the
last queue offset it finished), keys checkpoints by topic + group + queue + start offset + pop time +
broker name, sets the bit of each ack that follows its checkpoint, and once a checkpoint's revive time is
more than 2 s behind the newest deliver time it has read, copies every unacked message into the POP retry
topic (`%RETRY%group_topic`, or `%RETRY%group+topic` with retry topic V2; a checkpoint of a retry topic
revives into that topic) and commits the checkpoint's queue offset.

`pop_state` gives each popped message's state at `now`:
- `acked`: its bit is set by an ack in the revive queue (or by one still in the timer wheel);
- `in-flight`: unacked and invisible until the revive time, which is after `now`;
- `overdue`: unacked, the revive time passed, the revive service has not revived it yet (revive backlog);
- `revived`: its checkpoint is at or before the revive offset: the copy in the retry topic is shown
  when found (same UNIQ_KEY, FIRST_POP_TIME = the pop time).
Orderly pops write no checkpoint; their messages come from consumerOrderInfo.json (`store.pop.order`).
Nor does a broker with `popConsumerKVServiceEnable`: its popped, unacked messages are records in
`kvStore/` (`store.pop.kv`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from formats.config.offsets import offset_key
from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import Message
from formats.names import RETRY_PREFIX, pop_retry_topic
from formats.pop.bodies import AckMsg, PopCheckPoint
from store.broker.messagerebuild import queue_message_or_none, read_message_or_none
from store.pop.kv import kv_messages
from store.pop.order import orderly_messages
from store.storedir import Store
from store.timer.timerstore import message_deliver_ms

REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
CK_TAG, ACK_TAG, BATCH_ACK_TAG = "ck", "ack", "bAck"
ACK_TIME_INTERVAL_MS = 1000  # PopAckConstants.ackTimeInterval
SECOND_MS = 1000
PROPERTY_FIRST_POP_TIME = "1ST_POP_TIME"  # MessageConst.PROPERTY_FIRST_POP_TIME
STATES = ("acked", "in-flight", "overdue", "revived")


@dataclass
class ReviveRecord:
    """One ck / ack / bAck message: in a revive queue (`queue_offset`), or still in the timer wheel."""

    revive_queue: int
    queue_offset: int | None  # None while the record waits in rmq_sys_wheel_timer
    phy_offset: int
    tag: str | None
    deliver_ms: int | None
    checkpoint: PopCheckPoint | None = None
    ack: AckMsg | None = None
    error: str | None = None

    @property
    def in_timer(self) -> bool:
        return self.queue_offset is None


@dataclass
class Checkpoint:
    """A checkpoint and what the revive service pairs with it."""

    record: ReviveRecord
    ck: PopCheckPoint
    bits: int  # the bitmap once the acks are applied
    revived: bool  # at or before the revive offset: the revive service is done with it
    pending_acks: int = 0  # acks still in the timer wheel that set a bit

    @property
    def revive_time(self) -> int:
        return self.ck.revive_time


@dataclass
class PoppedMessage:
    group: str
    topic: str
    queue_id: int
    queue_offset: int
    pop_time: int
    invisible_until: int
    revive_queue: int
    ck_queue_offset: int | None
    state: str
    broker_name: str | None
    message: Message | None = None
    retry_topic: str | None = None
    retry_phy_offset: int | None = None
    orderly: bool = False  # an orderly pop (consumerOrderInfo.json, store.pop_order): no checkpoint
    kv_store: bool = False  # a PopConsumerRecord in kvStore/ (store.pop_kv): no checkpoint either

    def to_json(self) -> dict[str, Any]:
        m = self.message
        return {
            "group": self.group,
            "topic": self.topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "popTime": self.pop_time,
            "invisibleUntil": self.invisible_until,
            "reviveQueue": self.revive_queue,
            "ckQueueOffset": self.ck_queue_offset,
            "state": self.state,
            "brokerName": self.broker_name,
            "keys": None if m is None else m.keys,
            "tags": None if m is None else m.tags,
            "uniqKey": None if m is None else m.uniq_key,
            "retryTopic": self.retry_topic,
            "retryPhyOffset": self.retry_phy_offset,
            "orderly": self.orderly,
            "kvStore": self.kv_store,
        }


@dataclass
class ReviveQueue:
    queue_id: int
    min_offset: int
    max_offset: int
    revive_offset: int | None  # CID_RMQ_SYS_REVIVE_GROUP's committed offset (the last one finished)
    records: list[ReviveRecord] = field(default_factory=list)


@dataclass
class PopState:
    revive_topic: str | None
    broker_name: str | None
    now: int
    queues: list[ReviveQueue] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    messages: list[PoppedMessage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def revive_topics(store: Store) -> list[str]:
    """The revive topics that have consume queues in this store."""
    return sorted(t for t in store.consume_queues.topics() if t.startswith(REVIVE_TOPIC_PREFIX))


def _parse(record: ReviveRecord, body: bytes) -> None:
    try:
        if record.tag == CK_TAG:
            record.checkpoint = PopCheckPoint.parse(body)
        elif record.tag in (ACK_TAG, BATCH_ACK_TAG):
            record.ack = AckMsg.parse(body, batch=record.tag == BATCH_ACK_TAG)
        else:
            record.error = f"tag {record.tag!r} is none of ck, ack, bAck: the revive service skips it"
    except FormatError as exc:
        record.error = exc.message


def revive_offsets(store: Store, topic: str) -> dict[int, int]:
    """CID_RMQ_SYS_REVIVE_GROUP's committed offset per revive queue."""
    try:
        model = store.config("consumerOffset.json").load().model
    except MqtoolError:
        return {}
    return dict(model.offset_table.get(offset_key(topic, REVIVE_GROUP), {}))


def _queue_records(store: Store, topic: str, queue_id: int) -> Iterator[ReviveRecord]:
    cq = store.consume_queue(topic, queue_id)
    for q, phy, size, _tags in cq.units(cq.min_offset, cq.max_offset).tolist():
        msg = read_message_or_none(store, phy, size)
        record = ReviveRecord(queue_id, q, phy, None if msg is None else msg.tags, None)
        if msg is None:
            record.error = f"no message at {phy} (revive queue {queue_id} offset {q})"
        else:
            record.deliver_ms = message_deliver_ms(msg)
            _parse(record, msg.body)
        yield record


def timer_revive_messages(store: Store, topic: str) -> Iterator[tuple[int, int, Message, int | None]]:
    """(revive queue, position, message, deliver ms) of the ck / ack records still in rmq_sys_wheel_timer
    for `topic` (not yet delivered by the timer)."""
    import numpy as np
    import pyarrow.compute as pc

    from store.timer.columns import STATE_CODE, timer_columns
    from store.timer.timerstore import TimerStore

    cols = timer_columns(store, TimerStore.open(store), now=0, copies=False)  # waiting ones only
    if not len(cols):
        return
    waiting = np.isin(cols.state, [STATE_CODE[s] for s in ("waiting", "not-enqueued", "unknown")])
    ours = pc.fill_null(pc.equal(cols.real_topic, topic), False).to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(waiting & ours & cols.found & cols.has_real_queue_id).tolist():
        msg = read_message_or_none(store, int(cols.phy_offset[i]), int(cols.size[i]))
        if msg is None:
            continue
        deliver = int(cols.deliver_ms[i]) if cols.has_deliver[i] else None
        yield int(cols.real_queue_id[i]), int(cols.phy_offset[i]), msg, deliver


def _timer_records(store: Store, topic: str) -> Iterator[ReviveRecord]:
    for queue, phy, msg, deliver in timer_revive_messages(store, topic):
        record = ReviveRecord(queue, None, phy, msg.tags, deliver)
        _parse(record, msg.body)
        yield record


def checkpoints_broker(names: set[str | None], notes: list[str]) -> str | None:
    """The broker name acks without one pair under, when broker.conf does not say: the one the
    checkpoints (their broker names: `names`) carry (PopMessageProcessor writes the broker's own name
    into each)."""
    names = set(names)
    names.discard(None)
    if len(names) == 1:
        return names.pop()
    if names:
        notes.append(
            f"checkpoints name several brokers ({', '.join(sorted(names))}): acks without a broker name pair "
            "only with --broker-config's brokerName"
        )
    return None


def merge_key(
    topic: str | None, group: str | None, queue_id: int, start: int, pop_time: int, broker: str | None
) -> str:
    """PopReviveService's key: Java string concatenation (null prints as "null")."""
    return "".join("null" if p is None else str(p) for p in (topic, group, queue_id, start, pop_time, broker))


def _index_of_ack(ck: PopCheckPoint, ack_offset: int) -> int:
    """`PopCheckPoint.indexOfAck`."""
    if ack_offset < ck.start_offset:
        return -1
    if not ck.queue_offset_diff:
        return ack_offset - ck.start_offset if ack_offset - ck.start_offset < ck.num else -1
    diff = ack_offset - ck.start_offset
    return ck.queue_offset_diff.index(diff) if diff in ck.queue_offset_diff else -1


def pair_queue(queue: ReviveQueue, broker_name: str | None, notes: list[str]) -> list[Checkpoint]:
    """Checkpoints of one revive queue with their acks applied, in queue order, as the revive service
    pairs them: an ack sets a bit of the checkpoint read before it with the same key."""
    by_key: dict[str, Checkpoint] = {}
    out: list[Checkpoint] = []
    ordered = sorted(queue.records, key=lambda r: (r.in_timer, r.queue_offset or 0, r.deliver_ms or 0))
    for r in ordered:
        if r.error:
            continue
        if r.checkpoint is not None:
            ck = r.checkpoint
            if ck.topic is None or ck.cid is None:
                continue  # the revive service skips it
            revived = (
                not r.in_timer
                and queue.revive_offset is not None
                and r.queue_offset is not None
                and r.queue_offset <= queue.revive_offset
            )
            cp = Checkpoint(r, ck, ck.bit_map, revived)
            by_key[merge_key(ck.topic, ck.cid, ck.queue_id, ck.start_offset, ck.pop_time, ck.broker_name)] = (
                cp
            )
            out.append(cp)
        elif r.ack is not None:
            a = r.ack
            broker = a.broker_name if a.broker_name and a.broker_name.strip() else broker_name
            cp = by_key.get(
                merge_key(a.topic, a.consumer_group, a.queue_id, a.start_offset, a.pop_time, broker)
            )
            if cp is None:
                continue
            for offset in a.ack_offset_list if a.batch else [a.ack_offset]:
                index = _index_of_ack(cp.ck, offset)
                if index > -1:
                    cp.bits |= 1 << index
                    cp.pending_acks += r.in_timer
                else:
                    notes.append(
                        f"revive queue {queue.queue_id}: an ack of offset {offset} is not in its checkpoint "
                        f"({cp.ck.topic} queue {cp.ck.queue_id} from {cp.ck.start_offset})"
                    )
    return out


def revive_targets(ck: PopCheckPoint) -> list[str]:
    """Where `reviveRetry` copies an unacked message: the checkpoint's topic when it is a retry topic, else
    the POP retry topic (V1 `_`, or V2 `+` when the broker has enableRetryTopicV2: both are looked at)."""
    if ck.topic is None or ck.cid is None:
        return []
    if ck.topic.startswith(RETRY_PREFIX):
        return [ck.topic]
    return [pop_retry_topic(ck.topic, ck.cid), pop_retry_topic(ck.topic, ck.cid, v2=True)]


def _retry_copies(store: Store, topics: set[str]) -> dict[tuple[str, str, str], int]:
    """(retry topic, UNIQ_KEY, FIRST_POP_TIME) -> position of the revived copy."""
    out: dict[tuple[str, str, str], int] = {}
    known = set(store.consume_queues.topics())
    for topic in sorted(topics & known):
        for queue_id in store.consume_queues.queue_ids(topic):
            cq = store.consume_queue(topic, queue_id)
            for _q, phy, size, _t in cq.units(cq.min_offset, cq.max_offset).tolist():
                msg = read_message_or_none(store, phy, size)
                if msg is not None and msg.uniq_key:
                    first_pop = msg.properties.get(PROPERTY_FIRST_POP_TIME, "")
                    out.setdefault((topic, msg.uniq_key, first_pop), phy)
    return out


def pop_state(store: Store, *, now: int) -> PopState:
    """Every revive queue, its checkpoints paired with their acks, and each popped message's state."""
    topics = revive_topics(store)
    state = PopState(topics[0] if topics else None, store.layout.broker_config.brokerName, now)
    state.messages.extend(orderly_messages(store, now=now, notes=state.notes))
    state.messages.extend(kv_messages(store, now=now, notes=state.notes))
    if not topics:
        return state
    if len(topics) > 1:
        state.notes.append(f"several revive topics ({', '.join(topics)}): only {topics[0]} is read")
    topic = topics[0]
    offsets = revive_offsets(store, topic)
    queues = {
        qid: ReviveQueue(qid, cq.min_offset, cq.max_offset, offsets.get(qid))
        for qid in store.consume_queues.queue_ids(topic)
        for cq in [store.consume_queue(topic, qid)]
    }
    for qid, queue in queues.items():
        queue.records.extend(_queue_records(store, topic, qid))
    for r in _timer_records(store, topic):
        queues.setdefault(
            r.revive_queue, ReviveQueue(r.revive_queue, 0, 0, offsets.get(r.revive_queue))
        ).records.append(r)
    state.queues = [queues[q] for q in sorted(queues)]
    if state.broker_name is None:
        names = {
            r.checkpoint.broker_name for q in state.queues for r in q.records if r.checkpoint is not None
        }
        state.broker_name = checkpoints_broker(names, state.notes)
    for queue in state.queues:
        state.checkpoints.extend(pair_queue(queue, state.broker_name, state.notes))
        bad = [r for r in queue.records if r.error]
        if bad:
            state.notes.append(
                f"revive queue {queue.queue_id}: {len(bad)} record(s) unreadable, first: {bad[0].error}"
            )
    retry_topics = {t for cp in state.checkpoints for t in revive_targets(cp.ck)}
    copies = _retry_copies(store, retry_topics) if any(cp.revived for cp in state.checkpoints) else {}
    for cp in state.checkpoints:
        ck = cp.ck
        for j, offset in enumerate(ck.ack_offsets()):
            if cp.bits >> j & 1 and j < 32:
                st = "acked"
            elif cp.revived:
                st = "revived"
            elif now < ck.revive_time:
                st = "in-flight"
            else:
                st = "overdue"
            msg = queue_message_or_none(store, ck.topic, ck.queue_id, offset)
            row = PoppedMessage(
                ck.cid,
                ck.topic,
                ck.queue_id,
                offset,
                ck.pop_time,
                ck.revive_time,
                cp.record.revive_queue,
                cp.record.queue_offset,
                st,
                ck.broker_name,
                msg,
            )
            if st == "revived" and msg is not None and msg.uniq_key:
                for t in revive_targets(ck):
                    phy = copies.get((t, msg.uniq_key, str(ck.pop_time)))
                    if phy is None and msg.reconsume_times > 0:
                        phy = copies.get((t, msg.uniq_key, msg.properties.get(PROPERTY_FIRST_POP_TIME, "")))
                    if phy is not None:
                        row.retry_topic, row.retry_phy_offset = t, phy
                        break
            state.messages.append(row)
    return state


__all__ = [
    "ACK_TAG",
    "BATCH_ACK_TAG",
    "CK_TAG",
    "REVIVE_GROUP",
    "REVIVE_TOPIC_PREFIX",
    "STATES",
    "checkpoints_broker",
    "revive_offsets",
    "timer_revive_messages",
    "Checkpoint",
    "PopState",
    "PoppedMessage",
    "ReviveQueue",
    "ReviveRecord",
    "merge_key",
    "pair_queue",
    "pop_state",
    "revive_targets",
    "revive_topics",
]
