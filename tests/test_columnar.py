"""The columnar decoder against the golden stores, the construct decoder, and itself over any split."""

from __future__ import annotations

import base64
import ipaddress
import mmap
import struct
import subprocess
import sys
import zlib
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from golden import STORES, expect, store_path
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from formats.columnar.decoder import (
    MESSAGE_SCHEMA,
    MESSAGE_SCHEMA_WITH_BODY,
    decode_range,
    decode_resync,
    join_splits,
    release_buffers,
    status_names,
)
from formats.message.commitlog import BadRecord, Blank, EndOfData, Message, decode_record
from formats.message.msgid import parse_host
from formats.structs import BLANK_MAGIC, MAGIC_V1, MAGIC_V2, MessageRecord

ROOT = Path(__file__).resolve().parents[1]


def _map(path: Path) -> mmap.mmap | bytes:
    with open(path, "rb") as fh:
        if path.stat().st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _files(store: str) -> list[Path]:
    return sorted((store_path(store) / "commitlog").iterdir())


@cache
def store_rows(store: str, check_crc: bool = True) -> tuple[dict, ...]:
    """Every row of a store, walked as the broker does: blank -> next file, any other stop -> done."""
    rows: list[dict] = []
    for path in _files(store):
        batch = decode_range(_map(path), int(path.name), check_crc=check_crc, with_body=True)
        assert batch.schema == MESSAGE_SCHEMA_WITH_BODY
        rows.extend(batch.to_pylist())
        if rows and rows[-1]["status"] != "blank":
            break
    return tuple(rows)


def _host(text: str) -> tuple:
    """expect.json hosts ("ip:port", IPv6 in Java's long form, no brackets) and ours, comparable."""
    if text.startswith("["):
        address, port = parse_host(text)
        return ipaddress.ip_address(address), port
    host, _, port = text.rpartition(":")
    return ipaddress.ip_address(host), int(port)


# --- golden stores --------------------------------------------------------------------------------


@pytest.mark.parametrize("store", STORES)
def test_golden_store_matches_expect(store):
    rows = store_rows(store)
    exp = expect(store)["messages"]
    if store == "store-c":
        assert len(rows) == len(exp)  # ends with the torn record
    else:
        assert len(rows) == len(exp) + 1 and rows[-1]["status"] == "end"
        assert rows[-1]["physicalOffset"] == expect(store)["maxPhyOffset"]
    for row, e in zip(rows, exp, strict=False):
        assert row["physicalOffset"] == e["physicalOffset"]
        assert row["totalSize"] == e["totalSize"]
        assert row["magicCode"] == e["magicCode"]
        if e["kind"] == "BLANK":
            assert row["status"] == "blank"
            assert row["topic"] is None and row["properties"] is None
            continue
        if e["kind"] == "TORN":
            assert row["status"] == "crc_mismatch"
            for field in ("queueId", "queueOffset", "sysFlag", "bornTimestamp", "storeTimestamp"):
                assert row[field] == e[field]
            assert row["physicalOffsetField"] == e["physicalOffsetField"]
            assert row["bodyLength"] == e["bodyLengthField"]
            assert row["topic"] is None and row["keys"] is None and row["body"] is None
            continue
        assert row["status"] == "ok"
        for field in (
            "bodyCRC",
            "queueId",
            "flag",
            "queueOffset",
            "sysFlag",
            "bornTimestamp",
            "storeTimestamp",
            "reconsumeTimes",
            "preparedTransactionOffset",
            "topic",
            "bodyLength",
            "keys",
            "tags",
            "uniqKey",
        ):
            assert row[field] == e[field], (field, e["physicalOffset"])
        assert row["physicalOffsetField"] == e["physicalOffset"]
        assert _host(row["bornHost"]) == _host(e["bornHost"])
        assert _host(row["storeHost"]) == _host(e["storeHost"])
        assert row["properties"].decode("utf-8", "replace") == e["propertiesRaw"]
        assert base64.b64encode(row["body"]).decode() == e["bodyBase64"]
        hosts = (12 if row["sysFlag"] & 0x10 else 0) + (12 if row["sysFlag"] & 0x20 else 0)
        assert row["bodyOffset"] + int(e["file"]) == row["physicalOffset"] + 88 + hosts


def test_store_c_torn_record_without_crc_check():
    rows = store_rows("store-c", check_crc=False)
    assert rows[-1]["status"] == "size_mismatch"
    assert rows[-1]["physicalOffset"] == expect("store-c")["asWritten"]["tornRecordOffset"]
    assert [r["physicalOffset"] for r in rows] == [r["physicalOffset"] for r in store_rows("store-c")]


def test_batch_members_take_the_last_uniq_key():
    rows = [r for r in store_rows("store-c") if r["status"] == "ok"]
    doubled = [r for r in rows if r["properties"].count(b"UNIQ_KEY\x01") > 1]
    assert doubled
    for r in doubled:
        last = r["properties"].rsplit(b"UNIQ_KEY\x01", 1)[1].split(b"\x02", 1)[0].decode()
        assert r["uniqKey"] == last


def test_a_negative_body_length_is_no_body_as_construct_reads_it():
    """A record the broker accepts with BODYLENGTH -7 (read as 0): bodyLength 0, not the raw field, so
    buf[bodyOffset:bodyOffset + bodyLength] is its (empty) body as the construct decoder gives it."""
    from test_commitlog_format import encode_message, vector_message

    data = bytearray(encode_message(vector_message(body=b"", properties={})))
    data[84:88] = (-7).to_bytes(4, "big", signed=True)
    (row,) = [r for r in decode_range(bytes(data), 0).to_pylist() if r["status"] == "ok"]
    rec = decode_record(bytes(data), 0, 0)
    assert isinstance(rec, Message) and row["bodyLength"] == rec.body_length == 0
    assert_same_as_construct(bytes(data), 0, True)


def test_v2_is_a_bad_magic_for_4_9():
    path = next(p for p in _files("store-a") if b"\xda\xa3\x20\xab" in Path(p).read_bytes())
    buf = _map(path)
    v5 = decode_range(buf, int(path.name))
    v4 = decode_range(buf, int(path.name), accept_v2=False)
    assert "ok" in status_names(v5) and status_names(v4)[-1] == "bad_magic"
    stop = v4.num_rows - 1
    assert v5.column("magicCode")[stop].as_py() == MAGIC_V2


@contextmanager
def host_spill(min_values: int | None):
    """Decode with columnar.HOST_SPILL_MIN = min_values (0: born hosts are never interned, so the
    walk's spill path and the dictionary sort run on every record); None leaves the default."""
    import formats.columnar.decoder as columnar

    saved = columnar.HOST_SPILL_MIN
    if min_values is not None:
        columnar.HOST_SPILL_MIN = min_values
    try:
        yield
    finally:
        columnar.HOST_SPILL_MIN = saved


@pytest.mark.parametrize("spill", [None, 0])
@pytest.mark.parametrize("store", STORES)
def test_golden_files_equal_the_construct_decoder(store, spill):
    with host_spill(spill):
        for path in _files(store):
            buf = _map(path)
            for check_crc in (True, False):
                assert_same_as_construct(buf, int(path.name), check_crc)


# --- the construct decoder as the reference -------------------------------------------------------


def construct_walk(buf, base: int, check_crc: bool) -> list:
    """decode_record from position 0 until the first result that is not a message."""
    out = []
    pos = 0
    while True:
        rec = decode_record(buf, pos, base, check_crc=check_crc)
        out.append((pos, rec))
        if not isinstance(rec, Message):
            return out
        pos += rec.total_size


def _kind(status: str) -> type:
    return {"ok": Message, "blank": Blank, "end": EndOfData}.get(status, BadRecord)


def _negative_length_accepted(buf, pos: int, row: dict) -> bool:
    """The broker accepts a record whose BODYLENGTH or PROPERTIESLENGTH is negative when TOTALSIZE
    matches the length formula with that length taken as 0 (CommitLog skips reading it and
    `calMsgLength` uses max(len, 0)); the construct decoder rejects such records."""
    if struct.unpack_from(">i", buf, row["bodyOffset"] - 4)[0] < 0:  # BODYLENGTH precedes the body
        return True
    end = pos + row["totalSize"]
    return struct.unpack_from(">h", buf, end - 2)[0] < 0 and row["properties"] == b""


def assert_same_as_construct(buf, base: int, check_crc: bool, with_body: bool = True) -> None:
    ref = construct_walk(buf, base, check_crc)
    rows = decode_range(buf, base, check_crc=check_crc, with_body=with_body).to_pylist()
    for i, ((pos, rec), row) in enumerate(zip(ref, rows, strict=False)):
        assert row["physicalOffset"] == base + pos
        if isinstance(rec, BadRecord) and row["status"] == "ok" and _negative_length_accepted(buf, pos, row):
            return  # see _negative_length_accepted; the broker goes on, construct stops
        assert isinstance(rec, _kind(row["status"])), (pos, row["status"], rec)
        if isinstance(rec, Blank):
            assert row["totalSize"] == rec.total_size
        if isinstance(rec, BadRecord) and rec.total_size is not None:
            assert row["totalSize"] == rec.total_size
        if not isinstance(rec, Message):
            assert i == len(rows) - 1 == len(ref) - 1
            return
        expected = {
            "totalSize": rec.total_size,
            "magicCode": rec.magic_code,
            "bodyCRC": rec.body_crc,
            "queueId": rec.queue_id,
            "flag": rec.flag,
            "queueOffset": rec.queue_offset,
            "physicalOffsetField": rec.physical_offset,
            "sysFlag": rec.sys_flag,
            "bornTimestamp": rec.born_timestamp,
            "bornHost": rec.born_host_str,
            "storeTimestamp": rec.store_timestamp,
            "storeHost": rec.store_host_str,
            "reconsumeTimes": rec.reconsume_times,
            "preparedTransactionOffset": rec.prepared_transaction_offset,
            "bodyLength": rec.body_length,
            "topic": rec.topic,
            "properties": rec.properties_raw,
            "keys": rec.keys,
            "tags": rec.tags,
            "uniqKey": rec.uniq_key,
        }
        assert {k: row[k] for k in expected} == expected
        assert bytes(buf[row["bodyOffset"] : row["bodyOffset"] + row["bodyLength"]]) == rec.body
        if with_body:
            assert row["body"] == rec.body
    assert len(rows) == len(ref)


# --- generated commitlog files --------------------------------------------------------------------

_TOPICS = ["TopicTest", "%RETRY%groupA", "SCHEDULE_TOPIC_XXXX", "中文主题", "%RETRY%" + "g" * 150, ""]
_NAMES = ["KEYS", "TAGS", "UNIQ_KEY", "DELAY", "WAIT", "K", "KEYSX", "UNIQ_KEY2", ""]
_VALUES = st.one_of(
    st.sampled_from(["", "a", "k1 k2", "3", "-1", "+7", "x", "٣", "2147483648", "-2147483648", "é中"]),
    st.text(max_size=12),
).map(lambda s: s.encode("utf-8", "surrogatepass"))
_PART = st.one_of(
    st.tuples(st.sampled_from(_NAMES).map(str.encode), _VALUES).map(lambda kv: kv[0] + b"\x01" + kv[1]),
    st.binary(max_size=8),
    st.sampled_from([b"\xff\xfe", b"KEYS\x01\xe4\xb8", b"TAGS\x01\x01x", b"\x01v"]),
)


@st.composite
def properties(draw) -> bytes:
    parts = draw(st.lists(_PART, max_size=7))
    raw = b"\x02".join(parts)
    if parts and draw(st.booleans()):
        raw += b"\x02"
    return raw[:32767]


@st.composite
def record_fields(draw, phys: int) -> dict:
    sys_flag = draw(st.sampled_from([0, 0x10, 0x20, 0x30, 0x8, 0x301])) | draw(st.sampled_from([0, 0x2]))
    topic = draw(st.one_of(st.sampled_from(_TOPICS), st.text(max_size=20))).encode("utf-8", "surrogatepass")
    v2 = len(topic) > 127 or draw(st.integers(0, 9)) == 0
    body = draw(st.binary(max_size=200))
    host = st.builds(
        lambda v6, a, p: {"address": a[: 16 if v6 else 4], "port": p},
        st.just(False),
        st.binary(min_size=16, max_size=16),
        st.integers(-(2**31), 2**31 - 1),
    )
    born, store = draw(host), draw(host)
    if sys_flag & 0x10:
        born["address"] = draw(st.binary(min_size=16, max_size=16))
    if sys_flag & 0x20:
        store["address"] = draw(st.binary(min_size=16, max_size=16))
    return {
        "totalSize": 0,
        "magicCode": MAGIC_V2 if v2 else MAGIC_V1,
        "bodyCRC": zlib.crc32(body) & 0x7FFFFFFF,
        "queueId": draw(st.integers(0, 15)),
        "flag": draw(st.integers(-(2**31), 2**31 - 1)),
        "queueOffset": draw(st.integers(0, 2**40)),
        "physicalOffset": phys,
        "sysFlag": sys_flag,
        "bornTimestamp": draw(st.integers(0, 2**42)),
        "bornHost": born,
        "storeTimestamp": draw(st.integers(0, 2**42)),
        "storeHost": store,
        "reconsumeTimes": draw(st.integers(0, 16)),
        "preparedTransactionOffset": draw(st.sampled_from([0, phys // 2])),
        "body": body,
        "topic": topic,
        "properties": draw(properties()),
    }


def build_record(fields: dict) -> bytes:
    raw = MessageRecord.build(fields)
    fields["totalSize"] = len(raw)
    return MessageRecord.build(fields)


@st.composite
def commitlog_file(draw) -> tuple[bytearray, int]:
    """(file bytes, base offset): records, then a blank record or zeros, then damage."""
    file_size = draw(st.sampled_from([2048, 4096, 8192]))
    base = draw(st.integers(0, 5)) * file_size
    buf = bytearray(file_size)
    pos = 0
    for _ in range(draw(st.integers(0, 12))):
        phys = base + pos
        if draw(st.integers(0, 30)) == 0:
            phys += 1  # accepted by the broker; not a resync point
        fields = draw(record_fields(phys))
        rec = build_record(fields)
        if draw(st.integers(0, 30)) == 0:
            rec = rec[:8] + struct.pack(">i", fields["bodyCRC"] ^ 1) + rec[12:]
        if pos + len(rec) + 8 > file_size:
            break
        buf[pos : pos + len(rec)] = rec
        pos += len(rec)
    if draw(st.booleans()):
        buf[pos : pos + 8] = struct.pack(">ii", file_size - pos, BLANK_MAGIC)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["flip", "zeros", "junk", "cut"]))
        at = draw(st.integers(0, max(min(pos, len(buf) - 1), 0)))
        if not buf:
            break
        if kind == "flip":
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "zeros":
            stop = min(at + draw(st.integers(1, 64)), len(buf))
            buf[at:stop] = bytes(stop - at)
        elif kind == "junk":
            junk = draw(st.binary(min_size=1, max_size=16))
            stop = min(at + len(junk), len(buf))
            buf[at:stop] = junk[: stop - at]
        else:
            del buf[at:]
    return buf, base


_HYP = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@_HYP
@given(commitlog_file(), st.booleans(), st.booleans())
def test_generated_files_equal_the_construct_decoder(file, check_crc, spill):
    buf, base = file
    with host_spill(0 if spill else None):
        assert_same_as_construct(bytes(buf), base, check_crc)


@_HYP
@given(commitlog_file(), st.lists(st.integers(1, 8191), max_size=6), st.booleans())
def test_any_split_gives_the_whole_file_decode(file, cuts, check_crc):
    buf, base = file
    data = bytes(buf)
    points = sorted({c for c in cuts if c < len(data)})
    assume(points or len(data) > 0)
    edges = [0, *points, len(data)]
    whole = decode_range(data, base, check_crc=check_crc)
    batches = [
        decode_resync(data, base, a, b, check_crc=check_crc) for a, b in zip(edges, edges[1:], strict=False)
    ]
    joined = join_splits(batches)
    assert joined.to_pylist() == whole.to_pylist()
    for batch, a in zip(batches, edges, strict=False):
        assert all(base + a <= o for o in batch.column("physicalOffset").to_pylist())


def test_resync_skips_to_the_next_record():
    path = _files("store-a")[0]
    buf = _map(path)
    whole = decode_range(buf, 0).column("physicalOffset").to_pylist()
    for cut in (1, 100, whole[5] - 1, whole[5], whole[5] + 1):
        got = decode_resync(buf, 0, cut, whole[9]).column("physicalOffset").to_pylist()
        assert got == [o for o in whole if cut <= o < whole[9]]


def test_empty_and_tiny_ranges():
    assert status_names(decode_range(b"", 0)) == ["end"]
    assert decode_range(bytes(100), 0).to_pylist()[0]["status"] == "end"
    assert status_names(decode_range(b"\x00\x00\x00\x00\x01", 0)) == ["truncated"]
    assert decode_resync(bytes(100), 0, 10, 90).num_rows == 0
    # an empty range still reports what is at its end when the next split's resync would not find it
    assert decode_range(bytes(100), 0, 50, 50).to_pylist()[0]["physicalOffset"] == 50
    assert decode_range(b"", 0).schema == MESSAGE_SCHEMA


def test_schedule_topic_with_a_bad_delay_is_rejected():
    fields = {
        "totalSize": 0,
        "magicCode": MAGIC_V1,
        "bodyCRC": 0,
        "queueId": 0,
        "flag": 0,
        "queueOffset": 0,
        "physicalOffset": 0,
        "sysFlag": 0,
        "bornTimestamp": 0,
        "bornHost": {"address": b"\x7f\0\0\1", "port": 1},
        "storeTimestamp": 0,
        "storeHost": {"address": b"\x7f\0\0\1", "port": 2},
        "reconsumeTimes": 0,
        "preparedTransactionOffset": 0,
        "body": b"",
        "topic": b"SCHEDULE_TOPIC_XXXX",
    }
    for delay, verdict in (("3", "ok"), ("٣", "ok"), ("x", "bad_property"), ("2147483648", "bad_property")):
        rec = build_record({**fields, "properties": f"DELAY\x01{delay}\x02".encode()})
        assert status_names(decode_range(rec + bytes(16), 0))[0] == verdict
        rec = build_record({**fields, "topic": b"T", "properties": f"DELAY\x01{delay}\x02".encode()})
        assert status_names(decode_range(rec + bytes(16), 0))[0] == "ok"


def test_import_does_not_load_numba():
    code = "import sys, formats.columnar.decoder; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dictionary_columns():
    path = _files("store-a")[0]
    batch = decode_range(_map(path), 0)
    assert pa.types.is_dictionary(batch.schema.field("topic").type)
    assert "TopicTest" in batch.column("topic").dictionary.to_pylist()


def test_reused_buffers_do_not_change_live_batches():
    files = _files("store-a")
    first = decode_range(_map(files[0]), int(files[0].name))
    snapshot = first.to_pylist()
    for path in files * 2:  # the pool hands out arrays only when no batch holds them
        decode_range(_map(path), int(path.name))
    assert first.to_pylist() == snapshot
    del first
    again = decode_range(_map(files[0]), int(files[0].name))
    assert again.to_pylist() == snapshot
    release_buffers()
    assert decode_range(_map(files[0]), int(files[0].name)).to_pylist() == snapshot


def test_table_crc_equals_zlib():
    from formats.columnar import _kernel_base as k
    from formats.columnar.kernels import make_crc_table

    data = np.frombuffer(bytes(range(256)) * 40 + b"tail", dtype=np.uint8)
    table = make_crc_table()
    for start, length in ((0, 0), (3, 1), (5, 4000), (0, len(data))):
        assert k.crc32(data, start, length, table) == zlib.crc32(data[start : start + length].tobytes())


def _crc_functions() -> list:
    from formats.columnar.kernels import CRC32_FUNCTIONS, crc32_address

    return [f for f in CRC32_FUNCTIONS if crc32_address([f])]


@pytest.mark.parametrize("function", [*_crc_functions(), None], ids=lambda f: f[1] if f else "table")
def test_record_check_with_every_crc_function(function):
    """check_crc by each C crc32 this system has (libdeflate's, zlib's) and by the table loop (None):
    the body CRC of every record of store-a read as zlib.crc32 reads it, and store-c's torn record
    found by each."""
    from formats.columnar import _kernel_base as k
    from formats.columnar._record_kernels import check_record
    from formats.columnar.kernels import crc32_address, make_crc_table, make_digit_table

    fn = crc32_address([function]) if function else 0
    assert fn or function is None
    table, digits = make_crc_table(), make_digit_table()
    scratch = np.zeros(k.N_SCRATCH, dtype=np.int64)
    for path in _files("store-a"):
        b = np.frombuffer(_map(path), dtype=np.uint8)
        pos = 0
        while check_record(b, b.shape[0], pos, True, True, table, fn, digits, scratch) == k.OK:
            body = b[scratch[k.S_BODY_POS] : scratch[k.S_BODY_POS] + scratch[k.S_BODY_LEN]].tobytes()
            assert scratch[k.S_BODYCRC] == zlib.crc32(body) & 0x7FFFFFFF
            pos += scratch[k.S_TOTAL]
        assert pos > 0
    torn = expect("store-c")["asWritten"]["tornRecordOffset"]
    path = next(p for p in _files("store-c") if int(p.name) <= torn < int(p.name) + p.stat().st_size)
    b = np.frombuffer(_map(path), dtype=np.uint8)
    at = torn - int(path.name)
    assert check_record(b, b.shape[0], at, True, True, table, fn, digits, scratch) == k.CRC_MISMATCH


def test_record_check_with_the_table_crc():
    """check_crc without zlib's crc32 (address 0) uses the table loop and gives the same verdicts."""
    from formats.columnar import _kernel_base as k
    from formats.columnar._record_kernels import check_record
    from formats.columnar.kernels import make_crc_table, make_digit_table

    torn = expect("store-c")["asWritten"]["tornRecordOffset"]
    path = next(p for p in _files("store-c") if int(p.name) <= torn < int(p.name) + p.stat().st_size)
    b = np.frombuffer(_map(path), dtype=np.uint8)
    scratch = np.zeros(k.N_SCRATCH, dtype=np.int64)
    tables = (make_crc_table(), 0, make_digit_table())
    first = check_record(b, b.shape[0], 0, True, True, tables[0], 0, tables[2], scratch)
    assert first == k.OK
    pos = torn - int(path.name)
    assert check_record(b, b.shape[0], pos, True, True, tables[0], 0, tables[2], scratch) == k.CRC_MISMATCH


# 20 host bytes as 16-bit groups, zero often (the runs RFC 5952 compresses), sometimes IPv4-mapped
_GROUP = st.one_of(st.just(0), st.just(0), st.sampled_from([1, 0x10, 0x100, 0xFFFF]), st.integers(0, 0xFFFF))
_HOST_BYTES = st.one_of(
    st.binary(min_size=20, max_size=20),
    st.lists(_GROUP, min_size=10, max_size=10).map(lambda g: b"".join(v.to_bytes(2, "big") for v in g)),
    st.binary(min_size=8, max_size=8).map(lambda t: bytes(10) + b"\xff\xff" + t[:4] + t[4:]),
)


@given(st.lists(st.tuples(st.booleans(), _HOST_BYTES), min_size=1, max_size=50), st.booleans())
@settings(max_examples=300, deadline=None)
def test_host_dictionary_equals_host_str(hosts, ipv4_only):
    """The hosts' dictionary (both families formatted by the compiled kernel) reads as `host_str` does,
    signed ports, zero runs and IPv4-mapped addresses included."""
    from formats.columnar.decoder import _hosts
    from formats.message.msgid import host_str

    if ipv4_only:  # the compiled formatter's case: every host of the batch is IPv4
        hosts = [(False, h) for _, h in hosts]
    raw = b"".join(h[: 8 if not v6 else 20] for v6, h in hosts)
    lengths = [20 if v6 else 8 for v6, _ in hosts]
    starts = np.cumsum([0, *lengths[:-1]])
    reps = np.array([[s, n, 0] for s, n in zip(starts, lengths, strict=True)], dtype=np.int64)
    want = [
        host_str(h[: n - 4], int.from_bytes(h[n - 4 : n], "big", signed=True))
        for (_, h), n in zip(hosts, lengths, strict=True)
    ]
    assert _hosts(np.frombuffer(raw, dtype=np.uint8), reps).to_pylist() == want


# a stored port: any int32 (Java prints it signed), the real range, and the edges of the digit counts and
# of the formatter's five-digit path
_PORTS = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 65535),
    st.integers(10000, 99999),
    st.sampled_from([0, 9, 10, 99, 100, 255, 256, 999, 1000, 9999, 10000, 65535, 99999, 100000, -1, -10000]),
    st.sampled_from([2**31 - 1, -(2**31)]),
)
_IPV4 = st.one_of(
    st.binary(min_size=4, max_size=4), st.sampled_from([bytes(4), b"\xff" * 4, bytes([10, 0, 0, 9])])
)


@given(
    st.lists(st.tuples(_IPV4, _PORTS).map(lambda h: h[0] + h[1].to_bytes(4, "big", signed=True)), max_size=60)
)
@settings(max_examples=300, deadline=None)
def test_ipv4_key_texts_equal_host_str(hosts):
    """A spilled walk's IPv4 dictionary text (hosts as their 8 stored bytes in little-endian int64s,
    formatted by the compiled kernel) reads as `host_str` does, every octet, signed ports included."""
    from formats.columnar.kernels import kernel
    from formats.message.msgid import host_str

    keys = np.frombuffer(b"".join(hosts), dtype="<i8").astype(np.int64)
    offsets, text = kernel("ipv4_key_texts")(keys)
    raw = bytes(text)
    got = [raw[offsets[i] : offsets[i + 1]].decode() for i in range(len(hosts))]
    assert got == [host_str(h[:4], int.from_bytes(h[4:], "big", signed=True)) for h in hosts]


# --- a born host per message ---------------------------------------------------------------------


def test_a_born_host_per_message_equals_the_construct_decoder(tmp_path):
    """Producers that connect per message (`sample create --producers 0`): a few client addresses, a new
    ephemeral port each time, so the host dictionary holds nearly one value per message and grows many
    times within one file; every decoded host is the construct decoder's."""
    from mqtool.sample.create import create_sample
    from mqtool.sample.options import SampleOptions

    root = tmp_path / "store"
    create_sample(SampleOptions(root, messages=6000, file_size=8 * 1024 * 1024, producers=0))
    files = sorted((root / "commitlog").iterdir())
    assert len(files) == 1
    buf = _map(files[0])
    decoded = {}
    # interned in the walk; and spilled: the walk stops interning at 256 values, a sort builds the rest
    for spill in (None, 256):
        with host_spill(spill):
            assert_same_as_construct(buf, 0, check_crc=True, with_body=False)
            decoded[spill] = decode_range(buf, 0).column("bornHost")
    hosts = decoded[None]
    assert decoded[256].to_pylist() == hosts.to_pylist()
    assert sorted(decoded[256].dictionary.to_pylist()) == sorted(hosts.dictionary.to_pylist())
    addresses = {h.rsplit(":", 1)[0] for h in hosts.dictionary.to_pylist()}
    # copies the broker makes (delay deliveries, commits, retries) keep the original born host
    assert len(hosts.dictionary) > 0.8 * len(hosts) and len(hosts.dictionary) > 50 * len(addresses)


def test_mixed_ipv4_and_ipv6_born_hosts_equal_the_construct_decoder(tmp_path):
    """A host per message, 5 % of them from IPv6 clients (dual stack): interned, spilled after 256 values
    and spilled from the first record, every decoded host is the construct decoder's, both families
    formatted by the compiled kernel."""
    from mqtool.sample.create import create_sample
    from mqtool.sample.options import SampleOptions

    root = tmp_path / "store"
    opts = SampleOptions(root, messages=4000, file_size=8 << 20, producers=0, ipv6_per_mille=50)
    create_sample(opts)
    (path,) = sorted((root / "commitlog").iterdir())
    buf = _map(path)
    decoded = {}
    for spill in (None, 256, 0):
        with host_spill(spill):
            assert_same_as_construct(buf, 0, check_crc=True, with_body=False)
            decoded[spill] = decode_range(buf, 0).column("bornHost")
    assert decoded[256].to_pylist() == decoded[0].to_pylist() == decoded[None].to_pylist()
    hosts = decoded[None].dictionary.to_pylist()
    v6 = [h for h in hosts if h.startswith("[2001:db8::")]
    assert 0.02 * len(hosts) < len(v6) < 0.1 * len(hosts)


# born hosts for a spilled walk's dictionary: a few per cent IPv6, some addresses shared by several ports and
# ports by several addresses, the all-zero host (its IPv4 key is 0) among them
_BORN_ADDRESS = st.one_of(
    st.binary(min_size=16, max_size=16),
    st.sampled_from([bytes(16), bytes([10, 0, 0, 9]) + bytes(12), bytes(10) + b"\xff\xff\x0a\x00\x00\x09"]),
)
_BORN_HOST = st.tuples(st.integers(0, 19).map(lambda x: x == 0), _BORN_ADDRESS, _PORTS)


@st.composite
def spilled_hosts_file(draw) -> tuple[bytes, int]:
    """(file bytes, base): up to 150 records whose born hosts are drawn from a pool of 1 to 100 (hosts
    repeat, next to each other or apart; past 32 distinct ones the walk's table is full the first time),
    then a blank record or zeros. The other fields vary little: each record costs few draws, so that
    examples of a hundred records fit hypothesis's buffer."""
    size = draw(st.one_of(st.integers(1, 100), st.integers(50, 100)))
    pool = draw(st.lists(_BORN_HOST, min_size=size, max_size=size))
    file_size = 32768
    base = draw(st.integers(0, 3)) * file_size
    buf = bytearray(file_size)
    pos = 0
    for i in range(draw(st.one_of(st.integers(1, 150), st.integers(70, 150)))):
        v6, address, port = pool[draw(st.one_of(st.just(i % size), st.integers(0, size - 1)))]
        body = b"m%d" % i
        fields = {
            "totalSize": 0,
            "magicCode": MAGIC_V1,
            "bodyCRC": zlib.crc32(body) & 0x7FFFFFFF,
            "queueId": i % 4,
            "flag": 0,
            "queueOffset": i,
            "physicalOffset": base + pos,
            "sysFlag": (0x10 if v6 else 0) | draw(st.sampled_from([0, 0x20])),
            "bornHost": {"address": address[: 16 if v6 else 4], "port": port},
            "storeTimestamp": 1700000000000 + i,
            "bornTimestamp": 1700000000000 + i,
            "reconsumeTimes": 0,
            "preparedTransactionOffset": 0,
            "body": body,
            "topic": draw(st.sampled_from(_TOPICS[:3])).encode(),
            "properties": b"UNIQ_KEY\x01u%d\x02" % i,
        }
        fields["storeHost"] = {
            "address": bytes(16) if fields["sysFlag"] & 0x20 else bytes([10, 0, 0, 1]),
            "port": 10911,
        }
        rec = build_record(fields)
        if pos + len(rec) + 8 > file_size:
            break
        buf[pos : pos + len(rec)] = rec
        pos += len(rec)
    if draw(st.booleans()):
        buf[pos : pos + 8] = struct.pack(">ii", file_size - pos, BLANK_MAGIC)
    return bytes(buf), base


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(spilled_hosts_file(), st.sampled_from([0, 1, None]))
def test_spilled_born_hosts_equal_the_construct_decoder(file, spill):
    """A walk that stops interning born hosts (from the first record; or when its table first fills, the
    rows before keep the walk's indices) leaves the dictionary to the compiled hash pass: every row's host
    is the construct decoder's, both families, repeated hosts, the all-zero one, hosts interned before the
    spill and seen again after it; the dictionary holds each host once."""
    buf, base = file
    with host_spill(spill):
        assert_same_as_construct(buf, base, check_crc=True, with_body=False)
        hosts = decode_range(buf, base).column("bornHost")
    dictionary = hosts.dictionary.to_pylist()
    assert len(set(dictionary)) == len(dictionary)
    assert set(dictionary) == {h for h in hosts.to_pylist() if h is not None}


@pytest.mark.parametrize("spill", [None, 0])
@pytest.mark.parametrize("store", ["store-a", "store-c", "store-49a", "store-trace-a"])
def test_without_hosts_only_the_hosts_are_null(store, spill):
    """hosts=False (verify's ranges, which never read them) skips the host dictionaries: both host columns
    are null, every other column is the full decode's, spilled or not, from a split too."""
    with host_spill(spill):
        for path in _files(store):
            buf, base = _map(path), int(path.name)
            for decode, start in ((decode_range, 0), (decode_resync, 1000)):
                full = decode(buf, base, start, check_crc=True)
                bare = decode(buf, base, start, check_crc=True, hosts=False)
                assert bare.schema == full.schema == MESSAGE_SCHEMA
                for name in MESSAGE_SCHEMA.names:
                    if name in ("bornHost", "storeHost"):
                        assert bare.column(name).null_count == bare.num_rows
                    else:
                        assert bare.column(name).equals(full.column(name)), (path.name, name)


# --- the galloping sorted search (RecordIndex.find) ------------------------------------------------


@given(
    st.lists(st.integers(-50, 5000), max_size=300),
    st.lists(st.integers(-60, 5100), max_size=200),
    st.sampled_from(["ascending", "as drawn", "descending runs"]),
)
@settings(max_examples=300, deadline=None)
def test_search_sorted_kernel_is_numpy_searchsorted(hay, needles, order):
    """The kernel answers np.searchsorted(hay, needles, "left") for every order of needles (it gallops
    only while they ascend), duplicates and needles outside the haystack included."""
    from formats.columnar.kernels import kernel

    h = np.sort(np.array(hay, dtype=np.int64))
    x = np.array(needles, dtype=np.int64)
    if order == "ascending":
        x = np.sort(x)
    elif order == "descending runs":
        x = np.concatenate([np.sort(x[: len(x) // 2]), np.sort(x[len(x) // 2 :])])
    out = np.full(len(x), -7, dtype=np.int64)
    assert kernel("search_sorted")(h, x, out) == len(x)
    assert out.tolist() == np.searchsorted(h, x).tolist()


def test_record_index_find_by_the_kernel_equals_numpy():
    """RecordIndex.find on a haystack and needles large enough for the kernel: the records a queue's
    units hit and miss, as numpy's searchsorted finds them."""
    from store.checks import records as rec

    rng = np.random.default_rng(5)
    phy = np.cumsum(rng.integers(91, 2000, size=200_000)).astype(np.int64)
    index = rec.RecordIndexBuilder().build([], [])
    index.phy = phy
    units = np.sort(np.concatenate([phy[::150], phy[::977] + 1, [phy[-1] + 10, -5]]))
    assert len(units) >= rec._GALLOP_MIN_NEEDLES and len(phy) >= rec._GALLOP_MIN_HAY
    got, found = index.find(units)
    want = np.minimum(np.searchsorted(phy, units), len(phy) - 1)
    assert got.tolist() == want.tolist()
    assert found.tolist() == (phy[want] == units).tolist()
    assert found.sum() == len(phy[::150])
