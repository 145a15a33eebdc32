"""`dump compactionlog` and `CompactionLog.next_compaction` against tests/data/store-compaction (records the
real 5.3.3 CompactionLog wrote) and next-compaction.json (what its next `doCompaction` kept,
`tests/oracle/compaction_next.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from formats.errors import MqtoolError
from mqtool.compaction import compaction_log_records
from store.storedir import Store

FIXTURE = Path(__file__).parent / "data" / "store-compaction"
EXPECT = json.loads((FIXTURE / "expect.json").read_text())
NEXT = json.loads((FIXTURE / "next-compaction.json").read_text())
QUEUES = sorted(EXPECT["compactionQueues"])


@pytest.fixture(scope="module")
def store():
    with Store.open(FIXTURE) as s:
        yield s


def _records(store, name: str) -> tuple[dict, list[dict]]:
    topic, qid = name.split("/")
    doc = compaction_log_records(store, topic, int(qid))
    return doc, list(doc.pop("records"))


@pytest.mark.parametrize("name", QUEUES)
def test_every_served_record_is_listed_as_the_broker_reads_it(store, name: str) -> None:
    doc, rows = _records(store, name)
    want = EXPECT["compactionQueues"][name]
    assert (doc["minOffset"], doc["maxOffset"]) == (want["minOffset"], want["maxOffset"])
    messages = [r for r in rows if r["kind"] == "message"]
    served = [r for r in messages if r["served"]]
    assert [
        (r["queueOffset"], r["physicalOffset"], r["keys"], r["bodyLength"], r["uniqKey"]) for r in served
    ] == [
        (m["recordQueueOffset"], m["recordPhysicalOffset"], m["keys"], m["bodyLength"], m["uniqKey"])
        for m in want["consumed"]
    ]
    assert all(r["tombstone"] == (r["bodyLength"] == 0) for r in messages)
    # each file's walk ends with its BLANK record or its zeros, as the file list says
    ends = [(r["file"], r["kind"]) for r in rows if r["kind"] != "message"]
    assert [f for f, _ in ends] == [f for f, _, _ in want["logFiles[name,fileSize,wrotePosition]"]]


@pytest.mark.parametrize("name", QUEUES)
def test_the_next_compaction_keeps_what_the_real_one_kept(store, name: str) -> None:
    doc, rows = _records(store, name)
    run = next(c for c in NEXT["compactions"] if c["log"] == name.replace("/", "_"))
    ran = run["filesBefore"] != run["filesAfter"]
    assert (doc["nextCompactionMapEnd"] is not None) == ran
    if ran:
        assert doc["nextCompactionMapEnd"] == run["positionAfter"]
    kept = [
        r["queueOffset"]
        for r in rows
        if r["kind"] == "message" and r["served"] and r["nextCompaction"] != "drop"
    ]
    assert kept == NEXT["consumed"][name]
    touched = {r["file"] for r in rows if r["kind"] == "message" and r["nextCompaction"] is not None}
    assert touched == (set(run["filesBefore"][:-1]) if ran else set())


def test_from_offset_count_and_bodies(store) -> None:
    doc = compaction_log_records(store, "CompactTopicA", 1, from_offset=30, count=3, with_body=True)
    rows = [r for r in doc["records"] if r["kind"] == "message"]
    assert [r["queueOffset"] for r in rows] == [30, 31, 32]
    assert all("body" in r for r in rows)


def test_a_queue_without_a_compaction_log_is_named(store) -> None:
    with pytest.raises(MqtoolError, match="'PlainTopic' has no compaction log for queue 0"):
        compaction_log_records(store, "PlainTopic", 0)


def test_the_cli_lists_the_records() -> None:
    cli = [
        sys.executable,
        "-m",
        "mqtool.cli",
        "dump",
        "compactionlog",
        "CompactTopicB",
        "0",
        "--store",
        str(FIXTURE),
    ]
    out = subprocess.run([*cli, "--format", "jsonl"], capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["queueOffset"] for r in rows if r["kind"] == "message" and r["served"]] == [
        m["recordQueueOffset"] for m in EXPECT["compactionQueues"]["CompactTopicB/0"]["consumed"]
    ]
    plain = subprocess.run([*cli, "--format", "plain"], capture_output=True, text=True, check=True)
    assert "nextCompaction" in plain.stdout or "next compaction" in plain.stdout


def test_the_audit_compaction_section_is_the_summary(spark, tmp_path: Path) -> None:
    """The audit's compaction table (a driver section) is `compaction_summary` per queue, and its
    reclaimable records are the records `dump compactionlog` marks drop."""
    import pyarrow.parquet as pq

    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit
    from mqtool.compaction import compaction_summary

    out = tmp_path / "out"
    doc = run_audit(AuditOptions(stores=[str(FIXTURE)], output=out), spark=spark).document
    with Store.open(FIXTURE) as st:
        want = [{"store": str(FIXTURE)} | row for row in compaction_summary(st)]
        drops = {
            name: sum(1 for r in _records(st, name)[1] if r.get("nextCompaction") == "drop")
            for name in QUEUES
        }
    assert doc["compaction"] == want
    assert {f"{r['topic']}/{r['queueId']}": r["reclaimableRecords"] for r in doc["compaction"]} == drops
    assert sum(drops.values()) > 0
    for row in doc["compaction"]:
        name = f"{row['topic']}/{row['queueId']}"
        assert row["records"] == len(EXPECT["compactionQueues"][name]["consumed"])
        assert row["tombstones"] == sum(
            m["bodyLength"] == 0 for m in EXPECT["compactionQueues"][name]["consumed"]
        )
    assert pq.read_table(out / "compaction.parquet").to_pylist() == doc["compaction"]
    assert "Compaction topics (5.x)" in (out / "report.html").read_text(encoding="utf-8")
