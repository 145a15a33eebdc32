"""Every store file a command reads is opened here: one check, one kind of error naming the file.

A store file may be anything a damaged or hostile store puts at its path: a FIFO (an open for reading
blocks until a writer comes, a read never ends), a socket (open fails with ENXIO), a character or block
device (/dev/zero never ends), a directory, a symbolic link loop, or a regular file of 100 GiB. So a
file is opened with O_NONBLOCK (a FIFO opens at once instead of waiting for a writer), checked with
fstat on the descriptor itself (no race with a rename in between) to be a regular file, and read
only as far as the caller says the broker reads it (`read_head`, `max_size`). Every failure, out of
memory included, is a `StoreFileError` naming the file. Nothing here writes.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from formats.errors import MqtoolError


class StoreFileError(MqtoolError):
    """A store file or directory that cannot be opened or is not what the broker would write."""


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _open_error(path: Path | str, exc: OSError) -> StoreFileError:
    if exc.errno == errno.ENXIO:  # open(2) on a socket
        try:
            what = kind_of(os.stat(path).st_mode)
        except OSError:
            what = "a socket or a device without a driver"
        return StoreFileError(f"cannot read: {what}, not a regular file", str(path))
    if exc.errno == errno.ELOOP:
        return StoreFileError("cannot open: a symbolic link loop", str(path))
    return StoreFileError(f"cannot open: {exc.strerror or exc}", str(path))


def open_regular(path: Path | str) -> int:
    """A read-only descriptor of `path`, which must be a regular file (see the module docstring).
    FileNotFoundError passes through (callers decide what a missing file means)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _open_error(path, exc) from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise StoreFileError(f"cannot stat: {exc.strerror or exc}", str(path)) from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StoreFileError(f"cannot read: {kind_of(mode)}, not a regular file", str(path))
    return fd


@contextmanager
def opened(path: Path | str) -> Iterator[int]:
    """`open_regular` as a context manager."""
    fd = open_regular(path)
    try:
        yield fd
    finally:
        os.close(fd)


def file_size(path: Path | str) -> int:
    """The size of a regular file (`open_regular`'s checks)."""
    with opened(path) as fd:
        return os.fstat(fd).st_size


def read_from(fd: int, path: Path | str, length: int, position: int = 0) -> bytes:
    """Up to `length` bytes at `position` of an `opened` descriptor (errors name `path`)."""
    chunks: list[bytes] = []
    got = 0
    try:
        while got < length:
            chunk = os.pread(fd, min(length - got, 1 << 24), position + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except MemoryError:
        raise StoreFileError(f"cannot read {length} bytes: out of memory", str(path)) from None
    except OSError as exc:
        raise StoreFileError(f"cannot read at {position + got}: {exc.strerror or exc}", str(path)) from exc


def read_file(path: Path | str, max_size: int, what: str = "file") -> bytes:
    """The whole of a regular file, refused (naming it) when it is larger than `max_size` (what the
    broker or a sane store holds there): reading a 100 GiB file whole would exhaust memory."""
    with opened(path) as fd:
        size = os.fstat(fd).st_size
        if size > max_size:
            raise StoreFileError(f"{what} of {size} bytes is larger than {max_size}: not read", str(path))
        return read_from(fd, path, size)


def read_head(path: Path | str, length: int) -> bytes:
    """The first `length` bytes of a regular file (fewer when it is shorter): what a broker that maps
    or reads a fixed-size head reads, whatever the file's size."""
    with opened(path) as fd:
        return read_from(fd, path, length)


def head_and_size(path: Path | str, length: int) -> tuple[bytes, int]:
    """(`read_head(path, length)`, the file's size), from one open."""
    with opened(path) as fd:
        return read_from(fd, path, length), os.fstat(fd).st_size


def read_range(path: Path | str, position: int, length: int) -> bytes:
    """Bytes [position, position + length) of a regular file, clipped to its end."""
    with opened(path) as fd:
        return read_from(fd, path, length, position)


def map_readonly(path: Path | str) -> mmap.mmap:
    """A read-only map of a whole regular, non-empty file."""
    with opened(path) as fd:
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise StoreFileError(f"cannot map: {reason}", str(path)) from exc
        except MemoryError:
            raise StoreFileError("cannot map: out of memory", str(path)) from None


def last_nonzero_end(path: Path | str, start: int, end: int) -> int:
    """One past the last non-zero byte of `path` in [start, end), or `start` when that range is all zero.

    Holes of a sparse file are skipped (SEEK_DATA / SEEK_HOLE): only the data extents are read, so a
    pre-allocated file costs little.
    """
    if end <= start:
        return start
    fd = open_regular(path)
    try:
        extents: list[tuple[int, int]] = []
        at = start
        while at < end:
            try:
                data_at = os.lseek(fd, at, os.SEEK_DATA)
                hole_at = os.lseek(fd, data_at, os.SEEK_HOLE)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break  # nothing but a hole after `at`
                extents = [(start, end)]  # no hole support: read it all
                break
            if data_at >= end:
                break
            extents.append((data_at, min(hole_at, end)))
            at = hole_at
        chunk = 1 << 22
        for lo_bound, hi in reversed(extents):
            while hi > lo_bound:
                lo = max(lo_bound, hi - chunk)
                kept = len(read_from(fd, path, hi - lo, lo).rstrip(b"\0"))
                if kept:
                    return lo + kept
                hi = lo
        return start
    finally:
        os.close(fd)


def written_part(path: Path | str) -> tuple[int, bytes]:
    """(size, bytes up to the last non-zero one) of a mapped file whose tail is unwritten zeros (a sparse
    ConsumeQueue file, of which a store may hold 100,000+); (-1, b"") when it is missing. Two such files
    are equal when both parts are."""
    try:
        size = file_size(path)
    except FileNotFoundError:
        return -1, b""
    return size, read_head(path, last_nonzero_end(path, 0, size))


__all__ = [
    "StoreFileError",
    "file_size",
    "head_and_size",
    "kind_of",
    "last_nonzero_end",
    "map_readonly",
    "open_regular",
    "opened",
    "read_file",
    "read_from",
    "read_head",
    "read_range",
    "written_part",
]
