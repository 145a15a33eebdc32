"""`mqtool verify` on compaction topics (store-compaction, compacted by the real 5.3.3 CompactionLog): clean
as the broker left it; the start-up refusals the real load showed on damaged copies (damaged.json); the
compaction's postconditions broken on purpose."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from golden import expect, store_path

import tests.oracle.compaction_damaged as damaged
from formats.compaction import offset_map_key
from mqtool.verify import verify_store
from store.checks.compaction import ServedRecord, check_compacted_queue
from store.checks.problems import ProblemList
from store.storedir import Store

STORE = "store-compaction"
E = expect(STORE)
DAMAGED = json.loads((store_path(STORE) / "damaged.json").read_text())
POSITIONS = E["positionCheckpoint"]["queueOffsetMap"]


def _verify(root: Path):
    with Store.open(root) as s:
        report = verify_store(s)
    return report, report.problem_rows()


def _kinds(rows, prefix="compaction_"):
    return sorted({r["kind"] for r in rows if r["kind"].startswith(prefix)})


@pytest.fixture
def copy(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(store_path(STORE), root)
    return root


def test_the_fixture_is_clean():
    report, rows = _verify(store_path(STORE))
    assert report.clean and [r for r in rows if r["severity"] != "info"] == []
    summary = report.summary["compaction"]
    for name, q in E["compactionQueues"].items():
        at = POSITIONS[name.replace("/", "_")]
        keys = {offset_map_key(c["keys"]) for c in q["consumed"] if c["queueOffset"] <= at}
        assert summary["queues"][name] == {
            "compactedTo": at, "live": len(q["consumed"]), "compactedKeys": len(keys), "duplicateKeys": 0,
            "tombstones": 0,
        }  # fmt: skip


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damages_as_the_real_load_judged_them(copy, case):
    damaged.DAMAGES[case][1](copy)
    want = DAMAGED[case]
    _, rows = _verify(copy)
    kinds = _kinds(rows)
    assert ("compaction_sanity" not in kinds) == want["loaded"]
    if want["loaded"]:
        bad = [r["detail"] for r in rows if r["kind"] in ("compaction_not_served", "compaction_dir")]
        named = {q for q in E["compactionQueues"] if any(q in detail for detail in bad)}
        assert named == set(E["compactionQueues"]) - set(want["served"])
        assert all(r["severity"] != "error" for r in rows) == (named == set())


def test_checkpoint_ahead_of_the_compaction_shows_repeated_keys_and_tombstones(copy):
    path = copy / "compaction" / "position-checkpoint"
    table = json.loads(path.read_text())
    table["queueOffsetMap"]["CompactTopicA_0"] = E["compactionQueues"]["CompactTopicA/0"]["maxOffset"]
    path.write_text(json.dumps(table))
    _, rows = _verify(copy)
    consumed = E["compactionQueues"]["CompactTopicA/0"]["consumed"]
    keys = [c["keys"] for c in consumed]
    repeated = len(keys) - len(set(keys))
    assert repeated > 0
    dup = [r for r in rows if r["kind"] == "compaction_duplicate_key"]
    assert len(dup) == repeated and all("CompactTopicA/0" in r["detail"] for r in dup)
    tomb = [r for r in rows if r["kind"] == "compaction_tombstone_kept"]
    assert len(tomb) == sum(1 for c in consumed if c["bodyLength"] == 0) > 0


def test_a_unit_pointing_at_another_record(copy):
    q = E["compactionQueues"]["CompactTopicB/0"]
    units = next(v for k, v in q.items() if k.startswith("cqUnitsOnDisk"))
    first, second = units[0], units[1]
    cq = copy / "compaction" / "compactionCq" / "CompactTopicB" / "0" / first[0]
    with open(cq, "r+b") as fh:  # the first unit gets the second's phyOffset and size
        fh.seek(first[1])
        fh.write(struct.pack(">qi", second[2], second[3]))
    _, rows = _verify(copy)
    [row] = [r for r in rows if r["kind"] == "compaction_unit_mismatch"]
    assert row["offset"] == first[1] and f"QUEUEOFFSET {second[6]}" in row["detail"]


def test_a_compacting_leftover_is_a_warning(copy):
    log = copy / "compaction" / "compactionLog" / "CompactTopicA" / "1"
    (log / "compacting").mkdir()
    shutil.copyfile(log / "00000000000000000000", log / "compacting" / "00000000000000000000")
    report, rows = _verify(copy)
    assert _kinds(rows) == ["compaction_leftover"] and report.clean


def test_postconditions_on_their_own():
    def rec(offset, keys, body=10):
        return ServedRecord("f", offset * 46, offset, offset * 100, 90, offset, offset * 100, 90, keys, body)

    problems = ProblemList()
    counts = check_compacted_queue(
        "T/0", [rec(1, "a"), rec(2, "b"), rec(3, "a"), rec(4, "c", 0)], 3, problems
    )
    assert counts == {"live": 4, "compactedKeys": 2, "duplicateKeys": 1, "tombstones": 0}
    problems = ProblemList()
    check_compacted_queue("T/0", [rec(2, "a b"), rec(1, "a"), rec(3, "")], 9, problems)
    kinds = [r["kind"] for r in problems.table().to_pylist()]
    assert kinds == ["compaction_order", "compaction_no_keys"]
