"""`mqtool audit` on DLedger stores (the fixtures written by the real DLedgerCommitLog): per queue counts
and the store's figures against expect.json, the problems table equal to `mqtool verify`'s (the executors
decode each data file entry by entry; the driver takes the end from DLedger's recovery)."""

from __future__ import annotations

import pytest

from tests.golden import expect, unpack_store

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")

from mqtool.audit.plan import AuditOptions  # noqa: E402
from mqtool.audit.run import run_audit  # noqa: E402

NAMES = ("store-dledger-mixed", "store-dledger-crash", "store-dledger-49")
NOW = 1_800_000_000_000


@pytest.fixture(scope="module")
def audited(spark, tmp_path_factory):
    roots = {name: unpack_store(name, tmp_path_factory.mktemp(name)) for name in NAMES}
    options = AuditOptions(stores=[str(r) for r in roots.values()], split_size=64 << 20, now=NOW)
    return roots, run_audit(options, spark=spark).document


def _rows(doc: dict, section: str, root) -> list[dict]:
    return [r for r in doc[section] if r["store"] == str(root)]


@pytest.mark.parametrize("name", NAMES)
def test_queue_counts_and_store_figures(audited, name: str) -> None:
    """Every message DLedger's recovery keeps, dispatched (the crash store's entry 98 too: the real start
    dispatches it, expect.json's consumeQueues)."""
    roots, doc = audited
    e = expect(name)
    want = {k: v["maxOffset"] - v["minOffset"] for k, v in e["consumeQueues"].items() if v["maxOffset"]}
    got = {f"{q['topic']}/{q['queueId']}": q["messages"] for q in _rows(doc, "queues", roots[name])}
    assert got == want
    (summary,) = _rows(doc, "stores", roots[name])
    assert summary["records"] == len(e["messages"])
    assert summary["recordBytes"] == sum(m["totalSize"] for m in e["messages"])
    assert summary["validEnd"] == e["afterStart"]["maxPhyOffset"]


@pytest.mark.parametrize("name", NAMES)
def test_problems_equal_verify(audited, name: str) -> None:
    from mqtool.verify import verify_store
    from store.storedir import Store

    roots, doc = audited
    key = lambda p: (p["kind"], p["file"], p["offset"], p["severity"], p["detail"])  # noqa: E731
    with Store.open(roots[name]) as st:
        want = sorted(key(p) for p in verify_store(st).problems.to_pylist())
    assert sorted(key(p) for p in _rows(doc, "problems", roots[name])) == want
