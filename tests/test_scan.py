"""store.log.scan: chunked columnar walks and the zero-tail helpers."""

from __future__ import annotations

import os

import numpy as np
import pytest
from golden import expect, store_path

from store.log.commitlog import CommitLog, OffsetError
from store.log.scan import data_extents, iter_batches, last_nonzero


def _messages(store: str) -> list[dict]:
    return [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE"]


def _commitlog(store: str) -> CommitLog:
    return CommitLog.open(store_path(store))


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
    fd = os.open(path, os.O_RDONLY)
    try:
        holes = os.lseek(fd, 0, os.SEEK_DATA) > 0  # this file system reports the leading hole
    except OSError:
        holes = False
    finally:
        os.close(fd)
    if not holes:  # no hole support: the whole range may hold data
        assert extents == [(0, 64 << 20)]
        return
    # the written bytes are covered, in one extent of at most a few blocks; the holes are not
    assert len(extents) == 1
    lo, hi = extents[0]
    assert lo <= (8 << 20) and hi >= (8 << 20) + 10 and hi - lo <= 1 << 20
    assert data_extents(path, 16 << 20, 64 << 20) == []
    assert data_extents(path, 0, 4 << 20) == []
    assert data_extents(path, (8 << 20) + 5, 64 << 20) == [((8 << 20) + 5, hi)]
