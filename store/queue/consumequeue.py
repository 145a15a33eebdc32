"""ConsumeQueue files of a store: min/max offsets as the broker computes them, units, search by time.

`ConsumeQueue` reads `consumequeue/<topic>/<queueId>/` the way `ConsumeQueue.recover()` and
`correctMinOffset()` see it at start-up; `ConsumeQueueStore` lists and opens the queues of a store.
Commitlog facts come from outside: its min offset (the first commitlog file's name unless given) and a
`store_time_of(phy_offset, size)` callback that returns a record's STORETIMESTAMP or -1 when the record is
outside the commitlog (`CommitLog.pickupStoreTimestamp`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

import functools
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Literal

from formats.consumequeue import (
    DEFAULT_CQ_FILE_SIZE,
    CqUnit,
    count_valid_prefix,
    filler_mask,
    to_native,
    units_view,
)
from formats.errors import FormatError, MqtoolError
from formats.structs import CQ_STORE_UNIT_SIZE as UNIT
from store.io.filereads import StoreFileError
from store.io.pathnames import component_problem, queue_dir
from store.log.mappedfile import (
    MAX_MAPPED_FILE_SIZE,
    MappedFile,
    MappedFileQueue,
    possible_file_size,
    recover_unit_queue_end,
)

StoreTimeOf = Callable[[int, int], int]
"""(phy_offset, size) -> STORETIMESTAMP of the record there, or -1 if it is not in the commitlog."""

Boundary = Literal["lower", "upper"]


@functools.cache
def native_unit_dtype():
    import numpy as np

    return np.dtype([("queueOffset", "i8"), ("phyOffset", "i8"), ("size", "i4"), ("tagsCode", "i8")])


class RocksDBConsumeQueueError(MqtoolError):
    """The store keeps its consume queues in RocksDB (`storeType=defaultRocksDB`), not in files."""


class BrokerQueryError(MqtoolError):
    """Input on which the broker's own code would throw instead of answering."""


def java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def read_commitlog_min_offset(root: Path | str) -> int:
    """`CommitLog.getMinOffset` as the files show it: the first commitlog file's start (0 if none)."""
    return MappedFileQueue.open(Path(root) / "commitlog").min_offset


def is_rocksdb_dir(directory: Path) -> bool:
    """A RocksDB database directory (`RocksDBConsumeQueueStore`): CURRENT / MANIFEST-* / OPTIONS-* files."""
    try:
        if not directory.is_dir():
            return False
        if (directory / "CURRENT").is_file():
            return True
        return any(
            entry.is_file() and entry.name.startswith(("MANIFEST-", "OPTIONS-"))
            for entry in os.scandir(directory)
        )
    except OSError:  # unreadable: not known to be RocksDB; listing it then fails with its own error
        return False


class ConsumeQueue:
    """One queue's ConsumeQueue files, read as the broker reads them after `load()` + `recover()`."""

    def __init__(
        self,
        root: Path | str,
        topic: str,
        queue_id: int,
        commitlog_min_offset: int | None = None,
        file_size: int | None = None,
    ) -> None:
        self.root = Path(root)
        self.topic = topic
        self.queue_id = queue_id
        self.directory = queue_dir(self.root / "consumequeue", topic, queue_id)
        self.mapped_file_queue = MappedFileQueue.open(self.directory)
        self.file_size = file_size or self.mapped_file_queue.majority_size(UNIT) or DEFAULT_CQ_FILE_SIZE
        if not possible_file_size(self.file_size, UNIT):
            raise FormatError(
                f"ConsumeQueue file size {self.file_size} is not a positive multiple of {UNIT} of at most "
                f"{MAX_MAPPED_FILE_SIZE} bytes (a mapped file's size is a Java int)",
                str(self.directory),
            )
        self.mapped_file_queue.check_unit_files(self.file_size, UNIT)
        if commitlog_min_offset is None:
            commitlog_min_offset = read_commitlog_min_offset(root)
        self.commitlog_min_offset = commitlog_min_offset

    def __repr__(self) -> str:
        return f"ConsumeQueue({self.topic!r}, {self.queue_id})"

    def close(self) -> None:
        self.mapped_file_queue.close()

    @property
    def files(self) -> list[MappedFile]:
        return self.mapped_file_queue.files

    @property
    def units_per_file(self) -> int:
        return self.file_size // UNIT

    def file_units(self, f: MappedFile) -> np.ndarray:
        """Every unit slot of one file (zero-copy, big-endian `CQ_UNIT_DTYPE`)."""
        return units_view(f.buffer(), str(f.path))

    # --- max / min offsets (ConsumeQueue.recover, correctMinOffset) -------------------------------

    @cached_property
    def max_offset(self) -> int:
        """`recover()`: walk from the third-from-last file while units are valid; one past the last."""
        end = recover_unit_queue_end(self.files, self.file_size, UNIT, self._valid_prefix)
        return end // UNIT

    def _valid_prefix(self, f: MappedFile) -> int:
        """How many units at the start of file `f` are valid, read in growing chunks: a queue's last file
        is mostly unwritten (sparse), and touching it through the map would read ahead megabytes of it
        (`MappedFile.read`) - per queue, on a store of 100,000 LMQ queues."""
        start, step = 0, 1024
        while start < self.units_per_file:
            n = min(step, self.units_per_file - start)
            valid = count_valid_prefix(units_view(f.read(start * UNIT, n * UNIT), str(f.path)))
            if valid < n:
                return start + valid
            start, step = start + n, step * 4
        return self.units_per_file

    @property
    def max_position(self) -> int:
        """Byte offset of the end of valid units (the queue's write position)."""
        return self.max_offset * UNIT

    @cached_property
    def live_files(self) -> list[MappedFile]:
        """The files recovery keeps: those starting at or before the end of valid units."""
        end = self.max_position
        return [f for f in self.files if f.start_offset <= end]

    def wrote_position(self, f: MappedFile) -> int:
        """The write position recovery leaves in file `f` (full for earlier files)."""
        return max(0, min(self.file_size, self.max_position - f.start_offset))

    @cached_property
    def min_offset(self) -> int:
        """5.x `correctMinOffset(commitLogMinOffset)` at start-up, skipping pre-blank fillers.

        Min == max when the queue's last unit points below the commitlog minimum; otherwise the first
        unit of the first file whose physical offset is >= the commitlog minimum (0 if there is none,
        as the broker leaves it).
        """
        end = self.max_position
        if end <= 0:
            return 0
        last = self.live_files[-1]
        last_read = end - last.start_offset
        if last_read >= UNIT:
            last_unit = self.file_units(last)[last_read // UNIT - 1]
            if int(last_unit["phyOffset"]) < self.commitlog_min_offset:
                return self.max_offset
        return self._first_file_min_offset()

    @cached_property
    def min_offset_v4(self) -> int:
        """4.9.x `correctMinOffset`: the first-file scan only, without 5.x's "all deleted" rule."""
        if self.max_position <= 0:
            return 0
        return self._first_file_min_offset()

    def _first_file_min_offset(self) -> int:
        import numpy as np

        first = self.live_files[0]
        units = self.file_units(first)[: self.wrote_position(first) // UNIT]
        hit = (units["phyOffset"] >= self.commitlog_min_offset) & ~filler_mask(units)
        if not hit.any():
            return 0
        return first.start_offset // UNIT + int(np.argmax(hit))

    @property
    def first_queue_offset(self) -> int:
        """Queue offset of the first unit slot on disk (the first file's start)."""
        return self.files[0].start_offset // UNIT if self.files else 0

    # --- units -------------------------------------------------------------------------------------

    def unit(self, queue_offset: int) -> CqUnit | None:
        """`ConsumeQueue.get(offset)`: the unit at a queue offset in [min, max), else None."""
        if not self.min_offset <= queue_offset < self.max_offset:
            return None
        return self.unit_at(queue_offset * UNIT)

    def unit_at(self, position: int) -> CqUnit | None:
        """The unit at a byte position of the queue (queue offset * 20), None past the files."""
        f = self.mapped_file_queue.find(position)
        if f is None:
            return None
        u = self.file_units(f)[(position - f.start_offset) // UNIT]
        return CqUnit(int(u["phyOffset"]), int(u["size"]), int(u["tagsCode"]))

    def units(self, start: int | None = None, end: int | None = None) -> np.ndarray:
        """Units of queue offsets [start, end) as a native array with a `queueOffset` column.

        Defaults: [min_offset, max_offset). The range is clipped to what the files hold below the max
        offset, so `units(0)` also returns a deleted prefix still on disk (units below min_offset).
        """
        import numpy as np

        start = self.min_offset if start is None else start
        end = self.max_offset if end is None else end
        start = max(start, self.first_queue_offset)
        end = min(end, self.max_offset)
        parts = []
        for f in self.live_files:
            first = f.start_offset // UNIT
            lo, hi = max(start, first), min(end, first + self.units_per_file)
            if lo < hi:
                parts.append(to_native(self.file_units(f)[lo - first : hi - first], lo))
        if not parts:
            return np.empty(0, dtype=native_unit_dtype())
        return np.concatenate(parts)

    def iter_units(self, start: int | None = None, end: int | None = None) -> Iterator[tuple[int, CqUnit]]:
        """(queue offset, unit) pairs of `units(start, end)`."""
        for q, phy, size, tags in self.units(start, end).tolist():
            yield q, CqUnit(phy, size, tags)

    # --- search by time (ConsumeQueue.getOffsetInQueueByTime) -------------------------------------

    def _read(self, f: MappedFile, position: int, limit: int) -> tuple[int, int]:
        if not 0 <= position <= limit - UNIT:
            raise BrokerQueryError(
                "unit position outside the readable part of the file (the broker would throw here)",
                str(f.path),
                position,
            )
        u = self.file_units(f)[position // UNIT]
        return int(u["phyOffset"]), int(u["size"])

    def offset_in_queue_by_time(
        self, timestamp: int, store_time_of: StoreTimeOf, boundary: Boundary = "lower"
    ) -> int:
        """5.1.1+ `getOffsetInQueueByTime(timestamp, boundaryType)`; see `cq_timesearch.offset_by_time_v5`."""
        from store.queue.timesearch import offset_by_time_v5

        return offset_by_time_v5(self, timestamp, store_time_of, boundary)

    def offset_in_queue_by_time_v4(
        self,
        timestamp: int,
        store_time_of: StoreTimeOf,
        last_modified: Sequence[int] | None = None,
    ) -> int:
        """4.9.x … 5.1.0 `getOffsetInQueueByTime(timestamp)` (see
        `store.queue.timesearch.offset_by_time_v4`)."""
        from store.queue.timesearch import offset_by_time_v4

        return offset_by_time_v4(self, timestamp, store_time_of, last_modified)

    def offset_by_time(
        self,
        major: int,
        timestamp: int,
        store_time_of: StoreTimeOf,
        boundary: Boundary | None = None,
        recorded_mtimes: Mapping[str, int] | None = None,
    ) -> int:
        """`getOffsetInQueueByTime` as a broker of major version `major` (4 or 5) answers it.

        4.x picks the file by modification time: `recorded_mtimes` ("topic/queueId/file" -> ms) stands in
        for the files' own mtimes where it has them; 5.x searches by store time (LOWER unless `boundary`).
        """
        if major == 4:
            return self.offset_in_queue_by_time_v4(
                timestamp, store_time_of, self.file_mtimes(recorded_mtimes)
            )
        return self.offset_in_queue_by_time(timestamp, store_time_of, boundary or "lower")

    def file_mtimes(self, recorded: Mapping[str, int] | None) -> list[int] | None:
        """Each live file's mtime in ms, from `recorded` where it has the file, else from the file."""
        if recorded is None:
            return None
        out = []
        for f in self.live_files:
            key = f"{self.topic}/{self.queue_id}/{f.name}"
            out.append(recorded[key] if key in recorded else f.path.stat().st_mtime_ns // 1_000_000)
        return out

    def min_offset_of(self, major: int) -> int:
        """The min offset a broker of major version `major` reports (4.x: `min_offset_v4`)."""
        return self.min_offset_v4 if major == 4 else self.min_offset

    def store_time_at(self, queue_offset: int, store_time_of: StoreTimeOf) -> int | None:
        """STORETIMESTAMP of the message at `queue_offset` (None outside [min, max) or when deleted)."""
        unit = self.unit(queue_offset)
        if unit is None:
            return None
        stamp = store_time_of(unit.phy_offset, unit.size)
        return stamp if stamp >= 0 else None


_QUEUE_ID = re.compile(r"(0|[1-9][0-9]*)")


class ConsumeQueueStore:
    """The consume queues of a store (`${root}/consumequeue/<topic>/<queueId>/`)."""

    def __init__(
        self, root: Path | str, commitlog_min_offset: int | None = None, file_size: int | None = None
    ) -> None:
        self.root = Path(root)
        self.directory = self.root / "consumequeue"
        if is_rocksdb_dir(self.directory):
            raise RocksDBConsumeQueueError(
                "consume queues are stored in RocksDB (storeType=defaultRocksDB); only file-based "
                "consume queues can be read",
                str(self.directory),
            )
        self._commitlog_min_offset = commitlog_min_offset
        self.file_size = file_size

    @cached_property
    def commitlog_min_offset(self) -> int:
        if self._commitlog_min_offset is not None:
            return self._commitlog_min_offset
        return read_commitlog_min_offset(self.root)

    def topics(self) -> list[str]:
        """Topic directories, in name order."""
        if not self.directory.is_dir():
            return []
        try:
            return sorted(e.name for e in os.scandir(self.directory) if e.is_dir())
        except OSError as exc:
            raise StoreFileError(f"cannot list: {exc.strerror}", str(self.directory)) from exc

    def queue_ids(self, topic: str) -> list[int]:
        """Queue ids of a topic, ascending; non-numeric directories are skipped as the broker does."""
        if component_problem(topic) is not None:  # no directory has that name (store.io.pathnames)
            return []
        directory = self.directory / topic
        if not directory.is_dir():
            return []
        try:
            ids = [
                int(e.name)
                for e in os.scandir(directory)
                if e.is_dir() and _QUEUE_ID.fullmatch(e.name) and int(e.name) < 2**31
            ]
        except OSError as exc:  # unreadable, or a symlink loop
            raise StoreFileError(f"cannot list: {exc.strerror}", str(directory)) from exc
        return sorted(ids)

    def queues(self) -> Iterator[tuple[str, int]]:
        """Every (topic, queueId) with a directory."""
        for topic in self.topics():
            for queue_id in self.queue_ids(topic):
                yield topic, queue_id

    def open(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(self.root, topic, queue_id, self.commitlog_min_offset, self.file_size)


__all__ = [
    "native_unit_dtype",
    "BrokerQueryError",
    "ConsumeQueue",
    "ConsumeQueueStore",
    "RocksDBConsumeQueueError",
    "StoreTimeOf",
    "read_commitlog_min_offset",
    "is_rocksdb_dir",
]


def __getattr__(name: str):
    # `NATIVE_UNIT_DTYPE` stays importable; numpy is imported only when it is first used.
    if name == "NATIVE_UNIT_DTYPE":
        return native_unit_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
