"""Dispatch like ReputMessageService: ConsumeQueue units, IndexFile entries, the checkpoint.

For every commitlog record the broker dispatches (`CommitLogDispatcherBuildConsumeQueue` +
`CommitLogDispatcherBuildIndex`, FORMATS §4.2-§4.4, §5.5-§5.8) this module produces the same bytes:

* `ConsumeQueueWriter` is `ConsumeQueue.putMessagePositionInfo` for one queue: the "build consume queue
  repeatedly" skips (`offset + size <= maxPhysicOffset`, queue offset below the write position), the
  `[BUG]logic queue order` case (the unit goes to the write position), new full-size sparse files named
  by the next start offset, and `fillPreBlank` when the first file of a queue is created for a non-zero
  queue offset. Its starting state is what `ConsumeQueue.recover()` leaves: write position = end of the
  valid units, maxPhysicOffset = end of the last valid unit (a filler counts: the broker's quirk).
* `IndexWriter` is `IndexService.buildIndex` + `IndexFile.putKey` on an in-memory overlay of the last
  index file (header, slot table, new entries), so even the default 420 MB geometry costs only its slot
  table (20 MB) in memory. New files are created when none exists or the last one is full - eagerly, at
  the next dispatched record, as `getAndCreateLastIndexFile` does - named by the (injected) clock as
  `yyyyMMddHHmmssSSS`, with begin/end copied from the previous file's end (the §5.5 quirk). The byte
  layout is tested against `formats.indexfile.IndexFile.put_key` / `store.index.IndexService.build_index`.
* `Dispatcher` feeds both and `commit()` writes them in the order the crash rules need (see
  `store.appender` for the whole argument): ConsumeQueue units (fsync), then index files (fsync), and
  returns what the checkpoint must say; `write_checkpoint` writes it.

Writes are plain `pwrite`s on full-size files; new mapped files are created as sparse files under a
temporary name in the store root (never inside a mapped-file directory, FORMATS §1.4) and linked into
place. Every state-changing call passes `write_done()`, the crash-test hook: with the environment
variable MQTOOL_CRASH_AFTER_WRITES=N the process SIGKILLs itself after its N-th write call.
"""

from __future__ import annotations

import array
import contextlib
import errno
import os
import signal
import struct
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from pathlib import Path

import numpy as np

from formats.checkpoint import CHECKPOINT_FILE_SIZE, StoreCheckpoint, decode_checkpoint, encode_checkpoint
from formats.commitlog import (
    DEFAULT_DELAY_LEVELS_MS,
    SCHEDULE_TOPIC,
    Blank,
    EndOfData,
    Message,
    Record,
    decode_record,
    deliver_tags_code,
    java_parse_int,
)
from formats.consumequeue import DEFAULT_CQ_FILE_SIZE, FILLER_PHY_OFFSET, FILLER_SIZE
from formats.errors import FormatError, MqtoolError
from formats.indexfile import (
    ENTRY_SIZE,
    HEADER_SIZE,
    SLOT_SIZE,
    IndexGeometry,
    IndexHeader,
    decode_header,
)
from formats.javahash import index_key_hash, java_string_hash
from formats.javahash import tags_code as tags_code_of
from formats.properties import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    decode_properties,
)
from formats.structs import (
    BORNHOST_V6_FLAG,
    CQ_STORE_UNIT_SIZE,
    MAGIC_V1,
    MAGIC_V2,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from store.commitlog import CommitLog
from store.consumequeue import ConsumeQueue, ConsumeQueueStore, is_rocksdb_dir
from store.mappedfile import MappedFileQueue, offset_to_file_name

CRASH_ENV = "MQTOOL_CRASH_AFTER_WRITES"
TMP_PREFIX = ".mqtool-tmp-"
"""Temporary files and staging directories live in the store root under this prefix (never inside
commitlog/, consumequeue/ or index/), and are removed by the next writer (`remove_leftovers`)."""

UNIT = CQ_STORE_UNIT_SIZE
_UNIT = struct.Struct(">qiq")
_ENTRY = struct.Struct(">iqii")
_FILLER = _UNIT.pack(FILLER_PHY_OFFSET, FILLER_SIZE, 0)
_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)


class DispatchError(MqtoolError):
    """A ConsumeQueue or index file that cannot be written as the broker would write it."""


# --- write calls and the crash-test hook -----------------------------------------------------------


def _crash_budget_from_env() -> int | None:
    value = os.environ.get(CRASH_ENV)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return None


_crash_budget: list[int | None] = [_crash_budget_from_env()]


def set_crash_after(writes: int | None) -> None:
    """Arm (or with None disarm) the crash hook in-process: SIGKILL after that many more write calls."""
    _crash_budget[0] = writes


def write_done() -> None:
    """Count one state-changing call; with MQTOOL_CRASH_AFTER_WRITES=N, the N-th one kills the process."""
    budget = _crash_budget[0]
    if budget is None:
        return
    budget -= 1
    _crash_budget[0] = budget
    if budget <= 0:
        os.kill(os.getpid(), signal.SIGKILL)


def fd_path(fd: int) -> str:
    """The path an open descriptor refers to (for error messages: fd-based calls name no file)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"file descriptor {fd}"


def named(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """`exc` naming `path` when it names no file (ENOSPC from a pwrite, say), so the error line can."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


def pwrite_all(fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
    """`pwrite` every byte of `data` at `offset` (one write call for the crash hook)."""
    view = memoryview(data)
    try:
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
    except OSError as exc:
        raise named(exc, fd_path(fd)) from exc
    write_done()


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def temp_path(scratch: Path, name: str) -> Path:
    return scratch / f"{TMP_PREFIX}{os.getpid()}-{name}"


def create_sparse_file(
    path: Path, size: int, scratch: Path, content: Iterable[tuple[int, bytes]] = ()
) -> None:
    """Create `path` as a full-size sparse file (optionally with some bytes written), atomically.

    The file is made under a temporary name in `scratch` (the store root), filled, fsynced, then
    hard-linked to its final name, which fails rather than replacing an existing file; a crash leaves
    either no file or the whole file at `path` (plus a temporary file the next writer removes).
    """
    tmp = temp_path(scratch, path.name)
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, size)
        write_done()
        for offset, data in content:
            pwrite_all(fd, data, offset)
        os.fsync(fd)
    except OSError as exc:  # no space, say: no half-made temporary file is left behind
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise named(exc, path) from exc
    else:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        os.unlink(tmp)
        raise DispatchError("file appeared while being created", str(path)) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if path.exists():
            os.unlink(tmp)
            raise DispatchError("file appeared while being created", str(path)) from None
        os.rename(tmp, path)  # no hard links on this file system
        write_done()
        fsync_dir(path.parent)
        return
    write_done()
    fsync_dir(path.parent)
    os.unlink(tmp)
    write_done()


def replace_file(tmp: Path, path: Path) -> None:
    """Atomically put `tmp` in place of `path` (`rename` replaces), then sync the directory."""
    os.replace(tmp, path)
    write_done()
    fsync_dir(path.parent)


SWAP_NOTE = "SWAPPING-"
"""A file `SWAPPING-<name>` in a staging directory: `<name>` of the store root is being replaced by two
renames, and `<name>.old` beside the note is the previous directory until the swap completes."""


def restore_interrupted_swaps(root: Path) -> list[str]:
    """Put back directories a killed two-rename swap took out of the store root (see store.rebuild)."""
    restored: list[str] = []
    if not root.is_dir():
        return restored
    for staging in os.scandir(root):
        if not (staging.name.startswith(TMP_PREFIX) and staging.is_dir(follow_symlinks=False)):
            continue
        for entry in os.scandir(staging.path):
            if not entry.name.startswith(SWAP_NOTE):
                continue
            name = entry.name[len(SWAP_NOTE) :]
            target, old = root / name, Path(staging.path) / (name + ".old")
            if not target.exists() and old.exists():
                os.rename(old, target)
                fsync_dir(root)
                restored.append(name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    return restored


def remove_leftovers(root: Path) -> list[Path]:
    """Delete temporary files and directories an interrupted mqtool writer left in the store root,
    after putting back any directory an interrupted swap had moved out."""
    import shutil

    restore_interrupted_swaps(root)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in os.scandir(root):
        if not entry.name.startswith(TMP_PREFIX):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        removed.append(path)
    return removed


class FileSet:
    """Read-write descriptors of the files one phase writes, fsynced and closed together."""

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}

    def fd(self, path: Path) -> int:
        fd = self._fds.get(path)
        if fd is None:
            try:
                fd = os.open(path, os.O_RDWR)
            except OSError as exc:
                raise DispatchError(f"cannot open for writing: {exc.strerror}", str(path)) from exc
            self._fds[path] = fd
        return fd

    def sync_and_close(self) -> None:
        try:
            for fd in self._fds.values():
                os.fsync(fd)
        finally:
            self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def last_nonzero_end(path: Path, start: int, end: int) -> int:
    """One past the last non-zero byte of `path` in [start, end), or `start` when that range is all zero.

    Holes of a sparse file are skipped with SEEK_DATA, so a pre-allocated file costs nothing.
    """
    if end <= start:
        return start
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            data_at = os.lseek(fd, start, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return start  # nothing but a hole after `start`
            data_at = start
        if data_at >= end:
            return start
        chunk = 1 << 22
        hi = end
        while hi > data_at:
            lo = max(data_at, hi - chunk)
            kept = len(os.pread(fd, hi - lo, lo).rstrip(b"\0"))
            if kept:
                return lo + kept
            hi = lo
        return start
    finally:
        os.close(fd)


# --- dispatch requests -----------------------------------------------------------------------------


@dataclass(slots=True)
class DispatchRequest:
    """What `CommitLog.checkMessageAndReturnSize` hands the dispatchers for one record (FORMATS §2.9)."""

    topic: str
    queue_id: int
    commit_log_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int

    @classmethod
    def from_message(
        cls, msg: Message, delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS
    ) -> DispatchRequest:
        return cls(
            topic=msg.topic,
            queue_id=msg.queue_id,
            commit_log_offset=msg.physical_offset,
            msg_size=msg.total_size,
            tags_code=msg.tags_code(delay_levels),
            store_timestamp=msg.store_timestamp,
            consume_queue_offset=msg.queue_offset,
            keys=msg.keys,
            uniq_key=msg.uniq_key,
            sys_flag=msg.sys_flag,
        )

    @property
    def goes_to_consume_queue(self) -> bool:
        """`CommitLogDispatcherBuildConsumeQueue`: NOT_TYPE and COMMIT records only."""
        return self.sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


# --- reading records for dispatch ------------------------------------------------------------------

_FIXED = struct.Struct(">iiiiiqqi")  # TOTALSIZE .. SYSFLAG (40 bytes)
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")


def dispatch_tags_code(
    topic: str, properties: dict[str, str], store_timestamp: int, delay_levels: tuple[int, ...]
) -> int | None:
    """The ConsumeQueue tags code of a record (FORMATS §4.3): TAGS hash, or on SCHEDULE_TOPIC_XXXX with
    a DELAY level > 0 the delivery time. None when DELAY is not an int (the broker's check fails)."""
    code = tags_code_of(properties.get(PROPERTY_TAGS))
    if topic == SCHEDULE_TOPIC:
        delay = properties.get(PROPERTY_DELAY_TIME_LEVEL)
        if delay is not None:
            if java_parse_int(delay) is None:
                return None
            deliver = deliver_tags_code(store_timestamp, delay, delay_levels)
            if deliver is not None:
                code = deliver
    return code


def _fast_request(
    buf, pos: int, start: int, check_crc: bool, accept_v2: bool, delay_levels, light: bool = False
) -> DispatchRequest | None:
    """The DispatchRequest of a plain valid record at `pos`, or None to let `decode_record` decide.

    Only the common shape is handled here (every length in range, body CRC right, UTF-8 topic, and on
    the schedule topic a parsable DELAY); anything else - a failure, a quirk the broker tolerates - goes
    to the full check. Tested equal to `DispatchRequest.from_message(decode_record(...))`. `light`
    checks the record the same way but leaves the properties undecoded (keys, uniq key None, tags code 0)
    except on the schedule topic, where DELAY decides validity.
    """
    size = len(buf)
    if pos + 40 > size:
        return None
    total, magic, body_crc, queue_id, _flag, queue_offset, phy, sys_flag = _FIXED.unpack_from(buf, pos)
    if magic != MAGIC_V1 and (magic != MAGIC_V2 or not accept_v2):
        return None
    if total <= 40 or pos + total > size:
        return None
    p = pos + 48 + (20 if sys_flag & BORNHOST_V6_FLAG else 8)
    store_ts = _I64.unpack_from(buf, p)[0]
    p += 8 + (20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8) + 12
    end = pos + total
    if p + 4 > end:
        return None
    body_len = _I32.unpack_from(buf, p)[0]
    p += 4
    if body_len < 0 or p + body_len + 3 > end:
        return None
    if check_crc and body_len and (zlib.crc32(buf[p : p + body_len]) & 0x7FFFFFFF) != body_crc:
        return None
    p += body_len
    if magic == MAGIC_V1:
        topic_len = _I8.unpack_from(buf, p)[0]
        p += 1
    else:
        topic_len = _I16.unpack_from(buf, p)[0]
        p += 2
    if topic_len < 0 or p + topic_len + 2 > end:
        return None
    try:
        topic = bytes(buf[p : p + topic_len]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    p += topic_len
    props_len = _I16.unpack_from(buf, p)[0]
    p += 2
    if props_len < 0 or p + props_len != end:
        return None
    if light and topic != SCHEDULE_TOPIC:
        return DispatchRequest(topic, queue_id, phy, total, 0, store_ts, queue_offset, None, None, sys_flag)
    props = decode_properties(bytes(buf[p:end])) if props_len else {}
    tags_code = dispatch_tags_code(topic, props, store_ts, delay_levels)
    if tags_code is None:
        return None
    return DispatchRequest(
        topic,
        queue_id,
        phy,
        total,
        tags_code,
        store_ts,
        queue_offset,
        props.get(PROPERTY_KEYS),
        props.get(PROPERTY_UNIQ_KEY),
        sys_flag,
    )


def iter_dispatch(
    commitlog: CommitLog,
    *,
    from_file: int = 0,
    check_crc: bool = True,
    accept_v2: bool = True,
    delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS,
    light: bool = False,
) -> Iterator[DispatchRequest | Record]:
    """`CommitLog.iter_records` from the start of file number `from_file`, with every valid message
    turned into its DispatchRequest (fast path) and BLANK / the final stop record passed through.
    `light`: only what checking the records needs (see `_fast_request`)."""
    files = commitlog.files[from_file:]
    if not files:
        yield EndOfData(0, "the commitlog has no files")
        return
    record: Record | None = None
    for f in files:
        buf = f.buffer()
        pos = 0
        start = f.start_offset
        path = str(f.path)
        while True:
            req = _fast_request(buf, pos, start, check_crc, accept_v2, delay_levels, light)
            if req is not None:
                yield req
                pos += req.msg_size
                continue
            record = decode_record(buf, pos, start, check_crc=check_crc, accept_v2=accept_v2, file=path)
            if isinstance(record, Message):
                yield DispatchRequest.from_message(record, delay_levels)
                pos += record.total_size
                continue
            yield record
            if isinstance(record, Blank):
                break
            return
    assert record is not None
    yield EndOfData(record.physical_offset, "the last file ends with a BLANK record and no file follows")


# --- ConsumeQueue ----------------------------------------------------------------------------------


class ConsumeQueueWriter:
    """`ConsumeQueue.putMessagePositionInfo` for one queue, over its directory under `cq_root`."""

    def __init__(self, cq_root: Path, topic: str, queue_id: int, file_size: int) -> None:
        if file_size <= 0 or file_size % UNIT:
            raise DispatchError(f"ConsumeQueue file size {file_size} is not a positive multiple of {UNIT}")
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.directory = cq_root / topic / str(queue_id)
        self.warnings: list[str] = []
        if cq_root.name != "consumequeue":
            raise DispatchError("ConsumeQueue root must be a directory named consumequeue", str(cq_root))
        queue = ConsumeQueue(cq_root.parent, topic, queue_id, commitlog_min_offset=0, file_size=file_size)
        try:
            self._check_files(queue)
            self.write_end = queue.max_position if queue.files else 0
            # recover() keeps the files starting at or before the end and deletes the others
            self.file_starts: list[int] = [f.start_offset for f in queue.live_files]
            for f in queue.files:
                if f.start_offset > self.write_end and last_nonzero_end(f.path, 0, f.size) > 0:
                    raise DispatchError(
                        "ConsumeQueue file after the end of the valid units holds data (the broker deletes "
                        "it at its next start); remove it or start the broker once",
                        str(f.path),
                    )
            self.max_physic_offset = -1
            self.last_unit_end = -1  # end of the last unit that is not a filler
            if self.file_starts:
                scan_start = queue.files[max(0, len(queue.files) - 3)].start_offset
                if self.write_end - UNIT >= scan_start:
                    last = queue.unit_at(self.write_end - UNIT)
                    assert last is not None
                    self.max_physic_offset = last.phy_offset + last.size
                    if not last.is_filler:
                        self.last_unit_end = self.max_physic_offset
        finally:
            queue.close()
        # Non-zero bytes after the write end in its file would be read as units once the gap before
        # them is filled: they are zeroed before the first new unit is written.
        self._stale: tuple[int, int, int] | None = None  # (file start, position, length)
        holder = next((f for f in self.file_starts if f <= self.write_end < f + file_size), None)
        if holder is not None:
            position = self.write_end - holder
            end = last_nonzero_end(self.directory / offset_to_file_name(holder), position, file_size)
            if end > position:
                self._stale = (holder, position, end - position)
        self.first_create = not self.file_starts
        self.min_logic_offset: int | None = None
        self._pending = bytearray()
        self._pending_start = self.write_end
        self.units_written = 0

    def _check_files(self, queue: ConsumeQueue) -> None:
        for f in queue.files:
            if f.size != self.file_size:
                raise DispatchError(
                    f"file is {f.size} bytes but the ConsumeQueue file size is {self.file_size}", str(f.path)
                )
        for a, b in zip(queue.files, queue.files[1:], strict=False):
            if b.start_offset != a.start_offset + self.file_size:
                raise DispatchError(
                    "ConsumeQueue files are not consecutive (a file is missing in the middle)", str(b.path)
                )

    @property
    def max_offset(self) -> int:
        """The next queue offset the broker would assign (`getMaxOffsetInQueue`)."""
        return self.write_end // UNIT

    def put(self, phy_offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """One unit, as `putMessagePositionInfo`; False when the broker would skip it as a repeat."""
        if phy_offset + size <= self.max_physic_offset:
            return False
        expect = cq_offset * UNIT
        fs = self.file_size
        if not self.file_starts:
            start = expect - expect % fs
            self.file_starts.append(start)
            self.write_end = start
            self._pending_start = start
        elif self.write_end >= self.file_starts[-1] + fs:  # the last file is full
            self.file_starts.append(self.file_starts[-1] + fs)
        if self.first_create and cq_offset != 0 and self.write_end == self.file_starts[-1]:
            # fillPreBlank: the queue's first file starts below this unit
            self.min_logic_offset = expect
            for _ in range((expect % fs) // UNIT):
                self._pending += _FILLER
                self.write_end += UNIT
        self.first_create = False
        if cq_offset != 0:
            if expect < self.write_end:
                return False  # "Build consume queue repeatedly"
            if expect != self.write_end:
                self.warnings.append(
                    f"{self.topic}/{self.queue_id}: queue offset {cq_offset} but the queue ends at "
                    f"{self.write_end // UNIT} (the broker logs '[BUG]logic queue order maybe wrong' and "
                    "writes the unit at the end)"
                )
        self.max_physic_offset = self.last_unit_end = phy_offset + size
        self._pending += _UNIT.pack(phy_offset, size, tags_code)
        self.write_end += UNIT
        self.units_written += 1
        return True

    @property
    def has_pending(self) -> bool:
        return bool(self._pending) or self._stale is not None

    @property
    def pending_units(self) -> int:
        return len(self._pending) // UNIT

    def flush(self, files: FileSet, scratch: Path) -> None:
        """Write the pending units (new files first created full-size and sparse), then forget them."""
        if not self.has_pending:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        if self._stale is not None:
            file_start, position, length = self._stale
            self._write(files, scratch, file_start, position, bytes(length))
            self._stale = None
        pos = self._pending_start
        data = memoryview(self._pending)
        fs = self.file_size
        while data:
            start = pos - pos % fs
            take = min(len(data), start + fs - pos)
            self._write(files, scratch, start, pos - start, data[:take])
            data = data[take:]
            pos += take
        self._pending = bytearray()
        self._pending_start = self.write_end

    def _write(self, files: FileSet, scratch: Path, file_start: int, position: int, data) -> None:
        path = self.directory / offset_to_file_name(file_start)
        if not path.exists():
            create_sparse_file(path, self.file_size, scratch, [(position, bytes(data))])
            return
        pwrite_all(files.fd(path), data, position)


# --- IndexFile ------------------------------------------------------------------------------------


def index_file_name(ms: int, zone: tzinfo | None) -> str:
    """`UtilAll.timeMillisToHumanString`: yyyyMMddHHmmssSSS in the broker's time zone (local by default)."""
    seconds = ms // 1000
    dt = datetime.fromtimestamp(seconds, zone) if zone else datetime.fromtimestamp(seconds)
    return dt.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"


def _name_ms(name: str, zone: tzinfo | None) -> int | None:
    try:
        dt = datetime.strptime(name[:14], "%Y%m%d%H%M%S")
    except ValueError:
        return None
    dt = dt.replace(tzinfo=zone) if zone else dt
    return int(dt.timestamp()) * 1000 + int(name[14:17] or 0)


def list_index_files(directory: Path) -> list[str]:
    """Index file names in load order (names that are longs, sorted; FORMATS §5.1)."""
    if not directory.is_dir():
        return []
    return sorted(
        e.name
        for e in os.scandir(directory)
        if e.is_file() and e.name.isdigit() and len(e.name) <= 19 and int(e.name) < 2**63
    )


@dataclass
class _IndexFileState:
    """The part of one index file that dispatching changes, kept in memory."""

    name: str
    is_new: bool
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int  # effective (>= 1): the next entry position
    slots: array.array  # native int32 ('i'), one per hash slot
    first_new_entry: int  # position of the first entry in `entries`
    entries: bytearray = field(default_factory=bytearray)
    dirty_slots: set[int] = field(default_factory=set)
    header_dirty: bool = False

    def header(self) -> IndexHeader:
        return IndexHeader(
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )


def _header_bytes(st: _IndexFileState) -> bytes:
    return struct.pack(
        ">qqqqii",
        st.begin_timestamp,
        st.end_timestamp,
        st.begin_phy_offset,
        st.end_phy_offset,
        st.hash_slot_count,
        st.index_count,
    )


class IndexWriter:
    """`IndexService.buildIndex` over `directory`: appends to its last file, creates files as needed.

    `copy_on_write=True` (appends to a live store) never changes an existing file in place: the last
    file is copied under a temporary name, updated and renamed over the original, so a crash leaves
    the old or the new file, whole. New files are always written under a temporary name first.
    """

    def __init__(
        self,
        directory: Path,
        geometry: IndexGeometry,
        *,
        now_ms: Callable[[], int],
        zone: tzinfo | None = None,
        copy_on_write: bool = False,
    ) -> None:
        self.directory = directory
        self.geometry = geometry
        self.now_ms = now_ms
        self.zone = zone
        self.copy_on_write = copy_on_write
        self.names = list_index_files(directory)
        self.completed: list[_IndexFileState] = []
        self.current: _IndexFileState | None = None
        self.keys_written = 0
        self.files_created = 0
        self.last_full_end_timestamp = 0
        self._prefix_hash: dict[tuple[str, str], int] = {}
        if self.names:
            self.current = self._load(self.names[-1])

    def _load(self, name: str) -> _IndexFileState:
        path = self.directory / name
        size = path.stat().st_size
        if size != self.geometry.file_size:
            raise DispatchError(
                f"index file is {size} bytes, but maxHashSlotNum {self.geometry.hash_slot_num} and "
                f"maxIndexNum {self.geometry.index_num} make {self.geometry.file_size}",
                str(path),
            )
        with open(path, "rb") as fh:
            head = fh.read(HEADER_SIZE)
            slots = self._slot_table(path)
            fh.readinto(slots)
        if sys.byteorder == "little":
            slots.byteswap()
        h = decode_header(head, str(path))
        count = h.effective_index_count
        if count > self.geometry.index_num:
            raise DispatchError(
                f"indexCount {count} exceeds maxIndexNum {self.geometry.index_num}", str(path), 36
            )
        return _IndexFileState(
            name=name,
            is_new=False,
            begin_timestamp=h.begin_timestamp,
            end_timestamp=h.end_timestamp,
            begin_phy_offset=h.begin_phy_offset,
            end_phy_offset=h.end_phy_offset,
            hash_slot_count=h.hash_slot_count,
            index_count=count,
            slots=slots,
            first_new_entry=count,
        )

    def _slot_table(self, path: Path) -> array.array:
        """A zeroed slot table of maxHashSlotNum int32s, allocated once (a real broker maps as much)."""
        count = self.geometry.hash_slot_num
        try:
            return array.array("i", [0]) * count
        except MemoryError:
            raise DispatchError(
                f"out of memory for the slot table of {count} hash slots ({count * SLOT_SIZE} bytes): "
                "is maxHashSlotNum right?",
                str(path),
            ) from None

    # --- naming ----------------------------------------------------------------------------------

    def _new_name(self) -> str:
        """The clock's time as a name, moved past the last file's name when the clock is behind it
        (the broker loads index files in name order)."""
        ms = self.now_ms()
        previous = self.names[-1] if self.names else None
        if previous is not None:
            prev_ms = _name_ms(previous, self.zone)
            if prev_ms is not None and ms <= prev_ms:
                ms = prev_ms + 1
        name = index_file_name(ms, self.zone)
        if previous is not None and name <= previous:
            raise DispatchError(
                f"a new index file named by the time ({name}) would sort before the last one ({previous})",
                str(self.directory),
            )
        return name

    # --- building --------------------------------------------------------------------------------

    def _last_writable(self) -> _IndexFileState:
        """`getAndCreateLastIndexFile`: the last file unless full; else a new one (end values copied)."""
        cur = self.current
        if cur is not None and cur.index_count < self.geometry.index_num:
            return cur
        end_phy = end_ts = 0
        if cur is not None:
            end_phy, end_ts = cur.end_phy_offset, cur.end_timestamp
            self.last_full_end_timestamp = cur.end_timestamp
            self.completed.append(cur)
        name = self._new_name()
        self.names.append(name)
        new = _IndexFileState(
            name=name,
            is_new=True,
            begin_timestamp=end_ts if end_ts > 0 else 0,
            end_timestamp=end_ts if end_ts > 0 else 0,
            begin_phy_offset=end_phy if end_phy > 0 else 0,
            end_phy_offset=end_phy if end_phy > 0 else 0,
            hash_slot_count=0,
            index_count=1,
            slots=self._slot_table(self.directory / name),
            first_new_entry=1,
            header_dirty=True,
        )
        self.current = new
        self.files_created += 1
        return new

    def key_hash(self, topic: str, key: str) -> int:
        """`indexKeyHashMethod(topic + "#" + key)`. Java's hash is a polynomial, so the hash of
        `topic#` + all but the last 12 characters (for a UNIQ_KEY: the producer's fixed part) is cached
        and continued over the rest."""
        if not key.isascii():
            return index_key_hash(topic + "#" + key)
        cut = len(key) - 12 if len(key) > 16 else 0
        cache = self._prefix_hash
        prefix_key = (topic, key[:cut])
        h = cache.get(prefix_key)
        if h is None:
            if len(cache) > 4096:
                cache.clear()
            h = java_string_hash(topic + "#" + key[:cut])
            cache[prefix_key] = h
        for c in key[cut:].encode():
            h = h * 31 + c
        h &= 0xFFFFFFFF
        if h & 0x80000000:
            h -= 1 << 32
        return 0 if h == _INT_MIN else abs(h)

    def build(self, req: DispatchRequest) -> None:
        """`IndexService.buildIndex` for one dispatched record."""
        f = self._last_writable()
        if req.commit_log_offset < f.end_phy_offset:
            return
        if req.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE:
            return
        topic = req.topic
        if req.uniq_key is not None:
            f = self._put(f, self.key_hash(topic, req.uniq_key), req.commit_log_offset, req.store_timestamp)
        keys = req.keys
        if keys:
            for key in keys.split(" "):
                if key:
                    f = self._put(f, self.key_hash(topic, key), req.commit_log_offset, req.store_timestamp)

    def _put(self, f: _IndexFileState, key_hash: int, phy: int, ts: int) -> _IndexFileState:
        """`IndexFile.putKey`, rolling to a new file when the current one is full."""
        if f.index_count >= self.geometry.index_num:
            f = self._last_writable()
        count = f.index_count
        slot = key_hash % self.geometry.hash_slot_num
        slots = f.slots
        prev = slots[slot]
        if prev <= 0 or prev > count:
            prev = 0
        begin = f.begin_timestamp
        if begin <= 0:
            diff = 0
        else:
            delta = ts - begin
            if delta < 0:
                diff = 0  # Java truncates toward zero, and a negative difference is stored as 0
            else:
                diff = delta // 1000
                if diff > _INT_MAX:
                    diff = _INT_MAX
        f.entries += _ENTRY.pack(key_hash, phy, diff, prev)
        slots[slot] = count
        f.dirty_slots.add(slot)
        if count <= 1:
            f.begin_phy_offset = phy
            f.begin_timestamp = ts
        if prev == 0:
            f.hash_slot_count += 1
        f.index_count = count + 1
        f.end_phy_offset = phy
        f.end_timestamp = ts
        f.header_dirty = True
        self.keys_written += 1
        return f

    # --- writing ---------------------------------------------------------------------------------

    @property
    def has_pending(self) -> bool:
        cur = self.current
        return bool(self.completed) or (cur is not None and (cur.header_dirty or cur.is_new))

    @property
    def end_timestamp(self) -> int:
        """endTimestamp of the last index file (0 when there is none)."""
        return self.current.end_timestamp if self.current is not None else 0

    def flush(self, files: FileSet, scratch: Path) -> None:
        """Write every changed file: entries, then header, then the changed slots (oldest file first)."""
        states = [*self.completed, *([self.current] if self.current is not None else [])]
        self.directory.mkdir(parents=True, exist_ok=True)
        for st in states:
            if not (st.header_dirty or st.is_new):
                continue
            self._write_state(st, files, scratch)
            st.entries = bytearray()
            st.first_new_entry = st.index_count
            st.dirty_slots = set()
            st.header_dirty = False
            st.is_new = False
        self.completed = []

    def _regions(self, st: _IndexFileState) -> list[tuple[int, bytes]]:
        g = self.geometry
        regions: list[tuple[int, bytes]] = []
        if st.entries:
            regions.append((g.entry_position(st.first_new_entry), bytes(st.entries)))
        regions.append((0, _header_bytes(st)))
        if st.dirty_slots:
            dirty = np.fromiter(st.dirty_slots, dtype=np.int64, count=len(st.dirty_slots))
            dirty.sort()
            # coalesce slots less than 256 apart into one write (the values between are current too)
            breaks = np.flatnonzero(np.diff(dirty) > 256)
            starts = np.concatenate(([0], breaks + 1))
            ends = np.concatenate((breaks, [len(dirty) - 1]))
            for a, b in zip(dirty[starts].tolist(), dirty[ends].tolist(), strict=True):
                run = st.slots[a : b + 1]
                if sys.byteorder == "little":
                    run.byteswap()
                regions.append((HEADER_SIZE + a * SLOT_SIZE, run.tobytes()))
        return regions

    def _write_state(self, st: _IndexFileState, files: FileSet, scratch: Path) -> None:
        path = self.directory / st.name
        regions = self._regions(st)
        if st.is_new:
            create_sparse_file(path, self.geometry.file_size, scratch, regions)
            return
        if self.copy_on_write:
            tmp = temp_path(scratch, st.name)
            try:
                _copy_used_regions(path, tmp, self.geometry, st.first_new_entry)
                fd = os.open(tmp, os.O_RDWR)
                try:
                    for offset, data in regions:
                        pwrite_all(fd, data, offset)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                replace_file(tmp, path)
            except OSError as exc:  # no space, say: the old file stays, the copy goes
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise named(exc, path) from exc
            return
        fd = files.fd(path)
        for offset, data in regions:
            pwrite_all(fd, data, offset)


def _copy_used_regions(src: Path, dst: Path, geometry: IndexGeometry, entry_count: int) -> None:
    """A sparse copy of an index file: header + slot table and the used entries; the rest stays a hole."""
    used = [(0, HEADER_SIZE + geometry.hash_slot_num * SLOT_SIZE)]
    if entry_count > 1:
        start = geometry.entry_position(1)
        used.append((start, (entry_count - 1) * ENTRY_SIZE))
    fin = os.open(src, os.O_RDONLY)
    fout = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _copy_regions(fin, fout, geometry, used)
    except OSError as exc:
        raise named(exc, dst) from exc
    finally:
        os.close(fin)
        os.close(fout)


def _copy_regions(fin: int, fout: int, geometry: IndexGeometry, used: list[tuple[int, int]]) -> None:
    os.ftruncate(fout, geometry.file_size)
    for offset, length in used:
        done = 0
        while done < length:
            try:
                n = os.copy_file_range(fin, fout, length - done, offset + done, offset + done)
            except OSError:
                n = 0
            if n <= 0:  # no copy_file_range here: plain reads and writes
                chunk = os.pread(fin, min(length - done, 1 << 22), offset + done)
                if not chunk:
                    break
                os.pwrite(fout, chunk, offset + done)
                n = len(chunk)
            done += n
    write_done()


# --- settings as the files show them ---------------------------------------------------------------


def existing_cq_file_size(root: Path) -> int | None:
    """`mappedFileSizeConsumeQueue` as the current ConsumeQueue files show it (None when there are none)."""
    cq_dir = root / "consumequeue"
    if not cq_dir.is_dir() or is_rocksdb_dir(cq_dir):
        return None
    store = ConsumeQueueStore(root, commitlog_min_offset=0)
    for topic, queue_id in store.queues():
        size = MappedFileQueue.open(cq_dir / topic / str(queue_id)).file_size
        if size:
            return size
    return None


def existing_index_geometry(root: Path) -> IndexGeometry | None:
    """(maxHashSlotNum, maxIndexNum) as the current index files show it (None when unknown)."""
    from store.index import IndexService

    if not list_index_files(root / "index"):
        return None
    service = IndexService(root)
    try:
        return service.geometry
    finally:
        service.close()


# --- the dispatcher -------------------------------------------------------------------------------


@dataclass
class DispatchSummary:
    """What one `Dispatcher.commit()` wrote, and the values the checkpoint must take."""

    cq_units: int = 0
    index_keys: int = 0
    index_files_created: int = 0
    logics_msg_timestamp: int = 0  # store time of the last record written to a ConsumeQueue
    index_end_timestamp: int = 0  # endTimestamp of the last index file
    last_full_index_end_timestamp: int = 0  # endTimestamp of the last completely filled index file


class Dispatcher:
    """ReputMessageService's dispatchers over `cq_root` (consumequeue/) and `index_dir` (index/)."""

    def __init__(
        self,
        cq_root: Path,
        index_dir: Path | None,
        *,
        cq_file_size: int | None = None,
        index_geometry: IndexGeometry | None = None,
        now_ms: Callable[[], int],
        zone: tzinfo | None = None,
        copy_on_write: bool = False,
        scratch: Path,
    ) -> None:
        self.cq_root = cq_root
        self.cq_file_size = cq_file_size or DEFAULT_CQ_FILE_SIZE
        self.scratch = scratch
        self.queues: dict[tuple[str, int], ConsumeQueueWriter] = {}
        self.index = (
            IndexWriter(
                index_dir,
                index_geometry or IndexGeometry(),
                now_ms=now_ms,
                zone=zone,
                copy_on_write=copy_on_write,
            )
            if index_dir is not None
            else None
        )
        self.logics_msg_timestamp = 0
        self.records = 0
        self._index_marks = (0, 0)

    def queue(self, topic: str, queue_id: int) -> ConsumeQueueWriter:
        key = (topic, queue_id)
        writer = self.queues.get(key)
        if writer is None:
            writer = ConsumeQueueWriter(self.cq_root, topic, queue_id, self.cq_file_size)
            self.queues[key] = writer
        return writer

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset the broker would give the next message of (topic, queueId): the CQ max."""
        return self.queue(topic, queue_id).max_offset

    def dispatch(self, req: DispatchRequest, *, cq: bool = True, index: bool = True) -> None:
        self.records += 1
        if (
            cq
            and req.goes_to_consume_queue
            and self.queue(req.topic, req.queue_id).put(
                req.commit_log_offset, req.msg_size, req.tags_code, req.consume_queue_offset
            )
        ):
            self.logics_msg_timestamp = req.store_timestamp
        if index and self.index is not None:
            self.index.build(req)

    @property
    def warnings(self) -> list[str]:
        return [w for q in self.queues.values() for w in q.warnings]

    def flush_consume_queues(self) -> int:
        files = FileSet()
        units = 0
        try:
            for writer in self.queues.values():
                if writer.has_pending:
                    units += writer.pending_units
                    writer.flush(files, self.scratch)
            files.sync_and_close()
        finally:
            files.close()
        return units

    def flush_index(self) -> tuple[int, int]:
        """Write the index files; returns (keys, files created) since the previous flush."""
        if self.index is None or not self.index.has_pending:
            return 0, 0
        keys_before, files_before = self._index_marks
        files = FileSet()
        try:
            self.index.flush(files, self.scratch)
            files.sync_and_close()
        finally:
            files.close()
        self._index_marks = (self.index.keys_written, self.index.files_created)
        return self.index.keys_written - keys_before, self.index.files_created - files_before

    def commit(self, before_index: Callable[[DispatchSummary], None] | None = None) -> DispatchSummary:
        """ConsumeQueue units (fsync), then the index (fsync); `before_index` runs between the two."""
        summary = DispatchSummary()
        summary.cq_units = self.flush_consume_queues()
        summary.logics_msg_timestamp = self.logics_msg_timestamp
        if self.index is not None:
            summary.index_end_timestamp = self.index.end_timestamp
            summary.last_full_index_end_timestamp = self.index.last_full_end_timestamp
        if before_index is not None:
            before_index(summary)
        summary.index_keys, summary.index_files_created = self.flush_index()
        return summary


# --- checkpoint -----------------------------------------------------------------------------------


def read_checkpoint(root: Path) -> StoreCheckpoint | None:
    path = root / "checkpoint"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) != CHECKPOINT_FILE_SIZE:
        raise FormatError(f"checkpoint must be {CHECKPOINT_FILE_SIZE} bytes, found {len(data)}", str(path))
    return decode_checkpoint(data, str(path))


def write_checkpoint(
    root: Path,
    *,
    physic_msg_timestamp: int | None = None,
    logics_msg_timestamp: int | None = None,
    index_msg_timestamp: int | None = None,
    scratch: Path | None = None,
) -> StoreCheckpoint:
    """Raise the given checkpoint fields (never lower them) and write the 4096-byte file (fsync).

    A missing checkpoint is created, as the broker does at load, full-size.
    """
    path = root / "checkpoint"
    current = read_checkpoint(root)
    base = current or StoreCheckpoint()
    new = replace(
        base,
        physic_msg_timestamp=max(base.physic_msg_timestamp, physic_msg_timestamp or 0),
        logics_msg_timestamp=max(base.logics_msg_timestamp, logics_msg_timestamp or 0),
        index_msg_timestamp=max(base.index_msg_timestamp, index_msg_timestamp or 0),
    )
    if current is not None and new == current:
        return current
    data = encode_checkpoint(new)
    if current is None:
        create_sparse_file(path, CHECKPOINT_FILE_SIZE, scratch or root, [(0, data)])
        return new
    fd = os.open(path, os.O_RDWR)
    try:
        pwrite_all(fd, data, 0)  # one page: all or nothing for a killed process
        os.fsync(fd)
    finally:
        os.close(fd)
    return new


def delay_levels_ms(table: dict[int, int] | None) -> tuple[int, ...]:
    """BrokerConfig.delay_level_table() as the tuple `Message.tags_code` takes."""
    if not table:
        return DEFAULT_DELAY_LEVELS_MS
    return tuple(table[level] for level in sorted(table))


__all__ = [
    "CRASH_ENV",
    "dispatch_tags_code",
    "existing_cq_file_size",
    "existing_index_geometry",
    "iter_dispatch",
    "TMP_PREFIX",
    "ConsumeQueueWriter",
    "DispatchError",
    "DispatchRequest",
    "DispatchSummary",
    "Dispatcher",
    "FileSet",
    "IndexWriter",
    "create_sparse_file",
    "delay_levels_ms",
    "fsync_dir",
    "index_file_name",
    "last_nonzero_end",
    "list_index_files",
    "pwrite_all",
    "read_checkpoint",
    "remove_leftovers",
    "restore_interrupted_swaps",
    "replace_file",
    "set_crash_after",
    "temp_path",
    "write_checkpoint",
    "write_done",
]
