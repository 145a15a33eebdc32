"""A running broker: every `--execute` refuses and changes nothing; dry runs still work.

Another process holds the store lock exactly as the JVM does: `RandomAccessFile(lock, "rw")` and
`FileChannel.tryLock(0, 1, false)`, i.e. an exclusive POSIX record lock (fcntl F_SETLK) on byte 0 of
`lock` - here `fcntl.lockf(fd, LOCK_EX | LOCK_NB, 1, 0)`. Every write command (offsets reset,
consume-mode set, rebuild, delay replay, txn commit/rollback/resolve, dlq resend on store-a) is then run
through the CLI: exit 1, one error line naming `lock` and the holder's pid, and the whole store tree byte-
and mtime-identical.
The same commands without --execute plan as usual, say the write would be refused, and change nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz.harness import judge, prepare_bases, run_cli, snapshot, write_commands

JVM_LIKE_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)   # RandomAccessFile(file, "rw")
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)        # channel.tryLock(0, 1, false)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """tiny5 for every write; store-a (a %DLQ%groupA record the real put wrote) for dlq resend."""
    return prepare_bases(tmp_path_factory.mktemp("lock"), ["tiny5", "store-a"])


@pytest.fixture(scope="module")
def commands(bases):
    return write_commands(bases[0]) + [c for c in write_commands(bases[1]) if c[0] == "dlq resend"]


def base_path(bases, which: str) -> Path:
    return bases[1].path if which == "dlq resend" else bases[0].path


@pytest.fixture
def held_store(bases, tmp_path, request):
    """A copy of the store with its lock held by another process, as a running broker holds it."""
    which = getattr(request, "param", "offsets reset")
    root = tmp_path / "store"
    shutil.copytree(base_path(bases, which), root)
    holder = subprocess.Popen(
        [sys.executable, "-c", JVM_LIKE_HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield root, holder.pid
    finally:
        holder.kill()
        holder.wait()


def _names(commands) -> list[str]:
    return [name for name, _ in commands]


WRITERS = [
    "offsets reset",
    "offsets clone",
    "consume-mode set",
    "rebuild",
    "rebuild --prune-orphans",
    "topic update",
    "topic delete",
    "group update",
    "group delete",
    "delay replay",
    "txn commit",
    "txn rollback",
    "txn resolve",
    "dlq resend",
]


@pytest.mark.parametrize("held_store", WRITERS, indirect=True)
def test_every_execute_refuses_and_changes_nothing(held_store, commands, request) -> None:
    which = request.node.callspec.params["held_store"]
    root, pid = held_store
    argv = dict(commands)[which]
    before = snapshot(root)
    outcome = run_cli(["-s", str(root), "-f", "json", *argv], name=which)
    assert judge(outcome, str(root)).failure is None, outcome.stderr
    assert outcome.code == 1, outcome.stderr
    error = [line for line in outcome.stderr.splitlines() if line.startswith("mqtool: error: ")]
    assert len(error) == 1 and str(root / "lock") in error[0] and f"pid {pid}" in error[0], error
    assert snapshot(root) == before
    assert not [p for p in root.iterdir() if p.name.startswith(".mqtool")]


@pytest.mark.parametrize("held_store", ["offsets reset", "dlq resend"], indirect=True)
def test_dry_runs_still_work(held_store, commands, request) -> None:
    root, _pid = held_store
    on_dlq_store = request.node.callspec.params["held_store"] == "dlq resend"
    before = snapshot(root)
    for name, argv in commands:
        if (name == "dlq resend") != on_dlq_store:
            continue
        dry = [a for a in argv if a != "--execute"]
        outcome = run_cli(["-s", str(root), "-f", "json", *dry], name=name)
        assert outcome.code == 0, (name, outcome.stderr)
        assert "would be refused" in outcome.stderr, (name, outcome.stderr)
    assert snapshot(root) == before


def test_the_commands_do_write_without_the_lock(bases, commands, tmp_path: Path) -> None:
    """The refusals above mean something: with the lock free, each command changes the store."""
    assert _names(commands) == WRITERS
    for name, argv in commands:
        root = tmp_path / name.replace(" ", "-")
        shutil.copytree(base_path(bases, name), root)
        before = snapshot(root)
        outcome = run_cli(["-s", str(root), "-f", "json", *argv], name=name)
        assert outcome.code == 0, (name, outcome.stderr)
        assert snapshot(root) != before, name
