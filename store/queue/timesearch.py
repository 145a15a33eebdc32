"""`ConsumeQueue.getOffsetInQueueByTime` as each broker generation answers it.

5.1.1+ picks the file by the store times of its first and last units and binary-searches it with a
boundary (LOWER / UPPER, `MappedFileQueue.getConsumeQueueMappedFileByTime` +
`ConsumeQueue.binarySearchInQueueByTime`); 4.9.x … 5.1.0 picks the file by its modification time and
returns the nearest unit. `ConsumeQueue.offset_by_time(major, ...)` chooses between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from formats.structs import CQ_STORE_UNIT_SIZE as UNIT
from store.queue.consumequeue import Boundary, StoreTimeOf, java_div

if TYPE_CHECKING:
    from store.log.mappedfile import MappedFile
    from store.queue.consumequeue import ConsumeQueue


def offset_by_time_v5(
    cq: ConsumeQueue, timestamp: int, store_time_of: StoreTimeOf, boundary: Boundary = "lower"
) -> int:
    """5.1.1+ `getOffsetInQueueByTime(timestamp, boundaryType)`, clamped to [min, max] as the store does.

    LOWER (every reset path): the first queue offset stored at or after `timestamp`; UPPER: the last
    one stored at or before it.
    """
    if boundary not in ("lower", "upper"):
        raise ValueError(f"unknown boundary {boundary!r}")
    result = _search_by_time(cq, timestamp, store_time_of, boundary)
    return min(max(result, cq.min_offset), cq.max_offset)


def _file_by_time(
    cq: ConsumeQueue, timestamp: int, store_time_of: StoreTimeOf, boundary: Boundary
) -> MappedFile | None:
    """`MappedFileQueue.getConsumeQueueMappedFileByTime`."""
    files = cq.live_files
    if not files:
        return None
    start_times, stop_times = [], []
    for i, f in enumerate(files):
        start = stop = -1
        if cq.wrote_position(f) >= UNIT:
            phy, size = cq._read(f, 0, cq.file_size)
            t = store_time_of(phy, size)
            start = t if t > 0 else -1
        if i < len(files) - 1:
            phy, size = cq._read(f, cq.file_size - UNIT, cq.file_size)
            t = store_time_of(phy, size)
            stop = t if t > 0 else -1
        start_times.append(start)
        stop_times.append(stop)
    if boundary == "lower":
        for i, f in enumerate(files[:-1]):
            if stop_times[i] >= timestamp:
                return f
        return files[-1]
    for i in range(len(files) - 1, -1, -1):
        if start_times[i] <= timestamp:
            return files[i]
    return None


def _search_by_time(cq: ConsumeQueue, timestamp: int, store_time_of: StoreTimeOf, boundary: Boundary) -> int:
    """`ConsumeQueue.binarySearchInQueueByTime` in the file chosen by time."""
    f = _file_by_time(cq, timestamp, store_time_of, boundary)
    if f is None:
        return 0
    lower = boundary == "lower"
    min_logic = cq.min_offset * UNIT
    low = min_logic - f.start_offset if min_logic > f.start_offset else 0
    limit = cq.file_size
    wrote = cq.wrote_position(f)
    if wrote not in (0, cq.file_size):
        limit = wrote
    ceiling = limit - UNIT
    floor = low
    high = ceiling

    def time_at(position: int) -> int:
        return store_time_of(*cq._read(f, position, limit))

    if time_at(ceiling) < timestamp:
        return (f.start_offset + ceiling + (UNIT if lower else 0)) // UNIT
    if time_at(floor) > timestamp:
        return f.start_offset // UNIT if lower else 0
    found = _binary_search(cq, f, low, high, limit, timestamp, store_time_of)
    if found is None:
        return 0
    target, left, right, _, _ = found
    if target != -1:
        step = -UNIT if lower else UNIT
        offset = target
        while True:
            attempt = offset + step
            if (lower and attempt < floor) or (not lower and attempt > ceiling):
                break
            if time_at(attempt) != timestamp:
                break
            offset = attempt
    else:
        offset = right if lower else left
    return java_div(f.start_offset + offset, UNIT)


def offset_by_time_v4(
    cq: ConsumeQueue,
    timestamp: int,
    store_time_of: StoreTimeOf,
    last_modified: Sequence[int] | None = None,
) -> int:
    """4.9.x … 5.1.0 `getOffsetInQueueByTime(timestamp)`: file by modification time, nearest unit.

    `last_modified` gives each file's mtime in ms (default: the files' own mtimes), in file order.
    The result is not clamped, as in 4.9.x.
    """
    files = cq.live_files
    if not files:
        return 0
    if last_modified is None:
        last_modified = [f.path.stat().st_mtime_ns // 1_000_000 for f in files]
    if len(last_modified) < len(files):
        raise ValueError(f"{len(files)} file mtimes needed, {len(last_modified)} given")
    f = next((f for f, m in zip(files, last_modified, strict=False) if m >= timestamp), files[-1])
    min_logic = cq.min_offset_v4 * UNIT
    low = min_logic - f.start_offset if min_logic > f.start_offset else 0
    limit = cq.wrote_position(f)
    if limit == 0:
        return 0
    high = limit - UNIT
    found = _binary_search(cq, f, low, high, limit, timestamp, store_time_of)
    if found is None:
        return 0
    target, left, right, left_time, right_time = found
    if target != -1:
        offset = target
    elif left_time == -1:
        offset = right
    elif right_time == -1:
        offset = left
    else:
        offset = right if abs(timestamp - left_time) > abs(timestamp - right_time) else left
    return java_div(f.start_offset + offset, UNIT)


def _binary_search(
    cq: ConsumeQueue,
    f: MappedFile,
    low: int,
    high: int,
    limit: int,
    timestamp: int,
    store_time_of: StoreTimeOf,
) -> tuple[int, int, int, int, int] | None:
    """The broker's binary search over unit positions [low, high] of `f` (units below the commitlog's min
    offset count as earlier). Returns (exact hit, last earlier, first later, their store times), -1 where
    none; None when a record's store time cannot be read (the broker then answers 0)."""
    target = left = right = -1
    left_time = right_time = -1
    while high >= low:
        mid = (low + high) // (2 * UNIT) * UNIT
        phy, size = cq._read(f, mid, limit)
        if phy < cq.commitlog_min_offset:
            low = mid + UNIT
            left = mid
            continue
        t = store_time_of(phy, size)
        if t < 0:
            return None
        if t == timestamp:
            target = mid
            break
        if t > timestamp:
            high = mid - UNIT
            right, right_time = mid, t
        else:
            low = mid + UNIT
            left, left_time = mid, t
    return target, left, right, left_time, right_time


__all__ = ["offset_by_time_v4", "offset_by_time_v5"]
