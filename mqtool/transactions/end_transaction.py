"""`txn commit`, `txn rollback`, `txn resolve`: ending transactions offline exactly as
EndTransactionProcessor does.

A commit appends the commit copy (`endMessageTransaction`: the half's whole property map re-serialised,
SYSFLAG type COMMIT, PREPARED TRANSACTION OFFSET = the half's offset) to the real queue; commit and rollback
both append an op message (5.x batched `h,` body, 4.9.x one per offset). `plan_end` says what is written,
`execute_end` writes it: dry run by default, `--execute` under the write safety rules; idempotent (a done
transaction is left alone, a commit copy already written by an interrupted run is reused and only the op is
added).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from formats.message.commitlog import Message
from formats.names import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from mqtool.safety import refuse_unsupported_layout
from mqtool.transactions.listing import Transaction, TxnReport
from store.broker.messagerebuild import planned_json, queue_max_offset, refuse_unclean, store_writer
from store.broker.transaction import (
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_ID,
    TransactionError,
    end_message_transaction,
    op_bodies,
    op_message,
)
from store.io.filewrites import crash_point
from store.storedir import Store
from store.version import BrokerVersion

Action = Literal["commit", "rollback"]


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
    refuse_unsupported_layout(store)
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
# commit / rollback: execution


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
