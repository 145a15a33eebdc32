"""Two writers on one store: while one mqtool writes, a second mqtool and a broker both refuse.

Writer A is `mqtool ... --execute` in another process (a forked child running the console entry; once a
new interpreter), paused in the middle of its write: at its N-th write call (the crash hook of
store/io/filewrites.py, whose SIGKILL is turned into a pause) or at its N-th `os.replace` (config files).
While it is paused:

* the lock is held by A's pid, as `F_GETLK` shows - at the first, a middle and the last write, so nothing
  in the write path closes a descriptor of `lock` (which would silently drop a POSIX lock);
* every other `--execute` refuses (exit 1, one error line naming `lock` and A's pid) and changes nothing
  that A is not writing;
* a broker starting meanwhile fails to lock (`tryLock(0, 1, false)`, i.e. F_SETLK, is refused);
* dry runs still work.

Then A finishes, the store reads cleanly, and the second writer succeeds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz.harness import ROOT, judge, prepare_bases, run_cli, snapshot, warm_up, write_commands

from store.liveness import lock_holder

PAUSED_WRITER = """
import os, signal, sys
point, at = sys.argv[1], int(sys.argv[2])
sys.argv = ["mqtool", *sys.argv[3:]]
state = {"n": 0, "paused": False}

def pause():
    state["paused"] = True
    print(f"paused {os.getpid()}", flush=True)
    sys.stdin.readline()

if point == "write":
    from store.io import filewrites
    real_kill = os.kill
    def kill(pid, sig):  # the crash hook's SIGKILL becomes a pause, once
        if pid == os.getpid() and sig == signal.SIGKILL and not state["paused"]:
            filewrites.set_crash_after(None)
            pause()
            return
        real_kill(pid, sig)
    os.kill = kill
    filewrites.set_crash_after(at)
else:
    real_replace = os.replace
    def replace(*args, **kwargs):
        state["n"] += 1
        if state["n"] == at:
            pause()
        return real_replace(*args, **kwargs)
    os.replace = replace

from mqtool.cli import main
main()
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    base = prepare_bases(tmp_path_factory.mktemp("concurrency"), ["tiny5"])[0]
    # compile the numba kernels now: the first compile under load can outlast run_cli's 30 s alarm, and
    # an interrupted compile leaves numba's library unusable for the rest of the process
    warm_up([base])
    return base


@pytest.fixture(scope="module")
def commands(base):
    return dict(write_commands(base))


class Paused:
    """A writer stopped in the middle of its write: a forked child running the CLI entry in-process
    (or, with `new_process`, a real new interpreter)."""

    def __init__(self, root: Path, argv: list[str], point: str, at: int, new_process: bool = False) -> None:
        self.full = ["-s", str(root), "-f", "json", *argv]
        self.proc = None
        if new_process:
            self._spawn(point, at)
            return
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(ready_r)
            os.close(go_w)
            self._child(ready_w, go_r, point, at)
        os.close(ready_w)
        os.close(go_r)
        self.pid, self._ready, self._go = pid, os.fdopen(ready_r, "r"), go_w
        line = self._ready.readline()
        if not line.startswith("paused"):
            self.kill()
            raise AssertionError(f"the writer did not pause: {line}")

    def _child(self, ready_w: int, go_r: int, point: str, at: int) -> None:  # pragma: no cover
        def pause() -> None:
            os.write(ready_w, b"paused\n")
            os.read(go_r, 1)

        if point == "write":
            from store.io import filewrites

            real_kill = os.kill

            def kill(pid, sig):  # the crash hook's SIGKILL becomes a pause, once
                if pid == os.getpid() and sig == signal.SIGKILL:
                    filewrites.set_crash_after(None)
                    pause()
                    return
                real_kill(pid, sig)

            os.kill = kill
            filewrites.set_crash_after(at)
        else:
            real_replace = os.replace
            calls = [0]

            def replace(*args, **kwargs):
                calls[0] += 1
                if calls[0] == at:
                    pause()
                return real_replace(*args, **kwargs)

            os.replace = replace
        outcome = run_cli(self.full)
        os.write(ready_w, f"done {outcome.code}\n".encode() + outcome.stderr.encode()[-2000:])
        os._exit(0)

    def _spawn(self, point: str, at: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PAUSED_WRITER, point, str(at), *self.full],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        seen, line = [], ""
        while not line.startswith("paused"):  # the plan may be printed first
            line = self.proc.stdout.readline()
            if not line:
                self.kill()
                raise AssertionError(f"the writer did not pause: {''.join(seen)}")
            seen.append(line)
        self.pid = int(line.split()[1])

    def finish(self) -> tuple[int, str]:
        if self.proc is not None:
            _out, err = self.proc.communicate("go\n", timeout=120)
            return self.proc.returncode, err
        os.write(self._go, b"g")
        rest = self._ready.read()
        os.waitpid(self.pid, 0)
        self.pid = 0
        head, _, err = rest.partition("\n")
        return int(head.split()[1]), err

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            return
        if self.pid:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = 0


def _broker_try_lock(root: Path) -> str:
    """What a broker's `tryLock(0, 1, false)` gets, from another process (a forked child)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as exc:
            os._exit(100 + exc.errno)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status)
    return "locked" if code == 0 else f"refused {code - 100}"


def _count_writes(base, argv: list[str], tmp_path: Path) -> int:
    """How many write calls the command makes (its run to completion, counted by the crash hook)."""
    from store.io import filewrites

    root = tmp_path / "count"
    shutil.copytree(base.path, root)
    filewrites.set_crash_after(10**9)
    try:
        outcome = run_cli(["-s", str(root), "-f", "json", *argv])
        assert outcome.code == 0, outcome.stderr
        return 10**9 - filewrites._crash_budget[0]
    finally:
        filewrites.set_crash_after(None)
        shutil.rmtree(root)


WRITERS = [
    ("delay replay", "write"),
    ("rebuild", "write"),
    ("txn commit", "write"),
    ("offsets reset", "replace"),
    ("consume-mode set", "replace"),
    ("topic update", "replace"),
]


@pytest.mark.parametrize(("first", "point"), WRITERS)
def test_a_second_writer_and_a_broker_refuse_while_one_writes(base, commands, tmp_path, first, point) -> None:
    argv = commands[first]
    if point == "write":
        total = _count_writes(base, argv, tmp_path)
        stops = sorted({1, total // 2, total} - {0})
    else:
        stops = [1]
    for at in stops:
        root = tmp_path / f"store-{at}"
        shutil.copytree(base.path, root)
        writer = Paused(root, argv, point, at, new_process=(first, at) == ("delay replay", 1))
        try:
            assert lock_holder(root / "lock") == writer.pid, f"lock not held at write {at}"
            assert _broker_try_lock(root).split()[0] == "refused"
            for second, other in commands.items():
                if second == first:
                    continue
                before = snapshot(root)
                outcome = run_cli(["-s", str(root), "-f", "json", *other], name=second)
                assert outcome.code == 1, (second, outcome.stderr)
                assert judge(outcome, str(root)).failure is None, outcome.stderr
                locked = str(root / "lock") in outcome.stderr and f"pid {writer.pid}" in outcome.stderr
                # a transaction end planned against the half-written one may be refused before the lock
                conflict = (
                    first.startswith("txn") and second.startswith("txn") and "already" in outcome.stderr
                )
                assert locked or conflict, (second, outcome.stderr)
                assert snapshot(root) == before, f"{second} changed the store while {first} was writing"
                dry = run_cli(["-s", str(root), "-f", "json", *[a for a in other if a != "--execute"]])
                assert dry.code == 0 or conflict, (second, dry.stderr)
            code, err = writer.finish()
            assert code == 0, err
        finally:
            writer.kill()
        assert lock_holder(root / "lock") is None
        assert run_cli(["-s", str(root), "-f", "json", "info"]).code == 0
        assert run_cli(["-s", str(root), "-f", "json", "verify"]).code == 0
        for second, other in commands.items():
            if second not in (first, "txn rollback"):  # rollback after commit is a conflict, not a lock
                outcome = run_cli(["-s", str(root), "-f", "json", *other], name=second)
                assert outcome.code == 0, (first, second, outcome.stderr)
                break


def test_two_writers_started_together(base, commands, tmp_path) -> None:
    """No window between the check and the lock: of two writers started at once, exactly one acts
    while the other is inside its write (the other either refuses or runs after it)."""
    root = tmp_path / "store"
    shutil.copytree(base.path, root)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mqtool.cli", "-s", str(root), "-f", "json", *commands[name]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for name in ("delay replay", "offsets reset")
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for code, err in results:
        assert code in (0, 1), err
        if code == 1:
            assert "lock" in err and len([x for x in err.splitlines() if x.startswith("mqtool: error")]) == 1
    assert any(code == 0 for code, _ in results)
    assert run_cli(["-s", str(root), "-f", "json", "verify"]).code == 0


def test_our_lock_is_the_brokers_lock(base, tmp_path) -> None:
    """What a broker's tryLock sees while mqtool holds the lock, in-process: F_SETLK is refused."""
    from store.liveness import hold_store_lock

    root = tmp_path / "store"
    shutil.copytree(base.path, root)
    with hold_store_lock(root):
        answer = _broker_try_lock(root).split()
        assert answer[0] == "refused" and int(answer[1]) in (errno.EAGAIN, errno.EACCES)
    assert _broker_try_lock(root) == "locked"
    fd = os.open(root / "lock", os.O_RDONLY)
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFD) is not None
    finally:
        os.close(fd)
