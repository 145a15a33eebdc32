"""CompactionStore and CompactionLog: what a consumer of a compaction topic is served, from `compaction/`.

A 5.x broker (`enableCompaction`, on by default) serves a topic with `cleanup.policy=COMPACTION` from
`compaction/compactionLog/<topic>/<queueId>/` and its SparseConsumeQueue in `compaction/compactionCq/`,
never from its ConsumeQueue (5.3.3 store/.../DefaultMessageStore.java:804-809 ->
`CompactionStore.getMessage`, CompactionStore.java:180-189). This module reads them as the broker's start
does and answers as its `CompactionLog.getMessage` (CompactionLog.java:448-583):

- `CompactionStore.load` (CompactionStore.java:85-123) opens a CompactionLog for every directory
  `compactionLog/<topic>/<queueId>` whose `compactionCq/<topic>/<queueId>` is a directory too (a log without
  its CQ directory is skipped with an error log); a queue directory whose name is not an int makes the load,
  and so the broker's start, fail.
- `TopicPartitionLog.init` (CompactionLog.java:1013-1032): `MappedFileQueue.load` of both directories
  (subdirectories such as `compacting/` skipped; any file not of the configured size, a `.delete` leftover
  too, fails the load), `SparseConsumeQueue.recover` (SparseConsumeQueue.java:53-111: the valid prefix of
  the last three files), the log truncated after the last CQ unit's record (`recover`, :1034-1043), then
  `sanityCheck` (:1045-1059): every log file has a CQ file of the same name and every CQ file a log file;
  a mismatch throws and the broker does not start.
- min/max offsets (`BatchConsumeQueue.reviseMinOffsetInQueue` / `reviseMaxOffsetInQueue` with
  SparseConsumeQueue's `getMaxMsgOffset`): the first unit's base offset of the first CQ file (-1 when it
  has none), the last valid unit's base + batch size of the last file (or the one before it when the last
  is empty), 0 for an empty queue.
- `get_message(offset)`: 0 max -> NO_MESSAGE_IN_QUEUE; offset == max -> OFFSET_OVERFLOW_ONE; past it ->
  OFFSET_OVERFLOW_BADLY (next begin offset min when min is 0, else max); otherwise the first unit whose
  queue offset is at or after `offset` (`iterateFromOrNext`: offsets below the minimum and offsets
  compacted away are served the next live record, there is no OFFSET_TOO_SMALL), next begin offset the
  unit's offset + batch size. The record is read from the compaction log at the unit's position
  (`offset % compactionLogMappedFileSize` of the file holding it, CompactionLog.java:431-439). A record
  that cannot be decoded is answered MESSAGE_WAS_REMOVING with the reason (`Served.problem`): the broker
  would hand its bytes to the client as they are, and the client's decode would fail on them.

Simplification, named: a CQ file's units are taken up to its first invalid unit (what `recover` keeps of the
last three files; older files are loaded whole and read unit by unit until an invalid one). File sizes come
from the files (the settings `compactionCqMappedFileSize` / `compactionMappedFileSize` are not in the store).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from formats.batchconsumequeue import BcqUnit, decode_unit, unit_of_row, units_view, valid_mask
from formats.compaction import (
    COMPACTION_CQ_DIR,
    COMPACTION_DIR,
    COMPACTION_LOG_DIR,
    POSITION_CHECKPOINT,
    PositionCheckpoint,
    decode_position_checkpoint,
    is_compaction_topic,
)
from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import BadRecord, Message, decode_record, java_parse_int
from formats.structs import BCQ_STORE_UNIT_SIZE
from store.io.filereads import StoreFileError
from store.io.pathnames import queue_dir
from store.log.mappedfile import MappedFile, is_offset_file_name, majority_size

UNIT = BCQ_STORE_UNIT_SIZE


@dataclass(frozen=True)
class DirListing:
    """One mapped-file directory as `MappedFileQueue.load` sees it: offset-named files (with sizes),
    subdirectories (skipped by the load) and any other file (which the load would map and fail on)."""

    path: Path
    files: tuple[MappedFile, ...] = ()
    subdirs: tuple[str, ...] = ()
    strays: tuple[str, ...] = ()
    entries: tuple[tuple[str, int], ...] = ()  # every file, in name order, with its size

    @classmethod
    def read(cls, path: Path) -> DirListing:
        if not path.is_dir():
            return cls(path)
        files, subdirs, strays, sizes = [], [], [], []
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError as exc:
            raise StoreFileError(f"cannot list: {exc.strerror}", str(path)) from exc
        for entry in entries:
            try:
                if entry.is_dir():
                    subdirs.append(entry.name)
                    continue
                length = entry.stat().st_size
                sizes.append((entry.name, length))
                if entry.is_file(follow_symlinks=False) and is_offset_file_name(entry.name):
                    files.append(MappedFile(Path(entry.path), int(entry.name), length))
                else:
                    strays.append(entry.name)
            except OSError as exc:
                raise StoreFileError(f"cannot stat: {exc.strerror}", entry.path) from exc
        return cls(path, tuple(files), tuple(subdirs), tuple(strays), tuple(sizes))

    @property
    def file_size(self) -> int | None:
        """The configured size the load checks every file against: the size most files have, else (a tie,
        as two files of two sizes) the one size every file's start offset is a multiple of."""
        size = majority_size((f.size for f in self.files), 1)
        if size is None:
            fits = {
                f.size
                for f in self.files
                if f.size > 0 and all(g.start_offset % f.size == 0 for g in self.files)
            }
            size = fits.pop() if len(fits) == 1 else None
        return size


@dataclass(frozen=True)
class CompactionUnit:
    """One live compaction CQ unit: where it is (CQ file name, byte position) and what it says."""

    file: str
    position: int
    unit: BcqUnit

    @property
    def queue_offset(self) -> int:
        return self.unit.base_offset


@dataclass
class Served:
    """What `CompactionLog.getMessage(offset, maxMsgNums=1)` answers."""

    offset: int
    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    unit: CompactionUnit | None = None
    message: Message | None = None
    problem: str | None = None


@dataclass
class CompactionLog:
    """One compaction topic queue: its compaction log and SparseConsumeQueue files."""

    root: Path
    topic: str
    queue_id: int
    log: DirListing = field(init=False)
    cq: DirListing = field(init=False)

    def __post_init__(self) -> None:
        base = self.root / COMPACTION_DIR
        self.log = DirListing.read(queue_dir(base / COMPACTION_LOG_DIR, self.topic, self.queue_id))
        self.cq = DirListing.read(queue_dir(base / COMPACTION_CQ_DIR, self.topic, self.queue_id))

    def close(self) -> None:
        for f in self.log.files + self.cq.files:
            f.close()

    # --- the CQ -------------------------------------------------------------------------------

    def _file_units(self, f: MappedFile):
        if f.size < UNIT or f.size % UNIT:
            return units_view(b"")
        return units_view(f.buffer(), str(f.path))

    @cached_property
    def _live(self) -> list[tuple[MappedFile, object]]:
        """Per CQ file, the (big-endian, zero-copy) view of its units up to its first invalid one."""
        out = []
        for f in self.cq.files:
            view = self._file_units(f)
            mask = valid_mask(view)
            out.append((f, view if mask.all() else view[: int((~mask).argmax())]))
        return out

    @property
    def unit_count(self) -> int:
        """How many live units (records a consumer can be served) the queue has."""
        return sum(len(view) for _, view in self._live)

    @cached_property
    def units(self) -> list[CompactionUnit]:
        """Every live unit, in file order: each CQ file's units up to its first invalid one."""
        return [
            CompactionUnit(f.name, i * UNIT, unit_of_row(view[i]))
            for f, view in self._live
            for i in range(len(view))
        ]

    def unit_at(self, index: int) -> CompactionUnit:
        """The `index`-th live unit (0-based, file order)."""
        for f, view in self._live:
            if index < len(view):
                return CompactionUnit(f.name, index * UNIT, unit_of_row(view[index]))
            index -= len(view)
        raise IndexError(index)

    def file_units(self, name: str) -> list[tuple[int, BcqUnit]]:
        """Every unit slot of one CQ file up to its zeroed rest (end units and invalid ones included)."""
        out = []
        for f in self.cq.files:
            if f.name == name:
                data = f.buffer()
                for pos in range(0, f.size - f.size % UNIT, UNIT):
                    if not any(data[pos : pos + UNIT]):
                        break
                    out.append((pos, decode_unit(data, pos, str(f.path))))
        return out

    @cached_property
    def _offsets(self):
        """The live units' queue offsets, in file order (native int64)."""
        import numpy as np

        parts = [view["msgBaseOffset"].astype(np.int64) for _, view in self._live]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    @cached_property
    def min_offset(self) -> int:
        if not self.cq.files:
            return -1
        first = self.cq.files[0]
        if first.size < UNIT:
            return -1
        return decode_unit(first.read(0, UNIT), 0, str(first.path)).base_offset

    @cached_property
    def max_offset(self) -> int:
        """The last live unit's offset + batch size in the last CQ file, else the one before it, else 0."""
        for _, view in reversed(self._live[-2:]):
            if len(view):
                return int(view[-1]["msgBaseOffset"]) + int(view[-1]["batchSize"])
        return 0

    # --- the log -------------------------------------------------------------------------------

    @property
    def log_file_size(self) -> int | None:
        return self.log.file_size

    def read_record(self, unit: BcqUnit) -> Message:
        """The record a unit points at, read as `getMessage(offset, size)` selects it."""
        size = self.log_file_size
        for f in self.log.files:
            if size and f.start_offset <= unit.phy_offset < f.start_offset + f.size:
                pos = unit.phy_offset % size
                record = decode_record(f.record_buffer(pos), pos, f.start_offset, file=str(f.path))
                if isinstance(record, BadRecord):
                    raise record.to_error(str(f.path), pos)
                if not isinstance(record, Message):
                    raise FormatError(
                        f"no message at compaction log offset {unit.phy_offset}", str(f.path), pos
                    )
                return record
        raise FormatError(
            f"{self.topic}/{self.queue_id}: compaction log offset {unit.phy_offset} is in no log file",
            str(self.log.path),
        )

    def records(self):
        """Every record of the compaction log in physical order, as (file name, position, record): each file's
        messages, then the BLANK, end of data or bad record that ends its walk (`Message` or another
        `formats.message.commitlog` record kind)."""
        for f in self.log.files:
            data = f.buffer()
            pos = 0
            while pos < len(data):
                record = decode_record(data, pos, f.start_offset, file=str(f.path))
                yield f.name, pos, record
                if not isinstance(record, Message):
                    break
                pos += record.total_size

    def next_compaction(self, checkpoint_offset: int) -> tuple[int, set[int]] | None:
        """What `doCompaction` would do now (CompactionLog.java:585-660, 322-336), as (the offset map's last
        offset, the queue offsets of the records it drops); None when it would not run (fewer than two log
        files, or no file but the last holds an offset past the position-checkpoint's `checkpoint_offset`).
        The files compacted are all but the last; the offset map holds, per MD5 of the whole KEYS string,
        the last offset past the checkpoint in the files with such offsets; a record at or before the
        map's last offset is kept when it is its key's last (or its key is not in the map) and has a body
        (a tombstone is dropped). Simplification, named: the map is exact (the broker's open addressing
        could miss a key after long probe runs in a nearly full map, :936-951)."""
        from formats.compaction import offset_map_key

        files = [f.name for f in self.log.files]
        if len(files) < 2:
            return None
        compacted = set(files[:-1])
        rows = [
            (name, r.queue_offset, r.keys or "", len(r.body))
            for name, _, r in self.records()
            if name in compacted and isinstance(r, Message)
        ]
        max_in_file: dict[str, int] = {}
        for name, offset, _, _ in rows:
            max_in_file[name] = max(offset, max_in_file.get(name, -1))
        newer = {name for name, top in max_in_file.items() if top > checkpoint_offset}
        if not newer:
            return None
        offset_map: dict[bytes, int] = {}
        last = 0
        for name, offset, keys, _ in rows:
            if name in newer and offset > checkpoint_offset:
                offset_map[offset_map_key(keys)] = last = offset
        dropped = {
            offset
            for _, offset, keys, body in rows
            if offset <= last and not (offset >= offset_map.get(offset_map_key(keys), -1) and body)
        }
        return last, dropped

    def get_message(self, offset: int) -> Served:
        """`CompactionLog.getMessage(group, topic, queueId, offset, 1, ...)` on a master."""
        lo, hi = self.min_offset, self.max_offset
        if hi == 0:
            return Served(offset, "NO_MESSAGE_IN_QUEUE", 0, lo, hi)
        if offset == hi:
            return Served(offset, "OFFSET_OVERFLOW_ONE", offset, lo, hi)
        if offset > hi:
            return Served(offset, "OFFSET_OVERFLOW_BADLY", lo if lo == 0 else hi, lo, hi)
        i = int(self._offsets.searchsorted(offset, side="left"))
        if i == len(self._offsets):
            return Served(offset, "OFFSET_FOUND_NULL", offset, lo, hi)
        unit = self.unit_at(i)
        served = Served(offset, "FOUND", unit.queue_offset + unit.unit.batch_size, lo, hi, unit)
        try:
            served.message = self.read_record(unit.unit)
        except MqtoolError as exc:
            served.status, served.problem = "MESSAGE_WAS_REMOVING", exc.message
        return served

    # --- start-up checks ------------------------------------------------------------------------

    def load_problems(self) -> list[tuple[str, str]]:
        """Why the broker's start would not serve this queue, as (effect, message); effect `start fails`
        (the store's load fails, the broker exits) or `not served` (the CompactionLog is not created and
        every pull answers NO_MATCHED_LOGIC_QUEUE). `MappedFileQueue.doLoad` of each directory in name order
        (a file of another size: load returns false, `TopicPartitionLog.init` throws IOException, which
        `loadAndGetClog` catches; a file of the right size whose name is not an offset - a `.delete`
        leftover - throws NumberFormatException from `DefaultMappedFile`, which fails the store's load), then
        `sanityCheck`'s RuntimeException (fails the load) for a log file without its CQ file or the
        reverse."""
        out: list[tuple[str, str]] = []
        for what, listing in (("compaction log", self.log), ("compaction CQ", self.cq)):
            size = listing.file_size
            if size is None:
                continue
            for i, (name, length) in enumerate(listing.entries):
                if length == 0 and i == len(listing.entries) - 1:
                    continue  # the load deletes an empty last file
                if length != size:
                    out.append(
                        (
                            "not served",
                            f"{what} file {name}: {length} bytes, not {size} "
                            "(MappedFileQueue.load refuses it)",
                        )
                    )
                    return out
                if not is_offset_file_name(name):
                    out.append(
                        (
                            "start fails",
                            f"{what} directory holds {name!r}: the load maps it and "
                            "fails on its name (NumberFormatException)",
                        )
                    )
                    return out
        if self.cq.file_size is not None and self.cq.file_size % UNIT:
            out.append(
                ("start fails", f"compaction CQ file size {self.cq.file_size} is not a multiple of {UNIT}")
            )
        log_names = {f.name for f in self.log.files}
        cq_names = {f.name for f in self.cq.files}
        for name in sorted(log_names - cq_names):
            out.append(("start fails", f"sanityCheck: log file mismatch with consumeQueue file {name}"))
        for name in sorted(cq_names - log_names):
            out.append(("start fails", f"sanityCheck: consumeQueue file mismatch with log file {name}"))
        return out


@dataclass
class CompactionStore:
    """`compaction/` of a store: the compaction topics, their logs and the position-checkpoint."""

    root: Path
    topic_attributes: dict[str, dict[str, str] | None] = field(default_factory=dict)
    _logs: dict[tuple[str, int], CompactionLog] = field(default_factory=dict, repr=False)

    @property
    def directory(self) -> Path:
        return self.root / COMPACTION_DIR

    @cached_property
    def topics(self) -> list[str]:
        """Topics the broker serves from compaction/: `cleanup.policy=COMPACTION` in topics.json."""
        return sorted(t for t, attrs in self.topic_attributes.items() if is_compaction_topic(attrs))

    def is_compaction_topic(self, topic: str) -> bool:
        return topic in self.topics

    @cached_property
    def load_listing(self) -> tuple[list[tuple[str, int]], list[str]]:
        """(queues `CompactionStore.load` opens, problems it meets): every compactionLog/<topic>/<queueId>
        with a compactionCq/<topic>/<queueId> directory."""
        queues: list[tuple[str, int]] = []
        problems: list[str] = []
        log_root = self.directory / COMPACTION_LOG_DIR
        if not log_root.is_dir():
            return queues, problems
        for topic_entry in sorted(os.scandir(log_root), key=lambda e: e.name):
            if not topic_entry.is_dir():
                continue
            for q in sorted(os.scandir(topic_entry.path), key=lambda e: e.name):
                if not q.is_dir():
                    continue
                queue_id = java_parse_int(q.name)
                if queue_id is None:
                    problems.append(
                        f"compactionLog/{topic_entry.name}/{q.name}: not a queue id (Integer.parseInt fails: "
                        "the load, and the broker's start, fail)"
                    )
                    continue
                if (self.directory / COMPACTION_CQ_DIR / topic_entry.name / str(queue_id)).is_dir():
                    queues.append((topic_entry.name, queue_id))
                else:
                    problems.append(
                        f"compactionLog/{topic_entry.name}/{q.name} has no compactionCq directory: the "
                        "broker skips it (compactionLog mismatch with compactionCq): none of it is served"
                    )
        return sorted(queues), problems

    def queues(self) -> list[tuple[str, int]]:
        return self.load_listing[0]

    def log(self, topic: str, queue_id: int) -> CompactionLog:
        key = (topic, queue_id)
        if key not in self._logs:
            self._logs[key] = CompactionLog(self.root, topic, queue_id)
        return self._logs[key]

    def has_log(self, topic: str, queue_id: int) -> bool:
        return (topic, queue_id) in self.queues()

    def served(self, topic: str, queue_id: int) -> bool:
        """Whether the broker's start opens a CompactionLog for the queue (no `not served` problem)."""
        return self.has_log(topic, queue_id) and not any(
            effect == "not served" for effect, _ in self.log(topic, queue_id).load_problems()
        )

    @cached_property
    def position_checkpoint(self) -> PositionCheckpoint | None:
        """`CompactionPositionMgr.load` (ConfigManager.load): the file, or its `.bak` when the file is
        missing or empty; None when neither exists."""
        from store.config.configfile import read_config_text

        path = self.directory / POSITION_CHECKPOINT
        text, _ = read_config_text(path)
        source = path
        if not text:
            bak = path.with_name(path.name + ".bak")
            text, _ = read_config_text(bak)
            source = bak
        if not text:
            return None
        return decode_position_checkpoint(text, str(source))

    def close(self) -> None:
        for log in self._logs.values():
            log.close()
        self._logs.clear()


__all__ = ["CompactionLog", "CompactionStore", "CompactionUnit", "DirListing", "Served"]
