"""`mqtool info --tiered` and `mqtool query offset --tiered` on the store the real 5.3.3 TieredMessageStore
wrote (tests/data/store-tiered): the ranges the real classes report, and at every queue offset the message
the real broker's getMessage serves (from the tiered segments below the local minimum)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden import run_mqtool
from test_tiered_store import MESSAGE_FIELDS

from mqtool.query.queue import QueueOffsetError, query_by_queue_offset
from mqtool.tiered.fetch import served_from_tiered
from store.storedir import Store

FIXTURE = Path(__file__).parent / "data" / "store-tiered"
STORE = FIXTURE / "store"
TREE = FIXTURE / "tiered"
EXPECT = json.loads((FIXTURE / "expect.json").read_text())
FIELDS = MESSAGE_FIELDS  # the fields expect.json records per message


def _store(tiered: Path | None = TREE) -> Store:
    st = Store.open(STORE)
    st.tiered_path = tiered
    return st


def _fields(message) -> dict:
    j = message.to_json(include_body=False)
    return {k: j[k] for k in FIELDS}


def test_info_shows_local_and_tiered_ranges_side_by_side(tmp_path: Path) -> None:
    out = run_mqtool("info", "-s", str(STORE), "--tiered", str(TREE), "-f", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)["tiered"]
    assert doc["clusterDirectory"] == EXPECT["config"]["tieredClusterDirectory"]
    assert doc["brokerName"] == "broker-a" and doc["metadata"]["loadedFrom"] == "file"
    got = {f"{r['topic']}/{r['queueId']}": r for r in doc["queues"]}
    assert sorted(got) == sorted(EXPECT["queues"])
    for key, want in EXPECT["queues"].items():
        row = got[key]
        assert row["localMinOffset"] == want["localMinOffset"]  # DefaultMessageStore.getMinOffsetInQueue
        assert row["localMaxOffset"] == want["localMaxOffset"]
        assert row["tieredMinOffset"] == want["tieredMinOffset"]  # FlatMessageFile.getConsumeQueueMinOffset
        assert row["tieredMaxOffset"] == want["tieredCommitOffset"]
        assert row["minOffset"] == want["minOffset"]  # TieredMessageStore.getMinOffsetInQueue
        assert row["maxOffset"] == want["maxOffset"]
        segs = [s for s in EXPECT["metadata"]["fileSegments"] if s["path"] == f"broker-a/{key}"]
        assert row["commitLogSegments"] == sum(s["type"] == "COMMIT_LOG" for s in segs)
        assert row["consumeQueueSegments"] == sum(s["type"] == "CONSUME_QUEUE" for s in segs)
    # the same from broker.conf's tiered keys
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerName=broker-a\ntieredStoreFilePath={TREE}\n"
        "tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.PosixFileSegment\n"
    )
    again = run_mqtool("--broker-config", str(conf), "info", "-s", str(STORE), "-f", "json")
    assert json.loads(again.stdout)["tiered"]["queues"] == doc["queues"]
    assert json.loads(again.stdout)["tiered"]["pathFrom"] == "broker-config"
    # without a tree: no tiered section (the layout part still names the metadata file)
    plain = json.loads(run_mqtool("info", "-s", str(STORE), "-f", "json").stdout)
    assert plain["tiered"] is None


def test_the_tiered_warning_is_printed_only_where_the_tree_goes_unread() -> None:
    """A command that reads the tree warns only when no tree is named; one that does not read it warns
    that it sees the local store only."""
    read = run_mqtool("info", "-s", str(STORE), "--tiered", str(TREE), "-f", "json")
    assert read.returncode == 0 and "warning" not in read.stderr, read.stderr
    unnamed = run_mqtool("query", "offset", "-s", str(STORE), "TieredTopicA", "0", "50", "-f", "json")
    assert unnamed.returncode == 0, unnamed.stderr
    assert "no tiered tree is named: only the local store is read" in unnamed.stderr
    assert "not read exactly" not in unnamed.stderr
    other = run_mqtool("--tiered", str(TREE), "dump", "checkpoint", "-s", str(STORE), "-f", "json")
    assert other.returncode == 0, other.stderr
    assert "tiered storage" in other.stderr and "not read exactly" in other.stderr


def test_info_names_a_provider_it_does_not_read(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"tieredStoreFilePath={TREE}\ntieredBackendServiceProvider=com.example.S3FileSegment\n")
    out = run_mqtool("--broker-config", str(conf), "info", "-s", str(STORE), "-f", "json")
    assert out.returncode == 0
    assert "mqtool reads only the POSIX provider" in json.loads(out.stdout)["tiered"]["error"]


def test_query_offset_reads_what_the_broker_serves_at_every_offset() -> None:
    st = _store()
    tiered_reads = 0
    for r in EXPECT["reads"]:
        topic, queue_id, offset = r["topic"], r["queueId"], r["offset"]
        assert served_from_tiered(st, topic, queue_id, offset) == r["fromTiered"], r
        if r["status"] != "FOUND":
            assert r["status"] == "OFFSET_OVERFLOW_ONE"
            with pytest.raises(QueueOffsetError, match="no message at queue offset"):
                query_by_queue_offset(st, topic, queue_id, offset)
            continue
        result = query_by_queue_offset(st, topic, queue_id, offset)
        assert [_fields(m) for m in result.messages] == r["messages"], r
        assert (result.min_offset, result.max_offset) == (r["minOffset"], r["maxOffset"])
        tiered_reads += r["fromTiered"]
        assert (result.tiered is not None) == r["fromTiered"]
    assert tiered_reads == sum(q["localMinOffset"] for q in EXPECT["queues"].values())


def test_without_the_tree_the_offsets_below_the_local_minimum_are_gone() -> None:
    # fails closed to the local store's answer (what mqtool said before --tiered)
    q = EXPECT["queues"]["TieredTopicA/0"]
    with pytest.raises(QueueOffsetError, match="below its minOffset"):
        query_by_queue_offset(_store(None), "TieredTopicA", 0, q["localMinOffset"] - 1)


def test_a_page_crosses_from_the_tiered_store_into_the_local_one() -> None:
    q = EXPECT["queues"]["TieredTopicB/0"]
    start = q["localMinOffset"] - 2
    result = query_by_queue_offset(_store(), "TieredTopicB", 0, start, count=5)
    assert [m.queue_offset for m in result.messages] == list(range(start, start + 5))
    assert result.tiered == (start, q["localMinOffset"])
    want = {
        r["offset"]: r["messages"][0]
        for r in EXPECT["reads"]
        if r["topic"] == "TieredTopicB" and r["messages"]
    }
    assert [_fields(m) for m in result.messages] == [want[o] for o in range(start, start + 5)]
    args = ["query", "offset", "TieredTopicB", "0", str(start), "-n", "5", "-s", str(STORE)]
    out = run_mqtool(*args, "--tiered", str(TREE), "-f", "json")
    assert out.returncode == 0, out.stderr
    assert "read from the tiered store" in out.stderr


@pytest.mark.parametrize(
    ("level", "served"),
    [
        ("FORCE", "all"),
        ("3", "all"),
        ("DISABLE", "none"),
        ("0", "none"),
        ("force", "below"),
        ("NOT_IN_MEM", "below"),
    ],
)
def test_the_storage_level_decides_which_store_serves(tmp_path: Path, level: str, served: str) -> None:
    # broker.conf's tieredStorageLevel as MixAll.properties2Object sets it (a name, exactly, or 0-3)
    from store.config.brokerconf import load_broker_config

    conf = tmp_path / "broker.conf"
    conf.write_text(f"tieredStorageLevel={level}\n")
    st = Store.open(STORE, load_broker_config(conf))
    st.tiered_path = TREE
    q = EXPECT["queues"]["TieredTopicA/1"]
    below, inside = q["localMinOffset"] - 1, q["localMinOffset"]
    want_below = served in ("all", "below")
    assert served_from_tiered(st, "TieredTopicA", 1, below) == want_below
    assert served_from_tiered(st, "TieredTopicA", 1, inside) == (served == "all")
    if served == "none":
        with pytest.raises(QueueOffsetError, match="below its minOffset"):
            query_by_queue_offset(st, "TieredTopicA", 1, below)
    if served == "all":  # the tiered copy: its offsetMsgId is the tiered COMMIT_LOG offset's
        local = next(
            r
            for r in EXPECT["reads"]
            if r["topic"] == "TieredTopicA" and r["queueId"] == 1 and r["offset"] == inside
        )
        (got,) = query_by_queue_offset(st, "TieredTopicA", 1, inside).messages
        assert got.uniq_key == local["messages"][0]["uniqKey"]
        assert got.offset_msg_id != local["messages"][0]["offsetMsgId"]


def test_offset_by_time_is_the_plugins_at_every_store_time() -> None:
    from mqtool.tiered.bytime import local_earliest_time, offset_in_queue_by_time

    st = _store()
    assert local_earliest_time(st) == EXPECT["localEarliestMessageTime"]
    for row in EXPECT["offsetsByTime"]:
        for boundary in ("lower", "upper"):
            got = offset_in_queue_by_time(st, row["topic"], row["queueId"], row["timestamp"], boundary)
            assert got == row[boundary], (row, boundary)
    early = sum(row["timestamp"] < EXPECT["localEarliestMessageTime"] for row in EXPECT["offsetsByTime"])
    assert early > 40 and len(EXPECT["offsetsByTime"]) - early > 10  # both the tiered and the local path


def test_query_time_searches_the_tiered_store_below_the_local_minimum() -> None:
    from mqtool.query.queue import query_by_time

    st = _store()
    found = [r for r in EXPECT["reads"] if r["topic"] == "TieredTopicA" and r["messages"]]
    times = sorted(r["messages"][0]["storeTimestamp"] for r in found)
    begin, end = times[5], times[-5]  # across the tiered and the local offsets of both queues
    want = sorted(
        (r["messages"][0]["storeTimestamp"], r["queueId"], r["offset"])
        for r in found
        if begin <= r["messages"][0]["storeTimestamp"] <= end
    )
    result = query_by_time(st, "TieredTopicA", begin=begin, end=end, max_num=None)
    got = [(m.store_timestamp, m.queue_id, m.queue_offset) for m in result.messages]
    assert sorted(got) == want and got == sorted(got, key=lambda g: g[0])
    served = {(r["queueId"], r["offset"]): r["messages"][0] for r in found}
    assert [_fields(m) for m in result.messages] == [served[(g[1], g[2])] for g in got]
    assert (
        result.tiered_messages
        == sum(1 for r in found if r["fromTiered"] and begin <= r["messages"][0]["storeTimestamp"] <= end)
        > 50
    )
    # without the tree: only what the local store holds
    local_only = query_by_time(_store(None), "TieredTopicA", begin=begin, end=end, max_num=None)
    assert len(local_only.messages) == len(want) - result.tiered_messages


def test_query_key_finds_the_tiered_messages_through_the_tiered_index(tmp_path: Path) -> None:
    from mqtool.query.key import query_by_key
    from store.config.brokerconf import load_broker_config

    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"tieredStoreIndexFileMaxHashSlotNum={EXPECT['config']['tiered']['tieredStoreIndexFileMaxHashSlotNum']}\n"
    )
    st = Store.open(STORE, load_broker_config(conf))
    st.tiered_path = TREE
    local_min = EXPECT["retention"]["minPhyOffset"]
    local_reads = [r for r in EXPECT["reads"] if r["messages"] and not r["fromTiered"]]
    tiered_total = 0
    for q in EXPECT["keyQueries"]:
        # the real plugin's tiered part, and every message the local store still serves with that key
        want = {m["offsetMsgId"] for m in q["messages"] if m["physicalOffset"] < local_min}
        tiered_total += len(want)
        for r in local_reads:
            m = r["messages"][0]
            if r["topic"] == q["topic"] and q["key"] in (m["keys"] or "").split(" "):
                want.add(m["offsetMsgId"])
        result = query_by_key(st, q["topic"], q["key"])
        assert {m.offset_msg_id for m in result.messages} == want, q["key"]
        assert result.tiered_messages == sum(1 for m in q["messages"] if m["physicalOffset"] < local_min)
    assert tiered_total > 30
    # without the tree: the local store's only
    plain = query_by_key(_store(None), "TieredTopicA", "shared-0")
    assert plain.tiered_messages == 0 and len(plain.messages) < len(
        query_by_key(st, "TieredTopicA", "shared-0").messages
    )


def test_query_id_finds_a_tiered_uniq_key(tmp_path: Path) -> None:
    from mqtool.query.msgid import query_by_id
    from store.config.brokerconf import load_broker_config

    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"tieredStoreIndexFileMaxHashSlotNum={EXPECT['config']['tiered']['tieredStoreIndexFileMaxHashSlotNum']}\n"
    )
    st = Store.open(STORE, load_broker_config(conf))
    st.tiered_path = TREE
    tiered_reads = [r for r in EXPECT["reads"] if r["fromTiered"]][::9]
    for r in tiered_reads:
        served = r["messages"][0]
        result = query_by_id(st, served["uniqKey"], topic=r["topic"])
        assert [_fields(m) for m in result.messages] == [served], r
        assert result.tiered_messages == 1
    assert len(tiered_reads) > 10
    # without the tree the id is not found
    assert (
        query_by_id(
            _store(None), tiered_reads[0]["messages"][0]["uniqKey"], topic=tiered_reads[0]["topic"]
        ).messages
        == []
    )


@pytest.mark.parametrize(("from_offset", "count"), [(None, None), (40, 6), (44, 3), (0, 2)])
def test_dump_cq_shows_the_tiered_units_then_the_local_ones(from_offset, count) -> None:
    from mqtool.dump import cq_units

    q = EXPECT["queues"]["TieredTopicA/0"]
    tiered = {u[0]: u for u in EXPECT["tieredUnits"]["TieredTopicA/0"]}
    served = {r["offset"]: r for r in EXPECT["reads"] if r["topic"] == "TieredTopicA" and r["queueId"] == 0}
    doc = cq_units(_store(), "TieredTopicA", 0, from_offset=from_offset, count=count)
    rows = list(doc["units"])
    start = from_offset or 0
    stop = q["maxOffset"] if count is None else min(q["maxOffset"], start + count)
    assert [r["queueOffset"] for r in rows] == list(range(start, stop))
    for r in rows:
        if r["queueOffset"] < q["localMinOffset"]:
            assert r["state"] == "tiered"
            assert [r["queueOffset"], r["phyOffset"], r["size"], r["tagsCode"]] == tiered[r["queueOffset"]]
        else:  # the local unit of the message the broker serves there
            assert (
                r["state"] == "ok"
                and r["phyOffset"] == served[r["queueOffset"]]["messages"][0]["physicalOffset"]
            )
    assert (doc["minOffset"], doc["maxOffset"]) == (q["minOffset"], q["maxOffset"])


def test_offsets_show_judges_committed_offsets_against_the_plugins_min_offset(tmp_path: Path) -> None:
    """A committed offset below the local minimum but inside the tiered range is served by a broker with
    the plugin (`TieredMessageStore.getMinOffsetInQueue` answers the smaller minimum): `ok`, not
    `behind-min`; without the tree mqtool can judge only against the local queue."""
    import shutil

    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    queues = EXPECT["queues"]
    q0, q1 = queues["TieredTopicA/0"], queues["TieredTopicA/1"]
    committed = {0: q0["localMinOffset"] - 5, 1: q1["localMinOffset"] + 1}
    table = {"offsetTable": {"TieredTopicA@GID_tiered": {str(q): o for q, o in committed.items()}}}
    (store / "config" / "consumerOffset.json").write_text(json.dumps(table))

    def rows(*tiered: str) -> dict[int, dict]:
        run = run_mqtool(*tiered, "offsets", "show", "-s", str(store), "--group", "GID_tiered", "-f", "json")
        assert run.returncode == 0, run.stderr
        return {r["queueId"]: r for r in json.loads(run.stdout) if r["topic"] == "TieredTopicA"}

    with_tree, without = rows("--tiered", str(TREE)), rows()
    assert (with_tree[0]["state"], with_tree[0]["minOffset"]) == ("ok", q0["minOffset"])
    assert (without[0]["state"], without[0]["minOffset"]) == ("behind-min", q0["localMinOffset"])
    assert (
        with_tree[1]["minOffset"] == q1["minOffset"] and with_tree[1]["state"] == without[1]["state"] == "ok"
    )
    assert with_tree[0]["lag"] == without[0]["lag"] == q0["maxOffset"] - committed[0]
