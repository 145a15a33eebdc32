"""One IndexFile: header, hash slots, entries, the broker's chain lookup and `putKey`, geometry inference.

Layouts come from `formats.structs` (`IndexHeader`, `IndexSlot`, `IndexEntry`; `IndexFile`, `IndexHeader`).
The broker does not store its geometry (`maxHashSlotNum`, `maxIndexNum`) in the file; `infer_geometry`
recovers it from one file's bytes when it is not known from the broker's config (see its docstring for the
rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

import functools
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from construct import ConstructError

from formats import structs
from formats.errors import FormatError
from formats.java.hash import index_key_hash
from formats.twins import dtype_twin, struct_twin

HEADER_SIZE = structs.INDEX_HEADER_SIZE
SLOT_SIZE = structs.INDEX_SLOT_SIZE
ENTRY_SIZE = structs.INDEX_ENTRY_SIZE

DEFAULT_HASH_SLOT_NUM = 5_000_000  # maxHashSlotNum
DEFAULT_INDEX_NUM = 20_000_000  # maxIndexNum

INT_MAX = 2**31 - 1
# struct twins of structs.IndexHeader / IndexSlot / IndexEntry for the hot paths (property-tested equal).
INDEX_HEADER_STRUCT = struct_twin("IndexHeader", structs.IndexHeader, struct.Struct(">qqqqii"))
INDEX_SLOT_STRUCT = _SLOT = struct_twin("IndexSlot", structs.IndexSlot, struct.Struct(">i"))
INDEX_ENTRY_STRUCT = _ENTRY = struct_twin("IndexEntry", structs.IndexEntry, struct.Struct(">iqii"))
LONG_MAX = 2**63 - 1


# One entry as numpy sees it: packed, big-endian, 20 bytes (property-tested against `structs.IndexEntry`).
@dtype_twin("IndexEntry (numpy)", structs.IndexEntry)
@functools.cache
def index_entry_dtype():
    import numpy as np

    return np.dtype([("keyHash", ">i4"), ("phyOffset", ">i8"), ("timeDiff", ">i4"), ("prevIndex", ">i4")])


def _to_int64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


def _java_div(a: int, b: int) -> int:
    """Java integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    """`40 + hashSlotNum * 4 + indexNum * 20`."""
    return HEADER_SIZE + hash_slot_num * SLOT_SIZE + index_num * ENTRY_SIZE


def oversized_index(hash_slot_num: int, index_num: int) -> str | None:
    """Why the broker cannot make index files of this geometry (IndexFile computes the file size in a Java
    int), or None when it can."""
    size = index_file_size(hash_slot_num, index_num)
    if size < 2**31:
        return None
    return (
        f"maxHashSlotNum {hash_slot_num} and maxIndexNum {index_num} make index files of {size} bytes, "
        "more than a Java int (the broker's IndexFile size) holds"
    )


@dataclass(frozen=True, slots=True)
class IndexGeometry:
    """The two broker settings that shape an index file."""

    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM
    index_num: int = DEFAULT_INDEX_NUM

    @property
    def file_size(self) -> int:
        return index_file_size(self.hash_slot_num, self.index_num)

    def slot_position(self, slot: int) -> int:
        return HEADER_SIZE + slot * SLOT_SIZE

    def entry_position(self, index: int) -> int:
        return HEADER_SIZE + self.hash_slot_num * SLOT_SIZE + index * ENTRY_SIZE


DEFAULT_GEOMETRY = IndexGeometry()


@dataclass(frozen=True, slots=True)
class IndexHeader:
    """The 40-byte header as stored (`IndexHeader.load` / `updateByteBuffer`)."""

    begin_timestamp: int = 0
    end_timestamp: int = 0
    begin_phy_offset: int = 0
    end_phy_offset: int = 0
    hash_slot_count: int = 0
    index_count: int = 0

    @property
    def effective_index_count(self) -> int:
        """`IndexHeader.load`: a stored count <= 0 reads as 1 (the next entry position)."""
        return self.index_count if self.index_count > 0 else 1

    @property
    def entries_used(self) -> int:
        return self.effective_index_count - 1


def decode_header(data: bytes | memoryview | bytearray, file: str | None = None) -> IndexHeader:
    if len(data) < HEADER_SIZE:
        raise FormatError(f"index file header needs {HEADER_SIZE} bytes, found {len(data)}", file, 0)
    h = structs.IndexHeader.parse(bytes(data[:HEADER_SIZE]))
    return IndexHeader(
        h.beginTimestamp, h.endTimestamp, h.beginPhyOffset, h.endPhyOffset, h.hashSlotCount, h.indexCount
    )


def encode_header(header: IndexHeader) -> bytes:
    try:
        return structs.IndexHeader.build(
            {
                "beginTimestamp": header.begin_timestamp,
                "endTimestamp": header.end_timestamp,
                "beginPhyOffset": header.begin_phy_offset,
                "endPhyOffset": header.end_phy_offset,
                "hashSlotCount": header.hash_slot_count,
                "indexCount": header.index_count,
            }
        )
    except ConstructError as exc:
        raise FormatError(f"cannot encode index header: {exc}") from exc


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One entry (`IndexFile.putKey`), with its 1-based position in the file."""

    position: int
    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int


class IndexFile:
    """An index file over a buffer (read-only bytes/mmap, or a bytearray for `put_key`)."""

    def __init__(
        self,
        data: bytes | memoryview | bytearray,
        geometry: IndexGeometry,
        name: str | None = None,
        file: str | None = None,
    ) -> None:
        self.data = data
        self.geometry = geometry
        self.name = name
        self.file = file
        if len(data) != geometry.file_size:
            raise FormatError(
                f"index file is {len(data)} bytes, but hashSlotNum {geometry.hash_slot_num} and "
                f"indexNum {geometry.index_num} make {geometry.file_size}",
                file,
            )
        count = self.header.index_count
        if count > geometry.index_num:
            raise FormatError(f"indexCount {count} exceeds indexNum {geometry.index_num}", file, 36)

    # --- reading ---------------------------------------------------------------------------------

    @property
    def header(self) -> IndexHeader:
        # Read-only files are decoded once; a bytearray being written is read afresh each time.
        if isinstance(self.data, bytearray):
            return decode_header(self.data, self.file)
        cached = self.__dict__.get("_header")
        if cached is None:
            cached = self.__dict__["_header"] = decode_header(self.data, self.file)
        return cached

    @property
    def index_count(self) -> int:
        return self.header.effective_index_count

    @property
    def is_write_full(self) -> bool:
        return self.index_count >= self.geometry.index_num

    def slot_value(self, slot: int) -> int:
        if not 0 <= slot < self.geometry.hash_slot_num:
            raise FormatError(f"hash slot {slot} outside [0, {self.geometry.hash_slot_num})", self.file)
        return _SLOT.unpack_from(self.data, self.geometry.slot_position(slot))[0]

    def entry(self, position: int) -> IndexEntry:
        """The entry at a 1-based position (position 0 is never written)."""
        if not 0 <= position < self.geometry.index_num:
            raise FormatError(
                f"index entry {position} outside [0, {self.geometry.index_num})",
                self.file,
                self.geometry.entry_position(position) if position >= 0 else None,
            )
        key_hash, phy_offset, time_diff, prev_index = _ENTRY.unpack_from(
            self.data, self.geometry.entry_position(position)
        )
        return IndexEntry(position, key_hash, phy_offset, time_diff, prev_index)

    def slots_view(self) -> np.ndarray:
        """All hash slots as a big-endian int32 array (zero-copy)."""
        import numpy as np

        return np.frombuffer(self.data, dtype=">i4", count=self.geometry.hash_slot_num, offset=HEADER_SIZE)

    def entries_view(self) -> np.ndarray:
        """Entries 1 .. indexCount-1 as a structured array (`index_entry_dtype()`, zero-copy)."""
        import numpy as np

        used = self.index_count - 1
        return np.frombuffer(
            self.data, dtype=index_entry_dtype(), count=used, offset=self.geometry.entry_position(1)
        )

    def iter_entries(self) -> Iterator[IndexEntry]:
        """Every used entry in write order."""
        view = self.entries_view()
        for i, (kh, phy, td, prev) in enumerate(view.tolist(), start=1):
            yield IndexEntry(i, kh, phy, td, prev)

    def is_time_matched(self, begin: int, end: int) -> bool:
        """`IndexFile.isTimeMatched`."""
        h = self.header
        return (
            (begin < h.begin_timestamp and end > h.end_timestamp)
            or (h.begin_timestamp <= begin <= h.end_timestamp)
            or (h.begin_timestamp <= end <= h.end_timestamp)
        )

    def select_phy_offsets(
        self,
        key_hash: int,
        begin: int,
        end: int,
        max_num: int | None,
        out: list[int] | None = None,
    ) -> list[int]:
        """`IndexFile.selectPhyOffset`: walk the slot chain of `key_hash` newest first.

        Appends to `out` (shared across files by the caller, as the broker does) and returns it.
        `max_num=None` means no cap. Only the 31-bit hash and the entry's second-granular time are
        compared, so colliding keys are returned too.
        """
        if out is None:
            out = []
        h = self.header
        count = h.effective_index_count
        pos = self.slot_value(key_hash % self.geometry.hash_slot_num)
        if pos <= 0 or pos > count or count <= 1:
            return out
        steps = 0
        while max_num is None or len(out) < max_num:
            # A chain written by putKey only links to earlier entries, so it has fewer than `count` steps;
            # a corrupt prevIndex can make a loop, which must not make the walk endless.
            steps += 1
            if steps > count:
                break
            e = self.entry(pos)
            if e.time_diff < 0:
                break
            time_read = _to_int64(h.begin_timestamp + e.time_diff * 1000)
            if e.key_hash == key_hash and begin <= time_read <= end:
                out.append(e.phy_offset)
            prev = e.prev_index
            if prev <= 0 or prev > count or prev == pos or time_read < begin:
                break
            pos = prev
        return out

    def validate(self) -> None:
        """Raise FormatError unless slots and entry chains are what `putKey` would have written."""
        import numpy as np

        s = self.geometry.hash_slot_num
        count = self.index_count
        slots = self.slots_view().astype(np.int64)
        bad = np.flatnonzero((slots < 0) | (slots >= count))
        if len(bad):
            slot = int(bad[0])
            raise FormatError(
                f"hash slot {slot} holds {int(slots[slot])}, outside [0, {count})",
                self.file,
                self.geometry.slot_position(slot),
            )
        entries = self.entries_view()
        key_hash = entries["keyHash"].astype(np.int64)
        prev = entries["prevIndex"].astype(np.int64)
        positions = np.arange(1, count, dtype=np.int64)
        problem = (key_hash < 0) | (prev < 0) | (prev >= positions)
        key_slot = np.concatenate(([-1], np.where(key_hash >= 0, key_hash % s, -1)))
        has_prev = (prev > 0) & ~problem
        problem |= has_prev & (key_slot[np.where(has_prev, prev, 0)] != key_slot[positions])
        bad = np.flatnonzero(problem)
        if len(bad):
            i = int(bad[0]) + 1
            raise FormatError(
                f"index entry {i} is not part of a valid hash chain",
                self.file,
                self.geometry.entry_position(i),
            )
        used = np.flatnonzero(slots)
        wrong = used[key_slot[slots[used]] != used]
        if len(wrong):
            slot = int(wrong[0])
            raise FormatError(
                f"hash slot {slot} points at entry {int(slots[slot])} of another slot",
                self.file,
                self.geometry.slot_position(slot),
            )

    # --- writing (IndexFile.putKey) ---------------------------------------------------------------

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """`IndexFile.putKey` on a bytearray: False when the file is full, as the broker's."""
        if not isinstance(self.data, bytearray):
            raise TypeError("put_key needs an IndexFile over a bytearray")
        h = self.header
        count = h.effective_index_count
        if count >= self.geometry.index_num:
            return False
        key_hash = index_key_hash(key)
        slot_pos = self.geometry.slot_position(key_hash % self.geometry.hash_slot_num)
        slot_value = structs.IndexSlot.parse(bytes(self.data[slot_pos : slot_pos + SLOT_SIZE]))
        if slot_value <= 0 or slot_value > count:
            slot_value = 0
        time_diff = _java_div(_to_int64(store_timestamp - h.begin_timestamp), 1000)
        if h.begin_timestamp <= 0:
            time_diff = 0
        elif time_diff > INT_MAX:
            time_diff = INT_MAX
        elif time_diff < 0:
            time_diff = 0
        pos = self.geometry.entry_position(count)
        self.data[pos : pos + ENTRY_SIZE] = structs.IndexEntry.build(
            {"keyHash": key_hash, "phyOffset": phy_offset, "timeDiff": time_diff, "prevIndex": slot_value}
        )
        self.data[slot_pos : slot_pos + SLOT_SIZE] = structs.IndexSlot.build(count)
        begin_phy, begin_ts = h.begin_phy_offset, h.begin_timestamp
        if count <= 1:
            begin_phy, begin_ts = phy_offset, store_timestamp
        self.data[:HEADER_SIZE] = encode_header(
            IndexHeader(
                begin_timestamp=begin_ts,
                end_timestamp=store_timestamp,
                begin_phy_offset=begin_phy,
                end_phy_offset=phy_offset,
                hash_slot_count=h.hash_slot_count + (1 if slot_value == 0 else 0),
                index_count=count + 1,
            )
        )
        return True


def new_index_file(
    geometry: IndexGeometry, end_phy_offset: int = 0, end_timestamp: int = 0, name: str | None = None
) -> IndexFile:
    """A fresh zero-filled file as `new IndexFile(..., endPhyOffset, endTimestamp)` starts it.

    A file that follows a full one gets the previous file's end offset/time as its begin and end.
    """
    data = bytearray(geometry.file_size)
    begin_phy = end_phy = begin_ts = end_ts = 0
    if end_phy_offset > 0:
        begin_phy = end_phy = end_phy_offset
    if end_timestamp > 0:
        begin_ts = end_ts = end_timestamp
    data[:HEADER_SIZE] = encode_header(IndexHeader(begin_ts, end_ts, begin_phy, end_phy, 0, 0))
    return IndexFile(data, geometry, name=name)


# --- geometry inference ------------------------------------------------------------------------


def geometry_of_full_file(file_size: int, index_count: int) -> IndexGeometry | None:
    """The geometry of a file known to be full (indexCount == indexNum), or None if none fits."""
    if index_count < 1:
        return None
    rest = file_size - HEADER_SIZE - index_count * ENTRY_SIZE
    if rest <= 0 or rest % SLOT_SIZE:
        return None
    return IndexGeometry(rest // SLOT_SIZE, index_count)


def _plausible_slot_nums(words: np.ndarray, header: IndexHeader, candidates: np.ndarray) -> np.ndarray:
    """Filter candidate slot counts by O(1) checks on the newest and the first entry."""
    import numpy as np

    count = header.effective_index_count
    last = count - 1
    s = candidates
    # the newest entry heads its slot's chain
    kh = words[10 + s + 5 * last].astype(np.int64)
    ok = kh >= 0
    slot = np.where(ok, kh % s, 0)
    ok &= words[10 + slot] == last
    prev = words[10 + s + 5 * last + 4].astype(np.int64)
    ok &= (prev >= 0) & (prev < last)
    # the first entry starts a chain
    ok &= words[10 + s + 5 + 4] == 0
    kh1 = words[10 + s + 5].astype(np.int64)
    ok &= kh1 >= 0
    return s[ok]


def infer_geometry(data: bytes | memoryview | bytearray, file: str | None = None) -> IndexGeometry:
    """The (hashSlotNum, indexNum) of one index file, from its size and contents.

    Rule: a file of the default size (420,000,040 bytes) has the broker defaults. Otherwise every split
    `size = 40 + 4*s + 20*n` with `s >= hashSlotCount` and `n >= indexCount` is a candidate; a candidate
    survives if the newest entry heads its slot's chain, the first entry starts one, the number of used
    slots equals hashSlotCount and `validate()` passes. Exactly one survivor is the answer; none or
    several (e.g. an empty file) raise FormatError — then pass the broker's settings explicitly.
    A directory with several files should use `geometry_of_full_file` on a non-last file instead.
    """
    import numpy as np

    size = len(data)
    if size == DEFAULT_GEOMETRY.file_size:
        return DEFAULT_GEOMETRY
    header = decode_header(data, file)
    if size < HEADER_SIZE + SLOT_SIZE + 2 * ENTRY_SIZE or (size - HEADER_SIZE) % SLOT_SIZE:
        raise FormatError(f"{size} bytes cannot be an index file (40 + 4*slots + 20*entries)", file)
    count = header.effective_index_count
    if count <= 1:
        raise FormatError(
            "index file has no entries, so its hashSlotNum/indexNum cannot be inferred; "
            "give the broker's maxHashSlotNum and maxIndexNum",
            file,
        )
    total_words = (size - HEADER_SIZE) // SLOT_SIZE  # s + 5n
    words = np.frombuffer(data, dtype=">i4")
    s_min = max(1, header.hash_slot_count)
    s_min += (total_words - s_min) % 5  # s must leave a multiple of 5 words for the entries
    s_max = total_words - 5 * count
    survivors: list[IndexGeometry] = []
    chunk = 1 << 20
    for start in range(s_min, s_max + 1, 5 * chunk):
        candidates = np.arange(start, min(s_max, start + 5 * (chunk - 1)) + 1, 5, dtype=np.int64)
        for s in _plausible_slot_nums(words, header, candidates).tolist():
            geometry = IndexGeometry(s, (total_words - s) // 5)
            if int(np.count_nonzero(words[10 : 10 + s])) != header.hash_slot_count:
                continue
            try:
                IndexFile(data, geometry, file=file).validate()
            except FormatError:
                continue
            survivors.append(geometry)
    if len(survivors) == 1:
        return survivors[0]
    if not survivors:
        raise FormatError("no hashSlotNum/indexNum fits this index file's size and contents", file)
    shown = ", ".join(f"({g.hash_slot_num}, {g.index_num})" for g in survivors[:5])
    raise FormatError(
        f"ambiguous index geometry: {len(survivors)} (hashSlotNum, indexNum) pairs fit, e.g. {shown}; "
        "give the broker's maxHashSlotNum and maxIndexNum",
        file,
    )


def __getattr__(name: str):
    # `INDEX_ENTRY_DTYPE` stays importable; numpy is imported only when it is first used.
    if name == "INDEX_ENTRY_DTYPE":
        return index_entry_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
