"""The offset planner (`mqtool offsets reset`): golden time searches, plans, plan files, and --execute
under the write safety rules (dry run, held lock, .bak, layout, crashes at any point)."""

from __future__ import annotations

import difflib
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from golden import LOCK_HOLDER as HOLDER
from golden import child_env as _env
from golden import copy_store as _copy_store
from golden import expect, store_path
from golden import run_mqtool as mqtool
from golden import snapshot_config as snapshot

from formats.config.codec import decode_config
from formats.config.offsets import ConsumerOffsetTable
from formats.consumequeue import CqUnit, encode_unit
from mqtool.offsets.apply import ConfigNotWritableError, PlanOutdatedError, apply_plan
from mqtool.offsets.plan import ResetPlanError, reset_target
from mqtool.offsets.plan_file import export_plan, read_plan_file
from mqtool.offsets.reset import plan_from_file, plan_offsets_reset, plan_reset
from store.io.filewrites import CRASH_AT_ENV
from store.liveness import BrokerRunningError
from store.queue.consumequeue import ConsumeQueue
from store.storedir import Store
from store.version import detect_broker_version

UNITS_KEY = "units[queueOffset,phyOffset,size,tagsCode]"
COPIED = ("commitlog", "consumequeue", "config", "checkpoint", "lock", "abort", "abort.bak")


def copy_store(name: str, dest: Path) -> Path:
    return _copy_store(name, dest, parts=COPIED)


def offsets_text(root: Path) -> str:
    return (root / "config" / "consumerOffset.json").read_text(encoding="utf-8")


def offsets_model(root: Path, name: str = "consumerOffset.json") -> ConsumerOffsetTable:
    return decode_config(ConsumerOffsetTable, (root / "config" / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def store_a():
    with Store.open(store_path("store-a")) as st:
        yield st


@pytest.fixture(scope="module")
def store_49a():
    with Store.open(store_path("store-49a")) as st:
        yield st


@pytest.fixture(scope="module")
def recovered_c(tmp_path_factory: pytest.TempPathFactory):
    """store-c after the broker's recovery: the two re-dispatched final appends added to the CQs."""
    root = copy_store("store-c", tmp_path_factory.mktemp("store-c-recovered"))
    e = expect("store-c")
    for want in e["consumeQueues"].values():
        cq = ConsumeQueue(root, want["topic"], want["queueId"], e["minPhyOffset"])
        for q, phy, size, tags in want[UNITS_KEY]:
            if q < cq.max_offset:
                continue
            position = q * 20
            start = position - position % cq.file_size
            with open(cq.directory / f"{start:020d}", "r+b") as fh:
                fh.seek(position - start)
                fh.write(encode_unit(CqUnit(phy, size, tags)))
        cq.close()
    with Store.open(root) as st:
        yield st


# --- golden time searches through the planner --------------------------------------------------


def _one(store: Store, probe: dict, boundary: str | None = None, **kw) -> int:
    target = reset_target(to_time=probe["timestamp"], boundary=boundary)
    plan = plan_reset(store, "groupA", [probe["topic"]], target, queues=[probe["queueId"]], **kw)
    assert len(plan.rows) == 1
    row = plan.rows[0]
    assert row.requested_offset == row.new_offset  # the golden answers are inside [min, max]
    return row.new_offset


@pytest.mark.parametrize("name", ["store-a", "store-c"])
def test_every_offset_by_time_of_5x_stores(name: str, store_a: Store, recovered_c: Store) -> None:
    store = store_a if name == "store-a" else recovered_c
    assert detect_broker_version(store.root).major == 5
    probes = expect(name)["offsetByTime"]
    assert probes
    for p in probes:
        assert _one(store, p) == p["offset"] == p["offsetLower"], p
        assert _one(store, p, "lower") == p["offsetLower"], p
        assert _one(store, p, "upper") == p["offsetUpper"], p


def test_every_offset_by_time_of_store_49a_with_recorded_mtimes(store_49a: Store) -> None:
    e = expect("store-49a")
    version = detect_broker_version(store_49a.root)
    assert version.major == 4 and "no dataVersion" in version.reason
    for p in e["offsetByTime"]:
        assert _one(store_49a, p, cq_file_mtimes=e["cqFileLastModified"]) == p["offset"], p


def test_49a_plan_notes_the_mtime_dependence_and_refuses_a_boundary(store_49a: Store) -> None:
    plan = plan_reset(store_49a, "groupA", ["TopicTest"], reset_target(to_time=1795263963566))
    assert any("modification time" in n and "mtimes" in n for n in plan.notes)
    with pytest.raises(ResetPlanError, match="--boundary needs the 5.1.1"):
        plan_reset(store_49a, "groupA", ["TopicTest"], reset_target(to_time=1, boundary="upper"))
    forced = plan_reset(
        store_49a, "groupA", ["TopicTest"], reset_target(to_time=1, boundary="upper"), broker_version=5
    )
    assert forced.broker_version.major == 5 and not forced.broker_version.detected


def test_topic_only_in_consumequeue_is_accepted_with_a_warning(store_49a: Store) -> None:
    plan = plan_reset(store_49a, "groupA", ["RMQ_SYS_TRANS_HALF_TOPIC"], reset_target(to_earliest=True))
    assert [r.queue_id for r in plan.rows] == [0]
    assert any("not in topics.json" in w for w in plan.warnings)


# --- plans ---------------------------------------------------------------------------------------


def test_plan_rows_carry_the_json_fields(store_a: Store) -> None:
    probe = next(p for p in expect("store-a")["offsetByTime"] if p["topic"] == "TopicTest")
    plan = plan_reset(store_a, "groupA", ["TopicTest"], reset_target(to_time=probe["timestamp"]))
    assert [r.queue_id for r in plan.rows] == [0, 1, 2, 3]  # readQueueNums of topics.json
    committed = offsets_model(store_path("store-a")).get("TopicTest", "groupA")
    for row in plan.rows:
        d = row.to_dict()
        assert list(d)[:8] == [
            "group",
            "topic",
            "queueId",
            "currentOffset",
            "newOffset",
            "minOffset",
            "maxOffset",
            "newOffsetStoreTimestamp",
        ]
        assert d["currentOffset"] == committed[row.queue_id]
        cq = store_a.consume_queue("TopicTest", row.queue_id)
        assert (d["minOffset"], d["maxOffset"]) == (cq.min_offset, cq.max_offset)
        unit = cq.unit(row.new_offset)
        if unit is None:
            assert d["newOffsetStoreTimestamp"] is None
        else:
            stamp = store_a.commitlog.pickup_store_timestamp(unit.phy_offset, unit.size)
            assert d["newOffsetStoreTimestamp"] == stamp >= probe["timestamp"]
        assert d["lagAfter"] == d["maxOffset"] - d["newOffset"]
    json.dumps(plan.to_json())


def test_targets_and_clamping(store_a: Store) -> None:
    def rows(**kw):
        return plan_offsets_reset(store_a, group="groupA", topics=["TopicTest"], **kw)

    latest = rows(to_latest=True)
    assert all(r.new_offset == r.max_offset for r in latest.rows)
    earliest = rows(to_earliest=True, queues=[2])
    assert [(r.queue_id, r.new_offset) for r in earliest.rows] == [(2, 0)]
    zero = rows(to_offset=0)
    assert all(r.new_offset == 0 and r.changed for r in zero.rows)  # mqadmin would skip 0
    assert any("skips 0" in n for n in zero.notes)
    shifted = rows(shift_by=-10)
    assert all(r.new_offset == r.current_offset - 10 for r in shifted.rows)
    high = rows(to_offset=10**9)
    assert all(r.new_offset == r.max_offset and r.requested_offset == 10**9 for r in high.rows)
    assert sum("clamped" in w for w in high.warnings) == 4
    back = rows(shift_by=-(10**6))
    assert all(r.new_offset == r.min_offset for r in back.rows)
    assert all("below the min offset" in w for w in back.warnings if "clamped" in w)
    ago = plan_offsets_reset(store_a, group="groupA", topics=["TopicTest"], by_duration_ms=0)
    assert all(r.new_offset == r.max_offset for r in ago.rows)  # now is after every message


def test_all_topics_and_new_groups(store_a: Store) -> None:
    plan = plan_reset(store_a, "groupA", None, reset_target(to_latest=True), all_topics=True)
    assert sorted({r.topic for r in plan.rows}) == ["%RETRY%groupA", "OrderTopic", "TopicTest"]
    # groupB is in subscriptionGroup.json but has no offsets on OrderTopic: allowed, with a warning
    plan = plan_reset(store_a, "groupB", ["OrderTopic"], reset_target(to_earliest=True))
    assert all(r.current_offset is None and r.changed for r in plan.rows)
    assert any("no committed offsets on OrderTopic" in w for w in plan.warnings)
    shift = plan_reset(store_a, "groupB", ["OrderTopic"], reset_target(shift_by=1))
    assert not shift.rows and any("no committed offset to shift" in w for w in shift.warnings)
    with pytest.raises(ResetPlanError, match="does not exist"):
        plan_reset(store_a, "ghost", ["TopicTest"], reset_target(to_latest=True))
    ghost = plan_reset(store_a, "ghost", ["TopicTest"], reset_target(to_latest=True), allow_new_group=True)
    assert len(ghost.rows) == 4 and any("not in subscriptionGroup.json" in w for w in ghost.warnings)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"topics": ["NoSuchTopic"], "to_latest": True}, "does not exist"),
        ({"topics": ["TopicTest"], "to_latest": True, "queues": [4]}, "readQueueNums is 4"),
        ({"topics": ["TopicTest"]}, "none was given"),
        ({"topics": ["TopicTest"], "to_latest": True, "to_earliest": True}, "got --to-earliest, --to-latest"),
        ({"topics": ["TopicTest"], "to_latest": True, "boundary": "upper"}, "only applies to --to-time"),
        ({"topics": ["TopicTest"], "to_time": 1, "boundary": "middle"}, "lower or upper"),
        ({"topics": ["TopicTest"], "to_offset": -1}, "--to-offset must be"),
        ({"topics": ["TopicTest"], "all_topics": True, "to_latest": True}, "not both"),
        ({"to_latest": True}, "--topic"),
        ({"from_file": "x.csv", "to_latest": True}, "drop --to-latest"),
    ],
)
def test_option_errors(store_a: Store, kw: dict, message: str) -> None:
    with pytest.raises(ResetPlanError, match=message):
        plan_offsets_reset(store_a, group="groupA", **kw)


# --- plan files -----------------------------------------------------------------------------------


def test_export_then_import_gives_the_same_plan(store_a: Store, tmp_path: Path) -> None:
    plan = plan_reset(store_a, "groupA", ["TopicTest", "OrderTopic"], reset_target(to_time=1795261076300))
    path = tmp_path / "plan.csv"
    export_plan(plan, path)
    lines = path.read_text().splitlines()
    assert lines[0] == "group,topic,queue,offset,currentOffset,minOffset,maxOffset,newOffsetStoreTimestamp"
    again = plan_from_file(store_a, path)
    assert [r.to_dict() for r in again.rows] == [r.to_dict() for r in plan.rows]
    assert again.source == str(path) and again.target is None


def test_plan_file_forms(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("# comment\nTopicTest,0,5\n\nTopicTest,1,6\n")  # Kafka's topic,partition,offset
    rows = read_plan_file(path, default_group="groupA")
    assert [(r.line, r.group, r.topic, r.queue_id, r.offset) for r in rows] == [
        (2, "groupA", "TopicTest", 0, 5),
        (4, "groupA", "TopicTest", 1, 6),
    ]
    path.write_text("groupB,TopicTest,3,0\n")
    assert read_plan_file(path)[0].group == "groupB"
    path.write_text("topic,partition,newOffset,consumerGroup\nTopicTest,2,7,groupA\n")
    assert read_plan_file(path)[0] == read_plan_file(path)[0].__class__(2, "groupA", "TopicTest", 2, 7)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no rows"),
        ("group,topic,queue,offset\n", "no rows"),
        ("TopicTest,0,5\n", "no group column"),
        ("groupA,TopicTest,x,5\n", "line 1: queue 'x' is not a whole number"),
        ("groupA,TopicTest,0,-5\n", "line 1: offset -5 is out of range"),
        ("groupA,TopicTest,0,5\ngroupA,TopicTest,0,6\n", "line 2: .* already planned on line 1"),
        ("group,topic,offset\ngroupA,TopicTest,5\n", "no queue column"),
        ("a,b\n", "expected group,topic,queue,offset"),
    ],
)
def test_plan_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(ResetPlanError, match=message):
        read_plan_file(path)


def test_plan_file_is_validated_against_the_store(store_a: Store, tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("groupA,TopicTest,9,5\n")
    with pytest.raises(ResetPlanError, match="line 1: queue 9 is not a queue of topic TopicTest"):
        plan_from_file(store_a, path)
    path.write_text("ghost,TopicTest,0,5\n")
    with pytest.raises(ResetPlanError, match="ghost"):
        plan_from_file(store_a, path)


# --- writing --------------------------------------------------------------------------------------


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    matcher = difflib.SequenceMatcher(a=before.split("\n"), b=after.split("\n"), autojunk=False)
    out = []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op != "equal":
            assert op == "replace" and a1 - a0 == b1 - b0, (op, before[a0:a1], after[b0:b1])
            out.extend(zip(before.split("\n")[a0:a1], after.split("\n")[b0:b1], strict=True))
    return out


def test_execute_writes_only_the_planned_offsets(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    before_text = offsets_text(root)
    before = offsets_model(root)
    with Store.open(root) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_time=1795261076300))
        result = apply_plan(st, plan, True, now=1795300000000, note=lambda _m: None)
    assert result.executed and result.changed == 4
    after_text = offsets_text(root)
    assert result.text == after_text
    # .bak holds the previous content byte for byte
    assert (root / "config" / "consumerOffset.json.bak").read_text(encoding="utf-8") == before_text
    # layout: tabs, bare int keys, the odd newline before `}`, no trailing newline: only 3 lines differ
    changed = _changed_lines(before_text, after_text)
    assert changed == [
        ('\t\t"counter":0,', '\t\t"counter":1,'),
        ('\t\t"timestamp":1795261075799', '\t\t"timestamp":1795300000000'),
        (
            '\t\t"TopicTest@groupA":{0:231,1:232,2:209,3:245',
            '\t\t"TopicTest@groupA":{' + ",".join(f"{r.queue_id}:{r.new_offset}" for r in plan.rows),
        ),
    ]
    assert not after_text.endswith("\n")
    # parsed back: identical except the changed offsets and the dataVersion
    after = offsets_model(root)
    for r in plan.rows:
        before.set_offset(r.topic, r.group, r.queue_id, r.new_offset)
    assert after.offset_table == before.offset_table
    assert after.data_version.counter == 1 and after.data_version.state_version == 0
    assert after.group_topic_map() == before.group_topic_map()
    # every other config file untouched
    for name in ("topics.json", "subscriptionGroup.json", "delayOffset.json", "messageRequestMode.json"):
        assert (root / "config" / name).read_bytes() == (store_path("store-a") / "config" / name).read_bytes()
    assert not list((root / "config").glob("*.tmp"))


def test_execute_on_a_49a_store_keeps_its_shape(tmp_path: Path) -> None:
    root = copy_store("store-49a", tmp_path / "b")
    before_text = offsets_text(root)
    with Store.open(root) as st:
        plan = plan_reset(st, "groupB", ["OrderTopic"], reset_target(to_offset=5))
        apply_plan(st, plan, True, note=lambda _m: None)
    after_text = offsets_text(root)
    assert "dataVersion" not in after_text and "groupTopicMap" not in after_text
    # a new "OrderTopic@groupB" entry is appended to the table, nothing else moves
    assert (
        after_text.replace('\t\t},\n\t\t"OrderTopic@groupB":{0:5,1:5\n\t\t}\n\t}\n}', "\t\t}\n\t}\n}")
        == before_text
    )
    assert offsets_model(root).get("OrderTopic", "groupB") == {0: 5, 1: 5}


def test_new_group_entry_updates_group_topic_map(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    with Store.open(root) as st:
        plan = plan_reset(st, "groupB", ["OrderTopic"], reset_target(to_earliest=True))
        apply_plan(st, plan, True, note=lambda _m: None)
    model = offsets_model(root)
    assert model.get("OrderTopic", "groupB") == {0: 0, 1: 0}
    topics = model.group_topic_map()["groupB"]
    assert set(topics) == {"TopicTest", "OrderTopic"}
    assert '"groupB":[' + ",".join(f'"{t}"' for t in topics) + "]" in offsets_text(root)


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    before = snapshot(root)
    with Store.open(root) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_earliest=True))
        result = apply_plan(st, plan, False, note=lambda _m: None)
    assert not result.executed
    time.sleep(0.01)
    assert snapshot(root) == before


def test_a_held_lock_refuses_the_write(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = snapshot(root)
        notes: list[str] = []
        with Store.open(root) as st:
            plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_earliest=True))
            apply_plan(st, plan, False, note=notes.append)  # a dry run says it would be refused
            assert any("--execute would be refused" in n for n in notes)
            with pytest.raises(BrokerRunningError, match="holds the store lock"):
                apply_plan(st, plan, True, note=notes.append)
        assert snapshot(root) == before
    finally:
        holder.kill()
        holder.wait()


def test_a_changed_file_makes_the_plan_outdated(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    with Store.open(root) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_earliest=True))
        path = root / "config" / "consumerOffset.json"
        path.write_text(path.read_text().replace("{0:231,", "{0:232,"))
        before = snapshot(root)
        with pytest.raises(PlanOutdatedError, match="changed since the plan was made"):
            apply_plan(st, plan, True, note=lambda _m: None)
    assert snapshot(root) == before


def test_a_broken_file_with_a_good_bak_is_not_overwritten(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    (root / "config" / "consumerOffset.json").write_text("{broken")
    with Store.open(root) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_earliest=True))
        assert any("cannot be decoded" in w for w in plan.warnings)
        before = snapshot(root)
        with pytest.raises(ConfigNotWritableError, match="restore consumerOffset.json"):
            apply_plan(st, plan, True, note=lambda _m: None)
    assert snapshot(root) == before


def test_a_missing_file_is_created_in_the_5x_shape(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        (root / "config" / name).unlink()
    with Store.open(root) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_offset=1))
        assert all(r.current_offset is None for r in plan.rows)
        apply_plan(st, plan, True, note=lambda _m: None)
    model = offsets_model(root)
    assert model.get("TopicTest", "groupA") == {0: 1, 1: 1, 2: 1, 3: 1}
    assert model.data_version is not None and model.with_group_topic_map


# --- crashes ---------------------------------------------------------------------------------------

CRASH_SCRIPT = """
import os, signal, sys
from pathlib import Path
from mqtool.offsets.reset import plan_reset
from mqtool.offsets.apply import apply_plan
from mqtool.offsets.plan import reset_target
from store.storedir import Store

st = Store.open(Path(sys.argv[1]))
plan = plan_reset(st, "groupA", ["TopicTest", "OrderTopic"], reset_target(to_earliest=True))

# from here on, every os.write / os.fsync / os.replace is a kill point, before and after the call
calls = {"n": 0}
kill_at = int(sys.argv[2])

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
apply_plan(st, plan, True, note=lambda m: None)
print("done", calls["n"], flush=True)
"""


def _assert_old_or_new(root: Path, old: ConsumerOffsetTable, new_offsets: dict) -> str:
    """consumerOffset.json is whole and holds either the old or the new offsets; returns which."""
    with Store.open(root) as st:
        loaded = st.config("consumerOffset.json").load()
    assert loaded.source == "file", loaded.reason
    got = loaded.model.offset_table
    if got == old.offset_table:
        return "old"
    assert got == new_offsets
    bak = offsets_model(root, "consumerOffset.json.bak")
    assert bak.offset_table == old.offset_table
    return "new"


@pytest.fixture(scope="module")
def crash_expectation(tmp_path_factory: pytest.TempPathFactory) -> tuple[ConsumerOffsetTable, dict]:
    root = copy_store("store-a", tmp_path_factory.mktemp("crash-reference"))
    old = offsets_model(root)
    with Store.open(root) as st:
        plan = plan_reset(st, "groupA", ["TopicTest", "OrderTopic"], reset_target(to_earliest=True))
        apply_plan(st, plan, True, note=lambda _m: None)
    return old, offsets_model(root).offset_table


def test_kill_at_every_step_inside_the_write(tmp_path: Path, crash_expectation) -> None:
    """SIGKILL before/after each os.write/fsync/replace of the write: always the old or the new file."""
    old, new = crash_expectation
    seen = set()
    kill_at = 1
    while True:
        root = copy_store("store-a", tmp_path / f"k{kill_at}")
        proc = subprocess.run(
            [sys.executable, "-c", CRASH_SCRIPT, str(root), str(kill_at)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=120,
        )
        state = _assert_old_or_new(root, old, new)
        seen.add(state)
        if proc.returncode == 0:
            assert state == "new" and proc.stdout.startswith("done")
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        shutil.rmtree(root)
        kill_at += 1
    assert seen == {"old", "new"} and kill_at > 6


@pytest.mark.parametrize("step", ["locked", "loaded", "saved"])
def test_kill_at_the_planner_steps(tmp_path: Path, crash_expectation, step: str) -> None:
    old, new = crash_expectation
    root = copy_store("store-a", tmp_path / "a")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mqtool.cli",
            "offsets",
            "reset",
            "-s",
            str(root),
            "-g",
            "groupA",
            "-t",
            "TopicTest",
            "-t",
            "OrderTopic",
            "--to-earliest",
            "--execute",
        ],
        capture_output=True,
        text=True,
        env=dict(_env(), **{CRASH_AT_ENV: step}),
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    assert _assert_old_or_new(root, old, new) == ("new" if step == "saved" else "old")
    with Store.open(root) as st:
        assert not st.liveness().locked  # the kernel dropped the dead process's lock


def test_kill_at_random_times(tmp_path: Path, crash_expectation) -> None:
    """The CLI killed after random delays: the file is always the old or the new one, and readable."""
    old, new = crash_expectation
    rng = random.Random(20261121)
    args = ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "-t", "OrderTopic", "--to-earliest"]
    # how long a full run takes here, to spread the kills over it
    root = copy_store("store-a", tmp_path / "timing")
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args, "-s", str(root), "--execute"],
        capture_output=True,
        env=_env(),
        check=True,
        timeout=120,
    )
    duration = time.monotonic() - started
    states = []
    for i in range(12):
        root = copy_store("store-a", tmp_path / f"r{i}")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mqtool.cli", *args, "-s", str(root), "--execute"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        time.sleep(rng.uniform(0.5, 1.05) * duration)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        states.append(_assert_old_or_new(root, old, new))
        shutil.rmtree(root)
    print("random kills landed on:", states)


# --- command line --------------------------------------------------------------------------------


def test_cli_json_plan_and_execute(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    before = snapshot(root)
    dry = mqtool(
        "offsets",
        "reset",
        "-s",
        str(root),
        "-g",
        "groupA",
        "-t",
        "TopicTest",
        "--to-offset",
        "0",
        "-f",
        "json",
    )
    assert dry.returncode == 0, dry.stderr
    rows = json.loads(dry.stdout)
    assert [(r["queueId"], r["newOffset"]) for r in rows] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert "Dry run" in dry.stderr
    assert snapshot(root) == before
    plan = tmp_path / "plan.csv"
    done = mqtool(
        "offsets", "reset", "-s", str(root), "-g", "groupA", "-t", "TopicTest", "-q", "1,3", "--to-latest",
        "--export", str(plan), "--execute",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Wrote" in done.stdout and "consumerOffset.json.bak" in done.stdout
    assert offsets_model(root).get("TopicTest", "groupA") == {0: 231, 1: 465, 2: 209, 3: 490}
    again = mqtool("offsets", "reset", "-s", str(root), "--from-file", str(plan), "--execute")
    assert again.returncode == 0 and "Nothing to write" in again.stdout


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    proc = mqtool(
        "offsets", "reset", "-s", str(store_path("store-a")), "-g", "groupA", "-t", "Nope", "--to-latest"
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "mqtool: error: topic 'Nope' does not exist: not in topics.json and no consumequeue/Nope"
    ]
    proc = mqtool(
        "offsets", "reset", "-s", str(store_path("store-a")), "-g", "groupA", "-t", "TopicTest", "-q", "x"
    )
    assert proc.returncode == 2 and "is not a queue id" in proc.stderr  # a usage error
