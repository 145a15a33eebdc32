"""`IndexWriter`: `IndexService.buildIndex` + `IndexFile.putKey` on an in-memory overlay of the last index
file (header, slot table, new entries), so even the default 420 MB geometry costs only its slot table (20 MB)
in memory. New files are created when none exists or the last one is full - eagerly, at the next dispatched
record, as `getAndCreateLastIndexFile` does - named by the (injected) clock as `yyyyMMddHHmmssSSS`, with
begin/end copied from the previous file's end (the `IndexFile.putKey` quirk). The byte layout is tested
against `formats.indexfile.IndexFile.put_key` / `store.index.indexservice.IndexService.build_index`.
"""

from __future__ import annotations

import array
import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from formats.indexfile import (
    ENTRY_SIZE,
    HEADER_SIZE,
    INDEX_ENTRY_STRUCT,
    INDEX_HEADER_STRUCT,
    SLOT_SIZE,
    IndexGeometry,
    IndexHeader,
    decode_header,
)
from formats.java.hash import index_key_hash, java_string_hash
from formats.structs import (
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from store.io.filereads import file_size, open_regular, opened, read_from
from store.io.filewrites import (
    DispatchError,
    FileSet,
    create_sparse_file,
    named,
    pwrite_all,
    replace_file,
    temp_path,
    write_done,
)

if TYPE_CHECKING:
    from store.dispatch import DispatchRequest

_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)


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
    """Index file names in load order (names that are longs, sorted; `IndexService.load`); whatever has
    such a name counts (a directory, a FIFO or a link loop is refused when opened)."""
    if not directory.is_dir():
        return []
    return sorted(
        e.name
        for e in os.scandir(directory)
        if e.name.isdigit() and len(e.name) <= 19 and int(e.name) < 2**63
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
    return INDEX_HEADER_STRUCT.pack(
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
        size = file_size(path)
        if size != self.geometry.file_size:
            raise DispatchError(
                f"index file is {size} bytes, but maxHashSlotNum {self.geometry.hash_slot_num} and "
                f"maxIndexNum {self.geometry.index_num} make {self.geometry.file_size}",
                str(path),
            )
        with opened(path) as fd:
            head = read_from(fd, path, HEADER_SIZE)
            slots = self._slot_table(path)
            try:
                got = os.preadv(fd, [memoryview(slots).cast("B")], HEADER_SIZE)
            except OSError as exc:
                raise DispatchError(f"cannot read: {exc.strerror or exc}", str(path)) from exc
            if got != len(slots) * SLOT_SIZE:
                raise DispatchError(f"short read of the hash slots ({got} bytes)", str(path), HEADER_SIZE)
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
        f.entries += INDEX_ENTRY_STRUCT.pack(key_hash, phy, diff, prev)
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
    fin = open_regular(src)
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


__all__ = [
    "IndexWriter",
    "index_file_name",
    "list_index_files",
]
