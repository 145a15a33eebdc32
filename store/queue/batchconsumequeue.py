"""BatchConsumeQueue files of a store (BatchCQ topics): units, min/max offsets, get(offset), search by time.

`BatchConsumeQueue` reads `batchconsumequeue/<topic>/<queueId>/` as the 5.x broker's `BatchConsumeQueue`
sees it after `load()`, `recover()` and `correctMinOffset()` at start-up. A unit covers the queue offsets
[msgBaseOffset, msgBaseOffset + batchSize); `unit(offset)` is the broker's `get(offset)` (the unit whose
batch holds the offset, found by the first base offset of each file and then a search of the file);
`offset_in_queue_by_time` is `getOffsetInQueueByTime` with its quirks (the last unit's base offset for
times past a file's last unit, -1 where its search finds nothing), `offset_by_time` the store's answer
(clamped into [min, max]) with the reading interface every queue kind shares (`store.queue.unitqueue`).
`BatchConsumeQueueStore` lists and opens the queues of a store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

import functools
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path

from formats.batchconsumequeue import (
    BATCH_CQ_DIR,
    DEFAULT_BCQ_FILE_SIZE,
    BcqUnit,
    count_valid_prefix,
    is_batch_cq,
    unit_of_row,
    units_view,
)
from formats.errors import FormatError
from formats.structs import BCQ_STORE_UNIT_SIZE
from store.io.pathnames import queue_dir
from store.log.mappedfile import MappedFile, MappedFileQueue, recover_unit_queue_end
from store.queue.consumequeue import (
    Boundary,
    BrokerQueryError,
    ConsumeQueueStore,
    StoreTimeOf,
    read_commitlog_min_offset,
)

UNIT = BCQ_STORE_UNIT_SIZE


@functools.cache
def native_bcq_dtype():
    """The unit fields native-endian, plus the byte position of the unit in its queue."""
    import numpy as np

    return np.dtype(
        [
            ("position", "i8"),
            ("phyOffset", "i8"),
            ("size", "i4"),
            ("tagsCode", "i8"),
            ("storeTime", "i8"),
            ("msgBaseOffset", "i8"),
            ("batchSize", "i2"),
            ("compactedOffset", "i4"),
            ("reserved", "i4"),
        ]
    )


class BatchConsumeQueue:
    """One queue's BatchConsumeQueue files, read as the broker reads them after start-up."""

    def __init__(
        self,
        root: Path | str,
        topic: str,
        queue_id: int,
        commitlog_min_offset: int | None = None,
    ) -> None:
        self.root = Path(root)
        self.topic = topic
        self.queue_id = queue_id
        self.directory = queue_dir(self.root / BATCH_CQ_DIR, topic, queue_id)
        self.mapped_file_queue = MappedFileQueue.open(self.directory)
        self.file_size = self.mapped_file_queue.majority_size(UNIT) or DEFAULT_BCQ_FILE_SIZE
        if self.file_size % UNIT:
            # recover() reads a whole unit at every 46-byte step of the file: a partial one throws there
            raise FormatError(
                f"BatchConsumeQueue file size {self.file_size} is not a multiple of {UNIT}",
                str(self.directory),
            )
        self.mapped_file_queue.check_unit_files(self.file_size, UNIT)
        self._commitlog_min_offset = commitlog_min_offset

    def __repr__(self) -> str:
        return f"BatchConsumeQueue({self.topic!r}, {self.queue_id})"

    def close(self) -> None:
        self.mapped_file_queue.close()

    @cached_property
    def commitlog_min_offset(self) -> int:
        if self._commitlog_min_offset is not None:
            return self._commitlog_min_offset
        return read_commitlog_min_offset(self.root)

    @property
    def files(self) -> list[MappedFile]:
        return self.mapped_file_queue.files

    def file_units(self, f: MappedFile) -> np.ndarray:
        """Every unit slot of one file (zero-copy, big-endian)."""
        return units_view(f.buffer(), str(f.path))

    # --- recover(): the write position, the files kept ------------------------------------------

    @cached_property
    def max_position(self) -> int:
        """`recover()`: from the third-from-last file, whole files of valid units, then the valid prefix."""
        return recover_unit_queue_end(
            self.files, self.file_size, UNIT, lambda f: count_valid_prefix(self.file_units(f))
        )

    @cached_property
    def live_files(self) -> list[MappedFile]:
        """`truncateDirtyFiles`: the files starting at or before the write position."""
        return [f for f in self.files if f.start_offset <= self.max_position]

    def read_position(self, f: MappedFile) -> int:
        return max(0, min(self.file_size, self.max_position - f.start_offset))

    wrote_position = read_position  # the name the file-tail check uses for ConsumeQueues

    def read_units(self, f: MappedFile) -> np.ndarray:
        """The units of `f` below its read position (big-endian view)."""
        return self.file_units(f)[: self.read_position(f) // UNIT]

    # --- min / max offsets (reviseMinOffsetInQueue, reviseMaxOffsetInQueue, correctMinOffset) ----

    @cached_property
    def max_offset(self) -> int:
        """The last unit's base offset + batch size (the last file, or the one before when it is empty)."""
        files = self.live_files
        for f in files[-1:] + (files[-2:-1] if len(files) >= 2 else []):
            units = self.read_units(f)
            if len(units):
                return int(units[-1]["msgBaseOffset"]) + int(units[-1]["batchSize"])
        return 0

    @cached_property
    def min_offset(self) -> int:
        """The first unit's base offset, moved past the units whose record is below the commitlog minimum.

        -1 when the first file holds no unit (the broker's value for an empty BatchCQ queue).
        """
        if not self.live_files:
            return -1
        units = self.read_units(self.live_files[0])
        if not len(units):
            return -1
        below = units["phyOffset"] < self.commitlog_min_offset
        if not below[0]:
            return int(units[0]["msgBaseOffset"])
        kept = int(below.argmin()) if not below.all() else len(units)
        last = units[kept - 1]
        return int(last["msgBaseOffset"]) + int(last["batchSize"])

    @property
    def unit_count(self) -> int:
        """How many units recovery keeps (one per commitlog record)."""
        return sum(self.read_position(f) // UNIT for f in self.live_files)

    @property
    def last_unit(self) -> BcqUnit | None:
        """The last recovered unit (its record is the queue's furthest in the commitlog)."""
        for f in reversed(self.live_files):
            units = self.read_units(f)
            if len(units):
                return unit_of_row(units[-1])
        return None

    @property
    def message_count(self) -> int:
        """`getMessageTotalInQueue`: max - min."""
        return self.max_offset - self.min_offset

    # --- units ---------------------------------------------------------------------------------------

    def units(self) -> np.ndarray:
        """Every recovered unit of the queue (native copy, with its byte position in the queue)."""
        import numpy as np

        parts = []
        for f in self.live_files:
            units = self.read_units(f)
            part = np.empty(len(units), dtype=native_bcq_dtype())
            part["position"] = f.start_offset + np.arange(len(units), dtype=np.int64) * UNIT
            for name in units.dtype.names:
                part[name] = units[name]
            parts.append(part)
        return np.concatenate(parts) if parts else np.empty(0, dtype=native_bcq_dtype())

    def iter_units(self) -> Iterator[BcqUnit]:
        for row in self.units():
            yield unit_of_row(row)

    def _first_units(self) -> list[tuple[MappedFile, np.ndarray]]:
        return [(f, units) for f in self.live_files if len(units := self.read_units(f))]

    def unit(self, queue_offset: int) -> BcqUnit | None:
        """`get(offset)`: the unit whose batch holds `queue_offset` (None at or past the max offset, or
        below the first file's first base offset; offsets below the min offset still on disk answer)."""
        import numpy as np

        if queue_offset >= self.max_offset:
            return None
        # the file: the last one whose first base offset is <= the offset (the last file first, then
        # the offset cache of the other files)
        target = None
        for _f, units in reversed(self._first_units()):
            if int(units[0]["msgBaseOffset"]) <= queue_offset:
                target = units
                break
        if target is None:
            return None
        bases = target["msgBaseOffset"].astype(np.int64)
        index = int(np.searchsorted(bases, queue_offset, side="right")) - 1
        return unit_of_row(target[max(index, 0)])

    # --- getOffsetInQueueByTime ----------------------------------------------------------------------

    def _file_by_time(self, timestamp: int) -> np.ndarray | None:
        """The file searched: the last one if its first unit is not after `timestamp`, else the time cache's
        floor (first-unit store time -> file, a later file winning a tie), else the first file."""
        live = self.live_files
        if not live:
            return None
        last = self.read_units(live[-1])
        if len(last) and int(last[0]["storeTime"]) <= timestamp:
            return last
        cache: dict[int, np.ndarray] = {}
        for _f, units in self._first_units():
            cache[int(units[0]["storeTime"])] = units
        floor = [t for t in cache if t <= timestamp]
        return cache[max(floor)] if floor else self.read_units(live[0])

    def offset_in_queue_by_time(self, timestamp: int, boundary: Boundary = "lower") -> int:
        """`BatchConsumeQueue.getOffsetInQueueByTime(timestamp, boundaryType)`, unclamped (-1: not found)."""
        units = self._file_by_time(timestamp)
        if units is None or not len(units):
            return -1
        times = [int(t) for t in units["storeTime"]]
        if timestamp >= times[-1]:
            return int(units[-1]["msgBaseOffset"])
        index = _search_right(times, timestamp, boundary)
        return -1 if index < 0 else int(units[index]["msgBaseOffset"])

    def offset_by_time(
        self,
        major: int,
        timestamp: int,
        store_time_of: StoreTimeOf | None = None,
        boundary: Boundary | None = None,
        recorded_mtimes: Mapping[str, int] | None = None,
    ) -> int:
        """`DefaultMessageStore.getOffsetInQueueByTime`: the queue's answer clamped into [min, max] (as
        `ConsumeQueue.offset_by_time`; units carry their store time, so `store_time_of` is not needed)."""
        _refuse_v4(self, major)
        found = self.offset_in_queue_by_time(timestamp, boundary or "lower")
        return min(max(found, self.min_offset), self.max_offset)

    def min_offset_of(self, major: int) -> int:
        """`getMinOffsetInQueue` (5.x only: a 4.9.x broker has no BatchConsumeQueue)."""
        _refuse_v4(self, major)
        return self.min_offset

    def store_time_at(self, queue_offset: int, store_time_of: StoreTimeOf | None = None) -> int | None:
        """The store time of the batch holding `queue_offset` in [min, max) (its unit's), else None."""
        if not self.min_offset <= queue_offset < self.max_offset:
            return None
        unit = self.unit(queue_offset)
        return None if unit is None else unit.store_time


def _refuse_v4(queue: BatchConsumeQueue, major: int) -> None:
    if major == 4:
        raise BrokerQueryError(
            f"{queue.topic}/{queue.queue_id} is a BatchConsumeQueue: BatchCQ topics came with 5.0, a 4.9.x "
            "broker has no such queue (drop --broker-version 4)",
            str(queue.directory),
        )


def _search_right(times: list[int], timestamp: int, boundary: Boundary) -> int:
    """`binarySearchRight` over the store times of one file's units: a unit index, or -1.

    Its quirks are kept: a two-unit window answers its first unit when that one is >= `timestamp`
    whatever the boundary, and UPPER may stop with -1 in a gap between store times.
    """
    lo, hi = 0, len(times) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        at = times[mid]
        if mid == hi:
            return mid if at >= timestamp else -1
        if mid == lo:
            if at >= timestamp:
                return mid
            lo = mid + 1
        elif boundary == "upper":
            if at <= timestamp:
                lo = mid
            else:
                hi = mid - 1
        elif at < timestamp:
            lo = mid + 1
        else:
            hi = mid
    return -1


class BatchConsumeQueueStore(ConsumeQueueStore):
    """The BatchConsumeQueues of a store (`${root}/batchconsumequeue/<topic>/<queueId>/`): the listing of
    `ConsumeQueueStore` over the other directory."""

    def __init__(self, root: Path | str, commitlog_min_offset: int | None = None) -> None:
        self.root = Path(root)
        self.directory = self.root / BATCH_CQ_DIR
        self._commitlog_min_offset = commitlog_min_offset
        self.file_size = None

    def open(self, topic: str, queue_id: int) -> BatchConsumeQueue:  # type: ignore[override]
        return BatchConsumeQueue(self.root, topic, queue_id, self._commitlog_min_offset)


def configured_batch_cq_topics(store) -> frozenset[str] | None:
    """The topics topics.json makes BatchCQ (`queue.type=BatchCQ`); None when it cannot be read (a missing
    file is an empty table, as for the broker)."""
    from formats.errors import MqtoolError

    try:
        topics = store.config("topics.json").load().model
    except MqtoolError:
        return None
    table = getattr(topics, "topic_config_table", {})
    return frozenset(name for name, config in table.items() if is_batch_cq(config.attributes))


def batch_cq_topics(store) -> frozenset[str]:
    """`Store.batch_cq_topics`: BatchCQ topics in topics.json and the topic directories under
    batchconsumequeue/."""
    return frozenset(store.batch_consume_queues.topics()) | (configured_batch_cq_topics(store) or frozenset())


__all__ = [
    "BatchConsumeQueue",
    "BatchConsumeQueueStore",
    "batch_cq_topics",
    "configured_batch_cq_topics",
    "native_bcq_dtype",
]
