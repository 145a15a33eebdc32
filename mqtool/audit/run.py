"""`mqtool audit`: batch-audit whole stores on Spark — planning, the job, aggregation, the result document.

The driver opens each store, lists its commitlog files and cuts them into byte ranges (`plan_splits`:
several per core, 4-128 MiB; files always start at a record boundary and a range that starts mid-record
resynchronises on its own, so no boundary is looked for here). One Spark task decodes one range with the
columnar decoder (`mqtool.audit.spark.scan_partition`, via `mapInArrow`) and returns partial aggregates;
a record belongs to the range it starts in, so the figures do not depend on how the store was split.

The walk is the broker's recovery walk: a BLANK ends a file, and the first record the broker rejects
(zeros where a record should start, a torn or corrupt record, a CRC mismatch) is the truncation point —
records after it in physical order are not counted (`recovery_cut`). The stop rows of the ranges are
combined on the driver; then Spark SQL over the partial rows of the ranges before the cut gives:

* `queues` — per store/topic/queue: `messages` = records the dispatcher would put in the ConsumeQueue
  (transaction types PREPARED and ROLLBACK are never dispatched), `records` = every message record of the
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
lag (`mqtool.consumer_progress.consumer_progress`, plus the store time of the first unconsumed message), delay
backlog per level (`mqtool.delay.delay_stats`) and transaction states
(`mqtool.transactions.list_transactions`), so they equal what `offsets show`, `delay stats` and
`txn list` print.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formats.errors import MqtoolError
from mqtool.audit.output import OUTPUT_MARKER, write_output
from mqtool.audit.spark import (
    BODY,
    DUP_KEY,
    DUP_UNIQ,
    NO_STOP,
    PARTIAL_DDL,
    PROBLEM,
    QUEUE,
    RATE,
    RETRY,
    SPLIT_FIELDS,
    STOP,
    key_hash,
    message_file,
)
from store.storedir import Store

if TYPE_CHECKING:
    import pyarrow as pa

    from store.storecheck import IndexRead

MiB = 1 << 20
MIN_SPLIT = 4 * MiB
MAX_SPLIT = 128 * MiB
TASKS_PER_CORE = 4
BUCKETS = (
    1_000,
    5_000,
    10_000,
    30_000,
    60_000,
    300_000,
    600_000,
    900_000,
    1_800_000,
    3_600_000,
    10_800_000,
    21_600_000,
    43_200_000,
    86_400_000,
    604_800_000,
)
TARGET_BUCKETS = 240
CLEAN_ENDS = ("blank", "end")
SCAN_GROUP = "mqtool-audit-scan"

ProgressFn = Callable[[str, int, int], None]
"""(phase, done, total): phases `session`, `scan`, `aggregate`, `stores`, `output`."""


class AuditError(MqtoolError):
    """An audit that cannot run as asked (bad options, an output directory in the way)."""


@dataclass
class AuditOptions:
    """What `run_audit` audits and how."""

    stores: list[str | Path]
    master: str = "local[*]"
    split_size: int | None = None  # None: several ranges per core, 4-128 MiB
    check_crc: bool = True
    output: Path | None = None
    top: int = 20
    bucket_ms: int | None = None  # None: chosen from the stores' time span (~240 buckets)
    broker_config: Path | None = None
    now: int | None = None
    checks: bool = True  # run the verify checks (store/checks/)
    deep: bool = False  # and every message key's reachability through the index (verify --deep)
    max_rows: int = 1000  # per check call, as `verify`


@dataclass(frozen=True)
class CommitLogFile:
    path: Path
    name: str
    start_offset: int
    size: int


@dataclass
class StorePlan:
    index: int
    label: str
    root: Path
    files: list[CommitLogFile]
    store: Store
    index_read: IndexRead | None = None  # read while planning (--deep)
    index_problems: pa.Table | None = None  # the problems that read found

    @property
    def file_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class Split:
    """One task: the records that start in [start, end) of one commitlog file."""

    seq: int
    store: int
    file_index: int
    file: CommitLogFile
    start: int
    end: int


@dataclass
class SplitStop:
    """What one range's walk found (its STOP row: `mqtool.audit.spark._walk_facts`)."""

    seq: int
    status: str | None  # None: the range ended at a record boundary
    records: int
    bytes: int
    facts: dict[str, Any]


@dataclass
class Cut:
    """Where the recovery walk of one store ends, and which ranges lie before it."""

    valid_seqs: list[int]
    end_offset: int  # physical offset where valid data ends
    kind: str  # end | blank | a failure status | none
    file: CommitLogFile | None


@dataclass
class AuditResult:
    document: dict[str, Any]
    timings: dict[str, float]
    output: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return self.document


# --- planning ---------------------------------------------------------------------------------------


def _labels(stores: list[str | Path]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for s in stores:
        label = str(s)
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


@dataclass
class StoreFailure:
    """A store the audit could not open (missing, not a store, unreadable): reported, the others go on."""

    store: str
    error: str

    def problem(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "file": "",
            "offset": None,
            "kind": "store",
            "severity": "error",
            "detail": f"not audited: {self.error}",
        }


def open_stores(opts: AuditOptions) -> tuple[list[StorePlan], list[StoreFailure]]:
    """Open every store and list its commitlog files (a zero-length last file is left out, as 5.x does).

    A store that cannot be opened is a StoreFailure and the others are audited; when none can be, the
    error is raised (a single store's error as it is)."""
    from store.brokerconf import load_broker_config

    if not opts.stores:
        raise AuditError("no store to audit")
    if opts.deep and not opts.checks:
        raise AuditError("--deep is part of the checks: it cannot go with --no-checks")
    config = load_broker_config(opts.broker_config) if opts.broker_config else None
    plans: list[StorePlan] = []
    failures: list[StoreFailure] = []
    errors: list[MqtoolError] = []
    for given, label in zip(opts.stores, _labels(opts.stores), strict=True):
        try:
            store = Store.open(given, config)
            files = [
                CommitLogFile(f.path.resolve(), f.name, f.start_offset, f.size)
                for f in store.commitlog.queue.files
            ]
        except MqtoolError as exc:
            errors.append(exc)
            failures.append(StoreFailure(label, str(exc)))
            continue
        plans.append(StorePlan(len(plans), label, store.root.resolve(), files, store))
    if not plans:
        if len(errors) == 1:
            raise errors[0]
        raise AuditError("no store could be audited: " + "; ".join(f"{f.store}: {f.error}" for f in failures))
    return plans, failures


def auto_split_size(total_bytes: int, parallelism: int) -> int:
    """Several ranges per core: total / (cores * 4), within 4-128 MiB, rounded up to a MiB."""
    target = total_bytes // max(1, parallelism * TASKS_PER_CORE)
    size = min(MAX_SPLIT, max(MIN_SPLIT, target))
    return -(-size // MiB) * MiB


def plan_splits(plans: list[StorePlan], split_size: int) -> list[Split]:
    """Cut every file into ceil(size / split_size) ranges of equal length (the last one may be shorter)."""
    if split_size <= 0:
        raise AuditError("--split-size must be positive")
    splits: list[Split] = []
    for plan in plans:
        for file_index, f in enumerate(plan.files):
            if f.size == 0:
                continue  # a zero-length (last) file: 5.x deletes it on load; nothing to decode
            pieces = max(1, -(-f.size // split_size))
            step = -(-f.size // pieces)
            for k in range(pieces):
                start, end = k * step, min(f.size, (k + 1) * step)
                splits.append(Split(len(splits), plan.index, file_index, f, start, end))
    return splits


def _first_time(f: CommitLogFile, start: int, window: int) -> list[int]:
    from formats.columnar import decode_resync

    if f.size == 0:
        return []
    with open(f.path, "rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        batch = decode_resync(buf, f.start_offset, start, min(f.size, start + window))
        status = batch.column("status").indices.to_numpy(zero_copy_only=False)
        times = batch.column("storeTimestamp").to_numpy()[status == 0]
        return [int(t) for t in times[:1]] + [int(t) for t in times[-1:]]
    finally:
        _close(buf)


def _close(buf: mmap.mmap) -> None:
    with contextlib.suppress(BufferError):  # a view is still alive: the GC unmaps it
        buf.close()


def estimate_span(plans: list[StorePlan]) -> tuple[int, int] | None:
    """First and (roughly) last store time of the stores, from a few records: the first file's start
    and sampled positions of the last file, plus the index headers' end time."""
    times: list[int] = []
    for plan in plans:
        if not any(f.size for f in plan.files):
            continue
        times += _first_time(next(f for f in plan.files if f.size), 0, MiB)
        last = [f for f in plan.files if f.size][-1]
        for k in range(8):
            times += _first_time(last, last.size * k // 8, 256 * 1024)
        try:
            headers = plan.store.index_service.headers()
            times += [h.end_timestamp for _, h in headers[-1:] if h.end_timestamp > 0]
        except MqtoolError:
            pass
    times = [t for t in times if t > 0]
    return (min(times), max(times)) if times else None


def choose_bucket(span: tuple[int, int] | None) -> int:
    """The smallest bucket width that covers the span in at most ~240 buckets."""
    if span is None:
        return 60_000
    width = max(1, span[1] - span[0])
    for bucket in BUCKETS:
        if width / bucket <= TARGET_BUCKETS:
            return bucket
    return BUCKETS[-1]


# --- the recovery cut ------------------------------------------------------------------------------


def _relative(plan: StorePlan, f: CommitLogFile) -> str:
    try:
        return str(f.path.relative_to(plan.root))
    except ValueError:
        return str(f.path)


def recovery_cut(plan: StorePlan, splits: list[Split], stops: dict[int, SplitStop]) -> Cut:
    """Walk the files in order: a BLANK moves on to the next file; anything else ends the walk there.

    The ranges before the end (up to the one holding it) are the valid ones; later ranges decoded records
    the broker's recovery would truncate, and are left out of every figure.
    """
    by_file: dict[int, list[Split]] = {}
    for s in splits:
        if s.store == plan.index:
            by_file.setdefault(s.file_index, []).append(s)
    valid: list[int] = []
    files = [(i, f) for i, f in enumerate(plan.files) if f.size > 0]
    for n, (file_index, f) in enumerate(files):
        stop: SplitStop | None = None
        for s in by_file.get(file_index, []):
            valid.append(s.seq)
            if stops[s.seq].status is not None:
                stop = stops[s.seq]
                break
        if stop is not None and stop.status == "blank":
            if n < len(files) - 1:
                continue
            return Cut(valid, f.start_offset + f.size, "blank", f)
        if stop is None:  # records run to the very end of the file: the next read fails there
            return Cut(valid, f.start_offset + f.size, "none", f)
        return Cut(valid, f.start_offset + int(stop.facts["pos"]), stop.status or "none", f)
    end = plan.files[-1].start_offset + plan.files[-1].size if plan.files else 0
    return Cut(valid, end, "empty", None)


def file_summaries(plan: StorePlan, splits: list[Split], stops: dict[int, SplitStop], *, first_rows: bool):
    """Per commitlog file, what `store.scan.scan_file` would have found, assembled from the ranges' walk
    facts, as `store.checks.CommitLogFile`s for `check_commitlog` (with `first_rows`, a one-row batch
    of each file's first record for the recovery-start rule)."""
    from store import checks

    class FileSummary(checks.CommitLogFile):
        """A commitlog file known by its walk facts, not its records."""

        def __init__(self, name, start, size, stop, messages, beyond, batch=None):
            super().__init__(name, start, size, batch)
            self._stop, self._messages, self._beyond = stop, messages, beyond

        def stop(self):
            return self._stop

        def message_count(self):
            return self._messages

        def beyond_count(self):
            return self._beyond

    import pyarrow as pa

    by_file: dict[int, list[Split]] = {}
    for s in splits:
        if s.store == plan.index:
            by_file.setdefault(s.file_index, []).append(s)
    out = []
    for file_index, f in enumerate(plan.files):
        name = _relative(plan, f)
        messages, stop, last_ok, first = 0, None, None, None
        stop_facts: dict[str, Any] = {}
        for s in by_file.get(file_index, []):
            st = stops[s.seq]
            messages += st.records
            if "first" in st.facts:
                first = st.facts["first"]
            if "lastOk" in st.facts:
                last_ok = st.facts["lastOk"]
            if st.status is not None:
                stop = (st.status, int(st.facts["pos"]), int(st.facts["total"]))
                stop_facts = st.facts
                break
        if stop is None and last_ok is not None:
            stop = ("ok", int(last_ok[0]), int(last_ok[1]))
        batch = None
        if first_rows and first is not None:
            batch = pa.RecordBatch.from_pydict(
                {
                    "status": pa.array([first[0]], pa.string()),
                    "storeTimestamp": pa.array([first[1]], pa.int64()),
                }
            )
        summary = FileSummary(
            name, f.start_offset, f.size, stop, messages, int(stop_facts.get("beyond", 0)), batch
        )
        summary.data_end = int(stop_facts.get("dataEnd", 0))
        summary.stop_data_end = stop_facts.get("stopDataEnd")
        out.append(summary)
    return out


# --- the verify checks: what the executors need, and the whole-store part run here --------------------


def _delay_levels(store: Store) -> tuple[int, ...]:
    return store.layout.delay_levels.in_level_order


def store_context(plan: StorePlan, opts: AuditOptions):
    """The store facts the executors' checks need: files, queues (their CQ files and the offsets their
    units hit), index files, `abort`. Paths are absolute: executors do not run in the driver's directory."""
    from formats.consumequeue import filler_mask
    from mqtool.audit.spark import CqFile, IndexContext, QueueContext, StoreContext

    store = plan.store
    files = [f for f in plan.files]
    ctx = StoreContext(
        label=plan.label,
        file_starts=[f.start_offset for f in files],
        file_names=[_relative(plan, f) for f in files],
        delay_levels=_delay_levels(store),
        commitlog_min=files[0].start_offset if files else 0,
        abort=store.liveness().abort_present,
        max_rows=opts.max_rows,
        checks=opts.checks,
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
            for f in cq.live_files:
                count = cq.wrote_position(f) // 20
                units = cq.file_units(f)[:count]
                real = units[~filler_mask(units)]
                phy = real["phyOffset"]
                lo, hi = (int(phy.min()), int(phy.max())) if len(phy) else (1, 0)
                cq_files.append(CqFile(str(f.path.absolute()), f.start_offset // 20, count, lo, hi))
                if count:
                    last_end = int(units["phyOffset"][-1]) + int(units["size"][-1])
            ctx.queues.append(
                QueueContext(topic, queue_id, cq.min_offset, cq.max_offset, cq.file_size, tuple(cq_files))
            )
            ctx.facts[(topic, queue_id)] = (cq.min_offset, cq.max_offset, last_end)
        except MqtoolError:
            continue  # reported by the driver's checks (cq_file)
    try:
        service = store.index_service
        if service.geometry is not None:
            geometry = service.geometry
            for f in service.files:
                ctx.index_files.append(
                    IndexContext(
                        str((store.index_dir / f.name).absolute()),
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


def _read_index_keys(plan: StorePlan, ctx, opts: AuditOptions) -> None:
    """--deep: the index files' reachable keys go to the executors (each judges its records' keys); the
    read and its problems are kept for the driver's index checks, which then do not read again."""
    from store import checks
    from store.storecheck import read_index_files

    problems = checks.ProblemList(plan.label, max_rows=opts.max_rows)
    plan.index_read = read_index_files(plan.store, problems)
    plan.index_problems = problems.table()
    ctx.index_keys = checks.ReachableKeys.of(plan.index_read.facts)


class _EveryRecord:
    """A record index that finds a record wherever it is asked: with it `check_index_targets` judges
    only what needs no records (entries below the commitlog or past its end); the executors judge the
    rest against their records."""

    def find(self, phy):
        import numpy as np

        phy = np.asarray(phy)
        return np.zeros(len(phy), dtype=np.int64), np.ones(len(phy), dtype=bool)


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
    tails, index headers and chains, checkpoint, `abort` and the lock, where recovery would end."""
    from store import checks
    from store.storecheck import (
        check_checkpoint_file,
        check_index_files,
        check_queue_files,
        note_broker_running,
        recovery_summary,
    )

    store = plan.store
    problems = checks.ProblemList(plan.label, max_rows=max_rows)
    abort = note_broker_running(store, problems)
    summaries = file_summaries(plan, splits, stops, first_rows=False)
    verdict = checks.check_commitlog(summaries, problems, file_size=store.commitlog.file_size)
    valid_end = verdict.valid_end
    commitlog_min = plan.files[0].start_offset if plan.files else 0
    # the executors judged every unit that points into their ranges; the driver judges the rest
    empty = checks.RecordIndex.from_batches([], [], [])
    check_queue_files(
        store, empty, problems, commitlog_min=commitlog_min, valid_end=valid_end, outside_only=True
    )
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
    cp = check_checkpoint_file(
        store,
        problems,
        abort=abort,
        last_store_ts=last_store_ts,
        dispatched_store_ts=dispatched_store_ts,
        index_ends=index.ends,
    )
    recovery_summary(file_summaries(plan, splits, stops, first_rows=True), verdict, cp, abort, problems)
    return problems.table().to_pylist()


SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def sort_problems(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As `verify` orders them: by severity, then file, offset and kind (rows without a file first)."""
    return sorted(
        rows,
        key=lambda r: (
            r["store"],
            SEVERITY_RANK.get(r.get("severity") or "error", 0),
            r["file"] is not None,
            r["file"] or "",
            r["offset"] if r["offset"] is not None else -1,
            r["kind"],
        ),
    )


# --- the job ----------------------------------------------------------------------------------------


def _split_rows(splits: list[Split], plans: list[StorePlan], opts: AuditOptions, bucket: int) -> list[dict]:
    """The SplitTask fields of each split, in split order (the scan's task i is splits[i])."""
    names = [name for name, _, _ in SPLIT_FIELDS]
    rows = []
    output = str(opts.output.resolve()) if opts.output else None
    for s in splits:
        plan = plans[s.store]
        value = {
            "seq": s.seq,
            "store": s.store,
            "path": str(s.file.path),
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


def run_audit(opts: AuditOptions, spark=None, progress: ProgressFn | None = None) -> AuditResult:
    """Audit the stores: plan, scan on Spark, aggregate with Spark SQL, add the driver-side facts.

    Uses `spark` when given, else the active session (spark-submit), else starts one on opts.master
    (and stops it at the end).
    """
    from mqtool.audit.spark import scan_partition, start_session, stop_session

    timings: dict[str, float] = {}
    began = time.monotonic()
    plans, failures = open_stores(opts)
    _prepare_output(opts.output)
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
        _run_job(spark, opts, plans, splits, contexts, bucket, document, timings, progress, scan_partition)
        document["failedStores"] = [asdict(f) for f in failures]
        document["problems"] = [f.problem() for f in failures] + document["problems"]
        t = time.monotonic()
        if opts.output:
            write_output(opts.output, document)
        timings["output"] = time.monotonic() - t
    finally:
        for plan in plans:
            plan.store.close()
        if started_here and spark is not None:
            stop_session(spark)
    timings["total"] = time.monotonic() - began
    document["scan"]["seconds"] = {k: round(v, 3) for k, v in timings.items()}
    return AuditResult(document, timings, opts.output)


def _start_session(start_session, master: str):
    """start_session, with the two ways it fails on a new machine said in one line."""
    try:
        return start_session(master, create_class_archive=True)
    except ImportError as exc:
        raise AuditError(f"the audit runs on Spark: install pyspark and pandas<3 ({exc})") from exc
    except Exception as exc:  # py4j / PySpark errors when the JVM does not start
        if isinstance(exc, MqtoolError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AuditError(
            f"cannot start Spark on {master!r} (Java 17 or newer must be installed, on PATH or in "
            f"JAVA_HOME): {first}"
        ) from exc


def _run_job(
    spark, opts, plans, splits, contexts, bucket, document, timings, progress, scan_partition
) -> None:
    import functools

    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812

    from store.checks import merge_counted

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
            sections = side.submit(_timed, _driver_sections, plans, opts, document)
            try:
                with _JobWatcher(spark, SCAN_GROUP, len(splits), progress):
                    found = partials.where(F.col("kind").isin(STOP, PROBLEM)).collect()
            finally:
                sc.setLocalProperty("spark.jobGroup.id", None)
            timings["scan"] = time.monotonic() - t
            timings["sections"] = sections.result()
        t = time.monotonic()
        stops = {}
        for r in found:
            if r.kind == STOP:
                stops[r.seq] = SplitStop(
                    r.seq, None if r.key == NO_STOP else r.text, r.n, r.bytes, json.loads(r.detail)
                )
        cuts = {plan.index: recovery_cut(plan, splits, stops) for plan in plans}
        valid = sorted(seq for cut in cuts.values() for seq in cut.valid_seqs)
        valid_set = set(valid)
        checked = merge_counted(
            [
                {
                    "store": plans[r.store].label,
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
            _drop_invalid_message_files(opts.output, splits, valid_set)
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
            "dups": _duplicates_frame(spark, int(opts.top)),
        }
        # the Spark SQL jobs run while this thread does the driver's part (whole-store checks, lag, delay,
        # transactions): neither waits for the other
        with ThreadPoolExecutor(max_workers=len(queries)) as pool:
            futures = {name: pool.submit(_collect, spark, sql) for name, sql in queries.items()}
            problems = list(checked)
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
    small = sorted(results["small"], key=lambda r: (r["kind"], r["store"], r["topic"] or "", r["key"]))
    dups = results["dups"]
    document["duplicates"] = _duplicates(plans, dups, int(opts.top))
    _assemble(plans, splits, stops, cuts, queues, small, sort_problems(problems), bucket, document)


def _timed(fn, *args) -> float:
    t = time.monotonic()
    fn(*args)
    return time.monotonic() - t


def _collect(spark, frame) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.collect()]


def _duplicates_frame(spark, top: int):
    """Hashes in more than one message: the splits' arrays grouped by (store, kind, bucket) — Spark moves
    whole arrays, not one row per key — and merged by `merge_duplicates` (numpy), top `top` per bucket."""
    from pyspark.sql import functions as F  # noqa: N812

    from mqtool.audit.spark import DUP_RESULT_DDL, duplicates_merger

    frame = spark.table("audit_partials").where(F.col("kind").isin(DUP_UNIQ, DUP_KEY))
    frame = frame.select("store", "kind", "key", "hashes", "counts", "firsts", "lasts")
    return frame.groupBy("store", "kind", "key").applyInArrow(duplicates_merger(top), DUP_RESULT_DDL)


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
    schema = "store int, topic string, queueId int, cqMinOffset bigint, cqMaxOffset bigint, cqError string"
    spark.createDataFrame(rows, schema=schema).createOrReplaceTempView("audit_consume_queues")


# --- assembling the document ----------------------------------------------------------------------

DISPATCHED_NOTE = (
    "messages = records in the commitlog (up to the truncation point) that the dispatcher puts in the "
    "ConsumeQueue (PREPARED and ROLLBACK transaction records are not); records = every message record "
    "of the queue; cqMinOffset/cqMaxOffset = the ConsumeQueue as the broker loads it"
)


def _assemble(plans, splits, stops, cuts, queues, small, problems, bucket, document) -> None:
    labels = {p.index: p.label for p in plans}
    for q in queues:
        q["store"] = labels[q["store"]]
    document["queues"] = queues
    document["definitions"] = {"messages": DISPATCHED_NOTE}
    document["problems"] = problems
    stores = []
    for plan in plans:
        cut = cuts[plan.index]
        valid = set(cut.valid_seqs)
        own = [stops[s.seq] for s in splits if s.store == plan.index and s.seq in valid]
        rows = [q for q in queues if q["store"] == plan.label]
        firsts = [q["firstStoreTimestamp"] for q in rows if q["firstStoreTimestamp"] is not None]
        lasts = [q["lastStoreTimestamp"] for q in rows if q["lastStoreTimestamp"] is not None]
        stores.append(
            {
                "store": plan.label,
                "root": str(plan.root),
                "commitlogFiles": len(plan.files),
                "commitlogBytes": plan.file_bytes,
                "minOffset": plan.files[0].start_offset if plan.files else 0,
                "validEnd": cut.end_offset,
                "end": cut.kind,
                "endFile": _relative(plan, cut.file) if cut.file else None,
                "records": sum(st.records for st in own),
                "recordBytes": sum(st.bytes for st in own),
                "messages": sum(q["messages"] for q in rows),
                "firstStoreTimestamp": min(firsts) if firsts else None,
                "lastStoreTimestamp": max(lasts) if lasts else None,
                "splits": sum(1 for s in splits if s.store == plan.index),
                "problems": sum(1 for p in problems if p["store"] == plan.label),
                "errors": sum(
                    1 for p in problems if p["store"] == plan.label and p.get("severity") == "error"
                ),
            }
        )
    document["stores"] = stores
    document["topics"] = _topics(queues, stores)
    rates, sizes, retry_rows = [], [], []
    for r in small:
        label = labels[r["store"]]
        if r["kind"] == RATE:
            rates.append(
                {
                    "store": label,
                    "topic": r["topic"],
                    "bucketStart": r["key"] * bucket,
                    "messages": r["n"],
                    "bytes": r["bytes"],
                }
            )
        elif r["kind"] == BODY:
            k = r["key"]
            sizes.append(
                {
                    "store": label,
                    "topic": r["topic"],
                    "minSize": 0 if k == 0 else 1 << (k - 1),
                    "maxSize": 0 if k == 0 else (1 << k) - 1,
                    "messages": r["n"],
                    "bodyBytes": r["bytes"],
                }
            )
        else:
            retry_rows.append((label, r["topic"], r["key"], r["n"], r["bytes"]))
    document["rates"] = rates
    document["bodySizes"] = sizes
    document["retry"] = _retry(plans, retry_rows)


def _topics(queues: list[dict], stores: list[dict]) -> list[dict]:
    """Disk per topic: record bytes and their share of the store's commitlog files."""
    disk = {s["store"]: s["commitlogBytes"] for s in stores}
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for q in queues:
        if q["records"] == 0 and q["messages"] == 0:
            continue
        row = by.setdefault(
            (q["store"], q["topic"]),
            {"store": q["store"], "topic": q["topic"], "queues": 0, "messages": 0, "records": 0, "bytes": 0},
        )
        row["queues"] += 1
        row["messages"] += q["messages"]
        row["records"] += q["records"]
        row["bytes"] += q["recordBytes"]
    out = sorted(by.values(), key=lambda r: (r["store"], -r["bytes"], r["topic"]))
    for row in out:
        total = disk.get(row["store"]) or 0
        row["share"] = round(row["bytes"] / total, 6) if total else None
    return out


def _known_groups(store: Store) -> set[str]:
    groups: set[str] = set()
    with contextlib.suppress(MqtoolError, AttributeError):
        groups |= set(store.config("subscriptionGroup.json").load().model.subscription_group_table)
    try:
        for key in store.config("consumerOffset.json").load().model.offset_table:
            groups.add(key.rpartition("@")[2])
    except MqtoolError:
        pass
    return groups


def group_of(topic: str, groups: set[str]) -> tuple[str, str]:
    """(group, kind) of a %RETRY%/%DLQ% topic; a POP retry topic `%RETRY%<group>_<topic>` (or `+`)
    maps to the longest known group it starts with."""
    from mqtool.audit.spark import DLQ_PREFIX, RETRY_PREFIX

    kind, rest = ("dlq", topic[len(DLQ_PREFIX) :]) if topic.startswith(DLQ_PREFIX) else ("retry", topic)
    if kind == "retry":
        rest = topic[len(RETRY_PREFIX) :]
    if rest in groups:
        return rest, kind
    matches = [g for g in groups if rest.startswith(g + "_") or rest.startswith(g + "+")]
    return (max(matches, key=len), kind) if matches else (rest, kind)


def _retry(plans: list[StorePlan], rows: list[tuple]) -> list[dict]:
    groups = {plan.label: _known_groups(plan.store) for plan in plans}
    by: dict[tuple, dict[str, Any]] = {}
    for label, topic, reconsume, n, size in rows:
        group, kind = group_of(topic, groups[label])
        row = by.setdefault(
            (label, topic),
            {
                "store": label,
                "group": group,
                "topic": topic,
                "kind": kind,
                "messages": 0,
                "bytes": 0,
                "reconsumeTimes": {},
                "maxReconsumeTimes": None,
            },
        )
        row["messages"] += n
        row["bytes"] += size
        row["reconsumeTimes"][str(reconsume)] = row["reconsumeTimes"].get(str(reconsume), 0) + n
        row["maxReconsumeTimes"] = max(reconsume, row["maxReconsumeTimes"] or 0)
    return sorted(by.values(), key=lambda r: (r["store"], r["group"], r["kind"], r["topic"]))


def _record_at(plan: StorePlan, phy: int) -> dict[str, Any] | None:
    """topic / uniqKey / keys of the record at a physical offset (the executors' decoder, for equal text)."""
    from formats.columnar import decode_range

    for f in plan.files:
        if f.start_offset <= phy < f.start_offset + f.size:
            with open(f.path, "rb") as fh:
                buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                pos = phy - f.start_offset
                batch = decode_range(buf, f.start_offset, pos, pos + 1)
                rows = batch.select(["topic", "uniqKey", "keys", "status"]).to_pylist()
            finally:
                _close(buf)
            return rows[0] if rows and rows[0]["status"] == "ok" else None
    return None


def _duplicates(plans: list[StorePlan], rows: list[dict], top: int) -> list[dict]:
    """Per store and kind: how many keys occur in several messages, and the `top` ones, named."""
    out = []
    for plan in plans:
        for kind, by in ((DUP_UNIQ, "uniqKey"), (DUP_KEY, "key")):
            mine = [r for r in rows if r["store"] == plan.index and r["kind"] == kind]
            buckets = {r["bucket"]: (r["groups"], r["groupMessages"]) for r in mine}
            groups = sum(g for g, _ in buckets.values())
            messages = sum(m for _, m in buckets.values())
            best = sorted(mine, key=lambda r: (-r["messages"], r["firstPhyOffset"]))[:top]
            entry = {
                "store": plan.label,
                "by": by,
                "groups": groups,
                "messages": messages,
                "extraMessages": messages - groups,
                "top": [],
            }
            for r in best:
                record = _record_at(plan, r["firstPhyOffset"]) or {}
                topic = record.get("topic")
                key = None
                if topic is not None:
                    candidates = (
                        [record.get("uniqKey")] if by == "uniqKey" else (record.get("keys") or "").split(" ")
                    )
                    key = next((c for c in candidates if c and key_hash(topic, c) == r["h"]), None)
                entry["top"].append(
                    {
                        "topic": topic if key is not None else None,
                        "key": key,
                        "messages": r["messages"],
                        "firstPhyOffset": r["firstPhyOffset"],
                        "lastPhyOffset": r["lastPhyOffset"],
                    }
                )
            out.append(entry)
    return out


# --- driver-side sections: lag, delay, transactions ------------------------------------------------


def _driver_sections(plans: list[StorePlan], opts: AuditOptions, document: dict) -> None:
    from mqtool.timeparse import now_ms

    now = opts.now if opts.now is not None else now_ms()
    document["now"] = now
    notes = document.setdefault("notes", [])
    lag, delay, txns = [], [], []
    for plan in plans:
        for name, fn, sink in (
            ("lag", _lag_rows, lag),
            ("delay", _delay_rows, delay),
            ("transactions", _transaction_rows, txns),
        ):
            try:
                rows, more = fn(plan, now)
            except MqtoolError as exc:
                notes.append(f"{plan.label}: {name} not computed: {exc}")
                continue
            sink.extend(rows)
            notes.extend(f"{plan.label}: {n}" for n in more)
    document["lag"] = lag
    document["delay"] = delay
    document["transactions"] = txns


def _lag_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    from mqtool.consumer_progress import consumer_progress, store_time_of

    store = plan.store
    try:
        progress = consumer_progress(store)
    except MqtoolError as exc:
        if not (store.config_dir / "consumerOffset.json").exists():
            return [], []
        raise exc
    store_time = store_time_of(store)
    rows = []
    for r in progress.rows:
        if r.queue_id is None or r.topic is None:
            continue
        first_unconsumed = None
        if r.max_offset is not None and r.consumer_offset is not None and r.consumer_offset < r.max_offset:
            at = max(r.consumer_offset, r.min_offset or 0)
            unit = store.consume_queue(r.topic, r.queue_id).unit(at)
            if unit is not None:
                t = store_time(unit.phy_offset, unit.size)
                first_unconsumed = t if t > 0 else None
        rows.append(
            {
                "store": plan.label,
                "group": r.group,
                "topic": r.topic,
                "queueId": r.queue_id,
                "consumerOffset": r.consumer_offset,
                "minOffset": r.min_offset,
                "maxOffset": r.max_offset,
                "lag": r.lag,
                "state": r.state,
                "firstUnconsumedStoreTimestamp": first_unconsumed,
                "lagMs": None if first_unconsumed is None else max(0, now - first_unconsumed),
                "lastConsumedTimestamp": r.last_consumed_timestamp,
            }
        )
    return rows, progress.notes


def _delay_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    from formats.names import SCHEDULE_TOPIC
    from mqtool.delay.listing import delay_stats

    store = plan.store
    if (
        SCHEDULE_TOPIC not in store.consume_queues.topics()
        and not (store.config_dir / "delayOffset.json").exists()
    ):
        return [], []
    stats = delay_stats(store, now=now)
    rows = []
    for r in stats.rows:
        doc = r.to_json()
        rows.append(
            {
                "store": plan.label,
                "level": doc["level"],
                "delayMs": doc["delayMs"],
                "queueId": doc["queueId"],
                "minOffset": doc["minOffset"],
                "maxOffset": doc["maxOffset"],
                "delayOffset": doc["delayOffset"],
                "startOffset": doc["startOffset"],
                "backlog": doc["backlog"],
                "pendingQueueOffsets": [doc["startOffset"], doc["maxOffset"]],
                "due": doc["due"],
                "oldestDeliverTimestamp": doc["oldestDeliverTimestamp"],
                "lateMs": doc["lateMs"],
                "stuck": doc["stuck"],
            }
        )
    return rows, stats.notes


def _transaction_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    from mqtool.transactions.listing import list_transactions
    from store.messagerebuild import TRANS_HALF_TOPIC

    store = plan.store
    if TRANS_HALF_TOPIC not in store.consume_queues.topics():
        return [], []
    report = list_transactions(store, now=now)
    rows = []
    for t in report.transactions:
        doc = t.to_json()
        rows.append(
            {
                "store": plan.label,
                "queueId": doc["queueId"],
                "halfQueueOffset": doc["halfQueueOffset"],
                "phyOffset": doc["phyOffset"],
                "state": doc["state"],
                "realTopic": doc["realTopic"],
                "realQueueId": doc["realQueueId"],
                "producerGroup": doc["producerGroup"],
                "transactionId": doc["transactionId"],
                "checkTimes": doc["checkTimes"],
                "bornTimestamp": doc["bornTimestamp"],
            }
        )
    return rows, report.notes


# --- the output directory (what goes in it: mqtool.audit.output) ------------------------------------


def _prepare_output(output: Path | None) -> None:
    """The output directory must be new, empty, or an earlier audit's (whose message files are removed)."""
    if output is None:
        return
    if output.exists():
        if not output.is_dir():
            raise AuditError("--output exists and is not a directory", str(output))
        entries = list(output.iterdir())
        if entries and not (output / OUTPUT_MARKER).exists():
            raise AuditError(
                "--output is not empty and holds no earlier audit; choose a new directory", str(output)
            )
        shutil.rmtree(output / "messages", ignore_errors=True)
    output.mkdir(parents=True, exist_ok=True)


def _drop_invalid_message_files(output: Path, splits: list[Split], valid: set[int]) -> None:
    for s in splits:
        if s.seq not in valid:
            path = message_file(str(output.resolve()), s.store, s.seq)
            if path.exists():
                os.unlink(path)


__all__ = [
    "AuditError",
    "AuditOptions",
    "AuditResult",
    "auto_split_size",
    "choose_bucket",
    "estimate_span",
    "group_of",
    "open_stores",
    "StoreFailure",
    "plan_splits",
    "recovery_cut",
    "run_audit",
]
