"""Fast whole-store commitlog scanning, and quick looks that avoid the construct decoder.

* `scan_commitlog` decodes every commitlog file with the columnar decoder (`formats.columnar`, numba,
  imported on first use) into `store.checks.CommitLogFile`s: the records from position 0 up to the row
  that stops the walk, the last non-zero byte after that row, and - after a rejected record followed by
  more data - the records a resync finds beyond it (what the broker's truncation would throw away).
* `iter_batches` walks a physical range in bounded chunks (dumps and exports of large ranges).
* `valid_end_fast` / `last_record` find where the broker's recovery ends and the last record before it,
  walking the size chain with struct reads and the broker's header checks (CRC optional), no construct;
  `store_time_at` reads one record's STORETIMESTAMP. These import neither numba nor pyarrow, so `info`,
  `query` and the reset planner stay fast.
"""

from __future__ import annotations

import errno
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from formats.errors import MqtoolError
from formats.structs import (
    BLANK_MAGIC,
    BORNHOST_V6_FLAG,
    MAGIC_V1,
    MAGIC_V2,
    STOREHOSTADDRESS_V6_FLAG,
)
from store.commitlog import CommitLog, OffsetError
from store.mappedfile import MappedFile

_PRELUDE = struct.Struct(">ii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# TOTALSIZE .. BORNTIMESTAMP (48 bytes): total, magic, bodyCRC, queueId, flag, queueOffset, phys,
# sysFlag, born
_FIXED = struct.Struct(">iiiiiqqiq")
_SCHEDULE_TOPIC = b"SCHEDULE_TOPIC_XXXX"
_ZERO_CHUNK = 1 << 24


class ScanUnavailable(MqtoolError):
    """The columnar decoder (numba) is not installed."""


def _columnar():
    try:
        from formats import columnar
    except ImportError as exc:  # pragma: no cover - numba is an optional dependency
        raise ScanUnavailable(f"whole-store scans need numba (pip install 'mqtool[scan]'): {exc}") from exc
    return columnar


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
    from store.checks import FAILURE_KIND, CommitLogFile

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
    if status in FAILURE_KIND:
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


# --- quick looks without construct or numba -------------------------------------------------------


@dataclass(frozen=True)
class RecordHead:
    """The fixed fields of one accepted record (what `info`, `query` and the reset planner need)."""

    physical_offset: int
    total_size: int
    queue_id: int
    queue_offset: int
    physical_offset_field: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    topic: str


@dataclass(frozen=True)
class WalkEnd:
    """Where a walk stopped: the valid end, why, and the last accepted record before it."""

    valid_end: int
    reason: str  # end | blank (no next file) | bad_magic | truncated | size_mismatch | crc_mismatch | ...
    last: RecordHead | None


def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def check_head(buf, n: int, pos: int, check_crc: bool, accept_v2: bool) -> tuple[str, int, tuple | None]:
    """The broker's check (`checkMessageAndReturnSize`, FORMATS §2.9) on the record at buf[pos:], with
    struct reads. Returns (status, TOTALSIZE, fields) with status ok / blank / end / bad_magic / truncated /
    size_mismatch / crc_mismatch / bad_property; fields = (queueId, queueOffset, phys, sysFlag, born,
    store, topic bytes) for ok."""
    rem = n - pos
    if rem < 8:
        return ("end" if not any(bytes(buf[pos:n])) else "truncated"), 0, None
    total, magic = _PRELUDE.unpack_from(buf, pos)
    if rem - 4 < _wrap32(total - 4):
        return "truncated", total, None
    if magic == MAGIC_V1:
        tls = 1
    elif magic == MAGIC_V2 and accept_v2:
        tls = 2
    elif magic == BLANK_MAGIC:
        return "blank", total, None
    elif magic == 0 and total == 0:
        return "end", 0, None
    else:
        return "bad_magic", total, None
    if total < 0:
        return "size_mismatch", total, None
    if pos + 48 > n:
        return "truncated", total, None
    _, _, body_crc, queue_id, _, queue_offset, phys, sys_flag, born = _FIXED.unpack_from(buf, pos)
    bl = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    sl = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    if bl > total or sl > total:
        return "size_mismatch", total, None
    p = pos + 48 + bl + 8 + sl + 16
    if p > n:
        return "truncated", total, None
    store_ts = _I64.unpack_from(buf, pos + 48 + bl)[0]
    body_len = _I32.unpack_from(buf, p - 4)[0]
    if body_len > 0:
        if body_len > total:
            return "size_mismatch", total, None
        if p + body_len > n:
            return "truncated", total, None
        if check_crc and (zlib.crc32(buf[p : p + body_len]) & 0x7FFFFFFF) != body_crc:
            return "crc_mismatch", total, None
        p += body_len
    if p + tls > n:
        return "truncated", total, None
    topic_len = struct.unpack_from(">b" if tls == 1 else ">h", buf, p)[0]
    p += tls
    if topic_len < 0 or topic_len > total:
        return "size_mismatch", total, None
    if p + topic_len > n:
        return "truncated", total, None
    topic = bytes(buf[p : p + topic_len])
    p += topic_len
    if p + 2 > n:
        return "truncated", total, None
    props_len = _I16.unpack_from(buf, p)[0]
    p += 2
    if props_len > 0:
        if props_len > total:
            return "size_mismatch", total, None
        if p + props_len > n:
            return "truncated", total, None
        if topic == _SCHEDULE_TOPIC and not _delay_ok(bytes(buf[p : p + props_len])):
            return "bad_property", total, None
    if total != _wrap32(74 + bl + sl + max(body_len, 0) + tls + topic_len + max(props_len, 0)):
        return "size_mismatch", total, None
    return "ok", total, (queue_id, queue_offset, phys, sys_flag, born, store_ts, topic)


def _delay_ok(raw: bytes) -> bool:
    from formats.commitlog import java_parse_int
    from formats.properties import PROPERTY_DELAY_TIME_LEVEL, decode_properties

    delay = decode_properties(raw).get(PROPERTY_DELAY_TIME_LEVEL)
    return delay is None or java_parse_int(delay) is not None


def _head(phy: int, total: int, fields: tuple) -> RecordHead:
    queue_id, queue_offset, phys, sys_flag, born, store_ts, topic = fields
    return RecordHead(
        phy, total, queue_id, queue_offset, phys, sys_flag, born, store_ts, topic.decode("utf-8", "replace")
    )


def recovery_start_offset(commitlog: CommitLog) -> int | None:
    """Where normal recovery starts walking (4.9.x, 5.0-5.3.1): the third-from-last file."""
    files = commitlog.files
    return files[max(0, len(files) - 3)].start_offset if files else None


def walk_end(
    commitlog: CommitLog,
    from_offset: int | None = None,
    *,
    check_crc: bool = False,
    accept_v2: bool = True,
) -> WalkEnd:
    """Walk the size chain from `from_offset` (default: where normal recovery starts) with the broker's
    header checks, as recovery does: BLANK -> next file, the first rejected record or zeros -> stop.

    CRC is off by default (the broker checks it: pass check_crc=True for its exact end; a CRC-only
    corruption is rare and `mqtool verify` finds it). `from_offset` must be a record start.
    """
    files = commitlog.files
    if not files:
        return WalkEnd(0, "empty", None)
    if from_offset is None:
        from_offset = files[max(0, len(files) - 3)].start_offset
    f = commitlog.queue.find(from_offset)
    if f is None or f not in files:
        commitlog._file_for(from_offset)
    index = files.index(f)
    pos = from_offset - f.start_offset
    last_at: tuple[int, int, tuple] | None = None
    while True:
        f = files[index]
        buf = f.buffer()
        n = f.size
        while True:
            status, total, fields = check_head(buf, n, pos, check_crc, accept_v2)
            if status == "ok":
                last_at = (f.start_offset + pos, total, fields)  # type: ignore[assignment]
                pos += total
                continue
            break
        last = None if last_at is None else _head(*last_at)
        if status != "blank":
            return WalkEnd(f.start_offset + pos, status, last)
        index += 1
        if index >= len(files):
            return WalkEnd(f.start_offset + pos, "blank", last)
        pos = 0


def valid_end_fast(
    commitlog: CommitLog, from_offset: int | None = None, *, check_crc: bool = False, accept_v2: bool = True
) -> int:
    """Physical offset where the broker's recovery would end the commitlog (see `walk_end`)."""
    return walk_end(commitlog, from_offset, check_crc=check_crc, accept_v2=accept_v2).valid_end


def last_record(
    commitlog: CommitLog, *, check_crc: bool = False, accept_v2: bool = True
) -> RecordHead | None:
    """The last accepted record before the valid end; walks earlier files only when the recovery start
    file holds none (then the whole log from its first file)."""
    end = walk_end(commitlog, check_crc=check_crc, accept_v2=accept_v2)
    if end.last is not None or not commitlog.files:
        return end.last
    return walk_end(commitlog, commitlog.files[0].start_offset, check_crc=check_crc, accept_v2=accept_v2).last


def first_record(commitlog: CommitLog) -> RecordHead | None:
    """The first accepted record of the first file (None when it holds none)."""
    files = commitlog.files
    if not files:
        return None
    f = files[0]
    status, total, fields = check_head(f.buffer(), f.size, 0, False, True)
    return _head(f.start_offset, total, fields) if status == "ok" else None


def store_time_at(commitlog: CommitLog, phy_offset: int, size: int | None = None) -> int | None:
    """STORETIMESTAMP of the message record starting at `phy_offset` (at 56, or 68 with an IPv6 born
    host), or None when no message record starts there (outside the files, not a message magic, TOTALSIZE
    != `size` when given). A header check only: no CRC, no size chain."""
    f = commitlog.queue.find(phy_offset)
    if f is None:
        return None
    pos = phy_offset - f.start_offset
    if pos + 64 > f.size:
        return None
    buf = f.buffer()
    total, magic = _PRELUDE.unpack_from(buf, pos)
    if magic not in (MAGIC_V1, MAGIC_V2) or total < 64 or (size is not None and total != size):
        return None
    sys_flag = _I32.unpack_from(buf, pos + 36)[0]
    at = pos + (68 if sys_flag & BORNHOST_V6_FLAG else 56)
    if at + 8 > f.size:
        return None
    return _I64.unpack_from(buf, at)[0]


__all__ = [
    "RecordHead",
    "ScanUnavailable",
    "WalkEnd",
    "check_head",
    "first_record",
    "iter_batches",
    "data_extents",
    "last_nonzero",
    "last_nonzero_in_file",
    "last_record",
    "recovery_start_offset",
    "relative_name",
    "scan_commitlog",
    "scan_file",
    "store_time_at",
    "valid_end_fast",
    "walk_end",
]
