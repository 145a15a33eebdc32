"""Consume queues in RocksDB (`storeType=defaultRocksDB`, 5.2.0+), read as `RocksDBConsumeQueueStore` does.

`RocksDBConsumeQueueStore` (this module's) lists the queues of `consumequeue/` (their "max" entries of the
`offset` column family, as `RocksDBConsumeQueueOffsetTable.loadMaxConsumeQueueOffsets` does) and opens one as
a `RocksDBConsumeQueue` with the reading interface of `store.queue.consumequeue.ConsumeQueue`: min/max
offsets, units by queue offset, search by time. The min offset is what
`RocksDBConsumeQueueOffsetTable.getMinCqOffset` answers, including its correction when the "min" entry points
below the commitlog's min offset (the broker writes the corrected entry back; mqtool only computes it). Units
carry their store time, so the search by time (`RocksDBConsumeQueueTable.binarySearchInCQByTime`) needs no
commitlog read. Read-only: see `store.rocksdb.db`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from formats import rocksdb as layout
from formats.consumequeue import CqUnit
from store.queue.consumequeue import (
    Boundary,
    BrokerQueryError,
    StoreTimeOf,
    native_unit_dtype,
    read_commitlog_min_offset,
)
from store.rocksdb.db import ReadOnlyRocksDB

if TYPE_CHECKING:
    import numpy as np

# No files: a unit's "position" is its queue offset * 20 in one endless file (problem locations).
ROCKSDB_CQ_FILE_SIZE = 1 << 62
COLUMN_FAMILIES = ("default", layout.OFFSET_COLUMN_FAMILY)


class RocksDBConsumeQueue:
    """One queue of the RocksDB consume queue store, read as the broker reads it."""

    def __init__(self, store: RocksDBConsumeQueueStore, topic: str, queue_id: int) -> None:
        self.cq_store = store
        self.topic = topic
        self.queue_id = queue_id
        self.directory = store.directory
        self.commitlog_min_offset = store.commitlog_min_offset
        self.file_size = ROCKSDB_CQ_FILE_SIZE
        self.files: list = []
        self.live_files: list = []

    def __repr__(self) -> str:
        return f"RocksDBConsumeQueue({self.topic!r}, {self.queue_id})"

    def close(self) -> None:
        self.__dict__.pop("_all", None)

    @cached_property
    def _all(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unit still in the database (native unit dtype) and their store times, by queue offset."""
        import numpy as np

        db = self.cq_store.db
        prefix = layout.queue_prefix(self.topic, self.queue_id)
        where = str(self.directory)
        rows, times = [], []
        for key, value in db.items("default", prefix):
            _topic, _queue, offset = layout.parse_cq_key(key, where)
            phy, size, tags, stored = layout.parse_cq_value(value, where)
            rows.append((offset, phy, size, tags))
            times.append(stored)
        units = np.array(rows, dtype=native_unit_dtype()) if rows else np.empty(0, native_unit_dtype())
        return units, np.array(times, dtype=np.int64)

    def _entry(self, kind: str) -> tuple[int, int] | None:
        """(phyOffset, cqOffset) of this queue's "max" or "min" entry, None when absent."""
        value = self.cq_store.db.get(
            layout.OFFSET_COLUMN_FAMILY, layout.offset_key(self.topic, self.queue_id, kind)
        )
        if value is None:
            return None
        entry = layout.parse_offset_entry(
            layout.offset_key(self.topic, self.queue_id, kind), value, str(self.directory)
        )
        return None if entry is None else (entry.phy_offset, entry.cq_offset)

    def _get(self, offset: int) -> tuple[int, int, int, int] | None:
        """`getCQInKV`: (phyOffset, size, tagsCode, storeTimestamp) at a queue offset, None when absent."""
        import numpy as np

        units, times = self._all
        i = int(np.searchsorted(units["queueOffset"], offset))
        if i < len(units) and int(units["queueOffset"][i]) == offset:
            u = units[i]
            return int(u["phyOffset"]), int(u["size"]), int(u["tagsCode"]), int(times[i])
        return None

    # --- max / min offsets --------------------------------------------------------------------------

    @cached_property
    def max_offset(self) -> int:
        """`getMaxOffsetInQueue`: the "max" entry's cqOffset + 1 (0 without one)."""
        entry = self._entry("max")
        return 0 if entry is None else entry[1] + 1

    @cached_property
    def min_offset(self) -> int:
        """`RocksDBConsumeQueueOffsetTable.getMinCqOffset` against the commitlog's min offset."""
        min_phy = self.commitlog_min_offset
        entry = self._entry("min")
        if entry is not None and entry[0] >= min_phy:
            return entry[1]
        cq_offset = 0 if entry is None else entry[1]
        corrected = self._corrected_min(cq_offset, min_phy)
        return cq_offset if corrected is None else corrected

    def _corrected_min(self, min_cq_offset: int, min_phy: int) -> int | None:
        """`correctMinCqOffset`: the corrected min offset, None where it returns false."""
        top = self._entry("max")
        if top is None:
            return 0
        max_phy, max_cq = top
        if max_phy < min_phy:
            return max_cq + 1
        found = self._binary_search_phy(max_cq, min_cq_offset, min_phy)
        return None if found is None else found

    def _binary_search_phy(self, high: int, low: int, target_phy: int) -> int | None:
        """`binarySearchInCQ(..., min=true)`: the first queue offset whose unit is at/after `target_phy`."""
        result = None
        while high >= low:
            mid = low + ((high - low) >> 1)
            unit = self._get(mid)
            if unit is None:
                low = mid + 1
                continue
            if unit[0] == target_phy:
                return mid
            if unit[0] > target_phy:
                high = mid - 1
                result = mid
            else:
                low = mid + 1
        return result

    @property
    def min_offset_v4(self) -> int:
        return self.min_offset

    def min_offset_of(self, major: int) -> int:
        return self.min_offset

    def store_time_at(self, queue_offset: int, store_time_of: StoreTimeOf | None = None) -> int | None:
        """The store time of the unit at `queue_offset` in [min, max) (the value's own), else None."""
        if not self.min_offset <= queue_offset < self.max_offset:
            return None
        found = self._get(queue_offset)
        return None if found is None else found[3]

    @cached_property
    def max_phy_offset(self) -> int | None:
        """`getMaxPhyOffsetInConsumeQueue(topic, queueId)`: the "max" entry's physical offset."""
        entry = self._entry("max")
        return None if entry is None else entry[0]

    @property
    def first_queue_offset(self) -> int:
        """Queue offset of the first unit still in the database."""
        units, _ = self._all
        return int(units["queueOffset"][0]) if len(units) else 0

    # --- units ----------------------------------------------------------------------------------------

    def unit(self, queue_offset: int) -> CqUnit | None:
        """`ConsumeQueue.get(offset)` for a unit in [min, max), else None."""
        if not self.min_offset <= queue_offset < self.max_offset:
            return None
        found = self._get(queue_offset)
        return None if found is None else CqUnit(found[0], found[1], found[2])

    def units(self, start: int | None = None, end: int | None = None) -> np.ndarray:
        """Units of queue offsets [start, end) below the max offset (defaults: [min, max)), as
        `ConsumeQueue.units`: `units(0)` also returns units below the min offset still in the database."""
        import numpy as np

        start = self.min_offset if start is None else start
        end = self.max_offset if end is None else min(end, self.max_offset)
        units, _ = self._all
        qo = units["queueOffset"]
        lo, hi = int(np.searchsorted(qo, start)), int(np.searchsorted(qo, end))
        return units[lo:hi].copy()

    def store_times(self, start: int | None = None, end: int | None = None) -> np.ndarray:
        """The units' store times (the value's last field) for `units(start, end)`."""
        import numpy as np

        start = self.min_offset if start is None else start
        end = self.max_offset if end is None else min(end, self.max_offset)
        units, times = self._all
        qo = units["queueOffset"]
        return times[int(np.searchsorted(qo, start)) : int(np.searchsorted(qo, end))].copy()

    def iter_units(self, start: int | None = None, end: int | None = None) -> Iterator[tuple[int, CqUnit]]:
        for q, phy, size, tags in self.units(start, end).tolist():
            yield q, CqUnit(phy, size, tags)

    # --- search by time -------------------------------------------------------------------------------

    def offset_in_queue_by_time(
        self, timestamp: int, store_time_of: StoreTimeOf | None = None, boundary: Boundary = "lower"
    ) -> int:
        """`RocksDBConsumeQueueStore.getOffsetInQueueByTime` (units hold their store time)."""
        if boundary not in ("lower", "upper"):
            raise ValueError(f"unknown boundary {boundary!r}")
        top = self._entry("max")
        if top is None or top[1] == -1:
            return 0
        return self._search_by_time(top[1], self.min_offset, timestamp, boundary)

    def _time_at(self, offset: int) -> int:
        found = self._get(offset)
        if found is None:  # the broker's loop dereferences a null ByteBuffer here
            raise BrokerQueryError(
                f"no unit at queue offset {offset} (the broker would throw here)", str(self.directory)
            )
        return found[3]

    def _search_by_time(self, high: int, low: int, timestamp: int, boundary: Boundary) -> int:
        """`RocksDBConsumeQueueTable.binarySearchInCQByTime`."""
        ceiling, floor = high, low
        top = self._get(ceiling)
        if top is not None and top[3] < timestamp:
            return ceiling + 1 if boundary == "lower" else ceiling
        bottom = self._get(floor)
        if bottom is not None and bottom[3] > timestamp:
            return floor if boundary == "lower" else 0
        min_phy = self.commitlog_min_offset
        target = left = right = -1
        while high >= low:
            mid = low + ((high - low) >> 1)
            unit = self._get(mid)
            if unit is None:
                low = mid + 1
                continue
            if unit[0] < min_phy:
                low, left = mid + 1, mid
                continue
            stored = unit[3]
            if stored < 0:
                return 0
            if stored == timestamp:
                target = mid
                break
            if stored > timestamp:
                high, right = mid - 1, mid
            else:
                low, left = mid + 1, mid
        if target == -1:
            return right if boundary == "lower" else left
        step, stop = (-1, floor) if boundary == "lower" else (1, ceiling)
        while (target + step >= stop) if step < 0 else (target + step <= stop):
            if self._time_at(target + step) != timestamp:
                break
            target += step
        return target

    def offset_by_time(
        self,
        major: int,
        timestamp: int,
        store_time_of: StoreTimeOf | None = None,
        boundary: Boundary | None = None,
        recorded_mtimes: Mapping[str, int] | None = None,
    ) -> int:
        """As `ConsumeQueue.offset_by_time`; RocksDB queues exist only on 5.x brokers."""
        return self.offset_in_queue_by_time(timestamp, store_time_of, boundary or "lower")


class RocksDBConsumeQueueStore:
    """The consume queues of a store kept in the RocksDB database `consumequeue/` (same interface as
    `store.queue.consumequeue.ConsumeQueueStore`)."""

    def __init__(
        self, root: Path | str, commitlog_min_offset: int | None = None, file_size: int | None = None
    ) -> None:
        self.root = Path(root)
        self.directory = self.root / "consumequeue"
        self._commitlog_min_offset = commitlog_min_offset
        self.file_size = ROCKSDB_CQ_FILE_SIZE

    @cached_property
    def commitlog_min_offset(self) -> int:
        if self._commitlog_min_offset is not None:
            return self._commitlog_min_offset
        return read_commitlog_min_offset(self.root)

    @cached_property
    def db(self) -> ReadOnlyRocksDB:
        return ReadOnlyRocksDB(self.directory, COLUMN_FAMILIES)

    def close(self) -> None:
        db = self.__dict__.pop("db", None)
        if db is not None:
            db.close()

    @cached_property
    def offset_entries(self) -> list[layout.OffsetEntry]:
        """Every "max"/"min" entry of the `offset` column family (the checkpoint entry left out)."""
        where = str(self.directory)
        out = []
        for key, value in self.db.items(layout.OFFSET_COLUMN_FAMILY):
            entry = layout.parse_offset_entry(key, value, where)
            if entry is not None:
                out.append(entry)
        return out

    @cached_property
    def max_phy_offset(self) -> int:
        """`getMaxPhyOffsetInConsumeQueue()`: the dispatch checkpoint (0 without one)."""
        value = self.db.get(layout.OFFSET_COLUMN_FAMILY, layout.max_phy_offset_key())
        return 0 if value is None else layout.parse_max_phy_offset(value, str(self.directory))

    @cached_property
    def _queue_ids(self) -> dict[str, list[int]]:
        out: dict[str, set[int]] = {}
        for e in self.offset_entries:
            if e.kind == "max":
                out.setdefault(e.topic, set()).add(e.queue_id)
        return {topic: sorted(ids) for topic, ids in sorted(out.items())}

    def topics(self) -> list[str]:
        return list(self._queue_ids)

    def queue_ids(self, topic: str) -> list[int]:
        return list(self._queue_ids.get(topic, ()))

    def queues(self) -> Iterator[tuple[str, int]]:
        for topic, ids in self._queue_ids.items():
            for queue_id in ids:
                yield topic, queue_id

    def open(self, topic: str, queue_id: int) -> RocksDBConsumeQueue:
        return RocksDBConsumeQueue(self, topic, queue_id)


__all__ = ["ROCKSDB_CQ_FILE_SIZE", "RocksDBConsumeQueue", "RocksDBConsumeQueueStore"]
