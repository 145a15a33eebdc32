"""The audit's Spark job: the split rows, the scan (`mapInArrow`, one task per split) with the driver-side
sections computed meanwhile, the recovery cut over the STOP rows, Spark SQL over the cached partial rows
of the splits before the cut (queues, rates, body sizes, retry, duplicates) while the driver runs the
whole-store checks, and the result document assembled from it all (`run_job`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from mqtool.audit.executor.batchcq import batch_queue_rows, count_batch_messages
from mqtool.audit.executor.checks import sort_problems, store_problems
from mqtool.audit.failures import split_failures, without_stores
from mqtool.audit.plan import AuditOptions, Split, StoreFailure, StorePlan
from mqtool.audit.recovery import SplitStop, recovery_cut
from mqtool.audit.results.output import drop_invalid_message_files
from mqtool.audit.schema import BODY, NO_STOP, PARTIAL_DDL, PROBLEM, QUEUE, RATE, RETRY, SPLIT_FIELDS, STOP
from mqtool.audit.sections.assemble import assemble
from mqtool.audit.sections.driver_sections import driver_sections
from mqtool.audit.sections.duplicates import duplicates_frame, duplicates_section
from mqtool.audit.sections.tiered import tiered_section
from store.io.remote import is_url, location

SCAN_GROUP = "mqtool-audit-scan"

ProgressFn = Callable[[str, int, int], None]
"""(phase, done, total): phases `session`, `scan`, `aggregate`, `stores`, `output`."""


def _split_rows(splits: list[Split], plans: list[StorePlan], opts: AuditOptions, bucket: int) -> list[dict]:
    """The SplitTask fields of each split, in split order (the scan's task i is splits[i])."""
    names = [name for name, _, _ in SPLIT_FIELDS]
    rows = []
    output = (
        None if not opts.output else opts.output if is_url(opts.output) else str(Path(opts.output).resolve())
    )
    for s in splits:
        plan = plans[s.store]
        value = {
            "seq": s.seq,
            "store": s.store,
            "path": location(s.file.path),
            "root": str(plan.root),
            "base": s.file.start_offset,
            "start": s.start,
            "end": s.end,
            "bucketMs": bucket,
            "checkCrc": opts.check_crc,
            "fileIndex": s.file_index,
            "fileSize": s.file.size,
            "output": output,
            "label": plan.label,
            "entries": s.file.entries,
            "confirm": -1 if plan.store.confirm is None else plan.store.served_end,
        }
        rows.append({n: value[n] for n in names})
    return rows


class _JobWatcher:
    """Report task progress of the jobs of one job group while an action runs."""

    def __init__(self, spark, group: str, total: int, report: ProgressFn | None) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.group, self.total, self.report = group, total, report
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _JobWatcher:
        if self.report is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self.report is not None:
            self._thread.join(timeout=2)
            self.report("scan", self.total, self.total)

    def _run(self) -> None:
        while not self._done.wait(0.2):
            done = 0
            try:
                for job_id in self.tracker.getJobIdsForGroup(self.group):
                    job = self.tracker.getJobInfo(job_id)
                    for stage_id in job.stageIds if job else []:
                        stage = self.tracker.getStageInfo(stage_id)
                        if stage is not None:
                            done += stage.numCompletedTasks
            except Exception:  # the tracker is best effort; never fail the audit over it
                continue
            self.report("scan", min(done, self.total), self.total)


def run_job(
    spark, opts, plans, splits, contexts, bucket, document, timings, progress, scan_partition
) -> list[StoreFailure]:
    """Scan, aggregate and assemble into `document`; returns the stores that failed while scanned."""
    import functools

    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812

    from store.checks.index import merge_counted

    sc = spark.sparkContext
    rows = _split_rows(splits, plans, opts, bucket)
    # one split number per task; the split rows go with the function
    tasks = spark.range(0, len(rows), 1, numPartitions=max(1, len(rows)))
    scan = functools.partial(scan_partition, contexts, rows)
    partials = tasks.mapInArrow(scan, PARTIAL_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        t = time.monotonic()
        sc.setJobGroup(SCAN_GROUP, "mqtool audit: scan the commitlog", interruptOnCancel=True)
        # lag, delay backlog and transactions need no scan: the driver computes them meanwhile
        with ThreadPoolExecutor(max_workers=1) as side:
            sections = side.submit(_timed, driver_sections, plans, opts, document)
            tiered = side.submit(_timed, tiered_section, spark, plans, opts, document)
            try:
                with _JobWatcher(spark, SCAN_GROUP, len(splits), progress):
                    found = partials.where(F.col("kind").isin(STOP, PROBLEM)).collect()
            finally:
                sc.setLocalProperty("spark.jobGroup.id", None)
            timings["scan"] = time.monotonic() - t
            timings["sections"] = sections.result()
            timings["tiered"] = tiered.result()
        t = time.monotonic()
        # a store with a range that could not be read leaves the result (mqtool.audit.failures)
        failed = split_failures(plans, [r for r in found if r.kind == STOP])
        plans = [plan for plan in plans if plan.index not in failed]
        without_stores(document, {f.store for f in failed.values()})
        stops = {}
        for r in found:
            if r.kind == STOP and r.store not in failed:
                stops[r.seq] = SplitStop(
                    r.seq, None if r.key == NO_STOP else r.text, r.n, r.bytes, json.loads(r.detail)
                )
        cuts = {plan.index: recovery_cut(plan, splits, stops) for plan in plans}
        valid = sorted(seq for cut in cuts.values() for seq in cut.valid_seqs)
        valid_set = set(valid)
        labels = {plan.index: plan.label for plan in plans}
        checked = merge_counted(
            [
                {
                    "store": labels[r.store],
                    "file": r.file,
                    "offset": r.lo,
                    "kind": r.text,
                    "severity": r.severity,
                    "detail": r.detail,
                }
                for r in found
                if r.kind == PROBLEM and r.seq in valid_set
            ]
        )
        if opts.output:
            drop_invalid_message_files(opts.output, splits, valid_set)
        # the SQL reads the cached partials through one task per core, not one per range
        cores = max(1, sc.defaultParallelism)
        spark.conf.set("spark.sql.shuffle.partitions", str(min(200, max(4, 2 * cores))))
        view = partials.where(F.col("seq").isin(valid)).coalesce(cores)
        view.createOrReplaceTempView("audit_partials")
        _register_consume_queues(spark, plans, document)
        if progress:
            progress("aggregate", 0, 3)
        queries = {
            "queues": spark.sql(QUEUES_SQL),
            "small": spark.sql(SMALL_SQL),
            "dups": duplicates_frame(spark, int(opts.top)),
        }
        # the Spark SQL jobs run while this thread does the driver's part (whole-store checks, lag, delay,
        # transactions): neither waits for the other
        with ThreadPoolExecutor(max_workers=len(queries)) as pool:
            futures = {name: pool.submit(_collect, spark, sql) for name, sql in queries.items()}
            problems = (
                list(checked) + document.pop("replicaProblems", []) + document.pop("tieredProblems", [])
            )
            t_driver = time.monotonic()
            if opts.checks:
                for plan in plans:
                    own = [stops[seq] for seq in cuts[plan.index].valid_seqs]
                    dispatched = [
                        st.facts["dispatchedMaxTs"] for st in own if st.facts.get("dispatchedMaxTs")
                    ]
                    newest = [st.facts["maxTs"] for st in own if st.facts.get("maxTs") is not None]
                    problems += store_problems(
                        plan,
                        splits,
                        stops,
                        cuts[plan.index],
                        last_store_ts=max(newest, default=None),
                        dispatched_store_ts=max(dispatched, default=None),
                        max_rows=opts.max_rows,
                    )
            timings["driver"] = time.monotonic() - t_driver
            results = {}
            for done, name in enumerate(queries, start=1):
                results[name] = futures[name].result()
                if progress:
                    progress("aggregate", done, len(queries))
        timings["aggregate"] = time.monotonic() - t
    finally:
        partials.unpersist()
        if spark.catalog.tableExists("audit_partials"):
            spark.catalog.dropTempView("audit_partials")
        if spark.catalog.tableExists("audit_consume_queues"):
            spark.catalog.dropTempView("audit_consume_queues")
    queues = sorted(results["queues"], key=lambda r: (r["store"], r["topic"], r["queueId"]))
    count_batch_messages(queues, plans, contexts, cuts)
    small = sorted(results["small"], key=lambda r: (r["kind"], r["store"], r["topic"] or "", r["key"]))
    dups = results["dups"]
    document["duplicates"] = duplicates_section(plans, dups, int(opts.top))
    assemble(plans, splits, stops, cuts, queues, small, sort_problems(problems), bucket, document)
    return list(failed.values())


def _timed(fn, *args) -> float:
    t = time.monotonic()
    fn(*args)
    return time.monotonic() - t


def _collect(spark, frame) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.collect()]


QUEUES_SQL = f"""
WITH r AS (
  SELECT store, topic, queueId,
         SUM(CASE WHEN key IN (0, 2) THEN n ELSE 0 END) AS messages,
         SUM(CASE WHEN key IN (0, 2) THEN bytes ELSE 0 END) AS bytes,
         SUM(n) AS records,
         SUM(bytes) AS recordBytes,
         SUM(CASE WHEN key = 1 THEN n ELSE 0 END) AS prepared,
         SUM(CASE WHEN key = 3 THEN n ELSE 0 END) AS rolledBack,
         MIN(lo) AS firstStoreTimestamp,
         MAX(hi) AS lastStoreTimestamp,
         MIN(qlo) AS minQueueOffset,
         MAX(qhi) AS maxQueueOffset,
         SUM(extra) AS bodyBytes
  FROM audit_partials WHERE kind = {QUEUE}
  GROUP BY store, topic, queueId
)
SELECT COALESCE(r.store, c.store) AS store, COALESCE(r.topic, c.topic) AS topic,
       COALESCE(r.queueId, c.queueId) AS queueId,
       COALESCE(r.messages, 0) AS messages, COALESCE(r.bytes, 0) AS bytes,
       r.firstStoreTimestamp, r.lastStoreTimestamp,
       COALESCE(r.records, 0) AS records, COALESCE(r.recordBytes, 0) AS recordBytes,
       COALESCE(r.prepared, 0) AS prepared, COALESCE(r.rolledBack, 0) AS rolledBack,
       r.minQueueOffset, r.maxQueueOffset, COALESCE(r.bodyBytes, 0) AS bodyBytes,
       c.cqMinOffset, c.cqMaxOffset, c.cqMaxOffset - c.cqMinOffset AS cqMessages, c.cqError
FROM r FULL OUTER JOIN audit_consume_queues c
  ON r.store = c.store AND r.topic = c.topic AND r.queueId = c.queueId
"""

SMALL_SQL = f"""
SELECT kind, store, topic, key, SUM(n) AS n, SUM(bytes) AS bytes
FROM audit_partials WHERE kind IN ({RATE}, {BODY}, {RETRY})
GROUP BY kind, store, topic, key
"""


def _register_consume_queues(spark, plans: list[StorePlan], document: dict) -> None:
    """The ConsumeQueues as the broker loads them (min/max offsets), one small view for the SQL join."""
    rows = []
    notes = document.setdefault("notes", [])
    for plan in plans:
        try:
            queues = list(plan.store.consume_queues.queues())
        except MqtoolError as exc:
            notes.append(f"{plan.label}: consume queues not read: {exc}")
            continue
        for topic, queue_id in queues:
            try:
                cq = plan.store.consume_queue(topic, queue_id)
                rows.append((plan.index, topic, queue_id, cq.min_offset, cq.max_offset, None))
            except MqtoolError as exc:
                rows.append((plan.index, topic, queue_id, None, None, str(exc)))
        rows += batch_queue_rows(plan.index, plan.store)
    schema = "store int, topic string, queueId int, cqMinOffset bigint, cqMaxOffset bigint, cqError string"
    spark.createDataFrame(rows, schema=schema).createOrReplaceTempView("audit_consume_queues")
