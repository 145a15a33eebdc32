"""`mqtool audit`: batch-audit whole stores on Spark — `run_audit`, the entry point: open and plan the
stores while the session starts, run the job, write the output.

The driver opens each store, lists its commitlog files and cuts them into byte ranges (`plan_splits`:
several per core, 4-128 MiB; files always start at a record boundary and a range that starts mid-record
resynchronises on its own, so no boundary is looked for here). One Spark task decodes one range with the
columnar decoder (`mqtool.audit.scan.scan_partition`, via `mapInArrow`) and returns partial aggregates;
a record belongs to the range it starts in, so the figures do not depend on how the store was split.

The walk is the broker's recovery walk: a BLANK ends a file, and the first record the broker rejects
(zeros where a record should start, a torn or corrupt record, a CRC mismatch) is the truncation point —
records after it in physical order are not counted (`recovery_cut`). The stop rows of the ranges are
combined on the driver; then Spark SQL over the partial rows of the ranges before the cut gives:

* `queues` — per store/topic/queue: `messages` = records the dispatcher would put in the ConsumeQueue
  (transaction types PREPARED and ROLLBACK are never dispatched; a BatchCQ queue counts the messages of
  its records, `mqtool.audit.batchcq.count_batch_messages`), `records` = every message record of the
  queue, bytes, first/last store time, queue offsets seen, next to the ConsumeQueue's own min/max offsets
  (`cqMinOffset`, `cqMaxOffset`, `cqMessages` = max - min) as the broker loads them;
* `topics` — disk used per topic: its record bytes and their share of the commitlog files' bytes;
* `rates` — messages and bytes per topic per time bucket; `bodySizes` — body size classes per topic;
* `retry` — per consumer group, its %RETRY% and %DLQ% volume by reconsumeTimes;
* `duplicates` — UNIQ_KEYs (producer retries) and KEYS entries that occur in more than one message of a
  topic. Grouping is by a 64-bit FNV-1a hash of topic NUL key, computed on the executors; each range sends
  its hashes as one array per hash bucket, Spark groups the arrays by bucket and `merge_duplicates`
  (a grouped Arrow UDF) merges them with numpy; the key strings of the groups shown are read back from
  the commitlog and checked against their hash;
* `problems` — the rows of `mqtool verify`, from the same `store/checks/` functions: per range on the
  executors (PHYSICALOFFSET fields, ConsumeQueue units pointing into the range, records without their
  unit, index entries pointing into the range; with `deep`, every key of the range's records against the
  reachable index entries the driver read while planning, the counted rows merged by `merge_counted`),
  and for the whole store on the driver (`store_problems`:
  the walk across files and the truncation point, units and entries outside the data, ConsumeQueue
  tails, index headers and chains, checkpoint, `abort`, where the broker's recovery would end).

Small per-store facts come from the single-process library on the driver: ConsumeQueue min/max, consumer
lag (`mqtool.offsets.progress.consumer_progress`, plus the store time of the first unconsumed message), delay
backlog per level (`mqtool.delay.delay_stats`) and transaction states
(`mqtool.transactions.list_transactions`), so they equal what `offsets show`, `delay stats` and
`txn list` print.

Where each part lives: `plan` (stores, files, ranges, buckets), `spark` (the session), `scan` (one range
on an executor), `schema` (the rows between driver and executors), `duplicates` (key hashes, their merge,
the top keys named), `checks` (the verify checks, per range and whole-store), `recovery` (the cut),
`job` (the Spark job and SQL), `driver_sections` (lag, delay, transactions), `assemble` (the result
document), `output` (the output directory). The names other code imports stay importable from here.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from mqtool.audit.checks import sort_problems, store_context
from mqtool.audit.job import ProgressFn, run_job
from mqtool.audit.output import prepare_output, write_output
from mqtool.audit.plan import (
    AuditError,
    AuditOptions,
    auto_split_size,
    choose_bucket,
    estimate_span,
    open_stores,
    plan_splits,
)


@dataclass
class AuditResult:
    document: dict[str, Any]
    timings: dict[str, float]
    output: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return self.document


def run_audit(opts: AuditOptions, spark=None, progress: ProgressFn | None = None) -> AuditResult:
    """Audit the stores: plan, scan on Spark, aggregate with Spark SQL, add the driver-side facts.

    Uses `spark` when given, else the active session (spark-submit), else starts one on opts.master
    (and stops it at the end).
    """
    from mqtool.audit.scan import scan_partition
    from mqtool.audit.spark import require_pyspark, start_session, stop_session

    if spark is None:
        require_pyspark()
    timings: dict[str, float] = {}
    began = time.monotonic()
    plans, failures = open_stores(opts)
    prepare_output(opts.output, [*opts.stores, *(plan.root for plan in plans)])
    started_here = False
    try:
        # the session starts (~10 s of JVM start-up) while this thread plans what needs no Spark
        with ThreadPoolExecutor(max_workers=1) as pool:
            starting = None
            if spark is None:
                if progress:
                    progress("session", 0, 1)
                starting = pool.submit(_start_session, start_session, opts.master)
            t = time.monotonic()
            try:
                bucket = opts.bucket_ms or choose_bucket(estimate_span(plans))
                contexts = {plan.index: store_context(plan, opts) for plan in plans}
                timings["plan"] = time.monotonic() - t
            finally:
                if starting is not None:
                    spark, started_here = starting.result()
            timings["session"] = time.monotonic() - began
        parallelism = spark.sparkContext.defaultParallelism
        total_bytes = sum(p.file_bytes for p in plans)
        split_size = opts.split_size or auto_split_size(total_bytes, parallelism)
        splits = plan_splits(plans, split_size)
        document = {
            "scan": {
                "master": spark.sparkContext.master,
                "parallelism": parallelism,
                "splits": len(splits),
                "splitSize": split_size,
                "checkCrc": opts.check_crc,
                "deep": opts.deep,
                "bucketMs": bucket,
            }
        }
        failures += run_job(
            spark, opts, plans, splits, contexts, bucket, document, timings, progress, scan_partition
        )
        document["failedStores"] = [asdict(f) for f in failures]
        document["problems"] = sort_problems([f.problem() for f in failures] + document["problems"])
        t = time.monotonic()
        if opts.output:
            # what is written carries the seconds so far (all but writing it); the result, all of them
            document["scan"]["seconds"] = _seconds(timings | {"total": t - began})
            write_output(opts.output, document)
        timings["output"] = time.monotonic() - t
    finally:
        for plan in plans:
            plan.store.close()
        if started_here and spark is not None:
            stop_session(spark)
    timings["total"] = time.monotonic() - began
    document["scan"]["seconds"] = _seconds(timings)
    return AuditResult(document, timings, opts.output)


def _seconds(timings: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in timings.items()}


def _start_session(start_session, master: str):
    """start_session, with the two ways it fails on a new machine said in one line."""
    try:
        return start_session(master, create_class_archive=True)
    except ImportError as exc:  # PySpark is there (require_pyspark) but a part of it is not
        from mqtool.audit.spark import SPARK_MISSING

        raise AuditError(f"{SPARK_MISSING} ({exc})") from exc
    except Exception as exc:  # py4j / PySpark errors when the JVM does not start
        if isinstance(exc, MqtoolError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AuditError(
            f"cannot start Spark on {master!r} (Java 17 or newer must be installed, on PATH or in "
            f"JAVA_HOME): {first}"
        ) from exc


__all__ = [
    "AuditResult",
    "run_audit",
]
