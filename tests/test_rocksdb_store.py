"""store-rocksdb (storeType=defaultRocksDB, written by RocketMQ 5.3.3's RocksDBMessageStore and v1 RocksDB
config managers, see tests/data/store-rocksdb/README.md) against what the real classes read back
(expect.json): every consume queue unit, min/max offsets with the min correction after a deleted commitlog
file, the search by time, the offsets, topics and groups the broker loads; that reading never writes into
the store (also on a read-only mount); and that `offsets reset --execute` writes what the broker re-imports
(the oracle's `rocksdb-read` after the same commands: tests/data/rocksdb-reset-oracle.json)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from golden import GOLDEN, child_env, copy_store, run_mqtool, snapshot

from store.config.brokerconf import load_broker_config
from store.config.configfile import ConfigFile
from store.rocksdb.consumequeue import RocksDBConsumeQueueStore
from store.rocksdb.db import ReadOnlyRocksDB, RocksDBReadError
from store.storedir import Store

ROOT = GOLDEN / "store-rocksdb"


@cache
def expect() -> dict:
    return json.loads((ROOT / "expect.json").read_text(encoding="utf-8"))


def test_every_unit_and_min_max_offset_as_the_broker_reads_them() -> None:
    cq = expect()["consumeQueue"]
    with Store.open(ROOT) as store:
        queues = store.consume_queues
        assert isinstance(queues, RocksDBConsumeQueueStore)
        assert store.commitlog.min_offset == cq["commitLogMinOffset"]
        assert queues.max_phy_offset == cq["maxPhyOffsetInConsumeQueue"]
        assert {f"{t}/{q}" for t, q in queues.queues()} == set(cq["queues"])
        for name, want in cq["queues"].items():
            topic, queue_id = name.rsplit("/", 1)
            queue = store.consume_queue(topic, int(queue_id))
            assert (queue.min_offset, queue.max_offset) == (want["minOffset"], want["maxOffset"]), name
            assert queue.max_phy_offset == want["maxPhyOffset"]
            units = queue.units()
            got = [
                [q, phy, size, tags, t]
                for (q, phy, size, tags), t in zip(units.tolist(), queue.store_times().tolist(), strict=True)
            ]
            assert got == want["units"], name
            first = want["units"][0]
            unit = queue.unit(first[0])
            assert (unit.phy_offset, unit.size, unit.tags_code) == tuple(first[1:4])
            assert queue.unit(want["minOffset"] - 1) is None and queue.unit(want["maxOffset"]) is None


def test_min_offsets_were_corrected_past_the_deleted_commitlog_file() -> None:
    # the fixture's point: RdbTopic's "min" entries and every queue's first units are below the commitlog
    cq = expect()["consumeQueue"]
    with Store.open(ROOT) as store:
        for name, want in cq["queues"].items():
            topic, queue_id = name.rsplit("/", 1)
            below = store.consume_queue(topic, int(queue_id)).units(0, want["minOffset"])
            assert len(below) == want["minOffset"] > 0
            assert (below["phyOffset"] < cq["commitLogMinOffset"]).all()
        entries = {(e.topic, e.queue_id, e.kind): e for e in store.consume_queues.offset_entries}
        stale = [e for e in entries.values() if e.kind == "min"]
        assert {e.topic for e in stale} == {"RdbTopic"}
        assert all(e.phy_offset < cq["commitLogMinOffset"] for e in stale)


def test_search_by_time_as_binary_search_in_cq_by_time() -> None:
    with Store.open(ROOT) as store:
        for s in expect()["timeSearch"]:
            queue = store.consume_queue(s["topic"], s["queueId"])
            got = queue.offset_in_queue_by_time(s["timestamp"], None, s["boundary"])
            assert got == s["offset"], s


def test_offsets_topics_and_groups_as_the_rocksdb_managers_load_them() -> None:
    conf = expect()["config"]
    with Store.open(ROOT) as store:
        loaded = store.config("consumerOffset.json").load()
        assert loaded.source == "rocksdb"
        assert "stale" in loaded.reason and "counter 2" in loaded.reason and "RocksDB's 3" in loaded.reason
        table = {k: {str(q): o for q, o in v.items()} for k, v in loaded.model.offset_table.items()}
        assert table == conf["consumerOffset"]["offsetTable"]
        assert loaded.model.data_version.counter == conf["consumerOffset"]["kvDataVersionCounter"]
        stale = ConfigFile(ROOT, "consumerOffset.json").load().model
        assert {k: {str(q): o for q, o in v.items()} for k, v in stale.offset_table.items()} == conf[
            "consumerOffset"
        ]["jsonOffsetTable"]
        topics = store.config("topics.json").load().model.topic_config_table
        assert {
            name: {"readQueueNums": t.read_queue_nums, "writeQueueNums": t.write_queue_nums, "perm": t.perm}
            for name, t in topics.items()
        } == conf["topics"]["topicConfigTable"]
        groups = store.config("subscriptionGroup.json").load().model.subscription_group_table
        assert {
            name: {"retryMaxTimes": g.retry_max_times, "consumeEnable": g.consume_enable}
            for name, g in groups.items()
        } == conf["subscriptionGroups"]["subscriptionGroupTable"]


def test_offsets_show_reads_rocksdb_and_says_the_json_is_stale() -> None:
    done = run_mqtool("offsets", "show", "-s", str(ROOT), "-f", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    want = expect()["config"]["consumerOffset"]["offsetTable"]
    seen = {
        (r["group"], r["topic"], r["queueId"]): r["consumerOffset"]
        for r in rows
        if r.get("consumerOffset") is not None
    }
    for key, offsets in want.items():
        topic, group = key.split("@")
        for q, offset in offsets.items():
            assert seen[(group, topic, int(q))] == offset
    assert "consumerOffset.json is stale" in done.stderr


def test_read_commands_leave_every_byte_and_name_unchanged(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb", tmp_path / "s")
    before = snapshot(root)
    listing = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    for args in (
        ("info",),
        ("dump", "cq", "RdbTopic", "1"),
        ("query", "offset", "RdbTopic", "1", "50"),
        ("query", "time", "RdbOther", "--begin", "0", "--end", "now"),
        ("offsets", "show"),
        ("verify",),
        ("rebuild", "cq"),
    ):
        done = run_mqtool(*args, "-s", str(root), "-f", "json")
        assert done.returncode in (0, 1), (args, done.stderr)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == listing
    assert snapshot(root) == before


# in a private mount namespace: SRC bound read-only at MNT (refused if a write there still works), then CMD
READ_ONLY_SCRIPT = """
set -e
src="$1"; mnt="$2"; shift 2
mkdir -p "$mnt"
mount --bind "$src" "$mnt"
mount -o remount,bind,ro "$mnt"
if touch "$mnt/.probe" 2>/dev/null; then echo "the mount is writable" >&2; exit 3; fi
exec "$@"
"""


def read_only(src: Path, mnt: Path, *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", READ_ONLY_SCRIPT, "sh", str(src), str(mnt), *cmd],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
    )


def test_reading_on_a_read_only_mount(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare for a private read-only bind mount")
    root = copy_store("store-rocksdb", tmp_path / "s")
    mnt = tmp_path / "ro"
    probe = read_only(root, mnt, "true")
    if probe.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {probe.stderr.strip()}")
    done = read_only(root, mnt, sys.executable, "-m", "mqtool.cli", "info", "-s", str(mnt), "-f", "json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    queues = {f"{q['topic']}/{q['queueId']}": (q["minOffset"], q["maxOffset"]) for q in info["queues"]}
    want = expect()["consumeQueue"]["queues"]
    assert queues == {k: (v["minOffset"], v["maxOffset"]) for k, v in want.items()}
    done = read_only(
        root, mnt, sys.executable, "-m", "mqtool.cli", "offsets", "show", "-s", str(mnt), "-f", "json"
    )
    assert done.returncode == 0, done.stderr
    assert "consumerOffset.json is stale" in done.stderr


def test_rocksdict_would_write_into_the_directory_so_it_is_opened_through_links(tmp_path: Path) -> None:
    from rocksdict import AccessType, Options, Rdict

    direct = copy_store("store-rocksdb", tmp_path / "d", parts=("consumequeue",)) / "consumequeue"
    names = set(os.listdir(direct))
    db = Rdict(
        str(direct),
        options=Options(raw_mode=True),
        access_type=AccessType.read_only(False),
        column_families={"offset": Options(raw_mode=True)},
    )
    db.close()
    assert set(os.listdir(direct)) - names  # the binding's own sidecar, even read-only
    ours = copy_store("store-rocksdb", tmp_path / "o", parts=("consumequeue",)) / "consumequeue"
    before = snapshot(ours)
    with ReadOnlyRocksDB(ours, ("default", "offset")) as kv:
        assert sum(1 for _ in kv.items("default")) == sum(
            len(q["units"]) + q["minOffset"] for q in expect()["consumeQueue"]["queues"].values()
        )
    assert snapshot(ours) == before and set(os.listdir(ours)) == set(before)


def test_offsets_reset_execute_writes_what_the_broker_imports(tmp_path: Path) -> None:
    oracle = json.loads((GOLDEN / "rocksdb-reset-oracle.json").read_text(encoding="utf-8"))
    root = copy_store("store-rocksdb", tmp_path / "s")
    for args in oracle["commands"]:
        done = run_mqtool(*args, "--execute", "-s", str(root))
        assert done.returncode == 0, done.stderr
    want = oracle["consumerOffset"]
    with Store.open(root) as store:
        loaded = store.config("consumerOffset.json").load()
        assert loaded.source == "file" and "imports it" in loaded.reason
        assert loaded.model.data_version.counter == want["jsonDataVersionCounter"]
        got = {k: {str(q): o for q, o in v.items()} for k, v in loaded.model.offset_table.items()}
        assert got == want["offsetTable"]  # what RocksDBConsumerOffsetManager.load() gave the broker
    assert want["kvDataVersionCounter"] > want["jsonDataVersionCounter"] > 3


def test_config_manager_v2_offsets_read_and_offline_reset_refused(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb", tmp_path / "s")
    conf = tmp_path / "broker.conf"
    conf.write_text("storeType=defaultRocksDB\nconfigManagerVersion=v2\n")
    want = expect()["config"]["consumerOffsetV2"]
    with Store.open(root, load_broker_config(conf)) as store:
        loaded = store.config("consumerOffset.json").load()
        assert loaded.source == "rocksdb" and "config/rdb" in loaded.reason
        got = {k: {str(q): o for q, o in v.items()} for k, v in loaded.model.offset_table.items()}
        assert got == want["offsetTable"]
        assert loaded.model.data_version.counter == want["dataVersionCounter"]
    before = snapshot(root)
    args = ("offsets", "reset", "-g", "GID_rdb_a", "-t", "RdbTopic", "--to-earliest", "--execute")
    line = _one_line_error(root, *args, "--broker-config", str(conf))
    assert "mqadmin resetOffsetByTime" in line and "5.3" in line
    assert snapshot(root) == before


def _one_line_error(root: Path, *args: str) -> str:
    done = run_mqtool(*args, "-s", str(root))
    assert done.returncode != 0, done.stdout
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("mqtool: warning")]
    assert len(lines) == 1 and lines[0].startswith("mqtool: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def test_missing_current_is_one_line_naming_the_directory(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb", tmp_path / "s")
    (root / "consumequeue" / "CURRENT").unlink()
    line = _one_line_error(root, "dump", "cq", "RdbTopic", "0")
    assert str(root / "consumequeue") in line


def test_truncated_sst_is_one_line_naming_the_directory(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb", tmp_path / "s")
    sst = max((root / "consumequeue").glob("*.sst"), key=lambda p: p.stat().st_size)
    sst.write_bytes(sst.read_bytes()[: sst.stat().st_size // 2])
    line = _one_line_error(root, "dump", "cq", "RdbTopic", "0")
    assert str(root / "consumequeue") in line


def test_unknown_column_family_is_one_line(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb", tmp_path / "s")
    # a database whose families are not the consume queue's: the topics config database in its place
    shutil.rmtree(root / "consumequeue")
    shutil.copytree(root / "config" / "topics", root / "consumequeue")
    line = _one_line_error(root, "dump", "cq", "RdbTopic", "0")
    assert "unknown column famil" in line and str(root / "consumequeue") in line


def test_garbage_value_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(Exception) as info:
        from formats.rocksdb import parse_cq_value

        parse_cq_value(b"\x00" * 27, "consumequeue")
    assert "consumequeue" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(RocksDBReadError, match="CURRENT is missing"):
        ReadOnlyRocksDB(tmp_path, ("default",))


def shift_unit(root: Path, topic: str, queue_id: int, offset: int) -> int:
    """Rewrite the RocksDB unit of a copy of store-rocksdb at `offset` to point one byte past its record;
    returns the record's physical offset."""
    from rocksdict import Options, Rdict

    from formats.rocksdb import cq_key, parse_cq_value

    db = Rdict(
        str(root / "consumequeue"),
        options=Options(raw_mode=True),
        column_families={"offset": Options(raw_mode=True)},
    )
    key = cq_key(topic, queue_id, offset)
    phy, size, tags, stored = parse_cq_value(db[key])
    db[key] = (
        (phy + 1).to_bytes(8, "big")
        + size.to_bytes(4, "big")
        + tags.to_bytes(8, "big")
        + stored.to_bytes(8, "big")
    )
    db.close()
    return phy


def test_rebuild_dry_run_compares_the_rocksdb_units_with_a_rebuild(tmp_path: Path) -> None:
    from mqtool.rebuild import rebuild

    with Store.open(ROOT) as store:
        report = rebuild(store, "cq")
    assert {(d.topic, d.queue_id): d.status for d in report.queues} == {
        tuple([k.rsplit("/", 1)[0], int(k.rsplit("/", 1)[1])]): "same"
        for k in expect()["consumeQueue"]["queues"]
    }
    # a copy whose RdbTopic/2 unit at its min offset + 3 points elsewhere: found there
    root = copy_store("store-rocksdb", tmp_path / "s")
    offset = expect()["consumeQueue"]["queues"]["RdbTopic/2"]["minOffset"] + 3
    shift_unit(root, "RdbTopic", 2, offset)
    with Store.open(root) as store:
        report = rebuild(store, "cq")
        diffs = {(d.topic, d.queue_id): d for d in report.queues}
    assert diffs[("RdbTopic", 2)].status == "differs" and diffs[("RdbTopic", 2)].first_difference == offset
    assert sum(d.status == "differs" for d in diffs.values()) == 1
    line = _one_line_error(root, "rebuild", "cq", "--execute")
    assert "RocksDB" in line


def test_pop_state_records_as_scan_expired_records_reads_them() -> None:
    from store.pop.kv import has_pop_state, pop_state_records

    want = expect()["popState"]
    assert has_pop_state(ROOT) and len(want) == 9  # 12 popped, 3 acked (deleted)
    got = [
        {
            "popTime": r.pop_time,
            "groupId": r.group,
            "topicId": r.topic,
            "queueId": r.queue_id,
            "retryFlag": r.retry_flag,
            "invisibleTime": r.invisible_time,
            "offset": r.offset,
            "attemptTimes": r.attempt_times,
            "attemptId": r.attempt_id,
            "visibilityTimeout": r.visibility_timeout,
        }
        for r in pop_state_records(ROOT)
    ]
    assert got == want
    # the revive's window: [lower, upper) of visibility times, at most max_count
    lower, upper = want[2]["visibilityTimeout"], want[6]["visibilityTimeout"]
    window = [r.offset for r in pop_state_records(ROOT, lower, upper, 3)]
    assert window == [w["offset"] for w in want if lower <= w["visibilityTimeout"] < upper][:3]


def test_garbage_unit_value_is_one_line(tmp_path: Path) -> None:
    from rocksdict import Options, Rdict

    from formats.rocksdb import cq_key

    root = copy_store("store-rocksdb", tmp_path / "s")
    families = {"offset": Options(raw_mode=True)}
    db = Rdict(str(root / "consumequeue"), options=Options(raw_mode=True), column_families=families)
    db[cq_key("RdbTopic", 0, expect()["consumeQueue"]["queues"]["RdbTopic/0"]["minOffset"])] = b"garbage"
    db.close()
    line = _one_line_error(root, "dump", "cq", "RdbTopic", "0")
    assert "consume queue unit" in line and str(root / "consumequeue") in line


def test_no_message_is_appended_into_a_rocksdb_mode_store(tmp_path: Path) -> None:
    from store.queue.consumequeue import RocksDBConsumeQueueError

    root = copy_store("store-rocksdb", tmp_path / "s")
    before = snapshot(root)
    with Store.open(root) as store, pytest.raises(RocksDBConsumeQueueError, match="writes no message"):
        store.appender()
    assert snapshot(root) == before
