"""Every write checks all it will change before the first byte (issue 26, item 4).

Mutated copies of stores the real RocketMQ classes wrote: a directory, a FIFO or a read-only file where a
write command's target is, a read-only directory where it creates files. The command must refuse in one
line naming that path and leave the store byte for byte as it was - not deliver the due messages and then
fail on config/delayOffset.json, which leaves a broker (reading the old progress from the .bak) to
deliver them again. A step that still fails after an earlier one wrote (no space, say) says what was
written and how to finish, and doing so finishes.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fuzz.corrupt import restore_permissions
from fuzz.harness import preload, run_cli
from golden import child_env, copy_store, snapshot

NOW = "2030-01-01"


def mqtool(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
    )


def as_nobody(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The CLI run in a forked child that dropped root for `nobody` (root ignores permission bits); every
    module is imported first, as the fuzz workers do (nobody cannot read the Python installation)."""
    import pickle

    preload()
    user = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            out = run_cli(argv, timeout=120)
            data = pickle.dumps((out.code, out.stdout, out.stderr + (out.crash or "")))
        except BaseException as exc:  # noqa: BLE001 - sent to the parent
            data = pickle.dumps((99, "", repr(exc)))
        with os.fdopen(write_end, "wb") as fh:
            fh.write(data)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        code, stdout, stderr = pickle.loads(fh.read())
    os.waitpid(pid, 0)
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def refused_naming(proc: subprocess.CompletedProcess[str], path: Path) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mqtool: error: ")]
    assert proc.returncode == 1, proc.stdout[-500:] + proc.stderr
    assert len(errors) == 1, proc.stderr
    assert str(path) in errors[0], errors[0]
    return errors[0]


def put_in_place(path: Path, what: str) -> None:
    """Replace the file at `path` (if any) with a directory or a FIFO."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if what == "dir":
        path.mkdir()
        (path / "x").write_bytes(b"x")
    else:
        os.mkfifo(path)


def unchanged_but(root: Path, before: dict[str, bytes], path: Path) -> None:
    after = snapshot(root)
    rel = str(path.relative_to(root))
    assert {k: v for k, v in after.items() if not k.startswith(rel)} == {
        k: v for k, v in before.items() if not k.startswith(rel)
    }


# --- the case -----------------------------------------------------------------------------------


def test_delay_replay_with_delay_offset_a_directory_delivers_nothing(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    target = root / "config" / "delayOffset.json"
    put_in_place(target, "dir")
    before = snapshot(root)
    line = refused_naming(mqtool("-s", str(root), "delay", "replay", "--now", NOW, "--execute"), target)
    assert "a directory, not a regular file; nothing was written" in line
    assert snapshot(root) == before  # no record appended, no ConsumeQueue unit, index entry, checkpoint


# --- every write command, every kind of target ----------------------------------------------------------

CASES = [
    # (command, store, target relative to the store root, what is put there)
    (["delay", "replay", "--now", NOW, "--execute"], "store-a", "config/delayOffset.json", "fifo"),
    (["delay", "replay", "--now", NOW, "--execute"], "store-a", "config/delayOffset.json.bak", "dir"),
    (["delay", "replay", "--now", NOW, "--execute"], "store-a", "checkpoint", "dir"),
    (["delay", "replay", "--now", NOW, "--execute"], "store-a", "index/{last_index}", "dir"),
    # the commitlog file the append goes on in, a directory (the load skips it, a write fails on it)
    (["txn", "commit", "2", "--execute"], "store-a", "commitlog/00000000000002097152", "dir"),
    (["txn", "commit", "2", "--execute"], "store-a", "checkpoint", "fifo"),
    (["txn", "rollback", "2", "--execute"], "store-a", "consumequeue/RMQ_SYS_TRANS_OP_HALF_TOPIC", "fifo"),
    (["txn", "resolve", "--policy", "commit", "--now", NOW, "--execute"], "store-a", "index", "fifo"),
    (
        ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "--to-earliest", "--execute"],
        "store-a",
        "config/consumerOffset.json.bak",
        "dir",
    ),
    (
        ["consume-mode", "set", "-t", "TopicTest", "-g", "groupA", "--mode", "POP", "--execute"],
        "store-a",
        "config/messageRequestMode.json",
        "dir",
    ),
    (["rebuild", "all", "--execute"], "store-a", "checkpoint", "dir"),
    (["topic", "update", "NewTopic", "--execute"], "store-a", "config/topics.json.bak", "dir"),
    (["topic", "delete", "TopicTest", "--execute"], "store-a", "consumequeue/TopicTest", "fifo"),
    (
        ["group", "delete", "groupB", "--clean-offset", "--execute"],
        "store-a",
        "config/consumerOffset.json",
        "fifo",
    ),
    (
        ["delay", "replay", "--timer", "--now", NOW, "--execute"],
        "store-timer-states",
        "config/timercheck",
        "dir",
    ),
]


@pytest.mark.parametrize(
    ("argv", "store", "rel", "what"), CASES, ids=lambda v: v if isinstance(v, str) else None
)
def test_an_unwritable_target_is_refused_before_the_first_byte(tmp_path, argv, store, rel, what):
    root = copy_store(store, tmp_path / "s")
    rel = rel.format(last_index=sorted(os.listdir(root / "index"))[-1])
    target = root / rel
    plan = mqtool("-s", str(root), "-f", "json", *argv[:-1])  # the dry run: there is something to write
    assert plan.returncode == 0, plan.stderr
    put_in_place(target, what)
    before = snapshot(root)
    refused_naming(mqtool("-s", str(root), *argv), target)
    unchanged_but(root, before, target)
    assert not [p for p in os.listdir(root) if p.startswith(".mqtool-tmp")]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the copy to nobody")
@pytest.mark.parametrize(
    ("argv", "rel"),
    [
        (["delay", "replay", "--now", NOW, "--execute"], "index"),
        (["delay", "replay", "--now", NOW, "--execute"], "commitlog/00000000000002097152"),
        (["delay", "replay", "--now", NOW, "--execute"], "consumequeue/TopicTest/1"),
        (["txn", "commit", "2", "--execute"], "checkpoint"),
        (["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "--to-earliest", "--execute"], "config"),
        (["rebuild", "cq", "--execute"], "consumequeue"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_no_permission_is_refused_before_the_first_byte(argv, rel):
    work = Path(tempfile.mkdtemp(prefix="mqtool-perm-"))  # a place `nobody` can reach
    try:
        work.chmod(0o755)
        root = copy_store("store-a", work / "s")
        user = pwd.getpwnam("nobody")
        for dirpath, _dirs, files in os.walk(work):
            os.chown(dirpath, user.pw_uid, user.pw_gid)
            for f in files:
                os.chown(os.path.join(dirpath, f), user.pw_uid, user.pw_gid)
        target = root / rel
        target.chmod(0o555 if target.is_dir() else 0o444)
        before = snapshot(root)
        line = refused_naming(as_nobody(["-s", str(root), *argv]), target)
        assert "permission denied" in line and "nothing was written" in line
        assert snapshot(root) == before
    finally:
        restore_permissions(work)
        shutil.rmtree(work, ignore_errors=True)


# --- a step that fails after an earlier one wrote ----------------------------------------------------


def test_a_later_failure_says_what_was_written_and_the_rerun_finishes(tmp_path, monkeypatch):
    """delayOffset.json's save fails after the records were appended (the disk filled up, say): the line
    says they were delivered and to run the command again, which finds them and only moves the
    progress."""
    from store.config.configfile import ConfigFile, ConfigWriteError

    root = copy_store("store-a", tmp_path / "s")

    def full(self, model, pretty=None):
        raise ConfigWriteError(
            "cannot write: no space left on device; the file was left unchanged", str(self.path)
        )

    with monkeypatch.context() as m:
        m.setattr(ConfigFile, "save", full)
        out = run_cli(["-s", str(root), "delay", "replay", "--now", NOW, "--execute"])
    assert out.code == 1
    assert "no space left on device" in out.stderr
    delivered = "4 due message(s) were delivered (commitlog, ConsumeQueues, index, checkpoint) already"
    assert delivered in out.stderr
    assert "run this `delay replay --execute` again" in out.stderr
    again = run_cli(["-s", str(root), "-f", "json", "delay", "replay", "--now", NOW, "--execute"])
    assert again.code == 0, again.stderr
    done = json.loads(again.stdout)
    assert [d["action"] for d in done["deliveries"]] == ["done"] * 4  # recognised, not delivered twice
    assert (
        json.loads(run_cli(["-s", str(root), "-f", "json", "delay", "list", "--due", "--now", NOW]).stdout)
        == []
    )
