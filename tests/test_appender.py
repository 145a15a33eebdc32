"""Offline appends with the broker's rules (store/appender.py) and the dispatcher (store/dispatch.py).

The strongest check used throughout: after an append, rebuilding the ConsumeQueues and the index from
the commitlog (the broker's own dispatch, as store.rebuild does it) gives exactly the files the
appender wrote, and every record decodes with the foundation decoder.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from golden import copy_store, expect, store_path
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.checkpoint import decode_checkpoint
from formats.consumequeue import FILLER_UNIT, decode_unit
from formats.indexfile import IndexGeometry
from formats.java.hash import index_key_hash
from formats.message.commitlog import Blank, Message, build_message, decode_record, encode_message
from formats.message.recordfast import encode_record
from formats.structs import (
    MAGIC_V1,
    MAGIC_V2,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from store.appender import AppendError, CommitLogAppender, NewMessage
from store.dispatch import DispatchRequest
from store.index.indexservice import IndexService
from store.index.indexwriter import IndexWriter, list_index_files
from store.io.filewrites import FileSet, set_crash_after
from store.layout import delay_levels_ms
from store.log.commitlog import CommitLog
from store.queue.consumequeue import ConsumeQueue
from store.queue.consumequeue_writer import ConsumeQueueWriter
from store.rebuild.build import build_staging, compare_consume_queues, compare_index
from store.version import detect_broker_version

GEOMETRY = {"store-a": IndexGeometry(64, 4000), "store-49a": IndexGeometry(64, 2500)}
PRODUCER = (bytes([10, 0, 0, 7]), 40123)


class Clock:
    """A deterministic broker clock: each reading moves on by `step` ms."""

    def __init__(self, start: int = 1_795_270_000_000, step: int = 3) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> int:
        self.now += self.step
        return self.now


def messages_of(root: Path) -> list[Message]:
    with CommitLog.open(root) as cl:
        records = list(cl.iter_records())
    assert records[-1].kind == "end", records[-1]
    return [r for r in records if isinstance(r, Message)]


def assert_dispatch_matches_rebuild(
    root: Path, tmp_path: Path, geometry: IndexGeometry, cq_size: int
) -> None:
    """The appender's ConsumeQueue/index files are what a rebuild from the commitlog gives."""
    result = build_staging(
        root,
        tmp_path / "rebuild-check",
        cq=True,
        index=True,
        cq_file_size=cq_size,
        index_geometry=geometry,
        delay_levels=delay_levels_ms(None),
        now_ms=lambda: 0,
    )
    assert result.stop_kind == "end"
    assert [q for q in compare_consume_queues(root, result) if q.status != "same"] == []
    assert compare_index(root, result).status == "same"
    shutil.rmtree(tmp_path / "rebuild-check")


def bulk(n: int, topic: str = "TopicTest", queues: int = 4, body: int = 300) -> list[NewMessage]:
    return [
        NewMessage(
            topic,
            bytes([97 + i % 26]) * (body + i % 97),
            {"UNIQ_KEY": f"0A000007{i:024X}", "KEYS": f"app-{i} shared", "TAGS": f"T{i % 3}", "seq": str(i)},
            queue_id=i % queues,
            born_host=PRODUCER,
            born_timestamp=1_795_269_000_000 + i,
        )
        for i in range(n)
    ]


# --- encoding -----------------------------------------------------------------------------------

hosts = st.one_of(
    st.tuples(st.binary(min_size=4, max_size=4), st.integers(0, 65535)),
    st.tuples(st.binary(min_size=16, max_size=16), st.integers(0, 65535)),
)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(
    topic=st.text(alphabet="abcXYZ%_-09", min_size=1, max_size=200),
    body=st.binary(max_size=300),
    props=st.dictionaries(
        st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "a", "中"]), st.text("xyz é", min_size=1)
    ),
    born=hosts,
    store=hosts,
    ints=st.tuples(int32, int32, int64, int64, int32, int64, int64, int32, int64),
)
def test_fast_encoder_equals_encode_message(topic, body, props, born, store, ints):
    queue_id, flag, queue_offset, phy, sys_flag, born_ts, store_ts, reconsume, prepared = ints
    msg = build_message(
        topic=topic,
        body=body,
        properties=props,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        physical_offset=phy,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born,
        store_timestamp=store_ts,
        store_host=store,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
    )
    fast = encode_record(
        topic=topic.encode(),
        magic=msg.magic_code,
        body=body,
        properties=msg.properties_raw,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        physical_offset=phy,
        sys_flag=msg.sys_flag,
        born_timestamp=born_ts,
        born_host=born,
        store_timestamp=store_ts,
        store_host=store,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
    )
    assert fast == encode_message(msg)
    assert msg.magic_code == (MAGIC_V2 if len(topic) > 127 else MAGIC_V1)


# --- versions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("store", "major"), [("store-a", 5), ("store-c", 5), ("store-49a", 4)])
def test_detect_broker_version(store, major, tmp_path):
    assert detect_broker_version(store_path(store)).major == major
    # without the 5.x-only files the record and the config files still tell
    root = copy_store(store, tmp_path / store)
    for name in ("abort.bak", "abort"):
        (root / name).unlink(missing_ok=True)
    last = messages_of(root)[-1] if store != "store-c" else None
    assert detect_broker_version(root, last).major == major
    assert detect_broker_version(root).major == major  # consumerOffset.json


def test_detect_broker_version_of_an_empty_directory(tmp_path):
    assert detect_broker_version(tmp_path) is None


# --- appending to the golden stores ---------------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_append_continues_the_store_like_the_broker(store, tmp_path):
    root = copy_store(store, tmp_path / store)
    before = messages_of(root)
    last = before[-1]
    queue_max = {(t, q): ConsumeQueue(root, t, q).max_offset for t, q in [("TopicTest", i) for i in range(4)]}
    clock = Clock(start=last.store_timestamp - 10_000)  # a clock behind the store's: times must not go back
    with CommitLogAppender(root, now=clock) as appender:
        assert appender.version.major == (4 if store == "store-49a" else 5)
        assert appender.position == expect(store)["maxPhyOffset"]
        results = [appender.append(m) for m in bulk(40)]
        assert not (root / "abort").exists()  # nothing written before close: no marker yet
    assert not (root / "abort").exists()
    after = messages_of(root)
    assert after[: len(before)] == before
    new = after[len(before) :]
    assert len(new) == 40
    expected_offsets = dict(queue_max)
    for msg, res, spec in zip(new, results, bulk(40), strict=True):
        key = (msg.topic, msg.queue_id)
        assert msg.queue_offset == res.queue_offset == expected_offsets[key]
        expected_offsets[key] += 1
        assert msg.physical_offset == res.physical_offset
        assert msg.store_timestamp == res.store_timestamp >= last.store_timestamp
        assert (msg.store_host, msg.store_port) == (last.store_host, last.store_port)
        assert (msg.born_host, msg.born_port) == PRODUCER
        assert msg.body == spec.body and msg.magic_code == MAGIC_V1
        assert msg.properties_raw.endswith(b"\x02") == (store != "store-49a")
        assert res.msg_id == msg.offset_msg_id
    assert [m.store_timestamp for m in new] == sorted(m.store_timestamp for m in new)
    assert_dispatch_matches_rebuild(root, tmp_path, GEOMETRY[store], 6000)
    cp = decode_checkpoint((root / "checkpoint").read_bytes())
    assert cp.physic_msg_timestamp == cp.logics_msg_timestamp == new[-1].store_timestamp
    index = IndexService(root)
    assert cp.index_msg_timestamp == index.headers()[-1][1].end_timestamp
    # the keys are found the broker's way
    hits = index.query_offset("TopicTest", "app-7").phy_offsets
    assert hits == [new[7].physical_offset]
    assert new[7].physical_offset in index.query_offset("TopicTest", new[7].uniq_key).phy_offsets
    index.close()


def test_append_rolls_files_with_a_blank_record(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    before = CommitLog.open(root)
    last_file = before.files[-1]
    before.close()
    specs = bulk(2200, body=700)  # about 2 MiB: two new 1 MiB files
    with CommitLogAppender(root, now=Clock()) as appender:
        for m in specs:
            appender.append(m)
    with CommitLog.open(root) as cl:
        files = cl.queue.files
        assert [f.size for f in files] == [1048576] * len(files)
        assert len(files) >= 5
        assert [f.start_offset for f in files] == [i * 1048576 for i in range(len(files))]
        records = list(cl.iter_records(from_offset=last_file.start_offset))
    blanks = [r for r in records if isinstance(r, Blank)]
    assert len(blanks) >= 2
    for blank in blanks:
        file_end = blank.physical_offset - blank.physical_offset % 1048576 + 1048576
        assert blank.total_size == file_end - blank.physical_offset
        assert blank.problems == ()
    # new files are sparse: most of the last one is a hole
    newest = root / "commitlog" / files[-1].name
    assert os.stat(newest).st_blocks * 512 < 1048576
    assert_dispatch_matches_rebuild(root, tmp_path, GEOMETRY["store-a"], 6000)


def test_transaction_types_and_delay_tags_code(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    clock = Clock()
    specs = [
        NewMessage("TopicTest", b"prepared", {"KEYS": "tx-prepared"}, sys_flag=TRANSACTION_PREPARED_TYPE),
        NewMessage("TopicTest", b"rollback", {"KEYS": "tx-rollback"}, sys_flag=TRANSACTION_ROLLBACK_TYPE),
        NewMessage(
            "TopicTest",
            b"commit",
            {"KEYS": "tx-commit"},
            sys_flag=TRANSACTION_COMMIT_TYPE,
            prepared_transaction_offset=123,
        ),  # fmt: skip
        NewMessage(
            "SCHEDULE_TOPIC_XXXX",
            b"later",
            {"DELAY": "4", "REAL_TOPIC": "TopicTest", "REAL_QID": "0", "TAGS": "x"},
            queue_id=3,
        ),  # fmt: skip
    ]
    cq_before = ConsumeQueue(root, "TopicTest", 0).max_offset
    sched_before = ConsumeQueue(root, "SCHEDULE_TOPIC_XXXX", 3).max_offset
    with CommitLogAppender(root, now=clock) as appender:
        prepared, rollback, commit, delayed = (appender.append(m) for m in specs)
    assert prepared.queue_offset == rollback.queue_offset == 0
    assert commit.queue_offset == cq_before
    queue = ConsumeQueue(root, "TopicTest", 0)
    assert queue.max_offset == cq_before + 1  # only the COMMIT record got a unit
    assert queue.unit(cq_before).phy_offset == commit.physical_offset
    sched = ConsumeQueue(root, "SCHEDULE_TOPIC_XXXX", 3)
    assert sched.max_offset == sched_before + 1
    assert sched.unit(sched_before).tags_code == delayed.store_timestamp + 30_000
    index = IndexService(root)
    assert index.query_offset("TopicTest", "tx-prepared").phy_offsets == [prepared.physical_offset]
    assert index.query_offset("TopicTest", "tx-rollback").phy_offsets == []
    assert index.query_offset("TopicTest", "tx-commit").phy_offsets == [commit.physical_offset]
    index.close()
    assert_dispatch_matches_rebuild(root, tmp_path, GEOMETRY["store-a"], 6000)


def test_new_store_from_nothing(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    geometry = IndexGeometry(16, 10)
    with CommitLogAppender(
        root, file_size=65536, cq_file_size=200, index_geometry=geometry, now=Clock()
    ) as ap:
        assert ap.version.major == 5 and ap.position == 0
        results = [ap.append(m) for m in bulk(60, queues=2, body=1500)]
    assert [r.queue_offset for r in results[:4]] == [0, 0, 1, 1]
    names = sorted(p.name for p in (root / "commitlog").iterdir())
    assert names[0] == "00000000000000000000" and len(names) >= 2
    assert sorted(p.name for p in (root / "consumequeue" / "TopicTest" / "0").iterdir())[:2] == [
        "00000000000000000000",
        "00000000000000000200",
    ]
    assert len(list_index_files(root / "index")) > 10  # 9 entries per file, 3 keys per message
    assert (root / "checkpoint").stat().st_size == 4096
    assert_dispatch_matches_rebuild(root, tmp_path, geometry, 200)
    for f in IndexService(root, 16, 10).files:
        f.validate()


def test_v2_topics_5x_only_and_topic_rules(tmp_path):
    long_retry = "%RETRY%" + "g" * 130
    root5 = copy_store("store-a", tmp_path / "store-a")
    with CommitLogAppender(root5, now=Clock()) as ap:
        res = ap.append(NewMessage(long_retry, b"v2", {"KEYS": "k"}))
        with pytest.raises(AppendError, match="only for %RETRY%"):
            ap.append(NewMessage("T" * 130, b"x"))
        with pytest.raises(AppendError, match="255"):
            ap.append(NewMessage("%RETRY%" + "g" * 250, b"x"))
    with CommitLog.open(root5) as cl:
        assert cl.read_message_at(res.physical_offset).magic_code == MAGIC_V2
    root4 = copy_store("store-49a", tmp_path / "store-49a")
    with CommitLogAppender(root4, now=Clock()) as ap, pytest.raises(AppendError, match="V2"):
        ap.append(NewMessage(long_retry, b"v2"))


def test_refusals(tmp_path):
    # a crashed store: abort present, and a torn tail record
    root = copy_store("store-c", tmp_path / "store-c")
    with pytest.raises(AppendError, match="abort"):
        CommitLogAppender(root)
    with pytest.raises(AppendError, match="torn") as err:
        CommitLogAppender(root, allow_unclean=True)
    assert err.value.offset == 4412507
    # records never dispatched: their queue offsets are unknown
    root = copy_store("store-a", tmp_path / "undispatched" / "store-a")
    with CommitLogAppender(root, now=Clock(), dispatch=False) as ap:
        ap.append(NewMessage("TopicTest", b"only in the commitlog"))
    assert (root / "abort").exists()  # commitlog-only appends leave the broker's recovery to dispatch
    (root / "abort").unlink()
    with pytest.raises(AppendError, match="never dispatched"):
        CommitLogAppender(root)
    # a commitlog file size that is not the store's
    with pytest.raises(AppendError, match="1048576"):
        CommitLogAppender(copy_store("store-49a", tmp_path / "size" / "store-49a"), file_size=2 * 1048576)
    with pytest.raises(AppendError, match="maxHashSlotNum"):
        CommitLogAppender(
            copy_store("store-49a", tmp_path / "geo" / "store-49a"), index_geometry=IndexGeometry(128, 2500)
        )


def test_stale_bytes_after_the_end_are_zeroed(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    last = root / "commitlog" / "00000000000002097152"
    end = expect("store-a")["maxPhyOffset"] - 2097152
    with open(last, "r+b") as fh:  # an old record left behind after a truncation
        fh.seek(end + 5000)
        fh.write(b"\xde\xad" * 100)
    with CommitLogAppender(root, now=Clock()) as ap:
        assert any("stale" in w for w in ap.warnings)
        res = ap.append(NewMessage("TopicTest", b"x" * 100))
    data = last.read_bytes()
    assert data[res.physical_offset - 2097152 + res.total_size :].count(0) == len(data) - (
        res.physical_offset - 2097152 + res.total_size
    )


def test_index_file_is_replaced_copy_on_write(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    last = root / "index" / list_index_files(root / "index")[-1]
    inode = last.stat().st_ino
    with CommitLogAppender(root, now=Clock()) as ap:
        ap.append(NewMessage("TopicTest", b"x", {"KEYS": "cow"}))
    assert last.stat().st_ino != inode
    assert last.stat().st_size == 80296
    assert not [p for p in root.iterdir() if p.name.startswith(".mqtool")]
    assert_dispatch_matches_rebuild(root, tmp_path, GEOMETRY["store-a"], 6000)


def test_zero_length_last_file_is_replaced(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    (root / "commitlog" / "00000000000003145728").touch()  # 5.x leaves such a file; it is ignored
    specs = bulk(1800, body=700)
    with CommitLogAppender(root, now=Clock()) as ap:
        for m in specs:
            ap.append(m)
    assert (root / "commitlog" / "00000000000003145728").stat().st_size == 1048576
    assert_dispatch_matches_rebuild(root, tmp_path, GEOMETRY["store-a"], 6000)


def test_abort_marker_exists_while_writing(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    seen = []
    with CommitLogAppender(root, now=Clock(), batch_bytes=1) as ap:
        original = ap.dispatcher.commit

        def spy(*args, **kwargs):
            seen.append((root / "abort").exists())
            return original(*args, **kwargs)

        ap.dispatcher.commit = spy
        ap.append(NewMessage("TopicTest", b"x"))
        ap.append(NewMessage("TopicTest", b"y"))
    assert seen == [True, True]  # one commit per append (batch_bytes=1), none left for close()
    assert not (root / "abort").exists()


def test_crash_hook_counts_writes(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    set_crash_after(10**9)
    try:
        with CommitLogAppender(root, now=Clock()) as ap:
            ap.append(NewMessage("TopicTest", b"x", {"KEYS": "k"}))
        from store.io import filewrites

        writes = 10**9 - filewrites._crash_budget[0]
    finally:
        set_crash_after(None)
    assert 5 <= writes < 40


# --- the dispatcher against the reference implementations -------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["T", "Topic", "%RETRY%g"]),
            st.lists(st.sampled_from(["a", "b", "Aa", "BB", "order-1", "中文", "k" * 30]), max_size=4),
            st.booleans(),
            st.sampled_from([0, TRANSACTION_ROLLBACK_TYPE, TRANSACTION_PREPARED_TYPE]),
            st.integers(0, 4000),
        ),
        max_size=60,
    )
)
def test_index_writer_equals_index_service(tmp_path_factory, items):
    geometry = IndexGeometry(7, 5)
    directory = tmp_path_factory.mktemp("idx") / "index"
    names = iter(f"2024010100000{i:04d}" for i in range(10_000))
    writer = IndexWriter(directory, geometry, now_ms=lambda: 0)
    writer._new_name = lambda: next(names)  # noqa: SLF001 - deterministic names for the comparison
    reference = IndexService(files=[], geometry=geometry)
    phy, ts = 0, 1_000_000
    for topic, keys, with_uniq, sys_flag, gap in items:
        phy += 1 + gap
        ts += gap * 7
        uniq = f"U{phy}" if with_uniq else None
        text = " ".join(keys) or None
        reference.build_index(topic, phy, ts, sys_flag, uniq, text)
        writer.build(DispatchRequest(topic, 0, phy, 1, 0, ts, 0, text, uniq, sys_flag))
    files = FileSet()
    writer.flush(files, directory.parent)
    files.sync_and_close()
    written = [(directory / n).read_bytes() for n in list_index_files(directory)]
    expected = []
    for f in reference.files:
        data = bytearray(f.data)
        if data[36:40] == bytes(4):  # a file without entries: the broker's flush writes indexCount 1
            data[36:40] = (1).to_bytes(4, "big")
        expected.append(bytes(data))
    assert written == expected


def test_key_hash_fast_path():
    writer = IndexWriter(Path("/nonexistent"), IndexGeometry(7, 5), now_ms=lambda: 0)
    for topic, key in [
        ("TopicTest", "7F000001000418B4AAC208A0C5000000"),
        ("TopicTest", "OrderID188"),
        ("中文", "k"),
        ("T", "中文 key"),
        ("T", "FD0000000000000000000000000000024BA95FFD2B27697E29E10000"),
    ]:
        assert writer.key_hash(topic, key) == index_key_hash(f"{topic}#{key}")


def test_consume_queue_writer_fills_pre_blank(tmp_path):
    cq_root = tmp_path / "consumequeue"
    writer = ConsumeQueueWriter(cq_root, "T", 0, 200)  # 10 units per file
    assert writer.put(1000, 50, 7, 23)  # first unit of the queue at offset 23
    assert not writer.put(900, 50, 7, 24)  # below maxPhysicOffset: "build consume queue repeatedly"
    assert writer.put(2000, 50, 8, 24)
    assert not writer.put(3000, 50, 8, 20)  # queue offset below the end: a repeat
    files = FileSet()
    writer.flush(files, tmp_path)
    files.sync_and_close()
    assert sorted(p.name for p in (cq_root / "T" / "0").iterdir()) == ["00000000000000000400"]
    data = (cq_root / "T" / "0" / "00000000000000000400").read_bytes()
    assert [decode_unit(data, i * 20) for i in range(3)] == [FILLER_UNIT] * 3
    assert decode_unit(data, 60).phy_offset == 1000 and decode_unit(data, 80).phy_offset == 2000
    queue = ConsumeQueue(tmp_path, "T", 0, commitlog_min_offset=0, file_size=200)
    assert (queue.min_offset, queue.max_offset) == (23, 25)
    # reopened, the writer continues where recover() puts the end
    again = ConsumeQueueWriter(cq_root, "T", 0, 200)
    assert (again.max_offset, again.max_physic_offset) == (25, 2050)


def test_fast_dispatch_reader_equals_decoder():
    from store.dispatch import iter_dispatch

    for store in ("store-a", "store-c", "store-49a"):
        with CommitLog.open(store_path(store)) as cl:
            fast = list(iter_dispatch(cl))
            slow = []
            for rec in cl.iter_records():
                slow.append(DispatchRequest.from_message(rec) if isinstance(rec, Message) else rec)
            light = list(iter_dispatch(cl, light=True))
        assert len(fast) == len(slow) == len(light)
        for a, b, c in zip(fast, slow, light, strict=True):
            if isinstance(b, DispatchRequest):
                assert a == b
                assert (c.commit_log_offset, c.msg_size, c.store_timestamp, c.sys_flag) == (
                    b.commit_log_offset,
                    b.msg_size,
                    b.store_timestamp,
                    b.sys_flag,
                )
            else:
                assert (
                    (a.kind, a.physical_offset) == (c.kind, c.physical_offset) == (b.kind, b.physical_offset)
                )


def test_checkpoint_fields_never_go_back(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    before = decode_checkpoint((root / "checkpoint").read_bytes())
    with CommitLogAppender(root, now=Clock(start=1_000)) as ap:  # a clock far in the past
        ap.append(NewMessage("TopicTest", b"x"))
    after = decode_checkpoint((root / "checkpoint").read_bytes())
    assert after.physic_msg_timestamp >= before.physic_msg_timestamp
    assert after.index_msg_timestamp >= before.index_msg_timestamp
    assert after.rest == before.rest


def test_records_decode_with_the_foundation_decoder(tmp_path):
    root = copy_store("store-49a", tmp_path / "store-49a")
    with CommitLogAppender(root, now=Clock()) as ap:
        results = [ap.append(m) for m in bulk(5)]
    with CommitLog.open(root) as cl:
        for res in results:
            f = cl.queue.find(res.physical_offset)
            rec = decode_record(f.buffer(), res.physical_offset - f.start_offset, f.start_offset)
            assert isinstance(rec, Message) and rec.problems == ()
            assert struct.unpack(">i", bytes(f.buffer()[res.physical_offset - f.start_offset :][:4]))[0] == (
                res.total_size
            )
