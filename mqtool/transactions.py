"""Transaction queue (`mqtool txn`): which half messages are pending, committed or rolled back, and ending
them offline exactly as EndTransactionProcessor does.

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

Writing (`plan_end` + `execute_end`): a commit appends the commit copy (`endMessageTransaction`: the half's
whole property map re-serialised, SYSFLAG type COMMIT, PREPARED TRANSACTION OFFSET = the half's offset) to
the real queue; commit and rollback both append an op message (5.x batched `h,` body, 4.9.x one per
offset). Dry run by default; `--execute` under the write safety rules; idempotent (a done transaction is
left alone, a commit copy already written by an interrupted run is reused and only the op is added).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from formats.commitlog import Message, java_parse_int
from formats.errors import MqtoolError
from formats.javahash import tags_code as tags_hash
from formats.properties import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
)
from formats.structs import TRANSACTION_COMMIT_TYPE, TRANSACTION_TYPE_MASK
from store.filewrites import crash_point
from store.messagerebuild import (
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    broker_major,
    planned_json,
    queue_max_offset,
    read_message_or_none,
    refuse_unclean,
    store_writer,
    units_after,
)
from store.storedir import Store
from store.transaction import (
    CHECK_MAX_TIME_TOPIC,
    PROPERTY_CHECK_IMMUNITY,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_ID,
    TRANS_GROUP,
    TRANSACTION_TIMEOUT_MS,
    HalfRecord,
    OpRecord,
    OpScan,
    TransactionError,
    end_message_transaction,
    java_parse_long,
    op_bodies,
    op_message,
    op_properties,
    parse_op_body,
    scan_ops,
)
from store.version import BrokerVersion

State = Literal["pending", "committed", "rolled-back", "discarded"]
STATES: tuple[str, ...] = ("pending", "committed", "rolled-back", "discarded")
Action = Literal["commit", "rollback"]


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
# txn list rendering


def filter_state(report: TxnReport, state: str) -> list[Transaction]:
    if state == "all":
        return list(report.transactions)
    if state not in STATES:
        raise TransactionError(f"unknown --state {state!r}; choose one of {', '.join(STATES)}, all")
    return [t for t in report.transactions if t.state == state]


# ---------------------------------------------------------------------------------------------------
# commit / rollback: the records EndTransactionProcessor writes


@dataclass
class EndRequest:
    """One END_TRANSACTION to carry out, and what it will write."""

    transaction: Transaction
    action: Action
    status: Literal["write", "done"]  # done: already ended this way, nothing to write
    commit_record: Message | None = None  # to write
    existing_commit: Message | None = None  # written earlier (reused)
    op_offsets: list[int] = field(default_factory=list)
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        t = self.transaction
        rec = self.commit_record
        return {
            "halfQueueOffset": t.half_queue_offset,
            "queueId": t.queue_id,
            "action": self.action,
            "status": self.status,
            "state": t.state,
            "targetHalfQueueOffset": t.target.queue_offset,
            "targetPhyOffset": t.target.message.physical_offset,
            "realTopic": t.real_topic,
            "realQueueId": t.real_queue_id,
            "producerGroup": t.properties.get(PROPERTY_PRODUCER_GROUP),
            "transactionId": t.properties.get(PROPERTY_TRANSACTION_ID) or t.original.message.uniq_key,
            "commitQueueOffset": None if rec is None else rec.queue_offset,
            "commitRecord": None if rec is None else planned_json(rec, written=False),
            "existingCommitPhyOffset": None
            if self.existing_commit is None
            else self.existing_commit.physical_offset,
            "opOffsets": self.op_offsets,
            "reason": self.reason,
        }


@dataclass
class EndPlan:
    broker: BrokerVersion
    now: int
    requests: list[EndRequest]
    op_records: list[Message]
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[Message]:
        """What is appended, in order: each commit copy, then (5.x) the batched ops of each half queue;
        on 4.9.x each commit copy is followed by its own op, as EndTransactionProcessor writes them."""
        commits = [r.commit_record for r in self.requests if r.commit_record is not None]
        if self.broker.major >= 5:
            return commits + self.op_records
        out: list[Message] = []
        ops = iter(self.op_records)
        for r in self.requests:
            if r.status != "write":
                continue
            if r.commit_record is not None:
                out.append(r.commit_record)
            out.extend(next(ops) for _ in r.op_offsets)
        return out

    @property
    def changes_anything(self) -> bool:
        return bool(self.op_records)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerVersion": self.broker.major,
            "brokerVersionReason": self.broker.reason,
            "now": self.now,
            "requests": [r.to_json() for r in self.requests],
            "opMessages": [
                {"queueId": m.queue_id, "queueOffset": m.queue_offset, "body": m.body.decode("ascii")}
                for m in self.op_records
            ],
            "notes": self.notes,
        }


def select_halves(report: TxnReport, offsets: Iterable[int], queue_id: int = 0) -> list[Transaction]:
    chosen: list[Transaction] = []
    for h in offsets:
        t = report.find(h, queue_id)
        if t is None:
            raise TransactionError(f"no half message at {TRANS_HALF_TOPIC} queue {queue_id} offset {h}")
        if t not in chosen:
            chosen.append(t)
    return chosen


def select_for_resolve(
    report: TxnReport, *, older_than_ms: int | None = None, producer_group: str | None = None
) -> list[Transaction]:
    """Pending transactions born at least `older_than_ms` before now (and of `producer_group`)."""
    out = []
    for t in report.transactions:
        if t.state != "pending":
            continue
        if older_than_ms is not None and (t.age_ms is None or t.age_ms < older_than_ms):
            continue
        if producer_group is not None and t.properties.get(PROPERTY_PRODUCER_GROUP) != producer_group:
            continue
        out.append(t)
    return out


def plan_end(store: Store, report: TxnReport, transactions: list[Transaction], action: Action) -> EndPlan:
    """What EndTransactionProcessor writes for each transaction (acting as the answer to a check-back,
    so 5.x's check-immunity refusal of producer-side late requests does not apply).

    A transaction already ended the same way is left alone (idempotent); one ended the other way, or a
    rollback of a half whose commit copy is already stored, is refused before anything is written.
    """
    major = report.broker.major
    plan = EndPlan(report.broker, report.now, [], [])
    conflicts: list[tuple[str, int]] = []  # (why, phy of the half it concerns)
    check_offsets = {q.queue_id: q.check_offset for q in report.queues}
    for t in transactions:
        done_as: Action | None = None
        if t.state == "committed":
            done_as = "commit"
        elif t.state == "rolled-back":
            done_as = "rollback"
        if done_as is not None:
            if done_as != action:
                conflicts.append(
                    (f"half {t.half_queue_offset} is already {t.state}", t.target.message.physical_offset)
                )
            else:
                plan.requests.append(EndRequest(t, action, "done", reason=f"already {t.state}"))
            continue
        if action == "rollback" and t.commit is not None:
            conflicts.append(
                (
                    f"half {t.half_queue_offset} already has a commit copy in {t.commit.topic} (phy "
                    f"{t.commit.physical_offset}); it can only be committed",
                    t.target.message.physical_offset,
                )
            )
            continue
        target = t.target
        request = EndRequest(t, action, "write")
        if action == "commit":
            if t.commit is not None:
                request.existing_commit = t.commit
                request.reason = (
                    "commit copy already stored (interrupted earlier run): only the op is written"
                )
            else:
                try:
                    request.commit_record = end_message_transaction(
                        target.message, major, store_timestamp=report.now
                    )
                except TransactionError as exc:
                    conflicts.append((str(exc), target.message.physical_offset))
                    continue
        offsets = [target.queue_offset]
        low = check_offsets.get(t.queue_id, 0)
        for m in t.members:
            if m is not target and not m.is_immunity_copy and m.queue_offset >= low:
                offsets.append(m.queue_offset)  # would be checked again otherwise
        request.op_offsets = sorted(offsets)
        if len(offsets) > 1:
            plan.notes.append(
                f"half {t.half_queue_offset}: the op also names "
                f"{[o for o in request.op_offsets if o != target.queue_offset]} (copies the check service "
                "has not passed yet), so none of them is checked again"
            )
        plan.requests.append(request)
    if conflicts:  # the error points at the first one's half message
        file, position = store.commitlog.locate(conflicts[0][1])
        raise TransactionError("; ".join(why for why, _ in conflicts) + " (nothing written)", file, position)
    _build_ops(plan)
    _assign_queue_offsets(store, plan)
    return plan


def _build_ops(plan: EndPlan) -> None:
    major = plan.broker.major
    by_queue: dict[int, list[int]] = {}
    host: tuple[bytes, int] | None = None
    for r in plan.requests:
        if r.status != "write":
            continue
        by_queue.setdefault(r.transaction.queue_id, []).extend(r.op_offsets)
        if host is None:
            msg = r.transaction.original.message
            host = (msg.store_host, msg.store_port)
    if host is None:
        return
    if major < 5:
        for r in plan.requests:  # one op per offset, in request order
            if r.status == "write":
                for h in r.op_offsets:
                    plan.op_records.append(
                        op_message(r.transaction.queue_id, str(h).encode(), major, host, plan.now)
                    )
        return
    for queue_id, offsets in by_queue.items():
        for body in op_bodies(offsets, major):
            plan.op_records.append(op_message(queue_id, body, major, host, plan.now))


def _assign_queue_offsets(store: Store, plan: EndPlan) -> None:
    """Plan the new records' queue offsets from the queues' max offsets, in append order."""
    next_offset: dict[tuple[str, int], int] = {}
    replaced: dict[int, Message] = {}
    for msg in plan.records:
        key = (msg.topic, msg.queue_id)
        if key not in next_offset:
            next_offset[key] = queue_max_offset(store, *key)
        replaced[id(msg)] = replace(msg, queue_offset=next_offset[key])
        next_offset[key] += 1
    for r in plan.requests:
        if r.commit_record is not None:
            r.commit_record = replaced[id(r.commit_record)]
    plan.op_records = [replaced[id(m)] for m in plan.op_records]


# ---------------------------------------------------------------------------------------------------
# commit / rollback: execution and rendering


@dataclass
class EndResult:
    executed: bool
    written: list[Message] = field(default_factory=list)


def execute_end(
    store: Store, plan: EndPlan, execute: bool, *, replan: Callable[[Store], EndPlan] | None = None
) -> EndResult:
    """Append the plan's records (commit copies, then ops) and dispatch them, under the write safety
    rules. Dry run unless `execute`. With `replan`, the plan is made again under the store lock from
    fresh views of the store, and a plan that changed meanwhile is refused. A crash between a commit copy
    and its op is repaired by running the same command again: the half is still pending, its commit copy
    is found and reused, and only the op is written."""
    from mqtool.safety import write_guard

    result = EndResult(executed=False)
    with write_guard(store, execute) as writable:
        if not writable or not plan.changes_anything:
            return result
        refuse_unclean(store)
        writer = store_writer(store, plan.broker.major)
        if replan is not None:
            with Store(store.root, store.broker_config) as again:
                fresh = replan(again)
            if [(r.transaction.half_queue_offset, r.status, r.op_offsets) for r in fresh.requests] != [
                (r.transaction.half_queue_offset, r.status, r.op_offsets) for r in plan.requests
            ]:
                raise TransactionError("the store changed since the plan was made; run the command again")
        records = plan.records
        if plan.broker.major >= 5:  # commit copies first, then the batched ops (TransactionalOpBatchService)
            commits = [m for m in records if m.topic != TRANS_OP_HALF_TOPIC]
            result.written = writer.append(commits)
            crash_point("txn-commits-appended")
            result.written += writer.append([m for m in records if m.topic == TRANS_OP_HALF_TOPIC])
        else:  # 4.9.x: each op right after its commit copy, in one append session
            result.written = writer.append(records)
        result.executed = True
    return result


__all__ = [
    "CHECK_MAX_TIME_TOPIC",
    "STATES",
    "EndPlan",
    "EndRequest",
    "EndResult",
    "HalfRecord",
    "OpScan",
    "Transaction",
    "TransactionError",
    "TxnReport",
    "end_message_transaction",
    "execute_end",
    "filter_state",
    "list_transactions",
    "op_bodies",
    "op_message",
    "op_properties",
    "parse_op_body",
    "plan_end",
    "scan_ops",
    "select_for_resolve",
    "select_halves",
]
