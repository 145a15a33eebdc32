"""The quick commitlog walks (`formats.message.recordcheck`, `CommitLog.walk_end`, `stop_record`,
`first_record`, `last_record`, `store_time_at`) against the golden stores' expect.json and against the
construct decoder, on the real stores and on hypothesis-corrupted copies of them."""

from __future__ import annotations

import functools
import shutil
import struct
from pathlib import Path

import pytest
from golden import STORES, expect, store_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.message.commitlog import STOPS, Blank, Message, decode_record
from formats.message.recordcheck import check_record, store_timestamp_at
from store.log.commitlog import CommitLog, OffsetError


def _messages(store: str) -> list[dict]:
    return [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE"]


def _commitlog(store: str) -> CommitLog:
    return CommitLog.open(store_path(store))


@pytest.fixture(params=["struct", "compiled"])
def walk(request, monkeypatch):
    """Each walk test with both walks: struct reads (small spans) and the compiled twin (broker-sized)."""
    import store.log.commitlog as commitlog

    if request.param == "compiled":
        monkeypatch.setattr(commitlog, "COMPILED_WALK_MIN", 0)
    return request.param


def _copy(store: str, tmp_path: Path) -> Path:
    dst = tmp_path / store
    shutil.copytree(store_path(store), dst)
    return dst


# --- against the real broker's answers --------------------------------------------------------------


def test_valid_end_matches_the_broker(walk):
    assert _commitlog("store-a").max_offset == expect("store-a")["maxPhyOffset"]
    assert _commitlog("store-49a").max_offset == expect("store-49a")["maxPhyOffset"]
    c = expect("store-c")
    for crc in (False, True):
        end = _commitlog("store-c").walk_end(check_crc=crc)
        assert end.valid_end == c["afterRecovery"]["maxPhyOffset"] == c["asWritten"]["tornRecordOffset"]
    assert _commitlog("store-c").walk_end(check_crc=True).reason == "crc_mismatch"
    assert _commitlog("store-a").walk_end().reason == "end"


@pytest.mark.parametrize("store", STORES)
def test_walks_end_where_the_construct_walk_ends(store, walk):
    cl = _commitlog(store)
    for start in (None, cl.files[0].start_offset, cl.recovery_start_offset):
        for crc in (False, True):
            walked = [r for r in cl.iter_records(start, check_crc=crc)]
            assert cl.stop_record(start, check_crc=crc) == walked[-1]
            messages = [r for r in walked if isinstance(r, Message)]
            last = cl.walk_end(start if start is not None else cl.files[0].start_offset, check_crc=crc).last
            assert last.physical_offset == messages[-1].physical_offset
    assert cl.valid_end(cl.recovery_start_offset) == cl.max_offset


@pytest.mark.parametrize("store", STORES)
def test_last_and_first_record(store, walk):
    msgs = _messages(store)
    if store == "store-c":  # the torn record is not a MESSAGE in expect.json
        msgs = [m for m in msgs if m["physicalOffset"] < expect(store)["asWritten"]["tornRecordOffset"]]
    last, first = _commitlog(store).last_record(), _commitlog(store).first_record()
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
        assert cl.store_time_at(m["physicalOffset"]) == m["storeTimestamp"]
        assert cl.store_time_at(m["physicalOffset"], m["totalSize"]) == m["storeTimestamp"]
    m = _messages(store)[3]
    assert cl.store_time_at(m["physicalOffset"], m["totalSize"] + 1) is None
    assert cl.store_time_at(m["physicalOffset"] + 1) is None
    assert cl.store_time_at(10**15) is None
    blanks = [r for r in expect(store)["messages"] if r["kind"] == "BLANK"]
    assert cl.store_time_at(blanks[0]["physicalOffset"]) is None


def test_store_time_at_ipv6_born_host():
    cl = _commitlog("store-a")
    v6 = [m for m in _messages("store-a") if m["sysFlag"] & 0x10]
    assert v6
    for m in v6:
        assert cl.store_time_at(m["physicalOffset"]) == m["storeTimestamp"]


@pytest.mark.parametrize("store", STORES)
def test_check_record_agrees_with_the_construct_decoder(store):
    cl = _commitlog(store)
    for f in cl.files:
        buf = f.buffer()
        records = [r for r in cl.iter_records(f.start_offset) if r.physical_offset < f.end_offset]
        for record in records:
            pos = record.physical_offset - f.start_offset
            status, total, fields = check_record(buf, f.size, pos, True, True)
            if isinstance(record, Message):
                assert status == "ok"
                assert total == record.total_size
                assert fields[5] == record.store_timestamp
                assert fields[6].decode() == record.topic
            else:
                assert status != "ok"


def test_walk_end_stops_at_a_corrupt_record(tmp_path, walk):
    root = _copy("store-a", tmp_path)
    m = _messages("store-a")[100]
    path = root / "commitlog" / m["file"]
    data = bytearray(path.read_bytes())
    pos = m["physicalOffset"] - int(m["file"])
    data[pos + 4 : pos + 8] = struct.pack(">i", 0x12345678)
    path.write_bytes(bytes(data))
    cl = CommitLog.open(root)
    end = cl.walk_end(cl.files[0].start_offset)
    assert (end.valid_end, end.reason) == (m["physicalOffset"], "bad_magic")
    assert end.last.physical_offset == _messages("store-a")[99]["physicalOffset"]
    assert cl.stop_record().physical_offset == m["physicalOffset"]
    assert "magic" in cl.stop_record().reason


def test_walk_end_crc(tmp_path, walk):
    root = _copy("store-a", tmp_path)
    m = next(m for m in _messages("store-a")[50:] if m["bodyLength"] > 100)
    path = root / "commitlog" / m["file"]
    data = bytearray(path.read_bytes())
    pos = m["physicalOffset"] - int(m["file"])
    data[pos + 100] ^= 0x01  # inside the body
    path.write_bytes(bytes(data))
    cl = CommitLog.open(root)
    first = cl.files[0].start_offset
    assert cl.walk_end(first, check_crc=True).valid_end == m["physicalOffset"]
    assert cl.walk_end(first, check_crc=True).reason == "crc_mismatch"
    assert cl.walk_end(first, check_crc=False).valid_end == expect("store-a")["maxPhyOffset"]
    assert cl.stop_record(check_crc=True) == [r for r in cl.iter_records(check_crc=True)][-1]


def test_walk_from_inside_a_record_is_refused(walk):
    cl = _commitlog("store-a")
    m = _messages("store-a")[10]
    with pytest.raises(OffsetError, match="not a record boundary"):
        cl.walk_end(m["physicalOffset"] + 4)
    with pytest.raises(OffsetError, match="outside the commitlog files"):
        cl.walk_end(10**12)


def test_empty_commitlog(tmp_path, walk):
    (tmp_path / "commitlog").mkdir()
    cl = CommitLog.open(tmp_path)
    assert cl.walk_end().reason == "empty"
    assert cl.stop_record().physical_offset == cl.max_offset == 0
    assert cl.first_record() is None and cl.last_record() is None


# --- property: corrupted bytes, the quick check and the decoder decide alike ------------------------


@functools.cache
def _clean_file(store: str, index: int) -> tuple[bytes, tuple[int, ...]]:
    """One golden commitlog file's bytes and the positions of its records."""
    f = _commitlog(store).files[index]
    data = bytes(f.buffer())
    starts, pos = [], 0
    while True:
        record = decode_record(data, pos, f.start_offset)
        starts.append(pos)
        if not isinstance(record, Message):
            return data, tuple(starts)
        pos += record.total_size


# fixed-width fields a corruption likes to hit: TOTALSIZE, MAGICCODE, BODYCRC, SYSFLAG, BORNHOST..
_FIELD_AT = (0, 4, 8, 12, 36, 48, 56, 64, 72, 84, 88)


@st.composite
def corrupted_files(draw):
    return draw(corrupted_files_and_bases())[0]


@st.composite
def corrupted_files_and_bases(draw):
    """(corrupted bytes of a golden commitlog file, the file's start offset)."""
    store = draw(st.sampled_from(STORES))
    index = draw(st.integers(0, len(_commitlog(store).files) - 1))
    base = _commitlog(store).files[index].start_offset
    data, starts = _clean_file(store, index)
    buf = bytearray(data)

    def put(off: int, value: bytes) -> None:  # overwrite in place, never past the end
        value = value[: max(0, len(buf) - off)]
        buf[off : off + len(value)] = value

    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.sampled_from(starts[:40]))
        kind = draw(st.sampled_from(["field", "bitflip", "zero", "truncate", "lengths"]))
        if kind == "field":
            value = draw(st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, -1, 1, 8, 64])))
            put(at + draw(st.sampled_from(_FIELD_AT)), struct.pack(">i", value))
        elif kind == "bitflip":
            off = at + draw(st.integers(0, 200))
            if off < len(buf):
                buf[off] ^= 1 << draw(st.integers(0, 7))
        elif kind == "zero":
            put(at + draw(st.integers(0, 200)), bytes(draw(st.integers(1, 64))))
        elif kind == "truncate":
            del buf[at + draw(st.integers(0, 300)) :]
        else:  # somewhere in the variable part: BODYLENGTH, TOPICLENGTH, PROPERTIESLENGTH, ...
            put(at + draw(st.integers(80, 160)), draw(st.binary(min_size=2, max_size=2)))
    return bytes(buf), base


@given(corrupted_files(), st.booleans(), st.booleans())
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_check_record_decides_as_the_decoder_on_corrupted_files(data, check_crc, accept_v2):
    pos = 0
    for _ in range(60):  # the corruptions hit the first 40 records
        status, total, fields = check_record(data, len(data), pos, check_crc, accept_v2)
        record = decode_record(data, pos, 0, check_crc=check_crc, accept_v2=accept_v2)
        if isinstance(record, Message):
            assert status == "ok", (pos, record)
            assert total == record.total_size
            assert fields[:6] == (
                record.queue_id,
                record.queue_offset,
                record.physical_offset,
                record.sys_flag,
                record.born_timestamp,
                record.store_timestamp,
            )
            assert store_timestamp_at(data, len(data), pos, total) == record.store_timestamp
            pos += total
            continue
        if isinstance(record, Blank):
            assert status == "blank"
        else:
            assert isinstance(record, STOPS) and status not in ("ok", "blank"), (pos, status, record)
        return


def test_last_record_when_the_last_file_holds_none(tmp_path, walk):
    """The newest record comes from the last file that holds one: with the last file zeroed at its start,
    the walk from the file before it (across its BLANK) gives that file's last message."""
    root = _copy("store-a", tmp_path)
    cl = CommitLog.open(root)
    last_file = cl.files[-1]
    with open(last_file.path, "r+b") as fh:
        fh.write(bytes(8))
    cl = CommitLog.open(root)
    before = [m for m in _messages("store-a") if m["physicalOffset"] < last_file.start_offset]
    assert cl.last_record().physical_offset == before[-1]["physicalOffset"]
    assert cl.max_offset == last_file.start_offset  # the recovery walk stops at the zeros


@given(corrupted_files_and_bases(), st.booleans(), st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_compiled_walk_stops_where_the_struct_walk_stops(file_and_base, check_crc, accept_v2):
    """`walk_chain` (the compiled recovery walk of broker-sized spans) against the struct walk, in one
    piece and cut into ranges that hand over to each other."""
    data, base = file_and_base
    from formats.columnar.decoder import walk_chain

    pos, last = 0, -1
    while True:
        status, total, _ = check_record(data, len(data), pos, check_crc, accept_v2)
        if status != "ok":
            break
        last, pos = pos, pos + total
    assert walk_chain(data, base, 0, check_crc=check_crc, accept_v2=accept_v2) == (status, pos, last)
    # cut into ranges, each walked on its own (resync after the first), handing over in order
    for pieces in (2, 3, 7):
        step = -(-len(data) // pieces)
        last_ok, stop = -1, None
        for k in range(pieces):
            lo, hi = k * step, min(len(data), (k + 1) * step)
            how = {"resync": k > 0, "check_crc": check_crc, "accept_v2": accept_v2}
            got, at, ok = walk_chain(data, base, lo, hi, **how)
            last_ok = ok if ok >= 0 else last_ok
            if got != "handover":
                stop = (got, at, last_ok)
                break
        assert stop == (status, pos, last)


# --- the columnar kernel's walk (`formats.columnar.decoder.walk_stop`), the twin of the struct walk ------


def _struct_walk(data: bytes, start: int, check_crc: bool, accept_v2: bool) -> tuple[str, int, list[int]]:
    """(status, position, accepted record positions) of a `check_record` walk of one file from `start`."""
    pos, accepted = start, []
    while True:
        status, total, _ = check_record(data, len(data), pos, check_crc, accept_v2)
        if status != "ok":
            return status, pos, accepted
        accepted.append(pos)
        pos += total


@given(corrupted_files(), st.booleans(), st.booleans(), st.integers(0, 5))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_walk_stop_stops_where_the_struct_walk_stops(data, check_crc, accept_v2, keep):
    from formats.columnar.decoder import walk_stop

    status, pos, accepted = _struct_walk(data, 0, check_crc, accept_v2)
    got = walk_stop(data, 0, check_crc=check_crc, accept_v2=accept_v2, keep=keep)
    assert got == (status, pos, accepted[-keep:] if keep else [])


@pytest.mark.parametrize("store", STORES)
def test_walk_stop_from_each_record(store):
    """From every record start of a golden file, the kernel ends where the struct walk ends."""
    from formats.columnar.decoder import walk_stop

    for index in range(len(_commitlog(store).files)):
        data, starts = _clean_file(store, index)
        for start in starts[::7]:
            status, pos, accepted = _struct_walk(data, start, True, True)
            assert walk_stop(data, start, keep=3) == (status, pos, accepted[-3:])


def test_stop_record_is_remembered():
    """A read-only store is walked once per (start, CRC check): `info` and `verify --startup` both ask."""
    cl = _commitlog("store-a")
    first = cl.stop_record(cl.recovery_start_offset, check_crc=True)
    assert cl.stop_record(cl.recovery_start_offset, check_crc=True) is first
    assert cl.stop_record(cl.recovery_start_offset, check_crc=False) is not first


@pytest.mark.parametrize("store", STORES)
def test_tail_positions(store, walk):
    """The last records of each file, as the construct walk of that file finds them, either walk."""
    cl = _commitlog(store)
    for index, f in enumerate(cl.files):
        _, starts = _clean_file(store, index)
        accepted = list(starts[:-1])  # the last start is where the walk stops
        for keep in (0, 1, 3, len(accepted) + 2):
            assert cl.tail_positions(f, keep) == (accepted[-keep:] if keep else [])
