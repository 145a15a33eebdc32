"""store-rocksdb-v2 (configManagerVersion=v2, written by RocketMQ 5.3.3's TopicConfigManagerV2,
SubscriptionGroupManagerV2 and ConsumerOffsetManagerV2 into config/rdb; tests/data/store-rocksdb-v2/README.md)
against what those managers read back (expect.json): topics and groups field by field, offsets (LMQ ones as
queryOffset answers them), and that the stale topics.json / subscriptionGroup.json / lmqConsumerOffset.json
beside them are not what mqtool reports. Also a v1 RocksDB broker with enableLmq (store-rocksdb): its LMQ
offsets are in config/consumerOffsets, never in lmqConsumerOffset.json."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest
from golden import GOLDEN, copy_store, run_mqtool, snapshot

from store.config.configfile import ConfigFile
from store.queue.lmq import is_lmq
from store.rocksdb.config import RocksDBConfigWriteError
from store.storedir import Store

ROOT = GOLDEN / "store-rocksdb-v2"


@cache
def expect() -> dict:
    return json.loads((ROOT / "expect.json").read_text(encoding="utf-8"))


def _from_rdb(table: dict, builtins: list[str]) -> dict:
    """The managers' table without what init() creates in memory (the fixture stored none of those)."""
    return {name: one for name, one in table.items() if name not in builtins}


def test_topics_as_topic_config_manager_v2_loads_them() -> None:
    want = expect()["topics"]
    assert want["loaded"]
    with Store.open(ROOT) as store:
        loaded = store.config("topics.json").load()
    assert loaded.source == "rocksdb" and "config/rdb" in loaded.reason
    got = {
        name: {
            "topicName": t.topic_name,
            "readQueueNums": t.read_queue_nums,
            "writeQueueNums": t.write_queue_nums,
            "perm": t.perm,
            "topicFilterType": t.topic_filter_type,
            "topicSysFlag": t.topic_sys_flag,
            "order": t.order,
            "attributes": t.attributes,
        }
        for name, t in loaded.model.topic_config_table.items()
    }
    assert got == _from_rdb(want["topicConfigTable"], expect()["builtinTopics"])
    assert "V2Gone" not in got  # deleted by the manager: a tombstone in config/rdb
    version = loaded.model.data_version
    assert (version.counter, version.timestamp, version.state_version) == (
        want["dataVersion"]["counter"],
        want["dataVersion"]["timestamp"],
        want["dataVersion"]["stateVersion"],
    )


def test_groups_as_subscription_group_manager_v2_loads_them() -> None:
    want = expect()["subscriptionGroups"]
    with Store.open(ROOT) as store:
        loaded = store.config("subscriptionGroup.json").load()
    assert loaded.source == "rocksdb"
    got = {
        name: {
            "groupName": g.group_name,
            "consumeEnable": g.consume_enable,
            "consumeFromMinEnable": g.consume_from_min_enable,
            "consumeBroadcastEnable": g.consume_broadcast_enable,
            "consumeMessageOrderly": g.consume_message_orderly,
            "retryQueueNums": g.retry_queue_nums,
            "retryMaxTimes": g.retry_max_times,
            "brokerId": g.broker_id,
            "whichBrokerWhenConsumeSlowly": g.which_broker_when_consume_slowly,
            "notifyConsumerIdsChangedEnable": g.notify_consumer_ids_changed_enable,
            "groupSysFlag": g.group_sys_flag,
            "consumeTimeoutMinute": g.consume_timeout_minute,
            "attributes": g.attributes,
        }
        for name, g in loaded.model.subscription_group_table.items()
    }
    assert got == _from_rdb(want["subscriptionGroupTable"], expect()["builtinGroups"])
    assert loaded.model.data_version.counter == want["dataVersion"]["counter"]


def test_offsets_as_consumer_offset_manager_v2_answers_them() -> None:
    want = expect()["consumerOffsets"]
    with Store.open(ROOT) as store:
        assert store.layout.consumer_offset_file == "consumerOffset.json"  # not lmqConsumerOffset.json
        loaded = store.config("consumerOffset.json").load()
    table = {k: {str(q): o for q, o in v.items()} for k, v in loaded.model.offset_table.items()}
    assert {k: v for k, v in table.items() if not is_lmq(k)} == want["offsetTable"]
    lmq = {k: v for k, v in table.items() if is_lmq(k)}
    assert lmq == {k: {"0": o} for k, o in want["lmqQueryOffset"].items() if not k.endswith("(pull)")}
    assert loaded.model.data_version.counter == want["dataVersion"]["counter"]
    assert "GID_v2_dropped" not in str(table)  # removeOffset's range delete


def test_stale_json_beside_config_rdb_is_not_what_mqtool_reports() -> None:
    stale_topics = ConfigFile(ROOT, "topics.json").load().model.topic_config_table
    assert "V2Stale" in stale_topics and stale_topics["V2Topic"].read_queue_nums == 8
    assert "V2Batch" not in stale_topics
    with Store.open(ROOT) as store:
        assert store.batch_cq_topics == {"V2Batch"}  # queue.type=BatchCQ in config/rdb only
    done = run_mqtool("info", "-s", str(ROOT), "-f", "json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    text = json.dumps(info)
    assert "V2Batch" in text and "V2Stale" not in text
    rows = {row["file"]: row for row in info["configFiles"]}
    assert rows["topics.json"]["loadedFrom"] == "rocksdb"
    assert rows["subscriptionGroup.json"]["loadedFrom"] == "rocksdb"
    assert rows["consumerOffset.json"]["loadedFrom"] == "rocksdb"  # no JSON file: the row is config/rdb
    assert rows["lmqConsumerOffset.json"]["loadedFrom"] is None
    assert "config/rdb" in rows["lmqConsumerOffset.json"]["note"]


def test_offsets_show_lmq_groups_from_config_rdb() -> None:
    done = run_mqtool("offsets", "show", "-s", str(ROOT), "-f", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    seen = {(r["group"], r["topic"], r["queueId"]): r["consumerOffset"] for r in rows}
    for key, offset in expect()["consumerOffsets"]["lmqQueryOffset"].items():
        if not key.endswith("(pull)"):
            topic, group = key.split("@")
            assert seen[(group, topic, 0)] == offset
    stale = ConfigFile(ROOT, "lmqConsumerOffset.json").load().model.lmq_offset_table
    assert stale
    for key, offset in stale.items():  # the stale file's LMQ offset is not what is shown
        topic, group = key.split("@")
        assert seen.get((group, topic, 0)) != offset
    assert "GID_v2_stale" not in done.stdout


def test_writes_to_v2_tables_refused_in_one_line(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb-v2", tmp_path / "s")
    before = snapshot(root)
    with Store.open(root) as store:
        for name, online in (("topics.json", "updateTopic"), ("subscriptionGroup.json", "updateSubGroup")):
            config = store.config(name)
            with pytest.raises(RocksDBConfigWriteError, match=online) as info:
                config.save(config.load().model)
            assert "\n" not in str(info.value) and "v2" in str(info.value)
    done = run_mqtool(
        "offsets", "reset", "-g", "GID_v2_a", "-t", "V2Topic", "--to-earliest", "--execute", "-s", str(root)
    )
    assert (
        done.returncode != 0 and "mqadmin resetOffsetByTime" in done.stderr and "Traceback" not in done.stderr
    )
    for args in (("info",), ("offsets", "show"), ("consume-mode", "show"), ("verify",)):
        done = run_mqtool(*args, "-s", str(root), "-f", "json")
        assert done.returncode in (0, 1), (args, done.stderr)
    assert snapshot(root) == before


def test_v1_rocksdb_broker_with_lmq_reads_lmq_offsets_from_rocksdb(tmp_path: Path) -> None:
    """BrokerController: storeType=defaultRocksDB runs RocksDBConsumerOffsetManager whatever enableLmq says;
    LMQ offsets are ordinary entries of config/consumerOffsets and lmqConsumerOffset.json is never read."""
    root = copy_store("store-rocksdb", tmp_path / "s")
    # an lmqConsumerOffset.json left by the real LmqConsumerOffsetManager (store-lmq): the files show LMQ
    shutil.copy(GOLDEN / "store-lmq" / "config" / "lmqConsumerOffset.json", root / "config")
    want = json.loads((GOLDEN / "store-rocksdb" / "expect.json").read_text())["config"]["consumerOffset"]
    with Store.open(root) as store:
        assert store.layout.lmq.enable_lmq
        assert store.layout.consumer_offset_file == "consumerOffset.json"
    done = run_mqtool("offsets", "show", "-s", str(root), "-f", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    groups = {r["group"] for r in rows}
    assert {key.split("@")[1] for key in want["offsetTable"]} <= groups
    assert not any(is_lmq(g) for g in groups)  # nothing from lmqConsumerOffset.json
    done = run_mqtool("info", "-s", str(root), "-f", "json")
    row = {r["file"]: r for r in json.loads(done.stdout)["configFiles"]}["lmqConsumerOffset.json"]
    assert row["loadedFrom"] is None and "config/consumerOffsets" in row["note"]


def test_truncated_config_rdb_is_one_line_naming_it(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb-v2", tmp_path / "s")
    sst = max((root / "config" / "rdb").glob("*.sst"), key=lambda p: p.stat().st_size)
    sst.write_bytes(sst.read_bytes()[: sst.stat().st_size // 2])
    done = run_mqtool("offsets", "show", "-s", str(root))
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("mqtool: warning")]
    assert done.returncode != 0 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("mqtool: error: ") and str(root / "config" / "rdb") in lines[0]


def test_dump_config_shows_the_config_rdb_table_without_a_json_file() -> None:
    assert not (ROOT / "config" / "consumerOffset.json").exists()
    done = run_mqtool("dump", "config", "consumeroffset", "-s", str(ROOT), "-f", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["source"] == "rocksdb" and out["file"].endswith("config/rdb")
    want = expect()["consumerOffsets"]["offsetTable"]
    assert {k: v for k, v in out["content"]["offsetTable"].items() if not is_lmq(k)} == want
