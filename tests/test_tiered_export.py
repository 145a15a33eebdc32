"""`mqtool export --tiered` on the store the real 5.3.3 TieredMessageStore wrote (tests/data/store-tiered):
every message the real broker serves - from the tiered store below the local minimum, from the local store
above it - exported once, with the fields the real getMessage returned (expect.json `reads`); the queue
only the tiered tree holds (lost-queue.json); damaged segments named, not exported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
from golden import run_mqtool
from test_tiered_store import MESSAGE_FIELDS

FIXTURE = Path(__file__).parent / "data" / "store-tiered"
STORE = FIXTURE / "store"
TREE = FIXTURE / "tiered"
EXPECT = json.loads((FIXTURE / "expect.json").read_text())
LOST = json.loads((FIXTURE / "lost-queue.json").read_text())


def _export(store: Path, out: Path, *args: str) -> tuple[dict, list[dict]]:
    run = run_mqtool("export", "-s", str(store), "-o", str(out), "-f", "json", *args)
    assert run.returncode == 0, run.stderr
    rows = pq.read_table(out / "messages.parquet").to_pylist()
    return json.loads(run.stdout), rows


def _served(reads: list[dict]) -> dict[tuple[str, int, int], dict]:
    return {(r["topic"], r["queueId"], r["offset"]): r for r in reads if r["status"] == "FOUND"}


def test_every_served_message_is_exported_once_as_the_broker_serves_it(tmp_path: Path) -> None:
    doc, rows = _export(STORE, tmp_path / "out", "--tiered", str(TREE))
    served = _served(EXPECT["reads"])
    got = {(r["topic"], r["queueId"], r["queueOffset"]): r for r in rows}
    assert len(got) == len(rows) == len(served) == doc["messages"]
    assert sorted(got) == sorted(served)
    for key, r in served.items():
        want = r["messages"][0]
        assert {k: got[key][k] for k in MESSAGE_FIELDS} == want, key
    tiered = sum(r["fromTiered"] for r in served.values())
    assert doc["tiered"]["messages"] == tiered > 100 and doc["tiered"]["problems"] == []
    assert doc["tiered"]["queues"] == {k: q["localMinOffset"] for k, q in EXPECT["queues"].items()}
    # the tiered messages come first, queue by queue in queue order
    first = [(r["topic"], r["queueId"], r["queueOffset"]) for r in rows[:tiered]]
    assert first == sorted(first) and all(served[k]["fromTiered"] for k in first)


def test_one_topic_and_no_tree(tmp_path: Path) -> None:
    doc, rows = _export(STORE, tmp_path / "b", "--tiered", str(TREE), "--topic", "TieredTopicB")
    assert {r["topic"] for r in rows} == {"TieredTopicB"}
    assert len(rows) == EXPECT["queues"]["TieredTopicB/0"]["maxOffset"]
    assert list(doc["tiered"]["queues"]) == ["TieredTopicB/0"]
    plain, local = _export(STORE, tmp_path / "plain")
    assert plain["tiered"] is None
    assert len(local) == sum(q["localMaxOffset"] - q["localMinOffset"] for q in EXPECT["queues"].values())
    # an offset range names local commitlog offsets: no tiered part
    ranged, _ = _export(STORE, tmp_path / "ranged", "--tiered", str(TREE), "--from-offset", "49152")
    assert ranged["tiered"] is None


def test_a_queue_only_the_tree_holds_is_exported(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    shutil.rmtree(root / "consumequeue" / "TieredTopicB")
    doc, rows = _export(root, tmp_path / "out", "--tiered", str(TREE), "--topic", "TieredTopicB")
    served = _served(LOST["reads"])
    tiered = rows[: doc["tiered"]["messages"]]
    assert doc["tiered"]["queues"] == {"TieredTopicB/0": len(served)} and len(served) > 50
    assert [{k: r[k] for k in MESSAGE_FIELDS} for r in tiered] == [
        served[k]["messages"][0] for k in sorted(served)
    ]
    # the local commitlog's records of the queue follow, as always (no ConsumeQueue serves them now)
    local = rows[len(tiered) :]
    assert local and {r["physicalOffset"] for r in local}.isdisjoint({r["physicalOffset"] for r in tiered})


def test_a_damaged_segment_is_named_and_the_rest_exported(tmp_path: Path) -> None:
    tree = tmp_path / "tiered"
    shutil.copytree(TREE, tree)
    segments = sorted((tree).glob("*/broker-a/TieredTopicA/0/COMMIT_LOG/*"))
    assert len(segments) > 2
    victim = segments[1]
    data = bytearray(victim.read_bytes())
    data[4:8] = b"\x00\x00\x00\x00"  # the first message's magic code
    victim.write_bytes(bytes(data))
    doc, rows = _export(STORE, tmp_path / "out", "--tiered", str(tree), "--topic", "TieredTopicA")
    problems = doc["tiered"]["problems"]
    assert any(str(victim) in p and "offset 0: bad_magic" in p for p in problems), problems
    assert any(p.startswith("TieredTopicA/0: ") and "exported" in p for p in problems), problems
    want = EXPECT["queues"]["TieredTopicA/0"]["localMinOffset"]
    assert 0 < doc["tiered"]["queues"]["TieredTopicA/0"] < want
    assert doc["tiered"]["queues"]["TieredTopicA/1"] == EXPECT["queues"]["TieredTopicA/1"]["localMinOffset"]
    assert len(rows) == doc["messages"]


def test_a_store_host_port_past_65535_is_exported_without_an_offset_msg_id(tmp_path: Path) -> None:
    """Found by the long tiered fuzz: the export failed on the store host text. The broker serves the
    bytes; a client's decode rejects the message (InetSocketAddress), so it has no offsetMsgId."""
    tree = tmp_path / "tiered"
    shutil.copytree(TREE, tree)
    (first,) = [s for s in tree.glob("*/broker-a/TieredTopicA/0/COMMIT_LOG/*") if s.name.endswith("0" * 20)]
    data = bytearray(first.read_bytes())
    data[68:72] = (70000).to_bytes(4, "big")  # the first message's STOREHOST port (IPv4 store host)
    first.write_bytes(bytes(data))
    doc, rows = _export(STORE, tmp_path / "out", "--tiered", str(tree), "--topic", "TieredTopicA")
    bad = [r for r in rows if r["offsetMsgId"] is None]
    assert [(r["queueId"], r["queueOffset"]) for r in bad] == [(0, 0)]
    assert bad[0]["storeHost"] == "192.168.0.10:70000"
    assert any("TieredTopicA/0: 1 message(s) whose store host" in p for p in doc["tiered"]["problems"])
    assert doc["tiered"]["queues"]["TieredTopicA/0"] == EXPECT["queues"]["TieredTopicA/0"]["localMinOffset"]
