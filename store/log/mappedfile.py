"""MappedFileQueue: a directory of files named by their 20-digit start offset, read through mmap.

The commitlog, every ConsumeQueue and the timer log are such queues (`MappedFileQueue.load`). Files are
opened read-only; nothing here writes. Every file of a queue must be the configured size: the broker's
load refuses a file of another length (rocketmq-all-5.3.3 store/.../MappedFileQueue.java:262-265,
"length not matched message store config value, please check it manually": `doLoad` returns false and
the broker does not start), and a mapped file's size is a Java int. What the files show of that size is
the size most of them have among the sizes a broker can configure (`majority_size`): one outlier, a
file truncated up to 100 GiB, never decides it; the odd file is reported.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formats.errors import FormatError
from store.io import remote
from store.io.filereads import StoreFileError, kind_of, map_readonly, open_regular
from store.log.recovery import recovery_start_normal

# A mapped file's size is a Java int (MappedFile.fileSize, a MappedByteBuffer's capacity): Integer.MAX_VALUE.
MAX_MAPPED_FILE_SIZE = 2**31 - 1
LENGTH_NOT_MATCHED = (
    "length not matched message store config value: the broker's load refuses it and it does not start"
)


def possible_file_size(size: int, unit: int = 1) -> bool:
    """A size a broker can configure for a queue of `unit`-byte units: positive, a whole number of units,
    at most `MAX_MAPPED_FILE_SIZE`."""
    return 0 < size <= MAX_MAPPED_FILE_SIZE and size % unit == 0


def majority_size(sizes: Iterable[int], unit: int = 1) -> int | None:
    """The size more files have than any other, among the sizes a broker can configure
    (`possible_file_size`); None when there is none, or two sizes tie."""
    counts = Counter(s for s in sizes if possible_file_size(s, unit))
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def offset_to_file_name(offset: int) -> str:
    """`UtilAll.offset2FileName`: decimal, zero-padded to 20 digits."""
    return f"{offset:020d}"


def is_offset_file_name(name: str) -> bool:
    return len(name) == 20 and name.isdigit()


@dataclass
class MappedFile:
    """One file of a mapped-file queue, mapped read-only on first use."""

    path: Path
    start_offset: int
    size: int
    _map: mmap.mmap | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def end_offset(self) -> int:
        return self.start_offset + self.size

    def buffer(self) -> memoryview | bytes:
        """The file's bytes: a read-only mmap (empty files give b"")."""
        if self.size == 0:
            return b""
        if self.size > MAX_MAPPED_FILE_SIZE:
            raise StoreFileError(
                f"file of {self.size} bytes, larger than a mapped file can be ({MAX_MAPPED_FILE_SIZE}, a "
                f"Java int): {LENGTH_NOT_MATCHED}",
                str(self.path),
            )
        if self._map is None:
            if remote.placeholder(self.path):
                remote.fetch_placeholder(self.path)  # a store read by URL: driver code maps this file
            try:
                self._map = map_readonly(self.path)
            except FileNotFoundError as exc:
                raise StoreFileError("cannot open: the file is gone", str(self.path)) from exc
        return memoryview(self._map)

    def release_pages(self, end: int) -> None:
        """Unmap this process's view of the file's pages before `end` (madvise MADV_DONTNEED on the
        read-only map): a walk through a 1 GiB file keeps in its resident set only what it still reads.
        The data stays in the page cache; a later read through the map faults the pages in again."""
        if self._map is None:
            return
        length = min(end, self.size)
        length -= length % mmap.PAGESIZE
        if length > 0:
            self._map.madvise(mmap.MADV_DONTNEED, 0, length)

    def record_buffer(self, position: int) -> memoryview | bytes:
        """A buffer of the whole file in which the record at `position` can be read: the map, or for a
        placeholder of a store read by URL (`store.io.remote`) a file-sized array holding that record only
        (two ranged reads; a file read this way many times is fetched whole instead)."""
        entry = remote.placeholder(self.path)
        if entry is None or remote.read_often(self.path):
            return self.buffer()
        head = self.read(position, 4)
        total = int.from_bytes(head, "big", signed=True) if len(head) == 4 else 0
        end = min(self.size, position + max(total, 8))
        return memoryview(remote.file_array(entry[0], self.size, position, end))

    def read(self, position: int, length: int) -> bytes:
        """Bytes [position, position+length) of this file, clipped to its end.

        Read with pread, not through the map: a page fault on a cold mapping reads ahead up to the
        device's read_ahead_kb (8 MiB on some hosts) - a whole sparse ConsumeQueue file for a few units,
        megabytes of commitlog for one message - where pread's readahead starts at what was asked."""
        length = max(0, min(position + length, self.size) - position)
        if self._map is None and (entry := remote.placeholder(self.path)):
            return remote.read_range(entry[0], position, length)
        try:
            fd = open_regular(self.path)
        except FileNotFoundError as exc:
            raise StoreFileError("cannot open: the file is gone", str(self.path)) from exc
        try:
            return os.pread(fd, length, position) if length else b""
        except OSError as exc:
            raise StoreFileError(f"cannot read at {position}: {exc.strerror}", str(self.path)) from exc
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._map is not None:
            # A memoryview may still refer to the map; the GC closes it then.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None


class MappedFileQueue:
    """The files of one mapped-file directory, in offset order (`MappedFileQueue.load`)."""

    def __init__(self, directory: Path, files: list[MappedFile]) -> None:
        self.directory = directory
        self.files = files

    @classmethod
    def open(cls, directory: Path | str) -> MappedFileQueue:
        if not isinstance(directory, Path):
            directory = Path(directory)
        files: list[MappedFile] = []
        if not directory.exists():
            return cls(directory, files)
        if not directory.is_dir():
            raise StoreFileError("not a directory", str(directory))
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise StoreFileError(f"cannot list: {exc.strerror}", str(directory)) from exc
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError as exc:  # e.g. a symlink loop
                raise StoreFileError(f"cannot stat: {exc.strerror}", entry.path) from exc
            if is_dir:
                continue  # the broker skips directories inside a queue directory
            if not is_offset_file_name(entry.name):
                raise StoreFileError(
                    "stray file in a mapped-file directory (the broker would refuse to start)",
                    entry.path,
                )
            try:
                st = entry.stat()
            except OSError as exc:
                raise StoreFileError(f"cannot stat: {exc.strerror}", entry.path) from exc
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block a read, a device never end
                raise StoreFileError(f"cannot read: {kind_of(st.st_mode)}, not a regular file", entry.path)
            size = st.st_size
            # a child of `directory`: pathlib parses the one new name, not the whole path again (a store
            # may hold 100,000+ ConsumeQueue files)
            files.append(MappedFile(directory / entry.name, int(entry.name), size))
        return cls(directory, files)

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self):
        return iter(self.files)

    @property
    def file_size(self) -> int | None:
        """The configured file size as the files show it: `majority_size` of their sizes."""
        return self.majority_size()

    def majority_size(self, unit: int = 1) -> int | None:
        """`majority_size` of the files' sizes (for a queue of `unit`-byte units)."""
        return majority_size((f.size for f in self.files), unit)

    def check_unit_files(self, file_size: int, unit: int) -> None:
        """A unit queue's files (ConsumeQueue, BatchConsumeQueue, of `unit`-byte units): each `file_size`
        bytes and named at a multiple of it; the broker refuses to start otherwise."""
        for f in self.files:
            if f.size != file_size:
                odd = "" if possible_file_size(f.size, unit) else (
                    f", nor a multiple of the {unit}-byte unit" if f.size % unit else ", nor a Java int"
                )  # fmt: skip
                raise FormatError(
                    f"file size {f.size} is not the queue's file size {file_size}{odd}: {LENGTH_NOT_MATCHED}",
                    str(f.path),
                )
            if f.start_offset % file_size:
                raise FormatError(f"file name is not a multiple of the file size {file_size}", str(f.path))

    @property
    def min_offset(self) -> int:
        """Start offset of the first file (0 when empty)."""
        return self.files[0].start_offset if self.files else 0

    @property
    def max_file_end(self) -> int:
        """End offset of the last file (its start plus its size)."""
        return self.files[-1].end_offset if self.files else 0

    def find(self, offset: int) -> MappedFile | None:
        """The file containing `offset`, or None if it lies outside every file."""
        index = self.find_index(offset)
        return self.files[index] if index >= 0 else None

    def find_index(self, offset: int) -> int:
        """Index of the file containing `offset`, or -1 if it lies outside every file."""
        lo, hi = 0, len(self.files) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            f = self.files[mid]
            if offset < f.start_offset:
                hi = mid - 1
            elif offset >= f.start_offset + f.size:
                lo = mid + 1
            else:
                return mid
        return -1

    def close(self) -> None:
        for f in self.files:
            f.close()


def recover_unit_queue_end(
    files: Sequence[MappedFile], file_size: int, unit_size: int, valid_units: Callable[[MappedFile], int]
) -> int:
    """The write position a unit queue's `recover()` finds (ConsumeQueue, BatchConsumeQueue): from the
    third-from-last file, whole files of valid units, then the valid prefix of the first file that is not
    whole (the end of the last file when all are). `valid_units(f)`: how many units from the start of `f`
    pass the queue's validity test."""
    end = 0
    first = recovery_start_normal([f.start_offset for f in files]) or 0
    for f in files[first:]:
        end = f.start_offset + valid_units(f) * unit_size
        if end < f.start_offset + file_size:
            break
    return end
