"""`mqtool audit` over a fleet of stores on a real local SparkSession: a store that fails while its ranges
are scanned is reported and the others are audited as if alone; the driver's memory follows the number of
stores (their result rows), not the number of messages.
"""

from __future__ import annotations

import json
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest

from tests.golden import run_mqtool, store_path

pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")  # with the other Spark tests: one session per process

from mqtool.audit.plan import AuditOptions  # noqa: E402
from mqtool.audit.run import run_audit  # noqa: E402
from tests.test_audit import NOW  # noqa: E402

SECTIONS = ("queues", "problems", "lag", "delay", "transactions", "retry", "topics", "duplicates")


def linked_copy(src: Path, dst: Path) -> Path:
    """A store copy whose files are hard links (a fleet of 20 costs no disk), without expect.json."""
    shutil.copytree(src, dst, copy_function=os.link, ignore=shutil.ignore_patterns("expect.json"))
    return dst


def rows_of(doc: dict, store: str) -> dict[str, list]:
    return {section: [r for r in doc[section] if r["store"] == store] for section in SECTIONS}


def test_a_store_whose_file_goes_away_during_the_audit_fails_alone(spark, tmp_path, monkeypatch):
    """The broker's CleanCommitLogService deletes an expired commitlog file after the driver listed it:
    the executor cannot read its range; that store is reported, the others keep every figure."""
    import mqtool.audit.run as audit_run

    good, other = str(store_path("store-a")), str(store_path("store-c"))
    doomed = linked_copy(store_path("store-a"), tmp_path / "broker-b")
    victim = doomed / "commitlog" / "00000000000001048576"  # the middle file: planning reads the others
    listed = audit_run.open_stores

    def open_then_delete(opts):
        plans, failures = listed(opts)
        victim.unlink()
        return plans, failures

    monkeypatch.setattr(audit_run, "open_stores", open_then_delete)
    stores = [good, str(doomed), other]
    doc = run_audit(AuditOptions(stores=stores, split_size=64 << 20, now=NOW), spark=spark).document
    monkeypatch.undo()

    [failed] = doc["failedStores"]
    assert failed["store"] == str(doomed)
    assert str(victim.resolve()) in failed["error"] and "No such file or directory" in failed["error"]
    assert [(p["store"], p["kind"], p["severity"]) for p in doc["problems"] if p["kind"] == "store"] == [
        (str(doomed), "store", "error")
    ]
    # nothing of the failed store's partial figures is left in the result
    assert [s["store"] for s in doc["stores"]] == [good, other]
    assert all(not rows for section, rows in rows_of(doc, str(doomed)).items() if section != "problems")
    assert not [n for n in doc.get("notes", []) if n.startswith(f"{doomed}: ")]
    # and the others are audited exactly as without it
    alone = run_audit(AuditOptions(stores=[good, other], split_size=64 << 20, now=NOW), spark=spark).document
    for store in (good, other):
        assert rows_of(doc, store) == rows_of(alone, store), store


def test_the_cli_reports_failed_stores_and_exits_3(spark, tmp_path):
    """A fleet with a directory that is not a store and one that does not exist: the others are in the
    JSON and the report, the failures on stderr, exit status 3: a store could not be read (in process, on
    the test's session)."""
    from typer.testing import CliRunner

    from mqtool.cli import app

    junk = tmp_path / "not-a-store"
    junk.mkdir()
    (junk / "README").write_text("backup notes")
    good, gone, out = str(store_path("store-a")), str(tmp_path / "gone"), tmp_path / "out"
    args = ["audit", good, str(junk), gone, "--format", "json", "--output", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    assert [s["store"] for s in doc["stores"]] == [good]
    assert [f["store"] for f in doc["failedStores"]] == [str(junk), gone]
    assert result.stderr.count("mqtool: error: store not audited:") == 2
    report = (out / "report.html").read_text()
    assert str(junk) in report and "not a RocketMQ store" in report


def _peak(opts: AuditOptions, spark) -> tuple[int, dict]:
    """Peak bytes the driver allocated (Python objects and numpy arrays) during one audit."""
    tracemalloc.start()
    try:
        doc = run_audit(opts, spark=spark).document
        return tracemalloc.get_traced_memory()[1], doc
    finally:
        tracemalloc.stop()


def test_driver_memory_follows_the_stores_not_their_messages(spark, tmp_path):
    """Executors return partial aggregates (per queue, time bucket, size class, hash bucket), never message
    rows, and the driver handles the stores one after another, so its peak grows with the result's rows.
    What does grow with messages is `txn list`'s read of one store's half and op messages (the
    transactions section, as the command prints it): 10x the messages cost 3-5x, not 10x."""
    small, big = tmp_path / "small", tmp_path / "big"
    for path, messages in ((small, 2_000), (big, 20_000)):
        made = run_mqtool("sample", "create", str(path), "-n", str(messages), "-f", "json")
        assert made.returncode == 0, made.stderr
    fleet = [str(linked_copy(small, tmp_path / f"broker-{i:02d}")) for i in range(20)]

    run_audit(AuditOptions(stores=[str(small)], now=NOW), spark=spark)  # first audit: imports, caches
    peak_small, doc_small = _peak(AuditOptions(stores=[str(small)], now=NOW), spark)
    peak_big, doc_big = _peak(AuditOptions(stores=[str(big)], now=NOW), spark)
    peak_fleet, doc_fleet = _peak(AuditOptions(stores=fleet, now=NOW), spark)

    messages_small = doc_small["stores"][0]["messages"]
    assert doc_big["stores"][0]["messages"] >= 9 * messages_small
    assert sum(s["messages"] for s in doc_fleet["stores"]) == 20 * messages_small
    # 20 stores: less than 20 single audits (per store only its result rows stay)
    assert peak_fleet < 20 * peak_small, (peak_small, peak_fleet)
    # 10x the messages: under 10x the memory (3-5x measured: txn list's read of the transaction topics)
    assert peak_big < 10 * peak_small, (peak_small, peak_big)
