"""CommitLog walking over the golden stores (every record against expect.json) and synthetic logs."""

from __future__ import annotations

import base64
import ipaddress
from functools import cache
from pathlib import Path

import pytest
from golden import STORES, expect, store_path

from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import (
    Blank,
    Corrupt,
    EndOfData,
    Message,
    Torn,
    build_message,
    decode_record,
    encode_message,
)
from formats.message.msgid import parse_host
from store.log.commitlog import CommitLog, OffsetError


@cache
def walk(store: str) -> tuple:
    """Every record of a golden store's commitlog (decoded once per test session)."""
    with CommitLog.open(store_path(store)) as cl:
        return tuple(cl.iter_records())


def java_host(text: str) -> tuple[ipaddress._BaseAddress, int]:
    """expect.json hosts ("ip:port", IPv6 in Java's long form without brackets) -> comparable."""
    host, _, port = text.rpartition(":")
    return ipaddress.ip_address(host), int(port)


def our_host(text: str) -> tuple[ipaddress._BaseAddress, int]:
    address, port = parse_host(text)
    return ipaddress.ip_address(address), port


def expected_records(store: str) -> list[dict]:
    return expect(store)["messages"]


@pytest.mark.parametrize("store", STORES)
def test_walk_matches_expect(store):
    records = walk(store)
    exp = expected_records(store)
    # a/49a end in zeros (one EndOfData after the expected records); c ends with its torn record
    assert len(records) == len(exp) + (0 if store == "store-c" else 1)
    with CommitLog.open(store_path(store)) as cl:
        for rec, e in zip(records, exp, strict=False):
            assert rec.physical_offset == e["physicalOffset"]
            f = cl.queue.find(rec.physical_offset)
            assert f.name == e["file"]
            if e["kind"] == "BLANK":
                assert isinstance(rec, Blank)
                assert rec.total_size == e["totalSize"]
                assert rec.problems == ()
                continue
            if e["kind"] == "TORN":
                continue  # test_store_c_torn_record
            assert isinstance(rec, Message), (e["physicalOffset"], rec)
            check_message(rec, e)


def check_message(rec: Message, e: dict) -> None:
    assert rec.problems == ()
    assert rec.total_size == e["totalSize"]
    assert rec.magic_code == e["magicCode"]
    assert rec.body_crc == e["bodyCRC"]
    assert rec.queue_id == e["queueId"]
    assert rec.flag == e["flag"]
    assert rec.queue_offset == e["queueOffset"]
    assert rec.sys_flag == e["sysFlag"]
    assert rec.born_timestamp == e["bornTimestamp"]
    assert rec.store_timestamp == e["storeTimestamp"]
    assert our_host(rec.born_host_str) == java_host(e["bornHost"])
    assert our_host(rec.store_host_str) == java_host(e["storeHost"])
    assert rec.reconsume_times == e["reconsumeTimes"]
    assert rec.prepared_transaction_offset == e["preparedTransactionOffset"]
    assert rec.topic == e["topic"]
    assert rec.topic_length_bytes == e["topicLengthBytes"]
    assert rec.is_v2 == (e["magicCodeHex"] == "0xDAA320AB")
    assert rec.properties == e["properties"]
    assert rec.properties_raw.decode("utf-8") == e["propertiesRaw"]
    assert rec.body_length == e["bodyLength"]
    assert base64.b64encode(rec.body).decode() == e["bodyBase64"]
    assert rec.offset_msg_id == e["offsetMsgId"]
    assert rec.uniq_key == e["uniqKey"]
    assert rec.tags == e["tags"]
    assert rec.keys == e["keys"]
    d = e["dispatch"]
    assert d["success"] is True
    assert rec.total_size == d["msgSize"]
    assert rec.tags_code() == d["tagsCode"]
    assert rec.keys == d["keys"]
    assert rec.uniq_key == d["uniqKey"]
    assert rec.queue_offset == d["consumeQueueOffset"]


@pytest.mark.parametrize("store", STORES)
def test_reencode_gives_stored_bytes(store):
    with CommitLog.open(store_path(store)) as cl:
        for rec in walk(store):
            if isinstance(rec, Message):
                assert encode_message(rec) == cl.read_raw(rec.physical_offset, rec.total_size)


@pytest.mark.parametrize("store", STORES)
def test_json_fields(store):
    names = [
        "physicalOffset", "totalSize", "magicCode", "bodyCRC", "queueId", "flag", "queueOffset", "sysFlag",
        "bornTimestamp", "bornHost", "storeTimestamp", "storeHost", "reconsumeTimes",
        "preparedTransactionOffset", "topic", "properties", "keys", "tags", "uniqKey", "offsetMsgId",
        "bodyLength", "body",
    ]  # fmt: skip
    exp = {e["physicalOffset"]: e for e in expected_records(store)}
    for rec in walk(store):
        j = rec.to_json()
        if isinstance(rec, Message):
            assert list(j) == names
            assert list(rec.to_json(include_body=False)) == names[:-1]
            e = exp[rec.physical_offset]
            assert j["body"] == e["bodyBase64"]
            assert j["properties"] == e["properties"]
        else:
            assert j["kind"] in ("blank", "end", "torn", "corrupt")
            assert j["physicalOffset"] == rec.physical_offset and j["reason"]


@pytest.mark.parametrize("store", STORES)
def test_valid_end_and_min_offset(store):
    e = expect(store)
    with CommitLog.open(store_path(store)) as cl:
        assert cl.min_offset == e["minPhyOffset"]
        assert cl.valid_end() == e["maxPhyOffset"]
        assert cl.max_offset == e["maxPhyOffset"]
        assert cl.file_size == e["config"]["mappedFileSizeCommitLog"]
        last = walk(store)[-1]
        assert last.physical_offset == e["maxPhyOffset"]
        if store != "store-c":
            assert isinstance(last, EndOfData) and "zeros" in last.reason


def test_store_c_torn_record():
    e = expect("store-c")
    torn = e["asWritten"]["tornRecord"]
    assert e["asWritten"]["tornRecordOffset"] == torn["physicalOffset"]
    assert expected_records("store-c")[-1] == torn
    rec = walk("store-c")[-1]
    assert isinstance(rec, Torn)
    assert rec.physical_offset == torn["physicalOffset"] == e["asWritten"]["endOfLastCompleteRecord"]
    assert rec.total_size == torn["totalSize"]
    assert rec.written == torn["nonZeroPrefixBytes"]
    assert (
        rec.physical_offset + rec.written
        == e["asWritten"]["writtenEnd(last non-zero byte + 1 in the last file)"]
    )
    h = rec.header
    assert h["magicCode"] == torn["magicCode"]
    assert h["queueId"] == torn["queueId"]
    assert h["queueOffset"] == torn["queueOffset"]
    assert h["physicalOffsetField"] == torn["physicalOffsetField"]
    assert h["sysFlag"] == torn["sysFlag"]
    assert h["bornTimestamp"] == torn["bornTimestamp"]
    assert h["storeTimestamp"] == torn["storeTimestamp"]
    # the broker: CRC check fails first (-1/false); without CRC the size check fails (6228/false)
    assert torn["checkMessageAndReturnSize(checkCRC=true)"] == "-1/false"
    assert "CRC" in rec.reason
    assert torn["checkMessageAndReturnSize(checkCRC=false)"] == f"{torn['totalSize']}/false"
    with CommitLog.open(store_path("store-c")) as cl:
        no_crc = cl.stop_record(check_crc=False)
        assert isinstance(no_crc, Torn) and "TOTALSIZE" in no_crc.reason
        assert no_crc.physical_offset == torn["physicalOffset"]
        assert cl.valid_end() == e["afterRecovery"]["maxPhyOffset"]
        # the final, never-dispatched complete appends are valid records
        for final in e["afterRecovery"]["finalAppends(never dispatched before the kill)"]:
            if final["keptByRecovery"]:
                assert cl.read_message_at(final["physicalOffset"], final["totalSize"])
        # the preallocated file after the torn one is all zeros and is never reached
        assert cl.files[-1].start_offset == 4718592
        with pytest.raises(FormatError, match="torn"):
            cl.read_message_at(torn["physicalOffset"])


def test_store_c_starts_after_deleted_files():
    with CommitLog.open(store_path("store-c")) as cl:
        assert cl.min_offset == 1572864
        with pytest.raises(OffsetError, match="outside"):
            cl.read_message_at(0)
        with pytest.raises(OffsetError, match="outside"):
            list(cl.iter_records(from_offset=1000))


@pytest.mark.parametrize("store", STORES)
def test_read_message_at_and_from_offset(store):
    records = walk(store)
    messages = [r for r in records if isinstance(r, Message)]
    with CommitLog.open(store_path(store)) as cl:
        for m in messages[::97]:
            assert cl.read_message_at(m.physical_offset, m.total_size) == m
        m = messages[len(messages) // 2]
        i = records.index(m)
        assert tuple(cl.iter_records(from_offset=m.physical_offset)) == records[i:]
        assert list(cl.iter_messages(m.physical_offset))[0] == m
        with pytest.raises(OffsetError, match="not a record boundary"):
            list(cl.iter_records(from_offset=m.physical_offset + 3))
        with pytest.raises(FormatError):
            cl.read_message_at(m.physical_offset + 3)
        with pytest.raises(FormatError, match="TOTALSIZE"):
            cl.read_message_at(m.physical_offset, m.total_size + 1)
        blank = next(r for r in records if isinstance(r, Blank))
        with pytest.raises(FormatError, match="BLANK"):
            cl.read_message_at(blank.physical_offset)
        # starting at the BLANK record itself is a boundary
        assert next(cl.iter_records(from_offset=blank.physical_offset)) == blank
        end = records[-1].physical_offset
        assert cl.valid_end(from_offset=m.physical_offset) == end
        assert cl.pickup_store_timestamp(m.physical_offset, m.total_size) == m.store_timestamp
        assert cl.pickup_store_timestamp(end, 100) == -1


def test_from_offset_after_the_valid_end():
    with CommitLog.open(store_path("store-a")) as cl:
        end = cl.valid_end()
        with pytest.raises(OffsetError, match="after the end of the valid records"):
            list(cl.iter_records(from_offset=end + 64))
        # at the end itself: a boundary, the walk is just its stop
        assert [type(r) for r in cl.iter_records(from_offset=end)] == [EndOfData]


# --- synthetic commitlogs ------------------------------------------------------------------------

FILE_SIZE = 4096


def make_message(phy: int, i: int, body: bytes | None = None) -> Message:
    return build_message(
        topic="T",
        body=body if body is not None else b"x" * (100 + i),
        properties={"UNIQ_KEY": f"K{i}", "KEYS": f"k{i}"},
        queue_offset=i,
        physical_offset=phy,
        born_host=parse_host("10.0.0.1:1"),
        store_host=parse_host("10.0.0.2:10911"),
        store_timestamp=1000 + i,
    )


def write_log(directory: Path, n_files: int, last_full: bool = False) -> list[Message]:
    """Files of FILE_SIZE with messages, each full file ending in a BLANK record, like the broker."""
    directory.mkdir(parents=True, exist_ok=True)
    messages: list[Message] = []
    i = 0
    for k in range(n_files):
        start = k * FILE_SIZE
        data = bytearray(FILE_SIZE)
        pos = 0
        full = k < n_files - 1 or last_full
        while True:
            m = make_message(start + pos, i)
            if m.total_size + 8 > FILE_SIZE - pos:
                if full:
                    data[pos : pos + 8] = (FILE_SIZE - pos).to_bytes(4, "big") + (0xCBD43194).to_bytes(
                        4, "big"
                    )
                break
            if not full and pos > FILE_SIZE // 2:
                break
            data[pos : pos + m.total_size] = encode_message(m)
            messages.append(m)
            pos += m.total_size
            i += 1
        (directory / f"{start:020d}").write_bytes(bytes(data))
    return messages


def test_synthetic_walk(tmp_path):
    messages = write_log(tmp_path / "commitlog", 3)
    with CommitLog.open(tmp_path) as cl:
        records = list(cl.iter_records())
        assert [r for r in records if isinstance(r, Message)] == messages
        assert sum(isinstance(r, Blank) for r in records) == 2
        assert isinstance(records[-1], EndOfData)
        assert records[-1].physical_offset == messages[-1].physical_offset + messages[-1].total_size


def test_last_file_ending_with_blank(tmp_path):
    messages = write_log(tmp_path / "commitlog", 2, last_full=True)
    with CommitLog.open(tmp_path) as cl:
        records = list(cl.iter_records())
        assert isinstance(records[-2], Blank)
        assert isinstance(records[-1], EndOfData) and "no file follows" in records[-1].reason
        # the broker's recovery leaves its write position at the BLANK record
        assert cl.valid_end() == records[-2].physical_offset
        assert records[-2].physical_offset == messages[-1].physical_offset + messages[-1].total_size


def test_corrupt_record_stops_the_walk(tmp_path):
    messages = write_log(tmp_path / "commitlog", 2)
    bad = messages[3]
    path = tmp_path / "commitlog" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    data[bad.physical_offset + 90] ^= 0x55  # inside the body (it starts at 88)
    path.write_bytes(bytes(data))
    with CommitLog.open(tmp_path) as cl:
        stop = cl.stop_record()
        assert isinstance(stop, Corrupt) and "CRC" in stop.reason
        assert cl.valid_end() == bad.physical_offset
        # without the CRC check the broker would accept it
        assert cl.valid_end(check_crc=False) == cl.valid_end(from_offset=messages[4].physical_offset)


def test_physical_offset_mismatch_is_reported_not_fatal(tmp_path):
    directory = tmp_path / "commitlog"
    directory.mkdir()
    m0 = make_message(0, 0)
    m1 = make_message(999, 1)  # PHYSICALOFFSET field is wrong
    data = bytearray(FILE_SIZE)
    data[: m0.total_size] = encode_message(m0)
    data[m0.total_size : m0.total_size + m1.total_size] = encode_message(m1)
    (directory / f"{0:020d}").write_bytes(bytes(data))
    with CommitLog(directory) as cl:
        records = list(cl.iter_records())
        assert isinstance(records[1], Message)
        assert records[1].problems == (f"PHYSICALOFFSET field 999 != position {m0.total_size}",)
        assert "problems" in records[1].to_json()
        assert cl.valid_end() == m0.total_size + m1.total_size
        with pytest.raises(FormatError, match="PHYSICALOFFSET 999"):
            cl.read_message_at(m0.total_size)


def test_record_filling_the_file_without_blank(tmp_path):
    directory = tmp_path / "commitlog"
    directory.mkdir()
    m = make_message(0, 0)
    (directory / f"{0:020d}").write_bytes(encode_message(m))
    (directory / f"{m.total_size:020d}").write_bytes(b"")  # zero-length last file: ignored (5.x deletes it)
    with CommitLog(directory) as cl:
        assert len(cl.files) == 1
        stop = cl.stop_record()
        assert isinstance(stop, EndOfData) and "without a BLANK" in stop.reason
        assert stop.physical_offset == m.total_size


@pytest.mark.parametrize("make_dir", [False, True])
def test_empty_commitlog(tmp_path, make_dir):
    if make_dir:
        (tmp_path / "commitlog").mkdir()
    with CommitLog.open(tmp_path) as cl:
        assert cl.files == [] and cl.min_offset == 0
        assert [type(r) for r in cl.iter_records()] == [EndOfData]
        assert cl.valid_end() == 0 and cl.max_offset == 0
        with pytest.raises(OffsetError, match="no files"):
            cl.read_message_at(0)
        with pytest.raises(MqtoolError):
            list(cl.iter_records(from_offset=5))


def test_decode_record_position_checked():
    with pytest.raises(FormatError):
        decode_record(b"\0" * 16, 17, 0)


def test_walk_as_a_49_broker():
    """A 4.9.x broker's recovery would cut store-a at its first V2 record; store-49a has none."""
    first_v2 = next(r for r in walk("store-a") if isinstance(r, Message) and r.is_v2)
    with CommitLog.open(store_path("store-a")) as cl:
        stop = cl.stop_record()
        assert stop.physical_offset == expect("store-a")["maxPhyOffset"]
        records = list(cl.iter_records(accept_v2=False))
        assert isinstance(records[-1], Corrupt) and records[-1].physical_offset == first_v2.physical_offset
    with CommitLog.open(store_path("store-49a")) as cl:
        assert list(cl.iter_records(accept_v2=False)) == list(walk("store-49a"))


@pytest.mark.parametrize("name", STORES)
def test_sysflags_at_reads_each_records_sysflag(name):
    """The vectorised head read gives the SYSFLAG the real code read back, and -1 off the files."""
    import numpy as np

    messages = [m for m in expect(name)["messages"] if m["kind"] == "MESSAGE"]
    phys = np.array([m["physicalOffset"] for m in messages] + [-100, 10**15], dtype=np.int64)
    with CommitLog.open(store_path(name)) as cl:
        flags = cl.sysflags_at(phys)
    assert flags[:-2].tolist() == [m["sysFlag"] for m in messages]
    assert flags[-2:].tolist() == [-1, -1]
