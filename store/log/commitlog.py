"""CommitLog: the `commitlog/` mapped-file queue read record by record, as the broker's recovery walks it.

Walking follows `CommitLog.recoverNormally`: a BLANK record moves on to the next file, and the first record
that fails the broker's check (zeros, torn, corrupt) ends the walk; it is yielded last, so callers can
say "the broker's recovery would truncate here". Where only the end (and the last record's fixed
fields) matter, `walk_end` walks the same chain with struct reads (`formats.message.recordcheck`), many times
faster than decoding every record. Read-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import (
    HEAD_MAX_SIZE,
    STOPS,
    BadRecord,
    Blank,
    EndOfData,
    Message,
    Record,
    decode_head,
    decode_record,
    read_prelude,
)
from formats.message.recordcheck import Fields, check_record, store_timestamp_at
from formats.message.recordfast import SYSFLAG_AT
from formats.structs import BLANK_MAGIC, MESSAGE_MAGICS
from store.log.mappedfile import MappedFile, MappedFileQueue
from store.log.recovery import recovery_start_normal

RELEASE_STEP = 4 << 20  # bytes a record walk reads before it unmaps the pages behind it


class OffsetError(MqtoolError):
    """A physical offset outside the commitlog files or not at a record boundary."""


@dataclass(frozen=True)
class RecordHead:
    """The fixed fields of one accepted record (what `info`, the scans and the reset planner need)."""

    physical_offset: int
    total_size: int
    queue_id: int
    queue_offset: int
    physical_offset_field: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    topic: str

    @classmethod
    def of(cls, phy: int, total: int, fields: Fields) -> RecordHead:
        queue_id, queue_offset, phys, sys_flag, born, store_ts, topic = fields
        return cls(
            phy,
            total,
            queue_id,
            queue_offset,
            phys,
            sys_flag,
            born,
            store_ts,
            topic.decode("utf-8", "replace"),
        )


@dataclass(frozen=True)
class WalkEnd:
    """Where a walk stopped: the valid end, why, the last accepted record before it, and the file and
    position of the stop (None for an empty commitlog)."""

    valid_end: int
    reason: str  # end | blank (no next file) | bad_magic | truncated | size_mismatch | crc_mismatch | ...
    last: RecordHead | None
    file: MappedFile | None = None
    position: int = 0


class CommitLog:
    """The commitlog of one store, over `MappedFileQueue(directory)`."""

    def __init__(self, directory: Path | str, queue: MappedFileQueue | None = None) -> None:
        self.directory = Path(directory)
        self.queue = queue if queue is not None else MappedFileQueue.open(self.directory)

    @classmethod
    def open(cls, root: Path | str) -> CommitLog:
        """The commitlog under a store root (`storePathCommitLog` default `${root}/commitlog`)."""
        return cls(Path(root) / "commitlog")

    def __enter__(self) -> CommitLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.queue.close()

    # --- files --------------------------------------------------------------------------------

    @property
    def files(self) -> list[MappedFile]:
        """Files the walk uses: a zero-length last file is left out (5.x deletes it on load)."""
        files = list(self.queue.files)
        if files and files[-1].size == 0:
            files.pop()
        return files

    @property
    def file_size(self) -> int | None:
        """`mappedFileSizeCommitLog` as the files show it."""
        return self.queue.file_size

    @property
    def min_offset(self) -> int:
        """`CommitLog.getMinOffset` as the files show it: the first file's name (0 when empty)."""
        files = self.files
        return files[0].start_offset if files else 0

    @cached_property
    def max_offset(self) -> int:
        """Where the broker's normal recovery would put the end: the first failure when walking from
        the third-from-last file (`recoverNormally`, 4.9.8 and 5.0-5.3.1). Cached: the store is read-only.
        """
        return self.valid_end(self.recovery_start_offset)

    @property
    def recovery_start_offset(self) -> int | None:
        """Where normal recovery starts walking (4.9.x, 5.0-5.3.1): the third-from-last file."""
        files = self.files
        first = recovery_start_normal([f.start_offset for f in files])
        return None if first is None else files[first].start_offset

    def locate(self, phy_offset: int) -> tuple[str, int]:
        """(file path, position in it) of a physical offset inside the commitlog files: where an error
        about the record there points."""
        _, f = self._file_for(phy_offset)
        return str(f.path), phy_offset - f.start_offset

    def _file_for(self, offset: int) -> tuple[int, MappedFile]:
        files = self.files
        f = self.queue.find(offset)
        if f is None or f not in files:
            if not files:
                raise OffsetError(
                    f"physical offset {offset}: the commitlog has no files", str(self.directory)
                )
            raise OffsetError(
                f"physical offset {offset} is outside the commitlog files "
                f"[{files[0].start_offset}, {files[-1].end_offset})",
                str(self.directory),
            )
        return files.index(f), f

    # --- walking ------------------------------------------------------------------------------

    def _check_boundary(self, f: MappedFile, pos: int, check_crc: bool) -> None:
        """Raise OffsetError unless a record starts `pos` bytes into `f` (walking sizes from 0)."""
        buf = f.buffer()
        first = decode_record(buf, pos, f.start_offset, check_crc=check_crc, file=str(f.path))
        if isinstance(first, Message) and first.physical_offset == f.start_offset + pos:
            return
        at = 0
        while at < pos and at + 8 <= len(buf):
            total, magic = read_prelude(buf, at)
            if magic not in MESSAGE_MAGICS or total <= 0:
                what = "a BLANK record" if magic == BLANK_MAGIC else "the end of the valid records"
                raise OffsetError(
                    f"physical offset {f.start_offset + pos} lies after {what} at {f.start_offset + at}",
                    str(f.path),
                    pos,
                )
            if at + total > pos:
                raise OffsetError(
                    f"physical offset {f.start_offset + pos} is not a record boundary: it is inside the "
                    f"record at {f.start_offset + at} ({total} bytes; "
                    f"next record at {f.start_offset + at + total})",
                    str(f.path),
                    pos,
                )
            at += total
        if at != pos:
            raise OffsetError(
                f"physical offset {f.start_offset + pos} is past the last record header of its file",
                str(f.path),
                pos,
            )

    def iter_records(
        self, from_offset: int | None = None, check_crc: bool = True, accept_v2: bool = True
    ) -> Iterator[Record]:
        """Records from `from_offset` (default: the first file) in physical order.

        Yields Message and Blank records; the walk ends with exactly one EndOfData/Torn/Corrupt item
        (where the broker's recovery would cut). A `from_offset` must be a record boundary.
        `accept_v2=False` walks as a 4.9.x broker, for which a V2 record is an illegal magic code.
        """
        files = self.files
        if not files:
            if from_offset:
                self._file_for(from_offset)  # raises: outside every file
            yield EndOfData(0, "the commitlog has no files")
            return
        if from_offset is None:
            index, pos = 0, 0
        else:
            index, f = self._file_for(from_offset)
            pos = from_offset - f.start_offset
            if pos:
                self._check_boundary(f, pos, check_crc)
        while True:
            f = files[index]
            buf = f.buffer()
            path = str(f.path)
            released = pos
            while True:
                record = decode_record(
                    buf, pos, f.start_offset, check_crc=check_crc, accept_v2=accept_v2, file=path
                )
                yield record
                if isinstance(record, Message):
                    pos += record.total_size
                    if pos - released >= RELEASE_STEP:  # memory stays flat on a file of any size
                        f.release_pages(pos)
                        released = pos
                    continue
                if isinstance(record, Blank):
                    break
                return  # a stop
            f.release_pages(f.size)
            index += 1
            if index >= len(files):
                yield EndOfData(
                    record.physical_offset, "the last file ends with a BLANK record and no file follows"
                )
                return
            pos = 0

    def iter_messages(self, from_offset: int | None = None, check_crc: bool = True) -> Iterator[Message]:
        """Only the valid messages of `iter_records` (stops where the broker's recovery would)."""
        for record in self.iter_records(from_offset, check_crc):
            if isinstance(record, Message):
                yield record

    def walk_end(
        self, from_offset: int | None = None, *, check_crc: bool = False, accept_v2: bool = True
    ) -> WalkEnd:
        """Walk the size chain from `from_offset` (default: where normal recovery starts, the
        third-from-last file) with the broker's checks (`formats.message.recordcheck`), as recovery does:
        BLANK -> next file, the first rejected record or zeros -> stop. The same stop as `iter_records`, at a
        fraction of its cost. `from_offset` must be a record start.

        CRC is off by default (the broker checks it: pass check_crc=True for its exact end).
        """
        files = self.files
        if not files:
            if from_offset:
                self._file_for(from_offset)  # raises: outside every file
            return WalkEnd(0, "empty", None)
        if from_offset is None:
            from_offset = self.recovery_start_offset
        index, f = self._file_for(from_offset)
        pos = from_offset - f.start_offset
        if pos:
            self._check_boundary(f, pos, check_crc)
        last_at: tuple[int, int, Fields] | None = None
        while True:
            f = files[index]
            buf, n = f.buffer(), f.size
            while True:
                status, total, fields = check_record(buf, n, pos, check_crc, accept_v2)
                if status != "ok":
                    break
                last_at = (f.start_offset + pos, total, fields)  # type: ignore[assignment]
                pos += total
            last = None if last_at is None else RecordHead.of(*last_at)
            if status != "blank":
                return WalkEnd(f.start_offset + pos, status, last, f, pos)
            index += 1
            if index >= len(files):
                return WalkEnd(f.start_offset + pos, "blank", last, f, pos)
            pos = 0

    def stop_record(self, from_offset: int | None = None, check_crc: bool = True) -> EndOfData | BadRecord:
        """The item that ends the walk from `from_offset` (default: the first file): where the valid data
        ends, and why. Found by `walk_end`; the stopping record alone is decoded, for its explanation."""
        end = self.walk_end(self.min_offset if from_offset is None else from_offset, check_crc=check_crc)
        if end.file is None:
            return EndOfData(0, "the commitlog has no files")
        if end.reason == "blank":
            return EndOfData(end.valid_end, "the last file ends with a BLANK record and no file follows")
        record = decode_record(
            end.file.buffer(),
            end.position,
            end.file.start_offset,
            check_crc=check_crc,
            file=str(end.file.path),
        )
        if isinstance(record, STOPS):
            return record
        # the quick check and the decoder disagree (a property test says they never do): trust the decoder
        for record in self.iter_records(from_offset, check_crc):  # pragma: no cover
            if isinstance(record, STOPS):
                return record
        raise AssertionError("iter_records always ends with a stop")  # pragma: no cover

    def valid_end(self, from_offset: int | None = None, check_crc: bool = True) -> int:
        """Physical offset where the broker's recovery, walking from `from_offset` (default: the first
        file), would set the end of the commitlog and truncate everything after it."""
        return self.stop_record(from_offset, check_crc).physical_offset

    # --- random access ------------------------------------------------------------------------

    def read_message_at(self, phy_offset: int, size: int | None = None, check_crc: bool = True) -> Message:
        """The message that starts at `phy_offset`; strict: a valid record must start there, its
        PHYSICALOFFSET must equal `phy_offset`, and its TOTALSIZE must equal `size` when given."""
        _, f = self._file_for(phy_offset)
        pos = phy_offset - f.start_offset
        buf = f.record_buffer(pos)
        record = decode_record(buf, pos, f.start_offset, check_crc=check_crc, file=str(f.path))
        if isinstance(record, BadRecord):
            raise record.to_error(str(f.path), pos)
        if not isinstance(record, Message):
            what = "a BLANK record" if isinstance(record, Blank) else f"no record ({record.reason})"
            raise FormatError(f"physical offset {phy_offset}: {what}, not a message", str(f.path), pos)
        if record.physical_offset != phy_offset:
            raise FormatError(
                f"the record at physical offset {phy_offset} says PHYSICALOFFSET {record.physical_offset}",
                str(f.path),
                pos,
            )
        if size is not None and record.total_size != size:
            raise FormatError(
                f"the record at physical offset {phy_offset} has TOTALSIZE {record.total_size}, not {size}",
                str(f.path),
                pos,
            )
        return record

    def read_raw(self, phy_offset: int, size: int) -> bytes:
        """Bytes [phy_offset, phy_offset+size) without any check (like `selectOneMessageByOffset`),
        clipped to the end of the file holding `phy_offset`."""
        _, f = self._file_for(phy_offset)
        return f.read(phy_offset - f.start_offset, max(size, 0))

    def sysflags_at(self, phys: Any) -> Any:
        """SYSFLAG of the record starting at each physical offset (a numpy array), read from its fixed
        head without any check (a cheap look before a whole decode); -1 where no file holds the head."""
        import numpy as np

        phys = np.asarray(phys, dtype=np.int64)
        out = np.full(len(phys), -1, dtype=np.int64)
        for f in self.files:
            inside = (phys >= f.start_offset) & (phys + SYSFLAG_AT + 4 <= f.start_offset + f.size)
            if not inside.any():
                continue
            data = np.frombuffer(f.buffer(), dtype=np.uint8)
            at = phys[inside] - f.start_offset + SYSFLAG_AT
            raw = data[at[:, None] + np.arange(4)].astype(np.int64)
            value = (raw[:, 0] << 24) | (raw[:, 1] << 16) | (raw[:, 2] << 8) | raw[:, 3]
            out[inside] = np.where(value >= 1 << 31, value - (1 << 32), value)
        return out

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """`CommitLog.pickupStoreTimestamp`: STORETIMESTAMP of the record at `offset`, or -1 when
        [offset, offset+size) is not inside [min_offset, max_offset). No other check, as in Java."""
        if not (offset >= self.min_offset and offset + size <= self.max_offset):
            return -1
        _, f = self._file_for(offset)
        pos = offset - f.start_offset
        head = decode_head(f.read(pos, HEAD_MAX_SIZE))
        return -1 if head is None else head["storeTimestamp"]

    def store_time_at(self, phy_offset: int, size: int | None = None) -> int | None:
        """STORETIMESTAMP of the message record starting at `phy_offset`, or None when no message record
        (of TOTALSIZE `size`, when given) starts there: a header check, no walk
        (`formats.message.recordcheck`)."""
        f = self.queue.find(phy_offset)
        if f is None or phy_offset < self.min_offset:
            return None
        head = f.read(phy_offset - f.start_offset, 76)  # the header only (a ranged read on a URL's store)
        return store_timestamp_at(head, len(head), 0, size)

    def first_record(self) -> RecordHead | None:
        """The first record of the first file, when the broker accepts it (CRC unchecked)."""
        files = self.files
        if not files:
            return None
        f = files[0]
        status, total, fields = check_record(f.buffer(), f.size, 0, False, True)
        return RecordHead.of(f.start_offset, total, fields) if fields is not None else None

    def last_record(self) -> RecordHead | None:
        """The last accepted record of the last file holding any, walked from that file's start (CRC
        unchecked): the newest message, where the broker's end is."""
        for f in reversed(self.files):
            last = self.walk_end(f.start_offset).last
            if last is not None:
                return last
        return None
