"""Orphan consume queues (`store.checks.orphans`): verify names them, `rebuild --prune-orphans` removes them.

tests/data/orphans/expect.json holds what the real 5.3.3 broker's cleanUnusedTopic left on golden stores
whose topic config was edited as tests/orphan_mutations.py says (recorded by tests/oracle/orphans_cases.py):
a pruned rebuild must leave exactly the topics it left, and (beyond the broker, which never removes them)
no queue past its topic's counts.
"""

from __future__ import annotations

import json

import pytest
from golden import GOLDEN, copy_store, run_main, snapshot
from orphan_mutations import MUTATIONS

from mqtool.rebuild import RebuildRefused, rebuild
from mqtool.verify import verify_store
from store.storedir import Store

CASES = json.loads((GOLDEN / "orphans" / "expect.json").read_text(encoding="utf-8"))["cases"]


def _mutated(case: dict, tmp_path):
    root = copy_store(case["store"], tmp_path / "s")
    if case["mutation"] != "clean":
        MUTATIONS[case["mutation"]](root)
    return root


def _topic_counts(root) -> dict[str, int]:
    doc = json.loads((root / "config" / "topics.json").read_text(encoding="utf-8"))["topicConfigTable"]
    return {t: max(c["readQueueNums"], c["writeQueueNums"]) for t, c in doc.items()}


def _queues(root) -> dict[str, list[int]]:
    base = root / "consumequeue"
    return {t.name: sorted(int(q.name) for q in t.iterdir()) for t in sorted(base.iterdir())}


def _case_id(c: dict) -> str:
    return f"{c['store']}-{c['mutation']}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_verify_names_what_the_broker_cleans(case, tmp_path):
    root = _mutated(case, tmp_path)
    before = _queues(root)
    with Store.open(root) as store:
        report = verify_store(store)
    rows = [r for r in report.problem_rows() if r["kind"] in ("orphan_topic", "orphan_queue")]
    named = {r["file"].split("/")[1] for r in rows if r["kind"] == "orphan_topic"}
    assert named == set(before) - set(case["consumeQueues"])  # the topics the broker's clean deleted
    counts = _topic_counts(root)
    past = {
        f"consumequeue/{t}/{q}" for t, ids in before.items() if t in counts for q in ids if q >= counts[t]
    }
    assert {r["file"] for r in rows if r["kind"] == "orphan_queue"} == past
    assert all(r["severity"] == "warning" for r in rows)
    assert report.clean  # orphans are no error: the broker loads and runs with them


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_pruned_rebuild_leaves_what_the_broker_leaves(case, tmp_path):
    root = _mutated(case, tmp_path)
    counts = _topic_counts(root)

    def kept(rel: str) -> bool:
        topic, queue_id = rel.split("/")[0], int(rel.split("/")[1])
        return topic in case["consumeQueues"] and queue_id < counts.get(topic, 1 << 30)

    untouched = {k: v for k, v in snapshot(root / "consumequeue").items() if kept(k)}
    with Store.open(root) as store:
        report = rebuild(store, "cq", execute=True, prune_orphans=True, note=lambda _m: None)
    expected = {
        t: [q for q in ids if t not in counts or q < counts[t]] for t, ids in case["consumeQueues"].items()
    }
    assert _queues(root) == {t: ids for t, ids in expected.items() if ids}
    after = snapshot(root / "consumequeue")
    assert {k: after[k] for k in untouched} == untouched  # the queues kept are byte-identical
    pruned = {(q.topic, q.queue_id) for q in report.queues if q.status == "pruned"}
    assert pruned == {(o.topic, o.queue_id) for o in report.orphans}
    assert report.executed == bool(pruned)
    with Store.open(root) as store:
        again = verify_store(store)
    assert again.clean
    assert not [r for r in again.problem_rows() if r["kind"] in ("orphan_topic", "orphan_queue")]
    gone = {r["detail"].split(":")[0] for r in again.problem_rows() if r["kind"] == "deleted_topic"}
    assert gone == {f"{t}/{q}" for t, q in pruned}  # their records stay in the commitlog, named


def test_dry_run_writes_nothing_and_plans_the_prune(tmp_path, capsys):
    root = _mutated({"store": "store-a", "mutation": "topic-shrunk"}, tmp_path)
    before = snapshot(root)
    code, out, err = run_main(["-s", str(root), "-f", "json", "rebuild", "cq", "--prune-orphans"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    statuses = {(q["topic"], q["queueId"]): q["status"] for q in doc["consumeQueues"]["queues"]}
    assert {k for k, s in statuses.items() if s == "pruned"} == {
        ("OrderTopic", 0),
        ("OrderTopic", 1),
        ("TopicTest", 2),
        ("TopicTest", 3),
    }
    assert [o["reason"] for o in doc["consumeQueues"]["orphans"]].count("queue-out-of-range") == 2
    assert snapshot(root) == before


def test_without_the_flag_orphans_are_rebuilt_and_named(tmp_path):
    root = _mutated({"store": "store-a", "mutation": "topic-deleted"}, tmp_path)
    with Store.open(root) as store:
        report = rebuild(store, "cq", prune_orphans=False, note=lambda _m: None)
    assert {q.status for q in report.queues} == {"same"}
    assert [o.topic for o in report.orphans] == ["OrderTopic", "OrderTopic"]
    assert any("--prune-orphans" in w for w in report.warnings)


def test_refused_without_a_topic_config_or_for_the_index(tmp_path, capsys):
    root = copy_store("store-a", tmp_path / "s")
    for name in ("topics.json", "topics.json.bak"):
        (root / "config" / name).unlink(missing_ok=True)
    code, _, err = run_main(["-s", str(root), "rebuild", "cq", "--prune-orphans"], capsys)
    assert code == 1 and "topics.json" in err and "nothing is pruned" in err
    with Store.open(root) as store, pytest.raises(RebuildRefused, match="rebuild cq or all"):
        rebuild(store, "index", prune_orphans=True)


def test_verify_lists_the_offset_rows_offsets_prune_removes(tmp_path, capsys):
    root = _mutated({"store": "store-a", "mutation": "topic-shrunk"}, tmp_path)
    with Store.open(root) as store:
        rows = [r for r in verify_store(store).problem_rows() if r["kind"] == "orphan_offsets"]
    code, out, err = run_main(["-s", str(root), "-f", "json", "offsets", "prune"], capsys)
    assert code == 0, err
    planned = json.loads(out)
    assert planned  # groupA's OrderTopic rows, both groups' TopicTest queues 2 and 3
    listed = sum(int(r["detail"].split(" ")[0]) for r in rows)
    assert listed == len(planned)
    assert {(p["group"], p["topic"]) for p in planned} == {
        (r["detail"].split("'")[1], r["detail"].split("'")[3]) for r in rows
    }


@pytest.mark.xdist_group("spark")
def test_audit_reports_the_orphans_verify_reports(spark, tmp_path):
    """The audit's rows equal verify's on a store with orphans and on the same store once pruned (the
    pruned queues' records: deleted_topic infos, no cq_missing_unit error, whatever the split)."""
    pytest.importorskip("pyspark")
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit

    orphaned = _mutated({"store": "store-a", "mutation": "topic-shrunk"}, tmp_path / "a")
    pruned = _mutated({"store": "store-a", "mutation": "topic-shrunk"}, tmp_path / "b")
    with Store.open(pruned) as store:
        rebuild(store, "cq", execute=True, prune_orphans=True, note=lambda _m: None)
    stores = [str(orphaned), str(pruned)]
    doc = run_audit(AuditOptions(stores=stores, split_size=300_007), spark=spark).document
    for root in stores:
        with Store.open(root) as st:
            want = sorted(_key(p) for p in verify_store(st).problems.to_pylist())
        got = sorted(_key(p) for p in doc["problems"] if p["store"] == root)
        assert got == want
        assert {k[0] for k in want} & {"orphan_topic", "orphan_offsets", "deleted_topic"}


def _key(p: dict) -> tuple:
    return (p["kind"], p["file"], p["offset"], p["severity"], p["detail"])
