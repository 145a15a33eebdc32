"""Orderly POP (ConsumerOrderInfoManager, config/consumerOrderInfo.json) against store-pop, where RocketMQ
5.3.3's own PopMessageProcessor popped OrderTopic queue 0 orderly for GID_ORDER and AckMessageProcessor's
ackOrderly acked its first message (tests/data/store-pop/README.md). expect.json holds the order info as
the real ConsumerOrderInfoManager.decode read it, with OrderInfo.getNextOffset()."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest
from golden import GOLDEN

from formats.config import fastjson
from formats.config.codec import encode_config
from formats.config.order import ConsumerOrderInfoTable, OrderInfo
from mqtool.offsets.progress import consumer_progress
from store.pop.order import POP_ORDER_REVIVE_QUEUE
from store.pop.revive import pop_state
from store.storedir import Store

ROOT = GOLDEN / "store-pop"
ORDER_FILE = ROOT / "config" / "consumerOrderInfo.json"


@cache
def expect() -> dict:
    return json.loads((ROOT / "expect.json").read_text(encoding="utf-8"))


def real_order_infos() -> dict[str, dict]:
    return expect()["configFiles"]["consumerOrderInfo"]["table"]


def order_events() -> list[dict]:
    return [e for e in expect()["events"] if e.get("group") == "GID_ORDER"]


def test_model_reads_what_the_real_manager_reads() -> None:
    table = ConsumerOrderInfoTable.from_json(fastjson.parse(ORDER_FILE.read_text(encoding="utf-8")))
    ours = {f"{t}@{g}/{q}": info for t, g, q, info in table.entries()}
    assert set(ours) == set(real_order_infos())
    for key, real in real_order_infos().items():
        info = ours[key]
        assert info.attempt_id == real["attemptId"]
        assert info.pop_time == real["popTime"]
        assert info.invisible_time == real["invisibleTime"]
        assert info.offset_list == real["offsetList"]
        assert info.commit_offset_bit == real["commitOffsetBit"]
        assert info.last_consume_timestamp == real["lastConsumeTimestamp"]
        assert info.offset_next_visible_time == real["offsetNextVisibleTime"]
        assert info.offset_consumed_count == real["offsetConsumedCount"]
        assert info.next_offset() == real["nextOffset"]


def test_rewriting_the_unchanged_file_reproduces_it_byte_for_byte() -> None:
    text = ORDER_FILE.read_text(encoding="utf-8")
    assert encode_config(ConsumerOrderInfoTable.from_json(fastjson.parse(text))) == text


def test_queue_offsets_and_bits_follow_the_java_getters() -> None:
    # offsetList keeps the first offset, then differences; `1L << i` wraps at 64 bits.
    info = OrderInfo(pop_time=1000, invisible_time=50, offset_list=[10, 2, 5], commit_offset_bit=0b010)
    assert info.queue_offsets() == [10, 12, 15]
    assert [info.is_acked(i) for i in range(3)] == [False, True, False]
    assert info.next_offset() == 10
    info.commit_offset_bit = 0b111
    assert info.next_offset() == 16
    assert OrderInfo(commit_offset_bit=1).is_acked(64)
    # changeInvisibleTime's per-offset visible time wins over popTime + invisibleTime
    info.offset_next_visible_time = {12: 5000}
    assert info.next_visible_time(12) == 5000 and info.next_visible_time(15) == 1050
    assert OrderInfo(pop_time=1000, invisible_time=None).next_visible_time(1) is None


def test_pop_state_gives_each_orderly_offset_its_state() -> None:
    pop = next(e for e in order_events() if e["event"] == "pop")
    acked = {e["offset"] for e in order_events() if e["event"] == "ack"}
    visible_at = pop["popTime"] + pop["invisibleTime"]
    with Store.open(ROOT) as store:
        for now, unacked_state in ((visible_at - 1, "in-flight"), (visible_at, "overdue")):
            rows = [m for m in pop_state(store, now=now).messages if m.orderly]
            assert [m.queue_offset for m in rows] == pop["queueOffsets"]
            for m in rows:
                assert (m.group, m.topic, m.queue_id) == ("GID_ORDER", pop["topic"], pop["queueId"])
                assert m.revive_queue == POP_ORDER_REVIVE_QUEUE == pop["reviveQid"]
                assert m.invisible_until == visible_at and m.pop_time == pop["popTime"]
                assert m.state == ("acked" if m.queue_offset in acked else unacked_state)
                assert m.message is not None and m.message.topic == pop["topic"]
                assert m.message.queue_offset == m.queue_offset


def test_offsets_show_does_not_count_orderly_messages_twice() -> None:
    real_offset = expect()["configFiles"]["consumerOffset"]["offsetTable"]["OrderTopic@GID_ORDER"]["0"]
    with Store.open(ROOT) as store:
        progress = consumer_progress(store, group="GID_ORDER")
    (row,) = [r for r in progress.rows if r.topic == "OrderTopic"]
    # the orderly pop committed its first offset, the ack the first unacked one: lag already counts them
    assert row.consumer_offset == real_offset == real_order_infos()["OrderTopic@GID_ORDER/0"]["nextOffset"]
    # popped and unacked, as pop stats counts them; lagWithInFlight adds nothing, lag counts them already
    assert (
        row.pop_in_flight + row.pop_overdue
        == len(real_order_infos()["OrderTopic@GID_ORDER/0"]["offsetList"]) - 1
    )
    assert row.lag_with_in_flight == row.lag
    assert any(n.startswith("orderly POP groups (GID_ORDER)") for n in progress.notes)


BAD_FILES = ["{garbage", '{"table":{"T@G":{"x":{}}}}', '{"table":{"T@G":{0:{"o":"1"}}}}']


@pytest.mark.parametrize("text", BAD_FILES)
def test_a_bad_order_info_file_is_a_note_not_a_failure(tmp_path: Path, text: str) -> None:
    root = tmp_path / "store"
    shutil.copytree(ROOT, root)
    (root / "config" / "consumerOrderInfo.json").write_text(text, encoding="utf-8")
    with Store.open(root) as store:
        state = pop_state(store, now=0)
    assert not any(m.orderly for m in state.messages)
    # no .bak beside it: the broker's ConfigManager.load() starts with an empty table, and says why
    problem = "orderly POP state: consumerOrderInfo.json cannot be decoded"
    assert any(n.startswith(problem) for n in state.notes)
    assert any(not m.orderly for m in state.messages)  # the checkpoints are still read


def test_offsets_reset_of_an_orderly_group_does_not_promise_a_revive() -> None:
    """An orderly pop has no checkpoint and no retry copy: the reset's note names consumerOrderInfo.json
    and the block, not PopReviveService."""
    from mqtool.offsets.reset import plan_offsets_reset

    with Store.open(ROOT) as store:
        plan = plan_offsets_reset(store, group="GID_ORDER", topics=["OrderTopic"], to_latest=True)
    (note,) = [n for n in plan.notes if "GID_ORDER" in n]
    unacked = len(real_order_infos()["OrderTopic@GID_ORDER/0"]["offsetList"]) - 1
    assert f"{unacked} popped message(s) not acked yet stay in consumerOrderInfo.json" in note
    assert "%RETRY%" not in note and "revive" not in note
