"""`mqtool offsets merge`: per queue the max (or a chosen side's) committed offset of replica stores, planned
against the target store's queues and written with every guard of `offsets reset` (dry run, store lock,
.bak, atomic write). The replicas are copies of the real-broker store tests/data/store-a whose
consumerOffset.json text the tests edit; every expected offset below is computed from that text and from
expect.json's queue max offsets (what the real ConsumeQueue read back), not from mqtool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from golden import LOCK_HOLDER as HOLDER
from golden import copy_store, expect, run_mqtool, snapshot

from formats.config.codec import decode_config
from formats.config.offsets import ConsumerOffsetTable
from mqtool.offsets.apply import apply_plan
from mqtool.offsets.merge import MergeOptionError, plan_offsets_merge
from store.liveness import BrokerRunningError
from store.storedir import Store

COPIED = ("commitlog", "consumequeue", "config", "checkpoint", "lock")
A_LINE = '"TopicTest@groupA":{0:231,1:232,2:209,3:245'
# the slave's copy: queue 0 ahead, 1 behind, 2 equal, 3 past the queue's max offset; groupB's OrderTopic
# only here; %RETRY%groupA only on the master; a topic the master does not have
B_LINE = '"TopicTest@groupA":{0:240,1:200,2:209,3:999'
B_EXTRA = '"OrderTopic@groupB":{0:7,1:3\n\t\t},\n\t\t"Ghost@groupA":{0:5\n\t\t},\n\t\t'


def _offsets(root: Path) -> ConsumerOffsetTable:
    return decode_config(ConsumerOffsetTable, (root / "config" / "consumerOffset.json").read_text())


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    a = copy_store("store-a", tmp_path / "master", parts=COPIED)
    b = copy_store("store-a", tmp_path / "slave", parts=COPIED)
    path = b / "config" / "consumerOffset.json"
    text = path.read_text()
    assert A_LINE in text and '"%RETRY%groupA@groupA":{0:1\n\t\t}' in text
    text = text.replace(A_LINE, B_LINE).replace('"OrderTopic@groupA"', B_EXTRA + '"OrderTopic@groupA"')
    text = text.replace(',\n\t\t"%RETRY%groupA@groupA":{0:1\n\t\t}', "")
    path.write_text(text)
    (b / "config" / "consumerOffset.json.bak").write_text(text)
    return a, b


def _queue_max(topic: str, queue_id: int) -> int:
    return expect("store-a")["consumeQueues"][f"{topic}/{queue_id}"]["maxOffset"]


def _by_key(plan) -> dict[tuple[str, str, int], object]:
    return {(r.reset.group, r.reset.topic, r.reset.queue_id): r for r in plan.rows}


def test_the_max_of_each_queue_clamped_to_the_targets_queue(pair) -> None:
    a, b = pair
    with Store.open(a) as sa, Store.open(b) as sb:
        plan = plan_offsets_merge([sa, sb], ["A", "B"], into=0)
    rows = _by_key(plan)
    q0, q1, q2, q3 = (rows[("groupA", "TopicTest", q)] for q in range(4))
    assert (q0.sides, q0.reset.new_offset, q0.why) == ([231, 240], 240, "max")
    assert plan.labels[q0.chosen_side] == "B"
    assert (q1.sides, q1.reset.new_offset, plan.labels[q1.chosen_side]) == ([232, 200], 232, "A")
    assert (q2.reset.new_offset, q2.why, q2.reset.changed) == (209, "same on every side", False)
    assert q3.sides == [245, 999] and q3.reset.requested_offset == 999
    assert q3.reset.new_offset == _queue_max("TopicTest", 3) and q3.reset.clamped_to == "max"
    assert any("TopicTest/3: target 999 is above the max offset" in w for w in plan.warnings)
    only_b = rows[("groupB", "OrderTopic", 0)]
    assert (only_b.sides, only_b.why, only_b.reset.current_offset, only_b.reset.new_offset) == (
        [None, 7], "only side with an offset", None, 7)  # fmt: skip
    only_a = rows[("groupA", "%RETRY%groupA", 0)]
    assert (only_a.sides, only_a.reset.changed) == ([1, None], False)
    assert ("groupA", "Ghost", 0) not in rows
    assert any("topic 'Ghost' is neither in topics.json" in w for w in plan.warnings)
    assert {r.reset.topic for r in plan.changes} == {"TopicTest", "OrderTopic"}
    assert len(plan.changes) == 4  # TopicTest/0, /3, OrderTopic@groupB 0 and 1


def test_prefer_a_side(pair) -> None:
    a, b = pair
    with Store.open(a) as sa, Store.open(b) as sb:
        plan = plan_offsets_merge([sa, sb], ["A", "B"], into=0, prefer="B", groups=["groupA"])
        with pytest.raises(MergeOptionError, match="--prefer must be max or one of"):
            plan_offsets_merge([sa, sb], ["A", "B"], prefer="C")
    rows = _by_key(plan)
    assert {g for g, _, _ in rows} == {"groupA"}
    assert rows[("groupA", "TopicTest", 1)].reset.new_offset == 200  # B's, though lower
    assert rows[("groupA", "TopicTest", 1)].why == "preferred side"
    retry = rows[("groupA", "%RETRY%groupA", 0)]  # B has none there: the max
    assert retry.reset.new_offset == 1 and retry.why.endswith("(the preferred side has none)")


def test_execute_writes_the_merged_offsets_and_keeps_bak(pair) -> None:
    a, b = pair
    before_text = (a / "config" / "consumerOffset.json").read_text()
    b_before = snapshot(b)
    with Store.open(a) as sa, Store.open(b) as sb:
        plan = plan_offsets_merge([sa, sb], ["A", "B"], into=0)
        result = apply_plan(sa, plan.reset, True, note=lambda _m: None)
    assert result.executed and result.changed == 4
    after = _offsets(a)
    assert after.get("TopicTest", "groupA") == {0: 240, 1: 232, 2: 209, 3: _queue_max("TopicTest", 3)}
    assert after.get("OrderTopic", "groupB") == {0: 7, 1: 3}
    assert after.get("%RETRY%groupA", "groupA") == {0: 1}
    assert after.get("Ghost", "groupA") is None
    assert (a / "config" / "consumerOffset.json.bak").read_text() == before_text
    assert snapshot(b) == b_before  # the other side is only read


def test_dry_run_and_a_held_lock_write_nothing(pair) -> None:
    a, b = pair
    before = snapshot(a)
    done = run_mqtool("offsets", "merge", str(a), str(b), "--into", str(a), "-f", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    row = next(r for r in rows if (r["group"], r["topic"], r["queueId"]) == ("groupA", "TopicTest", 0))
    assert row["offsets"] == {str(a): 231, str(b): 240} and row["chosenFrom"] == str(b)
    assert row["newOffset"] == 240 and row["currentOffset"] == 231 and row["why"] == "max"
    assert "Dry run: nothing was written. 4 of" in done.stderr
    assert snapshot(a) == before
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(a / "lock")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with Store.open(a) as sa, Store.open(b) as sb:
            plan = plan_offsets_merge([sa, sb], ["A", "B"], into=0)
            with pytest.raises(BrokerRunningError, match="holds the store lock"):
                apply_plan(sa, plan.reset, True, note=lambda _m: None)
        done = run_mqtool("offsets", "merge", str(a), str(b), "--into", str(a), "--execute")
        assert done.returncode == 1 and "holds the store lock" in done.stderr
    finally:
        holder.kill()
        holder.wait()
    assert snapshot(a) == before


def test_cli_errors_are_one_line(pair) -> None:
    a, b = pair
    done = run_mqtool("offsets", "merge", str(a), str(b), "--into", "/elsewhere")
    assert done.returncode == 2 and "--into /elsewhere is not one of the stores given" in done.stderr
    done = run_mqtool("offsets", "merge", str(a), "--into", str(a))
    assert done.returncode == 2 and "two or more stores" in done.stderr
    done = run_mqtool("offsets", "merge", str(a), str(b), "--into", str(a), "--prefer", "/elsewhere")
    assert done.returncode == 2 and "--prefer /elsewhere is not one of the stores given" in done.stderr
    assert "Traceback" not in done.stderr
    # the same store however it is spelled
    done = run_mqtool(
        "offsets", "merge", str(a), str(b), "--into", f"{a}/.", "--prefer", f"{b}/", "-f", "json"
    )
    assert done.returncode == 0, done.stderr
    row = next(
        r
        for r in json.loads(done.stdout)
        if (r["topic"], r["queueId"], r["group"]) == ("TopicTest", 1, "groupA")
    )
    assert (row["chosenFrom"], row["newOffset"], row["why"]) == (str(b), 200, "preferred side")


def test_execute_through_the_cli(pair) -> None:
    a, b = pair
    done = run_mqtool("offsets", "merge", str(a), str(b), "--into", str(a), "--execute")
    assert done.returncode == 0, done.stderr
    assert "Wrote " in done.stdout and "4 offsets changed" in done.stdout
    assert _offsets(a).get("TopicTest", "groupA")[0] == 240
    again = run_mqtool("offsets", "merge", str(a), str(b), "--into", str(a), "--execute")
    assert again.returncode == 0 and "Nothing to write" in again.stdout
