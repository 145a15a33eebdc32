"""The Spark audit on a controller-mode store (tests/data/store-controller, see tests/test_controller.py):
the unconfirmed tail past the confirm offset is left out of every figure, as the broker serves none of it,
named per store, and judged as `verify` judges it (`unconfirmed`, not `undispatched`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.golden import expect, store_path

pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")

from mqtool.audit.plan import AuditOptions  # noqa: E402
from mqtool.audit.run import run_audit  # noqa: E402

NAME = "store-controller"
LONE = "store-controller-lone"


def test_audit_leaves_the_unconfirmed_tail_out(spark, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("enableControllerMode=true\n", encoding="utf-8")
    want = expect(NAME)
    events = want["events"]
    served = Counter((e["topic"], e["queueId"]) for e in events if e["confirmed"])
    tail = [e for e in events if not e["confirmed"]]
    stores = [str(store_path(NAME)), str(store_path(LONE))]
    doc = run_audit(AuditOptions(stores=stores, split_size=4096, broker_config=conf), spark=spark).document
    rows = [q for q in doc["queues"] if q["store"] == stores[0]]
    counts = {(q["topic"], q["queueId"]): q["messages"] for q in rows if q["messages"]}
    assert counts == dict(served)
    # what the real store serves after a load that dispatches nothing new (controllerAbnormal): 15 per queue
    real = want["reads"]["controllerAbnormal"]["queues"]
    real_counts = {}
    for queue, q in real.items():
        topic, queue_id = queue.split("/")
        if q["maxOffset"] > q["minOffset"]:
            real_counts[(topic, int(queue_id))] = q["maxOffset"] - q["minOffset"]
    assert counts == real_counts
    store, lone = doc["stores"]
    assert store["controller"]["confirmOffset"] == tail[0]["wroteOffset"]
    assert store["controller"]["unconfirmedMessages"] == len(tail)
    kinds = Counter(p["kind"] for p in doc["problems"] if p["store"] == stores[0])
    assert kinds["undispatched"] == 0 and kinds["unconfirmed"] >= 1, kinds
    # a lone master's checkpoint keeps confirm offset 0 while the real store serves every message: counted
    assert lone["controller"]["confirmOffset"] == 0
    lone_counts = sum(q["messages"] for q in doc["queues"] if q["store"] == stores[1])
    assert lone_counts == len(expect(LONE)["events"])
    assert not [p for p in doc["problems"] if p["store"] == stores[1] and p["kind"] == "unconfirmed"]
