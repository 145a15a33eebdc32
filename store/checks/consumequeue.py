"""ConsumeQueue checks: units against their records, dispatch coverage, file tails."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from formats.consumequeue import FILLER_SIZE, MAX_ADDR
from formats.structs import (
    CQ_STORE_UNIT_SIZE,
)
from store.checks.lmq import lmq_unit_faults
from store.checks.problems import ERROR, WARNING, ProblemList, arrow_text, fmt
from store.checks.records import RecordIndex
from store.queue.lmq import is_lmq
from store.rocksdb.consumequeue import ROCKSDB_CQ_FILE_SIZE


@dataclass
class QueueFacts:
    """What the coverage check needs to know about one queue."""

    min_offset: int
    max_offset: int
    last_phy_end: int  # phy + size of its last unit (0 when empty)


class CqLocator:
    """File and position of ConsumeQueue units given their queue offsets; names are made on demand."""

    def __init__(self, queue_offsets: np.ndarray, topic: str, queue_id: int, file_size: int) -> None:
        self.queue_offsets = queue_offsets
        self.file_size = file_size
        self.prefix = arrow_text(f"consumequeue/{topic}/{queue_id}/")

    @functools.cached_property
    def start(self) -> np.ndarray:
        byte = np.asarray(self.queue_offsets, dtype=np.int64) * CQ_STORE_UNIT_SIZE
        return byte // self.file_size * self.file_size

    @functools.cached_property
    def position(self) -> np.ndarray:
        return np.asarray(self.queue_offsets, dtype=np.int64) * CQ_STORE_UNIT_SIZE - self.start

    def name(self, i: int) -> str:
        return f"{self.prefix}{int(self.start[i]):020d}"

    def names(self, idx: np.ndarray) -> pa.Array:
        starts = self.start[np.asarray(idx, dtype=np.int64)]
        unique, inverse = np.unique(starts, return_inverse=True)
        names = pa.array([f"{self.prefix}{int(s):020d}" for s in unique], pa.string())
        return names.take(pa.array(inverse.astype(np.int64)))


class RocksDBCqLocator:
    """Where units of a queue kept in RocksDB are (storeType=defaultRocksDB, no files): the database directory
    and the unit's key, named `<database> key topic@queueId@cqOffset` (the fields of
    `RocksDBConsumeQueueTable`'s key); the position is the queue offset (a database has no byte position)."""

    def __init__(self, queue_offsets: np.ndarray, topic: str, queue_id: int, database: str) -> None:
        self.queue_offsets = queue_offsets
        self.prefix = arrow_text(f"{database} key {topic}@{queue_id}@")

    @functools.cached_property
    def position(self) -> np.ndarray:
        return np.asarray(self.queue_offsets, dtype=np.int64)

    def name(self, i: int) -> str:
        return f"{self.prefix}{int(self.position[i])}"

    def names(self, idx: np.ndarray) -> pa.Array:
        offsets = self.position[np.asarray(idx, dtype=np.int64)]
        return pa.array([f"{self.prefix}{q}" for q in offsets.tolist()], pa.string())


def cq_locator(
    queue_offsets: np.ndarray, topic: str, queue_id: int, file_size: int
) -> CqLocator | RocksDBCqLocator:
    """The locator of a queue's units: ConsumeQueue files, or the RocksDB database `consumequeue/` for a
    queue whose file size is `ROCKSDB_CQ_FILE_SIZE` (as `RocksDBConsumeQueue` and the audit give it)."""
    if file_size == ROCKSDB_CQ_FILE_SIZE:
        return RocksDBCqLocator(queue_offsets, topic, queue_id, "consumequeue")
    return CqLocator(queue_offsets, topic, queue_id, file_size)


def cq_locations(
    queue_offsets: np.ndarray, topic: str, queue_id: int, file_size: int
) -> tuple[pa.Array, np.ndarray]:
    """(file, position) of units given their queue offsets."""
    loc = cq_locator(queue_offsets, topic, queue_id, file_size)
    return loc.names(np.arange(len(loc.position))), loc.position


def check_consume_queue(
    units: np.ndarray,
    records: RecordIndex,
    problems: ProblemList,
    *,
    topic: str,
    queue_id: int,
    min_offset: int,
    file_size: int,
    commitlog_min: int,
    valid_end: int,
    phy_range: tuple[int, int] | None = None,
) -> np.ndarray:
    """Compare one queue's units (native dtype with queueOffset, from its first file on disk up to its max
    offset) with the records they point at. Returns the record rows the units hit.

    Units below `min_offset` are the deleted prefix (fillers, units of retention-deleted records): counted
    as info. With `phy_range` only units pointing into [lo, hi) are judged (an audit split)."""
    qo = units["queueOffset"].astype(np.int64, copy=False)
    phy = units["phyOffset"].astype(np.int64, copy=False)
    size = units["size"].astype(np.int64)
    tags = units["tagsCode"].astype(np.int64, copy=False)
    n = len(qo)
    loc = cq_locator(qo, topic, queue_id, file_size)
    # `sel` names the judged units: None = the contiguous run [lo, n) (the usual case, no copies), else
    # an index array once a filter has removed some
    sel: np.ndarray | None = None
    if phy_range is None and (n < 2 or bool(np.all(qo[1:] > qo[:-1]))):
        lo = int(np.searchsorted(qo, min_offset))
        expired = np.arange(lo)
    else:
        expired_mask = qo < min_offset
        live_mask = ~expired_mask
        if phy_range is not None:
            inside = (phy >= phy_range[0]) & (phy < phy_range[1])
            expired_mask &= inside
            live_mask &= inside
        expired, lo, sel = np.flatnonzero(expired_mask), 0, np.flatnonzero(live_mask)
    if len(expired):
        e = expired
        fillers = int(np.count_nonzero((phy[e] == 0) & (size[e] == FILLER_SIZE)))
        problems.add(
            "cq_expired_units",
            loc.name(int(e[0])),
            int(loc.position[e[0]]),
            f"{len(e)} units below the min offset {min_offset} (queue offsets {int(qo[e[0]])}.."
            f"{int(qo[e[-1]])}: {len(e) - fillers} point into deleted commitlog files, {fillers} fillers)",
        )

    def pick(arr: np.ndarray) -> np.ndarray:
        return arr[lo:] if sel is None else arr[sel]

    def where_(mask: np.ndarray | None = None) -> np.ndarray:
        """Unit indexes of the judged units (of those where mask is set)."""
        base = np.arange(lo, n) if sel is None else sel
        return base if mask is None else base[mask]

    if (n - lo if sel is None else len(sel)) == 0:
        return np.zeros(0, dtype=np.int64)
    where = f"{topic}/{queue_id}"
    lp, ls = pick(phy), pick(size)
    back = np.flatnonzero(lp[1:] <= lp[:-1]) + 1
    if len(back):
        order_bad = where_()[back]
        problems.add_many(
            "cq_order",
            loc.names(order_bad),
            loc.position[order_bad],
            fmt(
                "unit at queue offset ",
                qo[order_bad],
                " points to phy ",
                phy[order_bad],
                ", not after the previous unit's",
            ),
        )
    outside = (lp < commitlog_min) | (lp + ls > valid_end) | (ls <= 0)
    if outside.any():
        o = where_(outside)
        beyond = o[phy[o] >= valid_end]
        below = o[phy[o] < valid_end]
        if len(beyond):
            problems.add(
                "cq_points_outside",
                loc.name(int(beyond[0])),
                int(loc.position[beyond[0]]),
                f"{where}: {len(beyond)} units from queue offset {int(qo[beyond[0]])} point at or after the "
                f"commitlog's valid end {valid_end} (phy {int(phy[beyond[0]])}..{int(phy[beyond[-1]])}); "
                "the broker's recovery cuts them",
            )
        if len(below):
            problems.add_many(
                "cq_points_outside",
                loc.names(below),
                loc.position[below],
                fmt(
                    f"{where}: unit at queue offset ",
                    qo[below],
                    " (phy ",
                    phy[below],
                    ", size ",
                    size[below],
                    f") is outside the commitlog's data [{commitlog_min}, {valid_end})",
                ),
            )
        sel = where_(~outside)
    ri, found = records.find_in_queue(pick(phy), topic, queue_id)
    if not found.all():
        miss = where_(~found)
        problems.add_many(
            "cq_not_record_start",
            loc.names(miss),
            loc.position[miss],
            fmt(
                f"{where}: unit at queue offset ",
                qo[miss],
                " points to phy ",
                phy[miss],
                ", where no accepted record starts",
            ),
        )
        sel, ri = where_(found), ri[found]
    u_qo, u_phy, u_size, u_tags = pick(qo), pick(phy), pick(size), pick(tags)

    def report(kind: str, bad: np.ndarray, *parts: Any) -> None:
        u = where_(bad)
        problems.add_many(kind, loc.names(u), loc.position[u], fmt(*parts))

    r_size = records.size[ri]
    bad = r_size != u_size
    if bad.any():
        report(
            "cq_size_mismatch",
            bad,
            f"{where}: unit at queue offset ",
            u_qo[bad],
            " says size ",
            u_size[bad],
            ", the record at phy ",
            u_phy[bad],
            " has TOTALSIZE ",
            r_size[bad],
        )
    if is_lmq(topic):  # LMQ queues hold units of records of other topics, named by INNER_MULTI_DISPATCH
        faults = lmq_unit_faults(records, topic, queue_id, u_qo, ri)
        if faults.not_named.any():
            bad = faults.not_named
            names = pa.array(records.topics or [""]).take(pa.array(records.topic[ri][bad]))
            report(
                "lmq_unit_not_named",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " (topic ",
                names,
                f"), whose record's INNER_MULTI_DISPATCH does not name {topic} (or its topic is never "
                "multi-dispatched)",
            )
        if faults.offset_differs.any():
            bad = faults.offset_differs
            report(
                "lmq_queue_offset_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                f" whose INNER_MULTI_QUEUE_OFFSET gives {topic} the offset ",
                faults.named_offset[bad],
            )
    else:
        r_topic = records.topic[ri]
        bad = r_topic != records.topic_code(topic)
        if bad.any():
            names = pa.array(records.topics or [""]).take(pa.array(r_topic[bad]))
            report(
                "cq_topic_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " of topic ",
                names,
            )
        r_qid = records.queue_id[ri]
        bad = r_qid != queue_id
        if bad.any():
            report(
                "cq_queue_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " of queue ",
                r_qid[bad],
            )
        r_qo = records.queue_offset[ri]
        bad = r_qo != u_qo
        if bad.any():
            report(
                "cq_queue_offset_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " whose QUEUEOFFSET is ",
                r_qo[bad],
            )
    r_tags = records.tags_code[ri]
    bad = r_tags != u_tags
    if bad.any():
        ext = u_tags <= MAX_ADDR
        if ext.any():
            first = int(where_(ext)[0])
            problems.add(
                "cq_ext_tags",
                loc.name(first),
                int(loc.position[first]),
                f"{where}: {int(ext.sum())} tags codes are ConsumeQueueExt addresses; not compared",
            )
            bad &= ~ext
        if bad.any():
            report(
                "cq_tags_code_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " has tags code ",
                u_tags[bad],
                ", the record at phy ",
                u_phy[bad],
                " gives ",
                r_tags[bad],
            )
    return ri


@dataclass(frozen=True)
class DeletedQueue:
    """The records of one deleted topic's or queue's queue still in the commitlog: how many, and the first."""

    count: int
    phy: int
    file: str
    position: int

    def merge(self, other: DeletedQueue) -> DeletedQueue:
        first = self if self.phy <= other.phy else other
        return DeletedQueue(self.count + other.count, first.phy, first.file, first.position)


def report_deleted(deleted: Mapping[str, DeletedQueue], problems: ProblemList) -> None:
    """One `deleted_topic` info per queue ("TOPIC/QUEUE_ID" -> its records)."""
    for queue, d in deleted.items():
        problems.add(
            "deleted_topic",
            d.file,
            d.position,
            f"{queue}: {d.count} record(s) of a topic not in topics.json, or a queue past its topic's queue "
            "counts, with no ConsumeQueue (a deleted topic or queue)",
        )


def check_dispatch_coverage(
    records: RecordIndex,
    hits: np.ndarray,
    queues: dict[tuple[str, int], QueueFacts],
    problems: ProblemList,
    *,
    abort: bool,
    rows: np.ndarray | None = None,
    known_topics: Mapping[str, tuple[int, int]] | None = None,
    deleted: dict[str, DeletedQueue] | None = None,
    confirm: int | None = None,
) -> int:
    """Dispatchable records without a ConsumeQueue unit. Returns the dispatch horizon.

    `confirm`: a controller-mode broker's recovered confirm offset (`store.log.confirm`): records ending after
    it without a unit are the unconfirmed tail the broker does not dispatch (`unconfirmed`, one row), not
    `undispatched`; records at or after it that have units are served by it all the same (`past_confirm`,
    info: both recoveries keep units up to the valid end).

    The horizon is maxPhyOffsetOfConsumeQueue (largest phy + size of any queue's last unit). A record at or
    after it was never dispatched: `undispatched`, per queue (a warning after a crash - abnormal recovery
    dispatches it - an error without `abort`: a 5.x normal start dispatches only the records past the horizon,
    so the one at it never gets its unit, as tests/data/store-controller's classic normal start shows). A
    record before it without its unit is `cq_missing_unit` - unless its queue has no ConsumeQueue and
    `known_topics` (the topic config: {topic: (readQueueNums, writeQueueNums)}) has neither its topic nor a
    queue count above its queue id: a deleted topic's or queue's records stay in the commitlog
    (`deleted_topic`, info, one row per queue; `store.checks.orphans`; with `deleted`, merged into it instead:
    an audit split's share, reported once for the store by `report_deleted`). `rows` restricts the judged
    records (an audit split)."""
    horizon = max((q.last_phy_end for q in queues.values()), default=0)
    hit = np.zeros(len(records), dtype=bool)
    hit[hits] = True
    miss = records.dispatchable() & ~hit
    if rows is not None:
        mask = np.zeros(len(records), dtype=bool)
        mask[rows] = True
        miss &= mask
    if confirm is not None:
        miss = _report_unconfirmed(records, miss, hit, confirm, problems, rows)
    sel = np.flatnonzero(miss)
    if len(sel) == 0:
        return horizon
    files, positions = records.locate(records.phy[sel])
    late = records.phy[sel] >= horizon
    severity = WARNING if abort else ERROR
    consequence = (
        "abnormal recovery (abort present) dispatches them"
        if abort
        else "no abort file: a 5.x normal start dispatches all but the first of them (only records past the "
        "consume queues' end, CommitLog.java:349-355: the one at it keeps no unit), 4.9.x all of them"
    )
    # undispatched, one row per queue
    late_rows = sel[late]
    if len(late_rows):
        keys = records.topic[late_rows].astype(np.int64) << 32 | records.queue_id[late_rows].astype(np.int64)
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        for j, c in zip(np.sort(first).tolist(), counts[np.argsort(first)].tolist(), strict=True):
            r = int(late_rows[j])
            topic, qid = records.topics[records.topic[r]], int(records.queue_id[r])
            members = late_rows[keys == keys[j]]
            shown = ", ".join(str(int(p)) for p in records.phy[members[:5]])
            k = int(np.flatnonzero(sel == r)[0])
            problems.add(
                "undispatched",
                files[k].as_py(),
                int(positions[k]),
                f"{topic}/{qid}: {c} record(s) from queue offset {int(records.queue_offset[r])} after the "
                f"ConsumeQueue end (phy {horizon}) were never dispatched (phy {shown}"
                f"{', ...' if c > 5 else ''}); {consequence}",
                severity,
            )
    early = np.flatnonzero(~late)
    if len(early):
        r = sel[early]
        reasons = []
        gone = np.zeros(len(r), dtype=bool)
        for i, (t, q, qo) in enumerate(
            zip(
                records.topic[r].tolist(),
                records.queue_id[r].tolist(),
                records.queue_offset[r].tolist(),
                strict=True,
            )
        ):
            name = records.topics[t]
            facts = queues.get((name, q))
            if facts is None:
                counts = None if known_topics is None else known_topics.get(name)
                gone[i] = known_topics is not None and (counts is None or q >= max(counts))
                reasons.append(f"{name}/{q}: no ConsumeQueue for the record's queue")
            elif qo >= facts.max_offset:
                reasons.append(
                    f"{name}/{q}: queue offset {qo} is past the queue's max offset {facts.max_offset}"
                )
            elif qo < facts.min_offset:
                reasons.append(
                    f"{name}/{q}: queue offset {qo} is below the queue's min offset {facts.min_offset}"
                )
            else:
                reasons.append(f"{name}/{q}: the unit at queue offset {qo} points elsewhere")
        if gone.any():
            g = np.flatnonzero(gone)
            keys = records.topic[r[g]].astype(np.int64) << 32 | records.queue_id[r[g]].astype(np.int64)
            _, first, counts = np.unique(keys, return_index=True, return_counts=True)
            found: dict[str, DeletedQueue] = {}
            for j, c in zip(first.tolist(), counts.tolist(), strict=True):
                k = int(early[g[j]])
                rec = int(r[g[j]])
                queue = f"{records.topics[records.topic[rec]]}/{int(records.queue_id[rec])}"
                found[queue] = DeletedQueue(c, int(records.phy[rec]), files[k].as_py(), int(positions[k]))
            if deleted is None:
                report_deleted(found, problems)
            else:
                for queue, one in found.items():
                    deleted[queue] = deleted[queue].merge(one) if queue in deleted else one
        keep = np.flatnonzero(~gone)
        if len(keep):
            problems.add_many(
                "cq_missing_unit",
                files.take(pa.array(early[keep])),
                positions[early[keep]],
                fmt(
                    "record at phy ",
                    records.phy[r[keep]],
                    " has no ConsumeQueue unit: ",
                    pa.array(reasons, pa.string()).take(pa.array(keep)),
                ),
            )
    return horizon


def _report_unconfirmed(
    records: RecordIndex,
    miss: np.ndarray,
    hit: np.ndarray,
    confirm: int,
    problems: ProblemList,
    rows: np.ndarray | None,
) -> np.ndarray:
    """The rows of `miss` at or after `confirm` as one `unconfirmed` row (and units past it as one
    `past_confirm` row); returns `miss` without them. A record ending past it counts: the reput stops before a
    record that would cross the confirm offset (DefaultMessageStore.java:2885-2887)."""
    past = records.phy + records.size.astype(np.int64) > confirm
    if rows is not None:
        mask = np.zeros(len(records), dtype=bool)
        mask[rows] = True
        past &= mask
    tail = miss & past
    served = np.flatnonzero(hit & past & records.dispatchable())
    source = "DefaultMessageStore.java:2855-2857, CommitLog.java:349-355 and 751-754"
    sel = np.flatnonzero(tail)
    if len(sel):
        files, positions = records.locate(records.phy[sel[:1]])
        names, counts = np.unique(records.topic[sel], return_counts=True)
        per_topic = ", ".join(
            f"{records.topics[int(t)]} {int(c)}" for t, c in zip(names, counts, strict=True)
        )
        problems.add(
            "unconfirmed",
            files[0].as_py(),
            int(positions[0]),
            f"{len(sel)} record(s) from phy {int(records.phy[sel[0]])} past the confirm offset {confirm} "
            f"have no ConsumeQueue unit ({per_topic}): the unconfirmed tail, which a controller-mode broker "
            "does not dispatch or serve until a role is decided; a normal start's recovery dispatches all "
            f"but the first, an abnormal one none, and HA may truncate them on a slave ({source})",
        )
    if len(served):
        files, positions = records.locate(records.phy[served[:1]])
        problems.add(
            "past_confirm",
            files[0].as_py(),
            int(positions[0]),
            f"{len(served)} record(s) from phy {int(records.phy[served[0]])} past the confirm offset "
            f"{confirm} have ConsumeQueue units (dispatched while the live confirm offset was ahead of the "
            "checkpoint's): "
            "the broker keeps and serves them (recovery truncates queues only at the valid end, "
            "CommitLog.java:401-404, 810-814); HA may still truncate their records on a slave",
        )
    return miss & ~tail


def check_cq_tail(
    units_after: np.ndarray, problems: ProblemList, *, file: str, position: int, where: str
) -> None:
    """Bytes after a queue's last valid unit in its last file: the broker ignores and overwrites them."""
    raw = units_after.view(np.uint8) if units_after.dtype != np.uint8 else units_after
    nz = np.flatnonzero(raw)
    if len(nz):
        problems.add(
            "cq_nonzero_after_end",
            file,
            position + int(nz[0]),
            f"{where}: non-zero bytes after the last valid unit "
            f"(up to position {position + int(nz[-1]) + 1})",
        )
