"""Names read from a store never become paths unchecked (issue 26, items 1 and 2).

Mutated copies of stores the real RocketMQ classes wrote: a record whose topic is a path escape or holds a
NUL (re-encoded at the same size, CRC fixed, so the broker's check accepts it), a delayed or half message
whose REAL_TOPIC is one, an LMQ name with a NUL, a consumerOffset.json key that climbs out of
consumequeue/. Writes refuse in one line naming the record and the name, before anything is created;
verify reports the record; reads treat such a name as naming no queue.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from golden import copy_store, expect, rewrite_record, run_mqtool, snapshot

from formats.message.properties import decode_properties, encode_properties
from formats.names import escaped_name, topic_name_problem, validate_topic
from store.io.pathnames import UnsafeNameError, component_problem, new_queue_dir, queue_dir

TOPIC_RECORD = 1318983  # store-a: a TopicTest record of queue 3
ESCAPE = "../../../escaped"  # from <staging>/consumequeue: three levels up


# --- the rule ---------------------------------------------------------------------------------------


def test_every_name_the_real_broker_wrote_passes():
    """Every record topic and every queue directory of the stores the real broker wrote (retry topics of
    143 characters, %DLQ%, POP retry topics, LMQ queues, system topics) is a name the rule accepts."""
    data = Path(__file__).parent / "data"
    seen = set()
    for store in sorted(p.name for p in data.iterdir() if (p / "expect.json").exists()):
        for m in expect(store).get("messages", []):
            if "topic" in m:
                seen.add(m["topic"])
        cq = data / store / "consumequeue"
        if cq.is_dir() and not (cq / "CURRENT").exists():
            seen.update(os.listdir(cq))
    assert len(seen) > 20
    assert [t for t in seen if topic_name_problem(t)] == []
    assert any(len(t) > 127 for t in seen)  # longer than the send path's limit: the group's length


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("../" * 14 + "x", "holds '.' at character 0"),
        ("Paym\x00ntEvents", "holds '\\x00' at character 4"),
        ("a/b", "holds '/' at character 1"),
        ("", "is blank"),
        (" ", "is blank"),
        ("x" * 256, "is 256 bytes long"),
        ("T\udcffopic", "holds '\\udcff' at character 1"),
        ("Topic+A", "holds '+' at character 5"),
    ],
)
def test_illegal_names_say_why(name, words):
    assert words in topic_name_problem(name)


def test_the_pop_retry_topic_v2_separator_is_allowed_in_retry_topics_only():
    assert topic_name_problem("%RETRY%GID+Topic") is None  # KeyBuilder.buildPopRetryTopicV2
    assert validate_topic("%RETRY%GID+Topic") is not None  # not a name a client may send to


def test_path_components():
    assert component_problem("a.b") is None  # a listing may hold it; reading it is safe
    for bad in ("", ".", "..", "a/b", "a\0b", "x" * 256, "\ud800"):
        assert component_problem(bad) is not None, bad
    with pytest.raises(UnsafeNameError):
        queue_dir(Path("/s/consumequeue"), "..", 0)
    with pytest.raises(UnsafeNameError, match=r"the record at physical offset 7: topic 'a\.b'"):
        new_queue_dir(Path("/s/consumequeue"), "a.b", 0, record=7)
    with pytest.raises(UnsafeNameError, match="queue id -1"):
        new_queue_dir(Path("/s/consumequeue"), "TopicTest", -1)


def test_escaped_names_are_one_short_line():
    text = escaped_name("a\n\x00" + "b" * 500)
    assert "\n" not in text and len(text) < 120 and "(503 characters)" in text


# --- item 1: a path escape through a record's topic ---------------------------------------------------


def _no_escape(tmp_path: Path) -> None:
    found = [str(p) for p in tmp_path.rglob("escaped")]
    assert found == [], f"created outside the store: {found}"


def one_error(proc) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mqtool: error: ")]
    assert proc.returncode == 1, proc.stderr
    assert len(errors) == 1, proc.stderr
    return errors[0]


@pytest.mark.parametrize("topic", [ESCAPE, "Paym\x00ntEvents"], ids=["escape", "nul"])
def test_rebuild_refuses_a_record_whose_topic_is_no_queue_name(tmp_path, topic):
    root = copy_store("store-a", tmp_path / "s")
    rewrite_record(root, TOPIC_RECORD, topic=topic)
    before = snapshot(root)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for args in (["rebuild", "all"], ["rebuild", "all", "--execute"], ["rebuild", "cq", "--execute"]):
        proc = run_mqtool("-s", str(root), *args, TMPDIR=str(tmp))
        line = one_error(proc)
        assert "commitlog/00000000000001048576: offset 270407" in line
        assert f"the record at physical offset {TOPIC_RECORD}: topic {escaped_name(topic)}" in line
        assert "internal error" not in line
        _no_escape(tmp_path)
        assert snapshot(root) == before
        assert os.listdir(tmp) == []  # the dry run's staging is gone too


def test_verify_names_the_record_with_an_illegal_topic(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    rewrite_record(root, TOPIC_RECORD, topic="../" * 14 + "x")
    proc = run_mqtool("-s", str(root), "-f", "json", "verify")
    report = json.loads(proc.stdout)
    rows = [p for p in report["problems"] if p["kind"] == "illegal_topic"]
    assert len(rows) == 1, report["problems"]
    assert rows[0]["severity"] == "error"
    assert (rows[0]["file"], rows[0]["offset"]) == ("commitlog/00000000000001048576", 270407)
    assert f"first at phy {TOPIC_RECORD}" in rows[0]["detail"] and "'../../" in rows[0]["detail"]


def _rewrite_property(root: Path, phy: int, name: str, value: str) -> None:
    from store.log.commitlog import CommitLog

    with CommitLog.open(root) as cl:
        props = decode_properties(cl.read_message_at(phy).properties_raw)
    props[name] = value
    rewrite_record(root, phy, properties=encode_properties(props.items()))


def test_delay_replay_refuses_a_real_topic_that_escapes(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    escape = "../../escaped"  # from <store>/consumequeue: into tmp_path
    _rewrite_property(root, 108978, "REAL_TOPIC", escape)  # level 3's due message
    before = snapshot(root)
    proc = run_mqtool("-s", str(root), "delay", "replay", "--now", "2030-01-01", "--execute")
    line = one_error(proc)
    assert f"the record at physical offset 108978: topic {escaped_name(escape)}" in line
    assert snapshot(root) == before
    _no_escape(tmp_path)


def test_txn_commit_refuses_a_half_whose_real_topic_holds_a_nul(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    _rewrite_property(root, 111015, "REAL_TOPIC", "Topic\x00Test")  # the pending half at queue offset 2
    before = snapshot(root)
    proc = run_mqtool("-s", str(root), "txn", "commit", "2", "--execute")
    line = one_error(proc)
    assert "the record at physical offset 111015: topic 'Topic\\x00Test'" in line
    assert snapshot(root) == before


def test_rebuild_refuses_an_lmq_name_with_a_nul_and_verify_reports_it(tmp_path):
    root = copy_store("store-lmq", tmp_path / "s")
    from store.log.commitlog import CommitLog

    with CommitLog.open(root) as cl:
        phy = next(
            m.physical_offset
            for m in cl.iter_records()
            if getattr(m, "properties", {}).get("INNER_MULTI_DISPATCH", "").startswith("%LMQ%")
        )
        props = decode_properties(cl.read_message_at(phy).properties_raw)
    first = props["INNER_MULTI_DISPATCH"].split(",")[0]
    props["INNER_MULTI_DISPATCH"] = props["INNER_MULTI_DISPATCH"].replace(first, "%LMQ%a\x00b", 1)
    rewrite_record(root, phy, properties=encode_properties(props.items()))
    before = snapshot(root)
    line = one_error(run_mqtool("-s", str(root), "rebuild", "cq", "--execute"))
    assert f"the record at physical offset {phy}: LMQ queue '%LMQ%a\\x00b'" in line
    assert snapshot(root) == before
    report = json.loads(run_mqtool("-s", str(root), "-f", "json", "verify").stdout)
    assert [p["kind"] for p in report["problems"] if p["kind"].startswith("illegal")] == ["illegal_lmq_name"]


# --- reads: a name from a config file that climbs out of consumequeue/ -------------------------------


def test_offsets_show_never_reads_a_queue_outside_the_store(tmp_path):
    """consumerOffset.json naming `../../evil`: the broker's queue table (from the consumequeue/ listing)
    has no such queue; mqtool must not read tmp_path/evil/0 either."""
    root = copy_store("store-a", tmp_path / "s")
    evil = tmp_path / "evil" / "0"
    evil.mkdir(parents=True)
    (evil / "00000000000000000000").write_bytes(struct.pack(">qiq", 0, 283, 0) * 300)
    path = root / "config" / "consumerOffset.json"
    text = path.read_text()
    path.write_text(text.replace('"offsetTable":{', '"offsetTable":{"../../evil@groupA":{0:5},', 1))
    proc = run_mqtool("-s", str(root), "-f", "json", "offsets", "show", "--group", "groupA")
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["topic"] == "../../evil"]
    assert [(r["state"], r["maxOffset"]) for r in rows] == [("no-queue", None)], rows


def test_a_name_from_the_store_is_quoted_short(tmp_path):
    """A 1000-character topic in consumerOffset.json: the reset's refusal quoted it whole, twice, in a
    line of more than 2000 characters (found by the hostile fuzz family)."""
    root = copy_store("store-a", tmp_path / "s")
    path = root / "config" / "consumerOffset.json"
    text = path.read_text()
    path.write_text(text.replace('"offsetTable":{', '"offsetTable":{"' + "x" * 1000 + '@groupA":{0:1},', 1))
    proc = run_mqtool("-s", str(root), "offsets", "reset", "-g", "groupA", "--all-topics", "--to-earliest")
    line = one_error(proc)
    assert len(line) < 300 and "(1000 characters)" in line, line
