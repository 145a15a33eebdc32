"""Fast whole-store commitlog scanning with the columnar decoder, and chunked range walks.

* `scan_commitlog` decodes every commitlog file with the columnar decoder (`formats.columnar.decoder`, numba,
  imported on first use) into `store.checks.CommitLogFile`s: the records from position 0 up to the row
  that stops the walk, the last non-zero byte after that row, and - after a rejected record followed by
  more data - the records a resync finds beyond it (what the broker's truncation would throw away).
* `iter_batches` walks a physical range in bounded chunks (dumps and exports of large ranges).
* `records_at` decodes the records at many given positions at once (what `read_message_or_none` gives
  one by one), with named properties (`formats.columnar.properties`).

The quick walks without construct or numba (where recovery ends, the last record, one record's store
time) are `CommitLog` methods over `formats.message.recordcheck`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from formats.columnar.decoder import (
    FAILURE_STATUSES,
    STATUS_NAMES,
    STATUS_OK,
    column_values,
    dictionary_indices,
)
from formats.errors import MqtoolError
from store.log.commitlog import CommitLog, OffsetError
from store.log.mappedfile import MappedFile

_ZERO_CHUNK = 1 << 24


class ScanUnavailable(MqtoolError):
    """The columnar decoder (numba) is not installed."""


def _columnar():
    try:
        from formats.columnar import decoder
    except ImportError as exc:  # pragma: no cover - numba is an optional dependency
        raise ScanUnavailable(f"whole-store scans need numba (pip install 'mqtool[scan]'): {exc}") from exc
    return decoder


def _u8(buf) -> np.ndarray:
    return np.frombuffer(buf, dtype=np.uint8) if len(buf) else np.zeros(0, dtype=np.uint8)


def last_nonzero(data: np.ndarray, start: int, end: int) -> int:
    """Position just after the last non-zero byte of data[start:end], or `start` when all are zero."""
    hi = min(end, len(data))
    while hi > start:
        lo = max(start, hi - _ZERO_CHUNK)
        chunk = data[lo:hi]
        if chunk.any():
            return lo + int(np.flatnonzero(chunk)[-1]) + 1
        hi = lo
    return start


def data_extents(path: Path, start: int, end: int) -> list[tuple[int, int]]:
    """The regions of [start, end) of a file that may hold data (SEEK_DATA / SEEK_HOLE): preallocated
    sparse files are mostly holes, which need not be read. Without hole support: [(start, end)]."""
    if start >= end:
        return []
    if not hasattr(os, "SEEK_DATA"):  # pragma: no cover - not Linux
        return [(start, end)]
    out = []
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return [(start, end)]
    try:
        pos = start
        while pos < end:
            try:
                lo = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole from here to the end of the file
                    break
                return [(start, end)]
            if lo >= end:
                break
            hi = min(os.lseek(fd, lo, os.SEEK_HOLE), end)
            out.append((lo, hi))
            pos = hi
    finally:
        os.close(fd)
    return out


def last_nonzero_in_file(f: MappedFile, data: np.ndarray, start: int, end: int) -> int:
    """`last_nonzero` over a mapped file's bytes, reading only the regions that are not holes."""
    for lo, hi in reversed(data_extents(f.path, start, end)):
        at = last_nonzero(data, lo, hi)
        if at > lo:
            return at
    return start


def relative_name(f: MappedFile, root: Path | None) -> str:
    if root is not None:
        try:
            return str(f.path.relative_to(root))
        except ValueError:
            pass
    return f"{f.path.parent.name}/{f.path.name}"


_FILE_COLUMNS = ("physicalOffset", "totalSize", "physicalOffsetField", "storeTimestamp", "status")


@dataclass
class CommitLogFile:
    """One commitlog file as the checks see it (filled by `scan_file`, or by an audit executor)."""

    name: str  # relative path, e.g. commitlog/00000000000000000000
    start: int
    size: int
    batch: pa.RecordBatch | None  # decode from position 0: ok rows, then the row that stopped the walk
    data_end: int = 0  # position after the last non-zero byte in [stop row, file end), else the stop row
    beyond: pa.RecordBatch | None = None  # records resynchronised after a rejected record
    stop_data_end: int | None = None  # the same inside a rejected record's extent (its written prefix)

    def stop(self) -> tuple[str, int, int] | None:
        """(status, position, totalSize) of the last row, None for an empty file."""
        if self.batch is None or self.batch.num_rows == 0:
            return None
        last = self.batch.num_rows - 1
        status = STATUS_NAMES[int(dictionary_indices(self.batch.column("status"))[last])]
        pos = int(column_values(self.batch.column("physicalOffset"))[last]) - self.start
        total = int(column_values(self.batch.column("totalSize"))[last])
        return status, pos, total

    def slim(self) -> None:
        """Keep only the columns `check_commitlog` reads (drops strings and properties)."""
        if self.batch is not None:
            self.batch = self.batch.select(list(_FILE_COLUMNS))
        if self.beyond is not None:
            self.beyond = self.beyond.select(list(_FILE_COLUMNS))

    def message_count(self) -> int:
        if self.batch is None:
            return 0
        return int(np.count_nonzero(dictionary_indices(self.batch.column("status")) == STATUS_OK))

    def beyond_count(self) -> int:
        if self.beyond is None:
            return 0
        return int(np.count_nonzero(dictionary_indices(self.beyond.column("status")) == STATUS_OK))


# --- whole-store scan -----------------------------------------------------------------------------


def scan_file(
    f: MappedFile,
    *,
    name: str,
    check_crc: bool = True,
    accept_v2: bool = True,
    resync: bool = True,
):
    """Decode one commitlog file from position 0 (see the module docstring)."""
    columnar = _columnar()
    if f.size == 0:
        return CommitLogFile(name, f.start_offset, 0, None)
    buf = f.buffer()
    data = _u8(buf)
    batch = columnar.decode_range(buf, f.start_offset, check_crc=check_crc, accept_v2=accept_v2)
    result = CommitLogFile(name, f.start_offset, f.size, batch)
    stop = result.stop()
    if stop is None:
        return result
    status, pos, total = stop
    result.data_end = last_nonzero_in_file(f, data, pos, f.size)
    if status in FAILURE_STATUSES:
        extent = min(max(total, 8), f.size - pos)
        result.stop_data_end = last_nonzero_in_file(f, data, pos, pos + extent)
        if resync and result.data_end > pos + extent:
            beyond = columnar.decode_resync(
                buf, f.start_offset, pos + 1, check_crc=check_crc, accept_v2=accept_v2
            )
            result.beyond = beyond if beyond.num_rows else None
    elif status == "end" and resync and result.data_end > pos:
        beyond = columnar.decode_resync(
            buf, f.start_offset, pos + 1, check_crc=check_crc, accept_v2=accept_v2
        )
        result.beyond = beyond if beyond.num_rows else None
    return result


def scan_commitlog(
    commitlog: CommitLog,
    *,
    root: Path | None = None,
    check_crc: bool = True,
    accept_v2: bool = True,
    progress: Callable[[int], None] | None = None,
) -> list:
    """Every commitlog file decoded (`store.checks.CommitLogFile` list, in offset order)."""
    out = []
    for f in commitlog.queue.files:
        out.append(scan_file(f, name=relative_name(f, root), check_crc=check_crc, accept_v2=accept_v2))
        if progress is not None:
            progress(f.size)
    return out


# --- chunked range walks (dump / export) ----------------------------------------------------------


def iter_batches(
    commitlog: CommitLog,
    from_offset: int | None = None,
    to_offset: int | None = None,
    *,
    check_crc: bool = False,
    with_body: bool = False,
    accept_v2: bool = True,
    chunk_bytes: int = 64 << 20,
    progress: Callable[[int], None] | None = None,
):
    """Decoded batches of the records in [from_offset, to_offset) in physical order, as the broker walks.

    Each batch covers at most about `chunk_bytes` of one file. The walk ends as `CommitLog.iter_records`
    does: BLANK rows move on to the next file and are yielded; the row that stops the walk (end of data,
    torn or corrupt record) is the last row yielded. `from_offset` must be a record start (checked).
    Yields (MappedFile, RecordBatch).
    """
    columnar = _columnar()
    files = commitlog.files
    if not files:
        return
    if from_offset is None:
        index, pos = 0, 0
    else:
        f = commitlog.queue.find(from_offset)
        if f is None or f not in files:
            commitlog._file_for(from_offset)  # raises OffsetError with the file range
            raise OffsetError(f"physical offset {from_offset} is outside the commitlog files")
        index, pos = files.index(f), from_offset - f.start_offset
        if pos:
            commitlog._check_boundary(f, pos, check_crc)
    while index < len(files):
        f = files[index]
        buf = f.buffer()
        while True:
            end = min(pos + chunk_bytes, f.size)
            batch = columnar.decode_range(
                buf,
                f.start_offset,
                pos,
                end,
                check_crc=check_crc,
                with_body=with_body,
                accept_v2=accept_v2,
            )
            if batch.num_rows == 0:
                if progress is not None:
                    progress(f.size - pos)
                return
            phys = batch.column("physicalOffset").to_numpy()
            if to_offset is not None and phys[-1] >= to_offset:
                keep = int(np.searchsorted(phys, to_offset))
                if keep:
                    yield f, batch.slice(0, keep)
                return
            yield f, batch
            last = batch.num_rows - 1
            status = columnar.STATUS_NAMES[batch.column("status").indices[last].as_py()]
            new_pos = int(phys[last]) - f.start_offset + int(batch.column("totalSize")[last].as_py())
            if progress is not None:
                progress((f.size if status == "blank" else new_pos) - pos)
            if status == "blank":
                break
            if status != "ok":
                return
            pos = new_pos
        index += 1
        pos = 0


# --- records at given positions ------------------------------------------------------------------


@dataclass
class RecordsAt:
    """The records at requested commitlog positions, aligned with the request; `found` False (and the
    other columns 0 / null) where `read_message_or_none` gives None."""

    found: np.ndarray
    store_timestamp: np.ndarray
    topic: pa.Array
    uniq_key: pa.Array
    keys: pa.Array
    properties: dict[str, pa.Array] = field(default_factory=dict)  # the requested names
    # the requested `numbers`: values that are plain digits (formats.property_columns.plain_longs),
    # where they are, and the text of every other value (null where plain or absent)
    numbers: dict[str, tuple[np.ndarray, np.ndarray, pa.Array]] = field(default_factory=dict)
    body: pa.Array | None = None  # with bodies=True: each body's bytes as stored (null where not found)


def records_at(
    commitlog: CommitLog,
    phys: np.ndarray,
    sizes: np.ndarray | None,
    names: Sequence[str] = (),
    *,
    numbers: Sequence[str] = (),
    bodies: bool = False,
    chunk_bytes: int = 64 << 20,
) -> RecordsAt:
    """Decode the records at `phys` (TOTALSIZE must equal `sizes` when given) as `read_message_at`
    checks each (the broker's record check with the body CRC, PHYSICALOFFSET equal to the position),
    with the properties `names` as strings, `numbers` as numbers where plain, and with `bodies` the bodies
    (as stored: a compressed one stays compressed, as `Message.body` keeps it). Each file is walked
    by the columnar decoder (in chunks of about `chunk_bytes`) from the first position not yet resolved
    up to the last one: one walk when the positions are record boundaries, one more from each position
    the walk did not land on."""
    columnar = _columnar()
    from formats.columnar.properties import bytes_at, plain_longs_at, property_positions, strings_at

    phys = np.asarray(phys, np.int64)
    unique, inverse = np.unique(phys, return_inverse=True)
    m = len(unique)
    found = np.zeros(m, bool)
    total = np.zeros(m, np.int64)
    store_ts = np.zeros(m, np.int64)
    rows: list[np.ndarray] = []  # indexes into `unique` of each piece's rows
    pieces: dict[str, list[pa.Array]] = {c: [] for c in ("topic", "uniqKey", "keys", *names, *numbers)}
    body_pieces: list[pa.Array] = []
    parsed: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in numbers}
    resolved = np.zeros(m, bool)
    for f in commitlog.files:
        lo, hi = np.searchsorted(unique, [f.start_offset, f.start_offset + f.size])
        if lo == hi:
            continue
        buf = f.buffer()
        data = _u8(buf)
        pos: int | None = None  # where the next walk starts: a record boundary
        while True:
            todo = lo + np.flatnonzero(~resolved[lo:hi])
            if not len(todo):
                break
            if pos is None or pos > int(unique[todo[-1]]) - f.start_offset:
                pos = int(unique[todo[0]]) - f.start_offset
                resolved[todo[0]] = True  # the walk's first row is the verdict there (none: no record)
            last = int(unique[todo[-1]]) - f.start_offset + 1
            end = min(pos + chunk_bytes, last)
            batch = columnar.decode_range(buf, f.start_offset, pos, end, check_crc=True)
            at = batch.column("physicalOffset").to_numpy()
            hit = np.minimum(np.searchsorted(unique, at), m - 1)
            here = unique[hit] == at
            resolved[hit[here]] = True  # the record check's verdict at those positions
            status = columnar._status_codes(batch)
            ok = (status == columnar.STATUS_OK) & here
            keep = np.flatnonzero(ok & (batch.column("physicalOffsetField").to_numpy() == at))
            sizes_here = batch.column("totalSize").to_numpy().astype(np.int64)
            # all accepted and the chunk ended before the last position: the next walk takes over
            handover = batch.num_rows and end < last and bool((status == columnar.STATUS_OK).all())
            pos = int(at[-1]) - f.start_offset + int(sizes_here[-1]) if handover else None
            if not len(keep):
                continue
            idx = hit[keep]
            found[idx] = True
            total[idx] = sizes_here[keep]
            store_ts[idx] = batch.column("storeTimestamp").to_numpy()[keep]
            take = pa.array(keep)
            rows.append(idx)
            pieces["topic"].append(batch.column("topic").take(take).cast(pa.string()))
            pieces["uniqKey"].append(batch.column("uniqKey").take(take))
            pieces["keys"].append(batch.column("keys").take(take))
            if bodies:
                body_at = batch.column("bodyOffset").to_numpy()[keep].astype(np.int64)
                body_len = batch.column("bodyLength").to_numpy()[keep].astype(np.int64)
                body_pieces.append(bytes_at(data, body_at, body_len))
            if names or numbers:
                lens = _view_lengths(batch.column("properties"))[keep]
                starts = at[keep] - f.start_offset + sizes_here[keep] - lens
                vpos, vlen = property_positions(data, starts, lens, [*names, *numbers])
                for i, name in enumerate(names):
                    pieces[name].append(strings_at(data, vpos[i], vlen[i]))
                for i, name in enumerate(numbers, start=len(names)):
                    values, plain = plain_longs_at(data, vpos[i], vlen[i])
                    parsed[name].append((values, plain))
                    pieces[name].append(strings_at(data, vpos[i], np.where(plain > 0, -1, vlen[i])))
    wanted = found[inverse]
    if sizes is not None:
        wanted &= total[inverse] == np.asarray(sizes, np.int64)
    # each piece's rows to their places in the request; the appended null fills the rest
    filled = sum(len(r) for r in rows)
    where = np.full(m, filled, np.int64)
    if rows:
        where[np.concatenate(rows)] = np.arange(filled)
    order = np.where(wanted, where[inverse], filled)
    in_order = len(order) == filled and bool((order == np.arange(filled)).all())
    columns = {
        name: _placed(pa.concat_arrays([*parts, pa.nulls(1, pa.string())]), order, in_order)
        for name, parts in pieces.items()
    }
    result = RecordsAt(
        wanted,
        np.where(wanted, store_ts[inverse], 0),
        columns.pop("topic"),
        columns.pop("uniqKey"),
        columns.pop("keys"),
    )
    for name in numbers:
        values = np.concatenate([np.zeros(0, np.int64), *(v for v, _ in parsed[name]), [0]])
        plain = np.concatenate([np.zeros(0, np.uint8), *(p for _, p in parsed[name]), [0]])
        result.numbers[name] = (values[order], plain[order], columns.pop(name))
    result.properties = columns
    if bodies:
        result.body = _placed(pa.concat_arrays([*body_pieces, pa.nulls(1, pa.binary())]), order, in_order)
    return result


def _placed(values: pa.Array, order: np.ndarray, in_order: bool) -> pa.Array:
    """values.take(order), without the copy when the rows are already in place."""
    return values.slice(0, len(order)) if in_order else values.take(pa.array(order))


def _view_lengths(col: pa.Array) -> np.ndarray:
    """Lengths of a binary_view column's values (0 where null)."""
    views = np.frombuffer(col.buffers()[1], np.int32, count=4 * len(col), offset=16 * col.offset)
    lens = views[::4].astype(np.int64)
    bitmap = col.buffers()[0]
    if bitmap is not None:
        bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
        lens[~bits[col.offset : col.offset + len(col)].astype(bool)] = 0
    return lens


__all__ = [
    "RecordsAt",
    "ScanUnavailable",
    "records_at",
    "iter_batches",
    "data_extents",
    "last_nonzero",
    "last_nonzero_in_file",
    "relative_name",
    "scan_commitlog",
    "scan_file",
]
