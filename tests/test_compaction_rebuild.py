"""`rebuild compaction-cq` against tests/data/store-compaction, whose CQ files the real 5.3.3 CompactionLog
wrote (dispatch and two compactions, tests/oracle `compaction-store`): the rebuild from the compaction logs
must give those files byte for byte, repair named damages back to them, and refuse what it cannot follow.
rebuilt.json holds the real classes' reading of each repaired damage (`tests/oracle/compaction_rebuild.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from formats.errors import MqtoolError
from mqtool.rebuild import rebuild_compaction_cq
from store.storedir import Store
from tests.golden import LOCK_HOLDER
from tests.oracle.compaction_rebuild import CQ, DAMAGES, LOG, cq_digest

FIXTURE = Path(__file__).parent / "data" / "store-compaction"
REBUILT = json.loads((FIXTURE / "rebuilt.json").read_text())


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    return root


def _files(root: Path) -> dict[str, bytes]:
    base = root / CQ
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _quiet(_message: str) -> None:
    pass


def test_the_rebuild_gives_every_real_cq_file_byte_for_byte() -> None:
    with Store.open(FIXTURE) as st:
        report = rebuild_compaction_cq(st, note=_quiet)
    plan = report.plan
    assert (plan.cq_file_size, plan.cq_file_size_source) == (552, "current files")
    names = {f"{q.topic}/{q.queue_id}/{f.name}": f.status for q in plan.queues for f in q.files}
    assert names and set(names) == set(_files(FIXTURE))
    assert set(names.values()) == {"same"}
    assert not plan.changes and not plan.refused and not plan.warnings
    # both ends of a file: the end unit of a BLANK, none after the compaction's zero-filled end
    ends = {f.end_unit for q in plan.queues for f in q.files}
    assert ends == {True, False}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_cq_is_rebuilt_to_what_the_broker_wrote(damage: str, tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = _files(root)
    DAMAGES[damage][1](root)
    damaged = _files(root)
    assert damaged != before
    with Store.open(root, DAMAGES[damage][2]) as st:
        plan = rebuild_compaction_cq(st, note=_quiet)
        assert plan.plan.changes and not plan.written
    assert _files(root) == damaged  # the dry run writes nothing
    with Store.open(root, DAMAGES[damage][2]) as st:
        done = rebuild_compaction_cq(st, execute=True, note=_quiet)
    assert done.written
    assert _files(root) == before
    # what the real classes served after mqtool's rebuild of this damage (rebuilt.json) is what they serve
    # on the undamaged fixture, and it was these very bytes
    judged = REBUILT["damages"][damage]
    assert not judged["damaged"]["served"]  # the damage mattered to the real broker: not served as before
    assert judged["cqDigest"] == cq_digest(root)
    assert judged["loaded"] and judged["servedAsUndamaged"]
    with Store.open(root) as st:
        assert not rebuild_compaction_cq(st, note=_quiet).plan.changes


def test_the_removed_files_are_named_in_the_plan(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    DAMAGES["cq-extra-file"][1](root)
    DAMAGES["cq-delete-leftover"][1](root)
    with Store.open(root) as st:
        doc = rebuild_compaction_cq(st, note=_quiet).to_json()
    removed = sorted(
        (q["topic"], q["queueId"], f["file"])
        for q in doc["queues"]
        for f in q["files"]
        if f["status"] == "removed"
    )
    assert removed == [
        ("CompactTopicA", 0, "00000000000000013248"),
        ("CompactTopicB", 0, "00000000000000000000.delete"),
    ]


def test_a_corrupt_record_before_the_tail_refuses_and_writes_nothing(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    log = root / LOG / "CompactTopicA" / "1" / "00000000000000000000"
    data = bytearray(log.read_bytes())
    data[4:8] = b"\x00\x00\x00\x01"  # the first record's magic code
    log.write_bytes(bytes(data))
    os.remove(root / CQ / "CompactTopicA" / "1" / "00000000000000006624")
    before = _files(root)
    with Store.open(root) as st:
        report = rebuild_compaction_cq(st, note=_quiet)
        (queue,) = report.plan.refused
        assert (queue.topic, queue.queue_id) == ("CompactTopicA", 1)
        assert "00000000000000000000" in queue.refused and "damaged" in queue.refused
        with pytest.raises(MqtoolError, match="nothing rebuilt"):
            rebuild_compaction_cq(st, execute=True, note=_quiet)
    assert _files(root) == before


def test_a_torn_tail_of_the_last_log_file_is_left_out(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    log = root / LOG / "CompactTopicA" / "0" / "00000000000000009936"
    cq = root / CQ / "CompactTopicA" / "0" / "00000000000000009936"
    with Store.open(root) as st:
        last = st.compaction.log("CompactTopicA", 0).units[-1].unit
    data = bytearray(log.read_bytes())
    pos = last.phy_offset - 9936
    # its BODYCRC: the check fails
    data[pos + 8 : pos + 12] = bytes(b ^ 0xFF for b in data[pos + 8 : pos + 12])
    log.write_bytes(bytes(data))
    with Store.open(root) as st:
        report = rebuild_compaction_cq(st, note=_quiet)
    (queue,) = [q for q in report.plan.queues if (q.topic, q.queue_id) == ("CompactTopicA", 0)]
    assert queue.refused is None
    assert any(f"at {pos}" in w for w in queue.warnings)
    (diff,) = [f for f in queue.files if f.name == "00000000000000009936"]
    assert (diff.status, diff.first_difference) == ("differs", diff.units * 46)
    assert diff.data == cq.read_bytes()[: diff.units * 46]


def test_without_cq_files_the_size_comes_from_the_broker_config(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    shutil.rmtree(root / CQ)
    with Store.open(root) as st:  # the default 10 MiB CQ files cannot pair with 3312-byte log files
        report = rebuild_compaction_cq(st, note=_quiet)
    assert report.plan.cq_file_size_source == "broker default"
    assert len(report.plan.refused) == 3
    assert all("compactionCqMappedFileSize" in q.refused for q in report.plan.refused)
    conf = DAMAGES["cq-dir-missing-all"][2]
    with Store.open(root, conf) as st:
        done = rebuild_compaction_cq(st, execute=True, note=_quiet)
    assert done.plan.cq_file_size_source == "broker config"
    assert _files(root) == _files(FIXTURE)


def test_refused_while_a_broker_holds_the_lock(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    DAMAGES["cq-file-missing"][1](root)
    before = _files(root)
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with Store.open(root) as st, pytest.raises(MqtoolError, match="holds the store lock"):
            rebuild_compaction_cq(st, execute=True, note=_quiet)
    finally:
        holder.stdin.close()
        holder.wait()
    assert _files(root) == before


def test_the_cli_plan_and_execute(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    DAMAGES["cq-unit-zeroed"][1](root)
    cli = [sys.executable, "-m", "mqtool.cli", "rebuild", "compaction-cq", "--store", str(root)]
    dry = subprocess.run([*cli, "--format", "json"], capture_output=True, text=True, check=True)
    doc = json.loads(dry.stdout)
    (changed,) = [
        (q["topic"], q["queueId"], f["file"], f["firstDifference"], f["firstDifferenceQueueOffset"])
        for q in doc["queues"]
        for f in q["files"]
        if f["status"] != "same"
    ]
    assert changed == ("CompactTopicA", 0, "00000000000000000000", 2 * 46, changed[4])
    assert changed[4] is not None and changed[4] >= 0
    assert (doc["executed"], doc["changes"]) == (False, True)
    done = subprocess.run([*cli, "--execute", "--format", "json"], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["written"] == ["compactionCq/CompactTopicA/0/00000000000000000000"]
    assert _files(root) == _files(FIXTURE)


def test_a_store_without_compaction_refuses(tmp_path: Path) -> None:
    with (
        Store.open(Path(__file__).parent / "data" / "store-a") as st,
        pytest.raises(MqtoolError, match="no compaction log"),
    ):
        rebuild_compaction_cq(st, note=_quiet)
