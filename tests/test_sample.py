"""`mqtool sample create`: a realistic store written through the appender and dispatcher.

The sample must decode with the foundation readers (every record valid, ConsumeQueues and index
consistent with the commitlog: a rebuild gives the same bytes), be reproducible for a seed, and hold
the traffic it promises (delays delivered, transactions, retries, DLQ, compressed bodies, configs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formats.message.commitlog import Message, encode_message
from formats.message.msgid import decode_uniq_key
from formats.structs import TRANSACTION_COMMIT_TYPE, TRANSACTION_TYPE_MASK
from mqtool.cli import app
from mqtool.rebuild import rebuild
from mqtool.sample.broker import DELAY_MS
from mqtool.sample.create import create_sample
from mqtool.sample.options import SampleError, SampleOptions
from store.config.configfile import ConfigFile
from store.index.indexservice import IndexService
from store.liveness import check_liveness
from store.log.commitlog import CommitLog
from store.queue.consumequeue import ConsumeQueue, ConsumeQueueStore
from store.storedir import Store

SMALL = 3000


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module", params=[5, 4])
def sample(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"sample{request.param}") / "store"
    summary = create_sample(SampleOptions(root, messages=SMALL, version=request.param, seed=11))
    with CommitLog.open(root) as cl:
        records = list(cl.iter_records())
    return request.param, root, summary, records


def messages(records) -> list[Message]:
    return [r for r in records if isinstance(r, Message)]


def test_every_record_decodes(sample):
    version, root, summary, records = sample
    assert records[-1].kind == "end"
    msgs = messages(records)
    assert len(msgs) == summary.records > SMALL
    assert sum(summary.records_by_topic.values()) == summary.records
    with CommitLog.open(root) as cl:
        for m in msgs:
            assert m.problems == ()
            assert encode_message(m) == cl.read_raw(m.physical_offset, m.total_size)
            assert m.properties_raw.endswith(b"\x02") == (version == 5)
    assert [m.store_timestamp for m in msgs] == sorted(m.store_timestamp for m in msgs)
    assert summary.commitlog_files == len(list((root / "commitlog").iterdir())) >= 2
    assert sum(1 for r in records if r.kind == "blank") == summary.commitlog_files - 1


def test_consume_queues_and_index_equal_a_rebuild_from_the_commitlog(sample):
    """The sample's ConsumeQueues and index are what a rebuild from its own commitlog gives (the
    dispatcher both use is proven against the real broker's files on the golden stores:
    test_rebuild.py::test_dry_run_on_the_golden_store_is_a_clean_check)."""
    _, root, _, _ = sample
    with Store.open(root) as st:
        report = rebuild(st, "all", note=lambda _: None)
    assert not report.changes
    assert report.index is not None and report.index.status == "same"
    for name, header in report.index.old_files:
        assert header.index_count > 1, name
    service = IndexService(root)
    for f in service.files:
        f.validate()
    service.close()


def test_reproducible_for_a_seed(tmp_path):
    a = create_sample(SampleOptions(tmp_path / "a", messages=800, seed=3))
    b = create_sample(SampleOptions(tmp_path / "b", messages=800, seed=3))
    c = create_sample(SampleOptions(tmp_path / "c", messages=800, seed=4))
    assert tree(a.directory) == tree(b.directory)
    assert (
        tree(a.directory)["commitlog/00000000000000000000"]
        != tree(c.directory)["commitlog/00000000000000000000"]
    )


def test_traffic(sample):
    version, root, _, records = sample
    msgs = messages(records)
    by_offset = {m.physical_offset: m for m in msgs}
    topics = {m.topic for m in msgs}
    assert {"TopicTest", "OrderTopic", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC",
            "RMQ_SYS_TRANS_OP_HALF_TOPIC", "%RETRY%groupA", "%DLQ%groupA"} <= topics  # fmt: skip
    plain = [m for m in msgs if m.topic == "TopicTest" and "REAL_TOPIC" not in m.properties]
    assert {m.queue_id for m in plain} == {0, 1, 2, 3}
    assert any(not m.keys for m in plain) and any(" " in (m.keys or "") for m in plain)
    assert any(m.tags is None for m in plain) and any(m.tags == "TagA" for m in plain)
    assert all(200 <= len(m.decompressed_body()) <= 1000 for m in plain)
    compressed = [m for m in msgs if m.sys_flag & 1]
    assert compressed and {m.sys_flag & 0x701 for m in compressed} == {0x301 if version == 5 else 0x1}
    assert all(zlib.decompress(m.body) for m in compressed)
    assert ("WAIT" in plain[0].properties) == (version == 5)  # 4.9.x drops WAIT from plain messages
    # ordered topic: the queue follows the order key
    for m in msgs:
        if m.topic == "OrderTopic" and m.keys:
            assert m.queue_id == int(m.keys.split(" ")[0][6:]) % 2
    # UNIQ_KEYs as MessageClientIDSetter makes them
    info = decode_uniq_key(plain[0].uniq_key)
    assert info.ip.startswith("192.168.0.10")
    # delay: parked in the schedule topic (queue = level - 1), delivered copies keep the properties
    parked = [m for m in msgs if m.topic == "SCHEDULE_TOPIC_XXXX"]
    assert all(m.queue_id == int(m.properties["DELAY"]) - 1 for m in parked)
    delivered = [m for m in msgs if m.topic != "SCHEDULE_TOPIC_XXXX" and "DELAY" in m.properties
                 and m.topic != "%DLQ%groupA"]  # fmt: skip
    assert delivered
    waiting: dict[tuple[bytes, bytes], list[Message]] = {}
    for m in parked:
        waiting.setdefault((m.properties_raw, m.body), []).append(m)
    for d in delivered:  # each delivery copies a parked record: the same properties and body
        source = waiting[(d.properties_raw, d.body)].pop(0)
        level = int(source.properties["DELAY"])
        assert d.store_timestamp >= source.store_timestamp + DELAY_MS[level - 1]
        assert (d.topic, d.queue_id) == (source.properties["REAL_TOPIC"], int(source.properties["REAL_QID"]))
    for p in parked[:50]:  # the schedule queue's tags code is the delivery time
        unit = ConsumeQueue(root, "SCHEDULE_TOPIC_XXXX", p.queue_id).unit(p.queue_offset)
        assert unit.tags_code == p.store_timestamp + DELAY_MS[p.queue_id]
    # transactions: halves, commit copies pointing at them, op messages listing half offsets
    halves = {m.physical_offset: m for m in msgs if m.topic == "RMQ_SYS_TRANS_HALF_TOPIC"}
    assert all(
        m.properties["TRAN_MSG"] == "true" and m.sys_flag & TRANSACTION_TYPE_MASK == 0
        for m in halves.values()
    )
    assert all(("__transactionId__" in m.properties) == (version == 5) for m in halves.values())
    commits = [m for m in msgs if m.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE]
    assert commits
    for c in commits:
        half = halves[c.prepared_transaction_offset]
        assert c.uniq_key == half.uniq_key and c.properties_raw == half.properties_raw
        assert c.topic == half.properties["REAL_TOPIC"]
    ops = [m for m in msgs if m.topic == "RMQ_SYS_TRANS_OP_HALF_TOPIC"]
    done = set()
    for op in ops:
        assert op.tags == "d" and op.uniq_key is None
        body = op.body.decode()
        if version == 5:
            assert body.endswith(",")
            done.update(int(x) for x in body.split(",") if x)
        else:
            done.add(int(body))
    half_queue_offsets = {m.queue_offset for m in halves.values()}
    assert done < half_queue_offsets  # some are still pending
    committed = {halves[c.prepared_transaction_offset].queue_offset for c in commits}
    assert committed < done  # the others were rolled back
    # retries and dead letters of groupA
    retries = [m for m in msgs if m.topic == "%RETRY%groupA"]
    assert retries and all(m.reconsume_times >= 1 for m in retries)
    for r in retries:
        assert r.properties["RETRY_TOPIC"] == "TopicTest" and r.properties["WAIT"] == "false"
        origin = r.properties["ORIGIN_MESSAGE_ID"]
        assert int(origin[16:], 16) in by_offset
    dlq = [m for m in msgs if m.topic == "%DLQ%groupA"]
    assert dlq and all(m.properties["DELAY"] == "0" and m.reconsume_times > 16 for m in dlq)


def test_config_files(sample):
    version, root, _, _ = sample
    offsets = ConfigFile(root, "consumerOffset.json").load()
    assert offsets.source == "file"
    table = offsets.model
    assert (table.data_version is not None) == (version == 5)
    queues = ConsumeQueueStore(root)
    for q in range(4):
        top = queues.open("TopicTest", q).max_offset
        assert table.get("TopicTest", "groupA")[q] == top // 2
        assert table.get("TopicTest", "groupB")[q] == top
    delay = ConfigFile(root, "delayOffset.json").load().model
    assert delay.offset_table
    for level, offset in delay.offset_table.items():
        assert 0 <= offset <= queues.open("SCHEDULE_TOPIC_XXXX", level - 1).max_offset
    topics = ConfigFile(root, "topics.json").load().model
    assert topics.topic_config_table["OrderTopic"].order
    assert topics.topic_config_table["TopicTest"].read_queue_nums == 4
    assert topics.is_v5 == (version == 5)
    groups = ConfigFile(root, "subscriptionGroup.json").load().model
    assert {"groupA", "groupB", "CID_RMQ_SYS_TRANS"} <= set(groups.subscription_group_table)
    assert (root / "config" / "messageRequestMode.json").exists() == (version == 5)
    assert (root / "lock").read_bytes() == b"lock"
    live = check_liveness(root)
    assert not live.locked and not live.abort_present
    assert (root / "abort.bak").exists() == (version == 5)
    assert (root / "checkpoint").stat().st_size == 4096


def test_refuses_an_existing_store(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    with pytest.raises(SampleError, match="not an empty directory"):
        create_sample(SampleOptions(tmp_path / "busy", messages=10))
    (tmp_path / "empty").mkdir()
    assert create_sample(SampleOptions(tmp_path / "empty", messages=10)).records >= 10
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mqtool")]


def test_cli(tmp_path):
    runner = CliRunner()
    target = tmp_path / "s"
    result = runner.invoke(app, ["sample", "create", str(target), "-n", "400", "--broker-version", "4",
                                 "--file-size", "262144", "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["brokerVersion"] == 4 and doc["producedMessages"] == 400
    assert doc["brokerConf"]["mappedFileSizeCommitLog"] == 262144
    assert (target / "commitlog" / "00000000000000000000").stat().st_size == 262144
    again = runner.invoke(app, ["sample", "create", str(target), "-n", "10"])
    assert again.exit_code != 0


def test_negative_producers_is_a_one_line_error(tmp_path: Path) -> None:
    argv = ["sample", "create", str(tmp_path / "s"), "-n", "10", "--producers", "-1"]
    proc = subprocess.run([sys.executable, "-m", "mqtool.cli", *argv], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr == "mqtool: error: --producers must be 0 or more, not -1\n"
    assert not (tmp_path / "s").exists()
