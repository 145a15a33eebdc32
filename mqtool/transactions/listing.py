"""`txn list`: every transaction of the half queue(s) and its state, as the broker's check service sees them.

Reading (`TransactionalMessageBridge`, `TransactionalMessageServiceImpl.check`): half messages live in
`RMQ_SYS_TRANS_HALF_TOPIC` (queue 0), op messages in
`RMQ_SYS_TRANS_OP_HALF_TOPIC` (same queue id, tag `d`, body = half queue offsets: 4.9.x one decimal
offset, 5.1+ `h,h,h,` batches). A half is *done* when an op names it; *committed* when, in addition, a
record in its real queue (REAL_TOPIC/REAL_QID) has SYSFLAG type COMMIT and PREPARED TRANSACTION OFFSET =
the half's commitlog offset; *rolled back* otherwise. The check-back service re-appends halves it checks
(TRANSACTION_CHECK_TIMES incremented; 5.x immunity copies carry TRAN_PREPARED_QUEUE_OFFSET = the original
queue offset), so a transaction is the original half plus its re-put copies, keyed on the original offset;
an op naming any of them ends it. Halves given up by the check service were copied to
`TRANS_CHECK_MAX_TIME_TOPIC` (state `discarded`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from formats.errors import MqtoolError, UsageError
from formats.java.hash import tags_code as tags_hash
from formats.java.props import java_parse_long
from formats.message.commitlog import Message, java_parse_int
from formats.message.properties import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
)
from formats.names import TRANS_GROUP, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from formats.structs import TRANSACTION_COMMIT_TYPE, TRANSACTION_TYPE_MASK
from store.broker.messagerebuild import (
    broker_major,
    read_message_or_none,
    units_after,
)
from store.broker.transaction import (
    CHECK_MAX_TIME_TOPIC,
    PROPERTY_CHECK_IMMUNITY,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_ID,
    TRANSACTION_TIMEOUT_MS,
    HalfRecord,
    OpRecord,
    scan_ops,
)
from store.storedir import Store
from store.version import BrokerVersion

State = Literal["pending", "committed", "rolled-back", "discarded"]
STATES: tuple[str, ...] = ("pending", "committed", "rolled-back", "discarded")


# ---------------------------------------------------------------------------------------------------
# Reading: halves, ops, commit copies, discards


@dataclass
class Transaction:
    """An original half and its re-put copies, keyed on the original half queue offset."""

    queue_id: int
    members: list[HalfRecord]
    state: State = "pending"
    op: OpRecord | None = None
    op_named: int | None = None  # the half offset the op names
    commit: Message | None = None
    discard: Message | None = None
    notes: list[str] = field(default_factory=list)
    # derived at listing time
    age_ms: int | None = None
    check_max: int = 15
    timeout_ms: int = TRANSACTION_TIMEOUT_MS

    @property
    def original(self) -> HalfRecord:
        return self.members[0]

    @property
    def latest(self) -> HalfRecord:
        return self.members[-1]

    @property
    def target(self) -> HalfRecord:
        """The half an END_TRANSACTION names: the newest member that is not an immunity copy."""
        for member in reversed(self.members):
            if not member.is_immunity_copy:
                return member
        return self.original

    @property
    def half_queue_offset(self) -> int:
        return self.original.queue_offset

    @property
    def properties(self) -> dict[str, str]:
        return self.latest.message.properties

    @property
    def real_topic(self) -> str | None:
        return self.properties.get(PROPERTY_REAL_TOPIC)

    @property
    def real_queue_id(self) -> int | None:
        value = self.properties.get(PROPERTY_REAL_QUEUE_ID)
        return None if value is None else java_parse_int(value)

    @property
    def check_times(self) -> int:
        return self.latest.check_times or 0

    @property
    def immunity_ms(self) -> int | None:
        """`getImmunityTime`: CHECK_IMMUNITY_TIME_IN_SECONDS * 1000, at least transactionTimeOut."""
        value = self.properties.get(PROPERTY_CHECK_IMMUNITY)
        if value is None:
            return None
        seconds = java_parse_long(value)
        ms = seconds * 1000 if seconds is not None else 0
        return max(ms, self.timeout_ms)

    @property
    def immune(self) -> bool:
        immunity = self.immunity_ms
        return immunity is not None and self.age_ms is not None and self.age_ms < immunity

    def to_json(self) -> dict[str, Any]:
        msg = self.original.message
        props = self.properties
        commit = self.commit
        return {
            "halfQueueOffset": self.half_queue_offset,
            "phyOffset": msg.physical_offset,
            "state": self.state,
            "realTopic": self.real_topic,
            "realQueueId": self.real_queue_id,
            "producerGroup": props.get(PROPERTY_PRODUCER_GROUP),
            "transactionId": props.get(PROPERTY_TRANSACTION_ID) or msg.uniq_key,
            "checkTimes": self.check_times,
            "bornTimestamp": msg.born_timestamp,
            "queueId": self.queue_id,
            "uniqKey": msg.uniq_key,
            "keys": msg.keys,
            "tags": msg.tags,
            "storeTimestamp": msg.store_timestamp,
            "ageMs": self.age_ms,
            "transactionCheckMax": self.check_max,
            "checkLimitReached": self.check_times >= self.check_max,
            "checkImmunitySeconds": props.get(PROPERTY_CHECK_IMMUNITY),
            "immunityMs": self.immunity_ms,
            "immune": self.immune,
            "copies": [
                {
                    "queueOffset": m.queue_offset,
                    "phyOffset": m.message.physical_offset,
                    "checkTimes": m.check_times,
                }
                for m in self.members[1:]
            ],
            "latestQueueOffset": self.latest.queue_offset,
            "opQueueOffset": None if self.op is None else self.op.queue_offset,
            "opNamesHalfOffset": self.op_named,
            "commit": None
            if commit is None
            else {
                "topic": commit.topic,
                "queueId": commit.queue_id,
                "queueOffset": commit.queue_offset,
                "phyOffset": commit.physical_offset,
                "preparedTransactionOffset": commit.prepared_transaction_offset,
                "storeTimestamp": commit.store_timestamp,
            },
            "discardedTo": None
            if self.discard is None
            else {
                "topic": self.discard.topic,
                "queueId": self.discard.queue_id,
                "queueOffset": self.discard.queue_offset,
                "phyOffset": self.discard.physical_offset,
            },
            "notes": self.notes,
        }


@dataclass
class HalfQueueSummary:
    queue_id: int
    min_offset: int
    max_offset: int
    check_offset: int  # RMQ_SYS_TRANS_HALF_TOPIC@CID_RMQ_SYS_TRANS (absent: min offset)
    check_offset_stored: bool
    op_min_offset: int
    op_max_offset: int
    op_check_offset: int | None
    ops: int

    def to_json(self) -> dict[str, Any]:
        return {
            "queueId": self.queue_id,
            "minOffset": self.min_offset,
            "maxOffset": self.max_offset,
            "checkOffset": self.check_offset,
            "checkOffsetStored": self.check_offset_stored,
            "opMinOffset": self.op_min_offset,
            "opMaxOffset": self.op_max_offset,
            "opCheckOffset": self.op_check_offset,
            "opMessages": self.ops,
        }


@dataclass
class TxnReport:
    now: int
    broker: BrokerVersion
    transactions: list[Transaction]
    queues: list[HalfQueueSummary]
    check_max: int
    discarded_records: int = 0
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for t in self.transactions:
            out[t.state] += 1
        return out

    def find(self, half_offset: int, queue_id: int = 0) -> Transaction | None:
        for t in self.transactions:
            if t.queue_id == queue_id and any(m.queue_offset == half_offset for m in t.members):
                return t
        return None


def _check_offsets(store: Store, notes: list[str]) -> dict[tuple[str, int], int]:
    try:
        loaded = store.config("consumerOffset.json").load()
    except MqtoolError as exc:
        notes.append(f"consumerOffset.json cannot be loaded ({exc}): check progress taken as queue minimum")
        return {}
    out: dict[tuple[str, int], int] = {}
    for topic in (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC):
        for queue_id, offset in (loaded.model.offset_table.get(f"{topic}@{TRANS_GROUP}") or {}).items():
            out[(topic, queue_id)] = offset
    return out


def _group_halves(records: Iterable[HalfRecord]) -> list[list[HalfRecord]]:
    """Originals with their re-put copies: a copy joins the latest earlier group with its UNIQ_KEY
    (an immunity copy the group whose original offset it names)."""
    groups: list[list[HalfRecord]] = []
    by_uniq: dict[str, list[HalfRecord]] = {}
    by_offset: dict[int, list[HalfRecord]] = {}
    for record in records:
        uniq = record.message.uniq_key
        group = None
        if record.is_copy:
            named = record.prepared_queue_offset
            group = by_offset.get(named) if named is not None else None
            if group is None and uniq is not None:
                group = by_uniq.get(uniq)
        if group is None:
            group = [record]
            groups.append(group)
            by_offset[record.queue_offset] = group
        else:
            group.append(record)
        if uniq is not None:
            by_uniq[uniq] = group
    return groups


def _commit_copies(store: Store, transactions: list[Transaction]) -> dict[int, Message]:
    """Commit copies in the real queues, by PREPARED TRANSACTION OFFSET: per real queue the units after
    the first half that names it, with the halves' tags code, whose record has SYSFLAG type COMMIT."""
    wanted: dict[tuple[str, int], tuple[int, set[int]]] = {}
    for t in transactions:
        if t.real_topic is None or t.real_queue_id is None:
            continue
        key = (t.real_topic, t.real_queue_id)
        low, codes = wanted.get(key, (t.original.message.physical_offset, set()))
        codes.add(tags_hash(t.original.message.tags))
        wanted[key] = (min(low, t.original.message.physical_offset), codes)
    found: dict[int, Message] = {}
    for (topic, queue_id), (low, codes) in wanted.items():
        units = units_after(store, topic, queue_id, low)
        units = units[np.isin(units["tagsCode"], list(codes))]
        # only a record whose head says COMMIT is worth a whole decode: the real queues hold far more
        # plain messages than commit copies
        flags = store.commitlog.sysflags_at(units["phyOffset"])
        units = units[(flags >= 0) & (flags & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE)]
        for phy, size in zip(units["phyOffset"].tolist(), units["size"].tolist(), strict=True):
            msg = read_message_or_none(store, phy, size)
            if msg is not None and msg.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE:
                found.setdefault(msg.prepared_transaction_offset, msg)
    return found


def _discards(store: Store) -> list[Message]:
    out: list[Message] = []
    for queue_id in store.consume_queues.queue_ids(CHECK_MAX_TIME_TOPIC):
        cq = store.consume_queue(CHECK_MAX_TIME_TOPIC, queue_id)
        for _q, phy, size, _tags in cq.units().tolist():
            msg = read_message_or_none(store, phy, size)
            if msg is not None:
                out.append(msg)
    return out


def list_transactions(store: Store, *, now: int, broker_version: int | None = None) -> TxnReport:
    """Every transaction of the half queue(s) and its state (see the module doc)."""
    broker = broker_major(store, broker_version)
    check_max = store.broker_config.transactionCheckMax
    report = TxnReport(now, broker, [], [], check_max)
    progress = _check_offsets(store, report.notes)
    for queue_id in store.consume_queues.queue_ids(TRANS_HALF_TOPIC):
        cq = store.consume_queue(TRANS_HALF_TOPIC, queue_id)
        records: list[HalfRecord] = []
        for q, phy, size, _tags in cq.units().tolist():
            msg = read_message_or_none(store, phy, size)
            if msg is None:
                report.notes.append(f"half queue {queue_id} offset {q}: no message at phy {phy}")
                continue
            records.append(HalfRecord(queue_id, q, msg))
        ops = scan_ops(store, queue_id)
        report.notes.extend(f"op queue {queue_id}: {n}" for n in ops.notes)
        stored_check = (TRANS_HALF_TOPIC, queue_id) in progress
        check_offset = progress.get((TRANS_HALF_TOPIC, queue_id), cq.min_offset)
        op_min = op_max = 0
        if queue_id in store.consume_queues.queue_ids(TRANS_OP_HALF_TOPIC):
            op_cq = store.consume_queue(TRANS_OP_HALF_TOPIC, queue_id)
            op_min, op_max = op_cq.min_offset, op_cq.max_offset
        report.queues.append(
            HalfQueueSummary(
                queue_id,
                cq.min_offset,
                cq.max_offset,
                check_offset,
                stored_check,
                op_min,
                op_max,
                progress.get((TRANS_OP_HALF_TOPIC, queue_id)),
                ops.ops,
            )
        )
        for group in _group_halves(records):
            t = Transaction(queue_id, group, check_max=check_max)
            t.age_ms = now - t.original.message.born_timestamp
            for member in group:
                op = ops.by_half_offset.get(member.queue_offset)
                if op is not None:
                    t.op, t.op_named = op, member.queue_offset
                    break
            t.notes.extend(_half_notes(t))
            report.transactions.append(t)
    commits = _commit_copies(store, report.transactions)
    discards = _discards(store)
    report.discarded_records = len(discards)
    discard_by_uniq: dict[str, Message] = {}
    for d in discards:
        if d.uniq_key is not None:
            discard_by_uniq.setdefault(d.uniq_key, d)
    for t in report.transactions:
        for member in t.members:
            commit = commits.get(member.message.physical_offset)
            if commit is not None:
                t.commit = commit
                break
        _classify(t, discard_by_uniq, next(q.check_offset for q in report.queues if q.queue_id == t.queue_id))
    return report


def _half_notes(t: Transaction) -> list[str]:
    """What the broker would stumble on when ending this half."""
    notes = []
    if t.real_topic is None:
        notes.append("half message has no REAL_TOPIC")
    if t.properties.get(PROPERTY_PRODUCER_GROUP) is None:
        notes.append("half message has no PGROUP")
    return notes


def _classify(t: Transaction, discard_by_uniq: dict[str, Message], check_offset: int) -> None:
    uniq = t.original.message.uniq_key
    discard = discard_by_uniq.get(uniq) if uniq is not None else None
    if discard is not None and discard.born_timestamp == t.original.message.born_timestamp:
        t.discard = discard
    if t.op is not None:
        t.state = "committed" if t.commit is not None else "rolled-back"
        return
    if t.commit is not None:
        t.notes.append(
            f"a commit copy is already in {t.commit.topic} queue {t.commit.queue_id} (offset "
            f"{t.commit.queue_offset}) but no op marks the half done: `txn commit` only adds the op"
        )
    if t.discard is not None:
        t.state = "discarded"
        t.notes.append(
            f"copied to {CHECK_MAX_TIME_TOPIC} (phy {t.discard.physical_offset}): the check service gave up "
            f"on it (checked {t.check_times} times, transactionCheckMax {t.check_max}, or older than "
            "fileReservedTime)"
        )
        return
    if t.latest.queue_offset < check_offset:
        t.state = "discarded"
        t.notes.append(
            f"behind the check progress ({check_offset}) with no op, no re-put copy and no "
            f"{CHECK_MAX_TIME_TOPIC} copy: the check service will not look at it again"
        )
        return
    t.state = "pending"
    if t.check_times >= t.check_max:
        t.notes.append(f"checked {t.check_times} times: the next check round discards it")


# ---------------------------------------------------------------------------------------------------
# txn list --state


def filter_state(report: TxnReport, state: str) -> list[Transaction]:
    if state == "all":
        return list(report.transactions)
    if state not in STATES:
        raise UsageError(f"unknown --state {state!r}; choose one of {', '.join(STATES)}, all")
    return [t for t in report.transactions if t.state == state]
