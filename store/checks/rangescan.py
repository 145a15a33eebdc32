"""Whole-commitlog scans over worker processes: each byte range (`store.log.ranges`) decoded on its own and
reduced to what the checks need, then put back together per file, in order.

`scan_range` decodes one range (`formats.columnar.decoder.decode_resync`, without the hosts no check
reads) and keeps: its accepted rows as a `RecordIndex` part (the columns the ConsumeQueue, index and
checkpoint checks join against), the rows whose PHYSICALOFFSET field is not their position, the file's
first row, the positions of the last accepted records (`store.log.walks`), and the row that stopped the
walk with what `store.log.scan.scan_file` records after it (the last non-zero byte, the records a resync
finds beyond a rejected one). `scan_ranges` runs it over every range of the commitlog with `jobs` workers and
gives per file a `RangedFile` - the `store.log.scan.CommitLogFile` the checks read - and the `RecordIndex`
of the records the broker's walk reaches, exactly as the single-file scan gives them: a file's ranges
joined in order are its whole-file decode (tests compare 1 and N jobs on the golden stores).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from formats.errors import MqtoolError
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS
from store.checks.records import IndexPart, RecordIndex, RecordIndexBuilder
from store.log.commitlog import CommitLog
from store.log.mappedfile import MappedFile
from store.log.ranges import ByteRange, auto_range_size, byte_ranges, run_in_order, with_data, workers_for
from store.log.scan import CommitLogFile, _columnar, _u8, last_nonzero_in_file, relative_name
from store.log.walks import TAIL_KEPT, FileWalk, joined_tail

# the columns `check_commitlog` reads (CommitLogFile.slim)
_FILE_COLUMNS = ("physicalOffset", "totalSize", "physicalOffsetField", "storeTimestamp", "status")


@dataclass(frozen=True)
class RangeTask:
    """One range of one commitlog file, and how to decode it (what a worker is sent)."""

    path: str
    base: int
    size: int
    range: ByteRange
    check_crc: bool
    accept_v2: bool
    delay_levels: tuple[int, ...]
    with_keys: bool


@dataclass
class RangeScan:
    """What one range's walk found (see the module docstring)."""

    range: ByteRange
    messages: int
    rows: pa.RecordBatch  # slim columns: the file's first row, rows with a wrong PHYSICALOFFSET, the last row
    stopped: bool  # the last of `rows` stopped the walk (not `ok`)
    index: IndexPart | None
    data_end: int = 0
    stop_data_end: int | None = None
    beyond: pa.RecordBatch | None = None
    tail: tuple[int, ...] = ()  # positions of the last TAIL_KEPT accepted records (`store.log.walks`)


class RangedFile(CommitLogFile):
    """A commitlog file put together from its ranges: `batch` holds only the rows the checks look at one
    by one (first, wrong PHYSICALOFFSET fields, last); the counts are the whole walk's."""

    def __init__(self, name: str, start: int, size: int, batch: pa.RecordBatch | None, messages: int) -> None:
        super().__init__(name, start, size, batch)
        self.messages = messages

    def message_count(self) -> int:
        return self.messages


def scan_range(task: RangeTask) -> RangeScan:
    """Decode one range and reduce it (runs in a worker)."""
    columnar = _columnar()
    rng = task.range
    f = MappedFile(Path(task.path), task.base, task.size)
    try:
        buf = f.buffer()
        batch = columnar.decode_resync(
            buf,
            task.base,
            rng.start,
            rng.end,
            check_crc=task.check_crc,
            accept_v2=task.accept_v2,
            hosts=False,
        )
        codes = columnar._status_codes(batch)
        bad = np.flatnonzero(codes != columnar.STATUS_OK)
        cut = int(bad[0]) if len(bad) else batch.num_rows
        ok = batch.slice(0, cut)
        index = None
        if cut:
            builder = RecordIndexBuilder(delay_levels=task.delay_levels, with_keys=task.with_keys)
            builder.add(ok)
            index = builder.part()
        last = cut if len(bad) else cut - 1
        phy = batch.column("physicalOffset").to_numpy()[:cut]
        field = batch.column("physicalOffsetField").to_numpy()[:cut]
        keep = set(np.flatnonzero(field != phy).tolist())
        if rng.start == 0 and batch.num_rows:
            keep.add(0)
        if last >= 0:
            keep.add(last)
        rows = _take(batch.select(list(_FILE_COLUMNS)), sorted(keep))
        tail = tuple((phy[-TAIL_KEPT:] - task.base).tolist()) if cut else ()
        scan = RangeScan(rng, cut, rows, bool(len(bad)), index, tail=tail)
        if len(bad):
            _after_stop(scan, task, f, buf, batch, cut)
        del batch, ok
        return scan
    finally:
        f.close()


def _after_stop(scan: RangeScan, task: RangeTask, f: MappedFile, buf, batch: pa.RecordBatch, cut: int):
    """What `scan_file` records after the row that stops a file's walk (the same code, on this range)."""
    from store.checks.problems import FAILURE_KIND

    columnar = _columnar()
    data = _u8(buf)
    status = columnar.STATUS_NAMES[int(columnar._status_codes(batch)[cut])]
    pos = int(batch.column("physicalOffset")[cut].as_py()) - task.base
    total = int(batch.column("totalSize")[cut].as_py())
    scan.data_end = last_nonzero_in_file(f, data, pos, task.size)
    resync = False
    if status in FAILURE_KIND:
        extent = min(max(total, 8), task.size - pos)
        scan.stop_data_end = last_nonzero_in_file(f, data, pos, pos + extent)
        resync = scan.data_end > pos + extent
    elif status == "end":
        resync = scan.data_end > pos
    if resync:
        beyond = columnar.decode_resync(
            buf, task.base, pos + 1, check_crc=task.check_crc, accept_v2=task.accept_v2, hosts=False
        )
        scan.beyond = beyond.select(list(_FILE_COLUMNS)) if beyond.num_rows else None
    del data


def _remember_walk(
    commitlog: CommitLog,
    f: MappedFile,
    joined: RangedFile,
    walk: list[RangeScan],
    check_crc: bool,
    accept_v2: bool,
) -> None:
    """The file's walk from position 0, for the commitlog's later walks (`store.log.walks`): the end,
    info's and the bundle's last records then read nothing again."""
    status, pos, _ = joined.stop()  # type: ignore[misc]
    tail = joined_tail([s.tail for s in walk])
    found = FileWalk(status, pos, tail[-1] if tail else -1, joined.messages, tail)
    commitlog.walks.record(f.start_offset, f.size, found, check_crc=check_crc, accept_v2=accept_v2)


def _take(batch: pa.RecordBatch, rows: list[int]) -> pa.RecordBatch:
    return batch.take(pa.array(rows, pa.int64())) if rows else batch.slice(0, 0)


def scan_ranges(
    commitlog: CommitLog,
    *,
    root: Path | None = None,
    check_crc: bool = True,
    accept_v2: bool = True,
    delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS,
    with_keys: bool = False,
    jobs: int = 1,
    range_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[CommitLogFile], RecordIndex, MqtoolError | None]:
    """Every commitlog file's walk (`CommitLogFile`s in offset order), the `RecordIndex` of the records
    before the first stop that is not a BLANK (later records are past the valid end: not indexed), and the
    error that stopped the scan at a file it could not read (then only the files before it are given)."""
    files = commitlog.queue.files
    sizes = [f.size for f in files]
    jobs = workers_for(sum(sizes), jobs)
    size = range_size or auto_range_size(sum(sizes), jobs)
    levels = tuple(delay_levels)
    tasks = []
    for r in with_data(byte_ranges(sizes, size), [f.path for f in files]):
        f = files[r.file_index]
        task = RangeTask(str(f.path), f.start_offset, f.size, r, check_crc, accept_v2, levels, with_keys)
        tasks.append(task)
    by_file: dict[int, list[RangeScan]] = {}
    error: MqtoolError | None = None
    done = len(files)
    if jobs > 1:
        # pyarrow's pa.array(ndarray) looks for masked arrays, which imports numpy.ma (~60 ms): once here,
        # before the workers fork, not once in each of them
        import numpy.ma  # noqa: F401
    results = run_in_order(scan_range, tasks, jobs)
    for task in tasks:
        try:
            scan = next(results)
        except MqtoolError as exc:  # as the file-by-file scan: the files before this one are checked
            error, done = exc, task.range.file_index
            results.close()
            break
        by_file.setdefault(scan.range.file_index, []).append(scan)
        if progress is not None:
            progress(scan.range.end - scan.range.start)
    builder = RecordIndexBuilder(delay_levels=delay_levels, with_keys=with_keys)
    out: list[CommitLogFile] = []
    ended = False
    for index, f in enumerate(files[:done]):
        name = relative_name(f, root)
        scans = by_file.get(index, [])
        if not scans:
            out.append(CommitLogFile(name, f.start_offset, f.size, None))
            continue
        walk: list[RangeScan] = []
        for scan in scans:  # a file's walk ends in the first range that stops it
            walk.append(scan)
            if scan.stopped:
                break
        rows = pa.Table.from_batches([s.rows for s in walk]).combine_chunks().to_batches()
        batch = rows[0] if rows else None
        joined = RangedFile(name, f.start_offset, f.size, batch, sum(s.messages for s in walk))
        stop = walk[-1]
        if stop.stopped:
            joined.data_end, joined.stop_data_end = stop.data_end, stop.stop_data_end
            joined.beyond = stop.beyond
        elif (last := joined.stop()) is not None:  # records up to the file's end: scan_file's data_end
            joined.data_end = last_nonzero_in_file(f, _u8(f.buffer()), last[1], f.size)
        if stop.stopped:
            _remember_walk(commitlog, f, joined, walk, check_crc, accept_v2)
        if not ended:
            for scan in walk:
                if scan.index is not None:
                    builder.add_part(scan.index)
        status = joined.stop()
        ended = ended or (status is not None and status[0] != "blank")
        out.append(joined)
    return out, builder.build([f.start for f in out], [f.name for f in out]), error
