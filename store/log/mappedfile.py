"""MappedFileQueue: a directory of files named by their 20-digit start offset, read through mmap.

The commitlog, every ConsumeQueue and the timer log are such queues (`MappedFileQueue.load`). Files are
opened read-only; nothing here writes. A queue's files must all have one size; the broker refuses to
start otherwise, and we report the odd one out instead of guessing.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formats.errors import FormatError, MqtoolError
from store.io import remote
from store.log.recovery import recovery_start_normal


def offset_to_file_name(offset: int) -> str:
    """`UtilAll.offset2FileName`: decimal, zero-padded to 20 digits."""
    return f"{offset:020d}"


def is_offset_file_name(name: str) -> bool:
    return len(name) == 20 and name.isdigit()


class StoreFileError(MqtoolError):
    """A store file or directory that cannot be opened or is not what the broker would write."""


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
        if self._map is None:
            if remote.placeholder(self.path):
                remote.fetch_placeholder(self.path)  # a store read by URL: driver code maps this file
            try:
                with open(self.path, "rb") as fh:
                    self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except OSError as exc:
                raise StoreFileError(f"cannot open: {exc.strerror}", str(self.path)) from exc
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
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise StoreFileError(f"cannot open: {exc.strerror}", str(self.path)) from exc
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
                size = entry.stat().st_size
            except OSError as exc:
                raise StoreFileError(f"cannot stat: {exc.strerror}", entry.path) from exc
            files.append(MappedFile(Path(entry.path), int(entry.name), size))
        return cls(directory, files)

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self):
        return iter(self.files)

    @property
    def file_size(self) -> int | None:
        """The configured file size as the files show it (the first file's size)."""
        sizes = [f.size for f in self.files if f.size > 0]
        return sizes[0] if sizes else None

    def check_sizes(self) -> None:
        """Raise when files differ in size: the broker's load() would fail on such a queue."""
        expected = self.file_size
        for f in self.files:
            if f.size not in (expected, 0):
                raise FormatError(
                    f"file size {f.size} differs from the queue's file size {expected}", str(f.path)
                )

    def check_unit_files(self, file_size: int) -> None:
        """A unit queue's files (ConsumeQueue, BatchConsumeQueue): each `file_size` bytes and named at a
        multiple of it; the broker refuses to start otherwise."""
        for f in self.files:
            if f.size != file_size:
                raise FormatError(
                    f"file size {f.size} differs from the queue's file size {file_size} "
                    "(the broker would refuse to start)",
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
        lo, hi = 0, len(self.files) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            f = self.files[mid]
            if offset < f.start_offset:
                hi = mid - 1
            elif offset >= f.start_offset + f.size:
                lo = mid + 1
            else:
                return f
        return None

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
