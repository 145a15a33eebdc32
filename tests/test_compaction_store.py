"""store.kv.compaction against tests/data/store-compaction: what the real 5.3.3 CompactionStore serves.

The fixture was written and compacted by the real classes (tests/oracle, `compaction-store`); expect.json is
what they read back after a restart, damaged.json what they make of named damages (`compaction_damaged.py`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from formats.compaction import (
    compaction_cq_file_size,
    compaction_log_file_size,
    decode_position_checkpoint,
    is_compaction_topic,
    offset_map_key,
)
from formats.errors import FormatError
from store.storedir import Store

FIXTURE = Path(__file__).parent / "data" / "store-compaction"
EXPECT = json.loads((FIXTURE / "expect.json").read_text())
DAMAGED = json.loads((FIXTURE / "damaged.json").read_text())
QUEUES = sorted(EXPECT["compactionQueues"])


@pytest.fixture(scope="module")
def store():
    with Store.open(FIXTURE) as s:
        yield s


def _log(store, name):
    topic, qid = name.split("/")
    return store.compaction.log(topic, int(qid))


def test_topics_and_queues(store):
    assert store.compaction.topics == ["CompactTopicA", "CompactTopicB"]
    assert [f"{t}/{q}" for t, q in store.compaction.queues()] == QUEUES
    assert store.compaction.load_listing[1] == []


@pytest.mark.parametrize("name", QUEUES)
def test_min_max_and_files(store, name):
    want = EXPECT["compactionQueues"][name]
    log = _log(store, name)
    assert (log.min_offset, log.max_offset) == (want["minOffset"], want["maxOffset"])
    assert [[f.name, f.size] for f in log.log.files] == [
        r[:2] for r in want["logFiles[name,fileSize,wrotePosition]"]
    ]
    assert [[f.name, f.size] for f in log.cq.files] == [
        r[:2] for r in want["cqFiles[name,fileSize,readPosition]"]
    ]
    # the ConsumeQueue's range is not what a consumer of the topic is served (apache/rocketmq #7540)
    cq = store.consume_queue(*name.split("/")[:1], int(name.split("/")[1]))
    assert (cq.min_offset, cq.max_offset) == (want["consumeQueueMinOffset"], want["consumeQueueMaxOffset"])
    assert want["consumeQueueMinOffset"] != want["minOffset"]


@pytest.mark.parametrize("name", QUEUES)
def test_units_on_disk(store, name):
    log = _log(store, name)
    got = [
        [f.name, pos, u.phy_offset, u.size, u.tags_code, u.store_time, u.base_offset, u.batch_size,
         u.compacted_offset, u.reserved]
        for f in log.cq.files for pos, u in log.file_units(f.name)
    ]  # fmt: skip
    assert (
        got
        == EXPECT["compactionQueues"][name][
            "cqUnitsOnDisk[file,pos,phyOffset,size,tagsCode,storeTime,msgBaseOffset,batchSize,compactedOffset,reserved]"
        ]
    )


def _served(s):
    if s.unit is None:
        return []
    m = s.message
    return [{
        "queueOffset": s.unit.queue_offset, "logOffset": s.unit.unit.phy_offset, "size": m.total_size,
        "recordQueueOffset": m.queue_offset, "recordPhysicalOffset": m.physical_offset, "keys": m.keys,
        "bodyLength": len(m.body), "uniqKey": m.uniq_key, "storeTimestamp": m.store_timestamp,
    }]  # fmt: skip


@pytest.mark.parametrize("name", QUEUES)
def test_get_message_at_every_offset(store, name):
    log = _log(store, name)
    for want in EXPECT["compactionQueues"][name]["getMessage"]:
        s = log.get_message(want["offset"])
        got = {"offset": s.offset, "status": s.status, "nextBeginOffset": s.next_begin_offset,
               "minOffset": s.min_offset, "maxOffset": s.max_offset, "messages": _served(s)}  # fmt: skip
        assert got == want


@pytest.mark.parametrize("name", QUEUES)
def test_what_a_consumer_gets(store, name):
    log = _log(store, name)
    consumed, offset = [], 0
    while (s := log.get_message(offset)).status == "FOUND":
        consumed += _served(s)
        offset = s.next_begin_offset
    assert consumed == EXPECT["compactionQueues"][name]["consumed"]


def test_position_checkpoint(store):
    cp = store.compaction.position_checkpoint
    assert cp.queue_offset_map == EXPECT["positionCheckpoint"]["queueOffsetMap"]
    assert cp.offset("CompactTopicA", 0) == EXPECT["positionCheckpoint"]["queueOffsetMap"]["CompactTopicA_0"]
    assert cp.offset("CompactTopicA", 9) == -1


def test_sanity_of_the_fixture(store):
    for name in QUEUES:
        assert EXPECT["compactionQueues"][name]["sanityCheck"] is None
        assert _log(store, name).load_problems() == []


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_copies_as_the_broker_loads_them(tmp_path, case):
    import tests.oracle.compaction_damaged as damaged

    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    damaged.DAMAGES[case][1](root)
    want = DAMAGED[case]
    with Store.open(root) as s:
        cs = s.compaction
        effects = [e for t, q in cs.queues() for e, _ in cs.log(t, q).load_problems()]
        assert ("start fails" not in effects) == want["loaded"]
        if want["loaded"]:
            served = [f"{t}/{q}" for t, q in cs.queues() if cs.served(t, q)]
            assert served == want["served"]
            for name in served:
                log = _log(s, name)
                assert [log.min_offset, log.max_offset] == want["minMax"][name]


def test_cleanup_policy_attribute():
    assert is_compaction_topic({"cleanup.policy": "COMPACTION"})
    assert not is_compaction_topic({"cleanup.policy": "DELETE"})
    assert not is_compaction_topic({})
    assert not is_compaction_topic(None)
    assert not is_compaction_topic({"cleanup.policy": "compaction"})  # CleanupPolicy.valueOf is exact


def test_file_sizes():
    cq = compaction_cq_file_size(EXPECT["config"]["compactionCqMappedFileSize"])
    log = compaction_log_file_size(cq, EXPECT["config"]["compactionMappedFileSize"])
    assert log == EXPECT["compactionQueues"]["CompactTopicA/0"]["logFiles[name,fileSize,wrotePosition]"][0][1]


def test_offset_map_key_is_md5_of_whole_keys():
    assert offset_map_key("user-1 user-2") not in (offset_map_key("user-1"), offset_map_key("user-2"))
    assert offset_map_key("user-1").hex() == "d6d7705392bc7af633328bea8c4c6904"  # md5sum of the UTF-8 bytes


def test_position_checkpoint_errors():
    with pytest.raises(FormatError):
        decode_position_checkpoint('{"queueOffsetMap":{"a_0":"x"}}')
    with pytest.raises(FormatError):
        decode_position_checkpoint("[1]")
    assert decode_position_checkpoint('{"queueOffsetMap":{}}').queue_offset_map == {}
