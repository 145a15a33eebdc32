"""The findings of every store joined into one timeline per message: trace records and store facts in time
order, each consumer group's outcome, and the gaps named plainly.

A message is its UNIQ_KEY (the msgId its trace records carry; every copy the broker makes keeps it). What
the trace says and what the stores say are both shown, and where they disagree or one is silent the gap is
named: no trace records at all (a gRPC client writes none, and trace may be off), no Pub record (the send
was not traced, or its record was dropped when the client's trace buffer was full:
`AsyncTraceDispatcher.append` offers to a bounded queue and discards on full), a group whose committed
offset has passed the message without a SubAfter record, a SubBefore without its SubAfter, a Pub record
whose stored copy none of the stores holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from formats.names import DLQ_PREFIX, RETRY_PREFIX
from formats.trace import (
    CONSUME_RETURN_TYPES,
    END_TRANSACTION,
    PUB,
    RECALL,
    SUB_AFTER,
    SUB_BEFORE,
)
from mqtool.timeparse import format_time, zone_label
from mqtool.trace.lookup import StoreFindings, StoreRecord
from mqtool.trace.records import TraceRecordRow

NO_TRACE = "no trace records (gRPC client or trace disabled)"


@dataclass
class TimelineEvent:
    time: int | None  # epoch ms; None when neither the store nor the trace says when
    store: str
    source: str  # "trace" or "store"
    kind: str
    group: str | None
    text: str
    detail: dict[str, Any] = field(default_factory=dict)
    deliver: int | None = None  # a delay or timer copy's deliver time (epoch ms)

    def describe(self, zone: tzinfo = UTC) -> str:
        """The text, with the deliver time (if any) in `zone`."""
        if self.deliver is None:
            return self.text
        return f"{self.text}, deliver at {format_time(self.deliver, zone)} ({zone_label(zone)})"

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "store": self.store,
            "source": self.source,
            "kind": self.kind,
            "group": self.group,
            "text": self.describe(),
            "deliverTimestamp": self.deliver,
            "detail": self.detail,
        }


@dataclass
class GroupOutcome:
    """What became of the message for one consumer group."""

    group: str
    state: str
    consumed_by_offset: bool  # a committed offset of the group has passed one of its records
    sub_before: int = 0
    sub_after_ok: int = 0
    sub_after_failed: int = 0
    cost_ms: list[int] = field(default_factory=list)  # SubAfter costTime of each attempt
    retries: int = 0  # copies in the group's retry topics
    dead_lettered: bool = False
    pop_states: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "state": self.state,
            "consumedByOffset": self.consumed_by_offset,
            "subBefore": self.sub_before,
            "subAfterSuccess": self.sub_after_ok,
            "subAfterFailed": self.sub_after_failed,
            "costMs": list(self.cost_ms),
            "retries": self.retries,
            "deadLettered": self.dead_lettered,
            "popStates": list(self.pop_states),
        }


@dataclass
class MessageTimeline:
    msg_id: str  # the UNIQ_KEY
    topic: str | None
    keys: str | None
    tags: str | None
    producer_group: str | None
    events: list[TimelineEvent]
    records: list[StoreRecord]
    traces: list[TraceRecordRow]
    groups: list[GroupOutcome]
    gaps: list[str]
    send_cost_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "msgId": self.msg_id,
            "topic": self.topic,
            "keys": self.keys,
            "tags": self.tags,
            "producerGroup": self.producer_group,
            "sendCostMs": self.send_cost_ms,
            "events": [e.to_json() for e in self.events],
            "records": [r.to_json() for r in self.records],
            "traces": [t.to_json() for t in self.traces],
            "groups": [g.to_json() for g in self.groups],
            "gaps": list(self.gaps),
        }


@dataclass
class StoreSummary:
    store: str
    ok: bool
    seconds: float
    records: int
    traces: int
    trace_topics: list[str]
    error: str | None
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "ok": self.ok,
            "seconds": round(self.seconds, 4),
            "records": self.records,
            "traceRecords": self.traces,
            "traceTopics": list(self.trace_topics),
            "error": self.error,
            "notes": list(self.notes),
        }


@dataclass
class TraceReport:
    query: dict[str, Any]
    stores: list[StoreSummary]
    messages: list[MessageTimeline]
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[StoreSummary]:
        return [s for s in self.stores if not s.ok]

    def to_json(self) -> dict[str, Any]:
        return {
            "query": dict(self.query),
            "stores": [s.to_json() for s in self.stores],
            "messages": [m.to_json() for m in self.messages],
            "notes": list(self.notes),
        }


# --- events ---------------------------------------------------------------------------------------------


def _where(r: StoreRecord) -> str:
    return f"{r.topic}/{r.queue_id} offset {r.queue_offset} (phy {r.physical_offset})"


def _record_events(r: StoreRecord, original_topic: str | None) -> list[TimelineEvent]:
    text = {
        "stored": f"stored in {_where(r)} on {r.store_host}, born on {r.born_host}",
        "delivered": f"delivered into {_where(r)} (the broker's copy of its delayed record)",
        "delay": f"delay level {r.delay_level} copy in {_where(r)}: {r.state or 'state unknown'}",
        "timer": f"timer-wheel record in {_where(r)}: {r.state or 'state unknown'}",
        "recall": f"recall tombstone in {_where(r)} ({r.state or 'state unknown'})",
        "retry": f"retry copy #{r.reconsume_times} in {_where(r)}",
        "pop-retry": f"POP retry copy #{r.reconsume_times} in {_where(r)}",
        "dlq": f"dead-lettered into {_where(r)} after {r.reconsume_times - 1} retries",
        "half": f"transaction half in {_where(r)} (group {r.producer_group}): {r.state or 'state unknown'}",
        "commit": f"transaction committed: commit copy in {_where(r)}",
        "discard": f"transaction half discarded into {_where(r)} (transactionCheckMax reached)",
    }[r.role]
    group = _retry_group(r, original_topic)
    deliver = r.deliver_timestamp if r.role in ("delay", "timer") else None
    events = [TimelineEvent(r.store_timestamp, r.store, "store", r.role, group, text, r.to_json(), deliver)]
    for p in r.pop:
        events.append(
            TimelineEvent(
                p.get("popTime"),
                r.store,
                "store",
                "pop",
                p.get("group"),
                f"popped by {p.get('group')} from {_where(r)}: {p.get('state')} "
                f"(invisible until {p.get('invisibleUntil')})",
                p,
            )
        )
    return events


def _retry_group(r: StoreRecord, original_topic: str | None = None) -> str | None:
    """The group whose retry or dead-letter topic holds the record (`KeyBuilder.parseGroup`)."""
    if r.role == "dlq":
        return r.topic[len(DLQ_PREFIX) :]
    if r.role == "retry":
        return r.topic[len(RETRY_PREFIX) :]
    if r.role == "pop-retry":
        rest = r.topic[len(RETRY_PREFIX) :]
        if "+" in rest:  # retry topic V2: %RETRY%group+topic
            return rest.split("+", 1)[0]
        topic = original_topic or r.real_topic
        if topic and rest.endswith("_" + topic):
            return rest[: -len(topic) - 1]
        return rest
    return None


def _trace_event(t: TraceRecordRow, request_times: dict[tuple[str | None, str | None], int]) -> TimelineEvent:
    if t.context is None:
        return TimelineEvent(
            t.store_timestamp, t.store, "trace", "unreadable", None, t.error or "", t.to_json()
        )
    c, b = t.context, t.context.bean
    ok = "ok" if c.is_success else "FAILED"
    cost = 0 if c.cost_time is None else c.cost_time
    if c.trace_type == PUB:
        text = (
            f"Pub: {c.group_name} sent it from {t.client_host} to {b.store_host} ({b.msg_type}, "
            f"{b.body_length} bytes, offsetMsgId {b.offset_msg_id}): {ok} in {cost} ms"
        )
    elif c.trace_type == SUB_BEFORE:
        text = f"SubBefore: {c.group_name} on {t.client_host} starts consuming it (retry {b.retry_times})"
    elif c.trace_type == SUB_AFTER:
        code = c.context_code if c.context_code is not None else 0
        kind = CONSUME_RETURN_TYPES[code] if 0 <= code < len(CONSUME_RETURN_TYPES) else str(code)
        text = f"SubAfter: {c.group_name or '?'} on {t.client_host}: {ok} in {cost} ms ({kind})"
    elif c.trace_type == END_TRANSACTION:
        text = (
            f"EndTransaction: {c.group_name} ends transaction {b.transaction_id}: {b.transaction_state}"
            f"{' (from a transaction check)' if b.from_transaction_check else ''}"
        )
    elif c.trace_type == RECALL:
        text = f"Recall: {c.group_name} recalls it: {ok}"
    else:  # pragma: no cover - the decoder returns only the types above
        text = c.trace_type
    time = c.time_stamp
    if (
        time is None and c.trace_type == SUB_AFTER
    ):  # the cloud channel's SubAfter has no time: its SubBefore's
        time = request_times.get((c.group_name, c.request_id)) or request_times.get((None, c.request_id))
    kind = {PUB: "pub", SUB_BEFORE: "sub-before", SUB_AFTER: "sub-after", END_TRANSACTION: "end-transaction"}
    return TimelineEvent(
        time, t.store, "trace", kind.get(c.trace_type, "recall"), c.group_name, text, t.to_json()
    )


# --- groups and gaps ------------------------------------------------------------------------------------


def _groups(
    records: list[StoreRecord], traces: list[TraceRecordRow], original_topic: str | None
) -> list[GroupOutcome]:
    by: dict[str, GroupOutcome] = {}

    def get(group: str) -> GroupOutcome:
        return by.setdefault(group, GroupOutcome(group, "", False))

    for r in records:
        for group, passed in r.consumed.items():
            g = get(group)
            g.consumed_by_offset |= passed
        group = _retry_group(r, original_topic)
        if group is not None:
            g = get(group)
            if r.role == "dlq":
                g.dead_lettered = True
            else:
                g.retries += 1
        for p in r.pop:
            if p.get("group"):
                get(p["group"]).pop_states.append(str(p.get("state")))
    for t in traces:
        c = t.context
        if c is None or c.trace_type not in (SUB_BEFORE, SUB_AFTER) or not c.group_name:
            continue
        g = get(c.group_name)
        if c.trace_type == SUB_BEFORE:
            g.sub_before += 1
        elif c.is_success:
            g.sub_after_ok += 1
            g.cost_ms.append(c.cost_time or 0)
        else:
            g.sub_after_failed += 1
            g.cost_ms.append(c.cost_time or 0)
    for g in by.values():
        g.state = _state(g)
    return sorted(by.values(), key=lambda g: g.group)


def _state(g: GroupOutcome) -> str:
    attempts = g.sub_after_ok + g.sub_after_failed
    if g.dead_lettered:
        return f"dead-lettered after {g.retries} retries" if g.retries else "dead-lettered"
    if any(s in ("in-flight", "overdue") for s in g.pop_states):
        return "popped, not acked"
    if g.consumed_by_offset:
        if g.retries:
            return f"consumed after {g.retries} retr{'y' if g.retries == 1 else 'ies'}"
        return "consumed"
    if g.sub_after_ok:
        return "consumed per trace, offset not past it"
    if g.sub_after_failed or g.retries:
        return f"not consumed ({attempts} failed attempt{'s' if attempts != 1 else ''}, retrying)"
    return "not consumed yet"


def _gaps(records: list[StoreRecord], traces: list[TraceRecordRow], groups: list[GroupOutcome]) -> list[str]:
    readable = [t for t in traces if t.context is not None]
    gaps: list[str] = []
    if not readable:
        gaps.append(NO_TRACE)
    elif not any(t.context.trace_type == PUB for t in readable):
        gaps.append(
            "no Pub trace record: the producer sent it without trace (a gRPC client, or trace disabled), or "
            "its record was dropped (the client's trace buffer was full)"
        )
    stored = [r for r in records if r.role in ("stored", "half", "timer", "delay") or r.role == "commit"]
    for t in readable:
        c = t.context
        if (
            c.trace_type == PUB
            and c.is_success
            and not any(r.offset_msg_id == c.bean.offset_msg_id for r in records)
        ):
            where = f"on {c.bean.store_host} (offsetMsgId {c.bean.offset_msg_id})"
            gaps.append(
                f"the Pub record says it was stored {where}, but none of the stores read holds that record "
                "(another broker's store, or deleted by retention)"
            )
    if not records:
        gaps.append("none of the stores read holds a record of it")
    elif not stored and records:
        gaps.append(
            "only copies of it were found, not the record the producer sent (another broker's store?)"
        )
    for g in groups:
        if g.consumed_by_offset and not (g.sub_after_ok or g.sub_after_failed):
            gaps.append(f"{g.group}: consumed by offset, no SubAfter trace")
        if g.sub_before > g.sub_after_ok + g.sub_after_failed:
            gaps.append(
                f"{g.group}: {g.sub_before - g.sub_after_ok - g.sub_after_failed} SubBefore without a "
                "SubAfter (the consumer stopped mid-consume, or the record was lost)"
            )
        if g.sub_after_ok and not g.consumed_by_offset and not g.dead_lettered:
            gaps.append(
                f"{g.group}: its SubAfter says consumed, but no committed offset of it is past the message "
                "(not persisted yet, or reset since)"
            )
    for t in traces:
        if t.context is None:
            gaps.append(f"an unreadable trace message on {t.store}: {t.error}")
    return list(dict.fromkeys(gaps))


# --- joining ---------------------------------------------------------------------------------------------


def _first(values) -> Any:
    return next((v for v in values if v), None)


def build_timeline(msg_id: str, records: list[StoreRecord], traces: list[TraceRecordRow]) -> MessageTimeline:
    """One message's timeline from its records and trace records in every store."""
    pubs = [t.context for t in traces if t.context is not None and t.context.trace_type == PUB]
    originals = [r for r in records if r.role in ("stored", "commit", "delivered")]
    topic = _first(
        [r.topic for r in originals] + [r.real_topic for r in records] + [p.bean.topic for p in pubs]
    )
    keys = _first([r.keys for r in records] + [p.bean.keys for p in pubs])
    tags = _first([r.tags for r in records] + [p.bean.tags for p in pubs])
    producer = _first([p.group_name for p in pubs] + [r.producer_group for r in records])
    request_times = {}
    for t in traces:
        c = t.context
        if c is not None and c.trace_type == SUB_BEFORE and c.time_stamp is not None:
            request_times[(c.group_name, c.request_id)] = c.time_stamp
            request_times[(None, c.request_id)] = c.time_stamp
    events = [e for r in records for e in _record_events(r, topic)]
    events += [_trace_event(t, request_times) for t in traces]
    order = {"pub": 0, "end-transaction": 1, "recall": 1, "sub-before": 2, "sub-after": 3}
    events.sort(key=lambda e: (e.time is None, e.time or 0, order.get(e.kind, 1)))
    groups = _groups(records, traces, topic)
    cost = _first([p.cost_time for p in pubs if p.cost_time is not None])
    return MessageTimeline(
        msg_id,
        topic,
        keys,
        tags,
        producer,
        events,
        records,
        traces,
        groups,
        _gaps(records, traces, groups),
        cost,
    )


def join(findings: list[StoreFindings], query: dict[str, Any], ids: list[str]) -> TraceReport:
    """The report of a query over every store's findings: one timeline per UNIQ_KEY found."""
    stores = [
        StoreSummary(
            f.store,
            f.error is None,
            f.seconds,
            len(f.records),
            len(f.traces),
            f.trace_topics,
            f.error,
            f.notes,
        )
        for f in findings
    ]
    records: dict[str, list[StoreRecord]] = {}
    traces: dict[str, list[TraceRecordRow]] = {}
    seen_traces: set[tuple[str, int, int | None]] = set()
    bad: list[TraceRecordRow] = []
    for f in findings:
        for r in f.records:
            records.setdefault(r.uniq_key, []).append(r)
        for t in f.traces:
            mark = (t.store, t.physical_offset, t.record_index)
            if mark in seen_traces:
                continue
            seen_traces.add(mark)
            if t.context is None:
                bad.append(t)
            else:
                traces.setdefault(t.context.bean.msg_id or "", []).append(t)
    found = [u for u in dict.fromkeys([*ids, *records, *traces]) if u in records or u in traces]
    messages = [
        build_timeline(
            u, sorted(records.get(u, []), key=lambda r: (r.store_timestamp, r.store)), traces.get(u, []) + bad
        )
        for u in found
    ]
    notes = []
    if not messages:
        notes.append("no record and no trace record of it in any store read")
        if ids:
            messages.append(build_timeline(ids[0], [], bad))
    return TraceReport(query, stores, messages, notes)
