"""Disk full, read-only file systems and kills during `--execute`: clean errors, no partial files.

* Injected faults: every write-side system call of each `--execute` path (offsets reset, consume-mode set,
  rebuild, delay replay, txn commit/rollback/resolve, dlq resend on store-a) is counted; a run is then
  repeated with the k-th call failing with ENOSPC (and with EROFS) for a spread of k. The command must end
  with one error line naming a file and exit 1, and leave no temporary file behind; the store must be the
  old one, or - for commitlog appends, which keep `abort` while they write - one the broker's recovery accepts
  (`recovery_problems`). Running the command again afterwards works (or is refused because of `abort`).
* A real full file system (a tmpfs filled to the last byte) and a real read-only mount (root only, in a
  private mount namespace; skipped otherwise).
* SIGKILL where the existing crash tests do not reach (tests/test_write_crash.py, test_offset_reset.py,
  test_delay.py and test_transactions.py cover the appender, rebuild, sample, offset reset, delay replay
  and txn commit): consume-mode set killed before and after every write/fsync/replace, txn rollback and
  resolve killed after every write call. Old or new state, readable, accepted by the broker's recovery.
"""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz.harness import (
    ROOT,
    can_mount,
    file_digest,
    in_private_mounts,
    judge,
    prepare_bases,
    run_cli,
    snapshot,
    write_commands,
)

from formats.message.commitlog import Message
from store.config.configfile import CONFIG_NAMES
from store.io.filewrites import CRASH_ENV, TMP_PREFIX
from store.storedir import Store

CONFIG_WRITERS = {
    "offsets reset": "consumerOffset.json",
    "offsets clone": "consumerOffset.json",
    "consume-mode set": "messageRequestMode.json",
    "topic update": "topics.json",
    "group update": "subscriptionGroup.json",
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """tiny5 for every write; store-a (a %DLQ%groupA record the real put wrote) for dlq resend."""
    return prepare_bases(tmp_path_factory.mktemp("disk"), ["tiny5", "store-a"])


@pytest.fixture(scope="module")
def base(bases):
    return bases[0]


@pytest.fixture(scope="module")
def dlq_base(bases):
    return bases[1]


@pytest.fixture(scope="module")
def commands(base):
    return dict(write_commands(base))


@pytest.fixture(scope="module")
def dlq_commands(dlq_base):
    return {name: argv for name, argv in write_commands(dlq_base) if name == "dlq resend"}


# --- what the broker's recovery accepts ------------------------------------------------------------


def recovery_problems(root: Path) -> list[str]:
    """Why the broker's start would not accept the store (empty when it would).

    The commitlog walk ends at a record boundary (a torn or corrupt tail only with `abort`: abnormal
    recovery truncates it); every ConsumeQueue unit points at a whole message of its topic, queue and
    queue offset - or, with `abort`, past the recovered end (recovery truncates such units); every
    config file loads (from the file or its .bak); the checkpoint decodes.
    """
    problems = []
    abort = (root / "abort").exists()
    with Store.open(root) as st:
        records = list(st.commitlog.iter_records())
        stop = records[-1]
        if stop.kind != "end" and not abort:
            problems.append(f"commitlog ends {stop.kind} at {stop.physical_offset} and there is no abort")
        end = stop.physical_offset
        messages = {r.physical_offset: r for r in records if isinstance(r, Message)}
        for topic, queue_id in st.consume_queues.queues():
            cq = st.consume_queue(topic, queue_id)
            for offset, unit in cq.iter_units():
                if unit.is_filler or unit.phy_offset < st.commitlog.min_offset:
                    continue
                if unit.phy_offset >= end:
                    if not abort:
                        problems.append(f"{topic}/{queue_id}@{offset} points past the end {end}")
                    continue
                m = messages.get(unit.phy_offset)
                if m is None or (m.total_size, m.topic, m.queue_id, m.queue_offset) != (
                    unit.size,
                    topic,
                    queue_id,
                    offset,
                ):
                    problems.append(f"{topic}/{queue_id}@{offset} does not point at its message")
        for name in CONFIG_NAMES:
            try:
                st.config(name).load()
            except Exception as exc:  # noqa: BLE001 - the problem is the finding
                problems.append(f"{name}: {exc}")
        st.checkpoint()
    return problems


def leftovers(root: Path) -> list[str]:
    """Temporary files or directories a failed write left in the store."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.name.startswith(TMP_PREFIX) or ".mqtool" in p.name
    )


# --- injected faults -------------------------------------------------------------------------------


class Faults:
    """Count write-side calls (os.write/pwrite/ftruncate/replace/rename/link/mkdir/symlink/sendfile/
    copy_file_range, opens for writing); with `fail_at`, make that call raise OSError(errno)."""

    NAMES = ("write", "pwrite", "ftruncate", "replace", "rename", "link", "mkdir", "symlink", "sendfile",
             "copy_file_range")  # fmt: skip

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int | None = None, err: int = errno.ENOSPC):
        self.calls = 0
        self.fail_at = fail_at
        self.err = err
        self.failed: str | None = None
        for name in self.NAMES:
            if hasattr(os, name):
                monkeypatch.setattr(os, name, self._wrap(name, getattr(os, name)))
        real_open = os.open

        def os_open(path, flags, *args, **kwargs):
            if flags & WRITE_FLAGS:
                self._tick("open", path)
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", os_open)
        real_builtin_open = builtins.open

        def builtin_open(file, mode="r", *args, **kwargs):
            if isinstance(mode, str) and any(c in mode for c in "wax+") and not isinstance(file, int):
                self._tick("open", file)
            return real_builtin_open(file, mode, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", builtin_open)

    def _tick(self, name: str, path=None) -> None:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            self.failed = f"{name} {path if path is not None else ''}".strip()
            filename = os.fspath(path) if isinstance(path, str | os.PathLike) else None
            raise OSError(self.err, os.strerror(self.err), filename)

    def _wrap(self, name: str, real):
        def wrapper(*args, **kwargs):
            first = args[0] if args and isinstance(args[0], str | os.PathLike) else None
            self._tick(name, first)
            return real(*args, **kwargs)

        return wrapper


def _count(base, argv: list[str], tmp_path: Path, monkeypatch) -> int:
    root = tmp_path / "count"
    shutil.copytree(base.path, root)
    with monkeypatch.context() as m:
        faults = Faults(m)
        outcome = run_cli(["-s", str(root), "-f", "json", *argv])
    assert outcome.code == 0, outcome.stderr
    shutil.rmtree(root)
    return faults.calls


def content(root: Path) -> dict[str, bytes]:
    """Every file's bytes; index files by position (they are named by their creation time)."""
    out = {}
    index = sorted(p.name for p in (root / "index").iterdir()) if (root / "index").is_dir() else []
    for rel, value in snapshot(root).items():
        if isinstance(value, tuple):
            parts = rel.split("/")
            key = f"index/#{index.index(parts[1])}" if parts[0] == "index" and len(parts) == 2 else rel
            out[key] = (root / rel).read_bytes()
    return out


def messages(root: Path) -> list[tuple]:
    """The messages of the store, without their times: (topic, queue, queue offset, sysflag, uniq key,
    body) - what a run that delivers each message exactly once leaves, whenever it ran."""
    with Store.open(root) as st:
        return sorted(
            (m.topic, m.queue_id, m.queue_offset, m.sys_flag, m.uniq_key or "", bytes(m.body))
            for m in st.commitlog.iter_messages()
        )


def _points(total: int) -> list[int]:
    return sorted(
        {p for p in (1, 2, 3, total // 4, total // 2, 3 * total // 4, total - 1, total) if 1 <= p <= total}
    )


def _config_bytes(root: Path, name: str) -> bytes | None:
    path = root / "config" / name
    return path.read_bytes() if path.exists() else None


def _config_digest(root: Path, name: str) -> bytes | None:
    """The config file's digest as `snapshot` records it (None: no such file)."""
    path = root / "config" / name
    return file_digest(path) if path.exists() else None


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS], ids=["ENOSPC", "EROFS"])
@pytest.mark.parametrize(
    "which",
    [
        "offsets reset",
        "consume-mode set",
        "topic update",
        "topic delete",
        "group delete",
        "rebuild",
        "delay replay",
        "txn commit",
        "txn rollback",
        "txn resolve",
        "dlq resend",
    ],
)
def test_a_failing_write_call_gives_a_clean_error(
    bases, commands, dlq_commands, tmp_path, monkeypatch, which, err
) -> None:
    base = bases[1] if which == "dlq resend" else bases[0]
    argv = {**commands, **dlq_commands}[which]
    total = _count(base, argv, tmp_path, monkeypatch)
    assert total > 0
    new_root = tmp_path / "new"
    shutil.copytree(base.path, new_root)
    assert run_cli(["-s", str(new_root), "-f", "json", *argv]).code == 0
    for k in _points(total):
        root = tmp_path / f"k{k}"
        shutil.copytree(base.path, root)
        old = snapshot(root)
        with monkeypatch.context() as m:
            faults = Faults(m, fail_at=k, err=err)
            outcome = run_cli(["-s", str(root), "-f", "json", *argv], name=which)
        where = f"{which}: call {k}/{total} ({faults.failed}) failed with {errno.errorcode[err]}"
        assert judge(outcome, str(root)).failure is None, f"{where}\n{outcome.stderr}"
        assert not leftovers(root), f"{where}: left {leftovers(root)}"
        if outcome.code == 0:  # the failed call was not needed (mkdir of an existing directory, link ->
            # rename fallback): the write is done (store times and index names differ from the reference)
            assert not recovery_problems(root), where
            assert content(root).keys() == content(new_root).keys(), where
            assert content(root) != content(base.path), where
            continue
        assert (
            os.strerror(err) in outcome.stderr
            or {errno.ENOSPC: "no space", errno.EROFS: "read-only"}[err] in outcome.stderr.lower()
        ), f"{where}\n{outcome.stderr}"
        if which in CONFIG_WRITERS:
            name = CONFIG_WRITERS[which]
            assert _config_digest(root, name) == old.get(f"config/{name}", (None,))[0], where
        assert not recovery_problems(root), f"{where}: {recovery_problems(root)}"
        again = run_cli(["-s", str(root), "-f", "json", *argv], name=which)
        if (root / "abort").exists() and again.code != 0:  # exit 0: everything was written already
            assert again.code == 1 and "abort" in again.stderr, f"{where}\n{again.stderr}"
        else:
            # appends write records, then the config file: a run that failed between them is completed
            assert again.code == 0, f"{where}: the next run fails\n{again.stderr}"
            assert not recovery_problems(root)
            assert messages(root) == messages(new_root), f"{where}: not the reference's messages"
        shutil.rmtree(root)


# --- a real full file system and a real read-only mount -------------------------------------------


def _run_on_tmpfs(
    source: str, mountpoint: str, commands: list[tuple[str, list[str]]], mode: str, size: str = "8m"
) -> list[dict]:
    """Each command on a fresh copy of the store on a tmpfs, full (`mode` = "full") or read-only."""
    results = []
    for i, (name, argv) in enumerate(commands):
        mnt = os.path.join(mountpoint, str(i))
        os.makedirs(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], check=True)
        root = Path(mnt) / "store"
        shutil.copytree(source, root)
        if mode == "full":
            fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                while os.write(fd, b"\1" * 4096):
                    pass
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
            finally:
                os.close(fd)
        else:
            subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        before = snapshot(root)
        outcome = run_cli(["-s", str(root), "-f", "json", *argv], name=name)
        verdict = judge(outcome, str(root))
        results.append(
            {
                "name": name,
                "code": outcome.code,
                "stderr": outcome.stderr,
                "failure": verdict.failure,
                "unchanged": snapshot(root) == before,
                "abort": (root / "abort").exists(),
                "leftovers": leftovers(root),
                "recovery": recovery_problems(root),
            }
        )
    return results


needs_mount = pytest.mark.skipif(not can_mount(), reason="needs root to mount a tmpfs in a private namespace")


def _on_tmpfs(base, commands, dlq_base, dlq_commands, tmp_path, mode: str) -> list[dict]:
    """`_run_on_tmpfs` of tiny5's commands, and of dlq resend on store-a (a larger tmpfs: it holds 11 MB)."""
    results = []
    for i, (source, todo, size) in enumerate(((base, commands, "8m"), (dlq_base, dlq_commands, "32m"))):
        mnt = tmp_path / f"mnt{i}"
        mnt.mkdir()
        results += in_private_mounts(
            _run_on_tmpfs, str(source.path), str(mnt), list(todo.items()), mode, size
        )
    return results


@needs_mount
def test_a_full_file_system(base, commands, dlq_base, dlq_commands, tmp_path) -> None:
    results = _on_tmpfs(base, commands, dlq_base, dlq_commands, tmp_path, "full")
    for r in results:
        assert r["failure"] is None, r
        assert not r["leftovers"] and not r["recovery"], r
        if r["code"] == 0:  # what it wrote fitted into blocks the files already had (a small op message)
            assert not r["abort"], r
            continue
        assert r["code"] == 1 and "no space" in r["stderr"].lower(), r
        assert r["unchanged"] or r["abort"] or r["name"] == "rebuild", r
    assert sum(r["code"] == 1 for r in results) >= 5, results


@needs_mount
def test_a_read_only_file_system(base, commands, dlq_base, dlq_commands, tmp_path) -> None:
    results = _on_tmpfs(base, commands, dlq_base, dlq_commands, tmp_path, "ro")
    assert "dlq resend" in [r["name"] for r in results]
    for r in results:
        assert r["failure"] is None and r["code"] == 1, r
        assert "read-only" in r["stderr"].lower() and r["unchanged"], r


# --- kills where the existing crash tests do not reach ------------------------------------------

KILL_AT_STEP = """
import os, signal, sys
kill_at = int(sys.argv[1])
sys.argv = ["mqtool", *sys.argv[2:]]
calls = {"n": 0}

def tick():
    calls["n"] += 1
    if calls["n"] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

def counted(real):
    def wrapper(*args, **kwargs):
        tick()
        result = real(*args, **kwargs)
        tick()
        return result
    return wrapper

os.replace = counted(os.replace)
os.fsync = counted(os.fsync)
os.write = counted(os.write)
from mqtool.cli import main
main()
"""


def _killed_at_step(argv: list[str], kill_at: int) -> int:
    """Run `mqtool ARGV` in a forked child that SIGKILLs itself before or after its `kill_at`-th
    os.write/fsync/replace (the step hook of KILL_AT_STEP, without a new interpreter); its status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        calls = [0]

        def counted(real):
            def wrapper(*args, **kwargs):
                for _ in range(2):
                    calls[0] += 1
                    if calls[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    if _ == 0:
                        result = real(*args, **kwargs)
                return result

            return wrapper

        os.replace, os.fsync, os.write = counted(os.replace), counted(os.fsync), counted(os.write)
        outcome = run_cli(argv)
        os._exit(outcome.code if outcome.code is not None else 99)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _killed_after_writes(argv: list[str], n: int) -> int:
    """Run `mqtool ARGV` in a forked child armed to SIGKILL itself after its n-th write call (the
    MQTOOL_CRASH_AFTER_WRITES hook, without a new interpreter); its status."""
    from store.io import filewrites

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        filewrites.set_crash_after(n)
        outcome = run_cli(argv)
        os._exit(outcome.code if outcome.code is not None else 99)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _killed_at_step_with_renames(argv: list[str], kill_at: int) -> int:
    """`_killed_at_step` counting os.rename too (how `topic delete` moves a queue directory out)."""
    real_rename = os.rename
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        calls = [0]

        def counted(real):
            def wrapper(*args, **kwargs):
                for _ in range(2):
                    calls[0] += 1
                    if calls[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    if _ == 0:
                        result = real(*args, **kwargs)
                return result

            return wrapper

        os.replace, os.fsync, os.write = counted(os.replace), counted(os.fsync), counted(os.write)
        os.rename = counted(real_rename)
        outcome = run_cli(argv)
        os._exit(outcome.code if outcome.code is not None else 99)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def test_topic_delete_killed_at_every_step(base, commands, tmp_path) -> None:
    """SIGKILL before and after every os.write/fsync/replace/rename of `topic delete`: each config file is
    its old or new text, whole; the broker's start accepts the store; the same command run again finishes
    the delete (the files as a run without a kill leaves them, dataVersion's time aside) and leaves no
    parked directory."""
    import re

    argv = commands["topic delete"]
    topic = argv[2]
    reference = tmp_path / "new"
    shutil.copytree(base.path, reference)
    assert run_cli(["-s", str(reference), "-f", "json", *argv]).code == 0
    names = ("topics.json", "consumerOffset.json")

    def texts(root: Path) -> dict[str, bytes]:
        return {n: re.sub(rb'"timestamp":\d+', b"", _config_bytes(root, n)) for n in names}

    old, new = texts(base.path), texts(reference)
    kill_at = 1
    while True:
        root = tmp_path / f"k{kill_at}"
        shutil.copytree(base.path, root)
        code = _killed_at_step_with_renames(["-s", str(root), "-f", "json", *argv], kill_at)
        now = texts(root)
        for n in names:
            assert now[n] in (old[n], new[n]), (kill_at, n)
        assert not recovery_problems(root), kill_at
        if code == 0:
            break
        assert code == -signal.SIGKILL, code
        again = run_cli(["-s", str(root), "-f", "json", *argv])
        done = texts(root)
        if again.code != 0:  # killed after the last step that changes anything: nothing is left to do
            assert "nothing to delete" in again.stderr and done == new, (kill_at, again.stderr)
        assert done == new, kill_at
        assert not (root / "consumequeue" / topic).exists(), kill_at
        assert not [p for p in root.iterdir() if p.name.startswith(".mqtool-tmp-")], kill_at
        shutil.rmtree(root)
        kill_at += 1
    assert kill_at > 10


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop(CRASH_ENV, None)
    env.update(extra)
    return env


def test_consume_mode_set_killed_at_every_step(base, commands, tmp_path) -> None:
    """SIGKILL before and after every os.write/fsync/replace: messageRequestMode.json is the old or the new
    file, whole, loaded from the file itself; the .bak holds the old one once the new one is in. One kill
    point runs as a real new process (the console script), the others in forked children."""
    argv = commands["consume-mode set"]
    reference = tmp_path / "new"
    shutil.copytree(base.path, reference)
    assert run_cli(["-s", str(reference), "-f", "json", *argv]).code == 0
    old_text = _config_bytes(base.path, "messageRequestMode.json")
    new_text = _config_bytes(reference, "messageRequestMode.json")
    assert old_text != new_text
    seen = set()
    kill_at = 1
    while True:
        root = tmp_path / f"k{kill_at}"
        shutil.copytree(base.path, root)
        full = ["-s", str(root), "-f", "json", *argv]
        if kill_at == 3:
            proc = subprocess.run(
                [sys.executable, "-c", KILL_AT_STEP, str(kill_at), *full],
                capture_output=True,
                text=True,
                env=_env(),
                cwd=ROOT,
                timeout=120,
            )
            code = proc.returncode
        else:
            code = _killed_at_step(full, kill_at)
        with Store.open(root) as st:
            loaded = st.config("messageRequestMode.json").load()
        assert loaded.source == "file", loaded.reason
        text = _config_bytes(root, "messageRequestMode.json")
        assert text in (old_text, new_text)
        if text == new_text:
            assert _config_bytes(root, "messageRequestMode.json.bak") == old_text
        assert not recovery_problems(root)
        seen.add("new" if text == new_text else "old")
        shutil.rmtree(root)
        if code == 0:
            break
        assert code == -signal.SIGKILL, code
        kill_at += 1
    assert seen == {"old", "new"} and kill_at > 4


@pytest.mark.parametrize("which", ["txn rollback", "txn resolve"])
def test_txn_end_killed_after_every_write_call(base, commands, tmp_path, which) -> None:
    """SIGKILL after the n-th write call: the store is the old one or one the broker's recovery accepts;
    mqtool reads it; once recovered (`rebuild`, as the broker's re-dispatch) the command completes and
    ends the transaction exactly once. One kill point runs as a real process (MQTOOL_CRASH_AFTER_WRITES)."""
    argv = commands[which]
    reference = tmp_path / "new"
    shutil.copytree(base.path, reference)
    assert run_cli(["-s", str(reference), "-f", "json", *argv]).code == 0
    n = 1
    while True:
        root = tmp_path / f"k{n}"
        shutil.copytree(base.path, root)
        full = ["-s", str(root), "-f", "json", *argv]
        if n == 2:
            proc = subprocess.run(
                [sys.executable, "-m", "mqtool.cli", *full],
                capture_output=True,
                text=True,
                env=_env(**{CRASH_ENV: str(n)}),
                cwd=ROOT,
                timeout=120,
            )
            code = proc.returncode
        else:
            code = _killed_after_writes(full, n)
        assert not recovery_problems(root), (n, recovery_problems(root))
        assert run_cli(["-s", str(root), "-f", "json", "txn", "list"]).code == 0
        if code == 0:
            break
        assert code == -signal.SIGKILL, code
        if (root / "abort").exists():
            refused = run_cli(full)
            assert refused.code == 0 or "abort" in refused.stderr  # exit 0: nothing was left to write
            assert run_cli(["-s", str(root), "-f", "json", "rebuild", "all", "--execute"]).code in (0, 1)
            (root / "abort").unlink()
        again = run_cli(full)
        assert again.code == 0, again.stderr
        assert messages(root) == messages(reference), n
        shutil.rmtree(root)
        n += 1
    assert n > 3
