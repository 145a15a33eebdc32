"""`mqtool rebuild [cq|index|all]`: rebuild ConsumeQueues and/or the index from the commitlog.

The rebuild dispatches every live commitlog record as the broker does (`store.rebuild.build`, whose
docstring says what a rebuild of a crashed or retention-trimmed store means) into a staging
directory, compares the result with the current files, and prints that plan: per queue whether its
files stay the same, differ (and from which queue offset), are new, removed or kept, and whether the
index contents change. That makes the dry run a consistency check. With `--execute`, under
`mqtool.safety.write_guard` (refused while a broker holds the lock), the rebuilt directories are
swapped in atomically; nothing is written when nothing differs. BatchCQ topics (`queue.type=BatchCQ`)
are rebuilt into `batchconsumequeue/` (`store.rebuild.batchcq`), their units byte-identical to the
broker's.

Settings, each from the first source that has it: the command-line flag, `--broker-config`, the
current files, the broker default (`mappedFileSizeConsumeQueue`, `maxHashSlotNum`, `maxIndexNum`).
The dry run builds in a temporary directory outside the store; `--execute` builds inside the store
root (same file system, so the swap is a rename).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any

from formats.batchconsumequeue import BATCH_CQ_DIR
from formats.errors import MqtoolError
from formats.indexfile import IndexGeometry, oversized_index
from mqtool.safety import refuse_unsupported_layout, warn, write_guard
from store.checks.orphans import OrphanQueue, find_orphans
from store.checks.storefiles import topic_queue_counts
from store.layout import Setting
from store.log.mappedfile import MAX_MAPPED_FILE_SIZE, possible_file_size
from store.queue.consumequeue import ConsumeQueueStore, is_rocksdb_dir
from store.rebuild.build import (
    DIRECTORIES,
    BuildResult,
    IndexDiff,
    QueueDiff,
    build_staging,
    compare_consume_queues,
    compare_index,
    drop_staged_queues,
    finish,
    prepare_staging,
    rebuild_targets,
)
from store.rebuild.compaction_cq import CompactionCqPlan, CqQueuePlan
from store.rebuild.dledger_index import DLedgerIndexPlan
from store.storedir import Store

TARGETS = ("cq", "index", "all", "dledger-index", "compaction-cq")
CQ_DIR = "consumequeue"


class RebuildRefused(MqtoolError):
    """A rebuild mqtool will not do on this store."""


@dataclass
class RebuildReport:
    """The plan (and, with execute, what was done)."""

    target: str
    execute: bool
    root: Path
    cq_file_size: Setting
    hash_slot_num: Setting
    index_num: Setting
    version: str
    build: BuildResult
    queues: list[QueueDiff]
    index: IndexDiff | None
    executed: bool = False
    warnings: list[str] = field(default_factory=list)
    prune_orphans: bool = False
    orphans: list[OrphanQueue] = field(default_factory=list)  # pruned with prune_orphans, else only named

    @property
    def changes(self) -> bool:
        queue_change = any(q.status != "same" for q in self.queues)
        return queue_change or (self.index is not None and self.index.status != "same")

    def to_json(self) -> dict[str, Any]:
        b = self.build
        doc: dict[str, Any] = {
            "target": self.target,
            "execute": self.execute,
            "executed": self.executed,
            "changes": self.changes,
            "store": str(self.root),
            "brokerVersion": self.version,
            "settings": {
                "mappedFileSizeConsumeQueue": vars(self.cq_file_size),
                "maxHashSlotNum": vars(self.hash_slot_num),
                "maxIndexNum": vars(self.index_num),
            },
            "commitlog": {
                "minOffset": b.commitlog_min_offset,
                "validEnd": b.valid_end,
                "stop": b.stop_kind,
                "stopReason": b.stop_reason,
                "messages": b.messages,
                "lastStoreTimestamp": b.last_store_timestamp,
                "dispatchEnd": b.dispatch_end,
                "unconfirmedMessages": b.unconfirmed,
            },
            "warnings": self.warnings,
        }
        if b.cq:
            doc["consumeQueues"] = {
                "units": b.cq_units,
                "queues": [queue_row(q) for q in self.queues],
                "pruneOrphans": self.prune_orphans,
                "orphans": [o.to_dict() for o in self.orphans],
            }
        if self.index is not None:
            doc["index"] = {
                "status": self.index.status,
                "firstDifference": self.index.first_difference,
                "keys": b.index_keys,
                "current": [index_row(n, h) for n, h in self.index.old_files],
                "rebuilt": [index_row(n, h) for n, h in self.index.new_files],
            }
        return doc


def queue_row(q: QueueDiff) -> dict[str, Any]:
    """One queue's comparison as a JSON row."""
    return {
        "topic": q.topic,
        "queueId": q.queue_id,
        "status": q.status,
        "minOffset": q.old_min,
        "maxOffset": q.old_max,
        "newMinOffset": q.new_min,
        "newMaxOffset": q.new_max,
        "files": q.old_files,
        "newFiles": q.new_files,
        "firstDifference": q.first_difference,
    }


def index_row(name: str, h) -> dict[str, Any]:
    """One index file's header as a JSON row."""
    return {
        "file": name,
        "beginTimestamp": h.begin_timestamp,
        "endTimestamp": h.end_timestamp,
        "beginPhyOffset": h.begin_phy_offset,
        "endPhyOffset": h.end_phy_offset,
        "hashSlotCount": h.hash_slot_count,
        "indexCount": h.index_count,
    }


# --- settings --------------------------------------------------------------------------------------


def resolve_settings(
    store: Store,
    cq_file_size: int | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> tuple[Setting, Setting, Setting, list[str]]:
    """(mappedFileSizeConsumeQueue, maxHashSlotNum, maxIndexNum) with where each came from."""
    cfg = store.broker_config
    flags = {"--mapped-file-size-consume-queue": cq_file_size, "--max-hash-slot-num": hash_slot_num,
             "--max-index-num": index_num}  # fmt: skip
    for flag_name, flag in flags.items():
        if flag is not None and flag <= 0:
            raise RebuildRefused(f"{flag_name} must be positive")
    cq = store.layout.cq_file_size(cq_file_size, "--mapped-file-size-consume-queue")
    slots, num, notes = store.layout.index_settings(
        hash_slot_num, "--max-hash-slot-num", index_num, "--max-index-num"
    )
    if not possible_file_size(cq.value, 20):
        where = {"current files": str(store.root / "consumequeue"), "broker.conf": cfg.source}
        why = "is not a multiple of 20" if cq.value % 20 else f"is past a Java int ({MAX_MAPPED_FILE_SIZE})"
        raise RebuildRefused(
            f"mappedFileSizeConsumeQueue {cq.value} (from the {cq.source}) {why}: no broker maps such a "
            "file; refusing to write",
            where.get(cq.source),
        )
    index_where = {"current files": str(store.root / "index"), "broker.conf": cfg.source}
    if num.value < 2:
        raise RebuildRefused(
            f"maxIndexNum {num.value} (from the {num.source}) is less than 2", index_where.get(num.source)
        )
    oversized = oversized_index(slots.value, num.value)
    if oversized:
        flags = any(s.source.startswith("--") for s in (slots, num))  # then the arguments are at fault
        where = (
            None
            if flags
            else next((index_where[s.source] for s in (slots, num) if s.source in index_where), None)
        )
        raise RebuildRefused(
            f"{oversized} (maxHashSlotNum from the {slots.source}, maxIndexNum from the {num.source})", where
        )
    return cq, slots, num, notes


def _refuse_unsupported(store: Store, cq: bool, execute: bool = True) -> None:
    root = store.root
    if cq and execute and is_rocksdb_dir(root / "consumequeue"):
        raise RebuildRefused(
            "consume queues are stored in RocksDB (storeType=defaultRocksDB); only file-based ones can be "
            "rebuilt (the dry run compares the RocksDB units with a rebuild)",
            str(root / "consumequeue"),
        )
    if cq and (root / "consumequeue_ext").is_dir():
        raise RebuildRefused(
            "consumequeue_ext/ exists (enableConsumeQueueExt): units hold ext addresses, which mqtool does "
            "not build",
            str(root / "consumequeue_ext"),
        )
    commitlog = root / "commitlog"
    try:
        has_files = commitlog.is_dir() and any(p.name.isdigit() for p in commitlog.iterdir())
        has_files = has_files or bool(store.commitlog.files)  # a DLedger commitlog's data files
    except OSError as exc:
        raise RebuildRefused(f"cannot list: {exc.strerror or exc}", str(commitlog)) from exc
    if not has_files:
        raise RebuildRefused("the commitlog has no files: there is nothing to rebuild from", str(commitlog))


# --- the operation ---------------------------------------------------------------------------------


def rebuild(
    store: Store,
    target: str = "all",
    *,
    execute: bool = False,
    cq_file_size: int | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    zone: tzinfo | None = None,
    now: Callable[[], int] | None = None,
    note: Callable[[str], None] = warn,
    progress: Callable[[int], None] | None = None,
    prune_orphans: bool = False,
) -> RebuildReport:
    """Plan the rebuild of `target` (cq, index, all); with `execute`, also do it. With `prune_orphans`, the
    rebuilt ConsumeQueues leave out the queues of topics the topic config lacks and queues past both of
    their topic's queue counts (`store.checks.orphans`: what the broker's cleanUnusedTopic deletes, and
    what shrinking a topic left). (`dledger-index`: `rebuild_dledger_index`.)"""
    if target not in TARGETS or target in ("dledger-index", "compaction-cq"):
        raise RebuildRefused(
            f"unknown rebuild target {target!r}; choose cq, index, all, dledger-index or compaction-cq"
        )
    do_cq, do_index = target in ("cq", "all"), target in ("index", "all")
    topic_queues = topic_queue_counts(store) if do_cq else None
    if prune_orphans and not do_cq:
        raise RebuildRefused("--prune-orphans removes consume queues: rebuild cq or all")
    if prune_orphans and topic_queues is None:
        raise RebuildRefused(
            "--prune-orphans needs the broker's topic config, and this store has none (no topics.json, "
            "its .bak or a RocksDB config): every queue would look orphaned; nothing is pruned",
            str(store.config_dir / "topics.json"),
        )
    _refuse_unsupported(store, do_cq, execute)
    refuse_unsupported_layout(store, "queues" if do_cq else "index")
    cq_size, slots, num, notes = resolve_settings(store, cq_file_size, hash_slot_num, index_num)
    if execute and do_index and notes and "broker default" in (slots.source, num.source):
        # the index files exist but their geometry cannot be read: the broker's is unknown, not its default
        raise RebuildRefused(
            f"{notes[0]}; give --max-hash-slot-num and --max-index-num (or --broker-config): refusing to "
            "rebuild the index with the broker defaults",
            str(store.root / "index"),
        )
    version = store.layout.detected_version
    version_text = f"{version.major}.x ({version.reason})" if version else "unknown (read as 5.x)"
    clock = now or (lambda: int(time.time() * 1000))
    delay_levels = store.layout.delay_levels.ms
    swapped = [DIRECTORIES[t] for t, wanted in (("cq", do_cq), ("index", do_index)) if wanted]
    if do_cq and store.batch_cq_topics:
        swapped.append(BATCH_CQ_DIR)
    targets = rebuild_targets(store.root, swapped, do_index)
    touches = "queues" if do_cq else "index"
    with write_guard(store, execute, note=note, touches=touches, targets=targets) as may_write:
        scratch: Path | None = None
        if may_write:
            staging = prepare_staging(store.root)
        else:
            scratch = Path(tempfile.mkdtemp(prefix="mqtool-rebuild-"))
            staging = scratch / "staging"
        try:
            result = build_staging(
                store.root,
                staging,
                cq=do_cq,
                index=do_index,
                cq_file_size=cq_size.value,
                index_geometry=IndexGeometry(slots.value, num.value),
                delay_levels=delay_levels,
                now_ms=clock,
                zone=zone,
                accept_v2=version is None or version.major >= 5,
                progress=progress,
                lmq=store.layout.lmq,
                durable=may_write,
                commitlog=store.commitlog,
                dispatch_end=None if store.confirm is None else store.served_end,
            )
            batch_queues = []
            if do_cq and store.batch_cq_topics:  # BatchCQ topics: batchconsumequeue/, not consumequeue/
                from store.rebuild.batchcq import stage_batch_queues

                batch_queues = stage_batch_queues(store, result, delay_levels)
            orphans = _orphans(store, result, batch_queues, topic_queues) if do_cq else []
            if prune_orphans:
                drop_staged_queues(result, [(o.topic, o.queue_id) for o in orphans if o.directory == CQ_DIR])
            report = RebuildReport(
                target,
                execute,
                store.root,
                cq_size,
                slots,
                num,
                version_text,
                result,
                (compare_consume_queues(store.root, result) + batch_queues) if do_cq else [],
                compare_index(store.root, result) if do_index else None,
                warnings=notes + result.warnings,
                prune_orphans=prune_orphans,
                orphans=orphans,
            )
            _note_orphans(report)
            if result.dispatch_end is not None:
                report.warnings.append(
                    f"controller mode: dispatched up to {result.dispatch_end} (the confirm offset, or the "
                    "consume queues' end where they already go further), as the broker's reput does; the "
                    f"{result.unconfirmed} message(s) past it (the unconfirmed tail) get no unit or index "
                    "entry"
                )
            if result.stop_kind != "end":
                report.warnings.append(
                    f"the commitlog ends with a {result.stop_kind} record at {result.valid_end} "
                    f"({result.stop_reason}); the rebuild covers the records before it, as the broker's "
                    "recovery would"
                )
            if may_write:
                if report.changes:
                    names = [
                        DIRECTORIES[t]
                        for t in ("cq", "index")
                        if (t == "cq" and do_cq) or (t == "index" and do_index)
                    ]
                    if batch_queues:
                        names.append(BATCH_CQ_DIR)
                    finish(store.root, result, names)
                    report.executed = True
                else:
                    shutil.rmtree(staging, ignore_errors=True)
        except BaseException:
            if may_write:
                shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
    return report


def _orphans(
    store: Store, result: BuildResult, batch_queues: list[QueueDiff], topic_queues: dict | None
) -> list[OrphanQueue]:
    """The orphan queues of the current consume queues and of the rebuild (a deleted topic whose
    directory is gone still has records the rebuild dispatches)."""
    if topic_queues is None:
        return []
    current = set()
    cq_root = store.root / CQ_DIR
    if cq_root.is_dir() and not is_rocksdb_dir(cq_root):
        current = set(
            ConsumeQueueStore(store.root, commitlog_min_offset=result.commitlog_min_offset).queues()
        )
    found = {
        CQ_DIR: current | set(result.queues),
        BATCH_CQ_DIR: {(q.topic, q.queue_id) for q in batch_queues},
    }
    return find_orphans(topic_queues, found)


def _note_orphans(report: RebuildReport) -> None:
    """Mark the pruned queues in the plan, and say what the orphans mean either way."""
    cq_orphans = {(o.topic, o.queue_id) for o in report.orphans if o.directory == CQ_DIR}
    others = [o for o in report.orphans if o.directory != CQ_DIR]
    if report.prune_orphans:
        for q in report.queues:
            if (q.topic, q.queue_id) in cq_orphans and q.old_files:
                q.status = "pruned"
        if cq_orphans:
            report.warnings.append(
                f"{len(cq_orphans)} orphan queue(s) left out of the rebuilt consumequeue/ (a topic the topic "
                "config lacks, or a queue past its topic's counts); their committed offsets stay: "
                "`mqtool offsets prune` removes those"
            )
    elif cq_orphans:
        report.warnings.append(
            f"{len(cq_orphans)} queue(s) belong to a topic the topic config lacks or lie past their topic's "
            "queue counts (orphans, rebuilt as they are): --prune-orphans leaves them out"
        )
    if others:
        report.warnings.append(
            f"{len(others)} orphan queue(s) under {BATCH_CQ_DIR}/ are not pruned (BatchCQ queues are rebuilt "
            f"whole): {', '.join(o.path for o in others[:4])}"
        )


# --- DLedger's index -------------------------------------------------------------------------------


@dataclass
class FileRebuildReport:
    """A rebuild that rewrites the files that differ, one by one: its plan, with execute what was written."""

    root: Path
    execute: bool
    plan: Any
    written: list[str] = field(default_factory=list)

    @property
    def executed(self) -> bool:
        return bool(self.written)

    def _head(self, target: str) -> dict[str, Any]:
        return {
            "target": target,
            "execute": self.execute,
            "executed": self.executed,
            "changes": self.plan.changes,
            "store": str(self.root),
        }


@dataclass
class DLedgerIndexReport(FileRebuildReport):
    """`rebuild dledger-index`: the plan (`store.rebuild.dledger_index`), with execute what was written."""

    plan: DLedgerIndexPlan

    def to_json(self) -> dict[str, Any]:
        p = self.plan
        return self._head("dledger-index") | {
            "entries": p.entries,
            "firstIndex": p.first_index,
            "lastIndex": p.last_index,
            "recoveryRewritesFrom": p.rewrite_from,
            "files": [
                {"file": f.name, "status": f.status, "firstDifference": f.first_difference, "units": f.units}
                for f in p.files
            ],
            "written": self.written,
        }


def rebuild_dledger_index(
    store: Store, *, execute: bool = False, note: Callable[[str], None] = warn
) -> DLedgerIndexReport:
    """Plan DLedger's index from its data (every kept entry's unit); with `execute`, write the index files
    that differ (`store.rebuild.dledger_index`), under the store lock."""
    from store.log.dledger import DLedgerCommitLog
    from store.rebuild.dledger_index import plan_dledger_index, write_dledger_index

    commitlog = store.commitlog
    if not isinstance(commitlog, DLedgerCommitLog) or not commitlog.log.data_files:
        raise RebuildRefused(
            "this store has no DLedger commitlog data files: there is no DLedger index to rebuild"
        )
    refuse_unsupported_layout(store, "index")
    if commitlog.log.recovery.exits:
        raise RebuildRefused(f"the broker does not start on this store: {commitlog.log.recovery.exits}")
    with write_guard(store, execute, note=note, touches="index") as may_write:
        plan = plan_dledger_index(commitlog)
        report = DLedgerIndexReport(store.root, execute, plan)
        if may_write and plan.changes:
            report.written = write_dledger_index(commitlog, plan, store.root)
    return report


# --- compaction topics' CQ -------------------------------------------------------------------------


@dataclass
class CompactionCqReport(FileRebuildReport):
    """`rebuild compaction-cq`: the plan (`store.rebuild.compaction_cq`), with execute what was written."""

    plan: CompactionCqPlan

    def to_json(self) -> dict[str, Any]:
        p = self.plan
        return self._head("compaction-cq") | {
            "settings": {"compactionCqFileSize": {"value": p.cq_file_size, "source": p.cq_file_size_source}},
            "queues": [compaction_queue_row(q) for q in p.queues],
            "warnings": p.warnings + [w for q in p.queues for w in q.warnings],
            "written": self.written,
        }


def compaction_queue_row(q: CqQueuePlan) -> dict[str, Any]:
    return {
        "topic": q.topic,
        "queueId": q.queue_id,
        "status": q.status,
        "refused": q.refused,
        "files": [
            {
                "file": f.name,
                "status": f.status,
                "units": f.units,
                "endUnit": f.end_unit,
                "firstDifference": f.first_difference,
                "firstDifferenceQueueOffset": f.first_queue_offset,
            }
            for f in q.files
        ],
    }


def rebuild_compaction_cq(
    store: Store, *, execute: bool = False, note: Callable[[str], None] = warn
) -> CompactionCqReport:
    """Plan every compaction topic queue's CQ (`compaction/compactionCq/`) from its compaction log, each unit
    byte for byte as the broker's append writes it (`store.rebuild.compaction_cq`); with `execute`, under
    the store lock, write the CQ files that differ (atomically, per file) and remove CQ files without a log
    file. Settings: the current CQ files' size, else --broker-config's compactionCqMappedFileSize, else the
    broker default. Refused while any queue's log cannot be followed (the plan says which and why)."""
    from store.rebuild.compaction_cq import plan_compaction_cq, write_compaction_cq

    cfg = store.layout.broker_config
    cq_setting = cfg.compactionCqMappedFileSize if "compactionCqMappedFileSize" in cfg.explicit else None
    log_setting = cfg.compactionMappedFileSize if "compactionMappedFileSize" in cfg.explicit else None
    with write_guard(store, execute, note=note, touches="compaction") as may_write:
        plan = plan_compaction_cq(store.compaction, cq_setting, log_setting)
        report = CompactionCqReport(store.root, execute, plan)
        if execute and plan.refused:
            raise RebuildRefused(f"nothing rebuilt: {plan.refused[0].refused}")
        if may_write and plan.changes:
            report.written = write_compaction_cq(store.compaction, plan, store.root)
    return report


# --- rendering -------------------------------------------------------------------------------------


__all__ = [
    "TARGETS",
    "CompactionCqReport",
    "DLedgerIndexReport",
    "RebuildRefused",
    "RebuildReport",
    "compaction_queue_row",
    "rebuild",
    "rebuild_compaction_cq",
    "rebuild_dledger_index",
    "resolve_settings",
]
