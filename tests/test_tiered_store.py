"""The tiered store read model (formats.tiered, formats.config.tiered, store.tiered) against the fixture
written by the real 5.3.3 TieredMessageStore with the POSIX provider (tests/data/store-tiered,
expect.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from formats.config.codec import decode_config
from formats.config.tiered import TieredMetadata
from formats.errors import MqtoolError
from formats.tiered import SegmentType, cluster_directory, segment_base_offset, segment_file_name
from store.config.brokerconf import load_broker_config
from store.storedir import Store
from store.tiered.settings import TieredLayoutError, resolve_tiered

FIXTURE = Path(__file__).parent / "data" / "store-tiered"
EXPECT = json.loads((FIXTURE / "expect.json").read_text())
MESSAGE_FIELDS = (
    "queueOffset",
    "physicalOffset",
    "totalSize",
    "offsetMsgId",
    "uniqKey",
    "keys",
    "tags",
    "storeTimestamp",
    "bodyCRC",
    "bodyLength",
)


def _store(root: Path = FIXTURE / "store", tiered: Path | None = FIXTURE / "tiered", conf=None) -> Store:
    st = Store.open(root, conf)
    st.tiered_path = tiered
    return st


def _message(m) -> dict:
    j = m.to_json(include_body=False)
    return {k: j[k] for k in MESSAGE_FIELDS}


def test_names_are_the_brokers() -> None:
    assert cluster_directory("DefaultCluster") == EXPECT["config"]["tieredClusterDirectory"]
    for seg in EXPECT["metadata"]["fileSegments"]:
        assert segment_file_name(seg["baseOffset"]) == seg["fileName"]
        assert segment_base_offset(seg["fileName"]) == seg["baseOffset"]
    assert segment_base_offset("00000000" + "0" * 20) is None  # a hash offset2FileName does not write


def test_metadata_reads_as_the_real_default_metadata_store() -> None:
    meta = decode_config(
        TieredMetadata, (FIXTURE / "store" / "config" / "tieredStoreMetadata.json").read_text()
    )
    want = EXPECT["metadata"]
    topics = [
        {"topic": t.topic, "topicId": t.topic_id, "status": t.status, "reserveTime": t.reserve_time}
        for t in sorted(meta.topics.values(), key=lambda t: t.topic)
    ]
    assert topics == want["topics"]
    queues = [
        {
            "topic": q.topic,
            "brokerName": q.broker_name,
            "queueId": q.queue_id,
            "minOffset": q.min_offset,
            "maxOffset": q.max_offset,
        }
        for topic in sorted(meta.queues)
        for q in sorted(meta.queues[topic].values(), key=lambda q: q.queue_id)
    ]
    assert queues == want["queues"]
    segments = [
        {
            "path": s.path,
            "type": s.type.name,
            "baseOffset": s.base_offset,
            "size": s.size,
            "status": s.status,
            "createTimestamp": s.create_timestamp,
            "beginTimestamp": s.begin_timestamp,
            "endTimestamp": s.end_timestamp,
            "sealTimestamp": s.seal_timestamp,
            "fileName": segment_file_name(s.base_offset),
        }
        for key in sorted(meta.segments, key=lambda k: (k[1], k[0].name))
        for s in meta.segments[key]
    ]
    assert segments == want["fileSegments"]
    # every segment the metadata lists is a file of the tree, of the size the metadata says
    for s in segments:
        rel = f"tiered/{EXPECT['config']['tieredClusterDirectory']}/{s['path']}/{s['type']}/{s['fileName']}"
        assert EXPECT["tieredFiles"][rel] == s["size"]


def test_queue_ranges_are_the_flat_files() -> None:
    tiered = _store().tiered
    assert tiered.settings.broker == "broker-a" and tiered.settings.broker_source == "the tree"
    assert [f"{t}/{q}" for t, q in tiered.queues()] == sorted(EXPECT["queues"])
    for (topic, queue_id), key in zip(tiered.queues(), sorted(EXPECT["queues"]), strict=True):
        want = EXPECT["queues"][key]
        q = tiered.queue(topic, queue_id)
        assert (q.min_offset, q.max_offset) == (want["tieredMinOffset"], want["tieredCommitOffset"])
        assert q.first_message_offset == want["tieredFirstMessageOffset"]
        assert q.commit_log.min_offset == want["tieredCommitLogMinOffset"]
        assert q.commit_log.commit_offset == want["tieredCommitLogCommitOffset"]
        assert len(q.commit_log.segments) > 1 and len(q.consume_queue.segments) > 1  # several segments


def test_every_tiered_offset_reads_what_the_real_store_serves() -> None:
    tiered = _store().tiered
    reads = [r for r in EXPECT["reads"] if r["status"] == "FOUND"]
    served = both = 0
    for r in reads:
        q = tiered.queue(r["topic"], r["queueId"])
        assert q.min_offset <= r["offset"] < q.max_offset  # the fixture uploaded every offset
        got = _message(q.message(r["offset"]))
        assert got["physicalOffset"] == q.unit(r["offset"]).phy_offset  # rewritten on upload
        if r["fromTiered"]:
            assert [got] == r["messages"], r
            served += 1
        else:  # served locally: the same message, with the local physical offset and offsetMsgId
            local = dict(r["messages"][0])
            assert local["physicalOffset"] != got["physicalOffset"]
            for k in ("physicalOffset", "offsetMsgId"):
                local.pop(k), got.pop(k)
            assert got == local, r
            both += 1
    assert served > 100 and both > 20


def test_broker_config_names_the_tree(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerName=broker-a\ntieredStoreFilePath={FIXTURE / 'tiered'}\n"
        "tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.PosixFileSegment\n"
    )
    tiered = _store(tiered=None, conf=load_broker_config(conf)).tiered
    assert tiered.settings.source == "broker-config" and tiered.settings.broker_source == "broker-config"
    assert len(tiered.queues()) == 3
    assert _store(tiered=None).tiered is None  # neither --tiered nor broker.conf: no tiered store


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ("tieredStoreFilePath={tree}\n", "no tieredBackendServiceProvider"),
        (
            "tieredStoreFilePath={tree}\n"
            "tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.MemoryFileSegment\n",
            "mqtool reads only the POSIX provider",
        ),
        (
            "tieredStoreFilePath={tree}\ntieredBackendServiceProvider="
            "org.apache.rocketmq.tieredstore.provider.PosixFileSegment\ntieredMetadataServiceProvider=x.Y\n",
            "tieredMetadataServiceProvider=x.Y",
        ),
        ("brokerClusterName=Other\n", "no directory"),
    ],
)
def test_layouts_it_does_not_read_are_named(tmp_path: Path, lines: str, error: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(lines.format(tree=FIXTURE / "tiered"))
    tree = None if "tieredStoreFilePath" in lines else FIXTURE / "tiered"
    with pytest.raises(TieredLayoutError, match=error):
        resolve_tiered(load_broker_config(conf), tree)


def test_a_segment_type_the_broker_would_misread_is_refused() -> None:
    text = (FIXTURE / "store" / "config" / "tieredStoreMetadata.json").read_text()
    bad = text.replace('"type":1,', '"type":7,', 1)
    assert bad != text
    with pytest.raises(MqtoolError, match="segment type 7 is none of 0, 1, 2"):
        decode_config(TieredMetadata, bad)


def test_without_the_metadata_file_the_queues_are_gone(tmp_path: Path) -> None:
    # apache/rocketmq #7345: the metadata lost, the broker recovers no flat file and sees no tiered data
    root = tmp_path / "store"
    shutil.copytree(FIXTURE / "store", root)
    for name in ("tieredStoreMetadata.json", "tieredStoreMetadata.json.bak"):
        (root / "config" / name).unlink()
    tiered = _store(root).tiered
    assert (
        tiered.loaded.source == "none" and tiered.queues() == [] and tiered.queue("TieredTopicA", 0) is None
    )


def test_a_missing_segment_file_is_named(tmp_path: Path) -> None:
    tree = tmp_path / "tiered"
    shutil.copytree(FIXTURE / "tiered", tree)
    q = _store(tiered=tree).tiered.queue("TieredTopicA", 0)
    victim = q.commit_log.segments[0].path
    victim.unlink()
    q = _store(tiered=tree).tiered.queue("TieredTopicA", 0)
    with pytest.raises(MqtoolError, match="segment file is missing") as exc:
        q.message(0)
    assert str(victim) in str(exc.value)
    assert q.consume_queue.segments[0].meta.type is SegmentType.CONSUME_QUEUE


def test_a_store_named_by_url_is_refused() -> None:
    st = _store()
    st.is_remote = True  # what Store.open_location sets for s3://, gs://, ...
    with pytest.raises(MqtoolError, match="on this machine only"):
        st.tiered  # noqa: B018


def test_every_tiered_unit_is_the_real_flat_files() -> None:
    tiered = _store().tiered
    for key, units in EXPECT["tieredUnits"].items():
        topic, queue_id = key.rsplit("/", 1)
        q = tiered.queue(topic, int(queue_id))
        got = [
            [o, u.phy_offset, u.size, u.tags_code]
            for o in range(q.min_offset, q.max_offset)
            for u in [q.unit(o)]
        ]
        assert got == units


def test_the_tiered_index_finds_what_the_real_plugin_found() -> None:
    from store.tiered.index import index_files, query_messages

    tiered = _store().tiered
    slots = int(EXPECT["config"]["tiered"]["tieredStoreIndexFileMaxHashSlotNum"])
    assert [f.segment.base_offset for f in index_files(tiered, slots)] == [
        s["baseOffset"] for s in EXPECT["metadata"]["fileSegments"] if s["type"] == "INDEX"
    ]
    local_min = EXPECT["retention"]["minPhyOffset"]
    found = 0
    for q in EXPECT["keyQueries"]:
        # TieredMessageStore.queryMessageAsync: the local index's answer, then the tiered index's for
        # [begin, the local earliest time] with what is left of maxNum (begin 0 < that time here)
        from_tiered = [m for m in q["messages"] if m["physicalOffset"] < local_min]
        left = 64 - (len(q["messages"]) - len(from_tiered))
        got = query_messages(tiered, q["topic"], q["key"], left, 0, EXPECT["localEarliestMessageTime"], slots)
        key = lambda m: (m["queueOffset"], m["offsetMsgId"])  # noqa: E731
        assert sorted(map(key, (_message(m) for m in got))) == sorted(map(key, from_tiered)), q["key"]
        found += len(got)
    assert found > 30


def test_an_index_read_with_another_slot_count_is_refused() -> None:
    from store.tiered.index import index_files

    with pytest.raises(MqtoolError, match="tieredStoreIndexFileMaxHashSlotNum=5000000"):
        index_files(_store().tiered)  # the broker's default, not the fixture's 64
