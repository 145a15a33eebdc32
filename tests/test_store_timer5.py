"""What mqtool reads from store-timer5 (written by RocketMQ 5.3.3's own code with the timer wheel enabled, see
tests/data/store-timer5/README.md) against what the real classes read back (its expect.json): commitlog
records, ConsumeQueue units, index queries, timercheck, the timer listing, and the timerlog units and wheel
slots as declared in formats/structs.py."""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache

from golden import GOLDEN
from test_commitlog_store import check_message

from formats.message.commitlog import Blank, EndOfData, Message
from formats.names import TIMER_TOPIC
from formats.structs import (
    TIMER_LOG_UNIT_SIZE,
    TIMER_WHEEL_SLOT_SIZE,
    TimerCheckpoint,
    TimerLogUnit,
    TimerWheelSlot,
)
from mqtool.delay.timer import list_timer_messages
from store.index.indexservice import IndexService
from store.log.commitlog import CommitLog
from store.queue.consumequeue import ConsumeQueueStore
from store.storedir import Store
from store.timer.timerstore import read_timercheck
from store.version import detect_broker_version

ROOT = GOLDEN / "store-timer5"
UNITS_KEY = "units[queueOffset,phyOffset,size,tagsCode]"


@cache
def expect() -> dict:
    with open(ROOT / "expect.json", encoding="utf-8") as fh:
        return json.load(fh)


@cache
def records() -> tuple:
    with CommitLog.open(ROOT) as cl:
        return tuple(cl.iter_records())


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
    got = [r for r in records() if not isinstance(r, EndOfData)]
    assert len(got) == len(want)
    for rec, e in zip(got, want, strict=True):
        assert rec.physical_offset == e["physicalOffset"]
        if e["kind"] == "BLANK":
            assert isinstance(rec, Blank) and rec.total_size == e["totalSize"]
            continue
        assert isinstance(rec, Message)
        # expect.json keeps only a digest of the large bodies; equal digests stand for equal bodies
        assert hashlib.sha256(rec.body).hexdigest() == e["bodySha256"]
        body = e.get("bodyBase64", base64.b64encode(rec.body).decode())
        check_message(rec, {**e, "bodyBase64": body})


def test_commitlog_bounds() -> None:
    with CommitLog.open(ROOT) as cl:
        assert cl.max_offset == expect()["maxPhyOffset"]
        assert cl.files[0].start_offset == expect()["minPhyOffset"]


def test_consume_queue_units() -> None:
    cqs = ConsumeQueueStore(ROOT)
    queues = expect()["consumeQueues"]
    assert sorted(f"{t}/{q}" for t, q in cqs.queues()) == sorted(queues)
    for want in queues.values():
        cq = cqs.open(want["topic"], want["queueId"])
        assert (cq.min_offset, cq.max_offset) == (want["minOffset"], want["maxOffset"])
        assert cq.units().tolist() == [tuple(u) for u in want[UNITS_KEY]]


def test_index_queries() -> None:
    svc = IndexService(ROOT, expect()["config"]["maxHashSlotNum"], expect()["config"]["maxIndexNum"])
    for q in expect()["indexQueries"]:
        assert svc.query_offset(q["topic"], q["key"], q["maxNum"]).phy_offsets == q["phyOffsets"], q


def test_timercheck() -> None:
    want = expect()["timercheck"]
    parsed = TimerCheckpoint.parse((ROOT / "config" / "timercheck").read_bytes()[: TimerCheckpoint.sizeof()])
    assert {k: v for k, v in parsed.items() if not k.startswith("_")} == want
    with Store.open(ROOT) as store:
        check = read_timercheck(store)
    assert check is not None
    assert (check.last_read_time_ms, check.last_timer_queue_offset) == (
        want["lastReadTimeMs"],
        want["lastTimerQueueOffset"],
    )


def test_timerlog_units() -> None:
    data = (ROOT / "timerlog" / "00000000000000000000").read_bytes()
    units = expect()["timerLog"]
    assert units and all(u["size"] == TIMER_LOG_UNIT_SIZE for u in units)
    for u in units:
        parsed = TimerLogUnit.parse(data[u["position"] : u["position"] + TIMER_LOG_UNIT_SIZE])
        fields = {k: v for k, v in parsed.items() if not k.startswith("_")}
        assert fields == {k: u[k] for k in fields}, u
    # the units point at the timer-topic records of the commitlog
    timer_records = {
        r.physical_offset: r.total_size for r in records() if getattr(r, "topic", None) == TIMER_TOPIC
    }
    assert {u["offsetPy"]: u["sizePy"] for u in units} == timer_records
    end = units[-1]["position"] + TIMER_LOG_UNIT_SIZE
    assert data[end:] == bytes(len(data) - end)


def test_wheel_slots() -> None:
    slots = expect()["timerWheel"]
    precision = expect()["config"]["timerPrecisionMs"]
    wanted = {s["index"]: s for s in slots}
    with open(ROOT / "timerwheel", "rb") as fh:
        wheel = fh.read()
    assert len(wheel) == expect()["config"]["timerWheelSlots"] * 2 * TIMER_WHEEL_SLOT_SIZE
    nonzero = {i // TIMER_WHEEL_SLOT_SIZE for i in range(0, len(wheel), 8) if wheel[i : i + 8] != bytes(8)}
    assert nonzero == set(wanted)
    for index, s in wanted.items():
        at = index * TIMER_WHEEL_SLOT_SIZE
        parsed = TimerWheelSlot.parse(wheel[at : at + TIMER_WHEEL_SLOT_SIZE])
        assert parsed.timeSecs * precision == s["timeMs"]
        assert (parsed.firstPos, parsed.lastPos, parsed.num, parsed.magic) == (
            s["firstPos"],
            s["lastPos"],
            s["num"],
            s["magic"],
        )
    # each unit sits in the slot of its delayed time
    by_pos = {u["position"]: u for u in expect()["timerLog"]}
    for s in slots:
        for pos in s["chain"]:
            assert by_pos[pos]["delayedTimeMs"] == s["timeMs"]


def test_timer_listing_agrees_with_the_real_delivery() -> None:
    """The message the real TimerMessageStore delivered is `delivered`, its copy found where the real
    dequeue wrote it; the others wait in the wheel."""
    messages = expect()["messages"]
    timer_msgs = [m for m in messages if m.get("topic") == TIMER_TOPIC]
    delivered = {m["uniqKey"] for m in messages if "TIMER_DEQUEUE_MS" in m.get("properties", {})}
    assert len(delivered) == 1
    check = expect()["timercheck"]
    with Store.open(ROOT) as store:
        rows = list_timer_messages(store, now=check["lastReadTimeMs"])
    assert [(r.queue_offset, r.phy_offset, r.size) for r in rows] == [
        (m["queueOffset"], m["physicalOffset"], m["totalSize"]) for m in timer_msgs
    ]
    for r, m in zip(rows, timer_msgs, strict=True):
        assert r.deliver_timestamp == int(m["properties"]["TIMER_OUT_MS"])
        props = m["properties"]
        assert (r.real_topic, r.real_queue_id) == (props["REAL_TOPIC"], int(props["REAL_QID"]))
        assert r.state == ("delivered" if m["uniqKey"] in delivered else "waiting"), r
        copies = [
            c["physicalOffset"]
            for c in messages
            if c.get("topic") == props["REAL_TOPIC"]
            and c.get("uniqKey") == m["uniqKey"]
            and "TIMER_DEQUEUE_MS" in c["properties"]
        ]
        assert r.copy_phy_offset == (copies[0] if copies else None)
        assert r.due == (r.state == "waiting" and r.deliver_timestamp <= check["lastReadTimeMs"])
