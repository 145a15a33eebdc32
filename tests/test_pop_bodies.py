"""The revive topic's ck / ack / bAck bodies (formats.pop) against the real 5.3.3 classes: every body in
tests/data/pop-bodies.json was written by `JSON.toJSONString` of a real PopCheckPoint, AckMsg or
BatchAckMsg (oracle `pop-bodies`), and its `parsed` fields are what `JSON.parseObject` gave back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats.errors import FormatError
from formats.pop.bodies import AckMsg, PopCheckPoint

VECTORS = json.loads((Path(__file__).parent / "data" / "pop-bodies.json").read_text(encoding="utf-8"))[
    "bodies"
]
CK = [v for v in VECTORS if v["kind"] == "ck"]
ACKS = [v for v in VECTORS if v["kind"] in ("ack", "bAck")]


def _fields(ck: PopCheckPoint) -> dict:
    return {
        "startOffset": ck.start_offset,
        "popTime": ck.pop_time,
        "invisibleTime": ck.invisible_time,
        "reviveTime": ck.revive_time,
        "bitMap": ck.bit_map,
        "num": ck.num,
        "queueId": ck.queue_id,
        "topic": ck.topic,
        "cid": ck.cid,
        "reviveOffset": ck.revive_offset,
        "queueOffsetDiff": ck.queue_offset_diff,
        "brokerName": ck.broker_name,
        "rePutTimes": ck.re_put_times,
        "parseRePutTimes": ck.parse_re_put_times(),
        "ackOffsets": ck.ack_offsets(),
    }


def test_the_vectors_cover_every_form() -> None:
    assert len(CK) > 100 and len(ACKS) > 200
    assert any(v["parsed"]["queueOffsetDiff"] is None for v in CK)  # the old checkpoint form
    assert any(v["parsed"]["rePutTimes"] is not None for v in CK)
    assert any("ackOffset" in v["body"] for v in ACKS)  # the long names AckMsg also takes


@pytest.mark.parametrize("v", CK, ids=lambda v: v["body"][:40])
def test_checkpoint_reads_as_the_real_parser_and_writes_the_real_bytes(v: dict) -> None:
    ck = PopCheckPoint.parse(v["body"].encode("utf-8"))
    assert _fields(ck) == v["parsed"]
    if v["body"].startswith('{"bm"'):  # written by the real toJSONString (the hand-written ones are not)
        assert ck.to_body() == v["body"].encode("utf-8")


@pytest.mark.parametrize("v", ACKS, ids=lambda v: v["body"][:40])
def test_ack_reads_as_the_real_parser_and_writes_the_real_bytes(v: dict) -> None:
    batch = v["kind"] == "bAck"
    ack = AckMsg.parse(v["body"].encode("utf-8"), batch=batch)
    got = {
        "ackOffset": ack.ack_offset,
        "startOffset": ack.start_offset,
        "consumerGroup": ack.consumer_group,
        "topic": ack.topic,
        "queueId": ack.queue_id,
        "popTime": ack.pop_time,
        "brokerName": ack.broker_name,
    }
    if batch:
        got["ackOffsetList"] = ack.ack_offset_list
    assert got == v["parsed"]
    if v["body"].startswith('{"ao"'):
        assert ack.to_body() == v["body"].encode("utf-8")


@pytest.mark.parametrize(
    "body",
    [b"", b"[1]", b"{", b'{"so":"x"}', b'{"so":99999999999999999999}', b'{"d":[1,"a"]}', b"\xff{}"],
)
def test_garbage_is_a_one_line_format_error(body: bytes) -> None:
    with pytest.raises(FormatError) as err:
        PopCheckPoint.parse(body)
    assert "\n" not in str(err.value)
