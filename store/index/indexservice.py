"""IndexService over `${root}/index/`: geometry, headers, key queries, and index building as the broker does.

Query semantics are `IndexService.queryOffset` (via `QueryMessageProcessor.queryMessage`): files newest first,
the time-match and stop rules, and the physical offsets in the order the broker collects them (it sorts them
only afterwards, when it reads the records). Building follows `IndexService.buildIndex` on
in-memory files, so a rebuild reproduces the broker's bytes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from formats.errors import FormatError
from formats.indexfile import (
    DEFAULT_GEOMETRY,
    LONG_MAX,
    IndexFile,
    IndexGeometry,
    IndexHeader,
    decode_header,
    geometry_of_full_file,
    infer_geometry,
    new_index_file,
)
from formats.java.hash import index_key, index_key_hash
from formats.structs import TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from store.io.filereads import StoreFileError, file_size
from store.log.mappedfile import MAX_MAPPED_FILE_SIZE, MappedFile, majority_size

_LONG_NAME = re.compile(r"[0-9]{1,19}")

MAX_MSGS_NUM_BATCH = 64  # maxMsgsNumBatch: the broker caps a key query's maxNum at this


@dataclass(frozen=True, slots=True)
class QueryOffsetResult:
    """`QueryOffsetResult`: physical offsets in collection order, and the newest file's end values."""

    phy_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phy_offset: int


def _index_file_names(directory: Path) -> list[str]:
    """Index files in name (= creation) order; names that are not a long are skipped, as the broker does
    (`Long.parseLong` of the name throws NumberFormatException, which IndexService.load skips). Whatever
    has such a name counts: a directory, a FIFO or a link loop is refused when opened, as the broker's
    load fails on it (IOException: rocketmq-all-5.3.3 IndexService.java:64-81)."""
    if not directory.is_dir():
        return []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise StoreFileError(f"cannot list: {exc.strerror}", str(directory)) from exc
    return [e.name for e in entries if _LONG_NAME.fullmatch(e.name) and int(e.name) <= LONG_MAX]


def resolve_geometry(
    sizes: list[int],
    headers: list[IndexHeader],
    first_buffer: bytes | memoryview | None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    where: str | None = None,
) -> IndexGeometry | None:
    """The directory's (hashSlotNum, indexNum), from the broker settings when given, else inferred.

    Rule: (1) settings given -> used (one of them given -> the other from the file size); (2) no files
    -> broker defaults; (3) files of the default size 420,000,040 -> defaults; (4) several files -> every
    file but the last is full (the broker starts a file only when the previous one is full), so
    indexNum = their indexCount and hashSlotNum follows from the size; (5) a single file -> inferred
    from its contents (`infer_geometry`). None when a single file holds no entry (nothing to query).
    """
    if hash_slot_num is not None or index_num is not None:
        if hash_slot_num is None or index_num is None:
            if not sizes:
                raise FormatError(
                    "give both maxHashSlotNum and maxIndexNum for an empty index directory", where
                )
            rest = sizes[0] - 40 - (index_num or 0) * 20 - (hash_slot_num or 0) * 4
            if rest <= 0 or rest % (4 if hash_slot_num is None else 20):
                raise FormatError(f"index file size {sizes[0]} does not fit the given setting", where)
            if hash_slot_num is None:
                hash_slot_num = rest // 4
            else:
                index_num = rest // 20
        geometry = IndexGeometry(hash_slot_num, index_num)
        for size in sizes:
            if size != geometry.file_size:
                raise FormatError(
                    f"index file is {size} bytes, but maxHashSlotNum {hash_slot_num} and maxIndexNum "
                    f"{index_num} make {geometry.file_size}",
                    where,
                )
        return geometry
    if not sizes:
        return DEFAULT_GEOMETRY
    if len(set(sizes)) > 1:
        raise FormatError(f"index files differ in size ({sorted(set(sizes))})", where)
    size = sizes[0]
    if size == DEFAULT_GEOMETRY.file_size:
        return DEFAULT_GEOMETRY
    if len(sizes) > 1:
        counts = {h.index_count for h in headers[:-1]}
        geometry = geometry_of_full_file(size, headers[0].index_count) if len(counts) == 1 else None
        if geometry is None:
            raise FormatError(
                "cannot infer maxHashSlotNum/maxIndexNum: the index files before the last are not "
                f"equally full (indexCount {sorted(counts)}); give the broker's settings",
                where,
            )
        return geometry
    if headers[0].effective_index_count <= 1:
        return None
    assert first_buffer is not None
    return infer_geometry(first_buffer, where)


def _check_sizes(files: list[MappedFile]) -> None:
    """Every index file has one size (maxHashSlotNum and maxIndexNum make it): a file of another size than
    most of them is named; one larger than a mapped file can be (a Java int) never decides the size."""
    common = majority_size(f.size for f in files)
    for f in files:
        if f.size > MAX_MAPPED_FILE_SIZE or (common is not None and f.size != common):
            what = f"the other index files' {common}" if common is not None else "any mapped file's"
            raise FormatError(
                f"index file of {f.size} bytes is not {what} size: maxHashSlotNum and maxIndexNum make "
                "every index file one size",
                str(f.path),
            )


class IndexService:
    """The index files of a store, oldest first."""

    def __init__(
        self,
        root: Path | str | None = None,
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        *,
        files: list[IndexFile] | None = None,
        geometry: IndexGeometry | None = None,
    ) -> None:
        """Open `root/index` read-only, or (with `files=` and `geometry=`) wrap in-memory index files."""
        self.directory = Path(root) / "index" if root is not None else None
        self._mapped: list[MappedFile] = []
        if files is not None:
            self.files = files
            self.geometry = geometry or (files[0].geometry if files else DEFAULT_GEOMETRY)
            self._headers = [f.header for f in files]
            self.names = [f.name for f in files]
            return
        if self.directory is None:
            raise ValueError("IndexService needs a store root or in-memory files")
        self.names = _index_file_names(self.directory)
        self._mapped = [MappedFile(self.directory / n, 0, file_size(self.directory / n)) for n in self.names]
        _check_sizes(self._mapped)
        self._headers = [decode_header(m.read(0, 40), str(m.path)) for m in self._mapped]
        self.geometry = geometry or resolve_geometry(
            [m.size for m in self._mapped],
            self._headers,
            self._mapped[0].buffer() if len(self._mapped) == 1 else None,
            hash_slot_num,
            index_num,
            str(self.directory),
        )
        if self.geometry is None:
            self.files = []  # one empty file of unknown geometry: nothing to query
        else:
            self.files = [
                IndexFile(m.buffer(), self.geometry, name=n, file=str(m.path))
                for n, m in zip(self.names, self._mapped, strict=True)
            ]

    def close(self) -> None:
        self.files = []
        for m in self._mapped:
            m.close()

    def headers(self) -> list[tuple[str | None, IndexHeader]]:
        """(file name, header as stored) for every index file, oldest first."""
        if self.geometry is not None:
            return [(f.name, f.header) for f in self.files]
        return list(zip(self.names, self._headers, strict=True))

    def without_files_newer_than(self, index_msg_timestamp: int) -> IndexService:
        """The files `IndexService.load` keeps after a crash (abort present): endTimestamp <= checkpoint
        `indexMsgTimestamp`; the others are deleted by the broker."""
        kept = [f for f in self.files if f.header.end_timestamp <= index_msg_timestamp]
        return IndexService(files=kept, geometry=self.geometry)

    # --- queryOffset (IndexService.queryOffset) ---------------------------------------------------

    def query_offset(
        self,
        topic: str,
        key: str,
        max_num: int | None = None,
        begin: int = 0,
        end: int = LONG_MAX,
    ) -> QueryOffsetResult:
        """`IndexService.queryOffset`; `max_num=None` means no cap (the broker caps at MAX_MSGS_NUM_BATCH).

        Offsets come newest file first, each file's chain newest first; colliding keys are included.
        """
        phy_offsets: list[int] = []
        last_ts = last_phy = 0
        if self.files:
            last = self.files[-1].header
            last_ts, last_phy = last.end_timestamp, last.end_phy_offset
        key_hash = index_key_hash(index_key(topic, key))
        for f in reversed(self.files):
            if f.is_time_matched(begin, end):
                f.select_phy_offsets(key_hash, begin, end, max_num, phy_offsets)
            if f.header.begin_timestamp < begin:
                break
            if max_num is not None and len(phy_offsets) >= max_num:
                break
        return QueryOffsetResult(phy_offsets, last_ts, last_phy)

    # --- buildIndex (IndexService.buildIndex), on in-memory files ---------------------------------

    def build_index(
        self,
        topic: str,
        phy_offset: int,
        store_timestamp: int,
        sys_flag: int = 0,
        uniq_key: str | None = None,
        keys: str | None = None,
        new_file_name: str | None = None,
    ) -> None:
        """`IndexService.buildIndex` for one dispatched record; full files roll over to new ones.

        The last file must be an in-memory (bytearray) file; new files are appended to `files`.
        """
        if self.geometry is None:
            raise FormatError("index geometry unknown; give maxHashSlotNum and maxIndexNum")
        f = self._last_writable_file(new_file_name)
        if phy_offset < f.header.end_phy_offset:
            return
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE:
            return
        index_keys = []
        if uniq_key is not None:
            index_keys.append(uniq_key)
        if keys:
            index_keys.extend(k for k in keys.split(" ") if k)
        for k in index_keys:
            while not f.put_key(index_key(topic, k), phy_offset, store_timestamp):
                f = self._last_writable_file(new_file_name)

    def _last_writable_file(self, new_file_name: str | None) -> IndexFile:
        """`getAndCreateLastIndexFile`: the last file, or a new one after a full (or no) file."""
        if self.files and not self.files[-1].is_write_full:
            return self.files[-1]
        end_phy = end_ts = 0
        if self.files:
            prev = self.files[-1].header
            end_phy, end_ts = prev.end_phy_offset, prev.end_timestamp
        f = new_index_file(self.geometry, end_phy, end_ts, name=new_file_name)
        self.files.append(f)
        self._headers.append(f.header)
        self.names.append(new_file_name)
        return f
