"""ConsumeQueue (+ext, bloom filter) formats and the store reader, against the golden stores."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from golden import expect, store_path
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.consumequeue import (
    CQ_UNIT_DTYPE,
    FILLER_UNIT,
    MAX_ADDR,
    MAX_REAL_OFFSET,
    BloomFilter,
    CqExtUnit,
    CqUnit,
    consumer_filter_key,
    count_valid_prefix,
    decode_ext_unit,
    decode_unit,
    decorate,
    encode_ext_unit,
    encode_unit,
    filler_mask,
    is_ext_address,
    iter_ext_units,
    undecorate,
    units_view,
    valid_mask,
)
from formats.errors import FormatError, MqtoolError
from formats.structs import BORNHOST_V6_FLAG, ConsumeQueueUnit
from store.log.mappedfile import MappedFileQueue
from store.queue.consumequeue import (
    BrokerQueryError,
    ConsumeQueue,
    ConsumeQueueStore,
    RocksDBConsumeQueueError,
    StoreTimeOf,
)

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
UNITS_KEY = "units[queueOffset,phyOffset,size,tagsCode]"

# store-c: queues that recovery extended by re-dispatching the final appends (README).
STORE_C_REDISPATCHED = {"RetentionTopic/0", "OrderTopic/1"}


def store_time_reader(root: Path, min_offset: int, max_offset: int) -> StoreTimeOf:
    """`CommitLog.pickupStoreTimestamp` over the raw commitlog files, with the store's offset range.

    STORETIMESTAMP is at byte 56 of a record (68 with an IPv6 born host); SYSFLAG at byte 36.
    """
    commitlog = MappedFileQueue.open(root / "commitlog")

    def store_time_of(phy_offset: int, size: int) -> int:
        if phy_offset < min_offset or phy_offset + size > max_offset:
            return -1
        f = commitlog.find(phy_offset)
        if f is None:
            return -1
        pos = phy_offset - f.start_offset
        sys_flag = int.from_bytes(f.read(pos + 36, 4), "big", signed=True)
        at = pos + (68 if sys_flag & BORNHOST_V6_FLAG else 56)
        return int.from_bytes(f.read(at, 8), "big", signed=True)

    return store_time_of


def _times(store: str, root: Path | None = None) -> StoreTimeOf:
    e = expect(store)
    return store_time_reader(root or store_path(store), e["minPhyOffset"], e["maxPhyOffset"])


def _key(topic: str, queue_id: int) -> str:
    return f"{topic}/{queue_id}"


def _check_queue(cq: ConsumeQueue, want: dict) -> None:
    assert (cq.min_offset, cq.max_offset) == (want["minOffset"], want["maxOffset"]), cq
    assert cq.units().tolist() == [tuple(u) for u in want[UNITS_KEY]], cq
    for q, phy, size, tags in want[UNITS_KEY][:3] + want[UNITS_KEY][-3:]:
        assert cq.unit(q) == CqUnit(phy, size, tags)
    assert cq.unit(cq.max_offset) is None
    assert cq.unit(cq.min_offset - 1) is None


# --- golden stores: min/max/units ----------------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_consume_queues(store: str) -> None:
    cqs = ConsumeQueueStore(store_path(store))
    queues = expect(store)["consumeQueues"]
    assert sorted(_key(t, q) for t, q in cqs.queues()) == sorted(queues)
    assert cqs.commitlog_min_offset == expect(store)["minPhyOffset"]
    for want in queues.values():
        _check_queue(cqs.open(want["topic"], want["queueId"]), want)


def test_store_c_as_written() -> None:
    """The shipped files: raw units incl. the deleted prefix, and min/max as the live store had them."""
    e = expect("store-c")
    cqs = ConsumeQueueStore(store_path("store-c"))
    assert cqs.commitlog_min_offset == e["asWritten"]["minPhyOffset(first file name)"]
    files = e["asWritten"]["consumeQueueFiles"]
    assert sorted(_key(t, q) for t, q in cqs.queues()) == sorted(files)
    for key, want in files.items():
        topic, queue_id = key.rsplit("/", 1)
        cq = cqs.open(topic, int(queue_id))
        assert [f.name for f in cq.files] == want["files"]
        assert cq.first_queue_offset == want["firstUnitQueueOffset"]
        assert cq.max_offset == want["endQueueOffset"]
        raw = [tuple(u) for u in want[f"{UNITS_KEY} (every unit in the files, including the deleted prefix)"]]
        assert cq.units(0).tolist() == raw
    for key, want in e["asWritten"]["liveStoreAtKill"]["queues"].items():
        topic, queue_id = key.rsplit("/", 1)
        cq = cqs.open(topic, int(queue_id))  # queues without a directory read as empty
        assert (cq.min_offset, cq.max_offset) == (want["minOffset"], want["maxOffset"]), key


def test_store_c_recovered_equals_as_written_except_redispatched() -> None:
    e = expect("store-c")
    cqs = ConsumeQueueStore(store_path("store-c"))
    for key, want in e["consumeQueues"].items():
        cq = cqs.open(want["topic"], want["queueId"])
        units = [tuple(u) for u in want[UNITS_KEY]]
        if key in STORE_C_REDISPATCHED:
            assert cq.min_offset == want["minOffset"]
            assert cq.max_offset == want["maxOffset"] - 1
            assert cq.units().tolist() == units[:-1]
            final = {
                a["physicalOffset"]
                for a in e["afterRecovery"]["finalAppends(never dispatched before the kill)"]
            }
            assert units[-1][1] in final
        else:
            _check_queue(cq, want)


@pytest.fixture(scope="module")
def recovered_c(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of store-c's consume queues with the units recovery re-dispatched appended to the files."""
    root = tmp_path_factory.mktemp("store-c-recovered")
    shutil.copytree(store_path("store-c") / "consumequeue", root / "consumequeue")
    for want in expect("store-c")["consumeQueues"].values():
        cq = ConsumeQueue(root, want["topic"], want["queueId"], expect("store-c")["minPhyOffset"])
        for q, phy, size, tags in want[UNITS_KEY]:
            if q < cq.max_offset:
                continue
            position = q * 20
            start = position - position % cq.file_size
            with open(cq.directory / f"{start:020d}", "r+b") as fh:
                fh.seek(position - start)
                fh.write(encode_unit(CqUnit(phy, size, tags)))
    return root


def test_store_c_recovered_view(recovered_c: Path) -> None:
    cqs = ConsumeQueueStore(recovered_c, expect("store-c")["minPhyOffset"])
    for want in expect("store-c")["consumeQueues"].values():
        _check_queue(cqs.open(want["topic"], want["queueId"]), want)


# --- offset by time ------------------------------------------------------------------------------


def test_offset_by_time_store_a() -> None:
    cqs = ConsumeQueueStore(store_path("store-a"))
    times = _times("store-a")
    for p in expect("store-a")["offsetByTime"]:
        cq = cqs.open(p["topic"], p["queueId"])
        assert cq.offset_in_queue_by_time(p["timestamp"], times) == p["offset"], p
        assert cq.offset_in_queue_by_time(p["timestamp"], times, "lower") == p["offsetLower"], p
        assert cq.offset_in_queue_by_time(p["timestamp"], times, "upper") == p["offsetUpper"], p


def test_offset_by_time_store_c(recovered_c: Path) -> None:
    """Probes on the recovered store, incl. times of messages retention deleted."""
    cqs = ConsumeQueueStore(recovered_c, expect("store-c")["minPhyOffset"])
    times = _times("store-c", store_path("store-c"))
    for p in expect("store-c")["offsetByTime"]:
        cq = cqs.open(p["topic"], p["queueId"])
        assert cq.offset_in_queue_by_time(p["timestamp"], times) == p["offset"], p
        assert cq.offset_in_queue_by_time(p["timestamp"], times, "lower") == p["offsetLower"], p
        assert cq.offset_in_queue_by_time(p["timestamp"], times, "upper") == p["offsetUpper"], p


def test_offset_by_time_store_49a_with_recorded_mtimes() -> None:
    """4.9.8 picks the CQ file by modification time; the probes ran with the recorded mtimes."""
    e = expect("store-49a")
    cqs = ConsumeQueueStore(store_path("store-49a"))
    times = _times("store-49a")
    for p in e["offsetByTime"]:
        cq = cqs.open(p["topic"], p["queueId"])
        mtimes = [e["cqFileLastModified"][f"{p['topic']}/{p['queueId']}/{f.name}"] for f in cq.live_files]
        assert cq.offset_in_queue_by_time_v4(p["timestamp"], times, mtimes) == p["offset"], p


def test_offset_by_time_v4_uses_file_mtimes(tmp_path: Path) -> None:
    """The answer depends on the files' mtimes (README of store-49a); without a list they are read."""
    src = ConsumeQueue(store_path("store-49a"), "TopicTest", 0)
    shutil.copytree(src.directory, tmp_path / "consumequeue" / "TopicTest" / "0")
    cq = ConsumeQueue(tmp_path, "TopicTest", 0, 0)
    times = _times("store-49a")
    first = cq.unit(0)
    assert first is not None
    ts = times(first.phy_offset, first.size)
    second_file_start = cq.files[1].start_offset // 20

    def touch(*mtimes_ms: int) -> None:
        for f, ms in zip(cq.files, mtimes_ms, strict=True):
            os.utime(f.path, ns=(ms * 1_000_000, ms * 1_000_000))

    touch(ts + 10**6, ts + 2 * 10**6)  # first file modified after ts: searched, exact hit
    assert cq.offset_in_queue_by_time_v4(ts, times) == 0
    touch(ts - 1, ts + 10**6)  # first file older than ts: the second file is searched
    assert cq.offset_in_queue_by_time_v4(ts, times) == second_file_start
    assert cq.offset_in_queue_by_time_v4(ts, times, [ts, ts]) == 0


def test_offset_by_time_empty_queue(tmp_path: Path) -> None:
    cq = ConsumeQueue(tmp_path, "T", 0, 0)
    assert (cq.min_offset, cq.max_offset) == (0, 0)
    assert cq.offset_in_queue_by_time(123, lambda p, s: 0) == 0
    assert cq.offset_in_queue_by_time(123, lambda p, s: 0, "upper") == 0
    assert cq.offset_in_queue_by_time_v4(123, lambda p, s: 0) == 0
    with pytest.raises(ValueError):
        cq.offset_in_queue_by_time(123, lambda p, s: 0, "middle")  # type: ignore[arg-type]


# --- synthetic queues ----------------------------------------------------------------------------


def _write_queue(root: Path, files: dict[int, list[CqUnit]], file_size: int = 200) -> ConsumeQueue:
    directory = root / "consumequeue" / "T" / "0"
    directory.mkdir(parents=True, exist_ok=True)
    for start, units in files.items():
        data = b"".join(encode_unit(u) for u in units)
        (directory / f"{start:020d}").write_bytes(data.ljust(file_size, b"\0"))
    return ConsumeQueue(root, "T", 0, commitlog_min_offset=1000)


def test_pre_blank_fillers_count_for_max_not_min(tmp_path: Path) -> None:
    units = [FILLER_UNIT] * 3 + [CqUnit(1000 + 100 * i, 100, 7) for i in range(4)]
    cq = _write_queue(tmp_path, {0: units})
    assert cq.max_offset == 7
    assert cq.min_offset == 3
    assert cq.units(0)["size"].tolist()[:3] == [0x7FFFFFFF] * 3


def test_all_deleted_queue_has_min_equal_max(tmp_path: Path) -> None:
    cq = _write_queue(tmp_path, {200: [CqUnit(10 * i, 10, 0) for i in range(3)]})
    assert (cq.min_offset, cq.max_offset) == (13, 13)
    assert cq.units().tolist() == []
    assert len(cq.units(0)) == 3


def test_recovery_starts_at_third_from_last_file(tmp_path: Path) -> None:
    full = [CqUnit(1000 + i, 1, 0) for i in range(10)]
    cq = _write_queue(tmp_path, {0: full, 200: full, 400: full, 600: full[:4] + [CqUnit(0, 0, 0)] + full[:2]})
    assert cq.max_offset == 34
    assert cq.wrote_position(cq.files[-1]) == 80
    broken = [CqUnit(1000, 1, 0), CqUnit(-1, 0, 0)] + full[:8]
    other = tmp_path / "other"
    cq = _write_queue(other, {0: broken, 200: full, 400: full, 600: full})
    assert cq.max_offset == 40  # the first file is not scanned by recover()


def test_bad_queue_files(tmp_path: Path) -> None:
    directory = tmp_path / "consumequeue" / "T" / "0"
    directory.mkdir(parents=True)
    (directory / f"{0:020d}").write_bytes(bytes(200))
    (directory / f"{200:020d}").write_bytes(bytes(100))
    # no size has most files (one each): the broker default decides, and neither file has it
    with pytest.raises(FormatError, match="file size 200 is not the queue's file size 6000000"):
        ConsumeQueue(tmp_path, "T", 0, 0)
    (directory / f"{200:020d}").unlink()
    (directory / f"{0:020d}").write_bytes(bytes(210))
    with pytest.raises(FormatError, match="multiple"):
        ConsumeQueue(tmp_path, "T", 0, 0)


def test_search_on_floor_beyond_ceiling_reports_broker_failure(tmp_path: Path) -> None:
    cq = _write_queue(tmp_path, {0: [CqUnit(1000 + i, 1, 0) for i in range(3)]})
    cq.__dict__["min_offset"] = 5  # a min offset past the file's units (only in inconsistent states)
    with pytest.raises(BrokerQueryError):
        cq.offset_in_queue_by_time(0, lambda p, s: 1)


unit_bytes = st.one_of(
    st.binary(min_size=20, max_size=20),
    st.builds(
        lambda p, n, t: encode_unit(CqUnit(p, n, t)), st.integers(-5, 3000), st.integers(-1, 300), int64
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(unit_bytes, min_size=5, max_size=5), min_size=1, max_size=4), int64, st.integers(0, 4)
)
def test_garbage_queue_raises_only_mqtool_errors(files: list[list[bytes]], ts: int, first: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "consumequeue" / "T" / "0"
        directory.mkdir(parents=True)
        for i, units in enumerate(files):
            (directory / f"{(first + i) * 100:020d}").write_bytes(b"".join(units))
        cq = ConsumeQueue(tmp, "T", 0, commitlog_min_offset=1000)
        assert cq.first_queue_offset <= cq.min_offset <= cq.max_offset or cq.min_offset == 0
        assert len(cq.units(0)) == cq.max_offset - cq.first_queue_offset
        try:
            for boundary in ("lower", "upper"):
                got = cq.offset_in_queue_by_time(ts, lambda p, n: p if p < 2000 else -1, boundary)
                assert cq.min_offset <= got <= cq.max_offset or cq.max_offset == 0
            cq.offset_in_queue_by_time_v4(ts, lambda p, n: p, [0] * len(files))
        except MqtoolError:
            pass
        cq.close()


def test_store_lists_queues_and_skips_non_numeric(tmp_path: Path) -> None:
    for name in ("0", "3", "12", "x", "007", "-1"):
        (tmp_path / "consumequeue" / "T" / name).mkdir(parents=True)
    (tmp_path / "consumequeue" / "A").mkdir()
    cqs = ConsumeQueueStore(tmp_path)
    assert cqs.topics() == ["A", "T"]
    assert cqs.queue_ids("T") == [0, 3, 12]
    assert list(cqs.queues()) == [("T", 0), ("T", 3), ("T", 12)]
    assert cqs.commitlog_min_offset == 0


@pytest.mark.parametrize("marker", ["CURRENT", "MANIFEST-000005", "OPTIONS-000007"])
def test_rocksdb_consume_queue_is_refused(tmp_path: Path, marker: str) -> None:
    (tmp_path / "consumequeue").mkdir()
    (tmp_path / "consumequeue" / marker).write_bytes(b"x")
    with pytest.raises(RocksDBConsumeQueueError, match="RocksDB"):
        ConsumeQueueStore(tmp_path)


# --- unit format ---------------------------------------------------------------------------------


@given(int64, int32, int64)
def test_unit_round_trip(phy: int, size: int, tags: int) -> None:
    unit = CqUnit(phy, size, tags)
    data = encode_unit(unit)
    assert len(data) == 20
    assert decode_unit(data) == unit
    assert unit.is_valid == (phy >= 0 and size > 0)
    assert unit.is_filler == (phy == 0 and size == 0x7FFFFFFF)


@given(st.lists(st.binary(min_size=20, max_size=20), max_size=30))
def test_numpy_view_matches_construct(raw: list[bytes]) -> None:
    view = units_view(b"".join(raw))
    assert view.dtype == CQ_UNIT_DTYPE
    for row, data in zip(view.tolist(), raw, strict=True):
        u = ConsumeQueueUnit.parse(data)
        assert row == (u.phyOffset, u.size, u.tagsCode)
    units = [decode_unit(d) for d in raw]
    assert valid_mask(view).tolist() == [u.is_valid for u in units]
    assert filler_mask(view).tolist() == [u.is_filler for u in units]
    first_invalid = next((i for i, u in enumerate(units) if not u.is_valid), len(units))
    assert count_valid_prefix(view) == first_invalid


@given(st.binary(max_size=100), st.integers(-5, 120))
def test_unit_garbage_raises_only_format_error(data: bytes, position: int) -> None:
    try:
        decode_unit(data, position, "cq")
    except FormatError as exc:
        assert exc.file == "cq"
    if len(data) % 20:
        with pytest.raises(FormatError):
            units_view(data)
    else:
        assert len(units_view(data)) == len(data) // 20


def test_units_view_is_zero_copy() -> None:
    data = bytearray(encode_unit(CqUnit(1, 2, 3)))
    view = units_view(data)
    data[7] = 9
    assert int(view[0]["phyOffset"]) == 9
    assert isinstance(view, np.ndarray)


# --- ConsumeQueueExt -----------------------------------------------------------------------------


@given(st.integers(0, MAX_REAL_OFFSET))
def test_ext_address_round_trip(offset: int) -> None:
    address = decorate(offset)
    assert is_ext_address(address)
    assert address < 0
    assert undecorate(address) == offset


def test_ext_address_bounds() -> None:
    assert decorate(0) == -(2**63)
    assert is_ext_address(MAX_ADDR) and not is_ext_address(MAX_ADDR + 1)
    assert decorate(MAX_REAL_OFFSET) == MAX_ADDR
    assert not is_ext_address(-(2**31))  # a negative tags code is still a tags code
    assert undecorate(12345) == 12345 and decorate(MAX_ADDR - 5) == MAX_ADDR - 5
    assert CqUnit(0, 1, decorate(40)).has_ext_address


@given(int64, int64, st.binary(max_size=64))
def test_ext_unit_round_trip(tags: int, store_time: int, bitmap: bytes) -> None:
    unit = CqExtUnit(tags, store_time, bitmap)
    data = encode_ext_unit(unit)
    assert len(data) == unit.size == 20 + len(bitmap)
    assert decode_ext_unit(data) == unit


def test_ext_file_walk() -> None:
    units = [CqExtUnit(1, 2), CqExtUnit(3, 4, b"\x01\x02"), CqExtUnit(5, 6, bytes(14))]
    body = b"".join(encode_ext_unit(u) for u in units)
    data = body + (-1).to_bytes(2, "big", signed=True) + bytes(10)
    walked = list(iter_ext_units(data))
    assert [u for _, u in walked] == units
    assert [p for p, _ in walked] == [0, 20, 42]
    assert list(iter_ext_units(body + bytes(1))) == walked


@given(st.binary(max_size=200))
def test_ext_garbage_raises_only_format_error(data: bytes) -> None:
    try:
        list(iter_ext_units(data, "ext"))
    except FormatError as exc:
        assert exc.file == "ext"
    try:
        decode_ext_unit(data, 0, "ext")
    except FormatError as exc:
        assert exc.file == "ext"


def test_ext_unit_too_large() -> None:
    with pytest.raises(FormatError):
        encode_ext_unit(CqExtUnit(0, 0, bytes(32767)))


# --- bloom filter (store BloomFilter, vectors from the real code)
# ----------------------------------------------------


def test_bloom_filter_vectors() -> None:
    default = BloomFilter.create()
    assert (default.k, default.m) == (3, 112)
    wide = BloomFilter.create(20, 64)
    assert (wide.k, wide.m) == (3, 216)
    key = consumer_filter_key("g1", "TopicTest")
    assert key == "g1#TopicTest"
    assert default.bit_positions(key) == [71, 62, 52]
    assert wide.bit_positions(key) == [167, 14, 12]
    assert default.bit_positions("CID_中文#T") == [97, 39, 18]
    bitmap = default.bitmap(default.bit_positions(key))
    assert bitmap == bytes.fromhex("00 00 00 00 00 00 10 40 80 00 00 00 00 00")
    assert default.is_hit(default.bit_positions(key), bitmap)
    assert not default.is_hit(default.bit_positions("CID_中文#T"), bitmap)
    with pytest.raises(ValueError):
        BloomFilter.create(0, 32)
    with pytest.raises(FormatError):
        default.is_hit([1], b"\x00")


@given(st.integers(1, 99), st.integers(1, 500), st.text(max_size=20))
def test_bloom_positions_in_range(f: int, n: int, text: str) -> None:
    bloom = BloomFilter.create(f, n)
    assert bloom.m % 8 == 0 and bloom.k >= 1
    positions = bloom.bit_positions(text)
    assert len(positions) == bloom.k
    assert all(0 <= p < bloom.m for p in positions)
    assert bloom.is_hit(positions, bloom.bitmap(positions))
