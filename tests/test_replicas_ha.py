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


@pytest.mark.parametrize("pair", ["lagging", "failover", "rejoin"])
def test_every_snapshot_opens(pair: str) -> None:
    for side in sorted(p.name for p in (PAIRS / pair).iterdir()):
        with Store.open(PAIRS / pair / side) as st:
            assert st.commitlog.files
