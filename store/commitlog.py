"""CommitLog: the `commitlog/` mapped-file queue read record by record, as the broker's recovery walks it.

Walking follows FORMATS §2.10: a BLANK record moves on to the next file, and the first record that
fails the broker's check (zeros, torn, corrupt) ends the walk; it is yielded last, so callers can
say "the broker's recovery would truncate here". Read-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

from formats.commitlog import (
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
from formats.errors import FormatError, MqtoolError
from formats.structs import BLANK_MAGIC, MESSAGE_MAGICS
from store.mappedfile import MappedFile, MappedFileQueue


class OffsetError(MqtoolError):
    """A physical offset outside the commitlog files or not at a record boundary."""


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
        files = self.files
        start = files[max(0, len(files) - 3)].start_offset if files else None
        return self.valid_end(start)

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
            while True:
                record = decode_record(
                    buf, pos, f.start_offset, check_crc=check_crc, accept_v2=accept_v2, file=path
                )
                yield record
                if isinstance(record, Message):
                    pos += record.total_size
                    continue
                if isinstance(record, Blank):
                    break
                return  # a stop
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

    def stop_record(self, from_offset: int | None = None, check_crc: bool = True) -> EndOfData | BadRecord:
        """The item that ends the walk: where the valid data ends, and why."""
        for record in self.iter_records(from_offset, check_crc):
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
        record = decode_record(f.buffer(), pos, f.start_offset, check_crc=check_crc, file=str(f.path))
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

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """`CommitLog.pickupStoreTimestamp`: STORETIMESTAMP of the record at `offset`, or -1 when
        [offset, offset+size) is not inside [min_offset, max_offset). No other check, as in Java."""
        if not (offset >= self.min_offset and offset + size <= self.max_offset):
            return -1
        _, f = self._file_for(offset)
        pos = offset - f.start_offset
        head = decode_head(f.read(pos, HEAD_MAX_SIZE))
        return -1 if head is None else head["storeTimestamp"]
