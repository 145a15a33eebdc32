"""A topic whose messages are in the commitlog (and the index) but that no topic config, consume queue or
committed offset names any more - what the broker's deleteTopic leaves
(AdminBrokerProcessor.deleteTopicInBroker at rocketmq-all-5.3.3 broker/.../AdminBrokerProcessor.java:804-811:
TopicConfigManager.deleteTopicConfig,
ConsumerOffsetManager.cleanOffsetByTopic, DefaultMessageStore.deleteTopics; commitlog and index stay until
retention). The store is a copy of store-a (written by the real 5.3.3 store code) with that deletion
imitated on its config files and consume queues. `query key|id --scan` search it instead of dead-ending on
"unknown topic", and the errors without --scan say where to look."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from golden import copy_store, expect
from golden import run_mqtool as mqtool

from formats.config.codec import decode_config, encode_config
from formats.config.metadata import TopicConfigTable
from formats.config.offsets import ConsumerOffsetTable

TOPIC = "OrderTopic"
MESSAGES = [m for m in expect("store-a")["messages"] if m.get("topic") == TOPIC]


def _delete_topic(root: Path, topic: str) -> None:
    """deleteTopicInBroker's effect on the files: the topic config, the offsets of the topic, its queues."""
    config = root / "config"
    topics = decode_config(TopicConfigTable, (config / "topics.json").read_text(encoding="utf-8"))
    del topics.topic_config_table[topic]
    (config / "topics.json").write_text(encode_config(topics), encoding="utf-8")
    offsets = decode_config(ConsumerOffsetTable, (config / "consumerOffset.json").read_text(encoding="utf-8"))
    offsets.offset_table = {k: v for k, v in offsets.offset_table.items() if not k.startswith(f"{topic}@")}
    (config / "consumerOffset.json").write_text(encode_config(offsets), encoding="utf-8")
    for bak in ("topics.json.bak", "consumerOffset.json.bak"):
        (config / bak).unlink(missing_ok=True)
    shutil.rmtree(root / "consumequeue" / topic)


@pytest.fixture(scope="module")
def deleted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_store("store-a", tmp_path_factory.mktemp("deleted") / "s")
    _delete_topic(root, TOPIC)
    return root


def test_without_scan_the_unknown_topic_error_points_at_scan(deleted: Path) -> None:
    proc = mqtool("query", "key", TOPIC, "order-601", "-s", str(deleted))
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert f"unknown topic '{TOPIC}'" in line and "--scan" in line


def test_scan_finds_the_messages_of_a_topic_only_the_commitlog_holds(deleted: Path) -> None:
    key = "shared-key"
    want = sorted(m["physicalOffset"] for m in MESSAGES if key in (m["keys"] or "").split())
    assert len(want) > 1
    proc = mqtool("query", "key", TOPIC, key, "--scan", "-s", str(deleted), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(m["physicalOffset"] for m in json.loads(proc.stdout)) == want
    assert f"topic {TOPIC} is not in this store's topic configs" in proc.stderr
    assert f"{len(MESSAGES)} message(s) of {TOPIC} in the commitlog" in proc.stderr


def test_scan_of_a_topic_the_commitlog_does_not_hold_says_so(deleted: Path) -> None:
    proc = mqtool("query", "key", "NoSuchTopic", "shared-key", "--scan", "-s", str(deleted), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
    assert "no message of NoSuchTopic in the commitlog" in proc.stderr


def test_query_id_with_the_topic_and_scan_finds_it(deleted: Path) -> None:
    m = MESSAGES[0]
    proc = mqtool("query", "id", m["uniqKey"], "--topic", TOPIC, "--scan", "-s", str(deleted), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert [x["physicalOffset"] for x in json.loads(proc.stdout)] == [m["physicalOffset"]]
    plain = mqtool("query", "id", m["uniqKey"], "--topic", TOPIC, "-s", str(deleted))
    assert plain.returncode == 1 and "--scan" in plain.stderr


def test_query_time_and_offset_say_where_the_messages_still_are(deleted: Path) -> None:
    for args in (("time", TOPIC, "--begin", "0", "--end", "now"), ("offset", TOPIC, "0", "0")):
        proc = mqtool("query", *args, "-s", str(deleted))
        assert proc.returncode == 1
        line = proc.stderr.strip().splitlines()[-1]
        assert line.startswith("mqtool: error:") and f"dump commitlog --topic {TOPIC}" in line, line
