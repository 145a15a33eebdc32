"""BatchCQ topics through the commands (store-batchcq, written by the real 5.3.3 store): query offset and
time against the real getMessage / getOffsetInQueueByTime and the client's unwrap, verify (clean, and
faults injected into copies), info, dump cq and offsets show."""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import pytest
from golden import copy_store, expect, store_path

from formats.message.innerbatch import count_inner_messages, unwrap
from formats.structs import BCQ_STORE_UNIT_SIZE
from mqtool.dump import cq_units
from mqtool.info import store_info
from mqtool.offsets.progress import consumer_progress
from mqtool.query.queue import QueueOffsetError, query_by_queue_offset, query_by_time
from mqtool.verify import verify_store
from store.storedir import Store

STORE = "store-batchcq"
E = expect(STORE)
QUEUES = E["batchConsumeQueues"]
RECORDS = {r["physicalOffset"]: r for r in E["messages"] if r["kind"] == "MESSAGE"}


def _field(q: dict, prefix: str):
    return next(v for k, v in q.items() if k.startswith(prefix))


@pytest.fixture(scope="module")
def st():
    with Store.open(store_path(STORE)) as s:
        yield s


def test_unwrap_gives_what_the_client_unwraps(st):
    inner_batches = [r for r in RECORDS.values() if "innerMessages" in r]
    assert len(inner_batches) > 10
    for r in inner_batches:
        msgs = unwrap(st.commitlog.read_message_at(r["physicalOffset"], r["totalSize"]))
        assert count_inner_messages(
            st.commitlog.read_message_at(r["physicalOffset"], r["totalSize"]).body
        ) == len(r["innerMessages"])
        got = [[m.queue_offset, m.flag, m.properties, base64.b64encode(m.body).decode()] for m in msgs]
        want = [[x["queueOffset"], x["flag"], x["properties"], x["bodyBase64"]] for x in r["innerMessages"]]
        assert got == want
        assert int(r["properties"]["INNER_NUM"]) == len(msgs) == r["dispatch"]["batchSize"]


def _inner_at(phy: int, queue_offset: int) -> dict:
    r = RECORDS[phy]
    if "innerMessages" not in r:
        return {"queueOffset": r["queueOffset"], "properties": r["properties"]}
    return next(x for x in r["innerMessages"] if x["queueOffset"] == queue_offset)


@pytest.mark.parametrize("key", sorted(QUEUES))
def test_query_offset_is_the_message_getMessage_returns(st, key):
    q = QUEUES[key]
    for case in q["getMessage"]:
        offset = case["offset"]
        if case["status"] != "FOUND":
            with pytest.raises(QueueOffsetError):
                query_by_queue_offset(st, q["topic"], q["queueId"], offset)
            continue
        result = query_by_queue_offset(st, q["topic"], q["queueId"], offset)
        (msg,) = result.messages
        first_phy = case["buffers[queueOffset,phyOffset,size]"][0][1]
        assert msg.physical_offset == first_phy  # the record of the unit holding the offset
        assert msg.queue_offset == offset
        assert msg.properties == _inner_at(first_phy, offset)["properties"]
        assert (result.min_offset, result.max_offset) == (case["minOffset"], case["maxOffset"])


def test_query_offset_pages_across_batches(st):
    q = QUEUES["BatchTopicA/1"]
    result = query_by_queue_offset(st, "BatchTopicA", 1, 0, count=q["maxOffset"])
    assert [m.queue_offset for m in result.messages] == list(range(q["maxOffset"]))
    units = _field(q, "units[")
    assert len({m.physical_offset for m in result.messages}) == len(units)


@pytest.mark.parametrize("key", sorted(QUEUES))
def test_query_time_starts_where_the_broker_does(st, key):
    q = QUEUES[key]
    units = _field(q, "units[")
    times = [u[3] for u in units]
    begin, end = times[len(times) // 3], times[2 * len(times) // 3]
    result = query_by_time(st, q["topic"], begin=begin, end=end, queue_id=q["queueId"])
    want = [u for u in units if begin <= u[3] <= end]
    want_offsets = [o for u in want for o in range(u[4], u[4] + u[5])]
    assert [m.queue_offset for m in result.messages] == want_offsets
    by_time = {row[0]: row for row in _field(q, "byTime[")}
    assert result.messages[0].queue_offset == by_time[begin][3]  # the store's LOWER answer for `begin`


def test_query_time_tag_filter_on_inner_messages(st):
    result = query_by_time(st, "BatchTopicA", begin=0, end=2**62, tag="tag1", max_num=None)
    assert result.messages and all(m.tags == "tag1" for m in result.messages)
    want = sum(
        1
        for r in RECORDS.values()
        if r["topic"] == "BatchTopicA"
        for x in r.get("innerMessages", [{"properties": r["properties"]}])
        if x["properties"].get("TAGS") == "tag1"
    )
    assert len(result.messages) == want


def test_verify_clean_and_counts(st):
    report = verify_store(st)
    assert report.clean, report.problems.to_pylist()
    assert report.summary["batchConsumeQueues"] == {
        "queues": len(QUEUES),
        "units": sum(len(_field(q, "units[")) for q in QUEUES.values()),
    }


def _kinds(root: Path) -> list[dict]:
    with Store.open(root) as s:
        return [r for r in verify_store(s).problems.to_pylist() if r["severity"] == "error"]


def _patch(path: Path, position: int, fmt: str, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, position, value)
    path.write_bytes(bytes(data))


def test_verify_finds_a_wrong_batch_size_and_the_gap_after_it(tmp_path):
    root = copy_store(STORE, tmp_path / "s")
    f = root / "batchconsumequeue/BatchTopicA/0/00000000000000000000"
    _patch(f, 2 * BCQ_STORE_UNIT_SIZE + 36, ">h", _field(QUEUES["BatchTopicA/0"], "units[")[2][5] + 1)
    errors = _kinds(root)
    assert {(r["kind"], r["file"], r["offset"]) for r in errors} == {
        (
            "bcq_unit_mismatch",
            "batchconsumequeue/BatchTopicA/0/00000000000000000000",
            2 * BCQ_STORE_UNIT_SIZE,
        ),
        ("bcq_offset_gap", "batchconsumequeue/BatchTopicA/0/00000000000000000000", 3 * BCQ_STORE_UNIT_SIZE),
    }


def test_verify_finds_a_unit_pointing_inside_a_record(tmp_path):
    root = copy_store(STORE, tmp_path / "s")
    unit = _field(QUEUES["BatchTopicB/0"], "units[")[9]  # the second file's second unit
    f = root / "batchconsumequeue/BatchTopicB/0/00000000000000000368"
    _patch(f, BCQ_STORE_UNIT_SIZE, ">q", unit[0] + 4)
    kinds = {(r["kind"], r["offset"]) for r in _kinds(root)}
    assert ("bcq_not_record_start", BCQ_STORE_UNIT_SIZE) in kinds
    assert ("cq_missing_unit", unit[0]) in kinds  # its record is now in no queue


def test_verify_finds_inner_num_disagreeing_with_unit_and_body(tmp_path):
    root = copy_store(STORE, tmp_path / "s")
    unit = _field(QUEUES["BatchTopicA/1"], "units[")[0]
    log = root / "commitlog/00000000000000000000"
    data = bytearray(log.read_bytes())
    record = bytes(data[unit[0] : unit[0] + unit[1]])
    m = re.search(rb"INNER_NUM\x01(\d+)", record)
    digits = m.group(1)
    other = str(int(digits) + 1).encode()
    assert len(other) == len(digits)
    data[unit[0] + m.start(1) : unit[0] + m.end(1)] = other
    log.write_bytes(bytes(data))
    kinds = {r["kind"] for r in _kinds(root)}
    assert {"bcq_unit_mismatch", "bcq_inner_num"} <= kinds


def test_verify_without_the_batch_queue_reports_its_records(tmp_path):
    root = copy_store(STORE, tmp_path / "s")
    import shutil

    shutil.rmtree(root / "batchconsumequeue/BatchTopicB")
    missing = [r for r in _kinds(root) if r["kind"] == "cq_missing_unit"]
    n = sum(1 for r in RECORDS.values() if r["topic"] == "BatchTopicB")
    assert len(missing) == n


def test_info_lists_batch_queues(st):
    rows = {f"{r['topic']}/{r['queueId']}": r for r in store_info(st)["batchQueues"]}
    assert set(rows) == set(QUEUES)
    for key, q in QUEUES.items():
        assert (rows[key]["minOffset"], rows[key]["maxOffset"]) == (q["minOffset"], q["maxOffset"])
        assert rows[key]["units"] == len(_field(q, "units["))


def test_dump_cq_lists_batch_units(st):
    q = QUEUES["BatchTopicA/1"]
    doc = cq_units(st, "BatchTopicA", 1)
    got = [
        [u["phyOffset"], u["size"], u["tagsCode"], u["storeTime"], u["queueOffset"], u["batchSize"]]
        for u in doc["units"]
    ]
    assert got == [u[:6] for u in _field(q, "units[")]
    later = list(cq_units(st, "BatchTopicA", 1, from_offset=q["maxOffset"] - 1, count=5)["units"])
    assert len(later) == 1 and later[0]["queueOffset"] <= q["maxOffset"] - 1


def test_offsets_show_lag_on_batch_topics(tmp_path):
    root = copy_store(STORE, tmp_path / "s")
    q0, q1 = QUEUES["BatchTopicA/0"], QUEUES["BatchTopicA/1"]
    (root / "config/consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"BatchTopicA@grp":{0:5,1:' + str(q1["maxOffset"]) + "\n\t\t}\n\t}\n}"
    )
    with Store.open(root) as s:
        rows = {r.queue_id: r for r in consumer_progress(s).rows}
    assert (rows[0].max_offset, rows[0].lag, rows[0].state) == (q0["maxOffset"], q0["maxOffset"] - 5, "ok")
    assert rows[1].lag == 0
    units0 = _field(q0, "units[")
    holding = next(u for u in units0 if u[4] <= 4 < u[4] + u[5])
    assert rows[0].last_consumed_timestamp == holding[3]  # the store time of the batch holding offset 4


def test_verify_finds_queue_directories_of_the_wrong_type(tmp_path):
    """ConsumeQueueStore.queueTypeShouldBe: the broker's load throws on either mismatch."""
    import shutil

    root = copy_store(STORE, tmp_path / "s")
    topics = root / "config/topics.json"
    text = topics.read_text()
    at = text.index('"BatchTopicB":{')
    text = text[:at] + text[at:].replace('"queue.type":"BatchCQ"', '"queue.type":"SimpleCQ"', 1)
    topics.write_text(text)
    shutil.copytree(root / "consumequeue/PlainTopic", root / "consumequeue/BatchTopicA")
    wrong = {r["file"] for r in _kinds(root) if r["kind"] == "bcq_queue_type"}
    assert wrong == {"batchconsumequeue/BatchTopicB", "consumequeue/BatchTopicA"}
