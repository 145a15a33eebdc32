"""Crash tests: SIGKILL during `--execute`-style writes, then check the store is the old or the new one.

Each writer runs in a subprocess with MQTOOL_CRASH_AFTER_WRITES=N, which makes it SIGKILL itself right
after its N-th state-changing call (store.filewrites.write_done). Reference runs of the same write
in-process (deterministic clocks) give the "new" state and the number of write calls.

* Append: without `abort` the store is byte for byte the old or the new one. With `abort` (the
  appender's marker: the broker will run its abnormal recovery) the commitlog is a prefix of the new
  one ending at a record boundary, every ConsumeQueue is a prefix of the new one, the index is the
  dispatch of the records up to its last file's endPhyOffset, the checkpoint makes the broker's
  recovery start early enough, and dispatching what that recovery re-dispatches gives the new store's
  queues up to the boundary.
* Rebuild: consumequeue/ and index/ are each the old or the new directory.
* Sample create: the target directory does not exist or is complete.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from formats.checkpoint import decode_checkpoint
from formats.indexfile import IndexGeometry
from formats.message.commitlog import Message
from mqtool.sample.create import create_sample
from mqtool.sample.options import SampleOptions
from store.index.indexservice import IndexService
from store.index.indexwriter import list_index_files
from store.io import filewrites
from store.io.filewrites import CRASH_ENV, set_crash_after
from store.layout import delay_levels_ms
from store.log.commitlog import CommitLog
from store.queue.consumequeue import ConsumeQueue, ConsumeQueueStore
from store.rebuild.build import build_staging

ROOT = Path(__file__).resolve().parent.parent
GEOMETRY = IndexGeometry(64, 100)
SAMPLE = {"messages": 300, "file_size": 65536, "cq_file_size": 600, "hash_slot_num": 64, "index_num": 100}

APPEND_SCRIPT = """
import sys
from pathlib import Path
from store.appender import CommitLogAppender, NewMessage
from store.liveness import hold_store_lock


def main(root):
    clock = [1_717_300_000_000]

    def now():
        clock[0] += 5
        return clock[0]

    with hold_store_lock(root), CommitLogAppender(root, now=now, batch_bytes=16384) as appender:
        for i in range(150):
            keys = {"KEYS": f"crash-{i} crash"} if i % 3 else {}
            appender.append(
                NewMessage(
                    "TopicTest",
                    bytes([97 + i % 26]) * (300 + i * 7 % 400),
                    {"UNIQ_KEY": f"C0A80065{i:024X}", **keys, "TAGS": "TagC"},
                    queue_id=i % 4,
                    born_host=(bytes([192, 168, 0, 101]), 50001),
                )
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
"""


def append_in_process(root: Path) -> None:
    namespace = {"__name__": "append"}
    exec(compile(APPEND_SCRIPT, "append", "exec"), namespace)
    namespace["main"](root)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_killed(args: list[str], crash_after: int) -> int:
    """Run a command in a new interpreter with MQTOOL_CRASH_AFTER_WRITES set; its exit status."""
    env = {**os.environ, CRASH_ENV: str(crash_after), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr.decode()
    return proc.returncode


def run_forked(fn, crash_after: int) -> int:
    """Run `fn` in a forked child armed to SIGKILL itself after `crash_after` writes (cheaper than a new
    interpreter; the same hook the environment variable arms)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            set_crash_after(crash_after)
            fn()
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    assert code in (0, -signal.SIGKILL), code
    return code


def count_writes(fn) -> int:
    """Write calls `fn()` makes (the crash hook's budget, counted in-process)."""
    set_crash_after(10**9)
    try:
        fn()
        return 10**9 - filewrites._crash_budget[0]
    finally:
        set_crash_after(None)


def kill_points(total: int) -> list[int]:
    points = {1, 2, total // 5, total // 3, total // 2, 2 * total // 3, total - 2, total - 1, total}
    return sorted(p for p in points if 1 <= p <= total)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("crash") / "base"
    create_sample(SampleOptions(root, seed=5, **SAMPLE))
    return root


# --- append -----------------------------------------------------------------------------------------


def record_ends(root: Path) -> tuple[list[Message], int]:
    with CommitLog.open(root) as cl:
        records = list(cl.iter_records())
    return [r for r in records if isinstance(r, Message)], records[-1]


def queue_units(root: Path) -> dict[tuple[str, int], list[tuple[int, int, int, int]]]:
    out = {}
    for topic, queue_id in ConsumeQueueStore(root).queues():
        q = ConsumeQueue(root, topic, queue_id)
        out[(topic, queue_id)] = [(o, u.phy_offset, u.size, u.tags_code) for o, u in q.iter_units(0)]
        q.close()
    return out


def index_files(root: Path) -> dict[str, bytes]:
    directory = root / "index"
    return {name: (directory / name).read_bytes() for name in list_index_files(directory)}


def check_append_state(crashed: Path, old: Path, new: Path, tmp: Path) -> str:
    """'old', 'new' or 'recoverable' (abort present, consistent as described in the module docstring)."""
    messages, stop = record_ends(crashed)  # readable: the walk ends cleanly
    assert stop.kind == "end", stop
    for f in IndexService(crashed, GEOMETRY.hash_slot_num, GEOMETRY.index_num).files:
        f.validate()
    state = tree(crashed)
    if not (crashed / "abort").exists():
        if state == tree(old):
            return "old"
        assert state == tree(new), "no abort, but neither the old nor the new store"
        return "new"
    new_messages, _ = record_ends(new)
    old_messages, _ = record_ends(old)
    end = messages[-1].physical_offset + messages[-1].total_size
    boundaries = {m.physical_offset + m.total_size for m in new_messages[len(old_messages) - 1 :]}
    assert end in boundaries
    assert messages == new_messages[: len(messages)]
    new_queues = queue_units(new)
    for key, units in queue_units(crashed).items():
        assert units == new_queues[key][: len(units)], key
    # the index is the broker's dispatch of the records up to its last file's endPhyOffset (files are
    # replaced whole; a file the killed batch had still to create may be missing)
    crashed_index = list(index_files(crashed).values())
    last_end = int.from_bytes(crashed_index[-1][24:32], "big")
    reference = IndexService(files=[], geometry=GEOMETRY)
    for m in messages:
        if m.physical_offset <= last_end:
            reference.build_index(
                m.topic, m.physical_offset, m.store_timestamp, m.sys_flag, m.uniq_key, m.keys
            )
    expected = [bytes(f.data) for f in reference.files]
    for i, data in enumerate(expected):
        if data[36:40] == bytes(4):  # no entry yet: the broker's flush writes indexCount 1
            expected[i] = data[:36] + (1).to_bytes(4, "big") + data[40:]
    assert crashed_index in (expected, expected[:-1])
    new_index = index_files(new)
    # abnormal recovery (CommitLog.recoverAbnormally) starts at the last file whose first record was stored at
    # or
    # before the checkpoint's min time: it must not start after a record that is not fully dispatched
    cp = decode_checkpoint((crashed / "checkpoint").read_bytes())
    if cp == decode_checkpoint((new / "checkpoint").read_bytes()):  # only the marker was left to remove
        assert queue_units(crashed) == new_queues and index_files(crashed) == new_index
    in_queues = {u[1] for units in queue_units(crashed).values() for u in units}
    pending = [m.physical_offset for m in messages if m.physical_offset not in in_queues]
    pending += [
        m.physical_offset for m in messages if m.physical_offset > last_end and (m.keys or m.uniq_key)
    ]
    if pending:
        with CommitLog.open(crashed) as cl:
            firsts = [(f.start_offset, cl.read_message_at(f.start_offset).store_timestamp) for f in cl.files]
        start = max((s for s, t in firsts if t <= cp.min_timestamp), default=firsts[0][0])
        assert start <= min(pending)
    # what the broker's recovery dispatches: the new store's queues up to the recovered end
    build_staging(
        crashed,
        tmp,
        cq=True,
        index=False,
        cq_file_size=SAMPLE["cq_file_size"],
        index_geometry=None,
        delay_levels=delay_levels_ms(None),
        now_ms=lambda: 0,
    )
    recovered = queue_units(tmp)
    for key, units in new_queues.items():
        assert recovered.get(key, []) == [u for u in units if u[1] < end], key
    shutil.rmtree(tmp)
    return "recoverable"


def test_append_killed_at_any_write(base, tmp_path):
    new = tmp_path / "new"
    shutil.copytree(base, new)
    script = [sys.executable, "-c", APPEND_SCRIPT]
    writes = count_writes(lambda: append_in_process(new))
    assert writes > 30
    outcomes = set()
    points = kill_points(writes)
    for n in points:
        crashed = tmp_path / f"crash-{n}"
        shutil.copytree(base, crashed)
        if n == points[len(points) // 2]:  # one run as a real new process, armed through the environment
            code = run_killed([*script, str(crashed)], n)
        else:
            code = run_forked(lambda root=crashed: append_in_process(root), n)
        assert code == -signal.SIGKILL
        outcomes.add(check_append_state(crashed, base, new, tmp_path / f"recover-{n}"))
    assert outcomes == {"recoverable", "new"}


# --- rebuild ------------------------------------------------------------------------------------------


def test_rebuild_killed_at_any_write(base, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(base, old)
    cq_file = old / "consumequeue" / "TopicTest" / "1" / "00000000000000000000"
    data = bytearray(cq_file.read_bytes())
    data[28:40] = bytes(12)  # damage a unit's tags code
    cq_file.write_bytes(bytes(data))
    args = ["rebuild", "all", "--execute", "--max-index-num", "90"]  # a new geometry: new index files
    new = tmp_path / "new"
    shutil.copytree(old, new)

    def reference() -> None:
        rebuild_in_process(new, args)

    writes = count_writes(reference)
    assert tree(new / "consumequeue") != tree(old / "consumequeue")
    new_index = list(index_files(new).values())
    old_index = list(index_files(old).values())
    cli = [sys.executable, "-m", "mqtool.cli", *args]
    seen = set()
    points = kill_points(writes)
    for n in points:
        crashed = tmp_path / f"crash-{n}"
        shutil.copytree(old, crashed)
        if n == points[len(points) // 2]:
            code = run_killed([*cli, "--store", str(crashed)], n)
        else:
            code = run_forked(lambda root=crashed: rebuild_in_process(root, args), n)
        assert code == -signal.SIGKILL
        cq = tree(crashed / "consumequeue")
        assert cq in (tree(old / "consumequeue"), tree(new / "consumequeue"))
        index = list(index_files(crashed).values())
        assert index in (old_index, new_index)
        seen.add((cq == tree(new / "consumequeue"), index == new_index))
        # the next run cleans up whatever the killed one left and finishes the job
        rebuild_in_process(crashed, args)
        assert tree(crashed / "consumequeue") == tree(new / "consumequeue")
        assert list(index_files(crashed).values()) == new_index
        assert not [p for p in crashed.iterdir() if p.name.startswith(".mqtool")]
    assert (False, False) in seen and (True, True) in seen


def rebuild_in_process(root: Path, args: list[str]) -> None:
    from typer.testing import CliRunner

    from mqtool.cli import app

    result = CliRunner().invoke(app, [*args, "--store", str(root)])
    assert result.exit_code == 0, result.output


# --- sample create -------------------------------------------------------------------------------------


def test_sample_create_killed(tmp_path):
    reference = tmp_path / "reference"
    writes = count_writes(lambda: create_sample(SampleOptions(reference, messages=60, seed=9)))
    cli = [sys.executable, "-m", "mqtool.cli", "sample", "create", "-n", "60", "--seed", "9"]
    for n in (1, writes // 2, writes):
        target = tmp_path / f"s{n}"
        if n == writes // 2:
            assert run_killed([*cli, str(target)], n) == -signal.SIGKILL
        else:
            options = SampleOptions(target, messages=60, seed=9)
            assert run_forked(lambda o=options: create_sample(o), n) == -signal.SIGKILL
        assert not target.exists()  # killed before the final rename: nothing at the target
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mqtool")]  # only the staging
        shutil.rmtree(next(p for p in tmp_path.iterdir() if p.name.startswith(".mqtool")))
    assert (
        run_forked(lambda: create_sample(SampleOptions(tmp_path / "done", messages=60, seed=9)), writes + 1)
        == 0
    )
    assert tree(tmp_path / "done") == tree(reference)
