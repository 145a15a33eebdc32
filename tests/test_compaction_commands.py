"""Compaction topics through the commands (store-compaction, written and compacted by the real 5.3.3
store): info's compaction section, dump cq of a compacted queue and query offset, against what the real
CompactionStore served (expect.json); the CLI's one-line refusal where a pull gets nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest
from golden import expect, store_path

from mqtool.dump import cq_units
from mqtool.info import store_info
from mqtool.query.queue import QueueOffsetError, query_by_queue_offset
from store.config.brokerconf import BrokerConfig
from store.storedir import Store

STORE = "store-compaction"
E = expect(STORE)
QUEUES = sorted(E["compactionQueues"])
UNITS_KEY = next(k for k in E["compactionQueues"][QUEUES[0]] if k.startswith("cqUnitsOnDisk"))


@pytest.fixture(scope="module")
def st():
    with Store.open(store_path(STORE)) as s:
        yield s


def _split(name: str) -> tuple[str, int]:
    topic, qid = name.split("/")
    return topic, int(qid)


def test_info_compaction_section(st):
    section = store_info(st, jobs=1)["compaction"]
    assert section["topics"] == ["CompactTopicA", "CompactTopicB"]
    assert section["positionCheckpoint"] == E["positionCheckpoint"]["queueOffsetMap"]
    assert section["problems"] == []
    rows = {f"{r['topic']}/{r['queueId']}": r for r in section["queues"]}
    assert sorted(rows) == QUEUES
    for name in QUEUES:
        want, row = E["compactionQueues"][name], rows[name]
        assert (row["minOffset"], row["maxOffset"]) == (want["minOffset"], want["maxOffset"])
        assert (row["consumeQueueMinOffset"], row["consumeQueueMaxOffset"]) == (
            want["consumeQueueMinOffset"], want["consumeQueueMaxOffset"])  # fmt: skip
        assert row["records"] == len(want["consumed"])
        assert row["logFiles"] == [f[0] for f in want["logFiles[name,fileSize,wrotePosition]"]]
        assert row["compactedTo"] == E["positionCheckpoint"]["queueOffsetMap"][name.replace("/", "_")]
        assert row["served"] and row["problems"] == []


def test_info_of_a_store_without_compaction_has_no_section():
    with Store.open(store_path("store-batchcq")) as s:
        assert store_info(s, jobs=1)["compaction"] is None


@pytest.mark.parametrize("name", QUEUES)
def test_dump_cq_shows_the_compacted_units(st, name):
    topic, qid = _split(name)
    result = cq_units(st, topic, qid)
    rows = list(result["units"])
    want = E["compactionQueues"][name]
    assert result["queueType"] == "CompactionCQ"
    assert (result["minOffset"], result["maxOffset"]) == (want["minOffset"], want["maxOffset"])
    fields = ("file", "position", "logOffset", "size", "tagsCode", "storeTime", "queueOffset", "batchSize")
    assert [[r[f] for f in fields] for r in rows] == [u[:8] for u in want[UNITS_KEY]]
    live = [r for r in rows if r["state"] == "ok"]
    assert [[r["queueOffset"], r["keys"], r["bodyLength"]] for r in live] == [
        [c["queueOffset"], c["keys"], c["bodyLength"]] for c in want["consumed"]
    ]
    assert {r["state"] for r in rows} <= {"ok", "end"}
    # from an offset compacted away: the units from the next live one
    gap = next(
        o for o in range(want["minOffset"], want["maxOffset"]) if o not in {r["queueOffset"] for r in live}
    )
    first = next(iter(cq_units(st, topic, qid, from_offset=gap, count=1)["units"]))
    assert first["queueOffset"] == min(r["queueOffset"] for r in live if r["queueOffset"] >= gap)


@pytest.mark.parametrize("name", QUEUES)
def test_query_offset_is_what_a_pull_is_served(st, name):
    topic, qid = _split(name)
    for want in E["compactionQueues"][name]["getMessage"]:
        offset = want["offset"]
        if offset < 0:
            continue
        if want["status"] != "FOUND":
            with pytest.raises(QueueOffsetError, match=want["status"]):
                query_by_queue_offset(st, topic, qid, offset)
            continue
        result = query_by_queue_offset(st, topic, qid, offset)
        served = want["messages"][0]
        [m] = result.messages
        got = (m.queue_offset, m.physical_offset, m.keys, len(m.body), m.uniq_key)
        assert got == tuple(served[k] for k in ("queueOffset", "logOffset", "keys", "bodyLength", "uniqKey"))
        assert (result.min_offset, result.max_offset) == (want["minOffset"], want["maxOffset"])
        assert any("next live record" in p for p in result.problems) == (served["queueOffset"] != offset)


@pytest.mark.parametrize("name", QUEUES)
def test_query_offset_count_pages_like_a_consumer(st, name):
    topic, qid = _split(name)
    result = query_by_queue_offset(st, topic, qid, 0, count=1000)
    assert [m.queue_offset for m in result.messages] == [
        c["queueOffset"] for c in E["compactionQueues"][name]["consumed"]
    ]
    assert result.next_offset is None


def test_enable_compaction_false_serves_the_consume_queue():
    with Store.open(store_path(STORE), BrokerConfig(enableCompaction=False)) as s:
        result = query_by_queue_offset(s, "CompactTopicA", 0, 0)
        assert result.messages[0].queue_offset == 0  # the ConsumeQueue's first unit, a commitlog record
        assert cq_units(s, "CompactTopicA", 0).get("queueType") is None


def test_cli_query_offset_past_max_is_one_line(tmp_path):
    hi = E["compactionQueues"]["CompactTopicB/0"]["maxOffset"]
    run = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "query", "offset", "CompactTopicB", "0", str(hi),
         "-s", str(store_path(STORE))],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode != 0
    errors = [line for line in run.stderr.splitlines() if line.startswith("mqtool: error")]
    assert len(errors) == 1 and "OFFSET_OVERFLOW_ONE" in errors[0] and "Traceback" not in run.stderr


@pytest.mark.parametrize("topic", sorted({_split(n)[0] for n in QUEUES}))
def test_query_time_is_what_pulls_are_served(st, topic):
    """The live records a consumer pulling each queue from 0 gets (expect.json `consumed`), merged by store
    time; the superseded records the ConsumeQueue still lists are left out."""
    from mqtool.query.queue import query_by_time

    want = sorted(
        (c["storeTimestamp"], int(name.split("/")[1]), c["queueOffset"], c["uniqKey"])
        for name in QUEUES
        if name.startswith(topic + "/")
        for c in E["compactionQueues"][name]["consumed"]
    )
    result = query_by_time(st, topic, begin=0, end=2**62, max_num=None)
    got = [(m.store_timestamp, m.queue_id, m.queue_offset, m.uniq_key) for m in result.messages]
    assert got == want and "compaction topic" in result.problems[0]
    stored = sum(1 for ev in E["events"] if ev["topic"] == topic)
    assert len(got) < stored  # the ConsumeQueue's superseded records are not served
    # a window and a page: the same records, in order
    times = [w[0] for w in want]
    begin, end = times[2], times[-3]
    window = [w for w in want if begin <= w[0] <= end]
    paged = query_by_time(st, topic, begin=begin, end=end, skip=1, max_num=3)
    assert [(m.store_timestamp, m.queue_id, m.queue_offset, m.uniq_key) for m in paged.messages] == window[
        1:4
    ]
    assert paged.next_skip == 4
