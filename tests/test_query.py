"""mqtool.query against the golden stores: key, id, queue offset and time queries, coverage, export.

Expected answers come from expect.json (what the real Java classes returned on the same files):
`indexQueries` (raw IndexService hits), `messages` (every record), `consumeQueues`, `msgIdDecode`.
"""

from __future__ import annotations

import base64
import json
import shutil
import zlib

import pytest

from formats.errors import MqtoolError
from formats.indexfile import LONG_MAX
from formats.javahash import tags_code
from mqtool.outputs import OutputRefused
from mqtool.query.consumed import consumer_state
from mqtool.query.index_lookup import index_coverage
from mqtool.query.key import query_by_key
from mqtool.query.msgid import MessageIdError, query_by_id
from mqtool.query.queue import QueueOffsetError, query_by_queue_offset, query_by_time
from mqtool.query.topics import UnknownTopicError
from mqtool.query.view import body_view, export_messages, message_document
from store.storedir import Store
from tests.golden import STORES, expect, store_path


def messages(store: str) -> list[dict]:
    return [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE"]


def by_offset(store: str) -> dict[int, dict]:
    return {m["physicalOffset"]: m for m in messages(store)}


def carries(m: dict, topic: str, key: str) -> bool:
    """The client's exact check (`MQAdminImpl.queryMessage`), extended to the UNIQ_KEY."""
    keys = (m["keys"] or "").split(" ") if m["keys"] else []
    return m["topic"] == topic and (key in keys or m["uniqKey"] == key)


@pytest.fixture(scope="module", params=STORES)
def golden(request):
    with Store.open(store_path(request.param)) as st:
        yield request.param, st


# --- query key ----------------------------------------------------------------------------------


def test_every_index_query_filtered_equals_query_key(golden):
    """Raw hits of the real IndexService, filtered by the exact key check == `query key`.

    store-c's indexQueries are the view after recovery, which re-dispatched the two final appends; the
    index as written stops before them, so store-c is queried with scan=True."""
    name, st = golden
    records = by_offset(name)
    done = set()
    for q in expect(name)["indexQueries"]:
        ident = (q["topic"], q["key"], q["begin"], q["end"])
        if ident in done:
            continue
        done.add(ident)
        same = [
            e for e in expect(name)["indexQueries"] if (e["topic"], e["key"], e["begin"], e["end"]) == ident
        ]
        want = set()
        capped = False
        for e in same:
            want |= {o for o in e["phyOffsets"] if o in records and carries(records[o], q["topic"], q["key"])}
            capped |= len(e["phyOffsets"]) >= e["maxNum"]
        result = query_by_key(
            st, q["topic"], q["key"], begin=q["begin"], end=q["end"], scan=name == "store-c"
        )
        got = {m.physical_offset for m in result.messages}
        assert all(carries(records[o], q["topic"], q["key"]) for o in got)
        if capped:
            assert got >= want, ident
        else:
            assert got == want, ident


@pytest.mark.parametrize(
    "name, topic", [("store-a", "TopicTest"), ("store-c", "RetentionTopic"), ("store-49a", "TopicTest")]
)
@pytest.mark.parametrize("key, other", [("Aa", "BB"), ("BB", "Aa")])
def test_hash_collision_is_dropped_and_counted(name, topic, key, other):
    with Store.open(store_path(name)) as st:
        result = query_by_key(st, topic, key)
    assert [m.keys for m in result.messages] == [key]
    assert result.hits.raw_hits == 2
    assert result.hits.dropped_collisions == 1
    assert any("1 hash collision dropped" in n for n in result.notes())
    raw = next(q for q in expect(name)["indexQueries"] if q["topic"] == topic and q["key"] == key)
    dropped = [o for o in raw["phyOffsets"] if o != result.messages[0].physical_offset]
    assert by_offset(name)[dropped[0]]["keys"] == other


def test_no_cap_of_64(golden):
    """shared-key: the broker stops at 64 raw hits; query key returns every message carrying it."""
    name, st = golden
    topic = "RetentionTopic" if name == "store-c" else "TopicTest"
    result = query_by_key(st, topic, "shared-key")
    want = {m["physicalOffset"] for m in messages(name) if carries(m, topic, "shared-key")}
    assert {m.physical_offset for m in result.messages} == want
    assert len(want) > 64
    assert result.capped_like_broker
    assert any("at most 64" in n for n in result.notes())
    assert [m.physical_offset for m in result.messages] == sorted(want)


def test_max_keeps_the_newest(golden):
    name, st = golden
    topic = "RetentionTopic" if name == "store-c" else "TopicTest"
    full = query_by_key(st, topic, "shared-key")
    capped = query_by_key(st, topic, "shared-key", max_num=5)
    assert capped.truncated
    assert [m.physical_offset for m in capped.messages] == [m.physical_offset for m in full.messages][-5:]


def test_time_range_uses_index_time(golden):
    name, st = golden
    q = next(
        (q for q in expect(name)["indexQueries"] if q["begin"] > 0),
        None,
    )
    if q is None:
        pytest.skip("no narrow window in this store's indexQueries")
    result = query_by_key(st, q["topic"], q["key"], begin=q["begin"], end=q["end"])
    records = by_offset(name)
    want = {o for o in q["phyOffsets"] if o in records and carries(records[o], q["topic"], q["key"])}
    got = {m.physical_offset for m in result.messages}
    if len(q["phyOffsets"]) >= q["maxNum"]:
        assert got >= want
    else:
        assert got == want
    everything = query_by_key(st, q["topic"], q["key"])
    assert len(everything.messages) > len(got)
    # the index keeps seconds: every message in the window was stored less than a second before its end
    assert all(m.store_timestamp < q["end"] + 1000 for m in result.messages)


def test_store_c_deleted_hits_are_counted():
    with Store.open(store_path("store-c")) as st:
        result = query_by_key(st, "RetentionTopic", "shared-key")
        retention = expect("store-c")["retention"]
        rows = next(v for k, v in retention.items() if k.startswith("deletedMessages"))
        deleted = {row[0]: row for row in rows}
        raw = st.index_service.query_offset("RetentionTopic", "shared-key").phy_offsets
    assert result.hits.deleted == len([o for o in set(raw) if o < expect("store-c")["minPhyOffset"]])
    assert result.hits.deleted > 0
    gone = [o for o in raw if o < expect("store-c")["minPhyOffset"]]
    assert all(o in deleted and "shared-key" in (deleted[o][7] or "").split(" ") for o in gone)


def test_unknown_topic_and_empty_key(golden):
    _, st = golden
    with pytest.raises(UnknownTopicError):
        query_by_key(st, "NoSuchTopic", "k")
    with pytest.raises(MqtoolError):
        query_by_key(st, "OrderTopic", "")


# --- index coverage and --scan ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["store-a", "store-49a"])
def test_index_covers_a_clean_store(name):
    with Store.open(store_path(name)) as st:
        coverage = index_coverage(st)
        result = query_by_key(st, "OrderTopic", "shared-key", scan=True)
    assert not coverage.behind
    assert coverage.commitlog_end == expect(name)["maxPhyOffset"]
    assert coverage.index_end_phy_offset == expect(name)["indexFiles"][-1]["endPhyOffset"]
    assert result.scanned is None
    assert any("nothing to scan" in n for n in result.notes())


def final_appends() -> list[dict]:
    """store-c's complete final records: appended after the dispatcher stopped (README)."""
    kept = expect("store-c")["afterRecovery"]["finalAppends(never dispatched before the kill)"]
    records = by_offset("store-c")
    return [records[f["physicalOffset"]] for f in kept if f["keptByRecovery"]]


def test_store_c_index_behind_is_reported_and_scan_finds_the_final_appends():
    finals = final_appends()
    assert len(finals) == 2
    e = expect("store-c")
    with Store.open(store_path("store-c")) as st:
        coverage = index_coverage(st)
        assert coverage.behind
        assert coverage.index_end_phy_offset == e["indexFiles"][-1]["endPhyOffset"]
        assert coverage.first_unindexed_offset == finals[0]["physicalOffset"]
        for final in finals:
            key = final["keys"].split(" ")[0]
            blind = query_by_key(st, final["topic"], key)
            assert blind.messages == []
            assert any("--scan" in n and "not indexed" in n for n in blind.notes())
            found = query_by_key(st, final["topic"], key, scan=True)
            assert [m.physical_offset for m in found.messages] == [final["physicalOffset"]]
            assert found.scanned is not None
            # the scan stops where recovery does: at the torn record
            assert found.scanned.end == e["afterRecovery"]["maxPhyOffset"]
            assert found.coverage.commitlog_end == e["afterRecovery"]["maxPhyOffset"]
            by_id = query_by_id(st, final["uniqKey"], scan=True)
            assert [m.physical_offset for m in by_id.messages] == [final["physicalOffset"]]
            assert query_by_id(st, final["uniqKey"]).messages == []
        # the same query, expressed as the real store answered it after recovery
        q = next(
            q for q in e["indexQueries"] if q["key"] == finals[1]["keys"].split(" ")[0] and q["phyOffsets"]
        )
        assert q["phyOffsets"] == [finals[1]["physicalOffset"]]


def test_scan_from_an_offset(tmp_path):
    with Store.open(store_path("store-a")) as st:
        target = next(m for m in messages("store-a") if m["keys"] == "v6-both")
        result = query_by_key(st, "TopicTest", "v6-both", scan_from=target["physicalOffset"])
        assert [m.physical_offset for m in result.messages] == [target["physicalOffset"]]
        assert result.scanned.start == target["physicalOffset"]
        with pytest.raises(MqtoolError):
            query_by_key(st, "TopicTest", "v6-both", scan_from=target["physicalOffset"] + 1)


def test_behind_index_in_a_copy(tmp_path):
    """A copy of store-a without its newest index file: the index ends early; --scan finds the rest."""
    root = tmp_path / "store"
    shutil.copytree(store_path("store-a"), root)
    newest = expect("store-a")["indexFiles"][-1]["file"]
    (root / "index" / newest).unlink()
    index_end = expect("store-a")["indexFiles"][-2]["endPhyOffset"]
    late = [m for m in messages("store-a") if m["physicalOffset"] > index_end and m["keys"]]
    target = late[-1]
    key = target["keys"].split(" ")[0]
    with Store.open(root) as st:
        coverage = index_coverage(st)
        assert coverage.behind
        assert coverage.index_end_phy_offset == index_end
        first = next(
            m for m in messages("store-a") if m["physicalOffset"] > index_end and (m["keys"] or m["uniqKey"])
        )
        assert coverage.first_unindexed_offset == first["physicalOffset"]
        assert coverage.commitlog_end == expect("store-a")["maxPhyOffset"]  # the quick bound is exact here
        blind = query_by_key(st, target["topic"], key)
        want = {m["physicalOffset"] for m in messages("store-a") if carries(m, target["topic"], key)}
        assert target["physicalOffset"] not in {m.physical_offset for m in blind.messages}
        assert any("rerun with --scan" in n for n in blind.notes())
        found = query_by_key(st, target["topic"], key, scan=True)
        assert {m.physical_offset for m in found.messages} == want
        assert found.scanned.end == expect("store-a")["maxPhyOffset"]


def test_no_index_files_at_all(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(store_path("store-49a"), root)
    shutil.rmtree(root / "index")
    with Store.open(root) as st:
        coverage = index_coverage(st)
        assert coverage.index_end_phy_offset is None
        assert coverage.first_unindexed_offset == 0
        result = query_by_key(st, "TopicTest", "single-key-1", scan=True)
        assert [m.physical_offset for m in result.messages] == [0]
        assert any("no index files" in n for n in result.notes())


# --- query id -----------------------------------------------------------------------------------


def test_every_msg_id_decode_resolves(golden):
    name, st = golden
    records = by_offset(name)
    for entry in expect(name)["msgIdDecode"]:
        if entry["offset"] not in records:
            continue  # store-c: deleted by retention
        result = query_by_id(st, entry["msgId"])
        assert result.kind == "offsetMsgId"
        assert [m.physical_offset for m in result.messages] == [entry["offset"]]
        assert result.messages[0].offset_msg_id == entry["msgId"].upper()
        assert query_by_id(st, entry["msgId"].lower()).messages == result.messages


def test_every_uniq_key_resolves_to_all_its_records(golden):
    """Keys carried by several records (retries, delay/transaction re-puts, batches) are looked up
    under every topic; the single-record ones under their topic (and a sample under every topic)."""
    name, st = golden
    groups: dict[str, list[dict]] = {}
    for m in messages(name):
        if m["uniqKey"]:
            groups.setdefault(m["uniqKey"], []).append(m)
    scan = name == "store-c"  # its final appends were never dispatched
    multi = [k for k, ms in groups.items() if len(ms) > 1 or len({m["topic"] for m in ms}) > 1]
    assert multi
    for i, (key, ms) in enumerate(groups.items()):
        want = sorted((m["storeTimestamp"], m["physicalOffset"]) for m in ms)
        everywhere = key in multi or i % 25 == 0
        result = query_by_id(st, key, topic=None if everywhere else ms[0]["topic"], scan=scan)
        got = [(m.store_timestamp, m.physical_offset) for m in result.messages]
        assert got == want, key


def test_uniq_key_of_a_retried_message_lists_every_copy():
    with Store.open(store_path("store-a")) as st:
        groups: dict[str, set[str]] = {}
        for m in messages("store-a"):
            if m["uniqKey"]:
                groups.setdefault(m["uniqKey"], set()).add(m["topic"])
        key = next(k for k, topics in groups.items() if len(topics) > 1)
        result = query_by_id(st, key)
        assert result.kind == "uniqKey"
        assert {m.topic for m in result.messages} == groups[key]
        restricted = query_by_id(st, key, topic=sorted(groups[key])[0])
        assert {m.topic for m in restricted.messages} == {sorted(groups[key])[0]}


def test_offset_msg_id_from_another_host():
    """Same offset, another store host: the record is shown with a note that the host differs."""
    with Store.open(store_path("store-a")) as st:
        entry = expect("store-a")["msgIdDecode"][0]
        other = "C0A8000B" + entry["msgId"][8:]  # 192.168.0.11 instead of .10
        result = query_by_id(st, other)
        assert [m.physical_offset for m in result.messages] == [entry["offset"]]
        assert result.kind == "offsetMsgId"
        assert any("not from this store" in n for n in result.notes())


@pytest.mark.parametrize("bad", ["", "zz", "0123", "G" * 32, "C0A8000A00002A9F000000000000000"])
def test_bad_ids(bad):
    with Store.open(store_path("store-a")) as st, pytest.raises(MessageIdError):
        query_by_id(st, bad)


def test_unknown_id_finds_nothing():
    with Store.open(store_path("store-a")) as st:
        result = query_by_id(st, "FD" * 16)
        assert result.messages == []
        assert result.kind == "uniqKey"
        with pytest.raises(UnknownTopicError):
            query_by_id(st, "FD" * 16, topic="NoSuchTopic")


# --- query offset -------------------------------------------------------------------------------


def as_written_max(name: str, queue: str) -> int | None:
    """store-c's consumeQueues are after recovery; its files end where the live store's queues did."""
    if name != "store-c":
        return None
    return expect(name)["crash"]["liveStoreAtKill"]["queues"].get(queue, {}).get("maxOffset")


def test_query_offset_matches_every_cq_unit(golden):
    name, st = golden
    records = by_offset(name)
    for qname, cq in expect(name)["consumeQueues"].items():
        topic, queue_id = cq["topic"], cq["queueId"]
        limit = as_written_max(name, qname)
        units = [u for u in cq["units[queueOffset,phyOffset,size,tagsCode]"] if limit is None or u[0] < limit]
        if not units:
            continue
        first = units[0][0]
        result = query_by_queue_offset(st, topic, queue_id, first, count=len(units))
        assert [(m.queue_offset, m.physical_offset, m.total_size) for m in result.messages] == [
            (records[u[1]]["queueOffset"], u[1], u[2]) for u in units
        ]
        for m in result.messages:
            assert m.tags_code() == next(u[3] for u in units if u[1] == m.physical_offset)
        single = query_by_queue_offset(st, topic, queue_id, units[-1][0])
        assert [m.physical_offset for m in single.messages] == [units[-1][1]]


def test_query_offset_errors():
    with Store.open(store_path("store-c")) as st:
        with pytest.raises(QueueOffsetError, match="below its minOffset 292"):
            query_by_queue_offset(st, "RetentionTopic", 0, 5)
        with pytest.raises(QueueOffsetError, match="maxOffset is 815"):
            query_by_queue_offset(st, "RetentionTopic", 0, 815)
        with pytest.raises(QueueOffsetError, match="no queue 9"):
            query_by_queue_offset(st, "RetentionTopic", 9, 0)
        with pytest.raises(UnknownTopicError):
            query_by_queue_offset(st, "NoSuchTopic", 0, 0)
        with pytest.raises(QueueOffsetError, match="holds no message"):
            query_by_queue_offset(st, "SCHEDULE_TOPIC_XXXX", 17, 1)


# --- query time ---------------------------------------------------------------------------------


def test_query_time_matches_the_messages(golden):
    name, st = golden
    topic = "RetentionTopic" if name == "store-c" else "TopicTest"
    live = [m for m in messages(name) if m["topic"] == topic]
    if name == "store-c":
        live = [m for m in live if m["physicalOffset"] < final_appends()[0]["physicalOffset"]]
    times = sorted(m["storeTimestamp"] for m in live)
    begin, end = times[len(times) // 4], times[len(times) // 2]
    want = sorted(
        (m["storeTimestamp"], m["physicalOffset"]) for m in live if begin <= m["storeTimestamp"] <= end
    )
    result = query_by_time(st, topic, begin=begin, end=end)
    got = [(m.store_timestamp, m.physical_offset) for m in result.messages]
    assert sorted(got) == want
    assert [t for t, _ in got] == sorted(t for t, _ in got)
    # paging: pages of 7 put together give the same answer
    pages, skip = [], 0
    while True:
        page = query_by_time(st, topic, begin=begin, end=end, skip=skip, max_num=7)
        pages += [(m.store_timestamp, m.physical_offset) for m in page.messages]
        if page.next_skip is None:
            break
        assert page.next_skip == skip + 7
        skip = page.next_skip
    assert pages == got
    # one queue, one tag
    tagged = [
        m for m in live if m["queueId"] == 1 and m["tags"] == "tag1" and begin <= m["storeTimestamp"] <= end
    ]
    result = query_by_time(st, topic, begin=begin, end=end, queue_id=1, tag="tag1")
    assert [m.physical_offset for m in result.messages] == [m["physicalOffset"] for m in tagged]
    both = query_by_time(st, topic, begin=begin, end=end, tag="tag1 || tag2")
    assert {m.tags for m in both.messages} <= {"tag1", "tag2"}
    assert len(both.messages) == len(
        [m for m in live if m["tags"] in ("tag1", "tag2") and begin <= m["storeTimestamp"] <= end]
    )


def test_query_time_tag_collision_dropped():
    """TAGS `Aa` and `BB` hash alike (same tagsCode): the exact check drops the other one."""
    assert tags_code("Aa") == tags_code("BB")
    with Store.open(store_path("store-a")) as st:
        result = query_by_time(st, "TopicTest", begin=0, end=LONG_MAX, tag="Aa")
    assert all(m.tags == "Aa" for m in result.messages)


def test_query_time_errors():
    with Store.open(store_path("store-a")) as st:
        with pytest.raises(UnknownTopicError):
            query_by_time(st, "NoSuchTopic", begin=0, end=1)
        with pytest.raises(MqtoolError):
            query_by_time(st, "TopicTest", begin=2, end=1)


# --- documents and export -----------------------------------------------------------------------


def test_message_document_body_and_consumed():
    with Store.open(store_path("store-a")) as st:
        committed = consumer_state(st)
        first = st.commitlog.read_message_at(0)
        doc = message_document(first, committed)
        assert doc["bodyText"] == base64.b64decode(messages("store-a")[0]["bodyBase64"]).decode()
        assert doc["msgId"] == first.uniq_key
        assert doc["consumedBy"] == {"groupA": True, "groupB": True}
        limited = message_document(first, committed, body_limit=5)
        assert limited["bodyText"] == doc["bodyText"][:5]
        assert base64.b64decode(limited["body"]) == first.body[:5]
        assert limited["bodyTruncated"]
        zlib_msg = next(m for m in messages("store-a") if m["sysFlag"] & 0x700 == 0x300)
        doc = message_document(st.commitlog.read_message_at(zlib_msg["physicalOffset"]), committed)
        assert doc["bodyDecompressed"]
        assert doc["bodyText"] == zlib.decompress(base64.b64decode(zlib_msg["bodyBase64"])).decode()
        json.dumps(doc)


def test_export(tmp_path):
    with Store.open(store_path("store-a")) as st:
        result = query_by_key(st, "TopicTest", "order-123")
        export = export_messages(result.messages, tmp_path / "out", st)
        manifest = json.loads(export.manifest.read_text())
        assert len(manifest) == len(result.messages) == len(export.files)
        for entry, msg in zip(manifest, result.messages, strict=True):
            assert (tmp_path / "out" / entry["file"]).read_bytes() == body_view(msg).data
            assert entry["physicalOffset"] == msg.physical_offset
            assert "body" not in entry
        with pytest.raises(OutputRefused, match="already holds an export"):
            export_messages(result.messages, tmp_path / "out", st)
        with pytest.raises(OutputRefused, match="is inside the store"):
            export_messages(result.messages, store_path("store-a") / "exported", st)
    assert not (store_path("store-a") / "exported").exists()


def test_a_missing_middle_commitlog_file_is_one_note_with_the_right_range(tmp_path):
    """A copy of store-a without its middle commitlog file (issue 26, item 7): the hits into it are one
    note naming the missing file and its range - not retention, not 'outside [0, 3145728)' - and the
    count is the index's hits in that range; the hits before and after it are still found."""
    shutil.copytree(store_path("store-a"), tmp_path / "s", ignore=shutil.ignore_patterns("expect.json"))
    root = tmp_path / "s"
    with Store.open(root) as pristine:
        raw = set(pristine.index_service.query_offset("TopicTest", "shared-key").phy_offsets)
    (root / "commitlog" / "00000000000001048576").unlink()
    gap = {o for o in raw if 1048576 <= o < 2097152}
    assert gap and len(gap) < len(raw)
    with Store.open(root) as st:
        result = query_by_key(st, "TopicTest", "shared-key")
        with pytest.raises(
            MqtoolError, match=r"is in commitlog file 00000000000001048576 \[1048576, 2097152\)"
        ):
            st.commitlog.read_message_at(min(gap))
    notes = result.notes()
    about_gap = [n for n in notes if "00000000000001048576" in n]
    assert len(about_gap) == 1, notes
    assert about_gap[0].startswith(f"{len(gap)} index hit(s) point into commitlog file 00000000000001048576 ")
    assert "[1048576, 2097152), which is missing" in about_gap[0]
    assert not any("retention" in n and "not deleted by retention" not in n for n in notes), notes
    assert not any("outside the commitlog files" in n for n in notes), notes
    assert result.hits.deleted == 0
    assert {m.physical_offset for m in result.messages} == raw - gap  # every other hit confirmed
    assert len(notes) <= 3  # the gap, the broker's 64 cap; no line per hit
