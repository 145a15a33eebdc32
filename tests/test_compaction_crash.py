"""A broker killed mid-compaction (tests/data/store-compaction-crash) and the compaction after it
(tests/data/store-compaction-stale), both written by the real 5.3.3 classes: what mqtool reads, names and
repairs, against what the real restart serves (their expect.json, `tests/oracle/compaction_crash.py`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mqtool.rebuild import rebuild_compaction_cq
from mqtool.verify import verify_store
from store.storedir import Store
from tests.oracle.compaction_rebuild import cq_digest

DATA = Path(__file__).parent / "data"
BASE = DATA / "store-compaction"
CRASH = DATA / "store-compaction-crash"
STALE = DATA / "store-compaction-stale"
CRASH_EXPECT = json.loads((CRASH / "expect.json").read_text())
STALE_EXPECT = json.loads((STALE / "expect.json").read_text())


def _quiet(_message: str) -> None:
    pass


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    root = tmp_path / "crashed"
    shutil.copytree(BASE, root)
    shutil.copytree(CRASH / "overlay", root, dirs_exist_ok=True)
    return root


def _problems(root: Path, kind: str) -> list[tuple[str, int | None]]:
    with Store.open(root) as st:
        rows = verify_store(st).problems.to_pylist()
    return sorted((p["file"], p["offset"]) for p in rows if p["kind"] == kind)


def _served_units(root: Path) -> dict[str, list[int]]:
    with Store.open(root) as st:
        return {
            f"{t}/{q}": [u.queue_offset for u in st.compaction.log(t, q).units]
            for t, q in st.compaction.queues()
        }


def test_the_crash_leftovers_are_named_and_change_nothing_served(crashed: Path) -> None:
    assert CRASH_EXPECT["restartLoaded"] and CRASH_EXPECT["restartServesAsBefore"]
    leftovers = _problems(crashed, "compaction_leftover")
    assert [f for f, _ in leftovers] == [
        f"compaction/{kind}/{log.replace('_', '/')}/compacting"
        for kind in ("compactionCq", "compactionLog")
        for log in CRASH_EXPECT["compactedUntilReplace"]
    ]
    assert _served_units(crashed) == _served_units(BASE)  # the restart serves as before (the real one too)
    with Store.open(crashed) as st:
        assert not rebuild_compaction_cq(st, note=_quiet).plan.changes


def test_mqtool_reads_the_stale_units_as_the_real_restart_serves_them() -> None:
    served = _served_units(STALE)
    for name, rows in STALE_EXPECT["servedAfterRestart"].items():
        units = [u[6] for u in STALE_EXPECT["cqUnitsAfterRestart"][name] if u[7] > 0]
        assert served[name] == units
        # the consumer pulling from 0 gets them in order up to the stale unit, which may send it back
        k = next((i + 1 for i, (_, record) in enumerate(rows) if record is None), len(rows))
        assert [offset for offset, _ in rows[:k]] == units[:k]
    with Store.open(STALE) as st:
        for name, (lo, hi) in STALE_EXPECT["minMaxAfterRestart"].items():
            topic, qid = name.split("/")
            log = st.compaction.log(topic, int(qid))
            assert (log.min_offset, log.max_offset) == (lo, hi)


def test_verify_names_each_unit_whose_bytes_no_client_decodes() -> None:
    undecodable = {
        (name, offset)
        for name, rows in STALE_EXPECT["servedAfterRestart"].items()
        for offset, record_offset in rows
        if record_offset is None
    }
    assert undecodable == {("CompactTopicA/1", 35), ("CompactTopicB/0", 33)}
    with Store.open(STALE) as st:
        rows = [p for p in verify_store(st).problems.to_pylist() if p["kind"] == "compaction_unit_mismatch"]
    named = {
        (
            p["file"].split("/")[2] + "/" + p["file"].split("/")[3],
            int(p["detail"].split("queue offset ")[1].split(":")[0]),
        )
        for p in rows
    }
    assert named == undecodable
    assert all(p["severity"] == "error" for p in rows)


def test_the_rebuild_drops_the_stale_units_and_the_real_restart_serves_right_again(tmp_path: Path) -> None:
    assert STALE_EXPECT["servedAfterRebuild"] == STALE_EXPECT["servedAfterCompaction"]
    assert STALE_EXPECT["servedAfterRestart"] != STALE_EXPECT["servedAfterCompaction"]
    root = tmp_path / "stale"
    shutil.copytree(STALE, root)
    with Store.open(root) as st:
        plan = rebuild_compaction_cq(st, note=_quiet).plan
    assert not plan.refused
    warned = [w for q in plan.queues for w in q.warnings]
    assert len(warned) == 2 and all("compacting/" in w for w in warned)
    with Store.open(root) as st:
        done = rebuild_compaction_cq(st, execute=True, note=_quiet)
    assert sorted(done.written) == [
        "compactionCq/CompactTopicA/1/00000000000000000000",
        "compactionCq/CompactTopicB/0/00000000000000000000",
    ]
    assert cq_digest(root) == STALE_EXPECT["rebuiltCqDigest"]
    assert _served_units(root) == {
        name: [offset for offset, _ in rows] for name, rows in STALE_EXPECT["servedAfterCompaction"].items()
    }
    assert not _problems(root, "compaction_unit_mismatch")


def test_a_readable_unit_past_a_bad_record_still_refuses(tmp_path: Path) -> None:
    """A bad record before the end of a non-last file with a unit past it that serves a record: data after
    the damage, which a rebuild from the log would drop: refused."""
    root = tmp_path / "store"
    shutil.copytree(BASE, root)
    log = root / "compaction/compactionLog/CompactTopicA/1/00000000000000006624"
    data = bytearray(log.read_bytes())
    data[4:8] = b"\x00\x00\x00\x01"  # the first record's magic code: every record after it is unwalkable
    log.write_bytes(bytes(data))
    with Store.open(root) as st:
        (queue,) = rebuild_compaction_cq(st, note=_quiet).plan.refused
    assert "serves a record" in queue.refused
