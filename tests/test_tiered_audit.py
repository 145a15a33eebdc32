"""The Spark audit of the store the real 5.3.3 TieredMessageStore wrote (tests/data/store-tiered) with its
tiered tree: every COMMIT_LOG segment scanned by a Spark task, the per-queue figures equal to the real
flat files' (expect.json `queues`: commit offsets, store times), the messages the broker serves from the
tiered store counted, a damaged segment named (`tiered_message`), and the tree checked as `verify --tiered`
checks it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")

from mqtool.audit.plan import AuditError, AuditOptions  # noqa: E402
from mqtool.audit.run import run_audit  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "store-tiered"
EXPECT = json.loads((FIXTURE / "expect.json").read_text())


def _audit(spark, store: Path, tree: Path | None) -> dict:
    return run_audit(AuditOptions(stores=[str(store)], tiered=tree), spark=spark).document


def test_every_segment_is_scanned_and_matches_the_real_flat_files(spark) -> None:
    doc = _audit(spark, FIXTURE / "store", FIXTURE / "tiered")
    rows = {f"{r['topic']}/{r['queueId']}": r for r in doc["tiered"]}
    assert sorted(rows) == sorted(EXPECT["queues"])
    for key, want in EXPECT["queues"].items():
        row = rows[key]
        assert row["scannedMessages"] == want["tieredCommitOffset"] - want["tieredMinOffset"], key
        assert row["scannedBytes"] == want["tieredCommitLogCommitOffset"] - want["tieredCommitLogMinOffset"]
        assert row["firstStoreTime"] == want["tieredMinStoreTimestamp"]
        assert row["lastStoreTime"] == want["tieredMaxStoreTimestamp"]
        assert (
            row["servedMessages"] == row["servedExpected"] == want["localMinOffset"] - want["tieredMinOffset"]
        )
        assert row["damagedSegments"] == 0 and "note" not in row
    kinds = {p["kind"] for p in doc["problems"]}
    assert not {k for k in kinds if k.startswith("tiered")} and "layout_unsupported" not in kinds


def test_without_the_tree_the_tiered_layout_is_named_and_no_section(spark) -> None:
    doc = _audit(spark, FIXTURE / "store", None)
    assert "tiered" not in doc
    assert any(p["kind"] == "layout_unsupported" and "tiered" in p["detail"] for p in doc["problems"])


def test_a_damaged_segment_and_a_missing_one_are_named(spark, tmp_path: Path) -> None:
    tree = tmp_path / "tiered"
    shutil.copytree(FIXTURE / "tiered", tree)
    segments = sorted(tree.glob("*/broker-a/TieredTopicB/0/COMMIT_LOG/*"))
    damaged, missing = segments[1], segments[2]
    data = bytearray(damaged.read_bytes())
    data[4:8] = b"\x00\x00\x00\x00"  # the first message's magic code
    damaged.write_bytes(bytes(data))
    missing.unlink()
    doc = _audit(spark, FIXTURE / "store", tree)
    found = [p for p in doc["problems"] if p["kind"] == "tiered_message"]
    assert [(p["file"], p["offset"]) for p in found] == [(f"tiered/{damaged.relative_to(tree)}", 0)], found
    assert any(
        p["kind"] == "tiered_segment_missing" and p["file"] == f"tiered/{missing.relative_to(tree)}"
        for p in doc["problems"]
    )
    row = next(r for r in doc["tiered"] if r["topic"] == "TieredTopicB")
    assert row["damagedSegments"] == 1
    assert row["servedMessages"] < row["servedExpected"] and "were read" in row["note"]


def test_the_tree_names_one_store() -> None:
    with pytest.raises(AuditError, match="one store"):
        run_audit(
            AuditOptions(stores=[str(FIXTURE / "store"), str(FIXTURE / "store")], tiered=FIXTURE / "tiered")
        )
