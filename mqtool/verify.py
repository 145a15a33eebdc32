"""`mqtool verify`: a kafka-dump-log-grade check of a whole store in one process.

The commitlog is decoded file by file with the columnar decoder (`store.log.scan`), then every check of
`store.checks` runs over the decoded batches and numpy views of the ConsumeQueue and IndexFile files:
records (magic, size chain, body CRC, PHYSICALOFFSET field, BLANKs, zero tails, torn tail), where the
broker's recovery would end the log, ConsumeQueue units against their records and records against their
units, index headers and chains, with `deep` every message key's reachability through the index, and
the checkpoint and `abort` state against the data. Severities and kinds are documented in
`store.checks`; the store is clean when no error is found.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from formats.errors import MqtoolError
from store.checks.commitlog import check_commitlog
from store.checks.consumequeue import check_dispatch_coverage
from store.checks.forked import ForkedCheck
from store.checks.index import check_index_coverage
from store.checks.lmq import check_lmq_coverage
from store.checks.names import check_record_names
from store.checks.problems import (
    ERROR,
    INFO,
    SEVERITY_ORDER,
    WARNING,
    ProblemList,
    count_by_severity,
    sort_problems,
)
from store.checks.records import RecordIndexBuilder
from store.checks.storefiles import (
    IndexRead,
    check_batch_queue_files,
    check_checkpoint_file,
    check_compaction_files,
    check_index_files,
    check_queue_files,
    check_timer_files,
    note_broker_running,
    recovery_summary,
    rel_path,
    topic_queue_counts,
)
from store.checks.tiered import check_tiered
from store.log.ranges import workers_for
from store.log.scan import CommitLogFile
from store.storedir import Store


@dataclass
class VerifyReport:
    """What `verify_store` found: the problems table, counts per severity, and what was checked."""

    store: str
    problems: pa.Table
    counts: dict[str, int]
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return self.counts.get(ERROR, 0) == 0

    def problem_rows(self, min_severity: str = INFO) -> list[dict[str, Any]]:
        limit = SEVERITY_ORDER[min_severity]
        return [r for r in self.problems.to_pylist() if SEVERITY_ORDER[r["severity"]] <= limit]

    def to_json(self, min_severity: str = INFO) -> dict[str, Any]:
        return {
            "store": self.store,
            "clean": self.clean,
            "errors": self.counts.get(ERROR, 0),
            "warnings": self.counts.get(WARNING, 0),
            "infos": self.counts.get(INFO, 0),
            "summary": self.summary,
            "problems": self.problem_rows(min_severity),
        }


def _delay_levels(store: Store) -> tuple[int, ...]:
    return store.layout.delay_levels.in_level_order


def verify_store(
    store: Store,
    *,
    deep: bool = False,
    check_crc: bool = True,
    accept_v2: bool = True,
    max_rows: int | None = 1000,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    range_size: int | None = None,
) -> VerifyReport:
    """Check a store (read-only). `progress(n)` is called with bytes processed (see `verify_total`). The
    commitlog is decoded in byte ranges (`range_size`, default: several per worker) over `jobs` worker
    processes (`store.checks.rangescan`); the result does not depend on either."""
    from store.checks.rangescan import scan_ranges

    advance = progress or (lambda _n: None)
    root = store.root
    problems = ProblemList(store.location, max_rows=max_rows)
    timings: dict[str, float] = {}
    summary: dict[str, Any] = {"deep": deep, "checkCRC": check_crc}
    t0 = time.perf_counter()

    abort = note_broker_running(store, problems)

    # --- commitlog -------------------------------------------------------------------------------
    scans: list[CommitLogFile] = []
    records = RecordIndexBuilder().build([], [])
    file_size = None
    error = None
    if _is_dledger(store):  # one process: DLedger's entry walk decides where each data file's log ends
        builder = RecordIndexBuilder(delay_levels=_delay_levels(store), with_keys=deep)
        return _verify_dledger(
            store, problems, builder, deep=deep, check_crc=check_crc, accept_v2=accept_v2, abort=abort,
            advance=advance, summary=summary, timings=timings, t0=t0,
        )  # fmt: skip
    try:
        commitlog = store.commitlog
        file_size = store.layout.configured("mappedFileSizeCommitLog") or commitlog.file_size
        # records after the first stop that is not a BLANK are past the valid end: not indexed
        scans, records, error = scan_ranges(
            commitlog,
            root=root,
            check_crc=check_crc,
            accept_v2=accept_v2,
            delay_levels=_delay_levels(store),
            with_keys=deep,
            jobs=1 if store.is_remote else jobs,
            range_size=range_size,
            progress=advance,
        )
    except MqtoolError as exc:
        error = exc
    if error is not None:
        problems.add(
            "commitlog_unreadable", error.file and rel_path(store, error.file), error.offset, error.message
        )
    timings["commitlogScan"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    verdict = check_commitlog(scans, problems, file_size=file_size)
    starts = [s.start for s in scans]
    check_record_names(records, problems, settings=store.layout.lmq)
    commitlog_min = starts[0] if starts else 0
    summary["commitlog"] = {
        "files": len(scans),
        "bytes": sum(s.size for s in scans),
        "minOffset": commitlog_min,
        "validEnd": verdict.valid_end,
        "stop": verdict.stop_status,
        "messages": len(records),
        "recordsAfterValidEnd": verdict.records_after,
    }
    timings["commitlogChecks"] = time.perf_counter() - t1

    return _verify_rest(
        store, problems, records, deep=deep, abort=abort, advance=advance, summary=summary, timings=timings,
        t0=t0, commitlog_min=commitlog_min, valid_end=verdict.valid_end,
        recovery=lambda cp: recovery_summary(scans, verdict, cp, abort, problems),
        jobs=workers_for(sum(s.size for s in scans), jobs),
    )  # fmt: skip


def _is_dledger(store: Store) -> bool:
    from store.log.dledger import DLedgerCommitLog

    try:
        return isinstance(store.commitlog, DLedgerCommitLog)
    except MqtoolError:
        return False


def _verify_dledger(
    store: Store,
    problems: ProblemList,
    builder: RecordIndexBuilder,
    *,
    deep: bool,
    check_crc: bool,
    accept_v2: bool,
    abort: bool,
    advance: Callable[[int], None],
    summary: dict[str, Any],
    timings: dict[str, float],
    t0: float,
) -> VerifyReport:
    """verify's commitlog part on a DLedger commitlog (`store.checks.dledger`), then the common rest."""
    from store.checks.storefiles import scan_dledger

    commitlog = store.commitlog
    found = scan_dledger(
        store, problems, builder, check_crc=check_crc, accept_v2=accept_v2, abort=abort, advance=advance
    )
    timings["commitlogScan"] = time.perf_counter() - t0
    verdict = found.verdict
    files = [*found.classic, *found.data]
    records = builder.build([s.start for s in files], [s.name for s in files])
    check_record_names(records, problems, settings=store.layout.lmq)
    commitlog_min = commitlog.min_offset
    summary["commitlog"] = {
        "files": len(files),
        "bytes": sum(s.size for s in files),
        "minOffset": commitlog_min,
        "validEnd": verdict.valid_end,
        "stop": verdict.stop_status,
        "messages": len(records),
        "recordsAfterValidEnd": verdict.records_after,
    }
    r = commitlog.log.recovery
    summary["dledger"] = {
        "dataDirectories": [str(d) for d in commitlog.paths.data_dirs],
        "dividedCommitlogOffset": commitlog.divided_offset,
        "entries": verdict.entries,
        "ledgerBeginIndex": r.begin_index,
        "ledgerEndIndex": r.last_index,
        "ledgerEndTerm": r.last_term,
        "committedIndex": r.committed_index,
        "committedPos": r.committed_pos,
        "indexRewriteFrom": r.index_rewrite_from,
        "messagesRejected": verdict.messages_rejected,
    }
    valid_end = verdict.valid_end if commitlog.log.data_files else commitlog.classic.max_offset
    return _verify_rest(
        store, problems, records, deep=deep, abort=abort, advance=advance, summary=summary, timings=timings,
        t0=t0, commitlog_min=commitlog_min, valid_end=valid_end, recovery=lambda cp: found.summary,
    )  # fmt: skip


def _verify_rest(
    store: Store,
    problems: ProblemList,
    records: Any,
    *,
    deep: bool,
    abort: bool,
    advance: Callable[[int], None],
    summary: dict[str, Any],
    timings: dict[str, float],
    t0: float,
    commitlog_min: int,
    valid_end: int,
    recovery: Callable[[Any], dict[str, Any]],
    jobs: int = 1,
) -> VerifyReport:
    """The checks after the commitlog's: ConsumeQueues, index, timer files, checkpoint, the recovery row."""
    # the index check needs only the records: with two jobs or more it runs in a forked child meanwhile,
    # which sends back the files' facts without their entries (--deep joins the entries against the
    # queues' horizon afterwards: then it runs here)
    fork = jobs > 1 and not deep and not store.is_remote

    def index_check(found: ProblemList) -> IndexRead:
        read = check_index_files(
            store, records, found, commitlog_min=commitlog_min, valid_end=valid_end,
            advance=None if fork else advance,
        )  # fmt: skip
        return read.without_entries() if fork else read

    index_job = ForkedCheck("index", index_check, problems, jobs if fork else 1)

    # --- consume queues --------------------------------------------------------------------------
    t2 = time.perf_counter()
    found = check_queue_files(
        store, records, problems, commitlog_min=commitlog_min, valid_end=valid_end, advance=advance
    )
    batch = check_batch_queue_files(
        store, records, problems, commitlog_min=commitlog_min, valid_end=valid_end
    )
    hits, queues, units_checked = found.hits + batch.hits, {**found.queues, **batch.queues}, found.units
    all_hits = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
    topic_queues = topic_queue_counts(store)
    confirm = store.confirm  # controller mode: the dispatch ends at the recovered confirm offset
    horizon = check_dispatch_coverage(
        records, all_hits, queues, problems, abort=abort, known_topics=topic_queues,
        confirm=None if confirm is None else confirm.confirm_offset,
    )  # fmt: skip
    if confirm is not None:
        summary["controller"] = confirm.as_dict()
        if confirm.load_fails:
            problems.add("controller_load", "checkpoint", 32, f"confirmPhyOffset: {confirm.load_fails}")
    lmq = check_lmq_coverage(records, queues, problems, horizon=horizon, settings=store.layout.lmq)
    summary["consumeQueues"] = {
        "queues": len(found.queues),
        "units": units_checked,
        "dispatchHorizon": horizon,
    }
    if lmq.queues or lmq.missing_units:
        summary["consumeQueues"]["lmq"] = {
            "queues": lmq.queues,
            "units": lmq.units,
            "missingUnits": lmq.missing_units,
            "settings": store.layout.lmq.source,
        }
    if batch.queues:
        summary["batchConsumeQueues"] = {"queues": len(batch.queues), "units": batch.units}
    from mqtool.offsets.prune import report_store_orphans

    summary["consumeQueues"]["orphans"] = report_store_orphans(
        store, found.queues, batch.queues, problems, topic_queues
    )
    compaction = check_compaction_files(store, problems)
    if compaction is not None:
        summary["compaction"] = compaction
    tiered = check_tiered(store, problems, deep=deep)
    if tiered is not None:
        summary["tiered"] = tiered
    timings["consumeQueues"] = time.perf_counter() - t2

    # --- index -----------------------------------------------------------------------------------
    t3 = time.perf_counter()
    index = index_job.result(problems)
    if fork:
        advance(index.bytes_read)
    facts = index.facts
    keys_checked = 0
    if deep:
        keys_checked = check_index_coverage(records, facts, problems, cq_horizon=horizon)
    summary["index"] = {
        "files": len(facts),
        "entries": sum(f.entries for f in facts),
        "keysChecked": keys_checked if deep else None,
    }
    timings["index"] = time.perf_counter() - t3

    # --- the 5.x timer wheel -------------------------------------------------------------------------
    t4 = time.perf_counter()
    timer = check_timer_files(store, problems, commitlog_min=commitlog_min)
    if timer is not None:
        summary["timer"] = timer
        timings["timer"] = time.perf_counter() - t4

    # --- checkpoint, recovery ----------------------------------------------------------------------
    dispatched = records.store_ts[all_hits] if len(all_hits) else records.store_ts[:0]
    cp = check_checkpoint_file(
        store,
        problems,
        abort=abort,
        last_store_ts=int(records.store_ts.max()) if len(records) else None,
        dispatched_store_ts=int(dispatched.max()) if len(dispatched) else None,
        index_ends=index.ends,
    )
    summary["recovery"] = recovery(cp)
    timings["total"] = time.perf_counter() - t0
    summary["seconds"] = {k: round(v, 3) for k, v in timings.items()}
    if timings["commitlogScan"] > 0 and len(records):
        summary["messagesPerSecond"] = round(len(records) / timings["commitlogScan"])

    table = sort_problems(problems.table())
    order = np.array([SEVERITY_ORDER[s] for s in table.column("severity").to_pylist()], dtype=np.int64)
    table = table.take(pa.array(np.argsort(order, kind="stable")))
    return VerifyReport(store.location, table, count_by_severity(table), summary)


def startup_check(store: Store, broker_version: int | None = None) -> dict[str, Any]:
    """`verify --startup`: what a broker of `broker_version` (default: the store's) started on this store
    now would do - start, refuse or exit - with each reason and what its recovery does
    (`store.startup`)."""
    from store.startup import startup_verdict

    return {"store": store.location, **startup_verdict(store, broker_version).as_dict()}


def verify_total(store: Store) -> int:
    """Bytes `verify_store` reports to its progress callback (for a progress bar)."""
    try:
        total = sum(f.size for f in store.commitlog.queue.files)
    except MqtoolError:
        total = 0
    try:
        for topic, queue_id in store.consume_queues.queues():
            directory = store.consumequeue_dir / topic / str(queue_id)
            total += sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    except (MqtoolError, OSError):
        pass
    try:
        service = store.index_service
        if service.geometry is not None:
            for f in service.files:
                total += service.geometry.hash_slot_num * 4 + (f.index_count - 1) * 20
    except MqtoolError:
        pass
    return total


# --- rendering ------------------------------------------------------------------------------------


__all__ = ["VerifyReport", "startup_check", "verify_store", "verify_total"]
