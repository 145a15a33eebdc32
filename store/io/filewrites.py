"""Writing store files the way a crash cannot hurt: whole `pwrite`s, fsync of files and directories,
new files created sparse under a temporary name in the store root (`TMP_PREFIX`, never inside a mapped-file
directory, `MappedFileQueue.load`) and linked or renamed into place, interrupted directory swaps finished
(`restore_interrupted_swaps`), leftovers removed; and the crash-test hook: every state-changing call passes
`write_done()`, and with MQTOOL_CRASH_AFTER_WRITES=N (`CRASH_ENV`) the process SIGKILLs itself after its
N-th write call.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from collections.abc import Iterable
from pathlib import Path

from formats.errors import MqtoolError

CRASH_ENV = "MQTOOL_CRASH_AFTER_WRITES"
TMP_PREFIX = ".mqtool-tmp-"
"""Temporary files and staging directories live in the store root under this prefix (never inside
commitlog/, consumequeue/ or index/), and are removed by the next writer (`remove_leftovers`)."""


class DispatchError(MqtoolError):
    """A ConsumeQueue or index file that cannot be written as the broker would write it."""


# --- write calls and the crash-test hook -----------------------------------------------------------


def _crash_budget_from_env() -> int | None:
    value = os.environ.get(CRASH_ENV)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return None


_crash_budget: list[int | None] = [_crash_budget_from_env()]


CRASH_AT_ENV = "MQTOOL_TEST_CRASH_AT"
"""The other test hook: comma-separated step names at which the process SIGKILLs itself (`crash_point`):
`locked`, `loaded`, `saved` (offsets reset), `delay-appended`, `timer-appended`, `txn-commits-appended`."""


def crash_point(step: str) -> None:
    """Kill this process (SIGKILL) when CRASH_AT_ENV names `step`."""
    steps = os.environ.get(CRASH_AT_ENV, "")
    if step in {s.strip() for s in steps.split(",") if s.strip()}:
        os.kill(os.getpid(), signal.SIGKILL)


def set_crash_after(writes: int | None) -> None:
    """Arm (or with None disarm) the crash hook in-process: SIGKILL after that many more write calls."""
    _crash_budget[0] = writes


def write_done() -> None:
    """Count one state-changing call; with MQTOOL_CRASH_AFTER_WRITES=N, the N-th one kills the process."""
    budget = _crash_budget[0]
    if budget is None:
        return
    budget -= 1
    _crash_budget[0] = budget
    if budget <= 0:
        os.kill(os.getpid(), signal.SIGKILL)


def fd_path(fd: int) -> str:
    """The path an open descriptor refers to (for error messages: fd-based calls name no file)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"file descriptor {fd}"


def named(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """`exc` naming `path` when it names no file (ENOSPC from a pwrite, say), so the error line can."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


def pwrite_all(fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
    """`pwrite` every byte of `data` at `offset` (one write call for the crash hook)."""
    view = memoryview(data)
    try:
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
    except OSError as exc:
        raise named(exc, fd_path(fd)) from exc
    write_done()


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def temp_path(scratch: Path, name: str) -> Path:
    return scratch / f"{TMP_PREFIX}{os.getpid()}-{name}"


def create_sparse_file(
    path: Path, size: int, scratch: Path, content: Iterable[tuple[int, bytes]] = (), *, durable: bool = True
) -> None:
    """Create `path` as a full-size sparse file (optionally with some bytes written), atomically.

    The file is made under a temporary name in `scratch` (the store root), filled, fsynced, then
    hard-linked to its final name, which fails rather than replacing an existing file; a crash leaves
    either no file or the whole file at `path` (plus a temporary file the next writer removes).
    `durable=False` skips the fsyncs: for files nobody relies on after a crash (a dry run's staging).
    """
    tmp = temp_path(scratch, path.name)
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, size)
        write_done()
        for offset, data in content:
            pwrite_all(fd, data, offset)
        if durable:
            os.fsync(fd)
    except OSError as exc:  # no space, say: no half-made temporary file is left behind
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise named(exc, path) from exc
    else:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        os.unlink(tmp)
        raise DispatchError("file appeared while being created", str(path)) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if path.exists():
            os.unlink(tmp)
            raise DispatchError("file appeared while being created", str(path)) from None
        os.rename(tmp, path)  # no hard links on this file system
        write_done()
        if durable:
            fsync_dir(path.parent)
        return
    write_done()
    if durable:
        fsync_dir(path.parent)
    os.unlink(tmp)
    write_done()


def replace_file(tmp: Path, path: Path) -> None:
    """Atomically put `tmp` in place of `path` (`rename` replaces), then sync the directory."""
    os.replace(tmp, path)
    write_done()
    fsync_dir(path.parent)


SWAP_NOTE = "SWAPPING-"
"""A file `SWAPPING-<name>` in a staging directory: `<name>` of the store root is being replaced by two
renames, and `<name>.old` beside the note is the previous directory until the swap completes."""


def restore_interrupted_swaps(root: Path) -> list[str]:
    """Put back directories a killed two-rename swap took out of the store root (see store.rebuild.build)."""
    restored: list[str] = []
    if not root.is_dir():
        return restored
    for staging in os.scandir(root):
        if not (staging.name.startswith(TMP_PREFIX) and staging.is_dir(follow_symlinks=False)):
            continue
        for entry in os.scandir(staging.path):
            if not entry.name.startswith(SWAP_NOTE):
                continue
            name = entry.name[len(SWAP_NOTE) :]
            target, old = root / name, Path(staging.path) / (name + ".old")
            if not target.exists() and old.exists():
                os.rename(old, target)
                fsync_dir(root)
                restored.append(name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    return restored


def remove_leftovers(root: Path) -> list[Path]:
    """Delete temporary files and directories an interrupted mqtool writer left in the store root,
    after putting back any directory an interrupted swap had moved out."""
    import shutil

    restore_interrupted_swaps(root)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in os.scandir(root):
        if not entry.name.startswith(TMP_PREFIX):
            continue
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        removed.append(path)
    return removed


MAX_OPEN_FILES = 256  # descriptors a FileSet keeps open at once


class FileSet:
    """Read-write descriptors of the files one phase writes, fsynced and closed together."""

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}

    def fd(self, path: Path) -> int:
        fd = self._fds.get(path)
        if fd is None:
            if len(self._fds) >= MAX_OPEN_FILES:
                # a phase may touch 100,000+ files (LMQ queues): fsync and close the oldest early
                oldest, old_fd = next(iter(self._fds.items()))
                try:
                    os.fsync(old_fd)
                finally:
                    os.close(old_fd)
                    del self._fds[oldest]
            try:
                fd = os.open(path, os.O_RDWR)
            except OSError as exc:
                raise DispatchError(f"cannot open for writing: {exc.strerror}", str(path)) from exc
            self._fds[path] = fd
        return fd

    def sync_and_close(self) -> None:
        try:
            for fd in self._fds.values():
                os.fsync(fd)
        finally:
            self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def last_nonzero_end(path: Path, start: int, end: int) -> int:
    """One past the last non-zero byte of `path` in [start, end), or `start` when that range is all zero.

    Holes of a sparse file are skipped (SEEK_DATA / SEEK_HOLE): only the data extents are read, so a
    pre-allocated file costs little.
    """
    if end <= start:
        return start
    fd = os.open(path, os.O_RDONLY)
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
                kept = len(os.pread(fd, hi - lo, lo).rstrip(b"\0"))
                if kept:
                    return lo + kept
                hi = lo
        return start
    finally:
        os.close(fd)


__all__ = [
    "CRASH_AT_ENV",
    "CRASH_ENV",
    "DispatchError",
    "FileSet",
    "SWAP_NOTE",
    "TMP_PREFIX",
    "crash_point",
    "create_sparse_file",
    "fd_path",
    "fsync_dir",
    "last_nonzero_end",
    "named",
    "pwrite_all",
    "remove_leftovers",
    "replace_file",
    "restore_interrupted_swaps",
    "set_crash_after",
    "temp_path",
    "write_done",
]
