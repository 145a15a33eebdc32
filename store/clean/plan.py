"""The next runs of the broker's clean services on a store, file by file (`plan_clean`).

Each run is what the store's scheduled tasks do every `cleanResourceInterval` (10 s; 5.3.3
DefaultMessageStore.java:1818-1885): `CleanCommitLogService.run()` (`store.clean.commitlog`), then
`CleanConsumeQueueService.run()` and the index cleaning (`store.clean.queues`). The disk ratios are the
partition's (measured, or given); a deletion frees its bytes from a measured partition for the next run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from formats.errors import MqtoolError
from store.clean.commitlog import CleanDecision, TimedFile, decide, delete_expired_by_time
from store.clean.disk import DiskUsage
from store.clean.queues import QueueState, index_files_deleted
from store.clean.settings import CleanSettings


@dataclass
class CleanRound:
    """One run: when, what it decided, and what it deleted."""

    number: int
    at_ms: int
    decision: CleanDecision
    commitlog_deleted: list[TimedFile]
    commitlog_min_after: int
    queues_ran: bool
    cq_deleted: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    index_deleted: list[str] = field(default_factory=list)

    @property
    def deleted_anything(self) -> bool:
        return bool(self.commitlog_deleted or self.index_deleted or any(self.cq_deleted.values()))


@dataclass
class CleanPlan:
    """The runs, the queues' min offsets before and after, and what was left out."""

    rounds: list[CleanRound]
    commitlog_min_before: int
    queue_min_before: dict[tuple[str, int], int]
    queue_min_after: dict[tuple[str, int], int]
    queue_max: dict[tuple[str, int], int]
    files: list[TimedFile]  # the commitlog files before the runs
    notes: list[str]


def timed_files(store) -> list[TimedFile]:
    """The commitlog files with File.lastModified (ms) as the clean service reads it."""
    out = []
    for f in store.commitlog.files:
        try:
            mtime = os.stat(f.path).st_mtime_ns // 1_000_000
        except OSError as exc:
            raise MqtoolError(f"cannot stat: {exc.strerror}", str(f.path)) from exc
        out.append(TimedFile(f.name, f.start_offset, f.size, mtime))
    return out


def hour_of(ms: int, zone: tzinfo) -> int:
    """`Calendar.getInstance().get(HOUR_OF_DAY)` in the broker's zone."""
    return datetime.fromtimestamp(ms / 1000, zone).hour


def _queues(store, major: int, notes: list[str]) -> list[QueueState]:
    if store.layout.consume_queues_in_rocksdb:
        notes.append("consume queues in RocksDB: their cleaning (RocksDB compaction) is not forecast")
        return []
    out = []
    for topic, queue_id in store.consume_queues.queues():
        out.append(QueueState.of(store.consume_queues.open(topic, queue_id), major))
    if any(True for _ in store.batch_consume_queues.queues()):
        notes.append("BatchCQ queues (batchconsumequeue/) are cleaned by their own rules: not forecast")
    return out


def plan_clean(
    store,
    settings: CleanSettings,
    *,
    now_ms: int,
    zone: tzinfo,
    physic: DiskUsage,
    logics: DiskUsage,
    rounds: int | None = None,
    max_rounds: int = 50,
    last_physical_min: int = 0,
) -> CleanPlan:
    """The next runs from `now_ms`: exactly `rounds` of them, or until a run deletes nothing (at most
    `max_rounds`). `last_physical_min`: CleanConsumeQueueService's memory (0 for a broker just started)."""
    notes: list[str] = list(settings.notes)
    files = timed_files(store)
    remaining = list(files)
    queues = _queues(store, settings.major, notes)
    index_headers = [(name, header.end_phy_offset) for name, header in store.index_service.headers()]
    same_partition = physic.device is not None and physic.device == logics.device
    commitlog_min = remaining[0].start if remaining else -1
    before = {(q.topic, q.queue_id): q.min_offset for q in queues}
    out: list[CleanRound] = []
    previous_immediately = False
    interval = settings.ints["cleanResourceInterval"]
    number = 0
    while rounds is None or number < rounds:
        at = now_ms + number * interval
        number += 1
        decision = decide(settings, hour_of(at, zone), physic.ratio, logics.ratio, previous_immediately)
        previous_immediately = decision.clean_immediately
        deleted: list[TimedFile] = []
        if decision.runs:
            deleted = delete_expired_by_time(
                remaining,
                settings.file_reserved_ms,
                at,
                decision.clean_at_once(settings),
                settings.delete_file_batch_max,
            )
        remaining = remaining[len(deleted) :]
        freed = sum(f.size for f in deleted)
        physic = physic.after_freeing(freed)
        if same_partition:
            logics = logics.after_freeing(freed)
        commitlog_min = remaining[0].start if remaining else -1
        result = CleanRound(number, at, decision, deleted, commitlog_min, queues_ran=False)
        if commitlog_min > last_physical_min:
            last_physical_min = commitlog_min
            result.queues_ran = True
            for q in queues:
                gone = q.delete_expired(commitlog_min, settings.major)
                if gone:
                    result.cq_deleted[(q.topic, q.queue_id)] = [f.name for f in gone]
            result.index_deleted = index_files_deleted(index_headers, commitlog_min)
            index_headers = [h for h in index_headers if h[0] not in result.index_deleted]
        out.append(result)
        if rounds is None and (not result.deleted_anything or number >= max_rounds):
            break
    after = {(q.topic, q.queue_id): q.min_offset for q in queues}
    maxes = {(q.topic, q.queue_id): q.max_offset for q in queues}
    for q in queues:
        q.queue.close()
    return CleanPlan(out, files[0].start if files else -1, before, after, maxes, files, notes)
