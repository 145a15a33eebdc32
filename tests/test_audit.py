"""`mqtool audit` on a real local SparkSession (one for the whole test session, local[2]).

The audit's figures are checked against expect.json (what the real Java code reads back) and against the
single-process commands (`info`, `verify`, `offsets show`): per topic/queue counts, the pending delay and
transaction sets, lag per group/queue, the problems table; the figures must not depend on how the store
is split; injected faults are reported at the right file and offset.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from tests.golden import STORES, expect, store_path

pyspark = pytest.importorskip("pyspark")

# one Spark session per test process: with pytest-xdist run as `-n 2 --dist loadgroup` all of these share it
pytestmark = pytest.mark.xdist_group("spark")

from formats.errors import MqtoolError  # noqa: E402
from mqtool.audit.assemble import group_of  # noqa: E402
from mqtool.audit.duplicates import fnv1a64, hash_strings, key_hash  # noqa: E402
from mqtool.audit.plan import AuditError, AuditOptions, auto_split_size, choose_bucket, plan_splits  # noqa: E402
from mqtool.audit.run import run_audit  # noqa: E402
from mqtool.exitstatus import StoreUnreadableError  # noqa: E402

UNITS = "units[queueOffset,phyOffset,size,tagsCode]"
NOW = 1_800_000_000_000  # delay "due" and lag ages are judged at this time

# --- the audits the tests share (their session: `spark` in conftest.py) ----------------------------


@pytest.fixture(scope="module")
def golden(spark) -> dict:
    """The three golden stores in one run, one range per commitlog file."""
    stores = [str(store_path(s)) for s in STORES]
    return run_audit(AuditOptions(stores=stores, split_size=64 << 20, now=NOW), spark=spark).document


@pytest.fixture(scope="module")
def golden_tiny(spark) -> dict:
    """The same stores cut into ~350 KB ranges that start mid-record (several per commitlog file)."""
    stores = [str(store_path(s)) for s in STORES]
    return run_audit(AuditOptions(stores=stores, split_size=350_001, now=NOW), spark=spark).document


def _rows(doc: dict, section: str, store: str) -> list[dict]:
    return [r for r in doc[section] if r["store"] == str(store_path(store))]


# --- golden stores against expect.json and the single-process commands -------------------------------


@pytest.mark.parametrize("name", STORES)
def test_queue_counts_match_expect(golden, name):
    """messages (dispatchable records up to the truncation point) = expect.json's max - min per queue."""
    want = {k: v["maxOffset"] - v["minOffset"] for k, v in expect(name)["consumeQueues"].items()}
    got = {f"{q['topic']}/{q['queueId']}": q["messages"] for q in _rows(golden, "queues", name)}
    assert got == want
    first = {f"{q['topic']}/{q['queueId']}": q["minQueueOffset"] for q in _rows(golden, "queues", name)}
    assert {k: first[k] for k, n in want.items() if n} == {
        k: v["minOffset"] for k, v in expect(name)["consumeQueues"].items() if k in want and want[k]
    }


@pytest.mark.parametrize("name", STORES)
def test_queues_agree_with_info(golden, name):
    """The ConsumeQueue columns are what `mqtool info` reports; store totals are the record counts."""
    from mqtool.info import queues_info
    from store.storedir import Store

    with Store.open(store_path(name)) as st:
        info = {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in queues_info(st)}
    got = {
        (q["topic"], q["queueId"]): (q["cqMinOffset"], q["cqMaxOffset"])
        for q in _rows(golden, "queues", name)
    }
    assert got == info
    (summary,) = _rows(golden, "stores", name)
    messages = [m for m in expect(name)["messages"] if m["kind"] == "MESSAGE"]
    assert summary["records"] == len(messages)
    assert summary["recordBytes"] == sum(m["totalSize"] for m in messages)
    assert summary["firstStoreTimestamp"] == min(m["storeTimestamp"] for m in messages)
    assert summary["lastStoreTimestamp"] == max(m["storeTimestamp"] for m in messages)
    by_topic: dict[str, int] = {}
    for m in messages:
        by_topic[m["topic"]] = by_topic.get(m["topic"], 0) + m["totalSize"]
    assert {t["topic"]: t["bytes"] for t in _rows(golden, "topics", name)} == by_topic


def _problem_key(p: dict) -> tuple:
    return (p["kind"], p["file"], p["offset"], p["severity"], p["detail"])


@pytest.mark.parametrize("name", STORES)
def test_problems_equal_verify(golden, name):
    """The audit runs the verify checks: same rows as `mqtool verify` (store-c: its torn tail)."""
    from mqtool.verify import verify_store
    from store.storedir import Store

    with Store.open(store_path(name)) as st:
        want = sorted(_problem_key(p) for p in verify_store(st).problems.to_pylist())
    assert sorted(_problem_key(p) for p in _rows(golden, "problems", name)) == want
    (summary,) = _rows(golden, "stores", name)
    if name == "store-c":
        torn = expect(name)["asWritten"]["tornRecordOffset"]
        assert summary["validEnd"] == torn == expect(name)["maxPhyOffset"]
        errors = [p for p in _rows(golden, "problems", name) if p["severity"] == "error"]
        assert [(p["kind"], p["file"], p["offset"]) for p in errors] == [
            ("truncated_tail", "commitlog/00000000000004194304", torn - 4194304)
        ]
    else:
        assert summary["validEnd"] == expect(name)["maxPhyOffset"]
        assert summary["errors"] == 0


@pytest.mark.parametrize("name", STORES)
def test_delay_pending_sets_match_expect(golden, name):
    e = expect(name)
    progress = {int(k): v for k, v in e["scheduleOffsetTable"].items()}
    want = {}
    for key, cq in e["consumeQueues"].items():
        topic, qid = key.rsplit("/", 1)
        if topic == "SCHEDULE_TOPIC_XXXX":
            level = int(qid) + 1
            start = min(max(progress.get(level, 0), cq["minOffset"]), cq["maxOffset"])
            want[level] = (start, cq["maxOffset"])
    got = {r["level"]: tuple(r["pendingQueueOffsets"]) for r in _rows(golden, "delay", name)}
    assert {k: v for k, v in got.items() if k in want} == want
    assert all(r["backlog"] == r["maxOffset"] - r["startOffset"] for r in _rows(golden, "delay", name))


@pytest.mark.parametrize("name", ["store-a", "store-49a"])
def test_transaction_sets_match_expect(golden, name):
    e = expect(name)
    committed = {x["halfQueueOffset"] for x in e["events"] if x.get("event") == "commit"}
    rolled = {x["halfQueueOffset"] for x in e["events"] if x.get("event") == "rollback"}
    half = e["consumeQueues"]["RMQ_SYS_TRANS_HALF_TOPIC/0"]
    pending = set(range(half["minOffset"], half["maxOffset"])) - committed - rolled
    rows = _rows(golden, "transactions", name)
    by_state = {
        s: {r["halfQueueOffset"] for r in rows if r["state"] == s} for s in ("committed", "rolled-back")
    }
    by_state["pending"] = {r["halfQueueOffset"] for r in rows if r["state"] == "pending"}
    assert by_state == {"committed": committed, "rolled-back": rolled, "pending": pending}
    assert len(committed) == len(rolled) == len(pending) == 4


@pytest.mark.parametrize("name", STORES)
def test_lag_matches_consumer_offsets(golden, name):
    """lag = max offset - committed offset, with the store time of the first unconsumed message.

    The max offset is the ConsumeQueue's as written (as `offsets show` reports it); expect.json's is after
    the broker's recovery, which in store-c dispatches the records the crash left undispatched.
    """
    from store.storedir import Store

    e = expect(name)
    with Store.open(store_path(name)) as st:
        table = st.config("consumerOffset.json").load().model.offset_table
    times = {m["physicalOffset"]: m["storeTimestamp"] for m in e["messages"] if m["kind"] == "MESSAGE"}
    rows = {(r["group"], r["topic"], r["queueId"]): r for r in _rows(golden, "lag", name)}
    undispatched = {
        f"{q['topic']}/{q['queueId']}": q["messages"] - q["cqMessages"] for q in _rows(golden, "queues", name)
    }
    assert sum(undispatched.values()) == (2 if name == "store-c" else 0)
    checked = 0
    for key, offsets in table.items():
        topic, group = key.split("@")
        for qid, offset in offsets.items():
            cq = e["consumeQueues"].get(f"{topic}/{qid}")
            if cq is None:
                continue
            row = rows[(group, topic, qid)]
            max_offset = cq["maxOffset"] - undispatched[f"{topic}/{qid}"]
            assert (row["consumerOffset"], row["maxOffset"]) == (offset, max_offset)
            assert row["lag"] == max_offset - offset
            units = {u[0]: u[1] for u in cq[UNITS]}
            if offset < max_offset and max(offset, cq["minOffset"]) in units:
                assert row["firstUnconsumedStoreTimestamp"] == times[units[max(offset, cq["minOffset"])]]
            else:
                assert row["firstUnconsumedStoreTimestamp"] is None
            checked += 1
    assert checked >= 10


def test_retry_and_duplicates_on_golden(golden):
    retry = {(r["group"], r["kind"]): r for r in _rows(golden, "retry", "store-a")}
    assert retry[("groupA", "retry")]["reconsumeTimes"] == {"3": 1}
    assert retry[("groupA", "dlq")]["reconsumeTimes"] == {"16": 1}
    pop = {r["group"]: r for r in _rows(golden, "retry", "store-c")}["popGroupC"]
    assert pop["topic"] == "%RETRY%popGroupC_RetentionTopic" and pop["messages"] == 2
    dups = {d["by"]: d for d in _rows(golden, "duplicates", "store-a")}
    shared = [m for m in expect("store-a")["messages"] if "shared-key" in (m.get("keys") or "").split(" ")]
    top = dups["key"]["top"][0]
    assert (top["topic"], top["key"]) == ("TopicTest", "shared-key")
    assert top["messages"] == sum(1 for m in shared if m["topic"] == "TopicTest")
    # store-c: a batch's members all carry the batch's UNIQ_KEY (README), so they show as duplicates
    batch = {d["by"]: d for d in _rows(golden, "duplicates", "store-c")}["uniqKey"]
    uniq = [m["uniqKey"] for m in expect("store-c")["messages"] if m["kind"] == "MESSAGE" and m["uniqKey"]]
    per_topic: dict[tuple[str, str], int] = {}
    for m in expect("store-c")["messages"]:
        if m["kind"] == "MESSAGE" and m["uniqKey"]:
            per_topic[(m["topic"], m["uniqKey"])] = per_topic.get((m["topic"], m["uniqKey"]), 0) + 1
    repeated = {k: n for k, n in per_topic.items() if n > 1}
    assert uniq and batch["groups"] == len(repeated)
    assert {(t["topic"], t["key"]): t["messages"] for t in batch["top"]} == repeated


def test_split_invariance(golden, golden_tiny):
    """~350 KB ranges starting mid-record give exactly the figures of whole-file ranges."""
    assert golden_tiny["scan"]["splits"] >= 2 * golden["scan"]["splits"]
    for section in (
        "queues",
        "problems",
        "topics",
        "rates",
        "bodySizes",
        "retry",
        "duplicates",
        "lag",
        "delay",
    ):
        assert golden_tiny[section] == golden[section], section
    drop = {"splits"}
    assert [{k: v for k, v in s.items() if k not in drop} for s in golden_tiny["stores"]] == [
        {k: v for k, v in s.items() if k not in drop} for s in golden["stores"]
    ]


# --- a generated store, and injected faults ----------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    from mqtool.sample.create import create_sample
    from mqtool.sample.options import SampleOptions

    root = tmp_path_factory.mktemp("audit") / "sample"
    create_sample(SampleOptions(root, messages=3000, file_size=256 * 1024))
    return root


def _corrupt(tmp: Path) -> tuple[Path, Path, Path, dict]:
    """Three copies of store-a: a flipped body byte, a ConsumeQueue unit's size changed, and a record in
    the first file zeroed (zeros where a record should start, with data after them)."""
    e = expect("store-a")
    crc_store, cq_store, zero_store = tmp / "crc", tmp / "cq", tmp / "zero"
    for target in (crc_store, cq_store, zero_store):
        shutil.copytree(store_path("store-a"), target)
    gap = next(m for m in e["messages"] if m["kind"] == "MESSAGE" and m["physicalOffset"] > 500_000)
    with open(zero_store / "commitlog" / f"{0:020d}", "r+b") as fh:
        fh.seek(gap["physicalOffset"])
        fh.write(bytes(gap["totalSize"]))
    victim = next(
        m
        for m in e["messages"]
        if m["kind"] == "MESSAGE"
        and m["physicalOffset"] > 1_300_000
        and m["bodyLength"] > 50
        and m["sysFlag"] & 0x30 == 0  # IPv4 hosts: the body starts 88 bytes into the record
    )
    name = f"{victim['physicalOffset'] // 1048576 * 1048576:020d}"
    pos = victim["physicalOffset"] % 1048576
    with open(crc_store / "commitlog" / name, "r+b") as fh:
        fh.seek(pos + 88 + 7)
        b = fh.read(1)
        fh.seek(pos + 88 + 7)
        fh.write(bytes([b[0] ^ 0x5A]))
    units = e["consumeQueues"]["TopicTest/1"][UNITS]
    unit_index = 123
    cq_file = sorted((cq_store / "consumequeue" / "TopicTest" / "1").iterdir())[0]
    with open(cq_file, "r+b") as fh:
        fh.seek(unit_index * 20 + 8)
        fh.write((units[unit_index][2] + 1).to_bytes(4, "big"))
    where = {
        "crc": (f"commitlog/{name}", pos, victim["physicalOffset"]),
        "cq": (f"consumequeue/TopicTest/1/{cq_file.name}", unit_index * 20),
        "zero": (f"commitlog/{0:020d}", gap["physicalOffset"]),
    }
    return crc_store, cq_store, zero_store, where


def test_generated_and_corrupted_stores(spark, generated, tmp_path):
    """Counts on a generated store equal `info`; faults injected in copies of store-a are reported at
    their file and offset, as `verify` reports them, whatever the split."""
    from mqtool.info import queues_info
    from mqtool.verify import verify_store
    from store.storedir import Store

    crc_store, cq_store, zero_store, where = _corrupt(tmp_path)
    stores = [str(generated), str(crc_store), str(cq_store), str(zero_store)]
    doc = run_audit(AuditOptions(stores=stores, split_size=300_007), spark=spark).document
    for root in stores:
        with Store.open(root) as st:
            want = sorted(_problem_key(p) for p in verify_store(st).problems.to_pylist())
            info = {(q["topic"], q["queueId"]): q["messages"] for q in queues_info(st)}
        got = [p for p in doc["problems"] if p["store"] == root]
        assert sorted(_problem_key(p) for p in got) == want, root
        if root == str(generated):
            assert not [p for p in got if p["severity"] != "info"]
            counts = {(q["topic"], q["queueId"]): q["messages"] for q in doc["queues"] if q["store"] == root}
            assert counts == info
    crc_errors = [
        p
        for p in doc["problems"]
        if p["store"] == str(crc_store) and p["severity"] == "error" and p["file"].startswith("commitlog/")
    ]
    file, pos, phy = where["crc"]
    assert (crc_errors[0]["file"], crc_errors[0]["offset"]) == (file, pos)
    assert crc_errors[0]["kind"] in ("crc_mismatch", "size_chain")
    (summary,) = [s for s in doc["stores"] if s["store"] == str(crc_store)]
    assert summary["validEnd"] == phy
    assert summary["records"] == sum(
        1 for m in expect("store-a")["messages"] if m["kind"] == "MESSAGE" and m["physicalOffset"] < phy
    )
    cq_errors = [p for p in doc["problems"] if p["store"] == str(cq_store) and p["severity"] == "error"]
    assert [(p["kind"], p["file"], p["offset"]) for p in cq_errors] == [("cq_size_mismatch", *where["cq"])]
    zero = [p for p in doc["problems"] if p["store"] == str(zero_store) and p["kind"] == "premature_end"]
    assert [(p["file"], p["offset"]) for p in zero] == [where["zero"]]
    (summary,) = [s for s in doc["stores"] if s["store"] == str(zero_store)]
    assert (summary["validEnd"], summary["end"]) == (where["zero"][1], "end")


# --- output directory and the command line ---------------------------------------------------------


def test_every_format_is_honoured_or_refused(spark, capsys):
    """The audit's side of tests/test_output_formats.py: csv is refused in one line before Spark runs (the
    audit prints several tables), every other format is honoured."""
    from mqtool.render import FORMATS
    from tests.golden import run_main

    store = str(store_path("store-a"))
    outputs = {}
    for fmt in FORMATS:
        code, out, err = run_main(["audit", store, "--format", fmt, "--top", "1"], capsys)
        if fmt == "csv":
            assert (code, out) == (2, ""), err
            assert err.startswith("mqtool: error: --format csv: `mqtool audit` prints several tables")
            continue
        assert code == 0, (fmt, err)
        outputs[fmt] = out
    assert json.loads(outputs["json"])["queues"]
    assert json.loads(outputs["jsonl"].strip())["queues"]
    assert "-[ RECORD 1 ]" in outputs["record"] and "| " in outputs["markdown"]
    assert len(set(outputs.values())) == len(outputs)


def test_cli_json_and_output(spark, tmp_path):
    """`mqtool audit --format json --output DIR` in process (reusing the active session)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from mqtool.cli import app

    out = tmp_path / "out"
    store = str(store_path("store-a"))
    result = CliRunner().invoke(app, ["audit", store, "--format", "json", "--output", str(out), "--top", "3"])
    assert result.exit_code == 0, result.output
    # the command ran on the process's session (started in a helper thread, it must still find it), so
    # it neither stopped that session nor ended its JVM
    assert spark.range(3).count() == 3
    doc = json.loads(result.stdout)
    for key in ("queues", "problems", "lag", "delay", "transactions", "duplicates", "retry"):
        assert key in doc
    assert set(doc["queues"][0]) >= {
        "store",
        "topic",
        "queueId",
        "messages",
        "bytes",
        "firstStoreTimestamp",
        "lastStoreTimestamp",
    }
    assert set(doc["lag"][0]) >= {"group", "topic", "queueId", "consumerOffset", "maxOffset", "lag"}
    assert [p for p in doc["problems"] if p["severity"] != "info"] == []
    assert all(len(d["top"]) <= 3 for d in doc["duplicates"])
    messages = ds.dataset(out / "messages").to_table()
    assert messages.num_rows == 2651
    assert "body" not in messages.schema.names
    assert sorted(messages.column("physicalOffset").to_pylist()) == [
        m["physicalOffset"] for m in expect("store-a")["messages"] if m["kind"] == "MESSAGE"
    ]
    assert pq.read_table(out / "queues.parquet").num_rows == len(doc["queues"])
    assert pq.read_table(out / "lag.parquet").num_rows == len(doc["lag"])
    assert pq.read_table(out / "problems.parquet").num_rows == len(doc["problems"])
    report = (out / "report.html").read_text()
    assert report.count("<svg") >= 4
    assert "<script" not in report and "http://" not in report and "https://" not in report
    assert json.loads((out / "audit.json").read_text())["queues"] == doc["queues"]
    # a directory that holds something else is refused with one line
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    refused = CliRunner().invoke(app, ["audit", store, "--output", str(other)])
    assert refused.exit_code != 0


# --- pieces without Spark --------------------------------------------------------------------------


def test_hash_strings_is_fnv1a():
    values = ["", "a", "order-1 user2", "é中", "x" * 70]
    assert hash_strings(pa.array(values)).tolist() == [fnv1a64(v.encode()) for v in values]
    seeds = np.array([fnv1a64(b"T\x00"), fnv1a64(b"U\x00")], dtype=np.uint64)
    got = hash_strings(pa.array(["k1", "k2"]), seeds).view(np.int64).tolist()
    assert got == [key_hash("T", "k1"), key_hash("U", "k2")]


def test_plan_and_buckets():
    from mqtool.audit.plan import CommitLogFile, StorePlan

    f = CommitLogFile(Path("x"), "0", 0, 1_000_000)
    plan = StorePlan(0, "s", Path("."), [f], store=None)  # type: ignore[arg-type]
    splits = plan_splits([plan], 300_000)
    assert [(s.start, s.end) for s in splits] == [
        (0, 250_000),
        (250_000, 500_000),
        (500_000, 750_000),
        (750_000, 1_000_000),
    ]
    assert auto_split_size(10 << 30, 2) == 128 << 20
    assert auto_split_size(3 << 20, 8) == 4 << 20
    assert choose_bucket((0, 60_000)) == 500
    assert choose_bucket((0, 350)) == 2  # a store written in a third of a second: 175 buckets, not one
    assert choose_bucket((0, 86_400_000)) == 600_000
    assert group_of("%RETRY%popGroupC_RetentionTopic", {"popGroupC", "groupA"}) == ("popGroupC", "retry")
    assert group_of("%DLQ%groupA", {"groupA"}) == ("groupA", "dlq")


def test_duplicate_merge_equals_direct_count():
    """Per-split hash arrays, bucketed and merged as the Spark job does, give the exact direct counts."""
    from mqtool.audit.duplicates import _dup_row, merge_duplicates
    from mqtool.audit.schema import DUP_KEY, PARTIAL_SCHEMA, SplitTask

    rng = np.random.default_rng(7)
    keys = rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64)
    picks = rng.integers(0, len(keys), 3000)
    hashes, phys = keys[picks], np.arange(3000, dtype=np.int64) * 100
    rows = []
    for seq, (lo, hi) in enumerate(((0, 1000), (1000, 2200), (2200, 3000))):
        task = SplitTask(seq, 0, "", "", 0, 0, 0, 1000, False, 0, 0, None, "s")
        rows.append(_dup_row(task, DUP_KEY, hashes[lo:hi].view(np.uint64), phys[lo:hi]))
    table = pa.Table.from_batches(rows, schema=PARTIAL_SCHEMA)
    merged = []
    for bucket in sorted(set(table.column("key").to_pylist())):
        part = table.filter(pa.compute.equal(table.column("key"), bucket))
        merged.append(merge_duplicates(5, part))
    got = pa.concat_tables(merged).to_pylist()
    uniq, counts = np.unique(hashes, return_counts=True)
    want_groups = int((counts > 1).sum())
    totals = {r["bucket"]: (r["groups"], r["groupMessages"]) for r in got}
    assert sum(g for g, _ in totals.values()) == want_groups
    assert sum(m for _, m in totals.values()) == int(counts[counts > 1].sum())
    for r in got:
        assert r["messages"] == int(counts[uniq == r["h"]][0])
        assert r["firstPhyOffset"] == int(phys[hashes == r["h"]].min())
        assert r["lastPhyOffset"] == int(phys[hashes == r["h"]].max())


def test_deep_equals_verify_deep(spark, tmp_path):
    """--deep: each range's executor judges its records' keys against the reachable entries the driver
    read once; the rows equal `verify --deep`, the counted ones (not_indexed, index_behind) summed over
    the ranges into one."""
    from mqtool.verify import verify_store
    from store.storedir import Store

    unreachable, no_first, no_last = tmp_path / "unreachable", tmp_path / "no-first", tmp_path / "no-last"
    for target in (unreachable, no_first, no_last):
        shutil.copytree(store_path("store-a"), target)
    first, last = sorted((unreachable / "index").iterdir())
    with Store.open(unreachable) as st:
        slot_count = st.index_service.geometry.hash_slot_num
    with open(first, "r+b") as fh:  # every 7th hash slot emptied: the chains hanging there are lost
        fh.seek(40)
        slots = bytearray(fh.read(slot_count * 4))
        for i in range(0, len(slots) // 4, 7):
            slots[4 * i : 4 * i + 4] = bytes(4)
        fh.seek(40)
        fh.write(slots)
    (no_first / "index" / first.name).unlink()
    (no_last / "index" / last.name).unlink()
    stores = [str(unreachable), str(no_first), str(no_last), str(store_path("store-c"))]
    doc = run_audit(AuditOptions(stores=stores, split_size=300_007, deep=True, now=NOW), spark=spark).document
    assert doc["scan"]["deep"] is True and doc["scan"]["splits"] > 8
    kinds = {}
    for root in stores:
        with Store.open(root) as st:
            want = sorted(_problem_key(p) for p in verify_store(st, deep=True).problems.to_pylist())
        got = sorted(_problem_key(p) for p in doc["problems"] if p["store"] == root)
        assert got == want, root
        kinds[root] = {p[0] for p in got}
    assert "index_key_unreachable" in kinds[str(unreachable)]
    assert "not_indexed" in kinds[str(no_first)]
    assert "index_behind" in kinds[str(no_last)]
    with pytest.raises(AuditError, match="--no-checks"):
        run_audit(AuditOptions(stores=stores, deep=True, checks=False), spark=spark)


# --- a fleet with stores that cannot be audited ------------------------------------------------------


def test_a_store_that_cannot_be_opened_is_reported_and_the_others_are_audited(spark, golden, tmp_path):
    junk = tmp_path / "not-a-store"
    junk.mkdir()
    (junk / "notes.txt").write_text("hello")
    missing = tmp_path / "missing"
    stores = [str(store_path("store-a")), str(missing), str(junk), str(store_path("store-c"))]
    doc = run_audit(AuditOptions(stores=stores, split_size=64 << 20, now=NOW), spark=spark).document

    assert [f["store"] for f in doc["failedStores"]] == [str(missing), str(junk)]
    assert "no such store directory" in doc["failedStores"][0]["error"]
    assert "not a RocketMQ store" in doc["failedStores"][1]["error"]
    store_rows = [(p["store"], p["severity"]) for p in doc["problems"] if p["kind"] == "store"]
    assert store_rows == [(str(missing), "error"), (str(junk), "error")]
    # the stores that could be opened get exactly the figures they get without the failed ones
    for name in ("store-a", "store-c"):
        for section in ("queues", "problems", "lag", "delay", "transactions", "retry", "topics", "stores"):
            assert _rows(doc, section, name) == _rows(golden, section, name), (name, section)


def test_no_store_that_can_be_opened_is_an_error(spark, tmp_path):
    with pytest.raises(MqtoolError, match="no such store directory"):
        run_audit(AuditOptions(stores=[str(tmp_path / "gone")]), spark=spark)
    with pytest.raises(StoreUnreadableError, match=r"no store could be audited: .*gone.*; .*also-gone"):
        run_audit(AuditOptions(stores=[str(tmp_path / "gone"), str(tmp_path / "also-gone")]), spark=spark)


def test_timer_checks_equal_verify_on_a_damaged_timer_store(spark, tmp_path):
    """The driver runs the 5.x timer checks as verify does (store-timer-states, one slot's chain broken)."""
    from mqtool.verify import verify_store
    from store.storedir import Store

    root = tmp_path / "store-timer-states"
    shutil.copytree(Path(__file__).parent / "data" / "store-timer-states", root)
    exp = json.loads((root / "expect.json").read_text())
    waiting = [s for s in exp["timerWheel"] if s["timeMs"] >= exp["timercheck"]["lastReadTimeMs"]]
    with open(root / "timerwheel", "r+b") as fh:
        fh.seek(waiting[-1]["index"] * 32 + 16)
        fh.write((999_999).to_bytes(8, "big"))
    out = tmp_path / "out"
    doc = run_audit(AuditOptions(stores=[str(root)], now=NOW, output=out), spark=spark).document
    with Store.open(root) as st:
        want = sorted(_problem_key(p) for p in verify_store(st).problems.to_pylist())
    got = sorted(_problem_key(p) for p in doc["problems"])
    assert got == want
    assert {"timer_slot_chain", "timer_recovery"} <= {p[0] for p in got}
    # the timer backlog, as `delay stats` computes it (NOW is years after the store's times: all overdue)
    from mqtool.delay.timer import timer_summary

    with Store.open(root) as st:
        summary = timer_summary(st, now=NOW).to_json()
    (row,) = doc["timer"]
    assert row["store"] == str(root) and row["messages"] == summary["messages"] == 19
    assert (row["waiting"], row["notEnqueued"], row["overdue"], row["stuck"]) == (
        summary["waiting"],
        summary["notEnqueued"],
        summary["backlog"]["overdue"],
        True,
    )
    assert row["skippedOnRestart"] == summary["waiting"] > 0  # years later: every waiting slot is skipped
    import pyarrow.parquet as pq

    assert pq.read_table(out / "timer.parquet").to_pylist() == doc["timer"]
    assert "Timer wheel (5.x)" in (out / "report.html").read_text(encoding="utf-8")


def test_pop_groups_equal_pop_stats(spark, tmp_path):
    """The audit's POP table is `pop stats` per group of the store (tests/data/store-pop, written by the
    real POP processors and revive service)."""
    from mqtool.pop import pop_stats
    from store.storedir import Store

    root = tmp_path / "store-pop"
    shutil.copytree(Path(__file__).parent / "data" / "store-pop", root)
    out = tmp_path / "out"
    doc = run_audit(AuditOptions(stores=[str(root)], now=NOW, output=out), spark=spark).document
    with Store.open(root) as st:
        stats = pop_stats(st, now=NOW)
    want = [
        {"store": str(root), **g.to_json(), "reviveBacklog": sum(q.backlog for q in stats.queues)}
        for g in stats.groups
    ]
    assert want and doc["pop"] == want
    assert {r["group"] for r in doc["pop"]} >= {"GID_ACKED", "GID_OVERDUE", "GID_REVIVE_V2"}
    import pyarrow.parquet as pq

    assert pq.read_table(out / "pop.parquet").to_pylist() == doc["pop"]
    assert "POP groups (5.x)" in (out / "report.html").read_text(encoding="utf-8")


# --- BatchCQ topics ----------------------------------------------------------------------------------


def test_batchcq_problems_equal_verify_and_corruptions_are_found(spark, tmp_path):
    """BatchConsumeQueues are judged as `verify` judges them, whatever the split: none on the real
    broker's store; on a copy, a unit pointing inside a record, a base offset moved (the gap after it)
    and a unit past the data are reported at the same files and offsets. The queues table has the
    BatchConsumeQueues' min and max offsets as the real broker loaded them."""
    import struct

    from formats.structs import BCQ_STORE_UNIT_SIZE as UNIT
    from mqtool.verify import verify_store
    from store.storedir import Store
    from tests.golden import copy_store

    queues = expect("store-batchcq")["batchConsumeQueues"]
    units = {k: v[next(f for f in v if f.startswith("units["))] for k, v in queues.items()}
    bad = copy_store("store-batchcq", tmp_path / "bad")

    def patch(queue: str, index: int, field_at: int, fmt: str, value: int) -> tuple[str, int]:
        file_size = 8 * UNIT  # the fixture's mapperFileSizeBatchConsumeQueue
        name = f"batchconsumequeue/{queue}/{index * UNIT // file_size * file_size:020d}"
        with open(bad / name, "r+b") as fh:
            fh.seek(index * UNIT % file_size + field_at)
            fh.write(struct.pack(fmt, value))
        return name, index * UNIT % file_size

    inside = patch("BatchTopicB/0", 9, 0, ">q", units["BatchTopicB/0"][9][0] + 4)
    moved = patch("BatchTopicA/1", 9, 28, ">q", units["BatchTopicA/1"][9][4] + 1)
    after_moved = (moved[0], moved[1] + UNIT)
    past = patch("BatchTopicA/0", 1, 0, ">q", expect("store-batchcq")["maxPhyOffset"] + 1000)
    stores = [str(store_path("store-batchcq")), str(bad)]
    doc = run_audit(AuditOptions(stores=stores, split_size=20_011, now=NOW), spark=spark).document
    for root in stores:
        with Store.open(root) as st:
            want = sorted(_problem_key(p) for p in verify_store(st).problems.to_pylist())
        got = [p for p in doc["problems"] if p["store"] == root]
        assert sorted(_problem_key(p) for p in got) == want, root
    clean = [p for p in doc["problems"] if p["store"] == stores[0] and p["severity"] != "info"]
    assert clean == []
    rows = {
        f"{q['topic']}/{q['queueId']}": (q["cqMinOffset"], q["cqMaxOffset"])
        for q in doc["queues"]
        if q["store"] == stores[0]
    }
    assert {k: rows[k] for k in queues} == {k: (v["minOffset"], v["maxOffset"]) for k, v in queues.items()}
    errors = {(p["kind"], p["file"], p["offset"]) for p in doc["problems"] if p["store"] == stores[1]}
    assert {
        ("bcq_not_record_start", *inside),
        ("bcq_unit_mismatch", *moved),
        ("bcq_offset_gap", *moved),
        ("bcq_offset_gap", *after_moved),
        ("bcq_points_outside", *past),
    } <= errors


def test_lmq_problems_equal_verify_and_lmq_units_cover_no_record(spark, tmp_path):
    """On store-lmq (the real 5.3.3 multi-dispatch) the audit judges LMQ queues as `verify` does, whatever
    the split: nothing on the real store; on copies, a removed LMQ queue is one `lmq_missing_unit` row for
    the whole store (its records lie in many splits), and a TopicA record whose own unit was overwritten
    is `cq_missing_unit` although LMQ units point at it (an LMQ unit is not the record's own)."""
    from formats.consumequeue import CQ_UNIT_STRUCT
    from mqtool.verify import verify_store
    from store.storedir import Store
    from tests.golden import copy_store

    e = expect("store-lmq")
    gone = copy_store("store-lmq", tmp_path / "gone")
    shutil.rmtree(gone / "consumequeue" / "%LMQ%room07")
    masked = copy_store("store-lmq", tmp_path / "masked")
    named = {ev["wroteOffset"] for ev in e["events"] if ev["topic"] == "TopicA" and ev["innerMultiDispatch"]}
    units = e["consumeQueues"]["TopicA/0"][UNITS]
    k = next(i for i, u in enumerate(units[:-1]) if u[1] in named)
    size = e["config"]["mappedFileSizeConsumeQueue"]
    with open(masked / "consumequeue" / "TopicA" / "0" / f"{k * 20 // size * size:020d}", "r+b") as fh:
        fh.seek(k * 20 % size)
        fh.write(CQ_UNIT_STRUCT.pack(*units[k + 1][1:]))
    stores = [str(store_path("store-lmq")), str(gone), str(masked)]
    doc = run_audit(AuditOptions(stores=stores, split_size=20_011, now=NOW), spark=spark).document
    for root in stores:
        with Store.open(root) as st:
            want = sorted(_problem_key(p) for p in verify_store(st).problems.to_pylist())
        got = [p for p in doc["problems"] if p["store"] == root]
        assert sorted(_problem_key(p) for p in got) == want, root
    assert [p for p in doc["problems"] if p["store"] == stores[0] and p["severity"] != "info"] == []
    (lost,) = [p for p in doc["problems"] if p["store"] == stores[1] and p["kind"] == "lmq_missing_unit"]
    n = e["consumeQueues"]["%LMQ%room07/0"]["maxOffset"]
    assert lost["file"] == "consumequeue/%LMQ%room07/0"
    assert f"{n} records name this LMQ queue" in lost["detail"] and "does not exist" in lost["detail"]
    missing = [p for p in doc["problems"] if p["store"] == stores[2] and p["kind"] == "cq_missing_unit"]
    assert [p["offset"] for p in missing] == [units[k][1]]


@pytest.mark.parametrize("checks", [True, False])
def test_batchcq_messages_agree_with_info(spark, checks):
    """A BatchCQ queue's `messages` counts the messages of its records (each a batch), as `info` does
    (max - min), not one per record; `records` stays one per record. The plain topic's queues as before."""
    from mqtool.info import batch_queues_info, queues_info
    from store.storedir import Store

    root = str(store_path("store-batchcq"))
    with Store.open(root) as st:
        info = {(q["topic"], q["queueId"]): q["messages"] for q in queues_info(st) + batch_queues_info(st)}
        units = {(q["topic"], q["queueId"]): q["units"] for q in batch_queues_info(st)}
    options = AuditOptions(stores=[root], split_size=20_011, now=NOW, checks=checks)
    doc = run_audit(options, spark=spark).document
    rows = {(q["topic"], q["queueId"]): q for q in doc["queues"]}
    assert {k: q["messages"] for k, q in rows.items()} == info
    assert {k: rows[k]["records"] for k in units} == units
    assert any(info[k] > units[k] for k in units)  # the fixture's batches hold several messages
    (summary,) = doc["stores"]
    assert summary["messages"] == sum(info.values())
