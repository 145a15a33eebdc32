"""The verify checks of `store/checks/` in the audit: the store facts the executors' checks need
(`store_context`, planned on the driver), the checks each executor runs on its split (`check_split`:
PHYSICALOFFSET fields, ConsumeQueue units pointing into the split, records without their unit, index
entries pointing into the split, with --deep every key's reachability), and the whole-store part the
driver runs after the cut (`store_problems`: the walk across files, units and entries outside the data,
ConsumeQueue tails, index headers and chains, checkpoint, `abort`, where recovery would end).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.errors import MqtoolError
from mqtool.audit.executor.scan import close_map
from mqtool.audit.plan import AuditOptions, Split, StorePlan, relative_path
from mqtool.audit.recovery import Cut, SplitStop, file_summaries
from mqtool.audit.schema import (
    PROBLEM,
    CqFile,
    IndexContext,
    QueueContext,
    SplitTask,
    StoreContext,
    constant,
    partial_rows,
)
from mqtool.audit.session.remote import read_array
from store.checks.storefiles import topic_queue_counts
from store.io.filereads import map_readonly, read_head
from store.io.remote import is_url, location
from store.queue.lmq import is_lmq
from store.storedir import Store

# --- what the executors get (driver) --------------------------------------------------------------


def _delay_levels(store: Store) -> tuple[int, ...]:
    return store.layout.delay_levels.in_level_order


def store_context(plan: StorePlan, opts: AuditOptions):
    """The store facts the executors' checks need: files, queues (their CQ files and the offsets their
    units hit), index files, `abort`. Paths are absolute: executors do not run in the driver's directory."""
    from formats.consumequeue import filler_mask

    store = plan.store
    files = [f for f in plan.files]
    ctx = StoreContext(
        label=plan.label,
        file_starts=[f.start_offset for f in files],
        file_names=[relative_path(plan, f) for f in files],
        delay_levels=_delay_levels(store),
        commitlog_min=files[0].start_offset if files else 0,
        abort=store.liveness().abort_present,
        confirm=None if store.confirm is None else store.confirm.confirm_offset,
        max_rows=opts.max_rows,
        checks=opts.checks,
        lmq=store.layout.lmq,
        known_topics=topic_queue_counts(store),
    )
    if not opts.checks:
        return ctx
    try:
        queue_list = list(store.consume_queues.queues())
    except MqtoolError:
        queue_list = []
    for topic, queue_id in queue_list:
        try:
            cq = store.consume_queue(topic, queue_id)
            cq_files, last_end = [], 0
            if not cq.files and hasattr(cq, "store_times"):  # a RocksDB queue: its units in a file of ours
                from mqtool.audit.executor.rocksdb_units import rocksdb_cq_file

                cq_file, last_end = rocksdb_cq_file(cq)
                cq_files = [cq_file] if cq_file else []
            for f in cq.live_files:
                count = cq.wrote_position(f) // 20
                units = cq.file_units(f)[:count]
                real = units[~filler_mask(units)]
                phy = real["phyOffset"]
                lo, hi = (int(phy.min()), int(phy.max())) if len(phy) else (1, 0)
                cq_files.append(CqFile(location(f.path), f.start_offset // 20, count, lo, hi))
                if count:
                    last_end = int(units["phyOffset"][-1]) + int(units["size"][-1])
            ctx.queues.append(
                QueueContext(topic, queue_id, cq.min_offset, cq.max_offset, cq.file_size, tuple(cq_files))
            )
            ctx.facts[(topic, queue_id)] = (cq.min_offset, cq.max_offset, last_end)
        except MqtoolError:
            continue  # reported by the driver's checks (cq_file)
    _add_batch_queues(ctx, store, files)
    try:
        service = store.index_service
        if service.geometry is not None:
            geometry = service.geometry
            for f in service.files:
                ctx.index_files.append(
                    IndexContext(
                        location(store.index_dir / f.name),
                        f"index/{f.name}",
                        geometry.hash_slot_num,
                        geometry.entry_position(1),
                        f.index_count - 1,
                    )
                )
    except MqtoolError:
        pass
    if opts.deep:
        _read_index_keys(plan, ctx, opts)
    return ctx


def _add_batch_queues(ctx: StoreContext, store: Store, files: list) -> None:
    from mqtool.audit.executor.batchcq import batch_queue_contexts

    end = files[-1].start_offset + files[-1].size if files else 0
    ctx.batch_queues, facts = batch_queue_contexts(store, commitlog_min=ctx.commitlog_min, commitlog_end=end)
    ctx.facts.update(facts)


def _read_index_keys(plan: StorePlan, ctx, opts: AuditOptions) -> None:
    """--deep: the index files' reachable keys go to the executors (each judges its records' keys); the
    read and its problems are kept for the driver's index checks, which then do not read again."""
    from store.checks.index import ReachableKeys
    from store.checks.problems import ProblemList
    from store.checks.storefiles import read_index_files

    problems = ProblemList(plan.label, max_rows=opts.max_rows)
    plan.index_read = read_index_files(plan.store, problems)
    plan.index_problems = problems.table()
    ctx.index_keys = ReachableKeys.of(plan.index_read.facts)


class _EveryRecord:
    """A record index that finds a record wherever it is asked: with it `check_index_targets` judges
    only what needs no records (entries below the commitlog or past its end); the executors judge the
    rest against their records."""

    def find(self, phy):
        import numpy as np

        phy = np.asarray(phy)
        return np.zeros(len(phy), dtype=np.int64), np.ones(len(phy), dtype=bool)


# --- one split's checks (executors) ---------------------------------------------------------------

_SPLIT_KINDS_DROPPED = {"index_expired_entries", "index_beyond_end"}  # judged once by the driver
NATIVE_UNITS = np.dtype([("queueOffset", "i8"), ("phyOffset", "i8"), ("size", "i4"), ("tagsCode", "i8")])


def _units_in_range(queue: QueueContext, lo: int, hi: int) -> np.ndarray:
    """The queue's live units (queue offset >= min) whose phyOffset lies in [lo, hi)."""
    from formats.consumequeue import CQ_UNIT_DTYPE

    parts = []
    for f in queue.files:
        if f.max_phy < lo or f.min_phy >= hi or f.min_phy > f.max_phy:
            continue
        # read, not mapped: a fault on a cold map reads ahead megabytes of a sparse file with few units
        if is_url(f.path):
            view = read_array(f.path, 0, f.units, CQ_UNIT_DTYPE)
        else:
            data = read_head(f.path, f.units * CQ_UNIT_DTYPE.itemsize)
            view = np.frombuffer(data, dtype=CQ_UNIT_DTYPE, count=len(data) // CQ_UNIT_DTYPE.itemsize)
        phy = view["phyOffset"]
        qo = f.first_queue_offset + np.arange(len(view), dtype=np.int64)
        sel = np.flatnonzero((phy >= lo) & (phy < hi) & (qo >= queue.min_offset))
        if sel.size:
            out = np.empty(len(sel), dtype=NATIVE_UNITS)
            out["queueOffset"] = qo[sel]
            out["phyOffset"] = phy[sel]
            out["size"] = view["size"][sel]
            out["tagsCode"] = view["tagsCode"][sel]
            parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, NATIVE_UNITS)


def check_split(
    task: SplitTask, ctx: StoreContext, ok: pa.RecordBatch, stop_phy: int | None
) -> tuple[list[pa.RecordBatch], dict[str, Any]]:
    """Run the verify checks of store/checks/ that concern this split's records.

    Returns PROBLEM rows and the facts for the driver: `dispatchedMaxTs`, the newest store time of a
    record that has its ConsumeQueue unit, and `lmqMissing`, the records naming LMQ queues that lack
    their units (queue -> `LmqMissing` fields).
    """
    from formats.indexfile import INDEX_ENTRY_DTYPE
    from store.checks.commitlog import check_file_records
    from store.checks.consumequeue import (
        DeletedQueue,
        QueueFacts,
        check_consume_queue,
        check_dispatch_coverage,
    )
    from store.checks.index import IndexFileFacts, check_index_coverage, check_index_targets
    from store.checks.lmq import lmq_missing
    from store.checks.names import check_record_names
    from store.checks.problems import ProblemList
    from store.checks.records import RecordIndex
    from store.log.scan import CommitLogFile

    problems = ProblemList(ctx.label, max_rows=ctx.max_rows)
    name = ctx.file_names[task.fileIndex]
    check_file_records(CommitLogFile(name, task.base, task.fileSize, ok), problems)
    deep = ctx.index_keys is not None
    records = RecordIndex.from_batches(
        [ok], ctx.file_starts, ctx.file_names, delay_levels=ctx.delay_levels, with_keys=deep
    )
    check_record_names(records, problems, settings=ctx.lmq)
    lo = task.base + task.start
    # units at or after this split's stop are the driver's (outside the data); those before it are ours
    valid_end = stop_phy if stop_phy is not None else 1 << 62
    hi = min(task.base + task.end, valid_end)
    hits = []
    for q in ctx.queues:
        try:
            units = _units_in_range(q, lo, hi)
        except (OSError, MqtoolError) as exc:
            problems.add("cq_file", f"consumequeue/{q.topic}/{q.queue_id}", None, f"cannot read: {exc}")
            continue
        if len(units):
            hit = check_consume_queue(
                units,
                records,
                problems,
                topic=q.topic,
                queue_id=q.queue_id,
                min_offset=q.min_offset,
                file_size=q.file_size,
                commitlog_min=ctx.commitlog_min,
                valid_end=valid_end,
                phy_range=(lo, hi),
            )
            if not is_lmq(q.topic):  # an LMQ unit is not the record's own: coverage counts only those
                hits.append(hit)
    if ctx.batch_queues:
        from mqtool.audit.executor.batchcq import check_batch_split

        hits += check_batch_split(
            ctx.batch_queues,
            records,
            problems,
            lo=lo,
            hi=hi,
            commitlog_min=ctx.commitlog_min,
            valid_end=valid_end,
        )
    all_hits = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
    facts = {k: QueueFacts(*v) for k, v in ctx.facts.items()}
    deleted: dict[str, DeletedQueue] = {}  # reported once for the store by the driver (`store_problems`)
    horizon = check_dispatch_coverage(
        records, all_hits, facts, problems, abort=ctx.abort, known_topics=ctx.known_topics, deleted=deleted,
        confirm=ctx.confirm,
    )  # fmt: skip
    # one row per LMQ queue for the whole store: the driver merges the splits' summaries (`store_problems`)
    missing_lmq = lmq_missing(records, facts, horizon=horizon, settings=ctx.lmq)
    if deep:
        reach = ctx.index_keys.facts_in(lo, hi)
        check_index_coverage(records, reach, problems, cq_horizon=horizon)
    split_facts: dict[str, Any] = {
        "dispatchedMaxTs": int(records.store_ts[all_hits].max()) if len(all_hits) else None
    }
    if missing_lmq:
        split_facts["lmqMissing"] = {queue: dataclasses.astuple(m) for queue, m in missing_lmq.items()}
    if deleted:
        split_facts["deletedQueues"] = {queue: dataclasses.astuple(d) for queue, d in deleted.items()}
    for ix in ctx.index_files:
        if ix.entries <= 0:
            continue
        if is_url(ix.path):
            mm = read_array(ix.path, ix.entry_offset, ix.entries, INDEX_ENTRY_DTYPE)
            offset = 0
        else:
            mm = map_readonly(ix.path)
            offset = ix.entry_offset
        try:
            entries = np.frombuffer(mm, dtype=INDEX_ENTRY_DTYPE, count=ix.entries, offset=offset)
            facts_ix = IndexFileFacts(ix.name, 0, 0, ix.entries, phy=entries["phyOffset"].astype(np.int64))
            check_index_targets(
                facts_ix,
                records,
                problems,
                hash_slot_num=ix.hash_slot_num,
                commitlog_min=lo,
                valid_end=hi,
            )
            del entries
        finally:
            close_map(mm)
    table = problems.table()
    if table.num_rows:
        keep = pc.invert(pc.is_in(table.column("kind"), pa.array(sorted(_SPLIT_KINDS_DROPPED))))
        table = table.filter(keep)
    return problem_rows(task, table), split_facts


def problem_rows(task: SplitTask, table: pa.Table) -> list[pa.RecordBatch]:
    """A problems table (`store.checks.problems`) as PROBLEM partial rows of the split."""
    if table.num_rows == 0:
        return []
    count = table.num_rows
    row = partial_rows(
        {
            "seq": constant(task.seq, count, pa.int32()),
            "store": constant(task.store, count, pa.int32()),
            "kind": constant(PROBLEM, count, pa.int32()),
            "file": table.column("file").combine_chunks(),
            "lo": table.column("offset").combine_chunks(),
            "text": table.column("kind").combine_chunks(),
            "severity": table.column("severity").combine_chunks(),
            "detail": table.column("detail").combine_chunks(),
        },
        count,
    )
    return [row]


# --- the whole-store checks (driver) --------------------------------------------------------------


def store_problems(
    plan: StorePlan,
    splits: list[Split],
    stops: dict[int, SplitStop],
    cut: Cut,
    *,
    last_store_ts: int | None,
    dispatched_store_ts: int | None,
    max_rows: int,
) -> list[dict[str, Any]]:
    """The whole-store checks of `mqtool verify`, run on the driver: the commitlog walk across files
    (`check_commitlog` over per-file summaries), units and entries outside the data, ConsumeQueue file
    tails, index headers and chains, the 5.x timer files, the tiered tree against its metadata, checkpoint,
    `abort` and the lock, where recovery would end."""
    from mqtool.offsets.prune import report_store_orphans
    from store.checks.commitlog import check_commitlog
    from store.checks.consumequeue import DeletedQueue, report_deleted
    from store.checks.lmq import LmqMissing, report_lmq_missing
    from store.checks.problems import ProblemList
    from store.checks.records import RecordIndex
    from store.checks.storefiles import (
        check_batch_queue_files,
        check_checkpoint_file,
        check_dledger_headers,
        check_index_files,
        check_queue_files,
        check_timer_files,
        note_broker_running,
        recovery_summary,
    )
    from store.checks.tiered import check_tiered

    store = plan.store
    problems = ProblemList(plan.label, max_rows=max_rows)
    abort = note_broker_running(store, problems)
    dledger = any(f.entries for f in plan.files)
    summaries = [s for s, f in zip(file_summaries(plan, splits, stops, first_rows=False), plan.files,
                                   strict=True) if not f.entries]  # fmt: skip
    if dledger:  # the classic files below the divided offset, then DLedger's own checks
        if summaries:
            check_commitlog(summaries, problems, file_size=store.commitlog.classic.file_size)
        verdict, _row = check_dledger_headers(store, problems, abort=abort)
        valid_end = verdict.valid_end
    else:
        verdict = check_commitlog(summaries, problems, file_size=store.commitlog.file_size)
        valid_end = verdict.valid_end
    commitlog_min = store.commitlog.min_offset if dledger else plan.files[0].start_offset if plan.files else 0
    # the executors judged every unit that points into their ranges; the driver judges the rest
    empty = RecordIndex.from_batches([], [], [])
    found = check_queue_files(
        store, empty, problems, commitlog_min=commitlog_min, valid_end=valid_end, outside_only=True
    )
    batch = check_batch_queue_files(
        store, empty, problems, commitlog_min=commitlog_min, valid_end=valid_end, outside_only=True
    )
    report_store_orphans(store, found.queues, batch.queues, problems, topic_queue_counts(store))
    report_lmq_missing(_merged_per_queue(stops, cut, "lmqMissing", LmqMissing), found.queues, problems)
    report_deleted(_merged_per_queue(stops, cut, "deletedQueues", DeletedQueue), problems)
    if plan.index_problems is not None:
        problems.extend(plan.index_problems)
    index = check_index_files(
        store,
        _EveryRecord(),
        problems,
        commitlog_min=commitlog_min,
        valid_end=valid_end,
        read=plan.index_read,
    )
    check_timer_files(store, problems, commitlog_min=commitlog_min)
    check_tiered(store, problems)  # the messages of its segments: the tiered scan (mqtool.audit.sections)
    cp = check_checkpoint_file(
        store,
        problems,
        abort=abort,
        last_store_ts=last_store_ts,
        dispatched_store_ts=dispatched_store_ts,
        index_ends=index.ends,
    )
    if not dledger:
        recovery_summary(file_summaries(plan, splits, stops, first_rows=True), verdict, cp, abort, problems)
    return problems.table().to_pylist()


def _merged_per_queue(stops: dict[int, SplitStop], cut: Cut, key: str, kind: type) -> dict[str, Any]:
    """The valid splits' per-queue summaries under `key` of their facts (`check_split`: `lmqMissing`
    as `LmqMissing`, `deletedQueues` as `DeletedQueue`), merged per queue by `kind.merge`."""
    merged: dict[str, Any] = {}
    for seq in cut.valid_seqs:
        for queue, fields in stops[seq].facts.get(key, {}).items():
            one = kind(*fields)
            merged[queue] = merged[queue].merge(one) if queue in merged else one
    return merged


SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def sort_problems(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worst first, as `verify` orders them: by severity (across the stores), then store, file, offset
    and kind (rows without a file first)."""
    return sorted(
        rows,
        key=lambda r: (
            SEVERITY_RANK.get(r.get("severity") or "error", 0),
            r["store"],
            r["file"] is not None,
            r["file"] or "",
            r["offset"] if r["offset"] is not None else -1,
            r["kind"],
        ),
    )
