"""`mqtool replicas salvage --from B --into A`: the messages only replica B holds, appended to replica A.

After a failover the stores of one broker part: a dead master's tail the slave never received, or a slave's
records past the point where the new master diverged. Those messages are lost to consumers unless someone
puts them back. This module finds them and appends them to A through the store's own write path
(`store.broker.messagerebuild.StoreWriter`: the broker's CommitLog rules, then the dispatch into
ConsumeQueues and index), as a producer re-sending them would: new queue offsets, physical offsets and
store times on A, A's store host, everything else of the record kept (topic, queue id, body, properties
with UNIQ_KEY, flag, sysFlag, born time and host, reconsume times).

What is copied (`plan_salvage`): B's messages at or after the end of the prefix both commitlogs share
(`mqtool.replicas.logdiff`: the record where they diverge, or A's end where B is ahead), each unless
- A already holds its UNIQ_KEY under its topic (the index, and the records past the index:
  `mqtool.query.msgid.query_by_id`), or an earlier candidate had it: `skip` - so a second run copies
  nothing;
- it is not a message a producer sends: a system topic (`TopicValidator.isSystemTopic`: schedule, half
  and op records, revive, trace... belong to the services of the broker that wrote them), a PREPARED or
  ROLLBACK record, an LMQ multi-dispatch record: `skip`, with the reason;
- A has no such queue to write (its topic not in A's topic config, or the queue id at or past its
  writeQueueNums): `refuse` for that message.
A message without UNIQ_KEY is copied and flagged (`unkeyed`): nothing tells whether A holds it.

Refused as a whole, in one line (fail closed): a source that is not a classic commitlog, a pair whose
broker.conf files name different brokers, and A named a slave by its broker.conf (brokerRole SLAVE or a
brokerId other than 0): a classic slave's log must stay a byte prefix of its master's - DefaultHAClient
reports its end and receives the master's bytes from there (5.3.3 DefaultHAClient.java:193-199) - so
records a slave wrote itself would be overwritten by, or diverge from, what its master ships; salvage into
the master and let HA carry them. The write guards are every append's (`mqtool.safety.write_guard`: dry run
by default, refused while a broker holds A's lock, layouts appends refuse - DLedger, controller mode,
compaction topics -, `abort` present).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from formats.names import is_system_topic
from mqtool.replicas.diff import identity
from mqtool.replicas.logdiff import compare_commitlogs
from store.checks.storefiles import topic_queue_counts
from store.queue.lmq import PROPERTY_INNER_MULTI_DISPATCH
from store.storedir import Store


class SalvageRefused(MqtoolError):
    """A salvage mqtool will not do on this pair."""


@dataclass
class SalvageRow:
    """One message of B past the common prefix and what happens to it."""

    message: Message
    action: str  # copy | skip | refuse
    reason: str | None = None
    unkeyed: bool = False
    written: Message | None = None

    def to_dict(self) -> dict[str, Any]:
        m = self.message
        out: dict[str, Any] = {
            "physicalOffset": m.physical_offset,
            "topic": m.topic,
            "queueId": m.queue_id,
            "queueOffset": m.queue_offset,
            "uniqKey": m.uniq_key,
            "keys": m.keys,
            "storeTimestamp": m.store_timestamp,
            "action": self.action,
            "reason": self.reason,
            "unkeyed": self.unkeyed,
        }
        w = self.written
        out["written"] = (
            None
            if w is None
            else {
                "physicalOffset": w.physical_offset,
                "queueOffset": w.queue_offset,
                "storeTimestamp": w.store_timestamp,
            }
        )
        return out


@dataclass
class SalvagePlan:
    into: Path
    source: Path
    prefix_end: int
    into_end: int
    source_end: int
    rows: list[SalvageRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    execute: bool = False
    executed: bool = False

    @property
    def to_copy(self) -> list[SalvageRow]:
        return [r for r in self.rows if r.action == "copy"]

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.action] = counts.get(r.action, 0) + 1
        return {
            "into": str(self.into),
            "from": str(self.source),
            "execute": self.execute,
            "executed": self.executed,
            "commonPrefixEnd": self.prefix_end,
            "intoEnd": self.into_end,
            "fromEnd": self.source_end,
            "counts": counts,
            "messages": [r.to_dict() for r in self.rows],
            "notes": self.notes,
        }


def _refuse_pair(into: Store, source: Store) -> None:
    for store, what in ((into, "--into"), (source, "--from")):
        kind = store.layout.kind.commitlog
        if kind != "classic":
            named = "DLedger" if kind.startswith("dledger") else kind
            raise SalvageRefused(
                f"{what} has a {named} commitlog: only classic commitlogs are salvaged", str(store.root)
            )
    a, b = identity(into, "A"), identity(source, "B")
    for x, y in ((a.broker_name, b.broker_name), (a.cluster, b.cluster)):
        if x is not None and y is not None and x != y:
            raise SalvageRefused(f"the broker.conf files name different brokers ({x} / {y}): not replicas")
    if a.is_master is False:
        raise SalvageRefused(
            "--into is a slave by its broker.conf: a classic slave's commitlog must stay a byte prefix of "
            "its master's (DefaultHAClient reports its end and receives the master's bytes from there, 5.3.3 "
            "DefaultHAClient.java:193-199); salvage into the master and let HA carry the messages",
            str(into.root),
        )


def _why_not_sent(m: Message) -> str | None:
    """Why a record is no message a producer sends (not salvaged), or None."""
    if is_system_topic(m.topic):
        return "a system topic: its records belong to the services of the broker that wrote them"
    if m.transaction_type in ("PREPARED", "ROLLBACK"):
        return f"a {m.transaction_type} transaction record: the broker's transaction service owns it"
    if m.properties.get(PROPERTY_INNER_MULTI_DISPATCH):
        return "an LMQ multi-dispatch record: not salvaged"
    return None


def _held_by(into: Store, m: Message) -> bool:
    from mqtool.query.msgid import query_by_id

    found = query_by_id(into, m.uniq_key, topic=m.topic, scan=True)
    return any(x.uniq_key == m.uniq_key and x.topic == m.topic for x in found.messages)


def plan_salvage(into: Store, source: Store) -> SalvagePlan:
    """What `salvage` would copy from `source` into `into` (see the module docstring)."""
    _refuse_pair(into, source)
    diff = compare_commitlogs(into.commitlog, source.commitlog)
    plan = SalvagePlan(into.root, source.root, diff.prefix_end, diff.max_offsets[0], diff.max_offsets[1])
    if diff.prefix_end >= diff.max_offsets[1]:
        plan.notes.append("--from holds nothing past the prefix both commitlogs share: nothing to salvage")
        return plan
    queues = topic_queue_counts(into)
    if queues is None:
        raise SalvageRefused(
            "--into has no topic config to judge the target queues by", str(into.config_dir / "topics.json")
        )
    seen: set[tuple[str, str]] = set()
    for record in source.commitlog.iter_records(diff.prefix_end):
        if not isinstance(record, Message):
            if record.kind not in ("blank", "end"):
                plan.notes.append(f"--from's walk stops at {record.physical_offset}: {record.kind}")
            continue
        row = SalvageRow(record, "copy")
        plan.rows.append(row)
        why = _why_not_sent(record)
        counts = queues.get(record.topic)
        if why is not None:
            row.action, row.reason = "skip", why
        elif counts is None:
            row.action, row.reason = "refuse", f"--into has no topic {record.topic}"
        elif record.queue_id >= counts[1]:
            row.action = "refuse"
            row.reason = f"--into's {record.topic} has {counts[1]} write queue(s): no queue {record.queue_id}"
        elif not record.uniq_key:
            row.unkeyed = True
        elif (record.topic, record.uniq_key) in seen:
            row.action, row.reason = "skip", "an earlier message past the prefix has its UNIQ_KEY"
        elif _held_by(into, record):
            row.action, row.reason = "skip", "--into already holds its UNIQ_KEY"
        if row.action == "copy" and record.uniq_key:
            seen.add((record.topic, record.uniq_key))
    if any(r.unkeyed for r in plan.rows):
        plan.notes.append(
            f"{sum(r.unkeyed for r in plan.rows)} message(s) without UNIQ_KEY are copied: nothing tells "
            "whether --into holds them already"
        )
    return plan


def salvage(
    into: Store, source: Store, *, execute: bool = False, note: Callable[[str], None] | None = None
) -> SalvagePlan:
    """Plan the salvage; with `execute`, append the messages to copy to `into` under its store lock."""
    from mqtool.safety import warn, write_guard
    from store.broker.messagerebuild import refuse_unclean, store_writer

    def targets():
        return store_writer(into).targets([r.message for r in plan.to_copy])

    plan = plan_salvage(into, source)
    plan.execute = execute
    with write_guard(into, execute, note=note or warn, targets=targets) as writable:
        if not writable or not plan.to_copy:
            return plan
        refuse_unclean(into)
        with Store(into.root, into.broker_config) as again, Store(source.root, source.broker_config) as src:
            fresh = plan_salvage(again, src)  # under the lock: what is there now
        if [(r.message.physical_offset, r.action) for r in fresh.rows] != [
            (r.message.physical_offset, r.action) for r in plan.rows
        ]:
            raise SalvageRefused("the stores changed since the plan was made; run the command again")
        writer = store_writer(into)
        written = writer.append([r.message for r in plan.to_copy], own_store_host=True)
        for row, w in zip(plan.to_copy, written, strict=True):
            row.written = w
        plan.notes.extend(writer.warnings)
        plan.executed = True
    return plan


__all__ = ["SalvagePlan", "SalvageRefused", "SalvageRow", "plan_salvage", "salvage"]
