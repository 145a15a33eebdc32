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
from store.layout import Setting
from store.queue.consumequeue import is_rocksdb_dir
from store.rebuild.build import (
    DIRECTORIES,
    BuildResult,
    IndexDiff,
    QueueDiff,
    build_staging,
    compare_consume_queues,
    compare_index,
    finish,
    prepare_staging,
)
from store.storedir import Store

TARGETS = ("cq", "index", "all")


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
            },
            "warnings": self.warnings,
        }
        if b.cq:
            doc["consumeQueues"] = {
                "units": b.cq_units,
                "queues": [queue_row(q) for q in self.queues],
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
    if cq.value % 20:
        where = {"current files": str(store.root / "consumequeue"), "broker.conf": cfg.source}
        raise RebuildRefused(
            f"mappedFileSizeConsumeQueue {cq.value} (from the {cq.source}) is not a multiple of 20",
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
) -> RebuildReport:
    """Plan the rebuild of `target` (cq, index, all); with `execute`, also do it."""
    if target not in TARGETS:
        raise RebuildRefused(f"unknown rebuild target {target!r}; choose cq, index or all")
    do_cq, do_index = target in ("cq", "all"), target in ("index", "all")
    _refuse_unsupported(store, do_cq, execute)
    refuse_unsupported_layout(store, "queues" if do_cq else "index")
    cq_size, slots, num, notes = resolve_settings(store, cq_file_size, hash_slot_num, index_num)
    version = store.layout.detected_version
    version_text = f"{version.major}.x ({version.reason})" if version else "unknown (read as 5.x)"
    clock = now or (lambda: int(time.time() * 1000))
    delay_levels = store.layout.delay_levels.ms
    with write_guard(store, execute, note=note, touches="queues" if do_cq else "index") as may_write:
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
            )
            batch_queues = []
            if do_cq and store.batch_cq_topics:  # BatchCQ topics: batchconsumequeue/, not consumequeue/
                from store.rebuild.batchcq import stage_batch_queues

                batch_queues = stage_batch_queues(store, result, delay_levels)
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


# --- rendering -------------------------------------------------------------------------------------


__all__ = [
    "TARGETS",
    "RebuildRefused",
    "RebuildReport",
    "rebuild",
    "resolve_settings",
]
