"""`mqtool replicas diff`: two replicas of the real-broker store tests/data/store-a compared.

Pairs are built in tmp dirs from copies of store-a:
* a lagging slave: the copy's commitlog cut at a record boundary taken from expect.json's message list
  (the bytes after it zeroed, as in a preallocated file HA has not filled yet): a byte prefix of the
  master's, as a real classic slave's log is;
* a diverged pair: each copy got different messages appended past the common end through mqtool's own
  append path (`store.appender.CommitLogAppender`, whose records `make oracle-check` has the real 5.3.3
  broker load; the oracle has no append command): the divergence point is expect.json's maxPhyOffset.
Every expected offset and count is computed from expect.json and from what the test wrote, never from
mqtool's answer.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from golden import copy_store, expect, run_mqtool, snapshot

from mqtool.replicas.diff import diff_replicas
from mqtool.replicas.logdiff import compare_commitlogs
from store.appender import CommitLogAppender, NewMessage
from store.config.brokerconf import load_broker_config
from store.storedir import Store

COPIED = ("commitlog", "consumequeue", "config", "checkpoint", "lock", "index")
EXPECT = expect("store-a")
MESSAGES = [m for m in EXPECT["messages"] if m["kind"] == "MESSAGE"]
END = EXPECT["maxPhyOffset"]


def _copy(tmp_path: Path, name: str) -> Path:
    return copy_store("store-a", tmp_path / name, parts=COPIED)


def _cut(root: Path, at: int) -> None:
    """The commitlog as a slave that has received the bytes before `at` holds it."""
    files = sorted((root / "commitlog").iterdir())
    for f in files:
        start, size = int(f.name), f.stat().st_size
        if start >= at:
            f.unlink()
        elif at < start + size:
            with f.open("r+b") as out:
                out.seek(at - start)
                out.write(bytes(start + size - at))


def _append(root: Path, messages: list[NewMessage]) -> None:
    with CommitLogAppender(root) as appender:
        for m in messages:
            appender.append(m)


# cut in the last file, and in the first (the messages past it then span three files and two BLANK ends)
@pytest.fixture(params=[-25, 500])
def lagging(tmp_path: Path, request) -> tuple[Path, Path, int]:
    master, slave = _copy(tmp_path, "master"), _copy(tmp_path, "slave")
    cut = MESSAGES[request.param]["physicalOffset"]
    _cut(slave, cut)
    return master, slave, cut


A_TAIL = [
    NewMessage("TopicTest", f"only on A {i}".encode(), {"KEYS": f"a-{i}"}, queue_id=i % 4) for i in range(3)
]
B_TAIL = [
    NewMessage("OrderTopic", f"only on B {i}".encode(), {"KEYS": f"b-{i}"}, queue_id=i % 2) for i in range(2)
]


@pytest.fixture
def diverged(tmp_path: Path) -> tuple[Path, Path]:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    _append(a, A_TAIL)
    _append(b, B_TAIL)
    return a, b


def test_a_lagging_slave_is_a_byte_prefix(lagging) -> None:
    master, slave, cut = lagging
    with Store.open(master) as m, Store.open(slave) as s:
        log = compare_commitlogs(m.commitlog, s.commitlog, block=64 << 10)
        assert (log.max_offsets, log.first_difference, log.record_start) == ((END, cut), None, None)
        assert log.compared == (0, cut) and log.ahead == "A" and not log.identical
        assert log.past_prefix[0] == dict(Counter(x["topic"] for x in MESSAGES if x["physicalOffset"] >= cut))
        assert log.past_prefix[1] == {}
        assert log.bytes_read == 2 * cut  # each byte of the common range read once per side
        result = diff_replicas(m, s)
    verdicts = {v.master: v for v in result.ha}  # no broker.conf: judged both ways
    assert verdicts["A"].outcome == "catch-up" and not verdicts["A"].truncates
    assert f"ships {END - cut} bytes" in verdicts["A"].text
    assert verdicts["B"].outcome == "slave-ahead" and not verdicts["B"].refuses
    assert "DefaultHAClient.java:193-199" in verdicts["A"].to_dict()["cites"]
    assert result.exit_status == 1


def test_a_diverged_pair(diverged) -> None:
    a, b = diverged
    with Store.open(a) as sa, Store.open(b) as sb:
        result = diff_replicas(sa, sb)
    log = result.log
    assert log is not None and log.record_start == END and log.first_difference >= END
    ra, rb = log.records
    assert (ra.topic, ra.keys, rb.topic, rb.keys) == ("TopicTest", "a-0", "OrderTopic", "b-0")
    assert ra.physical_offset == rb.physical_offset == END
    assert log.past_prefix == ({"TopicTest": 3}, {"OrderTopic": 2}) and log.ahead == "A"
    assert [v.outcome for v in result.ha] == ["diverged", "diverged"]
    assert all(not v.truncates and not v.refuses for v in result.ha)
    assert f"diverge at {END}" in result.ha[0].text


def test_roles_from_broker_conf_and_config_drift(diverged, tmp_path: Path) -> None:
    a, b = diverged
    conf_a, conf_b = tmp_path / "a.conf", tmp_path / "b.conf"
    conf_a.write_text("brokerClusterName=c1\nbrokerName=broker-a\nbrokerId=0\nbrokerRole=SYNC_MASTER\n")
    conf_b.write_text("brokerClusterName=c1\nbrokerName=broker-a\nbrokerId=1\nbrokerRole=SLAVE\n")
    topics = b / "config" / "topics.json"
    doc = json.loads(topics.read_text())
    del doc["topicConfigTable"]["OrderTopic"]
    doc["topicConfigTable"]["TopicTest"]["readQueueNums"] = 8
    topics.write_text(json.dumps(doc))
    offsets = b / "config" / "consumerOffset.json"
    offsets.write_text(
        offsets.read_text().replace('"TopicTest@groupA":{0:231,', '"TopicTest@groupA":{0:240,')
    )
    with Store.open(a, load_broker_config(conf_a)) as sa, Store.open(b, load_broker_config(conf_b)) as sb:
        result = diff_replicas(sa, sb)
    assert [(i.broker_name, i.broker_id, i.broker_role) for i in result.identities] == [
        ("broker-a", 0, "SYNC_MASTER"),
        ("broker-a", 1, "SLAVE"),
    ]
    assert [v.master for v in result.ha] == ["A"]
    rows = {(r.table, r.key): r for r in result.configs.rows}
    assert rows[("topics", "OrderTopic")].state == "only-A"
    assert rows[("topics", "TopicTest")].fields == ["readQueueNums"]
    off = rows[("consumerOffsets", "groupA TopicTest/0")]
    assert (off.state, off.a, off.b) == ("differs", 231, 240)
    assert len(rows) == 3


def test_controller_mode_without_both_epoch_files_is_not_compared(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    (b / "epochFileCheckpoint").write_text("1\n0-0\n")
    with Store.open(a) as sa, Store.open(b) as sb:
        result = diff_replicas(sa, sb)
    assert result.log is not None and result.log.identical
    assert result.ha == [] and "A has no epochFileCheckpoint" in result.ha_not_compared
    assert not result.identical and result.exit_status == 1


def test_controller_mode_truncates_by_the_real_epoch_rule(tmp_path: Path) -> None:
    """Epoch files the real EpochFileCache wrote (tests/data/epochs, case diverged-epochs) on a pair: the
    slave truncates to the real findConsistentPoint's answer, which depends on the epochs only here (the
    newest shared epoch is not the last one on either side)."""
    case = Path(__file__).parent / "data" / "epochs"
    real = json.loads((case / "expect.json").read_text())["diverged-epochs"]
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    for root, side in ((a, "slave"), (b, "master")):
        shutil.copy(case / "cases" / "diverged-epochs" / side / "epochFileCheckpoint", root)
    conf_a, conf_b = tmp_path / "a.conf", tmp_path / "b.conf"
    conf_a.write_text("brokerName=broker-a\nbrokerId=1\nbrokerRole=SLAVE\nenableControllerMode=true\n")
    conf_b.write_text("brokerName=broker-a\nbrokerId=0\nbrokerRole=SYNC_MASTER\nenableControllerMode=true\n")
    with Store.open(a, load_broker_config(conf_a)) as sa, Store.open(b, load_broker_config(conf_b)) as sb:
        result = diff_replicas(sa, sb)
    (verdict,) = result.ha
    point = real["consistentPoint"]
    assert (verdict.master, verdict.outcome, verdict.truncates) == ("B", "truncate", True)
    assert f"truncates its commitlog to {point}, dropping [{point}, {END})" in verdict.text
    assert result.ha_not_compared is None


def test_cli_exit_status_and_formats(diverged, tmp_path: Path) -> None:
    a, b = diverged
    same = _copy(tmp_path, "same")
    done = run_mqtool("replicas", "diff", str(same), str(_copy(tmp_path, "same2")), "-f", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["identical"] and doc["commitlog"]["maxOffsets"] == [END, END]
    before = snapshot(a), snapshot(b)
    done = run_mqtool("replicas", "diff", str(a), str(b), "-f", "json")
    assert done.returncode == 1, done.stderr
    assert (snapshot(a), snapshot(b)) == before  # read-only
    doc = json.loads(done.stdout)
    assert doc["commitlog"]["divergedRecordAt"] == END and not doc["identical"]
    assert doc["commitlog"]["messagesPastPrefix"] == [{"TopicTest": 3}, {"OrderTopic": 2}]
    plain = run_mqtool("replicas", "diff", str(a), str(b), "-f", "plain")
    assert plain.returncode == 1 and "First differing byte at" in plain.stdout
    assert "The replicas differ." in plain.stdout
    jsonl = run_mqtool("replicas", "diff", str(a), str(b), "-f", "jsonl")
    assert len(jsonl.stdout.splitlines()) == 1 and json.loads(jsonl.stdout)["identical"] is False
    csv = run_mqtool("replicas", "diff", str(a), str(b), "-f", "csv")
    assert csv.returncode == 2 and "--format csv" in csv.stderr
    once = run_mqtool("replicas", "diff", str(a), str(b), "--broker-config", str(tmp_path / "x.conf"))
    assert once.returncode == 2 and "give A's and B's" in once.stderr
    assert all("Traceback" not in d.stderr for d in (done, plain, jsonl, csv, once))


def test_logs_of_different_file_sizes_are_not_compared(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    for f in (b / "commitlog").iterdir():
        with f.open("r+b") as out:
            out.truncate(512 << 10)
    with Store.open(a) as sa, Store.open(b) as sb:
        result = diff_replicas(sa, sb)
    assert result.log is None and "mappedFileSizeCommitLog" in result.log_not_compared
    assert result.ha == [] and result.exit_status == 1
    done = run_mqtool("replicas", "diff", str(a), str(b))
    assert done.returncode == 1 and "not compared yet" in done.stdout and "Traceback" not in done.stderr


# --- audit --replicas: the diff's summary per replica pair, in the Spark audit -----------------------------


def test_the_audit_summarises_each_replica_pair(spark, lagging, diverged, tmp_path: Path) -> None:
    """A lagging pair and a diverged pair in one audit: each row is what `diff_replicas` finds, and each pair
    adds its problem (info for the lag, warning for the divergence) to its first store."""
    import pyarrow.parquet as pq

    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit

    master, slave, cut = lagging
    a, b = diverged
    c, d = _copy(tmp_path, "c"), _copy(tmp_path, "d")
    shutil.rmtree(d / "consumequeue" / "TopicTest")  # a topic deleted on c only left its queues on d
    out = tmp_path / "out"
    groups = [[str(master), str(slave)], [str(a), str(b)], [str(d), str(c)]]
    stores = [str(master), str(slave), str(a), str(b), str(c), str(d)]
    doc = run_audit(AuditOptions(stores=stores, replicas=groups, output=out), spark=spark).document
    rows = {(r["storeA"], r["storeB"]): r for r in doc["replicas"]}
    lag, div = rows[(str(master), str(slave))], rows[(str(a), str(b))]
    assert (lag["identical"], lag["firstDifference"], lag["commonPrefixEnd"], lag["ahead"]) == (
        False, None, cut, str(master),
    )  # fmt: skip
    assert lag["messagesPastPrefixA"] == sum(1 for x in MESSAGES if x["physicalOffset"] >= cut)
    assert (lag["maxOffsetA"], lag["maxOffsetB"]) == (END, cut)
    assert (div["commonPrefixEnd"], div["ahead"], div["messagesPastPrefixA"], div["messagesPastPrefixB"]) == (
        END, str(a), len(A_TAIL), len(B_TAIL),
    )  # fmt: skip
    assert div["firstDifference"] >= END and "diverged" in div["ha"]
    with Store.open(a) as sa, Store.open(b) as sb:
        assert div["configRowsDiffering"] == len(diff_replicas(sa, sb).configs.rows)
    kinds = {
        (p["store"], p["kind"], p["severity"]) for p in doc["problems"] if p["kind"].startswith("replicas_")
    }
    queues = rows[(str(d), str(c))]
    assert (queues["identical"], queues["firstDifference"], queues["ahead"]) == (False, None, None)
    with Store.open(c) as sc:
        assert queues["queuesDiffering"] == len(list(sc.consume_queues.queue_ids("TopicTest")))
    assert kinds == {
        (str(master), "replicas_lag", "info"),
        (str(a), "replicas_diverged", "warning"),
        (str(d), "replicas_queues", "info"),
    }
    assert pq.read_table(out / "replicas.parquet").to_pylist() == doc["replicas"]
    assert "<h2>Replicas</h2>" in (out / "report.html").read_text(encoding="utf-8")


def test_audit_replica_groups_are_checked(spark, tmp_path: Path) -> None:
    from formats.errors import MqtoolError
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit

    a = _copy(tmp_path, "a")
    with pytest.raises(MqtoolError, match="two stores or more"):
        run_audit(AuditOptions(stores=[str(a)], replicas=[[str(a)]]), spark=spark)
    with pytest.raises(MqtoolError, match="not among the audited stores"):
        run_audit(AuditOptions(stores=[str(a)], replicas=[[str(a), str(tmp_path / "b")]]), spark=spark)


def test_a_config_key_fastjson_reads_as_a_number_is_a_row_not_a_crash(tmp_path: Path) -> None:
    """fastjson reads an unquoted number as a key (`-1:"x"`): one side's row then has an int key beside the
    other's names (found by the two-store fuzz: exit 70 sorting them)."""
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    modes = b / "config" / "messageRequestMode.json"
    modes.write_text(modes.read_text().replace('"topic":"TopicTest"', '-1:"TopicTest"'))
    with Store.open(a) as sa, Store.open(b) as sb:
        result = diff_replicas(sa, sb)
    (row,) = [r for r in result.configs.rows if r.table == "consumeModes"]
    assert row.state == "differs" and row.fields == ["topic", -1]
