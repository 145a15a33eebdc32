"""Read-only guarantee: read commands (and every write command's dry run) never write to a store.

* An audit hook (`sys.addaudithook`) watches every command run in-process: no `open` with a write mode or
  write flags, no rename/remove/mkdir/chmod/truncate/link/utime, no lock taken (`fcntl.lockf`/`flock`, or
  `fcntl` with F_SETLK), no mmap but read-only ones. Pure read commands may write nowhere at all; dry runs
  may write outside the store (the rebuild dry run builds in a temporary directory), never inside it.
  Interpreter caches (`__pycache__`: bytecode, numba's compiled kernels) are not the store and are ignored.
* Every read command works (exit 0) on a copy with every file chmod a-w, run by a user that is not root
  (root ignores permission bits: the fuzz workers drop to `nobody`).
* Every read command works on a store on a read-only tmpfs mount (root needed; skipped otherwise).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fuzz.corrupt import Corruption, Op, map_store, restore_permissions
from fuzz.harness import (
    COMMANDS,
    Fuzzer,
    Task,
    can_mount,
    fill_paths,
    in_private_mounts,
    judge,
    prepare_bases,
    read_commands,
    run_cli,
)

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
MUTATING_EVENTS = {
    "os.rename",
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.truncate",
    "os.link",
    "os.symlink",
    "os.utime",
    "os.chflags",
    "os.lockf",
    "fcntl.lockf",
    "fcntl.flock",
    "shutil.rmtree",
    "shutil.move",
    "shutil.copyfile",
    "shutil.copytree",
}
COPYING_EVENTS = {"shutil.copyfile", "shutil.copytree", "os.link", "os.symlink"}
LOCKING_FCNTL = {
    fcntl.F_SETLK,
    fcntl.F_SETLKW,
    getattr(fcntl, "F_OFD_SETLK", -1),
    getattr(fcntl, "F_OFD_SETLKW", -1),
}
BASES = ("tiny5", "tiny4")


class _Audit:
    active = False
    events: list[tuple[str, str]] = []


_AUDIT = _Audit()


def _path_of(value) -> str | None:
    if isinstance(value, int) or value is None:
        return None
    path = os.fsdecode(value)
    return os.path.abspath(path)


def _hook(event: str, args: tuple) -> None:
    if not _AUDIT.active:
        return
    if event == "open":
        path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & WRITE_FLAGS)
        if writes and _path_of(path):
            _AUDIT.events.append((f"open for writing ({mode or oct(flags)})", _path_of(path)))
    elif event in MUTATING_EVENTS:
        paths = [_path_of(a) for a in args if isinstance(a, str | bytes | os.PathLike)]
        if event in COPYING_EVENTS:
            paths = paths[1:2]  # the source is only read
        for path in paths or [repr(args)]:
            _AUDIT.events.append((event, path))
    elif event == "fcntl.fcntl" and args[1] in LOCKING_FCNTL:
        _AUDIT.events.append(("fcntl lock", repr(args[:2])))
    elif event == "mmap.__new__":
        fileno, _length, access, _offset = args
        if fileno != -1 and access != mmap.ACCESS_READ:
            _AUDIT.events.append(("writable mmap", f"fd {fileno} access {access}"))


sys.addaudithook(_hook)  # hooks cannot be removed: it acts only while _AUDIT.active


def _is_cache(path: str | None) -> bool:
    """Interpreter caches, and /dev/null (a child process's stdio, e.g. ctypes.util.find_library's)."""
    return path is not None and (
        "__pycache__" in path or path.endswith((".pyc", ".nbi", ".nbc")) or path == os.devnull
    )


@pytest.fixture(scope="module")
def stores():
    """The samples and a copy of store-c (retention, torn tail, abort: the real broker's files), in a
    directory other users can read (pytest's own is private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="mqtool-readonly-"))
    directory.chmod(0o755)
    bases = prepare_bases(directory, [*BASES, "store-c"])
    yield {b.name: b for b in bases}
    restore_permissions(directory)
    shutil.rmtree(directory, ignore_errors=True)


def _all_commands(base) -> list[tuple[str, list[str]]]:
    commands = read_commands(base.targets, "layout")
    commands += [
        (f"dump config {n}", ["dump", "config", n]) for n in ("topics", "delayOffset", "subscriptionGroup")
    ]
    if (base.path / "config" / "topics.json.bak").exists():
        commands += [("dump config --bak", ["dump", "config", "topics", "--bak"])]
    commands += [("query key --scan", ["query", "key", base.targets.topic, base.targets.key, "--scan"])]
    commands += [("dump commitlog --body", ["dump", "commitlog", "--body", "--no-crc"])]
    return commands


DRY_RUNS = {c.name for c in COMMANDS if "dry run" in c.name}


@pytest.mark.parametrize("name", [*BASES, "store-c"])
def test_no_read_command_opens_a_file_for_writing(stores, name: str) -> None:
    base = stores[name]
    root = str(base.path)
    problems = []
    for command, argv in _all_commands(base):
        for fmt in ("json", "table") if name == "tiny5" else ("json",):
            _AUDIT.events = []
            _AUDIT.active = True
            try:
                outcome = run_cli(["-s", root, "-f", fmt, *fill_paths(argv, root, root)], name=command)
            finally:
                _AUDIT.active = False
            assert judge(outcome, root).failure is None, (command, outcome.stderr)
            for what, path in _AUDIT.events:
                if _is_cache(path):
                    continue
                inside = path is not None and (path == root or path.startswith(root + os.sep))
                if inside or command not in DRY_RUNS:
                    problems.append(f"{command} ({fmt}): {what} {path}")
    assert not problems, "\n".join(problems)


def test_the_audit_sees_writes(stores, tmp_path) -> None:
    """The hook is live: a write inside the window is recorded."""
    _AUDIT.events = []
    _AUDIT.active = True
    try:
        (tmp_path / "x").write_text("x")
        fd = os.open(tmp_path / "y", os.O_WRONLY | os.O_CREAT)
        os.close(fd)
        with open(tmp_path / "x", "rb") as fh:
            fcntl.lockf(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)
    finally:
        _AUDIT.active = False
    kinds = [what for what, _ in _AUDIT.events]
    assert kinds[0].startswith("open for writing") and kinds[1].startswith("open for writing")
    assert "fcntl.lockf" in kinds


_BASELINES: dict[str, dict[str, int | None]] = {}


def _baseline(base) -> dict[str, int | None]:
    """Exit status of every command on the writable original (most 0; a few refuse an argument, e.g. a
    queue offset below a retention-deleted prefix, or consume-mode set on a 4.9.x store)."""
    if base.name not in _BASELINES:
        codes = {}
        for command, argv in _all_commands(base):
            full = ["-s", str(base.path), "-f", "json", *fill_paths(argv, base.path, base.path)]
            codes[command] = run_cli(full, name=command).code
        _BASELINES[base.name] = codes
    return _BASELINES[base.name]


def _write_protect(layout) -> Corruption:
    ops = [Op("chmod", f, mode=0o444) for f in layout.all_files]
    ops += [Op("chmod", d, mode=0o555) for d in sorted(layout.all_dirs, key=len, reverse=True)]
    ops.append(Op("chmod", ".", mode=0o555))
    return Corruption("layout", "read-only", "every file chmod a-w", tuple(ops))


def test_every_read_command_works_on_a_write_protected_copy(stores) -> None:
    """chmod a-w on every file and directory, commands run as a user that is not root."""
    scratch = Path(tempfile.mkdtemp(prefix="mqtool-ro-"))
    scratch.chmod(0o755)
    bases = [stores[n] for n in (*BASES, "store-c")]
    try:
        with Fuzzer(bases, jobs=1, timeout=60, scratch=scratch) as fuzzer:
            tasks = [Task(b.name, _write_protect(b.layout), _all_commands(b), "json") for b in bases]
            for result in fuzzer.run(tasks):
                assert not result.failures, "\n".join(str(f) for f in result.failures)
                expected = _baseline(stores[result.task.base])
                got = {command: code for command, code, _seconds, _pos in result.outcomes}
                assert got == expected, result.task.base
    finally:
        restore_permissions(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


def _on_read_only_mount(
    source: str, mountpoint: str, commands: list[tuple[str, list[str]]], expected: dict[str, int | None]
) -> list[str]:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mountpoint], check=True)
    root = os.path.join(mountpoint, "store")
    shutil.copytree(source, root)
    subprocess.run(["mount", "-o", "remount,ro", mountpoint], check=True)
    try:
        with open(os.path.join(root, "probe"), "w"):
            pass
        return ["the mount is writable"]
    except OSError:
        pass
    problems = []
    for name, argv in commands:
        outcome = run_cli(["-s", root, "-f", "json", *fill_paths(argv, root, source)], name=name)
        if outcome.code != expected[name]:
            problems.append(f"{name}: exit {outcome.code}: {outcome.stderr.strip()[-300:]}")
    return problems


@pytest.mark.skipif(not can_mount(), reason="needs root to mount a read-only tmpfs in a private namespace")
@pytest.mark.parametrize("name", ["tiny5", "store-c"])
def test_every_read_command_works_on_a_read_only_mount(stores, tmp_path, name: str) -> None:
    base = stores[name]
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    expected = _baseline(base)
    problems = in_private_mounts(
        _on_read_only_mount, str(base.path), str(mountpoint), _all_commands(base), expected
    )
    assert not problems, "\n".join(problems)


def test_map_store_sees_every_file(stores) -> None:
    layout = map_store(stores["tiny5"].path)
    assert any(f.startswith("commitlog/") for f in layout.all_files)
    assert "checkpoint" in layout.all_files and "config" in layout.all_dirs
