"""Two commitlogs compared byte for byte: where they agree, the first physical offset where they differ,
the records on each side there, and the messages per topic each side holds past the common prefix.

The common range [max of the min offsets, min of the valid ends) is read once per side in blocks
(`BLOCK`, split at file ends) with pread (ranged reads for a store read by URL), and each pair of blocks
compared whole (a C memcmp); only the
first differing block is searched byte by byte (numpy). Each byte is read once, from the page cache or the
disk; hashing the blocks first would add a pass over the same bytes and find nothing a memcmp does not
(digests pay off only when the two stores sit on different machines). The valid ends are where the
broker's recovery puts them (`CommitLog.max_offset`). Read-only.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from formats.errors import MqtoolError
from formats.message.commitlog import Blank, Message, Record
from formats.message.recordcheck import check_record
from store.io.filereads import open_regular
from store.io.remote import location, placeholder, read_range
from store.log.commitlog import RELEASE_STEP, CommitLog
from store.log.mappedfile import MappedFile

BLOCK = 1 << 20


class LogCompareError(MqtoolError):
    """Two commitlogs that cannot be compared offset for offset (different file sizes, a missing file)."""


@dataclass
class RecordAt:
    """The record at a physical offset of one side: what a person needs to recognise it."""

    physical_offset: int
    kind: str  # message | blank | end (no valid record there: the side's end, torn or corrupt)
    total_size: int | None = None
    topic: str | None = None
    queue_id: int | None = None
    queue_offset: int | None = None
    store_timestamp: int | None = None
    msg_id: str | None = None
    uniq_key: str | None = None
    keys: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "physicalOffset": self.physical_offset,
            "kind": self.kind,
            "totalSize": self.total_size,
            "topic": self.topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "storeTimestamp": self.store_timestamp,
            "msgId": self.msg_id,
            "uniqKey": self.uniq_key,
            "keys": self.keys,
        }


@dataclass
class LogDiff:
    """The comparison of commitlogs A and B."""

    min_offsets: tuple[int, int]
    max_offsets: tuple[int, int]  # the valid ends
    compared: tuple[int, int]  # the common range read
    first_difference: int | None  # the first differing byte in `compared`; None: no byte differs
    record_start: int | None  # where the record holding it starts (the same on both sides)
    records: tuple[RecordAt | None, RecordAt | None] = (None, None)
    past_prefix: tuple[dict[str, int], dict[str, int]] = field(default_factory=lambda: ({}, {}))
    bytes_read: int = 0

    @property
    def identical(self) -> bool:
        return self.first_difference is None and self.max_offsets[0] == self.max_offsets[1]

    @property
    def prefix_end(self) -> int:
        """Where the common prefix ends: the divergence record, else the shorter log's end."""
        return self.record_start if self.record_start is not None else self.compared[1]

    @property
    def ahead(self) -> str | None:
        """ "A", "B" or None: the side whose log holds more past the common prefix."""
        a, b = (sum(side.values()) for side in self.past_prefix)
        if self.first_difference is None:
            end_a, end_b = self.max_offsets
            return None if end_a == end_b else ("A" if end_a > end_b else "B")
        return None if a == b else ("A" if a > b else "B")

    def to_dict(self) -> dict[str, Any]:
        return {
            "minOffsets": list(self.min_offsets),
            "maxOffsets": list(self.max_offsets),
            "compared": list(self.compared),
            "identical": self.identical,
            "firstDifference": self.first_difference,
            "divergedRecordAt": self.record_start,
            "commonPrefixEnd": self.prefix_end,
            "recordsThere": [None if r is None else r.to_dict() for r in self.records],
            "ahead": self.ahead,
            "messagesPastPrefix": [dict(sorted(side.items())) for side in self.past_prefix],
            "bytesRead": self.bytes_read,
        }


def _spans(log: CommitLog, lo: int, hi: int) -> Iterator[tuple[MappedFile, int, int]]:
    """(file, start, end) of the physical offsets [lo, hi), file by file."""
    at = lo
    while at < hi:
        f = log.queue.find(at)
        if f is None:
            raise LogCompareError(f"physical offset {at}: no commitlog file holds it", _named(log.directory))
        end = min(hi, f.end_offset)
        yield f, at, end
        at = end


def _named(path: Path) -> str:
    """A path as the user named its store: the URL for a store read by URL (not its private view)."""
    named = location(path)
    return named if "://" in named else str(path)


def _block_reader(f: MappedFile, fd: int) -> Callable[[int, int], bytes]:
    """(length, offset in the file) -> bytes: pread, or for a store read by URL, whose commitlog files are
    sparse placeholders in its local view (`store.io.remote`), ranged reads of the object."""
    entry = placeholder(f.path)
    if entry is None:
        return lambda n, at: os.pread(fd, n, at)
    url = entry[0]
    return lambda n, at: read_range(url, at, n)


def first_difference(
    a: CommitLog, b: CommitLog, lo: int, hi: int, block: int = BLOCK
) -> tuple[int | None, int]:
    """(the first physical offset in [lo, hi) where A's and B's bytes differ or None, bytes read)."""
    read = 0
    for fa, start, end in _spans(a, lo, hi):
        for fb, s, e in _spans(b, start, end):
            da, db = open_regular(fa.path), open_regular(fb.path)
            read_a, read_b = _block_reader(fa, da), _block_reader(fb, db)
            try:
                at = s
                while at < e:
                    n = min(block, e - at)
                    xa = read_a(n, at - fa.start_offset)
                    xb = read_b(n, at - fb.start_offset)
                    read += len(xa) + len(xb)
                    if len(xa) != n or len(xb) != n:
                        short = fa if len(xa) != n else fb
                        raise LogCompareError(f"short read at {at}: the file ends early", _named(short.path))
                    if xa != xb:
                        where = np.flatnonzero(np.frombuffer(xa, np.uint8) != np.frombuffer(xb, np.uint8))
                        return at + int(where[0]), read
                    at += n
            finally:
                os.close(da)
                os.close(db)
    return None, read


def _record_start(log: CommitLog, offset: int) -> int:
    """Where the record holding `offset` starts: walked from its file's start (a record boundary)."""
    f = log.queue.find(offset)
    assert f is not None
    for record in log.iter_records(f.start_offset, check_crc=False):
        if not isinstance(record, Message | Blank):
            return record.physical_offset
        if record.physical_offset + record.total_size > offset:
            return record.physical_offset
    raise AssertionError("unreachable: iter_records ends with a stop")


def _described(record: Record) -> RecordAt:
    if isinstance(record, Message):
        props = record.properties
        return RecordAt(
            record.physical_offset,
            "message",
            record.total_size,
            record.topic,
            record.queue_id,
            record.queue_offset,
            record.store_timestamp,
            record.offset_msg_id,
            props.get("UNIQ_KEY"),
            props.get("KEYS"),
        )
    if isinstance(record, Blank):
        return RecordAt(record.physical_offset, "blank", record.total_size)
    return RecordAt(record.physical_offset, "end")


def _past(log: CommitLog, start: int, end: int) -> tuple[RecordAt | None, dict[str, int]]:
    """(the record at `start`, messages per topic from `start` up to the valid end `end`): the record
    decoded, the rest counted from their fixed fields with the broker's check (struct reads, ~5 us a record
    where a full decode costs ~40)."""
    if start >= end:
        return None, {}
    first = _described(next(iter(log.iter_records(start, check_crc=False))))
    counts: Counter[bytes] = Counter()
    at = start
    while at < end:
        f = log.queue.find(at)
        if f is None:
            break
        buf, pos, released = f.buffer(), at - f.start_offset, at - f.start_offset
        stop = min(end, f.end_offset) - f.start_offset
        status = "ok"
        while pos < stop:
            status, total, fields = check_record(buf, f.size, pos, False, True)
            if status != "ok" or fields is None:
                break
            counts[fields[6]] += 1
            pos += total
            if pos - released >= RELEASE_STEP:
                f.release_pages(pos)
                released = pos
        f.release_pages(f.size)
        if status not in ("ok", "blank"):
            break
        at = f.end_offset if status == "blank" else f.start_offset + pos
    return first, {topic.decode("utf-8", "replace"): n for topic, n in counts.items()}


def compare_commitlogs(a: CommitLog, b: CommitLog, *, block: int = BLOCK) -> LogDiff:
    """Compare two classic commitlogs (see the module docstring)."""
    size_a, size_b = a.file_size, b.file_size
    if size_a and size_b and size_a != size_b:
        raise LogCompareError(
            f"the commitlog files are {size_a} bytes in {_named(a.directory)} and {size_b} in "
            f"{_named(b.directory)}: replicas of one broker have the same mappedFileSizeCommitLog; "
            "not compared",
            _named(b.directory),
        )
    mins, maxs = (a.min_offset, b.min_offset), (a.max_offset, b.max_offset)
    lo, hi = max(mins), min(maxs)
    if hi < lo:
        raise LogCompareError(
            f"the commitlogs share no offsets (A holds [{mins[0]}, {maxs[0]}), B [{mins[1]}, {maxs[1]})): "
            "not compared",
            str(b.directory),
        )
    diff_at, read = first_difference(a, b, lo, hi, block)
    start = None if diff_at is None else _record_start(a, diff_at)
    prefix_end = hi if start is None else start
    rec_a, past_a = _past(a, prefix_end, maxs[0])
    rec_b, past_b = _past(b, prefix_end, maxs[1])
    return LogDiff(mins, maxs, (lo, hi), diff_at, start, (rec_a, rec_b), (past_a, past_b), read)
