"""`mqtool replicas salvage`: the messages only one replica holds, appended to the other.

The pair is built from copies of the real-broker store tests/data/store-a, as test_replicas_diff does: the
old master keeps the whole log; the slave that took over had received the bytes before a record boundary
(`_cut`) and then wrote messages of its own (`_append`: mqtool's append path, whose records `make
oracle-check` has the real broker load). What salvage must copy is computed from expect.json (the real
code's read-back of every record), never from mqtool's answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from golden import expect, snapshot
from test_replicas_diff import B_TAIL, MESSAGES, _append, _copy, _cut

from formats.errors import MqtoolError
from formats.names import is_system_topic
from mqtool.rebuild import rebuild
from mqtool.replicas.salvage import SalvageRefused, plan_salvage, salvage
from store.config.brokerconf import load_broker_config
from store.storedir import Store

EXPECT = expect("store-a")
CUT_AT = -60  # the 60 newest records never reached the slave


@pytest.fixture
def failover(tmp_path: Path) -> tuple[Path, Path, int]:
    """(the dead master, the slave that took over and wrote more, the offset the slave had received)."""
    old, new = _copy(tmp_path, "old-master"), _copy(tmp_path, "new-master")
    cut = MESSAGES[CUT_AT]["physicalOffset"]
    _cut(new, cut)
    with Store.open(new) as st:  # its queues and index as its own dispatch built them (the copy had more)
        rebuild(st, "all", execute=True, note=lambda _m: None)
    _append(new, B_TAIL)
    return old, new, cut


def _expected(cut: int) -> list[dict]:
    """The dead master's messages a producer sent, past the cut (expect.json's read-back)."""
    return [
        m
        for m in MESSAGES
        if m["physicalOffset"] >= cut
        and not is_system_topic(m["topic"])
        and m["sysFlag"] & 0x0C not in (0x04, 0x0C)  # PREPARED, ROLLBACK
    ]


def test_the_plan_copies_the_dead_masters_tail(failover) -> None:
    old, new, cut = failover
    with Store.open(new) as into, Store.open(old) as source:
        plan = plan_salvage(into, source)
    assert plan.prefix_end == cut
    past = [m for m in MESSAGES if m["physicalOffset"] >= cut]
    assert [r.message.physical_offset for r in plan.rows] == [m["physicalOffset"] for m in past]
    want = {m["physicalOffset"] for m in _expected(cut)}
    assert {r.message.physical_offset for r in plan.rows if r.action == "copy"} == want
    skipped = {r.message.topic for r in plan.rows if r.action == "skip"}
    assert skipped and all(is_system_topic(t) for t in skipped)
    assert not [r for r in plan.rows if r.action == "refuse"]


def test_execute_appends_them_once_and_a_second_run_copies_nothing(failover) -> None:
    old, new, cut = failover
    before = snapshot(old)
    with Store.open(new) as into, Store.open(old) as source:
        done = salvage(into, source, execute=True, note=lambda _m: None)
    assert done.executed and len(done.to_copy) == len(_expected(cut))
    assert snapshot(old) == before  # the source is only read
    with Store.open(new) as into:
        for row in done.to_copy:
            w = row.written
            got = into.commitlog.read_message_at(w.physical_offset)
            m = row.message
            assert (got.topic, got.queue_id, got.body, got.uniq_key, got.keys) == (
                m.topic, m.queue_id, m.body, m.uniq_key, m.keys,
            )  # fmt: skip
            assert (got.born_timestamp, got.born_host) == (m.born_timestamp, m.born_host)
            assert got.store_host == into.commitlog.read_message_at(0).store_host  # the new master's own
            unit = into.consume_queue(m.topic, m.queue_id).unit(w.queue_offset)
            assert (unit.phy_offset, unit.size) == (w.physical_offset, w.total_size)
    with Store.open(new) as into, Store.open(old) as source:
        again = plan_salvage(into, source)
    assert not again.to_copy
    assert {
        r.reason
        for r in again.rows
        if r.message.physical_offset in {x.message.physical_offset for x in done.to_copy}
    } == {"--into already holds its UNIQ_KEY"}


def test_refused_into_a_slave_and_across_brokers(failover, tmp_path: Path) -> None:
    old, new, _ = failover
    slave = tmp_path / "slave.conf"
    slave.write_text("brokerName=broker-a\nbrokerId=1\nbrokerRole=SLAVE\n")
    other = tmp_path / "other.conf"
    other.write_text("brokerName=broker-b\n")
    master = tmp_path / "master.conf"
    master.write_text("brokerName=broker-a\nbrokerId=0\n")
    with (
        Store.open(new, load_broker_config(slave)) as into,
        Store.open(old) as source,
        pytest.raises(SalvageRefused, match="slave"),
    ):
        salvage(into, source, execute=True)
    with (
        Store.open(new, load_broker_config(master)) as into,
        Store.open(old, load_broker_config(other)) as src,
        pytest.raises(SalvageRefused, match="different brokers"),
    ):
        plan_salvage(into, src)


def test_a_queue_the_target_lacks_is_refused_per_message(failover) -> None:
    old, new, cut = failover
    topics = new / "config" / "topics.json"
    doc = json.loads(topics.read_text())
    doc["topicConfigTable"]["OrderTopic"]["writeQueueNums"] = 1
    topics.write_text(json.dumps(doc))
    with Store.open(new) as into, Store.open(old) as source:
        plan = plan_salvage(into, source)
    refused = {r.message.physical_offset for r in plan.rows if r.action == "refuse"}
    want = {m["physicalOffset"] for m in _expected(cut) if m["topic"] == "OrderTopic" and m["queueId"] >= 1}
    assert refused == want and want


def test_nothing_to_salvage_from_a_lagging_slave(tmp_path: Path) -> None:
    master, slave = _copy(tmp_path, "master"), _copy(tmp_path, "slave")
    _cut(slave, MESSAGES[CUT_AT]["physicalOffset"])
    with Store.open(master) as into, Store.open(slave) as source:
        plan = plan_salvage(into, source)
    assert not plan.rows and "nothing to salvage" in plan.notes[0]


def test_refused_while_the_target_broker_runs(failover) -> None:
    from golden import LOCK_HOLDER

    old, new, _ = failover
    before = snapshot(new)
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(new / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with Store.open(new) as into, Store.open(old) as source, pytest.raises(MqtoolError, match="lock"):
            salvage(into, source, execute=True, note=lambda _m: None)
    finally:
        holder.stdin.close()
        holder.wait()
    assert snapshot(new) == before


def test_the_cli_plan(failover) -> None:
    old, new, cut = failover
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mqtool.cli",
            "replicas",
            "salvage",
            "--from",
            str(old),
            "--into",
            str(new),
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert (doc["executed"], doc["commonPrefixEnd"], doc["counts"]["copy"]) == (
        False,
        cut,
        len(_expected(cut)),
    )
