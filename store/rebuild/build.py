"""Rebuild ConsumeQueues and index files from the commitlog, as the broker's dispatch would have built them.

The rebuild walks the commitlog from its first file (the commitlog min offset) to the valid end the
broker's recovery would find (`CommitLog.checkMessageAndReturnSize`: the first record that fails the check
ends it) and feeds every record to `store.dispatch.Dispatcher` (the same code that dispatches offline
appends) into a staging directory. So on a store whose ConsumeQueues and index were lost, the rebuilt
ConsumeQueue files have the broker's names and bytes, and the index files its contents (their names are
creation times, so they differ).

What a rebuild means on a crashed or retention-trimmed store (golden store-c) - decided here:

* Records up to the valid end count, including complete records the broker never dispatched before
  the crash; a torn or corrupt tail record and everything after it do not (the broker's recovery cuts
  there). The commitlog itself is not changed.
* A queue whose first live record has queue offset n > 0 (its older records were deleted by retention)
  starts with the file holding unit n, and that file is pre-filled with filler units
  (offset 0, size 0x7FFFFFFF) up to n - exactly what `ConsumeQueue.fillPreBlank` writes when the broker
  creates a queue's first file at a non-zero offset. Min offset is then n, as the broker computes it.
* A queue with no live record at all (everything retention deleted; the broker keeps such a queue's
  last file, min == max) keeps its current files unchanged, so its max offset - the next queue offset
  the broker assigns - survives. Without them the broker would restart the queue at 0.
* The index indexes the live records only; entries for deleted commitlog files are not recreated.

Swapping in: the staging directory lives in the store root under `store.io.filewrites.TMP_PREFIX` (never
inside consumequeue/ or index/, where a stray file stops the broker). Each directory is exchanged with
its rebuilt version by one atomic `renameat2(RENAME_EXCHANGE)`; where the file system lacks it, by two
renames with a note in the staging directory that `recover_interrupted_swap` uses to finish or undo
the swap. Either way a crash leaves the old or the new directory, and the leftovers are removed by the
next writer.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path

from formats.consumequeue import DEFAULT_CQ_FILE_SIZE
from formats.errors import MqtoolError
from formats.indexfile import IndexGeometry, IndexHeader, decode_header
from formats.message.commitlog import Blank
from store.checkpoint import write_checkpoint
from store.dispatch import (
    Dispatcher,
    DispatchRequest,
    iter_dispatch,
)
from store.index.indexwriter import list_index_files
from store.io.filereads import file_size, opened, read_from, read_head, written_part
from store.io.filewrites import (
    SWAP_NOTE,
    TMP_PREFIX,
    WriteTargets,
    fsync_dir,
    remove_leftovers,
    restore_interrupted_swaps,
    write_done,
)
from store.io.pathnames import UnsafeNameError, queue_dir
from store.log.commitlog import CommitLog
from store.queue.consumequeue import ConsumeQueue, ConsumeQueueStore, is_rocksdb_dir
from store.queue.lmq import LmqSettings, resolve_lmq_settings

DIRECTORIES = {"cq": "consumequeue", "index": "index"}
STAGING_NAME = TMP_PREFIX + "rebuild"
_FLUSH_EVERY = 200_000  # dispatched records between flushes (bounds memory on big stores)


class RebuildError(MqtoolError):
    """A rebuild that cannot be done as asked (unsupported store layout, bad settings)."""


# --- building -------------------------------------------------------------------------------------


@dataclass
class QueueState:
    """One rebuilt queue: files, min and max offset as the broker would compute them at load."""

    topic: str
    queue_id: int
    files: list[str]
    min_offset: int
    max_offset: int
    units: int  # units written by this rebuild (fillers included)
    kept: bool = False  # carried over unchanged (no live record, see the module docstring)


@dataclass
class BuildResult:
    """What `build_staging` produced."""

    staging: Path
    cq: bool
    index: bool
    commitlog_min_offset: int
    valid_end: int
    stop_kind: str  # end / torn / corrupt
    stop_reason: str
    messages: int = 0
    cq_units: int = 0
    index_keys: int = 0
    last_store_timestamp: int = 0
    queues: dict[tuple[str, int], QueueState] = field(default_factory=dict)
    index_files: list[tuple[str, IndexHeader]] = field(default_factory=list)
    index_end_timestamp: int = 0
    warnings: list[str] = field(default_factory=list)
    dispatch_end: int | None = None  # controller mode: the confirm offset the dispatch stopped at
    unconfirmed: int = 0  # valid messages past it, not dispatched


def build_staging(
    root: Path,
    staging: Path,
    *,
    cq: bool,
    index: bool,
    cq_file_size: int | None,
    index_geometry: IndexGeometry | None,
    delay_levels: tuple[int, ...],
    now_ms: Callable[[], int],
    zone: tzinfo | None = None,
    accept_v2: bool = True,
    progress: Callable[[int], None] | None = None,
    lmq: LmqSettings | None = None,
    durable: bool = True,
    commitlog: CommitLog | None = None,
    dispatch_end: int | None = None,
) -> BuildResult:
    """Dispatch every live commitlog record into `staging/consumequeue` and `staging/index` (LMQ queues
    too, as `lmq` says; by default as the store's files show). `durable=False` (a dry run, whose staging is
    thrown away) writes without fsync. `commitlog`: the store's (a DLedger one is dispatched as the broker
    dispatches it, `store.dispatch.iter_dispatch`); by default `root/commitlog`."""
    cq_root = staging / "consumequeue"
    index_dir = staging / "index"
    staging.mkdir(parents=True, exist_ok=True)
    dispatcher = Dispatcher(
        cq_root,
        index_dir if index else None,
        cq_file_size=cq_file_size or DEFAULT_CQ_FILE_SIZE,
        index_geometry=index_geometry,
        now_ms=now_ms,
        zone=zone,
        scratch=staging,
        lmq=lmq if lmq is not None else resolve_lmq_settings(root),
        durable=durable,
    )
    owned = commitlog is None
    if commitlog is None:
        commitlog = CommitLog.open(root)
    try:
        min_offset = commitlog.min_offset
        result = BuildResult(staging, cq, index, min_offset, min_offset, "end", "", dispatch_end=dispatch_end)
        since_flush = 0
        for item in iter_dispatch(commitlog, accept_v2=accept_v2, delay_levels=delay_levels):
            if isinstance(item, DispatchRequest):
                if dispatch_end is not None and item.commit_log_offset + item.msg_size > dispatch_end:
                    result.unconfirmed += 1
                    result.valid_end = item.commit_log_offset + item.msg_size
                    continue
                try:
                    dispatcher.dispatch(item, cq=cq, index=index)
                except UnsafeNameError as exc:  # named where the record is, not in the staging
                    path, position = commitlog.locate(item.commit_log_offset)
                    raise UnsafeNameError(exc.message, path, position) from exc
                result.messages += 1
                result.last_store_timestamp = item.store_timestamp
                result.valid_end = item.commit_log_offset + item.msg_size
                since_flush += 1
                if since_flush >= _FLUSH_EVERY:
                    _flush(dispatcher, result)
                    if progress is not None:
                        progress(since_flush)
                    since_flush = 0
            elif isinstance(item, Blank):
                continue
            else:
                result.valid_end = item.physical_offset
                result.stop_kind = item.kind
                result.stop_reason = getattr(item, "reason", "")
        if progress is not None and since_flush:
            progress(since_flush)
        _flush(dispatcher, result)
    finally:
        if owned:
            commitlog.close()
    result.warnings.extend(dispatcher.warnings)
    if cq:
        for (topic, queue_id), writer in dispatcher.queues.items():
            queue = ConsumeQueue(staging, topic, queue_id, commitlog_min_offset=min_offset)
            result.queues[(topic, queue_id)] = QueueState(
                topic,
                queue_id,
                [f.name for f in queue.files],
                queue.min_offset,
                queue.max_offset,
                writer.units_written,
            )
            queue.close()
        _carry_over_expired_queues(root, staging, min_offset, result)
    if index and dispatcher.index is not None:
        for name in list_index_files(index_dir):
            head = read_head(index_dir / name, 40)
            result.index_files.append((name, decode_header(head, str(index_dir / name))))
        result.index_end_timestamp = dispatcher.index.end_timestamp
    return result


def _flush(dispatcher: Dispatcher, result: BuildResult) -> None:
    summary = dispatcher.commit()
    result.cq_units += summary.cq_units
    result.index_keys += summary.index_keys


def _carry_over_expired_queues(root: Path, staging: Path, commitlog_min: int, result: BuildResult) -> None:
    """Copy queues that have no live record but a max offset (all units below the commitlog min)."""
    cq_dir = root / "consumequeue"
    if not cq_dir.is_dir() or is_rocksdb_dir(cq_dir):  # RocksDB queues are only compared (rocksdb_rebuild)
        return
    store = ConsumeQueueStore(root, commitlog_min_offset=commitlog_min)
    for topic, queue_id in store.queues():
        if (topic, queue_id) in result.queues:
            continue
        try:
            queue = store.open(topic, queue_id)
        except MqtoolError as exc:
            result.warnings.append(f"{topic}/{queue_id}: not carried over ({exc}); the queue restarts at 0")
            continue
        try:
            if queue.max_offset == 0:
                continue
            last = queue.unit_at(queue.max_position - 20)
            if last is None or last.is_filler or last.phy_offset + last.size > commitlog_min:
                result.warnings.append(
                    f"{topic}/{queue_id}: its units point at commitlog records that do not exist; dropped"
                )
                continue
            target = queue_dir(staging / "consumequeue", topic, queue_id)
            target.mkdir(parents=True, exist_ok=True)
            for f in queue.live_files:
                shutil.copyfile(f.path, target / f.name)
                write_done()
            result.queues[(topic, queue_id)] = QueueState(
                topic,
                queue_id,
                [f.name for f in queue.live_files],
                queue.min_offset,
                queue.max_offset,
                0,
                True,
            )
        finally:
            queue.close()


# --- comparing ------------------------------------------------------------------------------------


@dataclass
class QueueDiff:
    """A rebuilt queue against the current one: same, differs, new, removed or kept."""

    topic: str
    queue_id: int
    status: str
    old_min: int | None
    old_max: int | None
    new_min: int | None
    new_max: int | None
    old_files: int
    new_files: int
    first_difference: int | None = None  # queue offset of the first differing unit


def compare_consume_queues(root: Path, result: BuildResult) -> list[QueueDiff]:
    """Every queue of the current store or the rebuild, with how the rebuild changes it."""
    old_root = root / "consumequeue"
    new_root = result.staging / "consumequeue"
    if is_rocksdb_dir(old_root):
        from store.rebuild.rocksdb import compare_rocksdb_queues

        return compare_rocksdb_queues(root, result)
    old_queues: set[tuple[str, int]] = set()
    if old_root.is_dir() and not is_rocksdb_dir(old_root):
        old_queues = set(ConsumeQueueStore(root, commitlog_min_offset=result.commitlog_min_offset).queues())
    diffs = []
    for topic, queue_id in sorted(old_queues | set(result.queues)):
        new = result.queues.get((topic, queue_id))
        old_dir = queue_dir(old_root, topic, queue_id)  # names from a listing or checked by the writer
        new_dir = queue_dir(new_root, topic, queue_id)
        try:
            old_names = sorted(n for n in os.listdir(old_dir) if n.isdigit()) if old_dir.is_dir() else []
        except OSError as exc:
            raise RebuildError(f"cannot list: {exc.strerror or exc}", str(old_dir)) from exc
        old_min = old_max = None
        if (topic, queue_id) in old_queues:
            try:
                q = ConsumeQueue(root, topic, queue_id, commitlog_min_offset=result.commitlog_min_offset)
                old_min, old_max = q.min_offset, q.max_offset
                q.close()
            except MqtoolError:
                pass
        diff = QueueDiff(
            topic,
            queue_id,
            "same",
            old_min,
            old_max,
            new.min_offset if new else None,
            new.max_offset if new else None,
            len(old_names),
            len(new.files) if new else 0,
        )
        if new is None:
            diff.status = "removed"
        elif new.kept:
            diff.status = "kept"
        elif not old_names:
            diff.status = "new"
        else:
            names = sorted(set(old_names) | set(new.files))
            for name in names:
                (size_a, a), (size_b, b) = written_part(old_dir / name), written_part(new_dir / name)
                if size_a != size_b or a != b:
                    diff.status = "differs"
                    width = max(len(a), len(b))
                    diff.first_difference = _first_unit_difference(
                        int(name), a.ljust(width, b"\0"), b.ljust(width, b"\0")
                    )
                    break
        diffs.append(diff)
    return diffs


def _first_unit_difference(file_start: int, a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = next((i for i in range(0, n, 4096) if a[i : i + 4096] != b[i : i + 4096]), n)
    while i < n and a[i] == b[i]:
        i += 1
    return (file_start + i) // 20


@dataclass
class IndexDiff:
    """The rebuilt index against the current one (contents compared in file order; names ignored)."""

    status: str  # same / differs / new / removed / unreadable
    old_files: list[tuple[str, IndexHeader]]
    new_files: list[tuple[str, IndexHeader]]
    first_difference: str | None = None  # "file k" where contents start to differ
    note: str = ""


def compare_index(root: Path, result: BuildResult) -> IndexDiff:
    old_dir = root / "index"
    new_dir = result.staging / "index"
    old_names = list_index_files(old_dir)
    old_headers: list[tuple[str, IndexHeader]] = []
    for name in old_names:
        old_headers.append((name, decode_header(read_head(old_dir / name, 40), str(old_dir / name))))
    diff = IndexDiff("same", old_headers, result.index_files)
    if not old_names:
        diff.status = "new" if result.index_files else "same"
        return diff
    if not result.index_files:
        diff.status = "removed"
        return diff
    for k, (old_name, new_name) in enumerate(
        zip(old_names, [n for n, _ in result.index_files], strict=False), start=1
    ):
        try:
            same = _same_file(old_dir / old_name, new_dir / new_name)
        except OSError as exc:
            raise RebuildError(f"cannot read: {exc.strerror or exc}", str(old_dir / old_name)) from exc
        if not same:
            diff.status = "differs"
            diff.first_difference = f"file {k} ({old_name} vs rebuilt {new_name})"
            return diff
    if len(old_names) != len(result.index_files):
        diff.status = "differs"
        diff.first_difference = f"{len(old_names)} files now, {len(result.index_files)} rebuilt"
    return diff


def _same_file(a: Path, b: Path) -> bool:
    size = file_size(a)
    if size != file_size(b):
        return False
    with opened(a) as fa, opened(b) as fb:
        at, step = 0, 1 << 22
        while at < size:
            if read_from(fa, a, step, at) != read_from(fb, b, step, at):
                return False
            at += step
        return True


# --- swapping in ----------------------------------------------------------------------------------

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _rename_exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        write_done()
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(a))


def swap_in(root: Path, staging: Path, names: list[str]) -> None:
    """Put `staging/<name>` in place of `root/<name>` for each name, one atomic step per directory."""
    for name in names:
        new = staging / name
        target = root / name
        if not new.exists():
            new.mkdir()
        if not target.exists():
            os.rename(new, target)
            write_done()
        elif not _rename_exchange(new, target):
            note = staging / (SWAP_NOTE + name)
            note.touch()
            fsync_dir(staging)
            old = staging / (name + ".old")
            os.rename(target, old)  # a crash here leaves the note: recover_interrupted_swap restores
            write_done()
            os.rename(new, target)
            write_done()
            note.unlink()
        fsync_dir(root)


def recover_interrupted_swap(root: Path) -> list[str]:
    """Finish the two-rename swap of a killed rebuild: put back the old directory if none is in place."""
    return restore_interrupted_swaps(root)


def rebuild_targets(root: Path, names: list[str], index: bool) -> WriteTargets:
    """What `prepare_staging` and `finish` change: the store root (the staging directory, the swaps),
    each directory swapped (a rename out of the root rewrites its `..`), and with the index the
    checkpoint."""
    return WriteTargets(
        dirs=[root, *(root / n for n in names if (root / n).exists())],
        files=[root / "checkpoint"] if index else [],
    )


def prepare_staging(root: Path) -> Path:
    """A fresh staging directory in the store root, after finishing/cleaning an interrupted rebuild."""
    remove_leftovers(root)
    staging = root / STAGING_NAME
    staging.mkdir()
    return staging


def drop_staged_queues(result: BuildResult, keys: list[tuple[str, int]]) -> None:
    """Take queues out of the staged consumequeue/ (as the broker's `deleteTopics` removes a queue's files
    and then its topic's empty directory): `rebuild --prune-orphans`."""
    base = result.staging / "consumequeue"
    topics = set()
    for topic, queue_id in keys:
        state = result.queues.pop((topic, queue_id), None)
        if state is not None:
            result.cq_units -= state.units
        shutil.rmtree(queue_dir(base, topic, queue_id), ignore_errors=True)
        topics.add(topic)
    for topic in topics:
        with contextlib.suppress(OSError):  # the topic keeps queues that are not dropped
            (base / topic).rmdir()


def finish(root: Path, result: BuildResult, names: list[str]) -> None:
    """Swap the rebuilt directories in, raise the checkpoint's indexMsgTimestamp, drop the staging dir.

    indexMsgTimestamp is raised to the rebuilt index's end time: every rebuilt file is on disk
    (fsynced), and a broker starting after a crash (`abort` present) deletes index files that end after
    that time (`IndexService.load`) - it would otherwise throw the rebuilt files away.
    """
    swapped: list[str] = []
    try:
        for name in names:
            swap_in(root, result.staging, [name])
            swapped.append(name)
        if result.index and result.index_end_timestamp > 0:
            write_checkpoint(root, index_msg_timestamp=result.index_end_timestamp, scratch=result.staging)
    except (MqtoolError, OSError) as exc:
        if not swapped:
            raise
        reason = exc.message if isinstance(exc, MqtoolError) else exc.strerror or str(exc)
        where = exc.file if isinstance(exc, MqtoolError) else exc.filename
        rest = [n for n in names if n not in swapped]
        step = f"{', '.join(rest)} was not swapped in" if rest else "the checkpoint was not raised"
        raise RebuildError(
            f"{reason}; {', '.join(swapped)} already replaced by the rebuilt one(s) but {step}: run the "
            "same `mqtool rebuild --execute` again to finish (it rebuilds from the commitlog)",
            where and str(where),
        ) from exc
    shutil.rmtree(result.staging, ignore_errors=True)


__all__ = [
    "DIRECTORIES",
    "STAGING_NAME",
    "BuildResult",
    "IndexDiff",
    "QueueDiff",
    "QueueState",
    "RebuildError",
    "build_staging",
    "compare_consume_queues",
    "drop_staged_queues",
    "compare_index",
    "finish",
    "prepare_staging",
    "rebuild_targets",
    "recover_interrupted_swap",
    "swap_in",
]
