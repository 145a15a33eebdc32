"""A compaction topic's SparseConsumeQueue rebuilt from its compaction log, byte for byte as the broker's.

Every unit of `compaction/compactionCq/<topic>/<queueId>/<name>` is written while the record goes into the
compaction log file of the same name (5.3.3 CompactionLog.java:825-881, `CompactionAppendMessageCallback`):
`TopicPartitionLog.roll` creates a log file and a CQ file of the same start offset (:1061-1086), and each
record appended at `position` of the log file is one 46-byte unit (`putBatchMessagePositionInfo`,
BatchConsumeQueue.java:558-585): the record's place in the compaction log (file start + position), its size,
the tags code of its TAGS (`tagsString2tagsCode`: the Java hash, 0 without tags; :360, :367 take the
dispatch's, the same for a compaction topic), its store time, its queue offset, batch size 1, compacted
offset INVALID_POS (-1) and 4 reserved zero bytes. When the CQ file has room for one unit only, or the log
file no room for the record, the callback writes an end unit (`putEndPositionInfo`, SparseConsumeQueue.java:
252-280: phyOffset -1, all else 0, compacted offset -1) and a BLANK record in the log (:853-861). The
compaction's last file is closed by `putEndMessage` (:673-678), whose callback writes nothing (:814-822): a
log file ending in zeros has no end unit. So each CQ file follows from its log file alone:
one unit per record, then an end unit where the log holds a BLANK record; zeros to the file's end.

`plan_compaction_cq` compares that with the files; `write_compaction_cq` writes each CQ file that differs as
a new file beside it, renamed over the old one (atomic per file, every file consistent with its log after a
crash), and removes CQ files no log file has (`sanityCheck` fails the broker's start on them,
CompactionLog.java:1045-1059) and `.delete` leftovers of `replaceCqFiles` (:755-790, which destroys them).
The caller holds the store lock. Refused, per queue (the plan says why): a log whose files the load refuses
(sizes), a corrupt record before the last file's tail, a record of another queue, queue offsets that do not
increase, more records in a file than its CQ file holds, a bad record before the last file's tail with a
current CQ unit past it whose record reads. Bytes after a file's records that are no records, with no unit
past them that serves one, are what a compaction that reused a crash's compacting/ files left (the harness
shows it, tests/data/store-compaction-stale): the CQ covers the records before them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from formats.batchconsumequeue import BcqUnit, encode_unit
from formats.compaction import (
    COMPACTION_CQ_DIR,
    COMPACTION_LOG_DIR,
    DELETE_SUFFIX,
    compaction_cq_file_size,
    compaction_log_file_size,
)
from formats.errors import MqtoolError
from formats.java.hash import tags_code
from formats.message.commitlog import BadRecord, Blank, EndOfData, Message, decode_record
from formats.structs import BCQ_STORE_UNIT_SIZE
from store.io.filewrites import fsync_dir, pwrite_all, temp_path, write_done
from store.kv.compaction import CompactionLog, CompactionStore, DirListing
from store.log.mappedfile import majority_size

UNIT = BCQ_STORE_UNIT_SIZE
END_UNIT = encode_unit(BcqUnit(-1, 0, 0, 0, 0, 0))


class CompactionCqError(MqtoolError):
    """A compaction CQ mqtool will not rebuild."""


@dataclass
class CqFileDiff:
    """One CQ file of the plan: `same`, `differs` (from `first_difference`, a unit's byte position), `new`
    (no such file), `removed` (no log file of that name, or a `.delete` leftover)."""

    name: str
    status: str
    units: int = 0
    end_unit: bool = False
    first_difference: int | None = None
    first_queue_offset: int | None = None  # the rebuilt unit's queue offset at the first difference
    data: bytes = field(default=b"", repr=False)


@dataclass
class CqQueuePlan:
    """One queue: its files, and why it is not rebuilt (`refused`)."""

    topic: str
    queue_id: int
    files: list[CqFileDiff] = field(default_factory=list)
    refused: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.refused:
            return "refused"
        changed = [f for f in self.files if f.status != "same"]
        return "same" if not changed else "changes"


@dataclass
class CompactionCqPlan:
    """The rebuild of every compaction queue's CQ."""

    cq_file_size: int
    cq_file_size_source: str
    queues: list[CqQueuePlan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return any(q.status == "changes" for q in self.queues)

    @property
    def refused(self) -> list[CqQueuePlan]:
        return [q for q in self.queues if q.refused]


def _log_queues(store: CompactionStore) -> tuple[list[tuple[str, int]], list[str]]:
    """Every compactionLog/<topic>/<queueId> directory (with or without its CQ directory: the rebuild
    makes a missing one), and the directories the broker's load cannot take."""
    from formats.message.commitlog import java_parse_int

    queues, problems = [], []
    log_root = store.directory / COMPACTION_LOG_DIR
    if not log_root.is_dir():
        return queues, problems
    try:
        for topic in sorted(os.scandir(log_root), key=lambda e: e.name):
            if not topic.is_dir():
                continue
            for q in sorted(os.scandir(topic.path), key=lambda e: e.name):
                if not q.is_dir():
                    continue
                queue_id = java_parse_int(q.name)
                if queue_id is None:
                    problems.append(f"compactionLog/{topic.name}/{q.name}: not a queue id; left alone")
                else:
                    queues.append((topic.name, queue_id))
    except OSError as exc:
        raise CompactionCqError(f"cannot list: {exc.strerror}", str(log_root)) from exc
    return sorted(queues), problems


def resolve_cq_file_size(store: CompactionStore, cq_setting: int | None) -> tuple[int, str]:
    """The CQ file size: the one most current compaction CQ files have, else broker.conf's
    `compactionCqMappedFileSize`, else the default (CompactionLog.java:106-108 rounds each to whole units)."""
    sizes = []
    cq_root = store.directory / COMPACTION_CQ_DIR
    if cq_root.is_dir():
        for topic_dir in sorted(cq_root.iterdir()):
            if topic_dir.is_dir():
                for q in sorted(topic_dir.iterdir()):
                    if q.is_dir():
                        sizes += [f.size for f in DirListing.read(q).files if f.size]
    size = majority_size(sizes, UNIT)
    if size is not None:
        return size, "current files"
    if cq_setting is not None:
        return compaction_cq_file_size(cq_setting), "broker config"
    return compaction_cq_file_size(), "broker default"


def _unservable_units(log: CompactionLog, name: str, rebuilt: set[int]) -> list[int] | None:
    """Queue offsets of the current CQ file `name`'s units that the rebuild leaves out, when none of them
    serves a record a client can read (each points at bytes that are no record of its offset and size);
    None when one does (leaving it out would lose a message the broker serves)."""
    out = []
    for _, unit in log.file_units(name):
        if not unit.is_valid or unit.phy_offset in rebuilt:
            continue
        try:
            record = log.read_record(unit)
        except MqtoolError:
            out.append(unit.base_offset)
            continue
        if (record.queue_offset, record.total_size) == (unit.base_offset, unit.size):
            return None
        out.append(unit.base_offset)
    return out


def _rebuild_file(
    plan: CqQueuePlan, log: CompactionLog, f, cq_size: int, last: bool, state: dict
) -> bytes | None:
    """The CQ bytes of one log file, or None (plan.refused set)."""
    where = f"{plan.topic}/{plan.queue_id}/{f.name}"
    rebuilt: set[int] = set()
    out = bytearray()
    data = f.buffer()
    pos = 0
    capacity = cq_size // UNIT - 1  # the callback closes a CQ file when one unit's room is left
    while pos < len(data):
        record = decode_record(data, pos, f.start_offset, file=str(f.path))
        if isinstance(record, Blank):
            out += END_UNIT
            break
        if isinstance(record, EndOfData):
            break
        if isinstance(record, BadRecord) or not isinstance(record, Message):
            reason = getattr(record, "reason", type(record).__name__)
            if last:
                plan.warnings.append(
                    f"{where}: {reason} at {pos}; the CQ covers the records before it (the broker's recovery "
                    "truncates the log after its last unit's record)"
                )
                break
            stale = _unservable_units(log, f.name, rebuilt)
            if stale is None:
                plan.refused = (
                    f"{where}: {reason} at position {pos}, and a CQ unit past it serves a record: the "
                    "compaction log itself is damaged"
                )
                return None
            plan.warnings.append(
                f"{where}: the bytes from position {pos} are no records ({reason}): what a compaction "
                "that reused the compacting/ files a crash left did not overwrite (5.3.3 "
                "CompactionLog.java:681-705 opens them and writes from their start); the CQ covers the "
                "records before them"
                + (
                    f", without the current unit(s) of queue offset(s) {', '.join(map(str, stale))}, whose "
                    "bytes no client decodes (a restart's recovery takes them as valid, and a consumer is "
                    "served them after the queue's later offsets)"
                    if stale
                    else ""
                )
            )
            break
        if record.topic != plan.topic or record.queue_id != plan.queue_id:
            plan.refused = (
                f"{where}: the record at {pos} is of {record.topic}/{record.queue_id}, not of this queue"
            )
            return None
        if record.queue_offset <= state["last_offset"]:
            plan.refused = (
                f"{where}: queue offset {record.queue_offset} at {pos} does not follow "
                f"{state['last_offset']}: not a log the broker wrote"
            )
            return None
        if len(out) // UNIT >= capacity:
            plan.refused = (
                f"{where}: more records than a {cq_size}-byte CQ file takes ({capacity} and its end unit): "
                "the CQ file size is not the one the broker wrote with"
            )
            return None
        state["last_offset"] = record.queue_offset
        rebuilt.add(f.start_offset + pos)
        out += encode_unit(
            BcqUnit(
                f.start_offset + pos,
                record.total_size,
                tags_code(record.tags),
                record.store_timestamp,
                record.queue_offset,
                1,
            )
        )
        pos += record.total_size
    return bytes(out)


def _first_difference(mine: bytes, theirs: bytes) -> int | None:
    n = min(len(mine), len(theirs))
    for i in range(0, n, UNIT):
        if mine[i : i + UNIT] != theirs[i : i + UNIT]:
            return i
    return None if len(mine) == len(theirs) else n - n % UNIT


def plan_queue(store: CompactionStore, topic: str, queue_id: int, cq_size: int) -> CqQueuePlan:
    """The rebuild of one queue's CQ files from its compaction log."""
    plan = CqQueuePlan(topic, queue_id)
    log = store.log(topic, queue_id)
    size = log.log.file_size
    files = [f for f in log.log.files if f.size]
    if size is None or not files:
        plan.refused = f"{topic}/{queue_id}: the compaction log has no files"
        return plan
    odd = [f.name for f in log.log.files if f.size and f.size != size]
    if odd:
        plan.refused = (
            f"{topic}/{queue_id}: log file {odd[0]} is not {size} bytes (MappedFileQueue.load refuses it)"
        )
        return plan
    if size % cq_size or size // cq_size < 5:
        plan.refused = (
            f"{topic}/{queue_id}: {size}-byte log files are not a whole number (at least 5) of "
            f"{cq_size}-byte CQ files (CompactionLog.getCompactionLogSize): give the broker's "
            "compactionCqMappedFileSize"
        )
        return plan
    current = {f.name: f for f in log.cq.files}
    state = {"last_offset": -1}
    for i, f in enumerate(files):
        units = _rebuild_file(plan, log, f, cq_size, i == len(files) - 1, state)
        if units is None:
            return plan
        end = units.endswith(END_UNIT)
        diff = CqFileDiff(f.name, "new", len(units) // UNIT - end, end, data=units)
        old = current.get(f.name)
        if old is not None:
            theirs = bytes(old.buffer()) if old.size else b""
            mine = units + bytes(cq_size - len(units))
            first = _first_difference(mine, theirs)
            if first is None:
                diff.status = "same"
            else:
                diff.status, diff.first_difference = "differs", first
                if first < len(units) and first + UNIT <= len(units):
                    diff.first_queue_offset = int.from_bytes(
                        units[first + 28 : first + 36], "big", signed=True
                    )
        plan.files.append(diff)
    names = {f.name for f in files}
    for f in log.cq.files:
        if f.name not in names:
            plan.files.append(CqFileDiff(f.name, "removed"))
    for stray in log.cq.strays:
        if stray.endswith(DELETE_SUFFIX):
            plan.files.append(CqFileDiff(stray, "removed"))
        else:
            plan.warnings.append(
                f"{topic}/{queue_id}: compactionCq holds {stray!r}, which the broker's load fails on; "
                "left alone"
            )
    return plan


def plan_compaction_cq(
    store: CompactionStore, cq_setting: int | None = None, log_setting: int | None = None
) -> CompactionCqPlan:
    """Plan the rebuild of every compaction queue's CQ (each compactionLog/<topic>/<queueId>)."""
    if not (store.directory / COMPACTION_LOG_DIR).is_dir():
        raise CompactionCqError(
            "this store has no compaction log: there is no compaction CQ to rebuild",
            str(store.directory / COMPACTION_LOG_DIR),
        )
    cq_size, source = resolve_cq_file_size(store, cq_setting)
    plan = CompactionCqPlan(cq_size, source)
    queues, problems = _log_queues(store)
    plan.warnings += problems
    for topic, queue_id in queues:
        queue = plan_queue(store, topic, queue_id, cq_size)
        if log_setting is not None and not queue.refused:
            want = compaction_log_file_size(cq_size, log_setting)
            have = store.log(topic, queue_id).log.file_size
            if have != want:
                queue.refused = (
                    f"{topic}/{queue_id}: log files of {have} bytes, but compactionMappedFileSize gives "
                    f"{want} with {cq_size}-byte CQ files"
                )
        plan.queues.append(queue)
    return plan


def write_compaction_cq(store: CompactionStore, plan: CompactionCqPlan, scratch: Path) -> list[str]:
    """Write every CQ file of `plan` that is not the same, remove those marked removed; returns the paths
    (relative to compaction/) touched. Refuses when any queue is refused."""
    if plan.refused:
        raise CompactionCqError(f"not rebuilt: {plan.refused[0].refused}")
    touched = []
    for queue in plan.queues:
        cq_dir = store.directory / COMPACTION_CQ_DIR / queue.topic / str(queue.queue_id)
        changed = [f for f in queue.files if f.status != "same"]
        if not changed:
            continue
        cq_dir.mkdir(parents=True, exist_ok=True)
        for diff in changed:
            target = cq_dir / diff.name
            if diff.status == "removed":
                continue
            tmp = temp_path(scratch, f"compaction-cq-{queue.topic}-{queue.queue_id}-{diff.name}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.ftruncate(fd, plan.cq_file_size)
                write_done()
                pwrite_all(fd, diff.data, 0)
                os.fsync(fd)
            except OSError:
                os.close(fd)
                os.unlink(tmp)
                raise
            os.close(fd)
            os.replace(tmp, target)
            write_done()
            touched.append(f"{COMPACTION_CQ_DIR}/{queue.topic}/{queue.queue_id}/{diff.name}")
        fsync_dir(cq_dir)
        for diff in changed:  # removals last: a crash before them leaves every log file its CQ file
            if diff.status == "removed":
                (cq_dir / diff.name).unlink(missing_ok=True)
                write_done()
                touched.append(f"{COMPACTION_CQ_DIR}/{queue.topic}/{queue.queue_id}/{diff.name}")
        fsync_dir(cq_dir)
    return touched


__all__ = [
    "CompactionCqError",
    "CompactionCqPlan",
    "CqFileDiff",
    "CqQueuePlan",
    "plan_compaction_cq",
    "plan_queue",
    "resolve_cq_file_size",
    "write_compaction_cq",
]
