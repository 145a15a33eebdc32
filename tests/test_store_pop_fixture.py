"""What mqtool's readers find in store-pop (POP traffic written by RocketMQ 5.3.3's own PopMessageProcessor,
AckMessageProcessor, PopBufferMergeService and PopReviveService, see tests/data/store-pop/README.md) against
what the real classes read back (its expect.json): commitlog records, ConsumeQueue units, every ck / ack /
bAck body (formats.pop against fastjson), the config files, and the acks PopReviveService paired."""

from __future__ import annotations

import hashlib
import json
from functools import cache

from golden import GOLDEN
from test_commitlog_store import check_message

from formats.message.commitlog import Blank, EndOfData, Message
from formats.names import TIMER_TOPIC
from formats.pop.bodies import AckMsg, PopCheckPoint
from store.storedir import Store
from store.version import detect_broker_version

ROOT = GOLDEN / "store-pop"
UNITS_KEY = "units[queueOffset,phyOffset,size,tagsCode]"


@cache
def expect() -> dict:
    with open(ROOT / "expect.json", encoding="utf-8") as fh:
        return json.load(fh)


@cache
def messages() -> dict[int, Message]:
    with Store.open(ROOT) as store:
        return {r.physical_offset: r for r in store.commitlog.iter_records() if isinstance(r, Message)}


def revive_topic() -> str:
    return expect()["pairing"]["reviveTopic"]


def test_store_is_5x_with_the_expected_files() -> None:
    on_disk = {
        p.relative_to(ROOT).as_posix(): p.stat().st_size
        for p in ROOT.rglob("*")
        if p.is_file() and p.name not in ("expect.json", "README.md")
    }
    assert on_disk == expect()["files"]
    found = detect_broker_version(ROOT)
    assert found is not None and found.major == 5


def test_every_commitlog_record() -> None:
    want = expect()["messages"]
    with Store.open(ROOT) as store:
        got = [r for r in store.commitlog.iter_records() if not isinstance(r, EndOfData)]
    assert len(got) == len(want)
    for rec, e in zip(got, want, strict=True):
        assert rec.physical_offset == e["physicalOffset"]
        if e["kind"] == "BLANK":
            assert isinstance(rec, Blank)
            continue
        assert hashlib.sha256(rec.body).hexdigest() == e["bodySha256"]
        check_message(rec, e)


def test_consume_queue_units() -> None:
    queues = expect()["consumeQueues"]
    with Store.open(ROOT) as store:
        cqs = store.consume_queues
        on_disk = sorted(f"{t}/{q}" for t, q in cqs.queues())
        # the real store also holds in memory the empty revive queues PopReviveService looked into
        assert on_disk == sorted(k for k, v in queues.items() if v["maxOffset"] > 0)
        for want in (queues[k] for k in on_disk):
            cq = cqs.open(want["topic"], want["queueId"])
            assert (cq.min_offset, cq.max_offset) == (want["minOffset"], want["maxOffset"])
            assert cq.units().tolist() == [tuple(u) for u in want[UNITS_KEY]]


def _fields(obj: PopCheckPoint | AckMsg) -> dict:
    if isinstance(obj, PopCheckPoint):
        return {
            "startOffset": obj.start_offset,
            "popTime": obj.pop_time,
            "invisibleTime": obj.invisible_time,
            "reviveTime": obj.revive_time,
            "bitMap": obj.bit_map,
            "num": obj.num,
            "queueId": obj.queue_id,
            "topic": obj.topic,
            "cid": obj.cid,
            "reviveOffset": obj.revive_offset,
            "queueOffsetDiff": obj.queue_offset_diff,
            "brokerName": obj.broker_name,
            "rePutTimes": obj.re_put_times,
            "parseRePutTimes": obj.parse_re_put_times(),
            "ackOffsets": obj.ack_offsets(),
        }
    out = {
        "ackOffset": obj.ack_offset,
        "startOffset": obj.start_offset,
        "consumerGroup": obj.consumer_group,
        "topic": obj.topic,
        "queueId": obj.queue_id,
        "popTime": obj.pop_time,
        "brokerName": obj.broker_name,
    }
    if obj.batch:
        out["ackOffsetList"] = obj.ack_offset_list
    return out


def _parse(rec: Message) -> PopCheckPoint | AckMsg:
    if rec.tags == "ck":
        return PopCheckPoint.parse(rec.body)
    assert rec.tags in ("ack", "bAck")
    return AckMsg.parse(rec.body, batch=rec.tags == "bAck")


def test_every_revive_body_reads_as_fastjson_read_it() -> None:
    """Every ck / ack / bAck: in the revive topic, or still in the timer wheel's topic bound for it."""
    topic = revive_topic()
    found = [
        r
        for r in messages().values()
        if r.topic == topic or (r.topic == TIMER_TOPIC and r.properties.get("REAL_TOPIC") == topic)
    ]
    want = expect()["pop"]
    assert [r.physical_offset for r in found] == [w["physicalOffset"] for w in want]
    for rec, w in zip(found, want, strict=True):
        assert (rec.topic, rec.queue_id, rec.queue_offset, rec.tags) == (
            w["topic"],
            w["queueId"],
            w["queueOffset"],
            w["tag"],
        )
        assert rec.body.decode("utf-8") == w["body"]
        assert _fields(_parse(rec)) == w["parsed"]
    # the fixture has every form: cks, single and batch acks, in the revive topic and still in the wheel
    forms = {(w["topic"] == topic, w["tag"]) for w in want}
    assert forms == {(in_revive, tag) for in_revive in (True, False) for tag in ("ck", "ack", "bAck")}


def test_acks_pair_with_their_checkpoint_as_the_revive_service_paired_them() -> None:
    """PopReviveService's merge key (topic, group, queueId, startOffset, popTime, brokerName) over each
    revive queue read through its ConsumeQueue gives the acked indexes the real service computed."""
    with Store.open(ROOT) as store:
        for q in expect()["pairing"]["queues"]:
            cq = store.consume_queue(revive_topic(), q["queueId"]) if q["maxOffset"] > 0 else None
            units = cq.units().tolist() if cq is not None else []
            cks: dict[tuple, tuple[int, PopCheckPoint, set[int]]] = {}
            for queue_offset, phy, _size, _tags in units:
                obj = _parse(messages()[phy])
                if isinstance(obj, PopCheckPoint):
                    key = (obj.topic, obj.cid, obj.queue_id, obj.start_offset, obj.pop_time, obj.broker_name)
                    cks[key] = (queue_offset, obj, set())
                    continue
                group = obj.consumer_group
                key = (obj.topic, group, obj.queue_id, obj.start_offset, obj.pop_time, obj.broker_name)
                _, ck, acked = cks[key]
                offsets = obj.ack_offset_list if obj.batch else [obj.ack_offset]
                acked.update(ck.ack_offsets().index(o) for o in offsets)
            got = sorted((off, ck.cid, sorted(acked)) for off, ck, acked in cks.values())
            want = sorted((c["reviveOffset"], c["cid"], c["ackedIndexes"]) for c in q["checkpoints"])
            assert got == want, q["queueId"]


def test_revived_messages_are_in_the_pop_retry_topics() -> None:
    """Each unacked message the real PopReviveService revived is a record of %RETRY%group_topic (before the
    switch to retry topic V2) or %RETRY%group+topic (after), carrying the original's UNIQ_KEY."""
    revived = 0
    forms = set()
    for q in expect()["pairing"]["queues"]:
        for c in q["checkpoints"]:
            for u in c["unacked"]:
                for phy in u["retryRecords"]:
                    rec = messages()[phy]
                    v1 = f"%RETRY%{c['cid']}_{c['topic']}"
                    v2 = f"%RETRY%{c['cid']}+{c['topic']}"
                    assert rec.topic in (v1, v2)
                    forms.add(rec.topic == v2)
                    assert int(rec.properties["1ST_POP_TIME"]) == c["popTime"]
                    assert rec.reconsume_times == 1
                    revived += 1
                if u["retryRecords"]:
                    assert c["behindReviveGroupOffset"]
    assert revived > 0 and forms == {False, True}


def test_config_files_read_as_the_real_managers_read_them() -> None:
    files = expect()["configFiles"]
    with Store.open(ROOT) as store:
        offsets = store.config("consumerOffset.json").load()
        modes = store.config("messageRequestMode.json").load()
    assert offsets.source == files["consumerOffset"]["source"] == "file"
    want = files["consumerOffset"]["offsetTable"]
    assert offsets.model.offset_table == {key: {int(q): v for q, v in t.items()} for key, t in want.items()}
    assert "rmq_sys_REVIVE_LOG_DefaultCluster@CID_RMQ_SYS_REVIVE_GROUP" in offsets.model.offset_table
    got = {
        f"{topic}@{group}": {"mode": m.mode, "popShareQueueNum": m.pop_share_queue_num}
        for topic, groups in modes.model.message_request_mode_map.items()
        for group, m in groups.items()
    }
    assert got == files["messageRequestMode"]["table"]
