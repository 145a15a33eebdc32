"""Offsets on BatchCQ topics (store-batchcq, written by the real 5.3.3 store): every planner and reader of a
queue's min/max offset or by-time search takes the queue of the topic's type (`Store.queue`) and answers
what the real BatchConsumeQueue and DefaultMessageStore answered (expect.json): `offsets reset` to the
earliest, latest and a time (LOWER and UPPER), `--execute`, `offsets show` after it, the audit's lag."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from golden import copy_store, expect, store_path
from golden import run_mqtool as mqtool

from formats.errors import MqtoolError
from mqtool.audit.sections.driver_sections import _lag_rows
from mqtool.offsets.plan import reset_target
from mqtool.offsets.progress import consumer_progress
from mqtool.offsets.reset import plan_offsets_reset, plan_reset
from store.storedir import Store

STORE = "store-batchcq"
QUEUES = expect(STORE)["batchConsumeQueues"]
TOPICS = sorted({q["topic"] for q in QUEUES.values()})


def _field(q: dict, prefix: str):
    return next(v for k, v in q.items() if k.startswith(prefix))


def _holding(q: dict, offset: int) -> list:
    """The real unit whose batch holds queue offset `offset`."""
    return next(u for u in _field(q, "units[") if u[4] <= offset < u[4] + u[5])


@pytest.fixture(scope="module")
def st():
    with Store.open(store_path(STORE)) as s:
        yield s


@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize(("target", "field"), [("to_latest", "maxOffset"), ("to_earliest", "minOffset")])
def test_reset_to_latest_and_earliest_plans_the_real_max_and_min(st, topic, target, field) -> None:
    plan = plan_offsets_reset(st, group="g", topics=[topic], allow_new_group=True, **{target: True})
    mine = [q for q in QUEUES.values() if q["topic"] == topic]
    want = {q["queueId"]: (q[field], q["minOffset"], q["maxOffset"]) for q in mine}
    assert {r.queue_id: (r.new_offset, r.min_offset, r.max_offset) for r in plan.rows} == want
    assert all(q["maxOffset"] > 0 for q in mine)


@pytest.mark.parametrize("key", sorted(QUEUES))
@pytest.mark.parametrize("boundary", ["lower", "upper"])
def test_reset_to_time_plans_the_real_stores_answer(st, key, boundary) -> None:
    """`DefaultMessageStore.getOffsetInQueueByTime(topic, queueId, t, boundary)` at every probe time."""
    q = QUEUES[key]
    probes = _field(q, "byTime[")
    assert len({row[3] for row in probes}) > 2  # the answers vary across the queue
    for ts, _cq_lower, _cq_upper, store_lower, store_upper in probes:
        target = reset_target(to_time=ts, boundary=boundary)
        plan = plan_reset(st, "g", [q["topic"]], target, queues=[q["queueId"]], allow_new_group=True)
        (row,) = plan.rows
        assert row.new_offset == (store_lower if boundary == "lower" else store_upper), ts
        if row.new_offset < q["maxOffset"]:
            assert row.new_offset_store_timestamp == _holding(q, row.new_offset)[3], ts
        else:
            assert row.new_offset_store_timestamp is None


def test_a_49_time_search_on_a_batchcq_topic_is_refused(st) -> None:
    with pytest.raises(MqtoolError, match="4.9.x broker has no such queue"):
        plan_offsets_reset(
            st, group="g", topics=["BatchTopicA"], to_time=1, broker_version=4, allow_new_group=True
        )


def test_execute_to_latest_writes_the_real_max_and_offsets_show_agrees(tmp_path: Path) -> None:
    """With {0: 100, 1: 50} committed, `--to-latest --execute` writes the queues' real max offsets (it
    wrote {0: 0, 1: 0} when the planner read BatchCQ queues as empty ConsumeQueues)."""
    root = copy_store(STORE, tmp_path / "s")
    plan = tmp_path / "plan.csv"
    plan.write_text("group,topic,queue,offset\ng,BatchTopicA,0,100\ng,BatchTopicA,1,50\n")
    args = ("offsets", "reset", "-s", str(root), "--allow-new-group")
    assert mqtool(*args, "--from-file", str(plan), "--execute").returncode == 0
    proc = mqtool(*args, "--group", "g", "--topic", "BatchTopicA", "--to-latest", "--execute", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    real_max = {q["queueId"]: q["maxOffset"] for q in QUEUES.values() if q["topic"] == "BatchTopicA"}
    assert {r["queueId"]: (r["currentOffset"], r["newOffset"]) for r in json.loads(proc.stdout)} == {
        0: (100, real_max[0]),
        1: (50, real_max[1]),
    }
    shown = mqtool("offsets", "show", "-s", str(root), "--group", "g", "-f", "json")
    rows = {r["queueId"]: r for r in json.loads(shown.stdout)}
    assert {q: (r["consumerOffset"], r["maxOffset"], r["lag"]) for q, r in rows.items()} == {
        q: (m, m, 0) for q, m in real_max.items()
    }


def test_offsets_show_and_the_audits_lag_read_the_batch_queues(tmp_path: Path) -> None:
    root = copy_store(STORE, tmp_path / "s")
    (root / "config/consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"BatchTopicB@grp":{0:5\n\t\t}\n\t}\n}'
    )
    q = QUEUES["BatchTopicB/0"]
    with Store.open(root) as s:
        (row,) = consumer_progress(s, group="grp").rows
        lag, _notes = _lag_rows(SimpleNamespace(store=s, label="s"), 0, lambda: None)
    assert (row.min_offset, row.max_offset, row.lag) == (q["minOffset"], q["maxOffset"], q["maxOffset"] - 5)
    assert row.newest_timestamp == _holding(q, q["maxOffset"] - 1)[3]
    (audit,) = lag
    assert audit["firstUnconsumedStoreTimestamp"] == _holding(q, 5)[3]
