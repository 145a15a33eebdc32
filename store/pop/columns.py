"""The revive topic's checkpoints as columns: the fast twin of `store.pop.revive.pop_state` for what `pop
stats` sums (per checkpoint: group, revive queue, revive time, messages popped, acked, revived), for revive
topics of millions of records.

The same rules as `pop_state` (see that module's doc), without a Python object per record: the revive
queues' records come from one columnar walk (`store.log.scan.records_at`, their TAGS and bodies), the bodies
are parsed by `formats.pop.columns` (the pattern's fast path, the reference parser for the rest), and
the pairing is vectorised: PopReviveService's merge key (the same Java string concatenation, so keys
that concatenate alike pair alike) is dictionary-encoded, and each ack pairs with the checkpoint read
last before it in its revive queue with that key (a running maximum over the records sorted by queue,
key and read order). Ack offsets are matched to a checkpoint's index by `indexOfAck` (consecutive
offsets, or the first equal entry of its queue-offset diffs). The records still in the timer wheel come
from `store.pop.revive.timer_revive_messages`, as `pop_state` reads them. A revive time beyond a Java long
(pop time + invisible time of garbage bodies) sends the whole store to the reference path.
tests/test_pop_columns.py checks the two against each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.pop.columns import ACK, BATCH_ACK, CK, ReviveBodies, parse_bodies
from store.log.scan import records_at
from store.pop.kv import kv_messages
from store.pop.order import orderly_messages
from store.pop.revive import (
    ACK_TAG,
    BATCH_ACK_TAG,
    CK_TAG,
    PoppedMessage,
    PopState,
    checkpoints_broker,
    pop_state,
    revive_offsets,
    revive_topics,
    timer_revive_messages,
)
from store.storedir import Store

KIND_OF_TAG = {CK_TAG: CK, ACK_TAG: ACK, BATCH_ACK_TAG: BATCH_ACK}
LOW_BITS = 32  # pop_state counts a message acked by its bit only below 32 (the Java int bitmap)


@dataclass
class QueueSummary:
    """A revive queue: its ConsumeQueue's range, the revive group's offset, its records in the timer."""

    queue_id: int
    min_offset: int
    max_offset: int
    revive_offset: int | None
    in_timer: int


@dataclass
class PopCounts:
    """What one POP group holds in one queue (or over all of them) at `now`: every popped message is acked,
    revived (copied into the retry topic), in flight (unacked, invisible until after `now`) or overdue
    (unacked, its invisible time passed, not revived yet); orderly pops count the same (never revived)."""

    popped: int = 0
    acked: int = 0
    in_flight: int = 0
    overdue: int = 0
    revived: int = 0
    oldest_invisible_until: int | None = None  # of the in-flight ones
    oldest_overdue: int | None = None  # the revive (visible-again) time of the oldest overdue one
    orderly: bool = False  # popped orderly (consumerOrderInfo.json): its offset stays at the first unacked

    def add(self, other: PopCounts) -> None:
        self.popped += other.popped
        self.acked += other.acked
        self.in_flight += other.in_flight
        self.overdue += other.overdue
        self.revived += other.revived
        self.oldest_invisible_until = _earliest(self.oldest_invisible_until, other.oldest_invisible_until)
        self.oldest_overdue = _earliest(self.oldest_overdue, other.oldest_overdue)
        self.orderly = self.orderly or other.orderly


def _earliest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


@dataclass
class PopColumns:
    """One row per checkpoint the revive service pairs (as `pop_state(...).checkpoints`, in that order)."""

    revive_topic: str | None
    broker_name: str | None
    now: int
    queues: list[QueueSummary] = field(default_factory=list)
    group: list[str] = field(default_factory=list)
    topic: list[str] = field(default_factory=list)  # the popped queue's topic and id
    queue_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    revive_queue: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    revive_time: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    messages: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # popped by it
    acked: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    revived: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    orderly: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # an orderly pop's message
    notes: list[str] = field(default_factory=list)

    @property
    def unacked(self) -> np.ndarray:
        return self.messages - self.acked

    def _orderly(self) -> np.ndarray:
        return self.orderly if len(self.orderly) == len(self.group) else np.zeros(len(self.group), bool)

    def queue_counts(self) -> dict[tuple[str, str, int], PopCounts]:
        """The one computation of what POP groups hold at `now`, per (group, topic, queueId): `pop stats`
        sums it per group, `offsets show` puts it on each queue's row; `pop list`'s states follow the same
        rule message by message (`store.pop.revive.pop_state`). A row's unacked messages are revived when
        its checkpoint is behind the revive offset, else in flight while its revive time is after `now`,
        else overdue."""
        n = len(self.group)
        if n == 0:
            return {}
        times = np.asarray(self.revive_time)
        unacked = self.unacked
        in_flight = ~self.revived & np.asarray(times > self.now, bool)
        overdue = ~self.revived & ~in_flight
        held = unacked > 0
        orderly = self._orderly()
        group_code = pc.dictionary_encode(pa.array(self.group, pa.string()))
        topic_code = pc.dictionary_encode(pa.array(self.topic, pa.string()))
        key = np.stack(
            [
                group_code.indices.to_numpy(zero_copy_only=False).astype(np.int64),
                topic_code.indices.to_numpy(zero_copy_only=False).astype(np.int64),
                np.asarray(self.queue_id, np.int64),
            ],
            axis=1,
        )
        keys, inverse = np.unique(key, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)

        def total(values: np.ndarray) -> list[int]:
            out = np.zeros(len(keys), np.int64)
            np.add.at(out, inverse, values.astype(np.int64))
            return out.tolist()

        def earliest(where: np.ndarray) -> list[int | None]:
            if times.dtype != object:  # the columnar path: int64 revive times
                out = np.full(len(keys), np.iinfo(np.int64).max, np.int64)
                np.minimum.at(out, inverse[where], times[where].astype(np.int64))
                seen = np.zeros(len(keys), bool)
                seen[inverse[where]] = True
                return [int(t) if ok else None for t, ok in zip(out.tolist(), seen.tolist(), strict=True)]
            found: list[int | None] = [None] * len(keys)  # the reference's Python ints (beyond a long)
            for k, t in zip(inverse[where].tolist(), times[where].tolist(), strict=True):
                found[k] = int(t) if found[k] is None else min(found[k], int(t))
            return found

        columns = (
            total(self.messages),
            total(self.acked),
            total(np.where(in_flight, unacked, 0)),
            total(np.where(overdue, unacked, 0)),
            total(np.where(self.revived, unacked, 0)),
            earliest(in_flight & held),
            earliest(overdue & held),
            total(orderly),
        )
        groups = group_code.dictionary.to_pylist()
        topics = topic_code.dictionary.to_pylist()
        return {
            (groups[g], topics[t], q): PopCounts(p, a, f, o, r, until, since, bool(order))
            for (g, t, q), p, a, f, o, r, until, since, order in zip(keys.tolist(), *columns, strict=True)
        }

    def group_counts(self) -> dict[str, PopCounts]:
        """`queue_counts` summed per group."""
        out: dict[str, PopCounts] = {}
        for (group, _topic, _queue), counts in sorted(self.queue_counts().items()):
            out.setdefault(group, PopCounts()).add(counts)
        return out

    def groups(self) -> set[str]:
        """The groups that popped messages with checkpoints (not orderly)."""
        flags = self._orderly().tolist()
        return {
            g for g, m, o in zip(self.group, self.messages.tolist(), flags, strict=True) if m > 0 and not o
        }

    def orderly_groups(self) -> set[str]:
        """The groups that popped orderly (consumerOrderInfo.json)."""
        flags = self._orderly().tolist()
        return {g for g, m, o in zip(self.group, self.messages.tolist(), flags, strict=True) if m > 0 and o}

    def add_messages(self, messages: list[PoppedMessage]) -> None:
        """One row per popped message without a checkpoint (an orderly pop, store.pop_order, or a kvStore
        record, store.pop_kv): its visible-again time as the revive time."""
        base = self._orderly()
        rows = [m for m in messages if m.orderly or m.kv_store]
        self.group = [*self.group, *(m.group for m in rows)]
        self.topic = [*self.topic, *(m.topic for m in rows)]

        def more(column: np.ndarray, values: list[Any]) -> np.ndarray:
            return np.concatenate([column, np.array(values, column.dtype)])

        self.queue_id = more(self.queue_id, [m.queue_id for m in rows])
        self.revive_queue = more(self.revive_queue, [m.revive_queue for m in rows])
        self.revive_time = more(self.revive_time, [m.invisible_until for m in rows])
        self.messages = more(self.messages, [1] * len(rows))
        self.acked = more(self.acked, [int(m.state == "acked") for m in rows])
        self.revived = more(self.revived, [False] * len(rows))
        self.orderly = np.concatenate([base, np.array([m.orderly for m in rows], bool)])

    @classmethod
    def of_state(cls, state: PopState, *, with_other_sources: bool = True) -> PopColumns:
        """The same columns from the reference `pop_state`."""
        cps = state.checkpoints
        out = cls(state.revive_topic, state.broker_name, state.now, notes=list(state.notes))
        out.queues = [
            QueueSummary(
                q.queue_id, q.min_offset, q.max_offset, q.revive_offset, sum(r.in_timer for r in q.records)
            )
            for q in state.queues
        ]
        out.group = [cp.ck.cid for cp in cps]
        out.topic = [cp.ck.topic for cp in cps]
        out.queue_id = np.array([cp.ck.queue_id for cp in cps], np.int64)
        out.revive_queue = np.array([cp.record.revive_queue for cp in cps], np.int64)
        out.revive_time = np.array([cp.revive_time for cp in cps], object)
        out.messages = np.array([len(cp.ck.ack_offsets()) for cp in cps], np.int64)
        out.acked = np.array(
            [
                sum(1 for j in range(min(len(cp.ck.ack_offsets()), LOW_BITS)) if cp.bits >> j & 1)
                for cp in cps
            ],
            np.int64,
        )
        out.revived = np.array([cp.revived for cp in cps], bool)
        if with_other_sources:
            out.add_messages(state.messages)
        return out


def _units(store: Store, topic: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """queue ids, queue offsets, positions and sizes of every unit of the revive queues, queue by queue."""
    parts = []
    for queue_id in store.consume_queues.queue_ids(topic):
        cq = store.consume_queue(topic, queue_id)
        units = cq.units(cq.min_offset, cq.max_offset)
        parts.append((np.full(len(units), queue_id, np.int64), units))
    if not parts:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, empty
    units = np.concatenate([u for _, u in parts])
    return (
        np.concatenate([q for q, _ in parts]),
        units["queueOffset"].astype(np.int64),
        units["phyOffset"].astype(np.int64),
        units["size"].astype(np.int64),
    )


def _text(values: pa.Array) -> pa.Array:
    """Java's string concatenation of a nullable string: "null" for null."""
    return pc.fill_null(values, "null")


def _number_text(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values, pa.int64()), pa.string())


def _first_index(ck_rows: np.ndarray, d) -> tuple[np.ndarray, np.ndarray]:
    """For checkpoints with queue-offset diffs: sorted (checkpoint, diff) codes and the first index of each
    in its checkpoint's list (`List.indexOf`)."""
    lens = np.maximum(d.lens[ck_rows], 0)
    owner = np.repeat(np.arange(len(ck_rows), dtype=np.int64), lens)
    start = np.repeat(d.starts[ck_rows], lens)
    index = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    values = d.values[start + index] if len(owner) else np.zeros(0, np.int64)
    codes = owner * (1 << 32) + (values + (1 << 31))  # diffs are Java ints
    uniq, first = np.unique(codes, return_index=True)
    return uniq, index[first]


def pop_columns(store: Store, *, now: int) -> PopColumns:
    """`pop_state(store, now=now)`'s checkpoints as columns, then the pops without one (orderly pops,
    kvStore records)."""
    out = _revive_columns(store, now=now)
    notes: list[str] = []
    out.add_messages(orderly_messages(store, now=now, notes=notes) + kv_messages(store, now=now, notes=notes))
    out.notes.extend(n for n in notes if n not in out.notes)
    return out


def _revive_columns(store: Store, *, now: int) -> PopColumns:
    """The checkpoints of the revive topic, paired with their acks, as columns."""
    topics = revive_topics(store)
    out = PopColumns(topics[0] if topics else None, store.layout.broker_config.brokerName, now)
    if not topics:
        return out
    if len(topics) > 1:
        out.notes.append(f"several revive topics ({', '.join(topics)}): only {topics[0]} is read")
    topic = topics[0]
    offsets = revive_offsets(store, topic)
    bounds = {
        qid: (cq.min_offset, cq.max_offset)
        for qid in store.consume_queues.queue_ids(topic)
        for cq in [store.consume_queue(topic, qid)]
    }
    rec = _revive_records(store, topic)
    for q in np.unique(rec.qid[rec.in_timer]).tolist():
        bounds.setdefault(q, (0, 0))
    bodies = _parse_records(rec)
    if out.broker_name is None:
        names = pc.unique(bodies.text["bn"].filter(pa.array(bodies.is_ck))).to_pylist()
        out.broker_name = checkpoints_broker(set(names), out.notes)
    rank = _read_rank(rec)
    acks = _paired_acks(rec, bodies, rank, out.broker_name)
    if not _fill_checkpoints(out, rec, bodies, rank, acks, offsets):
        # a revive time beyond a Java long: Python's ints
        return PopColumns.of_state(pop_state(store, now=now), with_other_sources=False)
    _add_queue_notes(out, rec, bodies, rank, acks, bounds, offsets)
    return out


@dataclass
class _ReviveRecords:
    """The revive queues' records: the ConsumeQueues' units (queue by queue), then the timer's records."""

    qid: np.ndarray  # revive queue
    qoff: np.ndarray  # queue offset (0 in the timer)
    phy: np.ndarray
    found: np.ndarray  # a record is there
    tags: pa.Array
    bodies: pa.Array  # in commitlog order: `back` gives each row's body
    back: np.ndarray
    in_timer: np.ndarray
    deliver: np.ndarray  # the timer's deliver time (0 for the queues' records)

    @property
    def n(self) -> int:
        return len(self.qid)


def _revive_records(store: Store, topic: str) -> _ReviveRecords:
    """The records of the revive queues' units (TAGS and body), then those still in the timer wheel."""
    qid, qoff, phy, size = _units(store, topic)
    # in commitlog order: records_at then hands its columns back without reordering them
    by_position = np.argsort(phy, kind="stable")
    back = np.empty_like(by_position)
    back[by_position] = np.arange(len(by_position))
    rec = records_at(store.commitlog, phy[by_position], size[by_position], ("TAGS",), bodies=True)
    found, tags, bodies = rec.found[back], rec.properties["TAGS"].take(pa.array(back)), rec.body
    timer = list(timer_revive_messages(store, topic))
    n_queue = len(qid)
    if timer:
        qid = np.concatenate([qid, np.array([t[0] for t in timer], np.int64)])
        phy = np.concatenate([phy, np.array([t[1] for t in timer], np.int64)])
        qoff = np.concatenate([qoff, np.zeros(len(timer), np.int64)])
        found = np.concatenate([found, np.ones(len(timer), bool)])
        tags = pa.concat_arrays([tags, pa.array([t[2].tags for t in timer], pa.string())])
        bodies = pa.concat_arrays([bodies, pa.array([t[2].body for t in timer], pa.binary())])
        back = np.concatenate([back, len(back) + np.arange(len(timer))])
    n = len(qid)
    deliver = np.zeros(n, np.int64)
    deliver[n_queue:] = [t[3] or 0 for t in timer]
    return _ReviveRecords(qid, qoff, phy, found, tags, bodies, back, np.arange(n) >= n_queue, deliver)


@dataclass
class _Bodies:
    """Each record's kind and parsed body, spread over all records (zeros and nulls where not parsed)."""

    kind: np.ndarray  # CK, ACK, BATCH_ACK, or -1 where the revive service skips the record
    kind_ok: np.ndarray  # kind, -1 where the body did not parse either
    parsed: ReviveBodies  # of the records with a kind
    parsed_row: np.ndarray  # a record's row in `parsed`
    num: dict[str, np.ndarray]
    text: dict[str, pa.Array]
    errors: dict[int, str]  # why a record is unreadable

    @property
    def is_ck(self) -> np.ndarray:
        return self.kind_ok == CK

    @property
    def has_key(self) -> np.ndarray:
        """Checkpoints with a topic and a group (those the revive service pairs)."""
        valid = self.is_ck & self.text["t"].is_valid().to_numpy(zero_copy_only=False)
        return valid & self.text["c"].is_valid().to_numpy(zero_copy_only=False)

    @property
    def is_ack(self) -> np.ndarray:
        return (self.kind_ok == ACK) | (self.kind_ok == BATCH_ACK)


def _parse_records(rec: _ReviveRecords) -> _Bodies:
    """Each record's kind by its tag, or why the revive service skips it; the bodies of the others parsed."""
    n = rec.n
    kind = np.full(n, -1, np.int8)
    codes = (
        pc.index_in(rec.tags, value_set=pa.array([CK_TAG, ACK_TAG, BATCH_ACK_TAG])).fill_null(-1).to_numpy()
    )
    kind[:] = np.array([CK, ACK, BATCH_ACK, -1], np.int8)[codes]
    kind[~rec.found] = -1
    errors: dict[int, str] = {}
    for i in np.flatnonzero(kind < 0).tolist():
        if not rec.found[i]:
            errors[i] = (
                f"no message at {int(rec.phy[i])} (revive queue {int(rec.qid[i])} offset {int(rec.qoff[i])})"
            )
        else:
            errors[i] = f"tag {rec.tags[i].as_py()!r} is none of ck, ack, bAck: the revive service skips it"
    readable = np.flatnonzero(kind >= 0)
    parsed = parse_bodies(rec.bodies.take(pa.array(rec.back[readable])), kind[readable])
    for j in np.flatnonzero(~parsed.ok).tolist():
        errors[int(readable[j])] = parsed.error[j]
    ok = np.zeros(n, bool)
    ok[readable] = parsed.ok

    def spread(values: np.ndarray) -> np.ndarray:
        full = np.zeros(n, values.dtype)
        full[readable] = values
        return full

    where = pa.array(kind >= 0)
    return _Bodies(
        kind=kind,
        kind_ok=np.where(ok, kind, -1),
        parsed=parsed,
        parsed_row=np.cumsum(kind >= 0) - 1,
        num={name: spread(v) for name, v in parsed.numbers.items()},
        text={
            name: pc.replace_with_mask(pa.nulls(n, pa.string()), where, v) for name, v in parsed.texts.items()
        },
        errors=errors,
    )


def _read_rank(rec: _ReviveRecords) -> np.ndarray:
    """The read order of each revive queue: its records by queue offset, then the timer's by deliver time."""
    seq = np.lexsort((rec.deliver, np.where(rec.in_timer, 0, rec.qoff), rec.in_timer, rec.qid))
    rank = np.empty(rec.n, np.int64)
    rank[seq] = np.arange(rec.n)
    return rank


@dataclass
class _Acks:
    """The acks paired with a checkpoint, one row per acked offset (a bAck has a row per offset)."""

    rows: np.ndarray  # record of each paired ack
    owner: np.ndarray  # per offset: its ack in `rows`
    position: np.ndarray  # per offset: its place in the ack's list
    offset: np.ndarray  # the acked queue offset
    ck_of: np.ndarray  # the record of the checkpoint it pairs with
    index: np.ndarray  # `indexOfAck` in that checkpoint (-1: not in it)


def _paired_acks(rec: _ReviveRecords, b: _Bodies, rank: np.ndarray, broker_name: str | None) -> _Acks:
    """Each ack with the checkpoint read last before it in its revive queue with the same merge key, its
    acked offsets, and their index in that checkpoint."""
    ack_rows, ack_ck = _pair_by_merge_key(rec, b, rank, broker_name)
    owner, position, offset = _acked_offsets(b, ack_rows)
    ck_of = ack_ck[owner]
    return _Acks(ack_rows, owner, position, offset, ck_of, _index_of_ack(b, offset, ck_of))


def _pair_by_merge_key(
    rec: _ReviveRecords, b: _Bodies, rank: np.ndarray, broker_name: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """PopReviveService's merge key for checkpoints and acks; each ack's record and its checkpoint's (a
    running maximum over the records sorted by queue, key and read order)."""
    text, num, has_key = b.text, b.num, b.has_key
    bn = text["bn"]
    unique_bn = pc.unique(bn)
    fallback = [v if v is not None and v.strip() else broker_name for v in unique_bn.to_pylist()]
    ack_bn = pa.array(fallback, pa.string()).take(pc.index_in(bn, value_set=unique_bn))
    broker = pc.if_else(pa.array(b.is_ck), bn, ack_bn)
    keyed = np.flatnonzero(has_key | b.is_ack)
    take = pa.array(keyed)
    key = pc.binary_join_element_wise(
        _text(text["t"].take(take)), _text(text["c"].take(take)), _number_text(num["q"][keyed]),
        _number_text(num["so"][keyed]), _number_text(num["pt"][keyed]), _text(broker.take(take)), "",
    )  # fmt: skip
    key_code = pc.dictionary_encode(key).indices.to_numpy(zero_copy_only=False)
    qid = rec.qid
    order = np.lexsort((rank[keyed], key_code, qid[keyed]))
    rows_sorted = keyed[order]
    ck_sorted = has_key[rows_sorted]
    m = len(order)
    new_group = np.ones(m, bool)
    if m:
        new_group[1:] = (key_code[order][1:] != key_code[order][:-1]) | (
            qid[rows_sorted][1:] != qid[rows_sorted][:-1]
        )
    start = np.maximum.accumulate(np.where(new_group, np.arange(m), 0)) if m else np.zeros(0, np.int64)
    last = np.maximum.accumulate(np.where(ck_sorted, np.arange(m), -1)) if m else np.zeros(0, np.int64)
    paired = ~ck_sorted & (last >= start)
    return rows_sorted[paired], rows_sorted[last[paired]]


def _acked_offsets(b: _Bodies, ack_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The acked offsets of each paired ack, in its list's order: (owner, position in the list, offset)."""
    batch = b.kind_ok[ack_rows] == BATCH_ACK
    aol = b.parsed.aol
    parsed_row = b.parsed_row
    lens = np.where(batch, np.maximum(aol.lens[parsed_row[ack_rows]], 0), 1)
    owner = np.repeat(np.arange(len(ack_rows)), lens)
    position = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    from_list = np.repeat(batch, lens)
    list_at = np.repeat(aol.starts[parsed_row[ack_rows]], lens) + position
    offset = np.where(
        from_list,
        aol.values[np.where(from_list, list_at, 0)] if len(aol.values) else 0,
        np.repeat(b.num["ao"][ack_rows], lens),
    )
    return owner, position, offset


def _index_of_ack(b: _Bodies, offset: np.ndarray, ck_of: np.ndarray) -> np.ndarray:
    """`indexOfAck`: consecutive offsets from the checkpoint's start, or the first equal entry of its
    queue-offset diffs; -1 when the offset is not in the checkpoint."""
    num, parsed_row = b.num, b.parsed_row
    so, ck_num = num["so"][ck_of], num["n"][ck_of]
    with np.errstate(over="ignore"):
        diff = offset - so
    reachable = (offset >= so) & (diff >= 0)  # diff < 0 here: beyond a Java long, in no checkpoint
    d = b.parsed.d
    d_lens = np.where(b.is_ck[ck_of], d.lens[parsed_row[ck_of]], -1)
    index = np.where(reachable & (d_lens <= 0) & (diff < ck_num), diff, -1)
    listed = reachable & (d_lens > 0) & (diff < 2**31)
    if listed.any():
        cks = np.unique(ck_of[listed])
        uniq, first = _first_index(parsed_row[cks], d)
        local = np.searchsorted(cks, ck_of[listed])
        code = local * (1 << 32) + (diff[listed] + (1 << 31))
        at = np.minimum(np.searchsorted(uniq, code), max(len(uniq) - 1, 0))
        hit = (uniq[at] == code) if len(uniq) else np.zeros(len(code), bool)
        index[listed] = np.where(hit, first[at] if len(uniq) else -1, -1)
    return index


def _fill_checkpoints(
    out: PopColumns,
    rec: _ReviveRecords,
    b: _Bodies,
    rank: np.ndarray,
    acks: _Acks,
    offsets: dict[int, int],
) -> bool:
    """The checkpoint rows in read order: bitmap with the acks' bits, messages, acked among them, revive
    time, revived. False (nothing set) when a revive time is beyond a Java long."""
    num, parsed_row = b.num, b.parsed_row
    cps = np.flatnonzero(b.has_key)
    cps = cps[np.lexsort((rank[cps],))]
    bits = np.zeros(rec.n, np.uint64)
    bits[cps] = num["bm"][cps].astype(np.int64) & 0xFFFFFFFF
    index, ck_of = acks.index, acks.ck_of
    low = (index >= 0) & (index < LOW_BITS)
    np.bitwise_or.at(bits, ck_of[low], np.left_shift(np.uint64(1), index[low].astype(np.uint64)))
    cp_d = b.parsed.d.lens[parsed_row[cps]]
    messages = np.maximum(num["n"][cps], 0).astype(np.int64)
    messages = np.where(cp_d > 0, np.minimum(messages, cp_d), messages)
    width = np.minimum(messages, LOW_BITS).astype(np.uint64)
    mask = np.where(width >= 64, np.uint64(2**64 - 1), (np.uint64(1) << width) - np.uint64(1))
    acked = np.bitwise_count(bits[cps] & mask).astype(np.int64)
    pt, it = num["pt"][cps], num["it"][cps]
    with np.errstate(over="ignore"):
        revive_time = pt + it
    if (((pt > 0) & (it > 0) & (revive_time < 0)) | ((pt < 0) & (it < 0) & (revive_time >= 0))).any():
        return False
    qid = rec.qid
    revive_of = np.array([offsets.get(q, -1) for q in qid[cps].tolist()], np.int64)
    has_revive = np.array([q in offsets for q in qid[cps].tolist()], bool)
    out.revived = ~rec.in_timer[cps] & has_revive & (rec.qoff[cps] <= revive_of)
    out.group = b.text["c"].take(pa.array(cps)).to_pylist()
    out.topic = b.text["t"].take(pa.array(cps)).to_pylist()
    out.queue_id = num["q"][cps]
    out.revive_queue = qid[cps]
    out.revive_time = revive_time
    out.messages = messages
    out.acked = acked
    return True


def _add_queue_notes(
    out: PopColumns,
    rec: _ReviveRecords,
    b: _Bodies,
    rank: np.ndarray,
    acks: _Acks,
    bounds: dict[int, tuple[int, int]],
    offsets: dict[int, int],
) -> None:
    """Notes, queue by queue (acks whose offset is not in their checkpoint, then unreadable records), and
    each revive queue's summary."""
    qid, text, num, errors = rec.qid, b.text, b.num, b.errors
    missed = np.flatnonzero(acks.index < 0)
    missed = missed[np.lexsort((acks.position[missed], rank[acks.rows[acks.owner[missed]]]))]
    by_queue: dict[int, list[str]] = {}
    for i in missed.tolist():
        ck = int(acks.ck_of[i])
        by_queue.setdefault(int(qid[ck]), []).append(
            f"revive queue {int(qid[ck])}: an ack of offset {int(acks.offset[i])} is not in its checkpoint "
            f"({text['t'][ck].as_py()} queue {int(num['q'][ck])} from {int(num['so'][ck])})"
        )
    bad_rows = sorted(errors)
    for q in sorted(bounds):
        out.notes.extend(by_queue.get(q, []))
        bad = [i for i in bad_rows if qid[i] == q]
        if bad:
            out.notes.append(f"revive queue {q}: {len(bad)} record(s) unreadable, first: {errors[bad[0]]}")
        timer_count = int(np.count_nonzero(rec.in_timer & (qid == q)))
        out.queues.append(QueueSummary(q, *bounds[q], offsets.get(q), timer_count))


__all__ = ["PopColumns", "PopCounts", "QueueSummary", "pop_columns"]
