"""CommitLog: the `commitlog/` mapped-file queue read record by record, as the broker's recovery walks it.

Walking follows `CommitLog.recoverNormally`: a BLANK record moves on to the next file, and the first record
that fails the broker's check (zeros, torn, corrupt) ends the walk; it is yielded last, so callers can
say "the broker's recovery would truncate here". Where only the end (and the last record's fixed
fields) matter, `walk_end` walks the same chain with struct reads (`formats.message.recordcheck`), many times
faster than decoding every record. Read-only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
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
from store.log.mappedfile import MappedFile, MappedFileQueue, offset_to_file_name
from store.log.ranges import workers_for
from store.log.recovery import recovery_start_normal
from store.log.walks import ChainEnd, FileWalk, FileWalks

RELEASE_STEP = 4 << 20  # bytes a record walk reads before it unmaps the pages behind it


class OffsetError(MqtoolError):
    """A physical offset outside the commitlog files or not at a record boundary."""


# Walks of this many bytes or more run in the compiled twin of the record check: the struct one costs
# ~5 us a record (seconds per broker-sized file), the compiled one needs numba loaded (~0.25 s, once).
COMPILED_WALK_MIN = 8 << 20


def _walk_file(
    f: MappedFile, pos: int, check_crc: bool, accept_v2: bool
) -> tuple[str, int, tuple[int, int, Fields] | None]:
    """One file's size chain from `pos` with struct reads: (stop status, stop position, (physical
    offset, TOTALSIZE, fields) of the last accepted record or None)."""
    buf, n = f.buffer(), f.size
    last = None
    while True:
        status, total, fields = check_record(buf, n, pos, check_crc, accept_v2)
        if status != "ok":
            return status, pos, last
        last = (f.start_offset + pos, total, fields)
        pos += total


def _head_at(f: MappedFile, at: int, check_crc: bool, accept_v2: bool) -> tuple[int, int, Fields] | None:
    """(physical offset, TOTALSIZE, fields) of the accepted record at `at` of `f` (None for -1)."""
    if at < 0:
        return None
    verdict, total, fields = check_record(f.buffer(), f.size, at, check_crc, accept_v2)
    assert fields is not None, f"the record checks disagree at {at} ({verdict}); they are tested equal"
    return f.start_offset + at, total, fields


@dataclass(frozen=True)
class _ChainTask:
    """One byte range of a commitlog file for the compiled walk (what a worker is sent)."""

    path: str
    base: int
    size: int
    file_index: int
    start: int
    end: int
    resync: bool
    check_crc: bool
    accept_v2: bool


def _walk_range(task: _ChainTask) -> tuple[str, int, int]:
    """`walk_chain` over one range (runs in a worker)."""
    from formats.columnar.decoder import walk_chain

    f = MappedFile(Path(task.path), task.base, task.size)
    try:
        return walk_chain(
            f.buffer(), task.base, task.start, task.end,
            resync=task.resync, check_crc=task.check_crc, accept_v2=task.accept_v2,
        )  # fmt: skip
    finally:
        f.close()


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
        self._stops: dict[tuple[int, bool], EndOfData | BadRecord] = {}  # a read-only store's walks
        self.walks = FileWalks()  # every file walked whole so far (`store.log.walks`)

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

    def missing_file(self, offset: int) -> tuple[int, int] | None:
        """[start, end) of the file that would hold `offset` when it lies between two present files in a
        gap where files are missing (a file removed by hand or lost: retention deletes from the start
        only). The broker's `findMappedFileByOffset` finds no file there either."""
        files = self.files
        if not files or not files[0].start_offset <= offset < files[-1].end_offset:
            return None
        if self.queue.find(offset) is not None:
            return None
        size = self.file_size or files[0].size
        start = offset - offset % size if size else offset
        return start, start + size

    def _file_for(self, offset: int) -> tuple[int, MappedFile]:
        # the zero-length last file `files` leaves out never contains an offset
        index = self.queue.find_index(offset)
        if index < 0:
            files = self.files
            if not files:
                raise OffsetError(
                    f"physical offset {offset}: the commitlog has no files", str(self.directory)
                )
            gap = self.missing_file(offset)
            if gap is not None:
                raise OffsetError(
                    f"physical offset {offset} is in commitlog file {offset_to_file_name(gap[0])} "
                    f"[{gap[0]}, {gap[1]}), which is missing (the files before and after it are present)",
                    str(self.directory),
                )
            raise OffsetError(
                f"physical offset {offset} is outside the commitlog files "
                f"[{files[0].start_offset}, {files[-1].end_offset})",
                str(self.directory),
            )
        return index, self.queue.files[index]

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
        self,
        from_offset: int | None = None,
        *,
        check_crc: bool = False,
        accept_v2: bool = True,
        jobs: int = 1,
    ) -> WalkEnd:
        """Walk the size chain from `from_offset` (default: where normal recovery starts, the
        third-from-last file) with the broker's checks (`formats.message.recordcheck`), as recovery does:
        BLANK -> next file, the first rejected record or zeros -> stop. The same stop as `iter_records`, at a
        fraction of its cost. `from_offset` must be a record start. Walks over COMPILED_WALK_MIN bytes or
        more (broker-sized files) run in the compiled twin (`formats.columnar.decoder.walk_chain`), in
        byte ranges each mapped only while walked, over `jobs` worker processes (`store.log.ranges`; the
        same result).

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
            return self._walk_from(index, pos, check_crc, accept_v2, jobs)
        known = self.walks.chain(files, index, check_crc=check_crc, accept_v2=accept_v2)
        if isinstance(known, ChainEnd):
            return self._known_end(known, check_crc, accept_v2)
        end = self._walk_from(known.file_index, known.position, check_crc, accept_v2, jobs)
        if end.last is None and known.last is not None:
            end = replace(end, last=self._head(known.last, check_crc, accept_v2))
        return end

    def _walk_from(self, index: int, pos: int, check_crc: bool, accept_v2: bool, jobs: int) -> WalkEnd:
        """walk_end from the record boundary `pos` of file `index`, reading the files; each file walked
        from its first byte is recorded (`self.walks`)."""
        files = self.files
        span = sum(g.size for g in files[index:]) - pos
        if span >= COMPILED_WALK_MIN:  # in ranges, each mapped only while walked: a GiB file is not resident
            return self._walk_ranges(index, pos, check_crc, accept_v2, workers_for(span, jobs))
        last_at: tuple[int, int, Fields] | None = None
        while True:
            f = files[index]
            whole = pos == 0
            status, pos, last_in_file = _walk_file(f, pos, check_crc, accept_v2)
            if whole:
                in_file = -1 if last_in_file is None else last_in_file[0] - f.start_offset
                self.walks.record(
                    f.start_offset,
                    f.size,
                    FileWalk(status, pos, in_file),
                    check_crc=check_crc,
                    accept_v2=accept_v2,
                )
            last_at = last_in_file or last_at
            last = None if last_at is None else RecordHead.of(*last_at)
            if status != "blank":
                return WalkEnd(f.start_offset + pos, status, last, f, pos)
            index += 1
            if index >= len(files):
                return WalkEnd(f.start_offset + pos, "blank", last, f, pos)
            pos = 0

    def _head(self, at: tuple[int, int], check_crc: bool, accept_v2: bool) -> RecordHead:
        """The fixed fields of the accepted record at (file index, position)."""
        return RecordHead.of(*_head_at(self.files[at[0]], at[1], check_crc, accept_v2))

    def _known_end(self, known: ChainEnd, check_crc: bool, accept_v2: bool) -> WalkEnd:
        """walk_end's answer from the recorded file walks (`FileWalks.chain`)."""
        f = self.files[known.file_index]
        head = None if known.last is None else self._head(known.last, check_crc, accept_v2)
        at = known.walk.position
        return WalkEnd(f.start_offset + at, known.walk.status, head, f, at)

    def _walk_ranges(self, index: int, pos: int, check_crc: bool, accept_v2: bool, jobs: int) -> WalkEnd:
        """walk_end's compiled walk from file `index`, position `pos`, in byte ranges over `jobs` workers:
        each range hands over where the next one's resync starts, so the first range that stops (a BLANK
        moving on to the next file) ends the walk where the walk in one piece ends it."""
        from store.log.ranges import auto_range_size, byte_ranges, run_in_order, with_data

        files = self.files
        sizes = [g.size for g in files]
        tasks = []
        planned = byte_ranges(sizes, auto_range_size(sum(sizes[index:]) - pos, jobs), index, pos)
        for r in with_data(planned, [g.path for g in files]):
            g = files[r.file_index]
            resync = r.start > 0 and (r.file_index, r.start) != (index, pos)
            where = (str(g.path), g.start_offset, g.size, r.file_index, r.start, r.end)
            tasks.append(_ChainTask(*where, resync, check_crc, accept_v2))
        last: tuple[MappedFile, int] | None = None
        file_last: dict[int, int] = {}  # the last accepted record of each file walked so far
        skip = -1  # a file whose walk ended in a BLANK
        results = run_in_order(_walk_range, tasks, jobs)
        try:
            for task, (status, at, last_ok) in zip(tasks, results, strict=True):
                if task.file_index == skip:
                    continue
                f = files[task.file_index]
                if last_ok >= 0:
                    last = (f, last_ok)
                    file_last[task.file_index] = last_ok
                if status == "handover":
                    continue
                if task.file_index > index or pos == 0:  # walked from its first byte: remembered
                    walk = FileWalk(status, at, file_last.get(task.file_index, -1))
                    self.walks.record(f.start_offset, f.size, walk, check_crc=check_crc, accept_v2=accept_v2)
                head = None if last is None else RecordHead.of(*_head_at(*last, check_crc, accept_v2))
                if status != "blank" or task.file_index == len(files) - 1:
                    return WalkEnd(f.start_offset + at, status, head, f, at)
                skip = task.file_index
        finally:
            results.close()
        raise AssertionError("a commitlog walk ends in a stop")  # pragma: no cover - the last file ends

    def stop_record(
        self, from_offset: int | None = None, check_crc: bool = True, *, jobs: int = 1
    ) -> EndOfData | BadRecord:
        """The item that ends the walk from `from_offset` (default: the first file): where the valid data
        ends, and why. Found by `walk_end`; the stopping record alone is decoded, for its explanation."""
        start = self.min_offset if from_offset is None else from_offset
        known = self._stops.get((start, check_crc))
        if known is not None:
            return known
        self._stops[(start, check_crc)] = stop = self._stop_record(start, check_crc, jobs)
        return stop

    def _stop_record(self, start: int, check_crc: bool, jobs: int) -> EndOfData | BadRecord:
        end = self.walk_end(start, check_crc=check_crc, jobs=jobs)
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
        for record in self.iter_records(start, check_crc):  # pragma: no cover
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

    def last_record(self, *, jobs: int = 1) -> RecordHead | None:
        """The last accepted record of the last file holding any, walked from that file's start (CRC
        unchecked): the newest message, where the broker's end is."""
        for f in reversed(self.files):
            last = self.walk_end(f.start_offset, jobs=jobs).last
            if last is not None:
                return last
        return None

    def tail_positions(self, f: MappedFile, keep: int) -> list[int]:
        """Positions in `f` of its last `keep` accepted records, oldest first, walked from the file's start
        with the broker's check (CRC unchecked): from the file's recorded walk (`self.walks`) when it kept
        them, else by the compiled walk on a file of COMPILED_WALK_MIN bytes or more, else by the struct
        check (from the record whose CRC stopped a recorded checked walk, when one did)."""
        if keep <= 0:
            return []
        known = self.walks.walk_of(f.start_offset, f.size, check_crc=False, accept_v2=True)
        kept = None if known is None else known.tail_of(keep)
        if kept is not None:
            return kept
        crc = self.walks.crc_stop(f.start_offset, f.size, accept_v2=True)
        if crc is not None:
            after = self._tail_from(f, crc.position, keep)
            before = crc.tail_of(keep - len(after)) if len(after) < keep else []
            if before is not None:
                return (before + after)[-keep:]
        return self._tail_from(f, 0, keep)

    def _tail_from(self, f: MappedFile, pos: int, keep: int) -> list[int]:
        """Positions of the last `keep` records accepted (CRC unchecked) walking `f` from boundary `pos`."""
        if f.size - pos >= COMPILED_WALK_MIN:
            from formats.columnar.decoder import walk_stop

            return walk_stop(f.buffer(), pos, check_crc=False, keep=keep)[2]
        buf, found = f.buffer(), deque(maxlen=keep)
        while True:
            status, total, _ = check_record(buf, f.size, pos, False, True)
            if status != "ok":
                return list(found)
            found.append(pos)
            pos += total
