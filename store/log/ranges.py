"""Commitlog files cut into byte ranges, and the ranges run over worker processes, results in order.

`byte_ranges` cuts files into ranges of equal length (the audit's Spark tasks are these ranges too). A range
is decoded with `formats.columnar.decoder.decode_resync`, which finds the first record boundary in it on
its own and hands over exactly where the next range starts, so the ranges of a file joined in order give
its whole-file decode, however the file was cut. `auto_range_size` picks several ranges per worker (they
differ in cost: a range holding the end of the data is cheap), 4 to 128 MiB.

`run_in_order(fn, items, jobs)` runs `fn` over the items in `jobs` forked worker processes (in this one
with jobs 1) and yields the results in the items' order, while later ones still run. Workers are forked:
they start in milliseconds with everything this process imported (the kernels included).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

MiB = 1 << 20
MIN_RANGE = 4 * MiB
MAX_RANGE = 128 * MiB
RANGES_PER_WORKER = 4
PARALLEL_MIN_BYTES = 32 * MiB

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class ByteRange:
    """The records that start in [start, end) of the file `file_index` (a position in the files' list)."""

    file_index: int
    start: int
    end: int


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def auto_range_size(total_bytes: int, workers: int) -> int:
    """Several ranges per worker: total / (workers * 4), within 4-128 MiB, rounded up to a MiB."""
    target = total_bytes // max(1, workers * RANGES_PER_WORKER)
    size = min(MAX_RANGE, max(MIN_RANGE, target))
    return -(-size // MiB) * MiB


def byte_ranges(
    sizes: Sequence[int], range_size: int, first: int = 0, first_start: int = 0
) -> list[ByteRange]:
    """Every file (by size) from index `first` (and in it from position `first_start`) cut into
    ceil(length / range_size) ranges of equal length (the last may be shorter); empty files have none."""
    if range_size <= 0:
        raise ValueError("the range size must be positive")
    out: list[ByteRange] = []
    for index in range(first, len(sizes)):
        lo = first_start if index == first else 0
        length = sizes[index] - lo
        if length <= 0:
            continue
        pieces = max(1, -(-length // range_size))
        step = -(-length // pieces)
        for k in range(pieces):
            out.append(ByteRange(index, lo + k * step, min(sizes[index], lo + (k + 1) * step)))
    return out


def with_data(ranges: Sequence[ByteRange], paths: Sequence[str | os.PathLike]) -> list[ByteRange]:
    """The ranges less those that lie in a hole of their sparse file (the unwritten end of a preallocated
    commitlog file, SEEK_DATA / SEEK_HOLE): no record starts there, and they would only be read as zeros.
    A file's first range stays: its walk starts there, and says where (a file of zeros ends at 0)."""
    from pathlib import Path

    from store.log.scan import data_extents

    out: list[ByteRange] = []
    for r in ranges:
        first = not out or out[-1].file_index != r.file_index
        if first or data_extents(Path(paths[r.file_index]), r.start, r.end):
            out.append(r)
    return out


def workers_for(total_bytes: int, jobs: int) -> int:
    """The workers worth starting for `total_bytes` of commitlog: one below PARALLEL_MIN_BYTES (forking
    and feeding workers costs more than it saves on a small store), else `jobs`."""
    return 1 if total_bytes < PARALLEL_MIN_BYTES else max(1, jobs)


def run_in_order(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> Iterator[R]:
    """fn(item) for every item, in order, over `jobs` worker processes (jobs 1: here, one at a time).

    At most 2 * jobs items are submitted ahead of the one being yielded, so the results waiting in this
    process stay few. Closing the iterator early cancels what has not started."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    context = multiprocessing.get_context(method)
    try:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=context)
    except (NotImplementedError, OSError):  # no POSIX semaphores here (a sandbox without /dev/shm): here
        for item in items:
            yield fn(item)
        return
    with pool:
        pending: deque[Future] = deque()
        queue = iter(items)
        try:
            for item in queue:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * jobs:
                    break
            while pending:
                result = pending.popleft().result()
                for item in queue:
                    pending.append(pool.submit(fn, item))
                    break
                yield result
        finally:
            for future in pending:
                future.cancel()
