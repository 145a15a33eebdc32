"""store.scan: quick header walks (valid end, last record, store time) and chunked columnar walks."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from golden import STORES, expect, store_path

from formats.commitlog import Message
from store.commitlog import CommitLog, OffsetError
from store.scan import (
    check_head,
    data_extents,
    first_record,
    iter_batches,
    last_nonzero,
    last_record,
    store_time_at,
    valid_end_fast,
    walk_end,
)


def _messages(store: str) -> list[dict]:
    return [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE"]


def _commitlog(store: str) -> CommitLog:
    return CommitLog.open(store_path(store))


def test_valid_end_matches_the_broker():
    assert valid_end_fast(_commitlog("store-a")) == expect("store-a")["maxPhyOffset"]
    assert valid_end_fast(_commitlog("store-49a")) == expect("store-49a")["maxPhyOffset"]
    c = expect("store-c")
    for crc in (False, True):
        end = walk_end(_commitlog("store-c"), check_crc=crc)
        assert end.valid_end == c["afterRecovery"]["maxPhyOffset"] == c["asWritten"]["tornRecordOffset"]
    assert walk_end(_commitlog("store-c"), check_crc=True).reason == "crc_mismatch"
    assert walk_end(_commitlog("store-a")).reason == "end"


@pytest.mark.parametrize("store", STORES)
def test_valid_end_equals_construct_walk(store):
    cl = _commitlog(store)
    assert valid_end_fast(cl, check_crc=True) == cl.max_offset
    first = cl.files[0].start_offset
    assert valid_end_fast(cl, first, check_crc=True) == cl.valid_end(first)


@pytest.mark.parametrize("store", STORES)
def test_last_and_first_record(store):
    msgs = [m for m in _messages(store)]
    if store == "store-c":  # the torn record is not a MESSAGE in expect.json
        msgs = [m for m in msgs if m["physicalOffset"] < expect(store)["asWritten"]["tornRecordOffset"]]
    last, first = last_record(_commitlog(store)), first_record(_commitlog(store))
    assert last.physical_offset == msgs[-1]["physicalOffset"]
    assert last.store_timestamp == msgs[-1]["storeTimestamp"]
    assert last.topic == msgs[-1]["topic"]
    assert last.queue_offset == msgs[-1]["queueOffset"]
    assert first.physical_offset == msgs[0]["physicalOffset"]
    assert first.total_size == msgs[0]["totalSize"]


@pytest.mark.parametrize("store", STORES)
def test_store_time_at(store):
    cl = _commitlog(store)
    for m in _messages(store):
        assert store_time_at(cl, m["physicalOffset"]) == m["storeTimestamp"]
        assert store_time_at(cl, m["physicalOffset"], m["totalSize"]) == m["storeTimestamp"]
    m = _messages(store)[3]
    assert store_time_at(cl, m["physicalOffset"], m["totalSize"] + 1) is None
    assert store_time_at(cl, m["physicalOffset"] + 1) is None
    assert store_time_at(cl, 10**15) is None
    blanks = [r for r in expect(store)["messages"] if r["kind"] == "BLANK"]
    assert store_time_at(cl, blanks[0]["physicalOffset"]) is None


def test_store_time_at_ipv6_born_host():
    cl = _commitlog("store-a")
    v6 = [m for m in _messages("store-a") if m["sysFlag"] & 0x10]
    assert v6
    for m in v6:
        assert store_time_at(cl, m["physicalOffset"]) == m["storeTimestamp"]


@pytest.mark.parametrize("store", STORES)
def test_check_head_agrees_with_the_construct_decoder(store):
    cl = _commitlog(store)
    for f in cl.files:
        buf = f.buffer()
        records = [r for r in cl.iter_records(f.start_offset) if r.physical_offset < f.end_offset]
        for record in records:
            pos = record.physical_offset - f.start_offset
            status, total, fields = check_head(buf, f.size, pos, True, True)
            if isinstance(record, Message):
                assert status == "ok"
                assert total == record.total_size
                assert fields[5] == record.store_timestamp
                assert fields[6].decode() == record.topic
            else:
                assert status != "ok"


def _copy(store: str, tmp_path: Path) -> Path:
    dst = tmp_path / store
    shutil.copytree(store_path(store), dst)
    return dst


def test_walk_end_stops_at_a_corrupt_record(tmp_path):
    root = _copy("store-a", tmp_path)
    m = _messages("store-a")[100]
    path = root / "commitlog" / m["file"]
    data = bytearray(path.read_bytes())
    pos = m["physicalOffset"] - int(m["file"])
    data[pos + 4 : pos + 8] = struct.pack(">i", 0x12345678)
    path.write_bytes(bytes(data))
    cl = CommitLog.open(root)
    end = walk_end(cl, cl.files[0].start_offset)
    assert (end.valid_end, end.reason) == (m["physicalOffset"], "bad_magic")
    assert end.last.physical_offset == _messages("store-a")[99]["physicalOffset"]


def test_walk_end_crc(tmp_path):
    root = _copy("store-a", tmp_path)
    m = next(m for m in _messages("store-a")[50:] if m["bodyLength"] > 100)
    path = root / "commitlog" / m["file"]
    data = bytearray(path.read_bytes())
    pos = m["physicalOffset"] - int(m["file"])
    data[pos + 100] ^= 0x01  # inside the body
    path.write_bytes(bytes(data))
    cl = CommitLog.open(root)
    first = cl.files[0].start_offset
    assert walk_end(cl, first, check_crc=True).valid_end == m["physicalOffset"]
    assert walk_end(cl, first, check_crc=True).reason == "crc_mismatch"
    assert walk_end(cl, first, check_crc=False).valid_end == expect("store-a")["maxPhyOffset"]


def test_iter_batches_in_chunks_equals_the_whole_walk():
    cl = _commitlog("store-a")
    whole = [b for _, b in iter_batches(cl)]
    chunked = [b for _, b in iter_batches(cl, chunk_bytes=4096 * 7)]
    assert len(chunked) > len(whole)

    def rows(batches):
        return [
            (r["physicalOffset"], r["status"], r["uniqKey"])
            for b in batches
            for r in b.select(["physicalOffset", "status", "uniqKey"]).to_pylist()
        ]

    assert rows(whole) == rows(chunked)
    records = expect("store-a")["messages"]
    got = rows(whole)
    assert [g[0] for g in got[:-1]] == [r["physicalOffset"] for r in records]
    assert got[-1][1] == "end" and got[-1][0] == expect("store-a")["maxPhyOffset"]


def test_iter_batches_range():
    cl = _commitlog("store-a")
    msgs = _messages("store-a")
    lo, hi = msgs[10]["physicalOffset"], msgs[2000]["physicalOffset"]
    rows = [r for _, b in iter_batches(cl, lo, hi, chunk_bytes=50_000) for r in b.to_pylist()]
    ok = [r["physicalOffset"] for r in rows if r["status"] == "ok"]
    assert ok == [m["physicalOffset"] for m in msgs if lo <= m["physicalOffset"] < hi]
    assert all(r["physicalOffset"] < hi for r in rows)
    with pytest.raises(OffsetError):
        list(iter_batches(cl, lo + 1))
    with pytest.raises(OffsetError):
        list(iter_batches(cl, 10**12))


def test_iter_batches_stops_at_the_torn_record():
    cl = _commitlog("store-c")
    batches = [b for _, b in iter_batches(cl, check_crc=True)]
    last = batches[-1].to_pylist()[-1]
    assert last["status"] == "crc_mismatch"
    assert last["physicalOffset"] == expect("store-c")["asWritten"]["tornRecordOffset"]


def test_last_nonzero_and_data_extents(tmp_path):
    data = np.zeros(1 << 20, dtype=np.uint8)
    assert last_nonzero(data, 0, len(data)) == 0
    data[12345] = 7
    assert last_nonzero(data, 0, len(data)) == 12346
    assert last_nonzero(data, 20000, len(data)) == 20000
    path = tmp_path / "sparse"
    with open(path, "wb") as fh:
        fh.truncate(64 << 20)
        fh.seek(8 << 20)
        fh.write(b"x" * 10)
    extents = data_extents(path, 0, 64 << 20)
    assert extents and all(lo <= (8 << 20) < hi or hi <= (8 << 20) for lo, hi in extents[:1])
    covered = sum(hi - lo for lo, hi in extents)
    assert max(hi for _, hi in extents) >= (8 << 20) + 10
    assert covered <= 64 << 20
    assert data_extents(path, (16 << 20), 64 << 20) in ([], [((16 << 20), 64 << 20)])
