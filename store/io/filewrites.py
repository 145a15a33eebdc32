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
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from formats.errors import MqtoolError
from store.io.filereads import kind_of

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


# --- before the first byte: can every target be written? ----------------------------------------


class WriteCheckError(MqtoolError):
    """A file or directory a write would change cannot be written; refused before anything is written."""


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _refuse(path: Path, why: str) -> WriteCheckError:
    return WriteCheckError(f"cannot write: {why}; nothing was written", str(path))


def _existing_ancestor(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _check_dir(path: Path) -> None:
    """`path` can take new entries (created, linked, renamed): a writable directory, or creatable."""
    at = _existing_ancestor(path)
    try:
        mode = os.stat(at).st_mode
    except OSError as exc:  # a dangling link or a loop where a directory should be
        raise _refuse(at, exc.strerror or str(exc)) from exc
    if not stat.S_ISDIR(mode):
        raise _refuse(at, f"{kind_of(mode) if not stat.S_ISREG(mode) else 'a file'}, not a directory")
    if _read_only_fs(at):
        raise _refuse(at, "read-only file system")
    if not os.access(at, os.W_OK | os.X_OK):
        raise _refuse(at, "permission denied (the directory is not writable)")


def _check_file(path: Path, *, replaced: bool) -> None:
    """`path` is written in place (or, `replaced`, renamed over): a writable regular file, or missing and
    creatable in its directory."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise _refuse(path, "a dangling symbolic link") from None
        _check_dir(path.parent)
        return
    except OSError as exc:
        raise _refuse(path, exc.strerror or str(exc)) from exc
    if not stat.S_ISREG(mode):
        raise _refuse(path, f"{kind_of(mode)}, not a regular file")
    if replaced:
        _check_dir(path.parent)
    elif _read_only_fs(path):
        raise _refuse(path, "read-only file system")
    elif not os.access(path, os.W_OK):
        raise _refuse(path, "permission denied (the file is not writable)")


@dataclass
class WriteTargets:
    """Everything one write command changes: files written in place (`files`; created when missing),
    directories that get new entries (`dirs`), files created or renamed over (`replaced`: a config file,
    its `.bak` and temporary files, `store.config.configfile.atomic_write`). `check()`
    refuses in one line naming the first that cannot be written (a directory or a FIFO where a file
    goes, no permission, a read-only file system) - before the first byte, so a write never stops half
    done for a reason that was there from the start."""

    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)
    replaced: list[Path] = field(default_factory=list)

    def __add__(self, other: WriteTargets) -> WriteTargets:
        return WriteTargets(self.files + other.files, self.dirs + other.dirs, self.replaced + other.replaced)

    def check(self) -> None:
        for d in dict.fromkeys(self.dirs):
            _check_dir(d)
        for f in dict.fromkeys(self.files):
            _check_file(f, replaced=False)
        for f in dict.fromkeys(self.replaced):
            _check_file(f, replaced=True)


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


__all__ = [
    "WriteCheckError",
    "WriteTargets",
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
    "named",
    "pwrite_all",
    "remove_leftovers",
    "replace_file",
    "restore_interrupted_swaps",
    "set_crash_after",
    "temp_path",
    "write_done",
]
