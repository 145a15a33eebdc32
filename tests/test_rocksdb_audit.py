"""`mqtool audit` on store-rocksdb (storeType=defaultRocksDB, see tests/data/store-rocksdb/README.md): the
executors check the units the broker keeps in RocksDB against the records (same problems as `verify`, no
error), and the lag section uses the offsets the RocksDB config manager loads, not the stale JSON."""

from __future__ import annotations

import json

import pytest

from tests.golden import store_path

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")  # shares the test process's Spark session (test_audit.py)

NOW = 1_800_000_000_000


@pytest.fixture(scope="module")
def audited() -> dict:
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit
    from mqtool.audit.session.spark import start_session

    session, started = start_session("local[2]")
    try:
        opts = AuditOptions(stores=[str(store_path("store-rocksdb"))], split_size=64 << 20, now=NOW)
        return run_audit(opts, spark=session).document
    finally:
        if started:
            session.stop()


def test_units_in_rocksdb_checked_as_verify_does(audited) -> None:
    from mqtool.verify import verify_store
    from store.storedir import Store

    def key(p: dict) -> tuple:
        return (p["kind"], p["file"], p["offset"], p["severity"], p["detail"])

    with Store.open(store_path("store-rocksdb")) as st:
        want = sorted(key(p) for p in verify_store(st).problems.to_pylist())
    assert sorted(key(p) for p in audited["problems"]) == want
    assert not [p for p in audited["problems"] if p["severity"] != "info"]
    (summary,) = audited["stores"]
    assert summary["errors"] == 0


def test_lag_from_the_rocksdb_offsets(audited) -> None:
    e = json.loads((store_path("store-rocksdb") / "expect.json").read_text(encoding="utf-8"))
    queues = e["consumeQueue"]["queues"]
    rows = {(r["group"], r["topic"], r["queueId"]): r for r in audited["lag"]}
    checked = 0
    for key, offsets in e["config"]["consumerOffset"]["offsetTable"].items():
        topic, group = key.split("@")
        for qid, offset in offsets.items():
            q = queues[f"{topic}/{qid}"]
            row = rows[(group, topic, int(qid))]
            assert (row["consumerOffset"], row["minOffset"], row["maxOffset"]) == (
                offset,
                q["minOffset"],
                q["maxOffset"],
            )
            first = {u[0]: u[4] for u in q["units"]}.get(max(offset, q["minOffset"]))
            assert row["firstUnconsumedStoreTimestamp"] == first
            checked += 1
    assert checked == sum(len(v) for v in e["config"]["consumerOffset"]["offsetTable"].values())
