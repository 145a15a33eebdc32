"""`mqtool offsets clone` and `mqtool offsets prune` on store-trace-b (written by the real 5.3.3 broker
code; expect.json's `consumerOffsets` is the table its real ConsumerOffsetManager held) and on store-a,
store-49a, store-rocksdb. The written consumerOffset.json is judged by the real ConsumerOffsetManager
(`tests/oracle/run.sh load`) when the oracle is built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden import LOCK_HOLDER, copy_store, expect, run_mqtool, snapshot, store_path

from formats.config.codec import decode_config
from formats.config.offsets import ConsumerOffsetTable
from mqtool.offsets.apply import PlanOutdatedError, apply_plan
from mqtool.offsets.clone import plan_clone
from mqtool.offsets.plan import ResetPlanError
from mqtool.offsets.prune import PruneRefusedError, apply_prune, plan_prune
from store.liveness import BrokerRunningError
from store.storedir import Store

ORACLE_CACHE = Path(os.environ.get("MQTOOL_ORACLE_CACHE", Path.home() / ".cache" / "mqtool-oracle"))
ORACLE_RUN = Path(__file__).parent / "oracle" / "run.sh"


def oracle_built() -> bool:
    """The 5.3.3 oracle's classpath file exists and every entry it names is on this machine (a cache
    copied from elsewhere names directories that are not)."""
    cp_file = ORACLE_CACHE / "build" / "5.3.3" / "classpath"
    if not cp_file.is_file():
        return False
    entries = cp_file.read_text(encoding="utf-8").strip().split(os.pathsep)
    return all(Path(e[:-2] if e.endswith("/*") else e).exists() for e in entries if e)


oracle = pytest.mark.skipif(not oracle_built(), reason="the oracle is not built (make oracle-build)")


def real_table() -> dict[str, dict[int, int]]:
    """store-trace-b's offset table as the real ConsumerOffsetManager held it (expect.json)."""
    table = expect("store-trace-b")["consumerOffsets"]["broker-b"]
    return {key: {int(q): o for q, o in queues.items()} for key, queues in table.items()}


def offsets_of(root: Path) -> dict[str, dict[int, int]]:
    text = (root / "config" / "consumerOffset.json").read_text(encoding="utf-8")
    model = decode_config(ConsumerOffsetTable, text)
    assert isinstance(model, ConsumerOffsetTable)
    return model.offset_table


def oracle_offsets(root: Path) -> dict[str, dict[int, int]]:
    """What the real 5.3.3 ConsumerOffsetManager loads from `root` (tests/oracle/run.sh load)."""
    geometry = expect("store-trace-b")["config"]
    run = subprocess.run(
        [str(ORACLE_RUN), "load", str(root), str(geometry["maxHashSlotNum"]), str(geometry["maxIndexNum"])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    cfg = got["config"]["consumerOffset"]
    assert got["loaded"] and cfg["loaded"] and cfg["source"] == "file", cfg
    return {key: {int(q): o for q, o in queues.items()} for key, queues in cfg["offsetTable"].items()}


def edit_topics(root: Path, edit) -> None:
    """Change topics.json as `mqadmin updateTopic` / `deleteTopic` would leave it (the file the real
    TopicConfigManager decodes; plain JSON is what its fastjson reads)."""
    path = root / "config" / "topics.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data["topicConfigTable"])
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


# --- clone --------------------------------------------------------------------------------------


def clone_to_new_group(tmp_path: Path) -> Path:
    root = copy_store("store-trace-b", tmp_path / "b")
    with Store.open(root) as st:
        plan = plan_clone(st, "GID_retry", "GID_new", allow_new_group=True)
        assert {(r.group, r.topic, r.queue_id, r.new_offset) for r in plan.rows} == {
            ("GID_new", "TraceTopic", q, o) for q, o in real_table()["TraceTopic@GID_retry"].items()
        }
        assert any("%RETRY%GID_retry" in n for n in plan.notes)  # the source's retry topic stays its own
        assert apply_plan(st, plan, True).executed
    return root


def test_clone_to_a_new_group_copies_the_real_offsets(tmp_path: Path) -> None:
    root = clone_to_new_group(tmp_path)
    want = {**real_table(), "TraceTopic@GID_new": real_table()["TraceTopic@GID_retry"]}
    assert offsets_of(root) == want
    assert (root / "config" / "consumerOffset.json.bak").is_file()


@oracle
def test_clone_result_loads_in_the_real_manager(tmp_path: Path) -> None:
    root = clone_to_new_group(tmp_path)
    assert oracle_offsets(root) == {
        **real_table(),
        "TraceTopic@GID_new": real_table()["TraceTopic@GID_retry"],
    }


def test_clone_overwrites_only_the_named_queues(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    before = real_table()
    assert before["TraceTopic@GID_ok"][0] != before["TraceTopic@GID_retry"][0]  # the fixture's lag
    with Store.open(root) as st:
        plan = plan_clone(st, "GID_retry", "GID_ok", ["TraceTopic:0"])
        [row] = plan.rows
        assert (row.current_offset, row.new_offset) == (
            before["TraceTopic@GID_ok"][0],
            before["TraceTopic@GID_retry"][0],
        )
        apply_plan(st, plan, True)
    got = offsets_of(root)
    assert got["TraceTopic@GID_ok"] == {
        0: before["TraceTopic@GID_retry"][0],
        1: before["TraceTopic@GID_ok"][1],
    }
    assert {k: v for k, v in got.items() if k != "TraceTopic@GID_ok"} == {
        k: v for k, v in before.items() if k != "TraceTopic@GID_ok"
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("GID_retry", "GID_new"), "does not exist"),  # a new group needs --allow-new-group, as reset
        (("GID_nobody", "GID_ok"), "no committed offsets"),
        (("GID_ok", "GID_ok"), "the same group"),
    ],
)
def test_clone_refusals(args: tuple[str, str], message: str) -> None:
    with Store.open(store_path("store-trace-b")) as st, pytest.raises(ResetPlanError, match=message):
        plan_clone(st, *args)


def test_clone_refuses_a_topic_the_source_has_no_offsets_on(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    with Store.open(root) as st, pytest.raises(ResetPlanError, match="no committed offsets on topic"):
        plan_clone(st, "GID_ok", "GID_retry", ["%DLQ%GID_retry"])


def test_clone_and_prune_refuse_while_a_broker_holds_the_lock(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = snapshot(root)
        with Store.open(root) as st:
            with pytest.raises(BrokerRunningError):
                apply_plan(st, plan_clone(st, "GID_retry", "GID_ok"), True)
            with pytest.raises(BrokerRunningError):
                apply_prune(st, plan_prune(st), True)
        assert snapshot(root) == before
    finally:
        holder.kill()
        holder.wait()


def test_clone_cli_json_then_execute(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    args = ["--store", str(root), "-f", "json", "offsets", "clone", "--from-group", "GID_retry", "--to-group"]
    dry = run_mqtool(*args, "GID_ok")
    assert dry.returncode == 0, dry.stderr
    assert [(r["queueId"], r["newOffset"]) for r in json.loads(dry.stdout)] == sorted(
        real_table()["TraceTopic@GID_retry"].items()
    )
    assert offsets_of(root) == real_table()  # a dry run writes nothing
    done = run_mqtool(*args, "GID_ok", "--execute")
    assert done.returncode == 0, done.stderr
    assert offsets_of(root)["TraceTopic@GID_ok"] == real_table()["TraceTopic@GID_retry"]
    bad = run_mqtool(*args, "GID_new")
    assert bad.returncode != 0 and bad.stderr.count("\n") >= 1 and "Traceback" not in bad.stderr


# --- prune --------------------------------------------------------------------------------------

# (topics.json edit, the rows pruned beyond the deleted groups' rows: (key, queue, reason))
SCENARIOS = {
    "as-written": (lambda table: None, set()),
    "topic-deleted": (
        lambda table: table.pop("TraceTopic"),
        {("TraceTopic@GID_retry", 0, "topic-missing"), ("TraceTopic@GID_retry", 1, "topic-missing")},
    ),
    "queues-shrunk": (
        lambda table: table["TraceTopic"].update(readQueueNums=1),
        {("TraceTopic@GID_retry", 1, "queue-out-of-range")},
    ),
    # a live group's retry topic missing from topics.json: the broker recreates it at the next heartbeat
    "retry-topic-deleted": (lambda table: table.pop("%RETRY%GID_retry"), set()),
}


def deleted_group_rows() -> set[tuple[str, int, str]]:
    """The real table's rows of groups its subscriptionGroup.json does not hold (the harness's consumers
    committed through the real manager without a subscription group: GID_ok, GID_notrace)."""
    groups = json.loads((store_path("store-trace-b") / "config" / "subscriptionGroup.json").read_text())
    known = set(groups["subscriptionGroupTable"])
    return {
        (key, q, "group-missing")
        for key, queues in real_table().items()
        for q in queues
        if key.split("@")[1] not in known
    }


def pruned(tmp_path: Path, scenario: str) -> tuple[Path, dict[str, dict[int, int]]]:
    """Prune a copy of store-trace-b under `scenario`; the table that must remain."""
    root = copy_store("store-trace-b", tmp_path / "b")
    edit, extra = SCENARIOS[scenario]
    edit_topics(root, edit)
    want_rows = deleted_group_rows() | extra
    with Store.open(root) as st:
        plan = plan_prune(st)
        assert {(f"{r.topic}@{r.group}", r.queue_id, r.reason) for r in plan.rows} == want_rows
        assert all(r.offset == real_table()[f"{r.topic}@{r.group}"][r.queue_id] for r in plan.rows)
        assert plan.groups_judged and plan.topics_judged
        result = apply_prune(st, plan, True)
        assert result.executed and result.changed == len(want_rows)
    remaining: dict[str, dict[int, int]] = {}
    for key, queues in real_table().items():
        kept = {q: o for q, o in queues.items() if (key, q) not in {(k, q2) for k, q2, _ in want_rows}}
        if kept:
            remaining[key] = kept
    return root, remaining


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_prune_removes_exactly_the_orphan_rows(tmp_path: Path, scenario: str) -> None:
    root, remaining = pruned(tmp_path, scenario)
    assert offsets_of(root) == remaining
    with Store.open(root) as st:
        assert plan_prune(st).rows == []  # a second run finds nothing


@oracle
@pytest.mark.parametrize("scenario", ["as-written", "topic-deleted", "queues-shrunk"])
def test_prune_result_loads_in_the_real_manager(tmp_path: Path, scenario: str) -> None:
    root, remaining = pruned(tmp_path, scenario)
    assert oracle_offsets(root) == remaining


def test_prune_keeps_the_broker_groups_and_topics(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    user_keys = set(offsets_of(root))
    with Store.open(root) as st:  # rows on the broker's own groups and topics, and an LMQ
        config = st.config("consumerOffset.json")
        model = config.load().model
        model.set_offset("rmq_sys_wheel_timer", "CID_RMQ_SYS_TRANS", 0, 5)
        model.set_offset("SCHEDULE_TOPIC_XXXX", "TOOLS_CONSUMER", 0, 1)
        model.set_offset("RMQ_SYS_TRACE_TOPIC", "groupA", 0, 1)
        model.set_offset("%LMQ%lmq1", "groupA", 0, 1)
        config.save(model)
    path = root / "config" / "subscriptionGroup.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["subscriptionGroupTable"] = {}  # every group deleted, even the broker's own
    path.write_text(json.dumps(data), encoding="utf-8")
    edit_topics(root, lambda table: [table.pop(t) for t in list(table)])  # every topic too
    with Store.open(root) as st:
        plan = plan_prune(st)
    assert {f"{r.topic}@{r.group}" for r in plan.rows} == user_keys
    assert {r.reason for r in plan.rows} == {"group-missing"}  # the first reason that holds is named
    assert plan.kept == 4


def test_prune_does_not_judge_groups_without_a_subscription_group_file(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    for name in ("subscriptionGroup.json", "subscriptionGroup.json.bak"):
        (root / "config" / name).unlink()
    with Store.open(root) as st:
        plan = plan_prune(st)
    assert not plan.groups_judged and plan.rows == []
    assert any("groups not judged" in n for n in plan.notes)


def test_prune_outdated_plan_is_refused(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    with Store.open(root) as st:
        plan = plan_prune(st)
        plan.rows[0].offset += 1  # the file no longer holds what the plan saw
        before = snapshot(root)
        with pytest.raises(PlanOutdatedError, match="changed since the plan"):
            apply_prune(st, plan, True)
    assert snapshot(root) == before


def test_prune_on_rocksdb_offsets_is_refused(tmp_path: Path) -> None:
    """store-rocksdb's broker keeps offsets in RocksDB v1: merge() at start puts the JSON's entries and
    deletes none, so a pruned row would come back."""
    root = copy_store("store-rocksdb", tmp_path / "r")
    with Store.open(root) as st:
        plan = plan_prune(st)
        assert plan.rows and plan.backend == "rocksdb"
        before = snapshot(root)
        with pytest.raises(PruneRefusedError, match="would come back"):
            apply_prune(st, plan, True)
    assert snapshot(root) == before


def test_prune_cli_plain_json_and_dry_run(tmp_path: Path) -> None:
    root = copy_store("store-trace-b", tmp_path / "b")
    before = snapshot(root)
    done = run_mqtool("--store", str(root), "-f", "json", "offsets", "prune")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {(f"{r['topic']}@{r['group']}", r["queueId"], r["reason"]) for r in rows} == deleted_group_rows()
    assert snapshot(root) == before
    plain = run_mqtool("--store", str(root), "-f", "plain", "offsets", "prune")
    assert plain.returncode == 0 and "group-missing" in plain.stdout and "Dry run" in plain.stdout


def test_clone_writes_where_reset_writes_and_refuses_where_it_refuses(tmp_path: Path) -> None:
    """store-rocksdb (RocksDB v1 offsets): consumerOffset.json with a dataVersion ahead of the KV store, which
    the broker's merge() imports; store-rocksdb-v2: refused, as reset is (the broker never reads it)."""
    from store.rocksdb.config import RocksDBConfigWriteError

    root = copy_store("store-rocksdb", tmp_path / "v1")
    with Store.open(root) as st:
        table = st.config("consumerOffset.json").load().model
        source = {t: dict(table.get(t, "GID_rdb_a")) for t, g, _, _ in table.entries() if g == "GID_rdb_a"}
        assert source
        plan = plan_clone(st, "GID_rdb_a", "GID_x", allow_new_group=True)
        assert apply_plan(st, plan, True).executed
    with Store.open(root) as st:
        loaded = st.config("consumerOffset.json").load()
        assert loaded.source == "file"  # ahead of the KV store: what the broker's merge() imports
        assert {t: dict(loaded.model.get(t, "GID_x")) for t in source} == source
    root2 = copy_store("store-rocksdb-v2", tmp_path / "v2")
    before = snapshot(root2)
    with Store.open(root2) as st:
        plan = plan_clone(st, "GID_v2_a", "GID_y", allow_new_group=True)
        with pytest.raises(RocksDBConfigWriteError, match="never loads an offline change"):
            apply_plan(st, plan, True)
    assert snapshot(root2) == before


@oracle
def test_clone_on_rocksdb_offsets_is_what_the_real_merge_loads(tmp_path: Path) -> None:
    """The oracle's `rocksdb-read`: RocksDBConsumerOffsetManager.load (its merge() of the newer JSON)."""
    root = copy_store("store-rocksdb", tmp_path / "v1")
    with Store.open(root) as st:
        apply_plan(st, plan_clone(st, "GID_rdb_a", "GID_x", allow_new_group=True), True)
    run = subprocess.run(
        [str(ORACLE_RUN), "rocksdb-read", str(root)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    table = json.loads(run.stdout)["config"]["consumerOffset"]["offsetTable"]
    source = {k.split("@")[0]: v for k, v in table.items() if k.endswith("@GID_rdb_a")}
    assert source and {k.split("@")[0]: v for k, v in table.items() if k.endswith("@GID_x")} == source
