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
from store.checks.index import check_index_coverage
from store.checks.lmq import check_lmq_coverage
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
    check_batch_queue_files,
    check_checkpoint_file,
    check_index_files,
    check_queue_files,
    check_timer_files,
    note_broker_running,
    recovery_summary,
    rel_path,
)
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
) -> VerifyReport:
    """Check a store (read-only). `progress(n)` is called with bytes processed (see `verify_total`)."""
    from store.log.scan import relative_name, scan_file

    advance = progress or (lambda _n: None)
    root = store.root
    problems = ProblemList(store.location, max_rows=max_rows)
    timings: dict[str, float] = {}
    summary: dict[str, Any] = {"deep": deep, "checkCRC": check_crc}
    t0 = time.perf_counter()

    abort = note_broker_running(store, problems)

    # --- commitlog -------------------------------------------------------------------------------
    scans: list[CommitLogFile] = []
    builder = RecordIndexBuilder(delay_levels=_delay_levels(store), with_keys=deep)
    file_size = None
    try:
        commitlog = store.commitlog
        file_size = commitlog.file_size
        ended = False
        for f in commitlog.queue.files:
            scan = scan_file(f, name=relative_name(f, root), check_crc=check_crc, accept_v2=accept_v2)
            # records after the first stop that is not a BLANK are past the valid end: not indexed
            stop = scan.stop()
            if not ended and scan.batch is not None:
                builder.add(scan.batch)
            ended = ended or (stop is not None and stop[0] != "blank")
            scan.slim()
            scans.append(scan)
            advance(f.size)
    except MqtoolError as exc:
        problems.add("commitlog_unreadable", exc.file and rel_path(store, exc.file), exc.offset, exc.message)
    timings["commitlogScan"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    verdict = check_commitlog(scans, problems, file_size=file_size)
    starts = [s.start for s in scans]
    names = [s.name for s in scans]
    records = builder.build(starts, names)
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

    # --- consume queues --------------------------------------------------------------------------
    t2 = time.perf_counter()
    found = check_queue_files(
        store, records, problems, commitlog_min=commitlog_min, valid_end=verdict.valid_end, advance=advance
    )
    batch = check_batch_queue_files(
        store, records, problems, commitlog_min=commitlog_min, valid_end=verdict.valid_end
    )
    hits, queues, units_checked = found.hits + batch.hits, {**found.queues, **batch.queues}, found.units
    all_hits = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
    horizon = check_dispatch_coverage(
        records, all_hits, queues, problems, abort=abort, known_topics=_known_topics(store)
    )
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
    timings["consumeQueues"] = time.perf_counter() - t2

    # --- index -----------------------------------------------------------------------------------
    t3 = time.perf_counter()
    index = check_index_files(
        store, records, problems, commitlog_min=commitlog_min, valid_end=verdict.valid_end, advance=advance
    )
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
    summary["recovery"] = recovery_summary(scans, verdict, cp, abort, problems)
    timings["total"] = time.perf_counter() - t0
    summary["seconds"] = {k: round(v, 3) for k, v in timings.items()}
    if timings["commitlogScan"] > 0 and len(records):
        summary["messagesPerSecond"] = round(len(records) / timings["commitlogScan"])

    table = sort_problems(problems.table())
    order = np.array([SEVERITY_ORDER[s] for s in table.column("severity").to_pylist()], dtype=np.int64)
    table = table.take(pa.array(np.argsort(order, kind="stable")))
    return VerifyReport(store.location, table, count_by_severity(table), summary)


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


def _known_topics(store: Store) -> set[str] | None:
    """Topics of config/topics.json (None when it cannot be read: then no topic counts as deleted)."""
    try:
        loaded = store.config("topics.json").load()
    except MqtoolError:
        return None
    if loaded.source == "none":
        return None
    return set(getattr(loaded.model, "topic_config_table", {}) or {})


# --- rendering ------------------------------------------------------------------------------------


__all__ = ["VerifyReport", "verify_store", "verify_total"]
