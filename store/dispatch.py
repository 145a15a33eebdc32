"""Dispatch like ReputMessageService: ConsumeQueue units, IndexFile entries, the checkpoint.

For every commitlog record the broker dispatches (`CommitLogDispatcherBuildConsumeQueue` +
`CommitLogDispatcherBuildIndex`, FORMATS §4.2-§4.4, §5.5-§5.8) this module produces the same bytes:

* `ConsumeQueueWriter` is `ConsumeQueue.putMessagePositionInfo` for one queue: the "build consume queue
  repeatedly" skips (`offset + size <= maxPhysicOffset`, queue offset below the write position), the
  `[BUG]logic queue order` case (the unit goes to the write position), new full-size sparse files named
  by the next start offset, and `fillPreBlank` when the first file of a queue is created for a non-zero
  queue offset. Its starting state is what `ConsumeQueue.recover()` leaves: write position = end of the
  valid units, maxPhysicOffset = end of the last valid unit (a filler counts: the broker's quirk).
* `IndexWriter` (`store.indexwriter`) is `IndexService.buildIndex` + `IndexFile.putKey`.
* `Dispatcher` feeds both and `commit()` writes them in the order the crash rules need (see
  `store.appender` for the whole argument): ConsumeQueue units (fsync), then index files (fsync), and
  returns what the checkpoint must say; `write_checkpoint` writes it.

Writes are plain `pwrite`s on full-size files, through `store.filewrites` (new files sparse under a
temporary name, linked into place; every state-changing call passes its crash-test hook `write_done()`).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path

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
from formats.errors import FormatError
from formats.indexfile import (
    IndexGeometry,
)
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
    TRANSACTION_TYPE_MASK,
)
from store.commitlog import CommitLog
from store.consumequeue import ConsumeQueue, ConsumeQueueStore, is_rocksdb_dir
from store.filewrites import DispatchError, FileSet, create_sparse_file, last_nonzero_end, pwrite_all
from store.indexwriter import IndexWriter, list_index_files
from store.mappedfile import MappedFileQueue, offset_to_file_name

UNIT = CQ_STORE_UNIT_SIZE
_UNIT = struct.Struct(">qiq")
_ENTRY = struct.Struct(">iqii")
_FILLER = _UNIT.pack(FILLER_PHY_OFFSET, FILLER_SIZE, 0)
_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)


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
    "dispatch_tags_code",
    "existing_cq_file_size",
    "existing_index_geometry",
    "iter_dispatch",
    "ConsumeQueueWriter",
    "DispatchRequest",
    "DispatchSummary",
    "Dispatcher",
    "delay_levels_ms",
    "read_checkpoint",
    "write_checkpoint",
]
