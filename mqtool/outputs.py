"""Where an output file may go: the one check every option that writes a file (`--output`, `--export`,
a directory to create) passes before anything is written, and the one way such a file is written.

A path is judged where the kernel would put the file: its parent directory with every symbolic link and
`..` resolved (`os.path.realpath`), and also the file it names when that is itself a link. Refused, in
one line (`OutputRefused`, exit status 2):

* a path inside (or equal to) a store root the command was given, or inside a directory the root links
  to (a commitlog on another disk);
* a path inside any directory that looks like a store root or a store's directory
  (`store.recognise.store_evidence`, checked on every directory from the path up to `/`);
* an existing file mqtool did not write, unless `--force`. "Written by mqtool" means recognised as the
  very kind of output the option writes: each writer says how (`written_by`; e.g. the plan CSV's header
  line, the Parquet metadata key `mqtool`, an audit's `audit.json`). A directory is never replaced.

A character device or FIFO (`/dev/stdout`, a named pipe) is written in place: nothing is replaced.
Any other file is written under a temporary name beside it and renamed over it at the end
(`replacing`), so a crash or an error leaves the old file whole, and a hard link to the old file (a
store file linked elsewhere) keeps its bytes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from formats.errors import UsageError
from store.io.remote import is_url
from store.recognise import store_evidence

WrittenBy = Callable[[Path], bool]
"""Whether an existing file is the kind of output the option writes (so mqtool may replace it)."""


class OutputRefused(UsageError):
    """An output path that would put a file inside a store, or replace a file mqtool did not write: the
    command line is at fault (exit status 2)."""


@dataclass(frozen=True)
class OutputFile:
    """A checked output file."""

    path: Path  # where the file goes: the real parent directory and the name
    given: str  # as the user named it (for messages)
    stream: bool = False  # a character device or FIFO: written in place, never replaced


def store_roots(stores: Iterable[Path | str | None]) -> list[Path]:
    """The real directories of the given local stores, and of the directories their roots link to."""
    roots: list[Path] = []
    for store in stores:
        if store is None or is_url(store):
            continue
        root = Path(os.path.realpath(Path(store).expanduser()))
        roots.append(root)
        with contextlib.suppress(OSError):
            for entry in os.scandir(Path(store).expanduser()):
                if entry.is_symlink():
                    roots.append(Path(os.path.realpath(entry.path)))
    return roots


def _where(path: Path) -> Path:
    """Where the kernel puts a file named `path`: the real parent directory joined with the name."""
    if path.name in ("", ".", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def _refuse_inside_stores(path: Path, given: str, option: str, roots: list[Path]) -> None:
    for candidate in dict.fromkeys((_where(path), Path(os.path.realpath(path)))):
        for root in roots:
            if candidate == root or root in candidate.parents:
                raise OutputRefused(f"{option} is inside the store {root}; choose a path outside it", given)
        for directory in (candidate, *candidate.parents):
            evidence = store_evidence(directory)
            if evidence is not None:
                raise OutputRefused(
                    f"{option} is inside {directory}, {evidence}; choose a path outside it", given
                )


def output_directory(path: Path | str, *, option: str, stores: Iterable[Path | str | None] = ()) -> Path:
    """The real path of an output directory (it may not exist yet) that lies in no store."""
    given = str(path)
    path = Path(path).expanduser()
    _refuse_inside_stores(path, given, option, store_roots(stores))
    if os.path.lexists(path) and not path.is_dir():
        raise OutputRefused(f"{option} must be a directory", given)
    return Path(os.path.realpath(path))


def output_file(
    path: Path | str,
    *,
    option: str,
    what: str,
    stores: Iterable[Path | str | None] = (),
    written_by: WrittenBy | None = None,
    force: bool = False,
) -> OutputFile:
    """Check an output file before anything is written: in no store, and not a file mqtool did not
    write (`what` names the kind, e.g. "a plan CSV") unless `force`."""
    given = str(path)
    path = Path(path).expanduser()
    _refuse_inside_stores(path, given, option, store_roots(stores))
    where = _where(path)
    if not os.path.lexists(path):
        return OutputFile(where, given)
    try:
        mode = os.stat(path).st_mode
    except OSError:  # a dangling link: replacing it changes what the link was
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputRefused(f"{option} is a directory; name a file", given)
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        return OutputFile(path, given, stream=True)
    ours = mode is not None and stat.S_ISREG(mode) and written_by is not None and _safely(written_by, path)
    if force or ours:
        return OutputFile(where, given)
    raise OutputRefused(f"{option} exists and is not {what} mqtool wrote; add --force to replace it", given)


def _safely(written_by: WrittenBy, path: Path) -> bool:
    try:
        return written_by(path)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def replacing(target: OutputFile, mode: str = "wb") -> Iterator[IO]:
    """A file object for `target`: a temporary file beside it renamed over it when the block ends
    without error (removed otherwise); a stream is written in place."""
    text = "b" not in mode
    if target.stream:
        with open(target.path, "w" if text else "wb", encoding="utf-8" if text else None) as out:
            yield out
        return
    fd, tmp = _create_beside(target.path)
    try:
        with open(fd, "w" if text else "wb", encoding="utf-8" if text else None) as out:
            yield out
        os.replace(tmp, target.path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new file next to `path` under a name nobody uses, with the permissions the umask gives a new
    file (mkstemp's would be 0600)."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


__all__ = ["OutputFile", "OutputRefused", "output_directory", "output_file", "replacing", "store_roots"]
