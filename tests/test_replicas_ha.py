"""`mqtool replicas diff`, `verify` and `replicas salvage` on pairs the real classic HA of 5.3.3 made
(tests/data/ha-pairs: a lagging slave, a failover where the slave took over and wrote more, and the old
master rejoined as a slave). Every expected value comes from the fixture's expect.json (the puts the real
store acknowledged, the offsets the real HA and recovery reached), never from mqtool's answer."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from mqtool.replicas.diff import diff_replicas
from mqtool.verify import verify_store
from store.storedir import Store

PAIRS = Path(__file__).parent / "data" / "ha-pairs"
EXPECT = json.loads((PAIRS / "expect.json").read_text())
EVENTS = EXPECT["events"]
SYNCED = EXPECT["lagging"]["syncedOffset"]
OLD_END = EXPECT["failover"]["maxPhyOffset"]["old"]
NEW_END = EXPECT["failover"]["maxPhyOffset"]["new"]


def _topics(store: str, lo: int, hi: int | None = None) -> dict[str, int]:
    return dict(
        Counter(
            e["topic"]
            for e in EVENTS
            if e["store"] == store and e["physicalOffset"] >= lo and (hi is None or e["physicalOffset"] < hi)
        )
    )


def _diff(a: str, b: str):
    with Store.open(PAIRS / a) as sa, Store.open(PAIRS / b) as sb:
        return diff_replicas(sa, sb)


def test_the_lagging_slave_is_a_prefix_and_catches_up() -> None:
    result = _diff("lagging/master", "lagging/slave")
    log = result.log
    assert log.max_offsets == (EXPECT["lagging"]["maxPhyOffset"]["master"], SYNCED)
    assert (log.first_difference, log.ahead) == (None, "A")
    assert log.past_prefix == (_topics("a", SYNCED), {})
    verdict = {v.master: v.outcome for v in result.ha}
    assert verdict["A"] == "catch-up"


def test_the_failover_pair_diverges_where_the_slave_stopped_receiving() -> None:
    result = _diff("failover/new", "failover/old")
    log = result.log
    assert log.max_offsets == (NEW_END, OLD_END)
    assert log.record_start == SYNCED
    assert log.past_prefix == (_topics("b", SYNCED, NEW_END), _topics("a", SYNCED))
    ra, rb = log.records
    first_b = next(e for e in EVENTS if e["store"] == "b")
    first_a_past = next(e for e in EVENTS if e["store"] == "a" and e["physicalOffset"] >= SYNCED)
    assert (ra.physical_offset, ra.uniq_key) == (SYNCED, first_b["uniqKey"])
    assert (rb.physical_offset, rb.uniq_key) == (SYNCED, first_a_past["uniqKey"])


def test_the_ha_verdict_is_what_the_real_rejoin_did() -> None:
    """With the new master as master, mqtool says the old one keeps its tail and gets the master's bytes
    from its own end on; the real rejoin: its end went from OLD_END to the new master's end."""
    verdict = next(v for v in _diff("failover/new", "failover/old").ha if v.master == "A")
    assert verdict.outcome == "diverged" and not verdict.truncates and not verdict.refuses
    assert f"keeps [{SYNCED}, {OLD_END})" in verdict.text
    assert f"nothing at {OLD_END} and ships its bytes from there" in verdict.text
    rejoin = EXPECT["rejoin"]
    assert rejoin["oldEndBefore"] == OLD_END
    assert rejoin["oldEndAfter"] == rejoin["newEnd"] > OLD_END
    # the bytes the old master received are the new master's, at the same offsets
    size = EXPECT["mappedFileSizeCommitLog"]

    def span(root: Path, lo: int, hi: int) -> bytes:
        out = b""
        for pos in range(lo, hi):
            name = root / "commitlog" / f"{pos // size * size:020d}"
            with name.open("rb") as fh:
                fh.seek(pos % size)
                out += fh.read(1)
        return out

    got = span(PAIRS / "rejoin/old", OLD_END, rejoin["newEnd"])
    assert got == span(PAIRS / "rejoin/new", OLD_END, rejoin["newEnd"])


def test_verify_names_the_shipped_bytes_the_real_recovery_drops() -> None:
    load = EXPECT["rejoinOldLoad"]["commitlog"]
    assert (load["truncatedAt"], load["truncatedBytes"]) == (OLD_END, EXPECT["rejoin"]["newEnd"] - OLD_END)
    with Store.open(PAIRS / "rejoin/old") as st:
        rows = verify_store(st).problems.to_pylist()
    (torn,) = [p for p in rows if p["kind"] == "truncated_tail"]
    assert f"at phy {OLD_END}" in torn["detail"]
    (info,) = [p for p in rows if p["kind"] == "recovery"]
    assert f"ends the commitlog at phy {load['maxPhyOffsetAfter']}" in info["detail"]
    assert f"drops the {load['truncatedBytes']} bytes" in info["detail"]


def test_salvage_puts_the_dead_masters_tail_into_the_new_master(tmp_path: Path) -> None:
    from mqtool.replicas.salvage import plan_salvage

    new = tmp_path / "new"
    shutil.copytree(PAIRS / "failover/new", new)
    # the broker's topic config (the fixture's stores have none: salvage refuses without one), from the real
    # store-a, whose TopicTest and OrderTopic have the 4 and 2 queues the puts used
    (new / "config").mkdir()
    shutil.copy(Path(__file__).parent / "data" / "store-a" / "config" / "topics.json", new / "config")
    with Store.open(new) as into, Store.open(PAIRS / "failover/old") as source:
        plan = plan_salvage(into, source)
    lost = [e for e in EVENTS if e["store"] == "a" and e["physicalOffset"] >= SYNCED]
    assert [r.message.uniq_key for r in plan.to_copy] == [e["uniqKey"] for e in lost]
    assert plan.prefix_end == SYNCED


def _served(events: list[dict]) -> dict[tuple[str, int], list[int]]:
    """Per queue, the [min, max) queue offsets a store holding exactly these puts serves."""
    out: dict[tuple[str, int], list[int]] = {}
    for e in events:
        out.setdefault((e["topic"], e["queueId"]), []).append(e["queueOffset"])
    return {k: [min(v), max(v) + 1] for k, v in out.items()}


def _queue_rows(result) -> dict[tuple[str, int], tuple]:
    def rng(side):
        return None if side is None else [side["minOffset"], side["maxOffset"]]

    return {(r.topic, r.queue_id): (r.state, rng(r.a), rng(r.b), r.ahead) for r in result.queues.rows}


def test_the_consume_queues_of_the_lagging_slave_end_where_its_synced_log_does() -> None:
    """The slave's own reput built its queues from the shipped bytes: each ends at the last put wholly
    below the synced offset; every queue that differs is named with both ranges."""
    master = _served([e for e in EVENTS if e["store"] == "a"])
    slave = _served([e for e in EVENTS if e["store"] == "a" and e["physicalOffset"] + e["size"] <= SYNCED])
    expected = {q: ("differs", master[q], slave[q], "A") for q in slave if master[q] != slave[q]}
    expected.update({q: ("only-A", master[q], None, None) for q in master if q not in slave})
    result = _diff("lagging/master", "lagging/slave")
    assert _queue_rows(result) == expected and expected
    assert result.queues.compared == len(master)
    da, db = result.queues.dispatch
    master_end = EXPECT["lagging"]["maxPhyOffset"]["master"]
    assert (da["consumeQueueEnd"], db["consumeQueueEnd"]) == (master_end, SYNCED)


def test_the_failover_pair_serves_each_side_its_own_queue_ends() -> None:
    new = _served(
        [e for e in EVENTS if (e["store"], e["physicalOffset"] < SYNCED) == ("a", True)]
        + [e for e in EVENTS if e["store"] == "b" and e["physicalOffset"] < NEW_END]  # the rest came later
    )
    old = _served([e for e in EVENTS if e["store"] == "a"])
    rows = _queue_rows(_diff("failover/new", "failover/old"))
    expected = {}
    for q in sorted(set(new) | set(old)):
        if new.get(q) != old.get(q):
            state = "only-A" if q not in old else "only-B" if q not in new else "differs"
            ahead = None if state != "differs" else "A" if new[q][1] > old[q][1] else "B"
            expected[q] = (state, new.get(q), old.get(q), ahead)
    assert rows == expected and expected


def test_a_topic_deleted_on_the_master_leaves_its_queues_on_the_slave(tmp_path: Path) -> None:
    """apache/rocketmq #8539/#7264: deleteTopic on the master removes its queues there, not on the slave."""
    master = tmp_path / "master"
    shutil.copytree(PAIRS / "rejoin/new", master)
    shutil.rmtree(master / "consumequeue" / "TopicTest")
    result = _diff_paths(master, PAIRS / "rejoin/old")
    rows = _queue_rows(result)
    only_b = {q for q, row in rows.items() if row[0] == "only-B"}
    assert only_b == {q for q in _served(EVENTS) if q[0] == "TopicTest"}
    assert not result.identical


def _diff_paths(a: Path, b: Path):
    with Store.open(a) as sa, Store.open(b) as sb:
        return diff_replicas(sa, sb)


@pytest.mark.parametrize("pair", ["lagging", "failover", "rejoin"])
def test_every_snapshot_opens(pair: str) -> None:
    for side in sorted(p.name for p in (PAIRS / pair).iterdir()):
        with Store.open(PAIRS / pair / side) as st:
            assert st.commitlog.files
